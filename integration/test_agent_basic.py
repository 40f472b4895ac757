"""ovn-controller-py against real daemons: registration, claims, ct zones,
tunnels, nb_cfg, control commands, exit semantics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Callable

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import REPO_ROOT, Sandbox

pytestmark = pytest.mark.integration


def wait_until(fn: Callable[[], object], timeout: float = 30.0, what: str = "",
               box: Sandbox | None = None) -> object:
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            tail = box.log_tail("controller", 40) if box is not None else ""
            raise AssertionError(f"timed out waiting for {what}\n{tail}")
        time.sleep(0.1)


def col(box: Sandbox, table: str, record: str, column: str) -> str:
    return box.sbctl("--bare", f"--columns={column}", "find", table,
                     f"{record}").strip()


def br_ext(box: Sandbox) -> dict[str, str]:
    out = box.vsctl("--format=json", "--columns=external_ids", "list", "Bridge", "br-int")
    data = json.loads(out)["data"][0][0]
    return {k: v for k, v in data[1]}


def iface_ext(box: Sandbox, name: str) -> dict[str, str]:
    out = box.vsctl("--format=json", "--columns=external_ids", "list", "Interface", name)
    return {k: v for k, v in json.loads(out)["data"][0][0][1]}


def ls_with_port(box: Sandbox, ls: str = "sw0", port: str = "p1") -> None:
    box.nbctl("ls-add", ls)
    box.nbctl("lsp-add", ls, port)
    box.nbctl("lsp-set-addresses", port, "00:00:00:00:00:01 10.0.0.1")


def test_registration_claim_zones_and_commands(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(northd=True)
    ls_with_port(box)
    box.start_controller("py")
    wait_until(lambda: col(box, "Chassis", "name=hv1", "name") == "hv1", what="Chassis",
               box=box)
    wait_until(lambda: col(box, "Chassis_Private", "name=hv1", "name") == "hv1",
               what="Chassis_Private", box=box)
    encap = box.sbctl("--bare", "--columns=type,ip,options", "list", "Encap")
    assert "geneve" in encap and "127.0.0.1" in encap and "csum=true" in encap
    oc = col(box, "Chassis", "name=hv1", "other_config")
    assert "port-up-notif=true" in oc.replace('"', "")

    box.bind_vif("vif1", "p1")
    ch_uuid = col(box, "Chassis", "name=hv1", "_uuid")
    wait_until(lambda: col(box, "Port_Binding", "logical_port=p1", "chassis") == ch_uuid,
               what="p1 claimed", box=box)
    wait_until(lambda: col(box, "Port_Binding", "logical_port=p1", "up") == "true",
               what="p1 up", box=box)
    wait_until(lambda: iface_ext(box, "vif1").get("ovn-installed") == "true",
               what="ovn-installed", box=box)
    # ovn-installed only once the VIF's physical flows are in OVS.
    ofport = box.vsctl("get", "Interface", "vif1", "ofport").strip()
    flows = box.ofctl("dump-flows", "br-int", "--no-stats")
    assert f"in_port={ofport} " in flows and f"actions=output:{ofport}" in flows
    log = (box.run / "ovn-controller-py.log").read_text()
    assert "Claiming lport p1 for this chassis." in log
    assert "Setting lport p1 ovn-installed in OVS" in log
    assert "Setting lport p1 up in Southbound" in log
    assert log.index("Claiming lport p1") < log.index("Setting lport p1 up in Southbound")

    # ct zones: one br-int key per user, equal to what ct-zone-list reports.
    wait_until(lambda: "ct-zone-p1" in br_ext(box), what="ct zone keys", box=box)
    zones = {}
    for line in box.appctl("controller", "ct-zone-list").splitlines():
        name, zone = line.split()
        zones[name] = zone
    assert set(zones) == {"p1", *(k for k in zones if k.endswith(("_dnat", "_snat")))}
    assert len(zones) == 3 and "0" not in zones.values()
    ext = br_ext(box)
    for name, zone in zones.items():
        assert ext[f"ct-zone-{name}"] == zone

    # nb_cfg echo: --wait=hv returns and the values are mirrored.
    box.nbctl("--wait=hv", "sync", timeout=30)
    nb_cfg = col(box, "Chassis_Private", "name=hv1", "nb_cfg")
    assert int(nb_cfg) >= 1
    wait_until(lambda: br_ext(box).get("ovn-nb-cfg") == nb_cfg, what="ovn-nb-cfg", box=box)
    assert "ovn-startup-ts" in br_ext(box)

    # Control commands.
    stats = box.appctl("controller", "inc-engine/show-stats")
    assert "Node: runtime_data\n- recompute: " in stats and "- abort: " in stats
    assert box.appctl("controller", "inc-engine/show-stats", "runtime_data",
                      "recompute").strip().isdigit()
    ls = box.appctl("controller", "loop-stats")
    assert ls.startswith("iterations: ")
    d = json.loads(box.appctl("controller", "loop-stats", "--json"))
    assert d["iterations"] > 0 and d["first_install_ms"] is not None
    assert box.appctl("controller", "connection-status").strip() == "connected"
    assert box.appctl("controller", "version").startswith("ovn-controller 23.03.1\n")
    assert "Statistics for 'flow-generation'" in box.appctl("controller", "stopwatch/show")
    assert "events never hit" in box.appctl("controller", "coverage/show")
    assert "name: [p1], OVS interface name : [vif1]" in box.appctl(
        "controller", "debug/dump-local-bindings")
    before = int(box.appctl("controller", "inc-engine/show-stats", "runtime_data",
                            "recompute"))
    box.appctl("controller", "inc-engine/recompute")
    wait_until(lambda: int(box.appctl("controller", "inc-engine/show-stats", "runtime_data",
                                      "recompute")) > before, what="recompute", box=box)
    box.appctl("controller", "debug/pause")
    assert box.appctl("controller", "debug/status").strip() == "paused"
    box.appctl("controller", "debug/resume")
    assert box.appctl("controller", "debug/status").strip() == "running"

    # `ovn-controller-py ctl` finds the socket by itself.
    env = dict(box.env)
    env["PYTHONPATH"] = str(REPO_ROOT)
    out = subprocess.run([sys.executable, "-m", "controller", "ctl", "loop-stats", "--json"],
                         env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["iterations"] > 0

    # Unbinding releases the port.
    box.unbind_vif("vif1")
    wait_until(lambda: col(box, "Port_Binding", "logical_port=p1", "chassis") == "",
               what="p1 released", box=box)
    wait_until(lambda: "ct-zone-p1" not in br_ext(box), what="zone key deleted", box=box)


def test_zones_restored_after_restart_and_exit_semantics(sandbox_factory: SandboxFactory
                                                         ) -> None:
    box = sandbox_factory(northd=True)
    ls_with_port(box)
    box.nbctl("lsp-add", "sw0", "p2")
    box.bind_vif("vif1", "p1")
    box.bind_vif("vif2", "p2")
    box.start_controller("py")
    wait_until(lambda: "ct-zone-p1" in br_ext(box) and "ct-zone-p2" in br_ext(box),
               what="zones", box=box)
    before = {k: v for k, v in br_ext(box).items() if k.startswith("ct-zone-")}
    assert len(before) == 4
    # exit --restart keeps SB state and zones.
    box.appctl("controller", "exit", "--restart")
    wait_until(lambda: not box.controller_alive(), what="exit", box=box)
    box.stop_controller()
    assert col(box, "Chassis", "name=hv1", "name") == "hv1"
    # Restart with a changed zone set: p2 goes away; p1 must keep its zone.
    box.unbind_vif("vif2")
    box.start_controller("py")
    box.wait_hv_sync(timeout=60)
    # p2's zone is kept through the start-up grace period, then dropped.
    box.appctl("controller", "debug/ignore-startup-delay")
    wait_until(lambda: "ct-zone-p2" not in br_ext(box), what="p2 zone removed", box=box)
    after = {k: v for k, v in br_ext(box).items() if k.startswith("ct-zone-")}
    assert after["ct-zone-p1"] == before["ct-zone-p1"]
    for k in after:
        assert after[k] == before[k]
    zl = box.appctl("controller", "ct-zone-list")
    assert f"p1 {before['ct-zone-p1']}" in zl
    # Plain exit cleans Chassis, Chassis_Private and the binding.
    box.appctl("controller", "exit")
    wait_until(lambda: not box.controller_alive(), what="exit", box=box)
    box.stop_controller()
    assert col(box, "Chassis", "name=hv1", "name") == ""
    assert col(box, "Chassis_Private", "name=hv1", "name") == ""
    assert col(box, "Port_Binding", "logical_port=p1", "chassis") == ""


def test_tunnels_to_other_chassis(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(northd=True)
    box.sbctl("chassis-add", "hv2", "geneve", "127.0.0.2")
    box.sbctl("chassis-add", "hv3", "vxlan", "127.0.0.3")
    box.start_controller("py")

    def tunnels() -> dict[str, str]:
        out = box.vsctl("--bare", "--columns=name,external_ids", "find", "Port",
                        "external_ids:ovn-chassis-id!=none")
        return {ln: ln for ln in out.split("\n") if ln}

    def port_names() -> set[str]:
        return set(box.vsctl("list-ports", "br-int").split())

    wait_until(lambda: "ovn-hv2-0" in port_names(), what="tunnel to hv2", box=box)
    assert "ovn-hv3-0" not in port_names()        # no common encap type with hv3
    assert box.vsctl("get", "Interface", "ovn-hv2-0", "type").strip() == "geneve"
    opts = box.vsctl("get", "Interface", "ovn-hv2-0", "options")
    assert 'remote_ip="127.0.0.2"' in opts and "key=flow" in opts and 'csum="true"' in opts
    assert box.vsctl("get", "Port", "ovn-hv2-0",
                     "external_ids:ovn-chassis-id").strip() == '"hv2@127.0.0.2"'
    box.sbctl("chassis-del", "hv2")
    wait_until(lambda: "ovn-hv2-0" not in port_names(), what="tunnel removed", box=box)
    assert os.path.exists(box.run)


def test_localnet_patch_ports(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(northd=True)
    ls_with_port(box)
    box.nbctl("lsp-add", "sw0", "ln")
    box.nbctl("lsp-set-type", "ln", "localnet")
    box.nbctl("lsp-set-addresses", "ln", "unknown")
    box.nbctl("lsp-set-options", "ln", "network_name=phys")
    box.vsctl("add-br", "br-phys", "--", "set", "Bridge", "br-phys", "datapath_type=dummy")
    box.vsctl("set", "Open_vSwitch", ".", "external_ids:ovn-bridge-mappings=phys:br-phys")
    box.bind_vif("vif1", "p1")
    box.start_controller("py")

    def ports(br: str) -> set[str]:
        return set(box.vsctl("list-ports", br).split())

    wait_until(lambda: "patch-br-int-to-ln" in ports("br-int"), what="patch port", box=box)
    assert "patch-ln-to-br-int" in ports("br-phys")
    assert box.vsctl("get", "Port", "patch-br-int-to-ln",
                     "external_ids:ovn-localnet-port").strip() == "ln"
    assert box.vsctl("get", "Interface", "patch-br-int-to-ln",
                     "options:peer").strip() == "patch-ln-to-br-int"
    ofport = box.vsctl("get", "Interface", "patch-br-int-to-ln", "ofport").strip()
    wait_until(lambda: f"actions=output:{ofport}" in box.ofctl("dump-flows", "br-int",
                                                              "--no-stats"),
               what="localnet output flow", box=box)
    # Removing the mapping removes both patch ports (once the start-up grace
    # period, during which stale-looking patch ports are kept, is over).
    box.appctl("controller", "debug/ignore-startup-delay")
    box.vsctl("remove", "Open_vSwitch", ".", "external_ids", "ovn-bridge-mappings")
    wait_until(lambda: "patch-br-int-to-ln" not in ports("br-int"), what="patch removed",
               box=box)
    assert "patch-ln-to-br-int" not in ports("br-phys")
