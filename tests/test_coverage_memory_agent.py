"""memory/show figures measured on the agent's real flow tables and cache."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from controller.diag import memory
from controller.diag.memory import agent_usage, format_usage
from controller.lflow.cache import LflowCache
from ofctrl.desired import DesiredFlowTable
from ofctrl.flow import Flow
from ofctrl.installed import InstalledFlowTable, update_by_compare


def _agent(n_flows: int, backlog: int = 0):
    desired = DesiredFlowTable()
    for i in range(n_flows):
        match = (("metadata", i % 7), ("reg14", i), ("eth_dst", b"\x00\x00\x00\x00\x00\x01"))
        desired.add(Flow(8, 100, match, (("output", i),)), uuid.UUID(int=i // 3 + 1))
    installed = InstalledFlowTable()
    update_by_compare(desired, installed, lambda cmd, flow: None)
    cache = LflowCache()
    for i in range(n_flows // 10):
        cache.add_matches(uuid.UUID(int=10**6 + i), 0, 0, [("m", i, "x" * 40)], 100)
    agent = SimpleNamespace(
        sb=None, ovs=None, if_mgr=SimpleNamespace(ifaces={}),
        st=SimpleNamespace(rt=SimpleNamespace(local_datapaths={})),
        session=SimpleNamespace(installed_lflows=installed, installed_pflows=InstalledFlowTable(),
                                conn=SimpleNamespace(tx_backlog_bytes=lambda: backlog)),
        lflow=SimpleNamespace(cache=cache))
    return agent, desired


def test_keys_and_zero_figures_left_out():
    agent, desired = _agent(300)
    usage = agent_usage(agent, (desired, DesiredFlowTable()))
    text = format_usage(usage)
    keys = [item.split(":")[0] for item in text.split(" ")]
    assert keys == sorted(keys)
    for key in ("lflow-cache-entries-cache-matches", "lflow-cache-size-KB",
                "ofctrl_desired_flow_usage-KB", "ofctrl_installed_flow_usage-KB",
                "ofctrl_sb_flow_ref_usage-KB"):
        assert key in keys, key
    # No replica, no interfaces or local datapaths, nothing queued: 0 -> not printed.
    assert "if_status_mgr_ifaces_usage-KB" not in keys and "local_datapath_usage-KB" not in keys
    assert "idl-cells-OVN_Southbound" not in keys
    assert "ofctrl_rconn_packet_counter-KB" not in keys
    assert "lflow-cache-entries-cache-expr" not in keys
    agent.session.conn = SimpleNamespace(tx_backlog_bytes=lambda: 1500)
    assert agent_usage(agent, (desired,))["ofctrl_rconn_packet_counter-KB"] == 2
    agent.if_mgr.ifaces["vif1"] = SimpleNamespace()      # has a __dict__: not followed
    assert agent_usage(agent, (desired,))["if_status_mgr_ifaces_usage-KB"] == 1


def test_figures_are_measured_and_scale_with_content(monkeypatch: pytest.MonkeyPatch):
    small_agent, small = _agent(2000)
    big_agent, big = _agent(8000)
    s = agent_usage(small_agent, (small,))
    b = agent_usage(big_agent, (big,))
    for key in ("ofctrl_desired_flow_usage-KB", "ofctrl_installed_flow_usage-KB",
                "ofctrl_sb_flow_ref_usage-KB", "lflow-cache-size-KB"):
        assert 3.0 <= b[key] / s[key] <= 5.0, (key, s[key], b[key])
    # The sampled estimate is close to measuring every entry.
    monkeypatch.setattr(memory, "SAMPLE", 10**9)
    exact = agent_usage(big_agent, (big,))
    for key in ("ofctrl_desired_flow_usage-KB", "ofctrl_installed_flow_usage-KB",
                "lflow-cache-size-KB"):
        assert abs(b[key] - exact[key]) <= max(2, exact[key] // 10), (key, b[key], exact[key])


def test_cache_figures_absent_when_disabled():
    from controller.lflow.cache import LflowCacheConfig
    agent, desired = _agent(100)
    agent.lflow.cache.configure(LflowCacheConfig.from_values(enabled=False))
    keys = agent_usage(agent, (desired,)).keys()
    assert not [k for k in keys if k.startswith("lflow-cache")]
