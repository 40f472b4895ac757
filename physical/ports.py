"""Per-Port_Binding physical flows (tables 0, 37-41, 64, 65): consider_port_binding.

:func:`port_binding_flows` returns ``ofctrl.flow.Flow`` objects that all
belong to the Port_Binding's UUID; their cookie is its first 32 bits except
where noted (the shared nested-container flow, chassis-MAC flows carrying the
router port's cookie).  Re-running it for one row regenerates exactly what
that row owns.
"""

from __future__ import annotations

from ofctrl.flow import Flow
from ofctrl.match import Match
from ofctrl.ofpacts import (Action, Bundle, CheckPktLarger, Clone, Conjunction, CtClear, Output,
                            PopVlan, PushVlan, Resubmit, SetField, SetNwTtl)
from physical import constants as C
from physical.common import (clear_log_regs, drop_actions, encapsulation, first_pb_mac,
                             ingress_metadata, match_outport, parse_mac, zone_loads)
from physical.inputs import (ChassisTunnel, LocalDatapath, PhysicalContext, Row,
                             bound_chassis, cookie_of, opt_first, same_chassis)
from physical.lport import CanBind, can_bind_here, ha_chassis_ordered, ha_group_is_active
from physical.ofbuild import controller_op, load, pop, push, sub


class _Out:
    """Collects the flows of one Port_Binding."""
    __slots__ = ("flows", "cookie")

    def __init__(self, pb: Row) -> None:
        self.flows: list[Flow] = []
        self.cookie = cookie_of(pb)

    def add(self, table: int, prio: int, match: Match, actions: list[Action],
            cookie: int | None = None) -> None:
        self.flows.append(Flow(table, prio, match, actions,
                               self.cookie if cookie is None else cookie))


# ----------------------------------------------------------------------
# Lookups mirroring lport.c / ha-chassis.c
# ----------------------------------------------------------------------

def binding_peer(ctx: PhysicalContext, pb: Row) -> Row | None:
    peer_name = pb.options.get("peer")
    if not peer_name:
        return None
    peer = ctx.port_bindings_by_name.get(peer_name)
    if peer is None or peer.type != pb.type:
        return None
    if peer.options.get("peer") != pb.logical_port:
        return None
    return peer


def is_chassis_resident(ctx: PhysicalContext, port_name: str) -> bool:
    pb = ctx.port_bindings_by_name.get(port_name)
    if pb is None or bound_chassis(pb) is None:
        return False
    if pb.type != "chassisredirect":
        return same_chassis(bound_chassis(pb), ctx.chassis)
    return ha_group_is_active(opt_first(pb.ha_chassis_group), ctx.active_tunnels, ctx.chassis)


def remote_tunnels(ctx: PhysicalContext, pb: Row) -> list[ChassisTunnel]:
    """get_remote_tunnels: main chassis (if remote) then additional chassis."""
    me = ctx.chassis
    tuns: list[ChassisTunnel] = []
    main = bound_chassis(pb)
    if main is not None and not same_chassis(main, me):
        encap = opt_first(pb.encap)
        tun = ctx.find_tunnel(main.name, encap.ip) if encap is not None else None
        if tun is None:
            tun = ctx.find_tunnel(main.name)
        if tun is not None:
            tuns.append(tun)
    for add in pb.additional_chassis:
        if same_chassis(add, me):
            continue
        # As in 23.03, the additional encap is searched by *our* chassis name.
        encap = next((e for e in pb.additional_encap if e.chassis_name == me.name), None)
        tun = ctx.find_tunnel(add.name, encap.ip) if encap is not None else None
        if tun is None:
            tun = ctx.find_tunnel(add.name)
        if tun is not None:
            tuns.append(tun)
    return tuns


# ----------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------

def _in_port_none_resubmit() -> list[Action]:
    return [push("in_port"), load("in_port", C.OFPP_NONE, 0, 16),
            Resubmit(C.T_LOG_TO_PHY), pop("in_port")]


def _local_common_flows(ctx: PhysicalContext, out: _Out, dp_key: int, pb: Row,
                        parent: Row | None, zones: tuple[int, int, int]) -> None:
    port_key = pb.tunnel_key
    out.add(C.T_LOCAL_OUTPUT, 100, match_outport(dp_key, port_key),
            [*zone_loads(zones), Resubmit(C.T_CHECK_LOOPBACK)])
    out.add(C.T_CHECK_LOOPBACK, 100,
            Match([(C.LOG_DATAPATH, dp_key, None), (C.LOG_FLAGS, 0, C.MLF_ALLOW_LOOPBACK),
                    (C.LOG_INPORT, port_key, None), (C.LOG_OUTPORT, port_key, None)]),
            drop_actions(ctx.debug, C.T_CHECK_LOOPBACK))
    m = match_outport(dp_key, port_key)
    if parent is None:
        m = m.with_field(C.LOG_FLAGS, C.MLF_ALLOW_LOOPBACK, C.MLF_ALLOW_LOOPBACK)
    out.add(C.T_SAVE_INPORT, 100, m, _in_port_none_resubmit())
    if parent is not None:
        # Shared by all children of the parent (hc_uuid, cookie 0 in C);
        # owned here by the child so it goes away with the last child.
        pm = match_outport(dp_key, parent.tunnel_key).with_field(
            C.LOG_FLAGS, C.MLF_NESTED_CONTAINER, C.MLF_NESTED_CONTAINER)
        out.add(C.T_SAVE_INPORT, 100, pm, _in_port_none_resubmit(), cookie=0)


def _push_vlan(options: dict[str, str] | None, tag: int) -> list[Action]:
    ethertype = 0x8100
    opt = options.get("ethtype") if options else None
    if opt and opt.lower() == "802.11ad":
        ethertype = 0x88A8
    return [PushVlan(ethertype), SetField("vlan_vid", tag | 0x1000)]


def _vlan_match(m: Match, tag: int) -> Match:
    if tag:
        return m.with_field("vlan_tci", 0x1000 | tag, 0x1FFF)
    return m.with_field("vlan_tci", 0, 0x1000)


def _replace_chassis_mac_flows(ctx: PhysicalContext, out: _Out, localnet: Row,
                               ld: LocalDatapath, ofport: int) -> None:
    tag = opt_first(localnet.tag) or 0
    zones = ctx.zone_ids(localnet)
    for _local, rport in ld.peer_ports:
        rmac = parse_mac(rport.mac[0]) if rport.mac else None
        if rmac is None:
            return
        rcookie = cookie_of(rport)
        m = _vlan_match(Match([("in_port", ofport, None),
                                ("conj_id", C.CHASSIS_MAC_TO_ROUTER_MAC_CONJID, None)]), tag)
        acts: list[Action] = [PopVlan()] if tag else []
        acts += ingress_metadata(localnet, zones)
        acts += [SetField("eth_src", rmac), Resubmit(C.T_LOG_INGRESS)]
        out.add(C.T_PHY_TO_LOG, 180, m, acts, cookie=rcookie)
        out.add(C.T_PHY_TO_LOG, 180, _vlan_match(Match(), tag),
                [Conjunction(C.CHASSIS_MAC_TO_ROUTER_MAC_CONJID, 2, 2)], cookie=rcookie)


def chassis_mac_for_network(chassis: Row, network: str) -> int | None:
    """chassis_get_mac: 'ovn-chassis-mac-mappings' = 'physnet:MAC,...'."""
    mappings = chassis.other_config.get("ovn-chassis-mac-mappings", "")
    for token in (t for t in mappings.split(",") if t):
        name, _, mac = token.partition(":")
        if name == network and mac:
            return parse_mac(mac)
    return None


def _replace_router_port_mac_flows(ctx: PhysicalContext, out: _Out, localnet: Row,
                                   ld: LocalDatapath, ofport: int) -> None:
    dp_key = localnet.datapath.tunnel_key
    tag = opt_first(localnet.tag) or 0
    network = localnet.options.get("network_name")
    if not network:
        return
    chassis_mac = chassis_mac_for_network(ctx.chassis, network)
    if chassis_mac is None:
        return
    for _local, rport in ld.peer_ports:
        if is_chassis_resident(ctx, "cr-" + rport.logical_port):
            continue
        rmac = parse_mac(rport.mac[0]) if rport.mac else None
        if rmac is None:
            return
        acts: list[Action] = [SetField("eth_src", chassis_mac)]
        if tag:
            acts += _push_vlan(localnet.options, tag)
        acts += [Output(ofport), SetField("eth_src", rmac)]
        if tag:
            acts.append(PopVlan())
        out.add(C.T_LOG_TO_PHY, 150,
                match_outport(dp_key, localnet.tunnel_key).with_field("eth_src", rmac), acts)


def _activation_strategy(ctx: PhysicalContext, out: _Out, pb: Row, dp_key: int,
                         port_key: int, ofport: int, zones: tuple[int, int, int]) -> None:
    me = ctx.chassis
    for add in pb.additional_chassis:
        if not same_chassis(add, me):
            continue
        strategy = pb.options.get("activation-strategy")
        activated = pb.options.get("additional-chassis-activated", "")
        if (strategy and me.name not in [t for t in activated.split(",") if t]
                and (dp_key, port_key) not in ctx.activated_ports):
            if strategy == "rarp":
                out.add(C.T_PHY_TO_LOG, 1010,
                        Match([("eth_type", C.ETH_TYPE_RARP, None), ("in_port", ofport, None)]),
                        [*ingress_metadata(pb, zones),
                         controller_op(C.OP_ACTIVATION_STRATEGY_RARP),
                         Resubmit(C.T_LOG_INGRESS)])
                out.add(C.T_PHY_TO_LOG, 1000, Match([("in_port", ofport, None)]), [])
                out.add(C.T_LOG_TO_PHY, 1000, match_outport(dp_key, port_key), [])
        return


def _tunnel_overhead(tun: ChassisTunnel) -> int:
    base = {1: C.GENEVE_TUNNEL_OVERHEAD, 2: C.STT_TUNNEL_OVERHEAD,
            3: C.VXLAN_TUNNEL_OVERHEAD}.get(int(tun.type), 0)
    if not base:
        return 0
    return base + (C.IPV6_HEADER_LEN if tun.is_ipv6 else C.IP_HEADER_LEN)


def _pkt_too_big_flows(ctx: PhysicalContext, out: _Out, pb: Row, mcp: Row,
                       tuns: list[ChassisTunnel]) -> None:
    iface_mtu = ctx.iface_mtus.get(mcp.logical_port, 0)
    if not iface_mtu:
        return
    overhead = max((_tunnel_overhead(t) for t in tuns), default=0)
    if not overhead:
        return
    mtu = (iface_mtu - overhead) & 0xFFFF
    dp_key = pb.datapath.tunnel_key
    for is_ipv6 in (False, True):
        eth_type = C.ETH_TYPE_IPV6 if is_ipv6 else C.ETH_TYPE_IP
        for reg in (C.LOG_INPORT, C.LOG_OUTPORT):
            m = Match([("eth_type", eth_type, None), (C.LOG_DATAPATH, dp_key, None),
                        (reg, mcp.tunnel_key, None)])
            out.add(C.T_LARGE_PKT_DETECT, 100, m,
                    [CheckPktLarger(mtu, sub("reg9", 1, 1)), Resubmit(C.T_LARGE_PKT_PROCESS)])
            src, dst = ("ipv6_src", "ipv6_dst") if is_ipv6 else ("ip_src", "ip_dst")
            frag_mtu = mtu - C.ETHERNET_OVERHEAD
            if is_ipv6:
                icmp: list[Action] = [SetField("icmpv6_type", 2), SetField("icmpv6_code", 0)]
                put_mtu = controller_op(C.OP_PUT_ICMP6_FRAG_MTU, pause=True,
                                        payload=frag_mtu.to_bytes(4, "big"))
            else:
                icmp = [SetField("icmp_type", 3), SetField("icmp_code", 4)]
                put_mtu = controller_op(C.OP_PUT_ICMP4_FRAG_MTU, pause=True,
                                        payload=frag_mtu.to_bytes(2, "big"))
            inner: list[Action] = [
                SetField("reg9", 0, 2), SetField(C.LOG_FLAGS, 1, 1),
                push("eth_dst"), push("eth_src"), pop("eth_dst"), pop("eth_src"),
                push(dst), push(src), pop(dst), pop(src),
                SetNwTtl(255), *icmp, put_mtu, Resubmit(C.T_LOG_INGRESS)]
            out.add(C.T_LARGE_PKT_PROCESS, 100, m.with_field("reg9", 2, 2),
                    [controller_op(C.OP_ICMP, pause=True, nested=inner)])


def _enforce_tunneling_for_multichassis(ctx: PhysicalContext, out: _Out, ld: LocalDatapath,
                                        pb: Row) -> None:
    if not ld.multichassis_ports:
        return
    tuns = remote_tunnels(ctx, pb)
    if not tuns:
        return
    dp_key, port_key = pb.datapath.tunnel_key, pb.tunnel_key
    is_vtep = pb.type == "vtep"
    for mcp in ld.multichassis_ports.values():
        acts: list[Action] = [load("in_port", C.OFPP_NONE, 0, 16)] if is_vtep else []
        for tun in tuns:
            acts += encapsulation(ctx, tun, dp_key, port_key, is_vtep)
            acts.append(Output(tun.ofport))
        out.add(C.T_REMOTE_OUTPUT, 110,
                match_outport(dp_key, port_key).with_field(C.LOG_INPORT, mcp.tunnel_key), acts)
        _pkt_too_big_flows(ctx, out, pb, mcp, tuns)


# ----------------------------------------------------------------------
# Remote output variants
# ----------------------------------------------------------------------

def _redirect_bridged(ctx: PhysicalContext, out: _Out, pb: Row, ld: LocalDatapath,
                      m: Match) -> None:
    if pb.type != "chassisredirect":
        return
    mac = first_pb_mac(pb)
    if mac is None:
        return
    distributed = pb.options.get("distributed-port")
    ls_dp_key = 0
    for _local, remote in ld.peer_ports:
        if remote.options.get("peer") == distributed:
            ls_dp_key = remote.datapath.tunnel_key
            break
    if not ls_dp_key:
        return
    ls_ld = ctx.local_datapaths.get(ls_dp_key)
    ln = ls_ld.localnet_port if ls_ld else None
    if ln is None:
        return
    out.add(C.T_LOCAL_OUTPUT, 100, m,
            [SetField("eth_src", mac), load(C.LOG_DATAPATH, ls_dp_key),
             load(C.LOG_OUTPORT, ln.tunnel_key), Resubmit(C.T_LOG_TO_PHY)])


def _redirect_overlay(ctx: PhysicalContext, out: _Out, pb: Row, m: Match) -> None:
    tuns = remote_tunnels(ctx, pb)
    if not tuns:
        return
    is_vtep = pb.type == "vtep"
    acts: list[Action] = [load("in_port", C.OFPP_NONE, 0, 16)] if is_vtep else []
    for tun in tuns:
        acts += encapsulation(ctx, tun, pb.datapath.tunnel_key, pb.tunnel_key, is_vtep)
        acts.append(Output(tun.ofport))
    acts.append(Resubmit(C.T_LOCAL_OUTPUT))
    out.add(C.T_REMOTE_OUTPUT, 100, m, acts)


def _redirect_overlay_ha(ctx: PhysicalContext, out: _Out, pb: Row, ordered: list[Row],
                         m: Match) -> None:
    tun: ChassisTunnel | None = None
    for ch in ordered:
        t = ctx.find_tunnel(ch.name)
        if tun is None:
            tun = t
        elif t is not None and t.type != tun.type:
            return  # mixed encapsulations are not supported
    if tun is None:
        return
    acts = encapsulation(ctx, tun, pb.datapath.tunnel_key, pb.tunnel_key, pb.type == "vtep")
    members: list[int] = []
    for ch in ordered:
        t = ctx.find_tunnel(ch.name)
        if t is None:
            continue
        if len(members) >= 2048:
            break
        members.append(t.ofport)
    acts.append(Bundle(tuple(members)))
    out.add(C.T_REMOTE_OUTPUT, 100, m, acts)


# ----------------------------------------------------------------------
# consider_port_binding
# ----------------------------------------------------------------------

def port_binding_flows(ctx: PhysicalContext, pb: Row) -> list[Flow]:
    """All physical flows owned by one Port_Binding on this chassis."""
    dp_key = pb.datapath.tunnel_key
    port_key = pb.tunnel_key
    ld = ctx.local_datapaths.get(dp_key)
    if ld is None:
        return []
    out = _Out(pb)
    me = ctx.chassis
    ptype = pb.type

    if ptype == "patch" or (ptype == "l3gateway" and same_chassis(bound_chassis(pb), me)):
        peer = binding_peer(ctx, pb)
        if peer is None:
            return []
        _local_common_flows(ctx, out, dp_key, pb, None, ctx.zone_ids(pb))
        inner: list[Action] = [CtClear(), SetField(C.LOG_DNAT_ZONE, 0),
                               SetField(C.LOG_SNAT_ZONE, 0), SetField(C.LOG_CT_ZONE, 0)]
        inner += ingress_metadata(peer, ctx.zone_ids(peer))
        inner += [SetField(C.LOG_FLAGS, 0), SetField(C.LOG_OUTPORT, 0), *clear_log_regs(),
                  Resubmit(C.T_LOG_INGRESS)]
        out.add(C.T_LOG_TO_PHY, 100, match_outport(dp_key, port_key), [Clone(tuple(inner))])
        return out.flows

    if ptype == "chassisredirect" and (
            same_chassis(bound_chassis(pb), me)
            or ha_group_is_active(opt_first(pb.ha_chassis_group), ctx.active_tunnels, ctx.chassis)):
        acts: list[Action] = []
        dist_name = pb.options.get("distributed-port", "")
        dist = ctx.port_bindings_by_name.get(dist_name)
        if dist is not None and dist.datapath.uuid == pb.datapath.uuid:
            acts = [load(C.LOG_OUTPORT, dist.tunnel_key), *zone_loads(ctx.zone_ids(dist)),
                    Resubmit(C.T_CHECK_LOOPBACK)]
        out.add(C.T_LOCAL_OUTPUT, 100, match_outport(dp_key, port_key), acts)
        return out.flows

    tag = 0
    nested = False
    parent: Row | None = None
    parent_name = opt_first(pb.parent_port)
    ofport = 0
    if parent_name:
        ptag = opt_first(pb.tag)
        if ptag is None:
            return []
        ofport = ctx.vif_ofports.get(parent_name, 0)
        if ofport:
            tag = ptag
            nested = True
            parent = ctx.port_bindings_by_name.get(parent_name)
    elif ptype in ("localnet", "l2gateway"):
        ofport = ctx.patch_ofports.get(pb.logical_port, 0)
        if ofport and opt_first(pb.tag) is not None:
            tag = opt_first(pb.tag)
    else:
        ofport = ctx.vif_ofports.get(pb.logical_port, 0)
        if ofport and can_bind_here(ctx.chassis, pb) is CanBind.CANNOT:
            ofport = 0

    localnet = ld.localnet_port
    ha_ordered = ha_chassis_ordered(opt_first(pb.ha_chassis_group))

    access = "local"
    if not ofport:
        if localnet is not None and not pb.additional_chassis:
            ofport = ctx.patch_ofports.get(localnet.logical_port, 0)
            if not ofport:
                return out.flows
            access = "localnet"
        elif not ha_ordered or len(ha_ordered) < 2:
            access = "remote"
        else:
            access = "ha_remote"

    if access == "local":
        zones = ctx.zone_ids(pb)
        _local_common_flows(ctx, out, dp_key, pb, parent if nested else None, zones)
        m = Match([("in_port", ofport, None)])
        pre: list[Action] = []
        if tag or ptype in ("localnet", "l2gateway"):
            if nested:
                pre.append(SetField(C.LOG_FLAGS, C.MLF_NESTED_CONTAINER, C.MLF_NESTED_CONTAINER))
            passthru = pb.options.get("vlan-passthru", "false").lower() == "true"
            if not passthru or tag:
                m = m.with_field("vlan_tci", 0x1000 | tag, 0x1FFF)
                pre.append(PopVlan())
        _activation_strategy(ctx, out, pb, dp_key, port_key, ofport, zones)
        body: list[Action] = ingress_metadata(pb, zones)
        if ptype == "localport":
            body.append(SetField(C.LOG_FLAGS, C.MLF_LOCALPORT, C.MLF_LOCALPORT))
        body.append(Resubmit(C.T_LOG_INGRESS))
        out.add(C.T_PHY_TO_LOG, 150 if tag else 100, m, pre + body)
        if not tag and ptype in ("localnet", "l2gateway"):
            out.add(C.T_PHY_TO_LOG, 100, m.with_field("vlan_tci", 0, 0x1000), body)
        if ptype == "localnet":
            _replace_chassis_mac_flows(ctx, out, pb, ld, ofport)

        acts = []
        if tag:
            acts += _push_vlan(localnet.options if localnet is not None else None, tag)
        acts.append(Output(ofport))
        if tag:
            acts.append(PopVlan())
        out.add(C.T_LOG_TO_PHY, 100, match_outport(dp_key, port_key), acts)

        if ptype == "localnet":
            _replace_router_port_mac_flows(ctx, out, pb, ld, ofport)
            drop = drop_actions(ctx.debug, C.T_CHECK_LOOPBACK)
            mo = match_outport(dp_key, port_key)
            out.add(C.T_CHECK_LOOPBACK, 160,
                    mo.with_field(C.LOG_FLAGS, C.MLF_LOCALPORT, C.MLF_LOCALPORT), drop)
            out.add(C.T_CHECK_LOOPBACK, 160,
                    mo.with_field(C.LOG_FLAGS, C.MLF_LOCAL_ONLY, C.MLF_LOCAL_ONLY), drop)
            for ext in ld.external_ports.values():
                ext_ch = bound_chassis(ext)
                if ext_ch is None or ext_ch.name != me.name:
                    continue
                fwd: list[Action] = [*clear_log_regs(), Resubmit(C.T_LOG_EGRESS)]
                for mac_text in ext.mac:
                    mac = parse_mac(mac_text)
                    if mac is None:
                        continue
                    out.add(C.T_CHECK_LOOPBACK, 170,
                            mo.with_field(C.LOG_FLAGS, C.MLF_LOCALPORT, C.MLF_LOCALPORT)
                            .with_field("eth_dst", mac), fwd)
        if ptype == "localport":
            out.add(C.T_REMOTE_OUTPUT, 150,
                    Match([(C.LOG_INPORT, port_key, None), (C.LOG_DATAPATH, dp_key, None)]),
                    [Resubmit(C.T_LOCAL_OUTPUT)])
        # Fall through: a local port whose main (or another additional)
        # chassis is elsewhere is also cloned over tunnels below.
    elif access == "localnet":
        assert localnet is not None
        out.add(C.T_LOCAL_OUTPUT, 100, match_outport(dp_key, port_key),
                [load(C.LOG_OUTPORT, localnet.tunnel_key), Resubmit(C.T_LOCAL_OUTPUT)])
        _enforce_tunneling_for_multichassis(ctx, out, ld, pb)
        return out.flows

    m = match_outport(dp_key, port_key)
    redirect_type = pb.options.get("redirect-type")
    if redirect_type is not None and redirect_type.lower() == "bridged":
        _redirect_bridged(ctx, out, pb, ld, m)
    elif access == "ha_remote":
        assert ha_ordered is not None
        _redirect_overlay_ha(ctx, out, pb, ha_ordered, m)
    else:
        _redirect_overlay(ctx, out, pb, m)
    return out.flows
