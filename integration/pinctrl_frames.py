"""Raw frames for the pinctrl differential tests: build, dissect, compare.

Design note
-----------
The differential tests inject exact bytes (``netdev-dummy/receive IFACE HEX``)
rather than odp-flow text, because several services look past the headers an
odp flow can describe (SCTP chunks, ND options, TCP sequence numbers, payload
lengths for truncation). Builders here are small pure functions returning
``bytes`` with every checksum computed (userspace conntrack checks them).

:func:`dissect` turns a frame into an ordered list of ``(field, value)``
pairs (Ethernet, 802.1Q, ARP, IPv4, IPv6, TCP, UDP, SCTP, ICMPv4, ICMPv6 with
ND target/options; anything further as a hex tail) so that two frames are
compared byte for byte but a difference is reported field by field
(:func:`field_diff`). :func:`brief` gives the few fields the tests filter
on. Nothing here knows a topology.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

ETH_IP4, ETH_IP6, ETH_ARP, ETH_VLAN = 0x0800, 0x86DD, 0x0806, 0x8100
PROTO_ICMP, PROTO_TCP, PROTO_UDP, PROTO_ICMP6, PROTO_SCTP = 1, 6, 17, 58, 132
TCP_FIN, TCP_SYN, TCP_RST, TCP_ACK = 0x01, 0x02, 0x04, 0x10


def mac_bytes(mac: str) -> bytes:
    return bytes(int(part, 16) for part in mac.split(":"))


def mac_text(data: bytes) -> str:
    return ":".join(f"{b:02x}" for b in data)


def ip4_bytes(ip: str) -> bytes:
    return ipaddress.IPv4Address(ip).packed


def ip6_bytes(ip: str) -> bytes:
    return ipaddress.IPv6Address(ip).packed


def inet_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ---------------------------------------------------------------- builders


def ethernet(dst: str, src: str, eth_type: int, payload: bytes, vlan: int | None = None) -> bytes:
    head = mac_bytes(dst) + mac_bytes(src)
    if vlan is not None:
        head += struct.pack("!HH", ETH_VLAN, vlan)
    return head + struct.pack("!H", eth_type) + payload


def arp(op: int, sha: str, spa: str, tha: str, tpa: str) -> bytes:
    return (struct.pack("!HHBBH", 1, ETH_IP4, 6, 4, op) + mac_bytes(sha) + ip4_bytes(spa)
            + mac_bytes(tha) + ip4_bytes(tpa))


def ipv4(src: str, dst: str, proto: int, payload: bytes, *, ttl: int = 64, ident: int = 0,
         df: bool = False, tos: int = 0) -> bytes:
    header = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(payload), ident,
                                   0x4000 if df else 0, ttl, proto, 0, ip4_bytes(src),
                                   ip4_bytes(dst)))
    struct.pack_into("!H", header, 10, inet_checksum(bytes(header)))
    return bytes(header) + payload


def ipv6(src: str, dst: str, next_header: int, payload: bytes, *, hop_limit: int = 64) -> bytes:
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), next_header, hop_limit,
                       ip6_bytes(src), ip6_bytes(dst)) + payload


def _pseudo(src: str, dst: str, proto: int, length: int) -> bytes:
    if ":" in src:
        return ip6_bytes(src) + ip6_bytes(dst) + struct.pack("!IxxxB", length, proto)
    return ip4_bytes(src) + ip4_bytes(dst) + struct.pack("!xBH", proto, length)


def _with_l4_checksum(src: str, dst: str, proto: int, segment: bytes, offset: int) -> bytes:
    data = bytearray(segment)
    struct.pack_into("!H", data, offset, 0)
    csum = inet_checksum(_pseudo(src, dst, proto, len(data)) + bytes(data))
    if proto == PROTO_UDP and csum == 0:
        csum = 0xFFFF
    struct.pack_into("!H", data, offset, csum)
    return bytes(data)


def tcp(src: str, dst: str, sport: int, dport: int, *, seq: int = 1000, ack: int = 0,
        flags: int = TCP_SYN, window: int = 8192, payload: bytes = b"") -> bytes:
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, window, 0, 0)
    return _with_l4_checksum(src, dst, PROTO_TCP, seg + payload, 16)


def udp(src: str, dst: str, sport: int, dport: int, payload: bytes = b"") -> bytes:
    seg = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    return _with_l4_checksum(src, dst, PROTO_UDP, seg, 6)


def sctp_init(sport: int, dport: int, initiate_tag: int) -> bytes:
    """An SCTP packet with vtag 0 carrying one INIT chunk (20 bytes)."""
    chunk = struct.pack("!BBHIIHHI", 1, 0, 20, initiate_tag, 65535, 10, 10, 1)
    return sctp(sport, dport, 0, chunk)


def sctp(sport: int, dport: int, vtag: int, chunks: bytes) -> bytes:
    data = bytearray(struct.pack("!HHII", sport, dport, vtag, 0) + chunks)
    struct.pack_into("<I", data, 8, crc32c(bytes(data)))
    return bytes(data)


def icmp4(icmp_type: int, code: int, rest: bytes = b"\0\0\0\0", payload: bytes = b"") -> bytes:
    data = bytearray(struct.pack("!BBH", icmp_type, code, 0) + rest + payload)
    struct.pack_into("!H", data, 2, inet_checksum(bytes(data)))
    return bytes(data)


def icmp6(src: str, dst: str, icmp_type: int, code: int, body: bytes) -> bytes:
    return _with_l4_checksum(src, dst, PROTO_ICMP6,
                             struct.pack("!BBH", icmp_type, code, 0) + body, 2)


def echo_body(ident: int = 0x1234, seq: int = 1, payload: bytes = b"pinctrl!") -> bytes:
    return struct.pack("!HH", ident, seq) + payload


def solicited_node(ip6: str) -> str:
    packed = ip6_bytes(ip6)
    return str(ipaddress.IPv6Address(bytes.fromhex("ff02" + "00" * 8 + "0001ff") + packed[13:]))


def solicited_mac(ip6: str) -> str:
    packed = ip6_bytes(solicited_node(ip6))
    return mac_text(b"\x33\x33" + packed[12:])


def nd_ns_frame(src_mac: str, src_ip6: str, target: str, *, dst_ip6: str | None = None,
                dst_mac: str | None = None) -> bytes:
    """A neighbour solicitation for ``target`` (to its solicited-node group by
    default) with a source link-layer address option."""
    dst6 = dst_ip6 or solicited_node(target)
    body = b"\0\0\0\0" + ip6_bytes(target) + b"\x01\x01" + mac_bytes(src_mac)
    return ethernet(dst_mac or solicited_mac(target), src_mac, ETH_IP6,
                    ipv6(src_ip6, dst6, PROTO_ICMP6, icmp6(src_ip6, dst6, 135, 0, body),
                         hop_limit=255))


def nd_na_frame(src_mac: str, dst_mac: str, src_ip6: str, dst_ip6: str, target: str,
                *, flags: int = 0x60000000) -> bytes:
    """A neighbour advertisement for ``target`` with a target link-layer option."""
    body = struct.pack("!I", flags) + ip6_bytes(target) + b"\x02\x01" + mac_bytes(src_mac)
    return ethernet(dst_mac, src_mac, ETH_IP6,
                    ipv6(src_ip6, dst_ip6, PROTO_ICMP6, icmp6(src_ip6, dst_ip6, 136, 0, body),
                         hop_limit=255))


def arp_frame(op: int, src_mac: str, dst_mac: str, sha: str, spa: str, tha: str,
              tpa: str) -> bytes:
    return ethernet(dst_mac, src_mac, ETH_ARP, arp(op, sha, spa, tha, tpa))


def ip_frame(src_mac: str, dst_mac: str, src: str, dst: str, proto: int, l4: bytes, *,
             ttl: int = 64, df: bool = False, ident: int = 0x4242) -> bytes:
    """An IPv4 or IPv6 (by the address form) frame around an L4 segment."""
    if ":" in src:
        return ethernet(dst_mac, src_mac, ETH_IP6, ipv6(src, dst, proto, l4, hop_limit=ttl))
    return ethernet(dst_mac, src_mac, ETH_IP4,
                    ipv4(src, dst, proto, l4, ttl=ttl, df=df, ident=ident))


# ---------------------------------------------------------------- dissecting


@dataclass(frozen=True)
class Brief:
    """The fields the tests filter frames on; None where the frame has none."""

    eth_src: str
    eth_dst: str
    eth_type: int
    arp_op: int | None = None
    arp_spa: str | None = None
    arp_tpa: str | None = None
    ip_src: str | None = None
    ip_dst: str | None = None
    proto: int | None = None
    sport: int | None = None
    dport: int | None = None
    icmp_type: int | None = None
    nd_target: str | None = None


def dissect(frame: bytes) -> list[tuple[str, str]]:
    """Every header field of ``frame`` in wire order, plus a hex tail."""
    out: list[tuple[str, str]] = []
    if len(frame) < 14:
        return [("short-frame", frame.hex())]
    out += [("eth.dst", mac_text(frame[0:6])), ("eth.src", mac_text(frame[6:12]))]
    (eth_type,) = struct.unpack_from("!H", frame, 12)
    off = 14
    if eth_type == ETH_VLAN and len(frame) >= 18:
        (tci,) = struct.unpack_from("!H", frame, 14)
        out.append(("vlan.tci", f"{tci:#06x}"))
        (eth_type,) = struct.unpack_from("!H", frame, 16)
        off = 18
    out.append(("eth.type", f"{eth_type:#06x}"))
    data = frame[off:]
    if eth_type in (ETH_ARP, 0x8035) and len(data) >= 28:
        htype, ptype, hlen, plen, op = struct.unpack_from("!HHBBH", data)
        out += [("arp.htype", str(htype)), ("arp.ptype", f"{ptype:#06x}"),
                ("arp.hlen", str(hlen)), ("arp.plen", str(plen)), ("arp.op", str(op)),
                ("arp.sha", mac_text(data[8:14])), ("arp.spa", _ip4(data[14:18])),
                ("arp.tha", mac_text(data[18:24])), ("arp.tpa", _ip4(data[24:28]))]
        rest = data[28:]
    elif eth_type == ETH_IP4 and len(data) >= 20:
        ihl = (data[0] & 0x0F) * 4
        (ver_ihl, tos, total, ident, frag, ttl, proto, csum) = struct.unpack_from(
            "!BBHHHBBH", data)
        out += [("ip4.ver_ihl", f"{ver_ihl:#04x}"), ("ip4.tos", str(tos)),
                ("ip4.len", str(total)), ("ip4.id", f"{ident:#06x}"),
                ("ip4.frag", f"{frag:#06x}"), ("ip4.ttl", str(ttl)), ("ip4.proto", str(proto)),
                ("ip4.csum", f"{csum:#06x}"), ("ip4.src", _ip4(data[12:16])),
                ("ip4.dst", _ip4(data[16:20]))]
        if ihl > 20:
            out.append(("ip4.options", data[20:ihl].hex()))
        rest = _l4(out, proto, data[ihl:], "")
    elif eth_type == ETH_IP6 and len(data) >= 40:
        vtcfl, plen, nh, hlim = struct.unpack_from("!IHBB", data)
        out += [("ip6.vtcfl", f"{vtcfl:#010x}"), ("ip6.plen", str(plen)), ("ip6.nh", str(nh)),
                ("ip6.hlim", str(hlim)), ("ip6.src", _ip6(data[8:24])),
                ("ip6.dst", _ip6(data[24:40]))]
        rest = _l4(out, nh, data[40:], "6")
    else:
        rest = data
    if rest:
        out.append(("tail", rest.hex()))
    return out


def _ip4(data: bytes) -> str:
    return str(ipaddress.IPv4Address(data))


def _ip6(data: bytes) -> str:
    return str(ipaddress.IPv6Address(data))


def _l4(out: list[tuple[str, str]], proto: int, data: bytes, v6: str) -> bytes:
    if proto == PROTO_TCP and len(data) >= 20:
        sport, dport, seq, ack, off, flags, win, csum, urg = struct.unpack_from(
            "!HHIIBBHHH", data)
        out += [("tcp.sport", str(sport)), ("tcp.dport", str(dport)), ("tcp.seq", str(seq)),
                ("tcp.ack", str(ack)), ("tcp.off", str(off >> 4)), ("tcp.flags", f"{flags:#04x}"),
                ("tcp.win", str(win)), ("tcp.csum", f"{csum:#06x}"), ("tcp.urg", str(urg))]
        return data[(off >> 4) * 4:] if (off >> 4) >= 5 else data[20:]
    if proto == PROTO_UDP and len(data) >= 8:
        sport, dport, length, csum = struct.unpack_from("!HHHH", data)
        out += [("udp.sport", str(sport)), ("udp.dport", str(dport)), ("udp.len", str(length)),
                ("udp.csum", f"{csum:#06x}")]
        return data[8:]
    if proto == PROTO_SCTP and len(data) >= 12:
        sport, dport, vtag = struct.unpack_from("!HHI", data)
        (crc,) = struct.unpack_from("<I", data, 8)
        out += [("sctp.sport", str(sport)), ("sctp.dport", str(dport)),
                ("sctp.vtag", f"{vtag:#010x}"), ("sctp.crc", f"{crc:#010x}")]
        chunks = data[12:]
        n = 0
        while len(chunks) >= 4:
            ctype, cflags, clen = struct.unpack_from("!BBH", chunks)
            out += [(f"sctp.chunk{n}.type", str(ctype)), (f"sctp.chunk{n}.flags", str(cflags)),
                    (f"sctp.chunk{n}.len", str(clen))]
            step = max(4, (clen + 3) & ~3)
            if clen > 4:
                out.append((f"sctp.chunk{n}.value", chunks[4:clen].hex()))
            chunks = chunks[step:]
            n += 1
        return chunks
    if proto in (PROTO_ICMP, PROTO_ICMP6) and len(data) >= 4:
        name = f"icmp{v6 or '4'}"
        icmp_type, code, csum = struct.unpack_from("!BBH", data)
        out += [(f"{name}.type", str(icmp_type)), (f"{name}.code", str(code)),
                (f"{name}.csum", f"{csum:#06x}")]
        if len(data) >= 8:
            out.append((f"{name}.rest", data[4:8].hex()))
        body = data[8:]
        if v6 and icmp_type in (135, 136) and len(body) >= 16:
            out.append(("nd.target", _ip6(body[:16])))
            opts = body[16:]
            while len(opts) >= 8 and opts[1]:
                out.append((f"nd.opt{opts[0]}", opts[2:opts[1] * 8].hex()))
                opts = opts[opts[1] * 8:]
            return opts
        if body:
            out.append((f"{name}.body", body.hex()))
        return b""
    return data


def brief(frame: bytes) -> Brief:
    """The filtering fields of a frame (a cheap subset of :func:`dissect`)."""
    fields = dict(dissect(frame))
    def num(key: str) -> int | None:
        return int(fields[key], 0) if key in fields else None
    ip_src = fields.get("ip4.src", fields.get("ip6.src"))
    ip_dst = fields.get("ip4.dst", fields.get("ip6.dst"))
    proto = num("ip4.proto") if "ip4.proto" in fields else num("ip6.nh")
    sport = dport = None
    for l4 in ("tcp", "udp", "sctp"):
        if f"{l4}.sport" in fields:
            sport, dport = num(f"{l4}.sport"), num(f"{l4}.dport")
    icmp_type = num("icmp4.type") if "icmp4.type" in fields else num("icmp6.type")
    return Brief(eth_src=fields["eth.src"], eth_dst=fields["eth.dst"],
                 eth_type=int(fields["eth.type"], 0), arp_op=num("arp.op"),
                 arp_spa=fields.get("arp.spa"), arp_tpa=fields.get("arp.tpa"),
                 ip_src=ip_src, ip_dst=ip_dst, proto=proto, sport=sport, dport=dport,
                 icmp_type=icmp_type, nd_target=fields.get("nd.target"))


def field_diff(ours: bytes, theirs: bytes) -> list[str]:
    """Fields that differ between two frames, as ``name: ours=X C=Y`` lines."""
    a, b = dissect(ours), dissect(theirs)
    lines: list[str] = []
    for i in range(max(len(a), len(b))):
        fa = a[i] if i < len(a) else ("-", "(absent)")
        fb = b[i] if i < len(b) else ("-", "(absent)")
        if fa != fb:
            name = fa[0] if fa[0] == fb[0] else f"{fa[0]}|{fb[0]}"
            lines.append(f"{name}: ours={fa[1]} C={fb[1]}")
    return lines


def describe(frame: bytes) -> str:
    """One line: every field as name=value."""
    return " ".join(f"{k}={v}" for k, v in dissect(frame))
