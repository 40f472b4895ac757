"""ovn-controller-py installs exactly the flows of the C ovn-controller 23.03.1."""

from __future__ import annotations

import re

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import Sandbox
from integration.topologies import build_rich

pytestmark = pytest.mark.integration


def dump(box: Sandbox) -> list[str]:
    out = box.ofctl("dump-flows", "br-int", "--no-stats")
    return sorted(ln.strip() for ln in out.splitlines()
                  if ln.strip() and "NXST_FLOW" not in ln and "OFPST" not in ln)


def test_small_topology_same_flows_as_c_agent(sandbox_factory: SandboxFactory) -> None:
    """sw0 with p1 bound here, p2 on a fake remote chassis, an allow-related ACL
    and a port-group ACL with an address list (reference-data/small)."""
    box = sandbox_factory(northd=True)
    box.nbctl("ls-add", "sw0")
    for p, mac, ip in (("p1", "00:00:00:00:00:01", "10.0.0.1"),
                       ("p2", "00:00:00:00:00:02", "10.0.0.2")):
        box.nbctl("lsp-add", "sw0", p)
        box.nbctl("lsp-set-addresses", p, f"{mac} {ip}")
    box.nbctl("acl-add", "sw0", "from-lport", "1002", 'inport == "p1" && ip4', "allow-related")
    box.nbctl("pg-add", "pg1", "p1", "p2")
    box.nbctl("acl-add", "pg1", "to-lport", "1001",
              "outport == @pg1 && ip4.src == {10.0.0.5, 10.0.0.6}", "drop")
    box.sbctl("chassis-add", "hv2", "geneve", "127.0.0.2")
    box.bind_vif("vif1", "p1", ofport=1)
    box.nbctl("--wait=sb", "sync")
    box.sbctl("lsp-bind", "p2", "hv2")

    box.start_controller("c")
    box.wait_hv_sync(timeout=60)
    c_flows = dump(box)
    c_zones = box.appctl("controller", "ct-zone-list")
    box.stop_controller()

    box.start_controller("py")
    box.wait_hv_sync(timeout=60)
    py_flows = dump(box)
    assert len(c_flows) > 150
    missing = sorted(set(c_flows) - set(py_flows))
    extra = sorted(set(py_flows) - set(c_flows))
    assert not missing and not extra, (
        "only C:\n" + "\n".join(missing[:30]) + "\nonly py:\n" + "\n".join(extra[:30]))
    # Zones restored from the C agent's br-int keys: same assignments.
    py_zones = box.appctl("controller", "ct-zone-list")
    assert sorted(py_zones.splitlines()) == sorted(c_zones.splitlines())


def normalized(box: Sandbox) -> tuple[list[str], list[str], list[str]]:
    """Flows with group/meter ids replaced by their contents (ids are handed
    out in lflow processing order, which differs), plus groups and meters."""
    groups: dict[str, str] = {}
    for ln in box.ofctl("dump-groups", "br-int").splitlines():
        m = re.search(r"group_id=(\d+),(.*)", ln)
        if m:
            groups[m.group(1)] = m.group(2)
    meters: dict[str, str] = {}
    for ln in box.ofctl("dump-meters", "br-int").splitlines():
        m = re.search(r"meter=(\d+) (.*)", ln)
        if m:
            meters[m.group(1)] = m.group(2)
    flows = []
    for ln in dump(box):
        ln = re.sub(r"group:(\d+)", lambda m: f"group:<{groups.get(m.group(1))}>", ln)
        ln = re.sub(r"meter_id=(\d+)", lambda m: f"meter_id=<{meters.get(m.group(1))}>", ln)
        ln = re.sub(r"meter:(\d+)", lambda m: f"meter:<{meters.get(m.group(1))}>", ln)
        flows.append(ln)
    return sorted(flows), sorted(groups.values()), sorted(meters.values())


def test_rich_topology_same_flows_groups_meters_as_c_agent(
        sandbox_factory: SandboxFactory) -> None:
    """NAT, LBs, DHCP, DNS, localnet, virtual/localport/external ports, port
    groups, address sets, meters, CoPP, QoS, a remote chassis (recipe §4.2)."""
    box = sandbox_factory(northd=True)
    build_rich(box)
    box.start_controller("c")
    box.wait_hv_sync(timeout=120)
    c = normalized(box)
    c_bfd = box.vsctl("get", "Interface", "ovn-hv2-0", "bfd")
    box.stop_controller()
    box.vsctl("clear", "Interface", "ovn-hv2-0", "bfd")
    box.start_controller("py")
    box.wait_hv_sync(timeout=300)
    py = normalized(box)
    assert len(c[0]) > 1000
    # BFD towards the other member of the HA chassis group, as the C agent does.
    assert 'enable="true"' in c_bfd
    assert box.vsctl("get", "Interface", "ovn-hv2-0", "bfd") == c_bfd
    for what, a, b in zip(("flows", "groups", "meters"), c, py):
        missing, extra = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        assert not missing and not extra, (
            f"{what}: only C:\n" + "\n".join(missing[:20]) + "\nonly py:\n"
            + "\n".join(extra[:20]))


def test_seed_restart_after_c_agent_same_flows_and_zones(
        sandbox_factory: SandboxFactory) -> None:
    """seed-50 (recipe §4.1): the C agent installs, we take over (restart mode)
    and must end with the same flows and keep every ct zone it assigned."""
    from integration.topologies import build_seed
    box = sandbox_factory(northd=True)
    build_seed(box, 50)
    box.start_controller("c")
    box.wait_hv_sync(timeout=120)
    c = normalized(box)
    c_zones = sorted(box.appctl("controller", "ct-zone-list").splitlines())
    box.stop_controller()
    box.start_controller("py")
    box.wait_hv_sync(timeout=300)
    py = normalized(box)
    assert len(c[0]) > 10000
    missing, extra = sorted(set(c[0]) - set(py[0])), sorted(set(py[0]) - set(c[0]))
    assert not missing and not extra, (
        "only C:\n" + "\n".join(missing[:20]) + "\nonly py:\n" + "\n".join(extra[:20]))
    assert sorted(box.appctl("controller", "ct-zone-list").splitlines()) == c_zones
