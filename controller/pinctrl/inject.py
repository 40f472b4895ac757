"""``inject-pkt MICROFLOW``: build the packet a microflow describes and inject it.

As 23.03.1 (``ofctrl.c:ofctrl_inject_pkt``): the microflow is parsed with
the logical-flow expression language (``expr_parse_microflow``: it must
pin down one packet), ``inport`` names a logical port whose OpenFlow port
on br-int becomes the packet's in_port, the frame is built like OVS
``flow_compose()`` (64 bytes of 0,1,2... payload where OVS adds one), and
it is sent as a packet-out running ``resubmit(,0)``.
"""

from __future__ import annotations

import struct
from typing import Callable, Mapping

from controller.lflow.expr.microflow import parse_microflow
from controller.lflow.expr.nodes import ConstantSet
from controller.lflow.symtab import Symbol
from controller.pinctrl.openflow import packet_out
from ofctrl.match import Match
from ofctrl.ofpacts import Resubmit

__all__ = ["flow_compose", "inject_message", "L7_LEN"]

L7_LEN = 64
_RESUBMIT_0 = Resubmit(table=0).encode()


def _csum(data: bytes, initial: int = 0) -> int:
    if len(data) & 1:
        data += b"\0"
    total = initial + sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def _finish(total: int) -> int:
    return ~total & 0xFFFF


def _l7(n: int) -> bytes:
    return bytes(i & 0xFF for i in range(n))


def _l4(f: Mapping[str, int], proto: int, l7_len: int) -> tuple[bytes, int]:
    """L4 bytes (checksum zero) and the offset of its checksum field (-1: none)."""
    if proto == 6:
        flags = f.get("tcp_flags", 0)
        hdr = struct.pack("!HHIIHHHH", f.get("tcp_src", 0), f.get("tcp_dst", 0), 0, 0,
                          (5 << 12) | flags, 0, 0, 0)
        return hdr + (b"" if flags & 0x7 else _l7(l7_len)), 16
    if proto == 17:
        return struct.pack("!HHHH", f.get("udp_src", 0), f.get("udp_dst", 0),
                           8 + l7_len, 0) + _l7(l7_len), 6
    if proto == 132:
        return struct.pack("!HHII", f.get("sctp_src", 0), f.get("sctp_dst", 0), 0, 0), -1
    if proto == 1:
        t, c = f.get("icmp_type", 0), f.get("icmp_code", 0)
        body = _l7(l7_len) if t in (0, 8) and c == 0 else b""
        return struct.pack("!BBHI", t, c, 0, 0) + body, 2
    if proto == 58:
        t, c = f.get("icmpv6_type", 0), f.get("icmpv6_code", 0)
        out = struct.pack("!BBHI", t, c, 0, 0)
        if c == 0 and t in (135, 136):
            out += f.get("nd_target", 0).to_bytes(16, "big")
            if f.get("nd_sll"):
                out += b"\x01\x01" + f["nd_sll"].to_bytes(6, "big")
            if f.get("nd_tll"):
                out += b"\x02\x01" + f["nd_tll"].to_bytes(6, "big")
        elif c == 0 and t in (128, 129):
            out += _l7(l7_len)
        return out, 2
    return b"", -1


def flow_compose(m: Match, l7_len: int = L7_LEN) -> bytes:
    """The frame OVS flow_compose() builds from the fields of ``m``."""
    f = {n: v for n, v, _ in m}
    eth_type = f.get("eth_type", 0x05FF)
    frame = f.get("eth_dst", 0).to_bytes(6, "big") + f.get("eth_src", 0).to_bytes(6, "big")
    tci = f.get("vlan_tci", 0)
    if tci & 0x1000:
        frame += struct.pack("!HH", 0x8100, tci & ~0x1000 & 0xFFFF)
    if eth_type == 0x05FF:
        return frame + struct.pack("!H", len(frame) + 2)
    frame += struct.pack("!H", eth_type)
    proto = f.get("nw_proto", 0)
    tos = f.get("nw_tos", 0) | f.get("nw_ecn", 0)
    frag = f.get("ip_frag", 0)
    later = bool(frag & 1 and frag & 2)
    if eth_type == 0x0800:
        l4, csum_ofs = (b"", -1) if later else _l4(f, proto, l7_len)
        frag_off = (0x2000 | (100 if frag & 2 else 0)) if frag & 1 else 0
        src, dst = f.get("ip_src", 0), f.get("ip_dst", 0)
        ip = struct.pack("!BBHHHBBHII", 0x45, tos, 20 + len(l4), 0, frag_off,
                         f.get("nw_ttl", 0), proto, 0, src, dst)
        ip = ip[:10] + struct.pack("!H", _finish(_csum(ip))) + ip[12:]
        if csum_ofs >= 0:
            if proto == 1:
                c = _finish(_csum(l4))
            else:
                pseudo = struct.pack("!IIBBH", src, dst, 0, proto, len(l4))
                c = _finish(_csum(l4, _csum(pseudo)))
                if proto == 17 and c == 0:
                    c = 0xFFFF
            l4 = l4[:csum_ofs] + struct.pack("!H", c) + l4[csum_ofs + 2:]
        return frame + ip + l4
    if eth_type == 0x86DD:
        l4, csum_ofs = (b"", -1) if later else _l4(f, proto, l7_len)
        src, dst = f.get("ipv6_src", 0), f.get("ipv6_dst", 0)
        ip6 = struct.pack("!IHBB", (6 << 28) | (tos << 20) | f.get("ipv6_label", 0),
                          len(l4), proto, f.get("nw_ttl", 0))
        ip6 += src.to_bytes(16, "big") + dst.to_bytes(16, "big")
        if csum_ofs >= 0:
            pseudo = src.to_bytes(16, "big") + dst.to_bytes(16, "big") + struct.pack(
                "!IxxxB", len(l4), proto)
            c = _finish(_csum(l4, _csum(pseudo)))
            if proto == 17 and c == 0:
                c = 0xFFFF
            l4 = l4[:csum_ofs] + struct.pack("!H", c) + l4[csum_ofs + 2:]
        return frame + ip6 + l4
    if eth_type in (0x0806, 0x8035):
        op = f.get("arp_op", 0)
        arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, op)
        if op in (1, 2):
            arp += (f.get("arp_sha", 0).to_bytes(6, "big") + f.get("arp_spa", 0).to_bytes(4, "big")
                    + f.get("arp_tha", 0).to_bytes(6, "big") + f.get("arp_tpa", 0).to_bytes(4, "big"))
        else:
            arp += b"\0" * 20
        return frame + arp
    return frame


def inject_message(microflow: str, symtab: Mapping[str, Symbol],
                   lookup_port: Callable[[str], int | None],
                   addr_sets: Mapping[str, ConstantSet] | None = None,
                   port_groups: Mapping[str, ConstantSet] | None = None
                   ) -> tuple[bytes | None, str | None]:
    """(packet-out, None) for ``microflow``, or (None, the error C replies)."""
    m, error = parse_microflow(microflow, symtab, lookup_port, addr_sets, port_groups)
    if error is not None or m is None:
        return None, error or "bad microflow"
    in_port = m.get("reg14")
    ofport = in_port[0] if in_port is not None else 0
    m = m.without("reg14")
    if not ofport:
        return None, "ingress port not found on hypervisor."
    return packet_out(flow_compose(m), _RESUBMIT_0, in_port=ofport), None
