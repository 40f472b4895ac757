"""Reconfiguration without dataplane flaps (issue 12, point 3).

* ``external_ids:ovn-remote`` changed at run time to another socket of the
  same SB: the installed flows stay (minimum flow count polled every 50 ms)
  and the agent really moved to the new socket;
* ``ovn-bridge`` switched to another bridge and back: br-int keeps its flows
  and the VIFs' ``Port_Binding.up`` stays true while the agent is on the
  other bridge (the C agent's behaviour; on the way back both agents set the
  ports down for the few ms their flows take to install, then up again).
"""

from __future__ import annotations

import threading
import time

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import Sandbox, SandboxError
from integration.test_agent_basic import iface_ext, wait_until
from integration.test_faults import (AGENTS, FlowSampler, Survivors, log_lines, rich_agent,
                                     status)
from integration.topologies import RICH_VIFS

pytestmark = pytest.mark.integration

VIF_PORTS = tuple(lsp for _, lsp, _ in RICH_VIFS if lsp != "ls-a-md")


@AGENTS
def test_ovn_remote_change_keeps_flows(sandbox_factory: SandboxFactory, kind: str) -> None:
    box = rich_agent(sandbox_factory, kind)
    before = sorted(box.dump_flows(names=False))
    kept = Survivors.take(box)
    sb2 = f"punix:{box.run}/ovnsb_db2.sock"
    box.appctl("sb", "ovsdb-server/add-remote", sb2)
    sampler = FlowSampler(box)
    with sampler.running():
        box.vsctl("set", "Open_vSwitch", ".", f"external_ids:ovn-remote=unix:{box.run}/"
                  "ovnsb_db2.sock")
        # (ours logs "OVNSB remote changed to ...", the C agent its reconnect)
        wait_until(lambda: any("ovnsb_db2.sock" in ln for ln in log_lines(box)),
                   what="remote change seen", box=box)
        wait_until(lambda: status(box) == "connected", what="connected", box=box)
        box.wait_hv_sync(timeout=60)
        time.sleep(0.5)
    print(f"\n[{kind}] ovn-remote change: min flows {sampler.minimum}/{len(before)}")
    assert sampler.minimum == len(before), f"flows dipped to {sampler.minimum}"
    assert sorted(box.dump_flows(names=False)) == before
    assert Survivors.take(box) == kept
    # The agent is on the new socket: closing it disconnects the agent,
    # opening it again brings it back.
    box.appctl("sb", "ovsdb-server/remove-remote", sb2)
    wait_until(lambda: status(box) == "not connected", what="disconnected with sb2", box=box)
    box.appctl("sb", "ovsdb-server/add-remote", sb2)
    wait_until(lambda: status(box) == "connected", timeout=30, what="back on sb2", box=box)
    box.wait_hv_sync(timeout=60)
    assert sorted(box.dump_flows(names=False)) == before


def _up_values(box: Sandbox) -> dict[str, str]:
    out = box.sbctl("--format=csv", "--no-headings", "--columns=logical_port,up",
                    "list", "Port_Binding")
    vals = dict(line.split(",", 1) for line in out.splitlines() if "," in line)
    return {p: vals.get(p, "") for p in VIF_PORTS}


@AGENTS
def test_ovn_bridge_away_and_back_keeps_ports_up(sandbox_factory: SandboxFactory, kind: str) -> None:
    box = rich_agent(sandbox_factory, kind)
    before = box.flow_count()
    assert set(_up_values(box).values()) == {"true"}
    box.vsctl("--may-exist", "add-br", "br-alt", "--", "set", "Bridge", "br-alt",
              "datapath_type=dummy")
    ups: list[tuple[str, dict[str, str]]] = []
    phase = ["int"]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                ups.append((phase[0], _up_values(box)))
            except SandboxError:
                pass
            stop.wait(0.05)

    t = threading.Thread(target=sample, daemon=True)
    sampler = FlowSampler(box)
    with sampler.running():
        t.start()
        try:
            phase[0] = "alt"
            box.vsctl("set", "Open_vSwitch", ".", "external_ids:ovn-bridge=br-alt")
            wait_until(lambda: box.flow_count("br-alt") > 100, timeout=60, what="flows on br-alt",
                       box=box)
            time.sleep(2)
            phase[0] = "back"
            box.vsctl("set", "Open_vSwitch", ".", "external_ids:ovn-bridge=br-int")
            box.wait_hv_sync(timeout=60)
            wait_until(lambda: all(iface_ext(box, vif).get("ovn-installed") == "true"
                                   for vif, lsp, _ in RICH_VIFS if lsp in VIF_PORTS),
                       what="ovn-installed again", box=box)
            wait_until(lambda: set(_up_values(box).values()) == {"true"}, what="up again",
                       box=box)
        finally:
            stop.set()
            t.join()
    on_alt = [u for ph, u in ups if ph == "alt"]
    down_alt = [u for u in on_alt if set(u.values()) != {"true"}]
    down_back = [u for ph, u in ups if ph == "back" and set(u.values()) != {"true"}]
    print(f"\n[{kind}] ovn-bridge away and back: {len(on_alt)} samples on br-alt, "
          f"{len(down_alt)} with a port down; {len(down_back)} down samples on the way back; "
          f"min br-int flows {sampler.minimum}/{before}")
    assert on_alt, "no sample taken while on br-alt"
    if kind == "py":
        assert not down_alt, f"ports set down while on br-alt: {down_alt[:3]}"
    # (C 23.03.1 is not held to it: runs differ, in one all 33 samples on
    # br-alt had every port down, in others none had; the line above reports it)
    # (both agents' br-int may lose a flow or three for a moment on the way back)
    assert sampler.minimum >= before - 5, f"br-int flows dipped to {sampler.minimum}"
    wait_until(lambda: box.flow_count() == before, what="br-int flows as before", box=box)
