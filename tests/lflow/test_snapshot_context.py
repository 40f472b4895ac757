"""The snapshot adapter (``controller.lflow.snapshot``) feeds the agent's own
compile-context builder: the runtime data, residency and tunnel lookups it
yields on the ``rich`` reference dataset are checked against what the C
agent left in that dataset (its conntrack zones, its port claims)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.lflow.snapshot import (
    OvsConf,
    SbSnapshot,
    agent_context,
    context_from_snapshot,
    read_text,
    snapshot_state,
)

RICH = Path("/work/shared/reference-data/rich")

pytestmark = pytest.mark.skipif(not (RICH / "sb.db").exists(), reason="no reference data")


@pytest.fixture
def sb() -> SbSnapshot:
    return SbSnapshot(RICH / "sb.db")


@pytest.fixture(scope="module")
def conf() -> OvsConf:
    return OvsConf.read(RICH / "conf-ovs.txt")


def _pb(sb: SbSnapshot, name: str) -> Any:
    return next(pb for pb in sb.table("Port_Binding") if pb.logical_port == name)


def test_ovs_conf_gives_the_chassis_and_its_integration_bridge(sb: SbSnapshot,
                                                                conf: OvsConf) -> None:
    assert conf.system_id == "hv1"
    assert conf.bridge_mappings == {"physnet1": "br-phys"}
    br = conf.br_int(sb)
    assert br.name == "br-int"
    ifaces = {p.interfaces[0].name: (p, p.interfaces[0]) for p in br.ports}
    assert "patch-ln-pub-to-br-int" not in ifaces          # on br-phys
    port, vif = ifaces["vif-a1"]
    assert (vif.type, vif.ofport, vif.external_ids["iface-id"]) == ("dummy", [11], "ls-a-p1")
    port, tun = ifaces["ovn-hv2-0"]
    assert tun.options["remote_ip"] == "127.0.0.2"
    assert port.external_ids == {"ovn-chassis-id": "hv2@127.0.0.2"}


def test_runtime_data_matches_what_the_c_agent_allocated_zones_for(sb: SbSnapshot,
                                                                   conf: OvsConf) -> None:
    """C gives every local datapath a SNAT/DNAT zone pair and every local
    lport a zone: ours are the same datapaths, and every zone-owning port is
    related (ext1, a standby HA member, is related without a zone)."""
    st = snapshot_state(sb, conf.system_id, conf.br_int(sb), conf.bridge_mappings)
    owners = {ln.split()[0] for ln in read_text(RICH / "ct-zones.txt").splitlines() if ln.strip()}
    dp_zones = {o.rsplit("_", 1)[0] for o in owners if o.endswith(("_snat", "_dnat"))}
    assert {str(u) for u in st.rt.local_datapaths} == dp_zones
    port_owners = owners - {o for o in owners if o.endswith(("_snat", "_dnat"))}
    assert port_owners <= st.rt.related_lports
    assert st.rt.related_lports - port_owners == {
        pb.logical_port for pb in sb.table("Port_Binding") if pb.type == "patch"} | {"ext1"}
    assert st.rt.bound_here == {"ls-a-p1", "ls-a-p2", "ls-b-p1", "cr-lr0-pub"}


def test_residency_follows_the_c_lflow_rule(sb: SbSnapshot, conf: OvsConf) -> None:
    ctx = context_from_snapshot(sb, conf)
    bound = {pb.logical_port for pb in sb.table("Port_Binding")
             if pb.chassis and pb.chassis[0].name == "hv1"}
    assert {pb.logical_port for pb in sb.table("Port_Binding")
            if ctx.is_chassis_resident(pb.logical_port)} == bound
    assert not ctx.is_chassis_resident("ext1")     # hv1 is in its group, unclaimed
    assert not ctx.is_chassis_resident("no-such-port")
    # A chassisredirect port is resident where its HA group is active, whatever
    # its chassis column says (hv1 is the only member of cr-lr0-pub's group).
    cr = _pb(sb, "cr-lr0-pub")
    hv2 = next(c for c in sb.table("Chassis") if c.name == "hv2")
    for chassis in ([], [hv2]):
        cr.chassis = chassis
        st = snapshot_state(sb, conf.system_id, conf.br_int(sb), conf.bridge_mappings)
        assert agent_context(st, sb).is_chassis_resident("cr-lr0-pub")
    # Any other port only where it is bound.
    vif = _pb(sb, "ls-a-p1")
    vif.chassis = [hv2]
    st = snapshot_state(sb, conf.system_id, conf.br_int(sb), conf.bridge_mappings)
    assert not agent_context(st, sb).is_chassis_resident("ls-a-p1")


def test_tunnel_lookup_is_per_datapath(sb: SbSnapshot, conf: OvsConf) -> None:
    ctx = context_from_snapshot(sb, conf)
    ls_b = _pb(sb, "ls-b-p2").datapath.tunnel_key
    assert ctx.tunnel_ofport(ls_b, "ls-b-p2") == 1      # bound on hv2, tunnel ofport 1
    assert ctx.tunnel_ofport(ls_b + 100, "ls-b-p2") is None
    assert ctx.tunnel_ofport(ls_b, "ls-b-p1") is None   # bound here
