"""Which flow owners to rebuild when one Port_Binding changes
(physical_handle_flows_for_lport in physical.c).

Design note
-----------
Flows are owned by SB row UUIDs.  When a Port_Binding changes, the agent
removes the flows of every UUID in :attr:`LportUpdate.remove` and then adds
``port_binding_flows(ctx, pb)`` (plus ``port_security_flows``) for every row
in :attr:`LportUpdate.rebuild`, in order.  ``None`` means the change cannot be
handled incrementally (vtep ports) and a full recompute is needed.

The helper also keeps ``LocalDatapath.multichassis_ports`` up to date, like
the C code does while handling the change; the caller's context is mutated.
Multicast groups that list the port should be rebuilt by the caller as well
(``mc_group_flows``), since their fan-out depends on where members are bound.

Deliberate difference: 23.03 tests the multichassis flip with an inverted
condition (it rebuilds the datapath when nothing flipped and leaves the map
stale when something did); here the map is updated when the state really
changes and the whole datapath is rebuilt then, which is what the C agent's
next full recompute converges to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from physical.inputs import PhysicalContext, Row


@dataclass(slots=True)
class LportUpdate:
    remove: list[object] = field(default_factory=list)   # owner UUIDs to drop
    rebuild: list[Row] = field(default_factory=list)     # rows to run port_binding_flows on


def lport_update(ctx: PhysicalContext, pb: Row, removed: bool,
                 datapath_ports: Iterable[Row] = ()) -> LportUpdate | None:
    """``datapath_ports``: every Port_Binding of ``pb``'s datapath (needed only
    when the port's multichassis state flips)."""
    if pb.type == "vtep":
        return None
    upd = LportUpdate()
    seen: set[object] = set()

    def rebuild(row: Row) -> None:
        if row.uuid not in seen:
            seen.add(row.uuid)
            if row.uuid not in upd.remove:
                upd.remove.append(row.uuid)
            upd.rebuild.append(row)

    upd.remove.append(pb.uuid)
    ld = ctx.local_datapaths.get(pb.datapath.tunnel_key)
    if pb.type == "external" and ld is not None and ld.localnet_port is not None:
        rebuild(ld.localnet_port)
    if ld is not None:
        is_multi = bool(pb.additional_chassis)
        was_multi = pb.logical_port in ld.multichassis_ports
        if is_multi != was_multi:
            if is_multi:
                ld.multichassis_ports[pb.logical_port] = pb
            else:
                ld.multichassis_ports.pop(pb.logical_port, None)
            for port in datapath_ports:
                if not (removed and port.uuid == pb.uuid):
                    rebuild(port)
    if not removed:
        rebuild(pb)
        if pb.type == "patch":
            peer_name = pb.options.get("peer")
            peer = ctx.port_bindings_by_name.get(peer_name) if peer_name else None
            if (peer is not None and peer.type == pb.type
                    and peer.options.get("peer") == pb.logical_port):
                rebuild(peer)
    return upd
