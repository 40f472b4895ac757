"""Physical and other non-Logical_Flow flows of OVN 23.03 (controller/physical.c
and the extra flows of controller/lflow.c).

Public API (pure functions, each returns ``list[PhysFlow]`` tagged with the
owning SB row UUID in ``PhysFlow.owner``; ``None`` = generic flow):

* ``port_binding_flows(ctx, pb)``       tables 0, 37-41, 64, 65 for one Port_Binding
* ``mc_group_flows(ctx, mc)``           tables 39/40 for one Multicast_Group
* ``port_security_flows(ctx, pb)``      tables 73-75 (owned by the Port_Binding)
* ``mac_binding_flows(ctx, mb)``, ``static_mac_binding_flows(ctx, smb)``  tables 66/67
* ``fdb_flows(ctx, fdb)``               tables 71/72
* ``lb_hairpin_flows(ctx, lb)``         tables 68/70
* ``tunnel_flows(ctx, port_bindings)``, ``default_flows(ctx)``,
  ``chassis_mac_conj_flows(ctx)``       generic flows
* ``build_all(ctx, sb)``                everything, from an object with the SB tables
  as iterables: ``port_bindings``, ``multicast_groups``, ``mac_bindings``,
  ``static_mac_bindings``, ``fdbs``, ``load_balancers``.

Conversion: ``physical.to_ofctrl.to_ofctrl_flow(pf)`` gives the shared
``ofctrl.flow.Flow`` (ofctrl Match + ofpacts), ``add_to_desired(table, flows)``
adds them to an ``ofctrl.desired.DesiredFlowTable`` under their owners
(generic flows under ``GENERIC_OWNER``); ``pf.to_string(port_names)``
prints the flow exactly as ``ovs-ofctl dump-flows --no-stats`` (no cookie).

Incremental use: when a Port_Binding changes, ``lport_update(ctx, pb, removed,
datapath_ports)`` says which owners to drop and which rows to rebuild with
``port_binding_flows`` + ``port_security_flows`` (external port -> its
localnet port, patch port -> its peer, multichassis flip -> whole datapath);
other rows (Multicast_Group, MAC_Binding, FDB, Load_Balancer) own their flows
one to one.
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
from physical.ofbuild import PhysFlow, PMatch
from physical.port_security import port_security_flows
from physical.ports import port_binding_flows

__all__ = [
    "ChassisTunnel", "LocalDatapath", "LportUpdate", "lport_update", "PhysicalContext", "PhysicalDebug", "TunnelType",
    "PhysFlow", "PMatch", "build_all", "chassis_mac_conj_flows", "default_flows",
    "fdb_flows", "lb_hairpin_flows", "mac_binding_flows", "mc_group_flows",
    "port_binding_flows", "port_security_flows", "static_mac_binding_flows", "tunnel_flows",
]


def _rows(sb: Any, name: str) -> Iterable[Any]:
    return getattr(sb, name, ()) or ()


def build_all(ctx: PhysicalContext, sb: Any) -> list[PhysFlow]:
    """Every physical/non-lflow flow for the given SB content (full recompute)."""
    pbs = list(_rows(sb, "port_bindings"))
    flows: list[PhysFlow] = []
    flows += chassis_mac_conj_flows(ctx)
    for pb in pbs:
        flows += port_binding_flows(ctx, pb)
    for mc in _rows(sb, "multicast_groups"):
        flows += mc_group_flows(ctx, mc)
    flows += tunnel_flows(ctx, pbs)
    flows += default_flows(ctx)
    for mb in _rows(sb, "mac_bindings"):
        flows += mac_binding_flows(ctx, mb)
    for smb in _rows(sb, "static_mac_bindings"):
        flows += static_mac_binding_flows(ctx, smb)
    for lb in _rows(sb, "load_balancers"):
        flows += lb_hairpin_flows(ctx, lb)
    for fdb in _rows(sb, "fdbs"):
        flows += fdb_flows(ctx, fdb)
    for pb in pbs:
        flows += port_security_flows(ctx, pb)
    return flows
