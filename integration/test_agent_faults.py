"""Fault scenarios (ecosystem.md B2): br-int deleted, vswitchd restart, SB down."""

from __future__ import annotations

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import Sandbox
from integration.test_agent_basic import iface_ext, wait_until

pytestmark = pytest.mark.integration


def flows(box: Sandbox) -> list[str]:
    out = box.ofctl("dump-flows", "br-int", "--no-stats")
    return sorted(ln.strip() for ln in out.splitlines() if ln.strip() and "NXST" not in ln)


def small(box: Sandbox) -> None:
    box.nbctl("ls-add", "sw0")
    box.nbctl("lsp-add", "sw0", "p1")
    box.nbctl("lsp-set-addresses", "p1", "00:00:00:00:00:01 10.0.0.1")
    box.bind_vif("vif1", "p1")


def test_br_int_recreated_and_flows_reinstalled(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(northd=True)
    small(box)
    box.start_controller("py")
    box.wait_hv_sync(timeout=60)
    before = flows(box)
    box.vsctl("del-br", "br-int")
    wait_until(lambda: "br-int" in box.vsctl("list-br").split(), what="br-int", box=box)
    assert box.vsctl("get", "Bridge", "br-int", "fail_mode").strip() == "secure"
    oc = box.vsctl("get", "Bridge", "br-int", "other_config")
    assert 'disable-in-band="true"' in oc and "hwaddr=" in oc
    # The VIF went away with the bridge; put it back and everything converges.
    box.bind_vif("vif1", "p1")
    wait_until(lambda: iface_ext(box, "vif1").get("ovn-installed") == "true",
               what="ovn-installed again", box=box)
    box.wait_hv_sync(timeout=60)
    wait_until(lambda: len(flows(box)) == len(before), what="same flow count", box=box)


def test_vswitchd_restart_reinstalls_flows(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(northd=True)
    small(box)
    box.start_controller("py")
    box.wait_hv_sync(timeout=60)
    before = flows(box)
    box.restart_vswitchd()
    wait_until(lambda: flows(box) == before, timeout=60, what="flows back", box=box)
    log = (box.run / "ovn-controller-py.log").read_text()
    assert "OVS OpenFlow connection reconnected,force recompute." in log
    assert box.controller_alive()


def test_sb_unreachable_keeps_flows_and_reconnects(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(northd=True)
    small(box)
    box.start_controller("py")
    box.wait_hv_sync(timeout=60)
    before = flows(box)
    box.vsctl("set", "Open_vSwitch", ".", f"external_ids:ovn-remote=unix:{box.run}/nowhere.sock")
    wait_until(lambda: box.appctl("controller", "connection-status").strip() == "not connected",
               what="not connected", box=box)
    assert flows(box) == before          # no flush while the SB is away
    box.vsctl("set", "Open_vSwitch", ".", f"external_ids:ovn-remote={box.sb_sock}")
    wait_until(lambda: box.appctl("controller", "connection-status").strip() == "connected",
               timeout=60, what="reconnected", box=box)
    box.wait_hv_sync(timeout=60)
    assert flows(box) == before


def test_missing_encap_config_waits_quietly(sandbox_factory: SandboxFactory) -> None:
    import json
    import time
    box = sandbox_factory(northd=True)
    box.vsctl("remove", "Open_vSwitch", ".", "external_ids", "ovn-encap-ip")
    box.start_controller("py")
    time.sleep(1.5)
    a = json.loads(box.appctl("controller", "loop-stats", "--json"))["iterations"]
    time.sleep(2)
    b = json.loads(box.appctl("controller", "loop-stats", "--json"))["iterations"]
    assert b - a < 20                       # no busy loop while nothing can be done
    assert box.sbctl("--bare", "--columns=name", "list", "Chassis").strip() == ""
    assert "Need to specify an encap type and ip" in (box.run / "ovn-controller-py.log"
                                                       ).read_text()
    box.vsctl("set", "Open_vSwitch", ".", "external_ids:ovn-encap-ip=127.0.0.1")
    wait_until(lambda: box.sbctl("--bare", "--columns=name", "list", "Chassis").strip()
               == "hv1", what="registered", box=box)


def test_monitor_all(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(northd=True)
    box.vsctl("set", "Open_vSwitch", ".", "external_ids:ovn-monitor-all=true")
    small(box)
    box.start_controller("py")
    box.wait_hv_sync(timeout=60)
    wait_until(lambda: iface_ext(box, "vif1").get("ovn-installed") == "true",
               what="ovn-installed", box=box)
    assert len(flows(box)) > 50


def test_restart_keeps_dataplane_and_zones(sandbox_factory: SandboxFactory) -> None:
    """exit --restart, start again: no moment with fewer flows, same zones."""
    import threading
    import time
    from integration.topologies import build_seed
    box = sandbox_factory(northd=True)
    build_seed(box, 20)
    box.start_controller("py")
    box.wait_hv_sync(timeout=120)
    before = flows(box)
    zones = sorted(box.appctl("controller", "ct-zone-list").splitlines())
    box.appctl("controller", "exit", "--restart")
    wait_until(lambda: not box.controller_alive(), what="exit", box=box)
    box.stop_controller()
    counts: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            counts.append(len(flows(box)))
            time.sleep(0.05)

    t = threading.Thread(target=sample)
    t.start()
    try:
        box.start_controller("py")
        box.wait_hv_sync(timeout=120)
        time.sleep(0.5)
    finally:
        stop.set()
        t.join()
    assert flows(box) == before
    assert min(counts) == len(before), f"flow count dipped to {min(counts)}"
    assert sorted(box.appctl("controller", "ct-zone-list").splitlines()) == zones
