"""Physical and other non-Logical_Flow flows of OVN 23.03 (controller/physical.c
and the extra flows of controller/lflow.c), as shared ``ofctrl`` objects.

Public API
----------
Builders are pure functions returning ``list[ofctrl.flow.Flow]`` (matches are
``ofctrl.match.Match``, actions ``ofctrl.ofpacts`` objects).  All the flows
one call returns belong to one owner, given below; the cookie of a flow is
the first 32 bits of the SB row it comes from.

* ``port_binding_flows(ctx, pb)``       tables 0, 37-41, 64, 65; owner ``pb.uuid``
* ``port_security_flows(ctx, pb)``      tables 73-75; owner ``pb.uuid``
* ``mc_group_flows(ctx, mc)``           tables 39/40; owner ``mc.uuid``
* ``mac_binding_flows(ctx, mb)``, ``static_mac_binding_flows(ctx, smb)``
                                        tables 66/67; owner the row's uuid
* ``fdb_flows(ctx, fdb)``               tables 71/72; owner ``fdb.uuid``
* ``lb_hairpin_flows(ctx, lb)``         tables 68/70; owner ``lb.uuid``
* ``tunnel_flows(ctx, port_bindings)``, ``default_flows(ctx)``,
  ``chassis_mac_conj_flows(ctx)``       owner ``GENERIC_OWNER``
* ``build_all(ctx, sb)`` -> ``list[OwnedFlows]``: everything, one
  ``OwnedFlows(owner, flows)`` per builder call, from an object with the SB
  tables as iterables: ``port_bindings``, ``multicast_groups``,
  ``mac_bindings``, ``static_mac_bindings``, ``fdbs``, ``load_balancers``.

Loading: ``add_to_desired(table, groups)`` adds ``OwnedFlows`` groups to an
``ofctrl.desired.DesiredFlowTable``, each flow under its group's owner (a
flow whose key its owner already has is dropped, so the first one wins).
``flow_to_string(flow, port_names)`` prints a flow exactly as
``ovs-ofctl dump-flows --no-stats --names`` does (no cookie).

Incremental use: when a Port_Binding changes, ``lport_update(ctx, pb, removed,
datapath_ports)`` says which owners to drop and which rows to rebuild with
``port_binding_flows`` + ``port_security_flows`` (external port -> its
localnet port, patch port -> its peer, multichassis flip -> whole datapath);
other rows (Multicast_Group, MAC_Binding, FDB, Load_Balancer) own their flows
one to one: ``table.remove(row.uuid)`` then
``add_to_desired(table, [OwnedFlows(row.uuid, <builder>(ctx, row))])``.
"""

from __future__ import annotations

from typing import Any, Iterable

from physical.generic import chassis_mac_conj_flows, default_flows, tunnel_flows
from physical.incremental import LportUpdate, lport_update
from physical.inputs import (ChassisTunnel, LocalDatapath, PhysicalContext, PhysicalDebug,
                             TunnelType)
from physical.lb_hairpin import lb_hairpin_flows
from physical.mcast import mc_group_flows
from physical.neighbors import fdb_flows, mac_binding_flows, static_mac_binding_flows
from physical.ofbuild import GENERIC_OWNER, Owner, OwnedFlows, add_to_desired, flow_to_string
from physical.port_security import port_security_flows
from physical.ports import port_binding_flows

__all__ = [
    "ChassisTunnel", "LocalDatapath", "LportUpdate", "lport_update", "PhysicalContext",
    "PhysicalDebug", "TunnelType",
    "GENERIC_OWNER", "Owner", "OwnedFlows", "add_to_desired", "flow_to_string",
    "build_all", "chassis_mac_conj_flows", "default_flows",
    "fdb_flows", "lb_hairpin_flows", "mac_binding_flows", "mc_group_flows",
    "port_binding_flows", "port_security_flows", "static_mac_binding_flows", "tunnel_flows",
]


def _rows(sb: Any, name: str) -> Iterable[Any]:
    return getattr(sb, name, ()) or ()


def build_all(ctx: PhysicalContext, sb: Any) -> list[OwnedFlows]:
    """Every physical/non-lflow flow for the given SB content (full recompute),
    grouped by owner in the order the C agent adds them."""
    pbs = list(_rows(sb, "port_bindings"))
    out: list[OwnedFlows] = [OwnedFlows(GENERIC_OWNER, chassis_mac_conj_flows(ctx))]
    for pb in pbs:
        out.append(OwnedFlows(pb.uuid, port_binding_flows(ctx, pb)))
    for mc in _rows(sb, "multicast_groups"):
        out.append(OwnedFlows(mc.uuid, mc_group_flows(ctx, mc)))
    out.append(OwnedFlows(GENERIC_OWNER, tunnel_flows(ctx, pbs) + default_flows(ctx)))
    for mb in _rows(sb, "mac_bindings"):
        out.append(OwnedFlows(mb.uuid, mac_binding_flows(ctx, mb)))
    for smb in _rows(sb, "static_mac_bindings"):
        out.append(OwnedFlows(smb.uuid, static_mac_binding_flows(ctx, smb)))
    for lb in _rows(sb, "load_balancers"):
        out.append(OwnedFlows(lb.uuid, lb_hairpin_flows(ctx, lb)))
    for fdb in _rows(sb, "fdbs"):
        out.append(OwnedFlows(fdb.uuid, fdb_flows(ctx, fdb)))
    for pb in pbs:
        out.append(OwnedFlows(pb.uuid, port_security_flows(ctx, pb)))
    return [g for g in out if g.flows]
