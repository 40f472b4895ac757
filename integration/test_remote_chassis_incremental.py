"""Other chassis coming and going are incremental (issue 16): a remote
chassis registering (Chassis and Encap rows, then the tunnel port our agent
makes to it), a port bound there, its MAC mappings, its encap IP moving and
the chassis going away again recompute none of runtime_data,
logical_flow_output, physical_flow_output, non_vif_data or template_vars
(C recomputes both flow outputs on each of these; the deletion still
recomputes runtime_data here), and after every step the flows equal those
of a forced recompute.
"""

from __future__ import annotations

import json

import pytest

from integration.conftest import SandboxFactory, forced_recompute_diff, openflow_state
from integration.sandbox import Sandbox, poll_until

pytestmark = pytest.mark.integration

NODES = ("runtime_data", "logical_flow_output", "physical_flow_output", "non_vif_data",
         "template_vars")


def _recomputes(box: Sandbox) -> dict[str, int]:
    return {n: int(box.appctl("controller", "inc-engine/show-stats", n, "recompute"))
            for n in NODES}


def _tunnel_ofports(box: Sandbox) -> dict[str, int]:
    """Remote chassis -> ofport of its tunnel interface on br-int."""
    ports = json.loads(box.vsctl("--format=json", "--columns=name,external_ids", "list",
                                 "Port"))["data"]
    ifaces = json.loads(box.vsctl("--format=json", "--columns=name,ofport", "list",
                                  "Interface"))["data"]
    ofports = {name: ofport for name, ofport in ifaces if isinstance(ofport, int)}
    out: dict[str, int] = {}
    for name, ext in ports:
        tid = dict(ext[1]).get("ovn-chassis-id")
        if tid and ofports.get(name, 0) > 0:
            out[tid.split("@", 1)[0]] = ofports[name]
    return out


def _settle(box: Sandbox, tunnel_to: str | None, gone: str | None = None) -> list[str]:
    """Wait for the tunnel to `tunnel_to` (its decapsulation flow) or for the
    one to `gone` to disappear, then for the agent to catch up."""
    if tunnel_to is not None:
        assert poll_until(lambda: tunnel_to in _tunnel_ofports(box), timeout=30), \
            box.log_tail()
        ofport = _tunnel_ofports(box)[tunnel_to]
        assert poll_until(lambda: any(f"in_port={ofport} " in f or f"in_port={ofport}," in f
                                      for f in box.dump_flows(names=False)), timeout=30), \
            box.log_tail()
    if gone is not None:
        assert poll_until(lambda: gone not in _tunnel_ofports(box), timeout=30), box.log_tail()
    box.wait_hv_sync()
    return openflow_state(box)


def _incremental_and_equal(box: Sandbox, before: dict[str, int],
                           nodes: tuple[str, ...] = NODES) -> dict[str, int]:
    """None of `nodes` recomputed since `before`; the flows equal a forced
    recompute's (which itself recomputes: returns the counts after it)."""
    now = _recomputes(box)
    assert {n: now[n] for n in nodes} == {n: before[n] for n in nodes}, "\n".join(
        line for line in box.daemons["controller"].log.read_text().splitlines()
        if "recompute (" in line)
    assert forced_recompute_diff(box) == []
    return _recomputes(box)


def test_remote_chassis_life_cycle_is_incremental(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory()
    box.nbctl("ls-add", "sw0",
              "--", "lsp-add", "sw0", "p1", "--", "lsp-set-addresses", "p1",
              "00:00:00:00:00:01 10.0.0.1",
              "--", "lsp-add", "sw0", "p2", "--", "lsp-set-addresses", "p2",
              "00:00:00:00:00:02 10.0.0.2",
              "--", "lsp-add", "sw0", "p3", "--", "lsp-set-addresses", "p3",
              "00:00:00:00:00:03 10.0.0.3")
    box.start_controller("py", extra_args=["-vinc_proc_eng:file:dbg"])
    box.bind_vif("vif1", "p1")
    box.wait_hv_sync()
    assert forced_recompute_diff(box) == []
    before = _recomputes(box)

    box.sbctl("chassis-add", "hv2", "geneve", "127.0.0.2")
    _settle(box, "hv2")
    before = _incremental_and_equal(box, before)

    # A port bound there: its output goes through the tunnel to hv2.
    box.sbctl("lsp-bind", "p2", "hv2")
    ofport = _tunnel_ofports(box)["hv2"]
    assert poll_until(lambda: any(f"output:{ofport}" in f
                                  for f in box.dump_flows(names=False)), timeout=30), \
        box.log_tail()
    _settle(box, "hv2")
    before = _incremental_and_equal(box, before)

    # Its MAC mappings: the remote chassis MAC flow of table 0.
    box.sbctl("set", "Chassis", "hv2",
              "other_config:ovn-chassis-mac-mappings=physnet1:0a:00:00:00:00:99")
    assert poll_until(lambda: any("dl_src=0a:00:00:00:00:99" in f
                                  for f in box.dump_flows(names=False)), timeout=30), \
        box.log_tail()
    _settle(box, "hv2")
    before = _incremental_and_equal(box, before)

    # Its encap IP moves: a new tunnel port, the bound port follows it.
    encap = box.sbctl("--bare", "--columns=_uuid", "find", "Encap",
                      "chassis_name=hv2").strip()
    box.sbctl("set", "Encap", encap, "ip=127.0.0.3")
    assert poll_until(lambda: _tunnel_ofports(box).get("hv2") not in (None, ofport),
                      timeout=30), box.log_tail()
    flows = _settle(box, "hv2")
    new_ofport = _tunnel_ofports(box)["hv2"]
    assert any(f"output:{new_ofport}" in f for f in flows)
    before = _incremental_and_equal(box, before)

    # Gone again: its tunnel, MAC flow and remote output go with it.
    box.sbctl("chassis-del", "hv2")
    flows = _settle(box, None, gone="hv2")
    assert not any("dl_src=0a:00:00:00:00:99" in f or f"output:{new_ofport}" in f
                   for f in flows)
    # (runtime_data recomputes on a deleted chassis, and so both flow
    # outputs after it: controller/nodes/runtime_data.py.)
    _incremental_and_equal(box, before, ("non_vif_data", "template_vars"))
