"""Incremental processing must converge to what a full recompute produces."""

from __future__ import annotations

import re

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import Sandbox
from integration.test_agent_basic import col, iface_ext, wait_until

pytestmark = pytest.mark.integration


def flows(box: Sandbox) -> list[str]:
    out = box.ofctl("dump-flows", "br-int", "--no-stats")
    return sorted(ln.strip() for ln in out.splitlines() if "NXST_FLOW" not in ln)


def recompute_count(box: Sandbox) -> int:
    return int(box.appctl("controller", "inc-engine/show-stats", "runtime_data", "recompute"))


def test_incremental_equals_recompute(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(northd=True)
    box.nbctl("ls-add", "sw0")
    box.nbctl("ls-add", "sw1")
    box.nbctl("lr-add", "lr0")
    for sw, net in (("sw0", "10.0.0"), ("sw1", "10.0.1")):
        box.nbctl("lrp-add", "lr0", f"lr0-{sw}", f"00:00:00:00:ff:0{sw[-1]}", f"{net}.254/24")
        box.nbctl("lsp-add", sw, f"{sw}-lr0")
        box.nbctl("lsp-set-type", f"{sw}-lr0", "router")
        box.nbctl("lsp-set-addresses", f"{sw}-lr0", "router")
        box.nbctl("lsp-set-options", f"{sw}-lr0", f"router-port=lr0-{sw}")
        for i in range(1, 4):
            box.nbctl("lsp-add", sw, f"{sw}-p{i}")
            box.nbctl("lsp-set-addresses", f"{sw}-p{i}", f"00:00:00:00:0{sw[-1]}:0{i} {net}.{i}")
    box.sbctl("chassis-add", "hv2", "geneve", "127.0.0.2")
    box.start_controller("py")
    wait_until(lambda: col(box, "Chassis_Private", "name=hv1", "name") == "hv1",
               what="registered", box=box)
    box.nbctl("--wait=hv", "sync", timeout=30)
    base = recompute_count(box)
    # Bind VIFs one by one after start-up: all of this must be incremental.
    for i in (1, 2):
        box.bind_vif(f"vif0{i}", f"sw0-p{i}")
    box.bind_vif("vif11", "sw1-p1")
    for name in ("vif01", "vif02", "vif11"):
        wait_until(lambda n=name: iface_ext(box, n).get("ovn-installed") == "true",
                   what=f"{name} installed", box=box)
    box.sbctl("lsp-bind", "sw1-p2", "hv2")
    box.unbind_vif("vif02")
    wait_until(lambda: col(box, "Port_Binding", "logical_port=sw0-p2", "chassis") == "",
               what="sw0-p2 released", box=box)
    box.nbctl("--wait=hv", "sync", timeout=30)
    incremental = recompute_count(box) - base
    before = flows(box)
    zones_before = box.appctl("controller", "ct-zone-list")
    bindings_before = box.appctl("controller", "debug/dump-local-bindings")
    assert any("in_port=" in f for f in before)
    n = recompute_count(box)
    box.appctl("controller", "inc-engine/recompute")
    wait_until(lambda: recompute_count(box) > n, what="recompute", box=box)
    box.nbctl("--wait=hv", "sync", timeout=30)
    after = flows(box)
    assert before == after, "\n".join(sorted(set(before) ^ set(after)))
    assert box.appctl("controller", "ct-zone-list") == zones_before
    assert box.appctl("controller", "debug/dump-local-bindings") == bindings_before
    # Port claims after start-up went through handlers, not full recomputes of
    # runtime_data (a new local datapath is allowed one).
    assert incremental <= 3, box.appctl("controller", "inc-engine/show-stats")
    pflow_computes = int(box.appctl("controller", "inc-engine/show-stats",
                                    "physical_flow_output", "compute"))
    assert pflow_computes > 0


def test_match_northd_version(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(northd=True)
    box.nbctl("ls-add", "sw0")
    box.nbctl("lsp-add", "sw0", "p1")
    box.vsctl("set", "Open_vSwitch", ".", "external_ids:ovn-match-northd-version=true")
    box.bind_vif("vif1", "p1")
    box.start_controller("py")
    # Our internal version equals northd 23.03.1's, so processing goes on.
    wait_until(lambda: col(box, "Port_Binding", "logical_port=p1", "chassis") != "",
               what="claim with matching version", box=box)
    log = (box.run / "ovn-controller-py.log").read_text()
    assert not re.search("mismatch with northd", log)
