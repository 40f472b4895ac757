"""Multicast_Group fan-out flows (tables 39 and 40): consider_mc_group.

Flows are owned by the Multicast_Group row.  Remote chassis are visited in
the order of ``ChassisTunnel`` lookups; when several remote chassis are in one
group the C agent emits them in its string-set hash order, which
:func:`remote_chassis_order` reproduces.
"""

from __future__ import annotations

from ofctrl.flow import Flow
from ofctrl.ofpacts import Action, Output, Resubmit
from physical import constants as C
from physical.common import encapsulation, match_outport
from physical.inputs import ChassisTunnel, PhysicalContext, Row, bound_chassis, cookie_of, same_chassis
from physical.ofbuild import load
from physical.ovshash import sset_order


def _chassis_is_vtep(ch: Row) -> bool:
    return str(ch.other_config.get("is-vtep", "false")).lower() == "true"


def remote_chassis_order(names: list[str]) -> list[str]:
    """Iteration order of an OVS sset holding ``names`` (inserted in this order)."""
    return sset_order(names)


def _fanout(ctx: PhysicalContext, chassis_names: list[str], dp_key: int, outport: int,
            is_ramp: bool, acts: list[Action]) -> None:
    prev: ChassisTunnel | None = None
    for name in remote_chassis_order(chassis_names):
        tun = ctx.find_tunnel(name)
        if tun is None:
            continue
        if prev is None or tun.type != prev.type:
            acts += encapsulation(ctx, tun, dp_key, outport, is_ramp)
            prev = tun
        acts.append(Output(tun.ofport))


def mc_group_flows(ctx: PhysicalContext, mc: Row) -> list[Flow]:
    dp = mc.datapath
    dp_key = dp.tunnel_key
    ldp = ctx.local_datapaths.get(dp_key)
    if ldp is None:
        return []
    me = ctx.chassis
    remote: list[str] = []
    vtep: list[str] = []
    local_acts: list[Action] = []
    remote_acts: list[Action] = []

    def add_unique(lst: list[str], name: str) -> None:
        if name not in lst:
            lst.append(name)

    for port in mc.ports:
        if port.datapath.uuid != dp.uuid:
            continue
        zone = ctx.ct_zones.get(port.logical_port, 0)
        if zone:
            local_acts.append(load(C.LOG_CT_ZONE, zone))
        parent = port.parent_port[0] if port.parent_port else ""
        lport_name = parent if parent else port.logical_port
        ptype = port.type
        if ptype == "patch":
            target = local_acts if ldp.is_transit_switch else remote_acts
            target += [load(C.LOG_OUTPORT, port.tunnel_key), Resubmit(C.T_CHECK_LOOPBACK)]
        # Note: 23.03 has no "else" here, so patch ports fall through the chain below.
        ch = bound_chassis(port)
        if ptype == "remote":
            if ch is not None:
                remote_acts.append(load(C.LOG_OUTPORT, port.tunnel_key))
                tun = ctx.find_tunnel(ch.name)
                if tun is not None:
                    remote_acts += encapsulation(ctx, tun, dp_key, port.tunnel_key, False)
                    remote_acts.append(Output(tun.ofport))
        elif ptype == "localport":
            remote_acts += [load(C.LOG_OUTPORT, port.tunnel_key), Resubmit(C.T_CHECK_LOOPBACK)]
        elif ((same_chassis(ch, me) or any(same_chassis(a, me) for a in port.additional_chassis))
              and (ctx.is_primary_bound(lport_name) or ptype == "l3gateway")):
            local_acts += [load(C.LOG_OUTPORT, port.tunnel_key), Resubmit(C.T_CHECK_LOOPBACK)]
        elif port.logical_port in ctx.patch_ofports:
            local_acts += [load(C.LOG_OUTPORT, port.tunnel_key), Resubmit(C.T_CHECK_LOOPBACK)]
        elif ptype == "chassisredirect" and same_chassis(ch, me):
            dist_name = port.options.get("distributed-port")
            if dist_name:
                dist = ctx.port_bindings_by_name.get(dist_name)
                if dist is not None and dist.datapath.uuid == port.datapath.uuid:
                    local_acts += [load(C.LOG_OUTPORT, dist.tunnel_key),
                                   Resubmit(C.T_CHECK_LOOPBACK)]
        elif ldp.localnet_port is None:
            if ch is not None:
                add_unique(vtep if _chassis_is_vtep(ch) else remote, ch.name)
            for add in port.additional_chassis:
                add_unique(vtep if _chassis_is_vtep(add) else remote, add.name)

    flows: list[Flow] = []
    cookie = cookie_of(mc)
    m = match_outport(dp_key, mc.tunnel_key)
    has_local = bool(local_acts)
    if has_local:
        local_acts.append(load(C.LOG_OUTPORT, mc.tunnel_key))
        flows.append(Flow(C.T_LOCAL_OUTPUT, 100, m, local_acts, cookie))
    if remote or vtep or remote_acts:
        if remote_acts:
            remote_acts.append(load(C.LOG_OUTPORT, mc.tunnel_key))
        _fanout(ctx, remote, dp_key, mc.tunnel_key, False, remote_acts)
        _fanout(ctx, vtep, dp_key, mc.tunnel_key, True, remote_acts)
        if remote_acts:
            if has_local:
                remote_acts.append(Resubmit(C.T_LOCAL_OUTPUT))
            flows.append(Flow(C.T_REMOTE_OUTPUT, 100, m, remote_acts, cookie))
    return flows
