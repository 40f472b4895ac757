"""MAC_Binding / Static_MAC_Binding (tables 66/67) and FDB (tables 71/72) flows.

Each flow is owned by the SB row it comes from (cookie = first 32 bits of
its UUID), as in lflow.c consider_neighbor_flow / consider_fdb_flows.
"""

from __future__ import annotations

import ipaddress

from ofctrl.flow import Flow
from ofctrl.match import Match
from ofctrl.ofpacts import SetField
from physical import constants as C
from physical.common import parse_mac
from physical.inputs import PhysicalContext, Row, cookie_of
from physical.ofbuild import load


def _xxreg0(ip6: int) -> list[tuple[str, int, int | None]]:
    return [(f"reg{i}", (ip6 >> (96 - 32 * i)) & 0xFFFFFFFF, None) for i in range(4)]


def _neighbor_flows(ctx: PhysicalContext, row: Row, priority: int) -> list[Flow]:
    pb = ctx.port_bindings_by_name.get(row.logical_port)
    if pb is None or pb.datapath.tunnel_key not in ctx.local_datapaths:
        return []
    mac = parse_mac(row.mac)
    if mac is None or " " in row.mac.strip():
        return []
    dp_key = pb.datapath.tunnel_key
    get_items: list[tuple[str, int, int | None]]
    lookup_items: list[tuple[str, int, int | None]]
    try:
        if "." in row.ip:
            ip4 = int(ipaddress.IPv4Address(row.ip))
            get_items = [("reg0", ip4, None)]
            lookup_items = [("reg0", ip4, None), ("eth_type", C.ETH_TYPE_ARP, None)]
        else:
            ip6 = int(ipaddress.IPv6Address(row.ip))
            get_items = _xxreg0(ip6)
            lookup_items = [*_xxreg0(ip6), ("eth_type", C.ETH_TYPE_IPV6, None),
                            ("nw_proto", C.IPPROTO_ICMPV6, None), ("icmpv6_code", 0, None)]
    except ValueError:
        return []
    cookie = cookie_of(row)
    flag = load(C.LOG_FLAGS, 1, C.MLF_LOOKUP_MAC_BIT, 1)
    get_m = Match([*get_items, (C.LOG_DATAPATH, dp_key, None), (C.LOG_OUTPORT, pb.tunnel_key, None)])
    lookup_m = Match([*lookup_items, (C.LOG_DATAPATH, dp_key, None),
                       (C.LOG_INPORT, pb.tunnel_key, None), ("eth_src", mac, None)])
    return [Flow(C.T_MAC_BINDING, priority, get_m, [SetField("eth_dst", mac), flag], cookie),
            Flow(C.T_MAC_LOOKUP, priority, lookup_m, [flag], cookie)]


def mac_binding_flows(ctx: PhysicalContext, mb: Row) -> list[Flow]:
    return _neighbor_flows(ctx, mb, 100)


def static_mac_binding_flows(ctx: PhysicalContext, smb: Row) -> list[Flow]:
    return _neighbor_flows(ctx, smb, 150 if smb.override_dynamic_mac else 50)


def fdb_flows(ctx: PhysicalContext, fdb: Row) -> list[Flow]:
    if fdb.dp_key not in ctx.local_datapaths:
        return []
    mac = parse_mac(fdb.mac)
    if mac is None:
        return []
    cookie = cookie_of(fdb)
    get_m = Match([(C.LOG_DATAPATH, fdb.dp_key, None), ("eth_dst", mac, None)])
    lookup_m = Match([(C.LOG_DATAPATH, fdb.dp_key, None), ("eth_src", mac, None),
                       (C.LOG_INPORT, fdb.port_key, None)])
    return [Flow(C.T_GET_FDB, 100, get_m, [load(C.LOG_OUTPORT, fdb.port_key)], cookie),
            Flow(C.T_LOOKUP_FDB, 100, lookup_m,
                 [load(C.LOG_FLAGS, 1, C.MLF_LOOKUP_FDB_BIT, 1)], cookie)]
