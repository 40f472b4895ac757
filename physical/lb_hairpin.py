"""Load-balancer hairpin flows (tables 68 and 70), lflow.c consider_lb_hairpin_flows.

Owned by the SB Load_Balancer row (cookie = first 32 bits of its UUID).  Only
load balancers applied to a local datapath produce flows.  Template load
balancers (options:template=true) get their ``^name`` references replaced by
this chassis' Chassis_Template_Var values (``ctx.template_vars``; an unknown
name stays as the bare name, which then fails to parse, as in the C agent).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Mapping

from ofctrl.flow import Flow
from ofctrl.match import Match
from ofctrl.ofpacts import (NX_LEARN_F_DELETE_LEARNED, Action, Ct, Learn, LearnLoadImm,
                            LearnMatchField, LearnMatchImm, LearnSpec, Nat)
from physical import constants as C
from physical.inputs import PhysicalContext, Row, cookie_of, opt_first
from physical.ofbuild import load, sub

_PROTO = {"tcp": C.IPPROTO_TCP, "udp": C.IPPROTO_UDP, "sctp": C.IPPROTO_SCTP}
_L4 = {C.IPPROTO_TCP: "tcp", C.IPPROTO_UDP: "udp", C.IPPROTO_SCTP: "sctp"}


@dataclass(frozen=True, slots=True)
class Endpoint:
    ip: int
    is_ipv6: bool
    port: int      # 0 = none


def parse_endpoint(text: str) -> Endpoint | None:
    """ip_address_and_port_from_lb_key: "IP", "IP:port", "[IP6]" or "[IP6]:port"."""
    text = text.strip()
    port = 0
    try:
        if text.startswith("["):
            host, _, rest = text[1:].partition("]")
            if rest:
                if not rest.startswith(":"):
                    return None
                port = int(rest[1:])
            return _endpoint(ipaddress.IPv6Address(host), port)
        if text.count(":") == 1:
            host, _, p = text.partition(":")
            port = int(p)
            return _endpoint(ipaddress.IPv4Address(host), port)
        if ":" in text:
            return _endpoint(ipaddress.IPv6Address(text), 0)
        return _endpoint(ipaddress.IPv4Address(text), 0)
    except ValueError:
        return None


def _endpoint(addr: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int) -> Endpoint | None:
    if port < 0 or port > 65535:
        return None
    return Endpoint(int(addr), addr.version == 6, port)


_TEMPLATE_REF = re.compile(r"\^([A-Za-z_][A-Za-z0-9_.]*)")


def expand_templates(text: str, template_vars: Mapping[str, str]) -> str:
    """lexer_parse_template_string, for the VIP/backend strings of an LB."""
    if "^" not in text:
        return text
    return _TEMPLATE_REF.sub(lambda m: template_vars.get(m.group(1), m.group(1)), text)


def parse_vips(vips: dict[str, str], template_vars: Mapping[str, str] | None = None
               ) -> list[tuple[Endpoint, list[Endpoint]]]:
    out: list[tuple[Endpoint, list[Endpoint]]] = []
    for raw_key in sorted(vips):
        key, value = raw_key, vips[raw_key]
        if template_vars is not None:
            key = expand_templates(key, template_vars)
            value = expand_templates(value, template_vars)
        vip = parse_endpoint(key)
        if vip is None:
            continue
        backends: list[Endpoint] = []
        ok = True
        for tok in (t for t in value.split(",") if t):
            be = parse_endpoint(tok)
            if be is None or be.is_ipv6 != vip.is_ipv6 or bool(vip.port) != bool(be.port):
                ok = False
                continue
            backends.append(be)
        if ok:
            out.append((vip, backends))
    return out


def _hairpin_snat_ips(options: dict[str, str]) -> tuple[int | None, int | None]:
    text = options.get("hairpin_snat_ip")
    v4: int | None = None
    v6: int | None = None
    if not text:
        return None, None
    for tok in text.split():
        try:
            addr = ipaddress.ip_address(tok)
        except ValueError:
            return None, None
        if addr.version == 4 and v4 is None:
            v4 = int(addr)
        elif addr.version == 6 and v6 is None:
            v6 = int(addr)
    return v4, v6


def _lb_datapaths(lb: Row) -> list[Row]:
    dps = list(lb.datapaths)
    grp = opt_first(lb.datapath_group)
    if grp is not None:
        dps += list(grp.datapaths)
    return dps


def _vip_match(vip: Endpoint, orig_tuple: bool) -> list[tuple[str, int, int | None]]:
    if vip.is_ipv6:
        if not orig_tuple:
            return [("ct_ipv6_dst", vip.ip, None)]
        return [(r, (vip.ip >> (96 - 32 * i)) & 0xFFFFFFFF, None)
                for i, r in enumerate(C.LB_ORIG_DIP_IPV6_REGS)]
    if not orig_tuple:
        return [("ct_nw_dst", vip.ip, None)]
    return [(C.LB_ORIG_DIP_IPV4, vip.ip, None)]


def _learn_same(name: str) -> LearnMatchField:
    """Learn match spec ``NAME[]``: the learned flow matches the field's current value."""
    whole = sub(name)
    return LearnMatchField(whole, whole)


def _ct_commit_snat(ip: int, is_ipv6: bool) -> Ct:
    """``ct(commit,zone=NXM_NX_REG12[0..15],nat(src=IP))``: SNAT in the SNAT zone."""
    return Ct(commit=True, zone_src=sub(C.LOG_SNAT_ZONE, 0, 16),
              actions=(Nat.make("src", ip, ipv6=is_ipv6),))


def lb_hairpin_flows(ctx: PhysicalContext, lb: Row) -> list[Flow]:
    local_dps = [dp for dp in _lb_datapaths(lb) if dp.tunnel_key in ctx.local_datapaths]
    if not local_dps:
        return []
    is_template = str(lb.options.get("template", "false")).lower() == "true"
    proto_name = opt_first(lb.protocol) or ""
    proto = _PROTO.get(proto_name, C.IPPROTO_TCP) if proto_name else C.IPPROTO_TCP
    orig_tuple = str(lb.options.get("hairpin_orig_tuple", "false")).lower() == "true"
    snat4, snat6 = _hairpin_snat_ips(lb.options)
    cookie = cookie_of(lb)
    flows: list[Flow] = []
    l4 = _L4[proto]
    ct_trk_dnat = [("ct_state", 0x20 | 0x80, 0x20 | 0x80)]
    vips = parse_vips(lb.vips, ctx.template_vars if is_template else None)

    for vip, backends in vips:
        snat_ip = (snat6 if vip.is_ipv6 else snat4)
        reply_dst = snat_ip if snat_ip is not None else vip.ip
        for be in backends:
            items: list[tuple[str, int, int | None]] = [] if orig_tuple else list(ct_trk_dnat)
            if vip.is_ipv6:
                items += [("eth_type", C.ETH_TYPE_IPV6, None), ("ipv6_src", be.ip, None),
                          ("ipv6_dst", be.ip, None)]
            else:
                items += [("eth_type", C.ETH_TYPE_IP, None), ("ip_src", be.ip, None),
                          ("ip_dst", be.ip, None)]
            items += _vip_match(vip, orig_tuple)
            if be.port:
                items += [("nw_proto", proto, None), (f"{l4}_dst", be.port, None)]
                if not orig_tuple:
                    items += [("ct_nw_proto", proto, None), ("ct_tp_dst", vip.port, None)]
                else:
                    items.append((C.LB_ORIG_TP_DPORT, vip.port, 0xFFFF))
            if ctx.lb_hairpin_use_ct_mark:
                items.append(("ct_mark", C.OVN_CT_NATTED, C.OVN_CT_NATTED))
            else:
                items.append(("ct_label", C.OVN_CT_NATTED, C.OVN_CT_NATTED))
            src_f, dst_f = ("ipv6_src", "ipv6_dst") if vip.is_ipv6 else ("ip_src", "ip_dst")
            specs: list[LearnSpec] = [
                _learn_same("metadata"),
                LearnMatchImm(sub("eth_type"), C.ETH_TYPE_IPV6 if vip.is_ipv6 else C.ETH_TYPE_IP),
                _learn_same(src_f),
                LearnMatchImm(sub(dst_f), reply_dst)]
            if be.port:
                specs += [LearnMatchImm(sub("nw_proto"), proto),
                          LearnMatchField(sub(f"{l4}_src"), sub(f"{l4}_dst"))]
            else:
                specs.append(_learn_same("nw_proto"))
            specs.append(LearnLoadImm(sub(C.LOG_FLAGS, C.MLF_LOOKUP_LB_HAIRPIN_BIT, 1), 1))
            acts: list[Action] = [load(C.LOG_FLAGS, 1, C.MLF_LOOKUP_LB_HAIRPIN_BIT, 1),
                                  Learn(C.T_CHK_LB_HAIRPIN_REPLY, tuple(specs), cookie=cookie,
                                        flags=NX_LEARN_F_DELETE_LEARNED)]
            flows.append(Flow(C.T_CHK_LB_HAIRPIN, 100, Match(items), acts, cookie))

    for vip, _backends in vips:
        snat_ip = (snat6 if vip.is_ipv6 else snat4)
        ct = _ct_commit_snat(snat_ip if snat_ip is not None else vip.ip, vip.is_ipv6)
        items = [] if orig_tuple else list(ct_trk_dnat)
        items.append(("eth_type", C.ETH_TYPE_IPV6 if vip.is_ipv6 else C.ETH_TYPE_IP, None))
        items += _vip_match(vip, orig_tuple)
        if vip.port:
            items.append(("nw_proto", proto, None))
            if not orig_tuple:
                items += [("ct_nw_proto", proto, None), ("ct_tp_dst", vip.port, None)]
            else:
                items.append((C.LB_ORIG_TP_DPORT, vip.port, 0xFFFF))
        base = 100 if vip.port else 90
        if snat_ip is None:
            flows.append(Flow(C.T_CT_SNAT_HAIRPIN, base, Match(items), [ct], cookie))
        else:
            for dp in local_dps:
                m = Match([*items, (C.LOG_DATAPATH, dp.tunnel_key, None)])
                flows.append(Flow(C.T_CT_SNAT_HAIRPIN, base + 100, m, [ct], cookie))
    return flows
