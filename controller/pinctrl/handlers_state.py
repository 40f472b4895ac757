"""Handlers of the opcodes whose effect is state, not a packet.

PUT_ARP (1), PUT_ND (4), PUT_FDB (25), BIND_VPORT (17), EVENT (15), LOG (7)
and ACTIVATION_STRATEGY_RARP (26): each reads the packet-in and returns SB
write intents (applied by the main loop, ``sb_writes``) or a log line; none
sends a packet.  Semantics follow 23.03.1 ``pinctrl.c`` / ``lib/acl-log.c``
(see pinctrl-anatomy §3); the acl_log line's flow text is OVS
``flow_format()`` of the frame, produced with :func:`flow_items` and
:class:`ofctrl.match.Match`.
"""

from __future__ import annotations

import json
import random
import socket
import struct

from controller.lflow.actions.base import (
    OP_ACTIVATION_STRATEGY_RARP, OP_BIND_VPORT, OP_EVENT, OP_LOG, OP_PUT_ARP,
    OP_PUT_FDB, OP_PUT_ND)
from controller.pinctrl.outcome import (
    DROP, ActivationIntent, EventIntent, FdbIntent, LogIntent, MacBindingIntent,
    Outcome, VportIntent)
from controller.pinctrl.packet_in import PacketIn
from controller.pinctrl.registry import handler
from controller.pinctrl.state import LocalView
from controller.vlog import INFO, get_logger
from ofctrl.fields import format_ipv4, format_mac
from physical.constants import T_LOG_EGRESS
from ofctrl.match import Match

__all__ = ["flow_items", "flow_format", "ipv6_format_mapped", "MAX_MAC_BINDING_DELAY_MS"]

MAX_MAC_BINDING_DELAY_MS = 50
EVENT_EMPTY_LB_BACKENDS = 0
_EVENT_OPTIONS = {1: "vip", 2: "protocol", 3: "load_balancer"}
_VERDICTS = {0: "allow", 1: "drop", 2: "reject"}
_SEVERITIES = {1: "alert", 4: "warning", 5: "notice", 6: "info", 7: "debug"}
_V4_MAPPED_PREFIX = 0xFFFF << 32
_ACL_LOG = get_logger("acl_log")


def ipv6_format_mapped(addr: int) -> str:
    """OVS ipv6_format_mapped(): dotted IPv4 for ::ffff:a.b.c.d, else inet_ntop."""
    if addr >> 32 == 0xFFFF:
        return format_ipv4(addr & 0xFFFFFFFF)
    return socket.inet_ntop(socket.AF_INET6, addr.to_bytes(16, "big"))


def _eth_src(pin: PacketIn) -> str:
    if len(pin.packet) < 14:
        raise ValueError("frame of %d bytes has no Ethernet header" % len(pin.packet))
    return format_mac(int.from_bytes(pin.packet[6:12], "big"))


def _put_mac_binding(pin: PacketIn, ip: int) -> Outcome:
    mac = _eth_src(pin)
    unicast = not pin.packet[0] & 1
    delay = 0 if unicast else random.randint(1, MAX_MAC_BINDING_DELAY_MS)
    return Outcome(intents=[MacBindingIntent(pin.reg("metadata"), pin.reg("reg14"),
                                             ipv6_format_mapped(ip), mac, delay)])


@handler(OP_PUT_ARP)
def put_arp(pin: PacketIn, view: LocalView) -> Outcome:
    """put_arp(inport, reg0, eth.src): learn an IPv4 neighbour."""
    return _put_mac_binding(pin, _V4_MAPPED_PREFIX | pin.reg("reg0"))


@handler(OP_PUT_ND)
def put_nd(pin: PacketIn, view: LocalView) -> Outcome:
    """put_nd(inport, xxreg0, eth.src): learn an IPv6 neighbour."""
    return _put_mac_binding(pin, pin.reg("xxreg0"))


@handler(OP_PUT_FDB)
def put_fdb(pin: PacketIn, view: LocalView) -> Outcome:
    """put_fdb(inport, eth.src): learn a MAC on a port with unknown addresses."""
    return Outcome(intents=[FdbIntent(pin.reg("metadata"), pin.reg("reg14"), _eth_src(pin))])


@handler(OP_BIND_VPORT)
def bind_vport(pin: PacketIn, view: LocalView) -> Outcome:
    """bind_vport(vport, inport): payload = be32 tunnel key of the virtual port."""
    if len(pin.payload) < 4:
        return Outcome()                         # as C: silently nothing
    vport = int.from_bytes(pin.payload[:4], "big")
    return Outcome(intents=[VportIntent(pin.reg("metadata"), vport, pin.reg("reg14"))])


@handler(OP_EVENT)
def trigger_event(pin: PacketIn, view: LocalView) -> Outcome:
    """trigger_event(event="empty_lb_backends", vip=, protocol=, load_balancer=)."""
    data = pin.payload
    if len(data) < 4:
        return DROP("event not present in the userdata")
    if int.from_bytes(data[:4], "big") != EVENT_EMPTY_LB_BACKENDS:
        return Outcome()
    opts: dict[str, str] = {}
    ofs = 4
    while ofs < len(data):
        if ofs + 4 > len(data):
            return DROP("truncated event option header")
        code, size = struct.unpack_from("!HH", data, ofs)
        ofs += 4
        if ofs + size > len(data):
            return DROP("truncated event option %d" % code)
        name = _EVENT_OPTIONS.get(code)
        if name is None:               # C asserts here; a port drops instead
            return DROP("unknown event option %d" % code)
        opts[name] = data[ofs:ofs + size].decode("utf-8", "replace")
        ofs += size
    if len(opts) != 3:
        return DROP("missing lb parameters in userdata")
    info = tuple((k, opts[k]) for k in ("vip", "protocol", "load_balancer"))
    return Outcome(intents=[EventIntent("empty_lb_backends", info)])


@handler(OP_ACTIVATION_STRATEGY_RARP)
def activation_strategy_rarp(pin: PacketIn, view: LocalView) -> Outcome:
    """A RARP on a multichassis port with activation-strategy=rarp."""
    return Outcome(intents=[ActivationIntent(pin.reg("metadata"), pin.reg("reg14"))])


@handler(OP_LOG)
def acl_log(pin: PacketIn, view: LocalView) -> Outcome:
    """log(name=, verdict=, severity=): one acl_log INFO line, as lib/acl-log.c
    (nothing at all, not even the flow text, while acl_log is below INFO)."""
    if not _ACL_LOG.is_enabled(INFO):
        return Outcome()
    data = pin.payload
    if len(data) < 2:
        return Outcome(intents=[LogIntent("acl_log", "warn", "log data missing")])
    name = data[2:].decode("utf-8", "replace") if len(data) > 2 else "<unnamed>"
    direction = "from-lport" if pin.table_id < T_LOG_EGRESS else "to-lport"
    text = "name=%s, verdict=%s, severity=%s, direction=%s: %s" % (
        _json_escape(name), _VERDICTS.get(data[0], "<unknown>"),
        _SEVERITIES.get(data[1], "<unknown>"), direction, flow_format(pin.packet))
    return Outcome(intents=[LogIntent("acl_log", "info", text)])


def _json_escape(s: str) -> str:
    # OVS json_string_escape(): only '"', '\\' and control characters escaped.
    return json.dumps(s, ensure_ascii=False)


# ---------------------------------------------------------------- flow_format
Item = tuple[str, int, "int | None"]
_ETH_VLAN = (0x8100, 0x88A8)
_IPV6_EXT = (0, 43, 60)              # hop-by-hop, routing, destination options
_IPV6_FRAG = 44


def _l4_items(out: list[Item], proto: int, l4: bytes, icmp6: bool) -> None:
    if proto == 6 and len(l4) >= 20:
        sport, dport = struct.unpack_from("!HH", l4)
        flags = int.from_bytes(l4[12:14], "big") & 0x0FFF
        out += [("tcp_src", sport, None), ("tcp_dst", dport, None), ("tcp_flags", flags, None)]
    elif proto == 17 and len(l4) >= 8:
        sport, dport = struct.unpack_from("!HH", l4)
        out += [("udp_src", sport, None), ("udp_dst", dport, None)]
    elif proto == 132 and len(l4) >= 12:
        sport, dport = struct.unpack_from("!HH", l4)
        out += [("sctp_src", sport, None), ("sctp_dst", dport, None)]
    elif proto == 1 and not icmp6 and len(l4) >= 8:
        out += [("icmp_type", l4[0], None), ("icmp_code", l4[1], None)]
    elif proto == 58 and icmp6 and len(l4) >= 8:
        out += [("icmpv6_type", l4[0], None), ("icmpv6_code", l4[1], None)]
        if l4[0] in (135, 136) and l4[1] == 0 and len(l4) >= 24:
            out.append(("nd_target", int.from_bytes(l4[8:24], "big"), None))
            sll = tll = 0
            ofs = 24
            while ofs + 8 <= len(l4):
                otype, olen = l4[ofs], l4[ofs + 1] * 8
                if olen == 0 or ofs + olen > len(l4):
                    break
                if otype == 1 and olen == 8 and l4[0] == 135:
                    sll = int.from_bytes(l4[ofs + 2:ofs + 8], "big")
                elif otype == 2 and olen == 8 and l4[0] == 136:
                    tll = int.from_bytes(l4[ofs + 2:ofs + 8], "big")
                ofs += olen
            out += [("nd_sll", sll, None), ("nd_tll", tll, None)]


def flow_items(frame: bytes) -> list[Item]:
    """The fields OVS flow_extract() + match_wc_init() give an Ethernet frame
    (zero metadata, no in_port), as Match items."""
    out: list[Item] = []
    if len(frame) < 14:
        return out
    out += [("eth_dst", int.from_bytes(frame[0:6], "big"), None),
            ("eth_src", int.from_bytes(frame[6:12], "big"), None)]
    ofs = 12
    eth_type = int.from_bytes(frame[ofs:ofs + 2], "big")
    tci = 0
    if eth_type in _ETH_VLAN and len(frame) >= ofs + 6:
        tci = int.from_bytes(frame[ofs + 2:ofs + 4], "big") | 0x1000
        ofs += 4
        eth_type = int.from_bytes(frame[ofs:ofs + 2], "big")
    ofs += 2
    if eth_type < 0x600:                 # 802.2 frame
        eth_type = 0x05FF
    out += [("eth_type", eth_type, None), ("vlan_tci", tci, None)]
    l3 = frame[ofs:]
    if eth_type == 0x0800 and len(l3) >= 20 and l3[0] >> 4 == 4:
        ihl = (l3[0] & 0xF) * 4
        if ihl < 20 or len(l3) < ihl:
            return out
        proto = l3[9]
        frag_field = int.from_bytes(l3[6:8], "big")
        frag = 0
        if frag_field & 0x3FFF:
            frag = 1 | (2 if frag_field & 0x1FFF else 0)
        out += [("ip_src", int.from_bytes(l3[12:16], "big"), None),
                ("ip_dst", int.from_bytes(l3[16:20], "big"), None),
                ("nw_proto", proto, None), ("nw_tos", l3[1] & 0xFC, None),
                ("nw_ecn", l3[1] & 3, None), ("nw_ttl", l3[8], None), ("ip_frag", frag, None)]
        if not frag & 2:
            _l4_items(out, proto, l3[ihl:], False)
    elif eth_type == 0x86DD and len(l3) >= 40:
        tc = (int.from_bytes(l3[0:2], "big") >> 4) & 0xFF
        label = int.from_bytes(l3[1:4], "big") & 0xFFFFF
        proto, ofs6, frag = l3[6], 40, 0
        while proto in _IPV6_EXT or proto == _IPV6_FRAG:
            if ofs6 + 8 > len(l3):
                break
            if proto == _IPV6_FRAG:
                offset_flags = int.from_bytes(l3[ofs6 + 2:ofs6 + 4], "big")
                frag = 1 | (2 if offset_flags & 0xFFF8 else 0)
                proto, ofs6 = l3[ofs6], ofs6 + 8
            else:
                proto, ofs6 = l3[ofs6], ofs6 + (l3[ofs6 + 1] + 1) * 8
        out += [("ipv6_src", int.from_bytes(l3[8:24], "big"), None),
                ("ipv6_dst", int.from_bytes(l3[24:40], "big"), None),
                ("ipv6_label", label, None), ("nw_proto", proto, None),
                ("nw_tos", tc & 0xFC, None), ("nw_ecn", tc & 3, None),
                ("nw_ttl", l3[7], None), ("ip_frag", frag, None)]
        if not frag & 2:
            _l4_items(out, proto, l3[ofs6:], True)
    elif eth_type in (0x0806, 0x8035) and len(l3) >= 28:
        if l3[0:6] == b"\x00\x01\x08\x00\x06\x04":
            op = int.from_bytes(l3[6:8], "big")
            out += [("arp_op", op if op <= 0xFF else 0, None),
                    ("arp_spa", int.from_bytes(l3[14:18], "big"), None),
                    ("arp_tpa", int.from_bytes(l3[24:28], "big"), None),
                    ("arp_sha", int.from_bytes(l3[8:14], "big"), None),
                    ("arp_tha", int.from_bytes(l3[18:24], "big"), None)]
    return out


def flow_format(frame: bytes) -> str:
    """OVS flow_format() of a frame as pinctrl sees it."""
    return Match(flow_items(frame)).to_string()
