"""Port-security flows (tables 73-75), lflow.c consider_port_sec_flows.

Built for Port_Bindings bound to this chassis that have ``port_security``
entries; owned by the Port_Binding row.  "failed" is flags.check_port_sec
(reg10 bit 12) = 1, "allowed" = 0.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Sequence

from ofctrl.flow import Flow
from ofctrl.match import Match
from ofctrl.ofpacts import Action, Resubmit
from physical import constants as C
from physical.common import parse_mac
from physical.inputs import PhysicalContext, Row, bound_chassis, cookie_of, same_chassis
from physical.ofbuild import load


@dataclass(slots=True)
class PortAddresses:
    """lport_addresses: one MAC and its IPv4/IPv6 networks (addr, plen)."""
    mac: int
    ipv4: list[tuple[int, int]] = field(default_factory=list)
    ipv6: list[tuple[int, int]] = field(default_factory=list)


def extract_lsp_addresses(text: str) -> PortAddresses | None:
    tokens = text.split()
    if not tokens:
        return None
    mac = parse_mac(tokens[0])
    if mac is None or len(tokens[0].split(":")) != 6:
        return None
    pa = PortAddresses(mac)
    for tok in tokens[1:]:
        try:
            net = ipaddress.ip_interface(tok)
        except ValueError:
            return pa  # extract_addresses stops at the first bad token
        if net.version == 4:
            pa.ipv4.append((int(net.ip), net.network.prefixlen))
        else:
            pa.ipv6.append((int(net.ip), net.network.prefixlen))
    return pa


def _mask(plen: int, width: int) -> int:
    return ((1 << width) - 1) ^ ((1 << (width - plen)) - 1)


def _lla(mac: int) -> int:
    """in6_generate_lla: fe80::/64 with the modified EUI-64 of ``mac``."""
    b = mac.to_bytes(6, "big")
    eui = bytes([b[0] ^ 0x02, b[1], b[2], 0xFF, 0xFE, b[3], b[4], b[5]])
    return (0xFE80 << 112) | int.from_bytes(eui, "big")


def _ip_items(name: str, addr: int, plen: int, width: int) -> tuple[str, int, int | None]:
    mask = _mask(plen, width)
    if plen == width or addr & ~mask & ((1 << width) - 1):
        return (name, addr, None)
    return (name, addr & mask, mask)


def port_security_flows(ctx: PhysicalContext, pb: Row) -> list[Flow]:
    if not same_chassis(bound_chassis(pb), ctx.chassis) or not pb.port_security:
        return []
    addrs = [a for a in (extract_lsp_addresses(t) for t in pb.port_security) if a is not None]
    if not addrs:
        return []
    cookie = cookie_of(pb)
    flows: list[Flow] = []
    dp, key = pb.datapath.tunnel_key, pb.tunnel_key
    deny: list[Action] = [load(C.LOG_FLAGS, 1, C.MLF_CHECK_PORT_SEC_BIT, 1)]
    allow: list[Action] = [load(C.LOG_FLAGS, 0, C.MLF_CHECK_PORT_SEC_BIT, 1)]
    adv_nd: list[Action] = [Resubmit(C.T_CHK_IN_PORT_SEC_ND)]
    inp = [(C.LOG_DATAPATH, dp, None), (C.LOG_INPORT, key, None)]
    outp = [(C.LOG_DATAPATH, dp, None), (C.LOG_OUTPORT, key, None)]

    def add(table: int, prio: int, items: Sequence[tuple[str, int, int | None]],
            acts: list[Action]) -> None:
        flows.append(Flow(table, prio, Match(items), acts, cookie))

    arp = [("eth_type", C.ETH_TYPE_ARP, None)]
    ip4 = [("eth_type", C.ETH_TYPE_IP, None)]
    ip6 = [("eth_type", C.ETH_TYPE_IPV6, None)]
    icmp6 = [*ip6, ("nw_proto", C.IPPROTO_ICMPV6, None)]

    # In-port security defaults.
    add(C.T_CHK_IN_PORT_SEC, 80, inp, deny)
    add(C.T_CHK_IN_PORT_SEC, 95, inp + arp, adv_nd)
    add(C.T_CHK_IN_PORT_SEC_ND, 80, inp + arp, deny)
    add(C.T_CHK_IN_PORT_SEC_ND, 80, inp + icmp6 + [("nw_ttl", 255, None), ("icmpv6_type", 136, None)], deny)
    add(C.T_CHK_IN_PORT_SEC_ND, 80, inp + icmp6 + [("nw_ttl", 255, None), ("icmpv6_type", 135, None)], allow)

    for pa in addrs:
        src = [("eth_src", pa.mac, None)]
        if not pa.ipv4 and not pa.ipv6:
            add(C.T_CHK_IN_PORT_SEC, 90, inp + src, adv_nd)
        if pa.ipv4:
            for addr, plen in pa.ipv4:
                add(C.T_CHK_IN_PORT_SEC, 90, inp + src + ip4 + [_ip_items("ip_src", addr, plen, 32)], allow)
            add(C.T_CHK_IN_PORT_SEC, 90, inp + src + ip4 + [
                ("ip_src", 0, None), ("ip_dst", 0xFFFFFFFF, None), ("nw_proto", C.IPPROTO_UDP, None),
                ("udp_src", 68, None), ("udp_dst", 67, None)], allow)
        if pa.ipv4 or not pa.ipv6:
            sha = [("arp_sha", pa.mac, None)]
            if not pa.ipv4:
                add(C.T_CHK_IN_PORT_SEC_ND, 90, inp + src + arp + sha, allow)
            for addr, plen in pa.ipv4:
                add(C.T_CHK_IN_PORT_SEC_ND, 90,
                    inp + src + arp + sha + [_ip_items("arp_spa", addr, plen, 32)], allow)
        if pa.ipv6:
            for addr, plen in pa.ipv6:
                add(C.T_CHK_IN_PORT_SEC, 90, inp + src + ip6 + [_ip_items("ipv6_src", addr, plen, 128)],
                    adv_nd)
            add(C.T_CHK_IN_PORT_SEC, 90, inp + src + ip6 + [("ipv6_src", _lla(pa.mac), None)], adv_nd)
            mld = inp + src + icmp6 + [("ipv6_src", 0, None), ("ipv6_dst", 0xFF02 << 112, 0xFFFF << 112),
                                       ("icmpv6_code", 0, None)]
            add(C.T_CHK_IN_PORT_SEC, 90, mld + [("icmpv6_type", 131, None)], allow)
            add(C.T_CHK_IN_PORT_SEC, 90, mld + [("icmpv6_type", 143, None)], allow)
            add(C.T_CHK_IN_PORT_SEC, 90, mld + [("icmpv6_type", 135, None)], adv_nd)
        # ND (note: nw_ttl 225 is what 23.03 installs).
        ns = inp + icmp6 + [("nw_ttl", 225, None), ("icmpv6_type", 135, None), ("icmpv6_code", 0, None)]
        add(C.T_CHK_IN_PORT_SEC_ND, 90, ns + [("nd_sll", 0, None)], allow)
        add(C.T_CHK_IN_PORT_SEC_ND, 90, ns + [("nd_sll", pa.mac, None)], allow)
        # nd_sll is still set in the C match here, but OVS only encodes it for NS.
        na = inp + icmp6 + [("nw_ttl", 225, None), ("icmpv6_type", 136, None), ("icmpv6_code", 0, None)]
        if pa.ipv6:
            lla = ("nd_target", _lla(pa.mac), None)
            add(C.T_CHK_IN_PORT_SEC_ND, 90, na + [("nd_tll", 0, None), lla], allow)
            add(C.T_CHK_IN_PORT_SEC_ND, 90, na + [("nd_tll", pa.mac, None), lla], allow)
            base = inp + src + icmp6 + [("icmpv6_type", 136, None), ("icmpv6_code", 0, None)]
            for addr, plen in pa.ipv6:
                tgt = _ip_items("nd_target", addr, plen, 128)
                add(C.T_CHK_IN_PORT_SEC_ND, 90, base + [("nd_tll", 0, None), tgt], allow)
                add(C.T_CHK_IN_PORT_SEC_ND, 90, base + [("nd_tll", pa.mac, None), tgt], allow)
        else:
            add(C.T_CHK_IN_PORT_SEC_ND, 90, na + [("nd_tll", 0, None)], allow)
            add(C.T_CHK_IN_PORT_SEC_ND, 90, na + [("nd_tll", pa.mac, None)], allow)

    # Out-port security.
    add(C.T_CHK_OUT_PORT_SEC, 80, outp, deny)
    for pa in addrs:
        dst = [("eth_dst", pa.mac, None)]
        add(C.T_CHK_OUT_PORT_SEC, 85, outp + dst, allow)
        if not pa.ipv4 and not pa.ipv6:
            continue
        add(C.T_CHK_OUT_PORT_SEC, 90, outp + dst + ip4, deny)
        if pa.ipv4:
            for addr, plen in pa.ipv4:
                mask = _mask(plen, 32)
                if plen == 32 or addr & ~mask & 0xFFFFFFFF:
                    if plen != 32:
                        bcast = addr | (~mask & 0xFFFFFFFF)
                        add(C.T_CHK_OUT_PORT_SEC, 95, outp + dst + ip4 + [("ip_dst", bcast, None)], allow)
                    add(C.T_CHK_OUT_PORT_SEC, 95, outp + dst + ip4 + [("ip_dst", addr, None)], allow)
                else:
                    add(C.T_CHK_OUT_PORT_SEC, 95, outp + dst + ip4 + [("ip_dst", addr & mask, mask)], allow)
            add(C.T_CHK_OUT_PORT_SEC, 95, outp + dst + ip4 + [("ip_dst", 0xFFFFFFFF, None)], allow)
            add(C.T_CHK_OUT_PORT_SEC, 95, outp + dst + ip4 + [("ip_dst", 0xE0000000, 0xF0000000)], allow)
        add(C.T_CHK_OUT_PORT_SEC, 90, outp + dst + ip6, deny)
        if pa.ipv6:
            for addr, plen in pa.ipv6:
                add(C.T_CHK_OUT_PORT_SEC, 95, outp + dst + ip6 + [_ip_items("ipv6_dst", addr, plen, 128)],
                    allow)
            add(C.T_CHK_OUT_PORT_SEC, 95, outp + dst + ip6 + [("ipv6_dst", _lla(pa.mac), None)], allow)
            add(C.T_CHK_OUT_PORT_SEC, 95, outp + dst + ip6 + [("ipv6_dst", 0xFF << 120, 0xFF << 120)], allow)
    return flows
