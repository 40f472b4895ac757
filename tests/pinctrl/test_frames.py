"""Byte-exact tests of controller/pinctrl/frames.py builders and parser.

Expected frames are spelled out field by field in hex here, with checksums
from this file's own RFC 1071 / bitwise CRC32c code (independent of the
module's arithmetic), and the results are also decoded with os-ken to check
every header field.  The layouts follow pinctrl.c / OVS packets.c of OVN
23.03.1 (TOS 0, id 0, DF, TTL 255/63, no Ethernet padding, VLAN copy only on
ARP and ICMP).
"""

from __future__ import annotations

import ipaddress
import struct

import pytest
from os_ken.lib.packet import arp, ethernet, icmp, icmpv6, ipv4, ipv6, packet, sctp, tcp, vlan

from controller.pinctrl import frames as F
from controller.pinctrl.frames import FrameError

# ---------------------------------------------------------------- independent helpers


def ones_csum(data: bytes) -> int:
    """Textbook RFC 1071 checksum: word loop with end-around carry."""
    if len(data) % 2:
        data += b"\0"
    s = 0
    for i in range(0, len(data), 2):
        s += (data[i] << 8) | data[i + 1]
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def pseudo4(src: str, dst: str, proto: int, n: int) -> bytes:
    return ipaddress.IPv4Address(src).packed + ipaddress.IPv4Address(dst).packed + \
        struct.pack("!BBH", 0, proto, n)


def pseudo6(src: str, dst: str, nxt: int, n: int) -> bytes:
    return ipaddress.IPv6Address(src).packed + ipaddress.IPv6Address(dst).packed + \
        struct.pack("!IxxxB", n, nxt)


def crc32c_bitwise(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 * (crc & 1))
    return ~crc & 0xFFFFFFFF


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", "").replace(":", ""))


def mac(s: str) -> str:
    return s.replace(":", "")


def ip4(s: str) -> str:
    return ipaddress.IPv4Address(s).packed.hex()


def ip6(s: str) -> str:
    return ipaddress.IPv6Address(s).packed.hex()


def ip4_header(tot_len: int, ttl: int, proto: int, src: str, dst: str, tos: int = 0,
               ident: int = 0, frag: int = 0x4000, ck: int | None = None) -> bytes:
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, tos, tot_len, ident, frag, ttl, proto, 0,
                      ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
    c = ones_csum(hdr) if ck is None else ck
    return hdr[:10] + struct.pack("!H", c) + hdr[12:]


def ip6_header(plen: int, nxt: int, hlim: int, src: str, dst: str) -> bytes:
    return struct.pack("!IHBB", 0x60000000, plen, nxt, hlim) + \
        ipaddress.IPv6Address(src).packed + ipaddress.IPv6Address(dst).packed


MAC_A = "0a:00:00:00:00:01"
MAC_B = "0a:00:00:00:00:02"


def eth(dst: str, src: str, etype: int, tci: int | None = None) -> bytes:
    tag = b"" if tci is None else struct.pack("!HH", 0x8100, tci)
    return h(mac(dst)) + h(mac(src)) + tag + struct.pack("!H", etype)


def udp4_frame(src: str = "10.0.0.1", dst: str = "10.0.0.2", payload: bytes = b"hello",
               tci: int | None = None, ttl: int = 64, pad_to: int = 0) -> bytes:
    udp = struct.pack("!HHHH", 5000, 53, 8 + len(payload), 0) + payload
    f = eth(MAC_B, MAC_A, 0x0800, tci) + ip4_header(20 + len(udp), ttl, 17, src, dst,
                                                     frag=0) + udp
    return f + b"\0" * max(0, pad_to - len(f))


def tcp4_frame(seq: int = 1000, flags: int = 0x002, src: str = "10.0.0.1",
               dst: str = "10.0.0.2", tci: int | None = None, sport: int = 40000,
               dport: int = 80) -> bytes:
    seg = struct.pack("!HHIIHHHH", sport, dport, seq, 0, 5 << 12 | flags, 65535, 0, 0)
    return eth(MAC_B, MAC_A, 0x0800, tci) + ip4_header(40, 64, 6, src, dst) + seg


def udp6_frame(src: str = "2001:db8::1", dst: str = "2001:db8::2", payload: bytes = b"hi",
               ext: bytes = b"", first_nxt: int = 17) -> bytes:
    udp = struct.pack("!HHHH", 5000, 53, 8 + len(payload), 0) + payload
    body = ext + udp
    return eth(MAC_B, MAC_A, 0x86DD) + ip6_header(len(body), first_nxt, 64, src, dst) + body


def decode(frame: bytes) -> packet.Packet:
    return packet.Packet(frame)


# ---------------------------------------------------------------- checksum helpers


def test_module_checksums_agree_with_textbook() -> None:
    for data in (b"", b"\x01", b"\xff\xff", bytes(range(256)) * 3, b"\x45\x00\x00\x1c" * 5,
                 b"\x00\x00", b"\xff\xff\x00\x01\xfe"):
        assert F.csum(data) == ones_csum(data)
    assert F.crc32c(b"123456789") == (0xE3069283).to_bytes(4, "little")
    assert F.crc32c(bytes(range(40))) == crc32c_bitwise(bytes(range(40))).to_bytes(4, "little")


def test_recalc_csum16_is_rfc1624_eqn3() -> None:
    data = bytearray(bytes(range(1, 41)))
    old = ones_csum(bytes(data))
    old_word = (data[6] << 8) | data[7]
    data[6:8] = struct.pack("!H", 1500)
    assert F.recalc_csum16(old, old_word, 1500) == ones_csum(bytes(data))
    # ~(~0xffff + ~0 + 0) = ~0xffff: an unchanged word still turns 0xffff into 0
    assert F.recalc_csum16(0xFFFF, 0, 0) == 0
    assert F.recalc_csum16(0x1234, 0x1111, 0x1111) == 0x1234


# ---------------------------------------------------------------- ARP


def test_arp_request_bytes() -> None:
    f = udp4_frame("192.168.0.2", "8.8.8.8")
    out = F.arp_request(f)
    exp = h(mac(MAC_B) + mac(MAC_A) + "0806" + "0001 0800 06 04 0001" + mac(MAC_A)
            + ip4("192.168.0.2") + "000000000000" + ip4("8.8.8.8"))
    assert out == exp and len(out) == 42
    e = decode(out).get_protocol(ethernet.ethernet)
    assert (e.dst, e.src, e.ethertype) == (MAC_B, MAC_A, 0x0806)
    a = decode(out).get_protocol(arp.arp)
    assert (a.opcode, a.src_mac, a.src_ip, a.dst_mac, a.dst_ip) == (
        1, MAC_A, "192.168.0.2", "00:00:00:00:00:00", "8.8.8.8")


def test_arp_request_copies_vlan_tag_clearing_cfi() -> None:
    f = udp4_frame(tci=0x3064)        # PCP 1, CFI/DEI 1, VID 100
    out = F.arp_request(f)
    assert out[12:16] == h("8100 2064") and out[16:18] == h("0806") and len(out) == 46
    assert F.arp_request(udp4_frame(tci=0x0064))[12:16] == h("8100 0064")
    v = decode(out).get_protocol(vlan.vlan)
    assert (v.pcp, v.cfi, v.vid) == (1, 0, 100)


def test_arp_request_on_non_ip_is_dropped() -> None:
    with pytest.raises(FrameError):
        F.arp_request(eth(MAC_B, MAC_A, 0x86DD) + bytes(40))
    with pytest.raises(FrameError):
        F.arp_request(b"\0" * 13)


def test_arp_request_on_bad_ipv4_header_uses_zero_addresses() -> None:
    # tot_len beyond the frame: OVS flow_extract leaves nw_src/nw_dst zero
    f = bytearray(udp4_frame())
    f[16:18] = b"\x05\x00"
    out = F.arp_request(bytes(f))
    assert out[28:32] == bytes(4) and out[38:42] == bytes(4)


# ---------------------------------------------------------------- ND


def test_nd_ns_bytes() -> None:
    f = udp6_frame("2001:db8::1", "2001:db8::a:bc:de01")
    out = F.nd_ns(f)
    sn = "ff02::1:ffbc:de01"
    lla = "fe80::800:ff:fe00:1"      # EUI-64 of 0a:00:00:00:00:01 (U/L bit flipped)
    body = h("87 00 0000 00000000" + ip6("2001:db8::a:bc:de01") + "01 01" + mac(MAC_A))
    ck = ones_csum(pseudo6(lla, sn, 58, len(body)) + body)
    body = body[:2] + struct.pack("!H", ck) + body[4:]
    exp = h("3333ffbcde01" + mac(MAC_A) + "86dd") + ip6_header(32, 58, 255, lla, sn) + body
    assert out == exp and len(out) == 86
    p = decode(out)
    i6 = p.get_protocol(ipv6.ipv6)
    assert (i6.src, i6.dst, i6.hop_limit, i6.traffic_class, i6.flow_label) == (lla, sn, 255, 0, 0)
    ic = p.get_protocol(icmpv6.icmpv6)
    assert ic.type_ == 135 and ic.data.dst == "2001:db8::a:bc:de01"
    assert ic.data.option.hw_src == MAC_A


def test_nd_ns_never_copies_vlan_and_needs_ipv6() -> None:
    f = eth(MAC_B, MAC_A, 0x86DD, tci=0x0064) + udp6_frame()[14:]
    out = F.nd_ns(f)
    assert out[12:14] == h("86dd")
    with pytest.raises(FrameError):
        F.nd_ns(udp4_frame())


def ns_frame(target: str, src: str = "2001:db8::5", dst: str | None = None,
             opts: bytes | None = None, icmp_type: int = 135, code: int = 0) -> bytes:
    dst = dst or "ff02::1:ff00:1"
    opts = h("0101" + mac(MAC_A)) if opts is None else opts
    body = bytes((icmp_type, code)) + b"\0\0" + bytes(4) + \
        ipaddress.IPv6Address(target).packed + opts
    ck = ones_csum(pseudo6(src, dst, 58, len(body)) + body)
    body = body[:2] + struct.pack("!H", ck) + body[4:]
    return eth("33:33:ff:00:00:01", MAC_A, 0x86DD) + ip6_header(len(body), 58, 255, src, dst) \
        + body


@pytest.mark.parametrize("router, flags", [(False, "60000000"), (True, "e0000000")])
def test_nd_na_bytes(router: bool, flags: str) -> None:
    f = ns_frame("2001:db8::1")
    out = F.nd_na(f, router)
    body = h("88 00 0000" + flags + ip6("2001:db8::1") + "02 01" + "3333ff000001")
    ck = ones_csum(pseudo6("2001:db8::1", "2001:db8::5", 58, len(body)) + body)
    body = body[:2] + struct.pack("!H", ck) + body[4:]
    exp = h(mac(MAC_A) + "3333ff000001" + "86dd") + \
        ip6_header(32, 58, 255, "2001:db8::1", "2001:db8::5") + body
    assert out == exp
    ic = decode(out).get_protocol(icmpv6.icmpv6)
    assert ic.type_ == 136 and ic.data.dst == "2001:db8::1"
    assert ic.data.res == (7 if router else 3)


def test_nd_na_to_unspecified_source_and_from_na() -> None:
    out = F.nd_na(ns_frame("2001:db8::1", src="::"), False)
    assert out[38:54] == bytes(16)
    na = ns_frame("2001:db8::9", icmp_type=136, opts=b"")
    assert F.nd_na(na, False)[22:38] == ipaddress.IPv6Address("2001:db8::9").packed


def test_nd_na_rejects_non_nd_and_voids_duplicate_options() -> None:
    with pytest.raises(FrameError):
        F.nd_na(ns_frame("2001:db8::1", code=1), False)
    with pytest.raises(FrameError):
        F.nd_na(udp6_frame(), False)
    with pytest.raises(FrameError):
        F.nd_na(udp4_frame(), True)
    dup = h("0101" + mac(MAC_A) + "0101" + mac(MAC_B))
    out = F.nd_na(ns_frame("2001:db8::1", opts=dup), False)
    # OVS drops the target of an NS with two SLL options: the NA is for ::
    assert out[22:38] == bytes(16) and out[62:78] == bytes(16)


# ---------------------------------------------------------------- ICMPv4


def icmp4_expect(orig: bytes, l3: int, code: int, eth_src: str, eth_dst: str, src: str,
                 dst: str, quote_len: int | None = None, tci: int | None = None) -> bytes:
    tot = (orig[l3 + 2] << 8) | orig[l3 + 3]
    quote = orig[l3:l3 + min(tot, 534 if quote_len is None else quote_len)]
    body = bytes((3, code)) + b"\0\0" + bytes(4) + quote
    ck = ones_csum(body)
    body = body[:2] + struct.pack("!H", ck) + body[4:]
    return eth(eth_dst, eth_src, 0x0800, tci) + ip4_header(20 + len(body), 255, 1, src, dst) \
        + body


@pytest.mark.parametrize("set_code, code", [(False, 1), (True, 3)])
def test_icmp4_error_udp(set_code: bool, code: int) -> None:
    f = udp4_frame()
    out = F.icmp_error(f, set_code)
    assert out == icmp4_expect(f, 14, code, MAC_A, MAC_B, "10.0.0.1", "10.0.0.2")
    p = decode(out)
    i4 = p.get_protocol(ipv4.ipv4)
    assert (i4.tos, i4.identification, i4.flags, i4.ttl, i4.proto, i4.total_length) == (
        0, 0, 2, 255, 1, 20 + 8 + len(f) - 14)
    assert ones_csum(out[14:34]) == 0 and ones_csum(out[34:]) == 0
    assert p.get_protocol(icmp.icmp).type == 3


def test_icmp4_error_code_only_for_udp_and_no_swap() -> None:
    f = tcp4_frame()
    out = F.icmp4_error(f, True)
    assert out[34:36] == h("0301")
    assert out[0:12] == h(mac(MAC_B) + mac(MAC_A))     # eth as in the packet
    assert out[26:34] == h(ip4("10.0.0.1") + ip4("10.0.0.2"))


def test_icmp4_error_truncates_quote_to_534() -> None:
    f = udp4_frame(payload=bytes(range(256)) * 4)
    out = F.icmp_error(f, False)
    assert len(out) == 576 and out[16:18] == struct.pack("!H", 562)
    assert out == icmp4_expect(f, 14, 1, MAC_A, MAC_B, "10.0.0.1", "10.0.0.2")
    assert out[42:] == f[14:14 + 534]


def test_icmp4_error_excludes_ethernet_padding_and_copies_vlan() -> None:
    f = udp4_frame(payload=b"", pad_to=60)      # 42 bytes of frame + 18 padding
    out = F.icmp_error(f, False)
    assert out == icmp4_expect(f, 14, 1, MAC_A, MAC_B, "10.0.0.1", "10.0.0.2")
    assert len(out) == 14 + 20 + 8 + 28
    tagged = udp4_frame(tci=0x0005)
    out = F.icmp_error(tagged, True)
    assert out == icmp4_expect(tagged, 18, 3, MAC_A, MAC_B, "10.0.0.1", "10.0.0.2", tci=5)


def test_icmp4_error_drops() -> None:
    f = bytearray(udp4_frame())
    f[16:18] = b"\x00\x13"              # total length 19 < 20
    with pytest.raises(FrameError):
        F.icmp_error(bytes(f), False)
    with pytest.raises(FrameError):
        F.icmp_error(eth(MAC_B, MAC_A, 0x0806) + bytes(28), False)
    with pytest.raises(FrameError):
        F.icmp6_error(udp4_frame(), False)
    with pytest.raises(FrameError):         # C would copy past the frame
        F.icmp_error(udp4_frame()[:30], False)


# ---------------------------------------------------------------- ICMPv6


def icmp6_expect(orig: bytes, code: int, src: str, dst: str, eth_src: str = MAC_A,
                 eth_dst: str = MAC_B) -> bytes:
    plen = (orig[18] << 8) | orig[19]
    quote = orig[14:14 + min(40 + plen, 1218)]
    body = bytes((1, code)) + b"\0\0" + bytes(4) + quote
    ck = ones_csum(pseudo6(src, dst, 58, len(body)) + body)
    body = body[:2] + struct.pack("!H", ck) + body[4:]
    return eth(eth_dst, eth_src, 0x86DD) + ip6_header(len(body), 58, 255, src, dst) + body


@pytest.mark.parametrize("set_code, code", [(False, 1), (True, 4)])
def test_icmp6_error_udp(set_code: bool, code: int) -> None:
    f = udp6_frame()
    out = F.icmp_error(f, set_code)
    assert out == icmp6_expect(f, code, "2001:db8::1", "2001:db8::2")
    i6 = decode(out).get_protocol(ipv6.ipv6)
    assert (i6.hop_limit, i6.nxt, i6.traffic_class, i6.flow_label) == (255, 58, 0, 0)


def test_icmp6_error_truncates_to_1218_and_reads_first_next_header() -> None:
    f = udp6_frame(payload=bytes(range(256)) * 8)
    out = F.icmp6_error(f, True)
    assert len(out) == 1280 and out == icmp6_expect(f, 4, "2001:db8::1", "2001:db8::2")
    hbh = bytes((17, 0)) + bytes(6)      # hop-by-hop header, then UDP
    f = udp6_frame(ext=hbh, first_nxt=0)
    assert F.parse(f).nw_proto == 17
    assert F.icmp6_error(f, True)[54:56] == h("0101")   # C looks at ip6_nxt only


def test_icmp6_error_copies_vlan_tag() -> None:
    f = eth(MAC_B, MAC_A, 0x86DD, tci=0x1FFF) + udp6_frame()[14:]
    out = F.icmp_error(f, False)
    assert out[12:16] == h("8100 0fff")              # CFI cleared, VID 4095 kept
    untagged = out[:12] + out[16:]
    assert untagged == icmp6_expect(udp6_frame(), 1, "2001:db8::1", "2001:db8::2")


def test_ipv4_options_are_quoted_and_skipped() -> None:
    opts = bytes((1, 1, 1, 0))                        # NOP NOP NOP EOL
    seg = struct.pack("!HHIIHHHH", 40000, 80, 9, 0, 0x5002, 1, 0, 0)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x46, 0, 44, 0, 0, 64, 6, 0,
                      ipaddress.IPv4Address("10.0.0.1").packed,
                      ipaddress.IPv4Address("10.0.0.2").packed) + opts
    hdr = hdr[:10] + struct.pack("!H", ones_csum(hdr)) + hdr[12:]
    f = eth(MAC_B, MAC_A, 0x0800) + hdr + seg
    p = F.parse(f)
    assert (p.l4, p.tp_src, p.tp_dst) == (38, 40000, 80)
    rst = F.tcp_reset(f)
    assert rst[14] == 0x45 and rst[42:46] == struct.pack("!I", 10) and len(rst) == 54
    err = F.icmp_error(f, False)
    assert err[42:] == f[14:] and err[14] == 0x45


# ---------------------------------------------------------------- TCP reset


def test_tcp_reset_v4_bytes() -> None:
    f = tcp4_frame(seq=0x01020304, tci=0x0064)
    out = F.tcp_reset(f)
    seg = struct.pack("!HHIIHHHH", 80, 40000, 0, 0x01020305, 0x5014, 0, 0, 0)
    ck = ones_csum(pseudo4("10.0.0.1", "10.0.0.2", 6, 20) + seg)
    seg = seg[:16] + struct.pack("!H", ck) + seg[18:]
    exp = eth(MAC_B, MAC_A, 0x0800) + ip4_header(40, 63, 6, "10.0.0.1", "10.0.0.2") + seg
    assert out == exp and len(out) == 54          # no VLAN copy, no padding
    t = decode(out).get_protocol(tcp.tcp)
    assert (t.src_port, t.dst_port, t.seq, t.ack, t.bits, t.window_size, t.offset) == (
        80, 40000, 0, 0x01020305, 0x14, 0, 5)


def test_tcp_reset_loopback_and_seq_wrap() -> None:
    out = F.tcp_reset(tcp4_frame(seq=0xFFFFFFFF), loopback=True)
    assert out[0:12] == h(mac(MAC_A) + mac(MAC_B))
    assert out[26:34] == h(ip4("10.0.0.2") + ip4("10.0.0.1"))
    assert out[42:46] == bytes(4)                 # ack wraps to 0
    assert ones_csum(pseudo4("10.0.0.2", "10.0.0.1", 6, 20) + out[34:]) == 0


def test_tcp_reset_v6() -> None:
    seg_in = struct.pack("!HHIIHHHH", 1234, 22, 7, 0, 0x5002, 100, 0, 0)
    f = eth(MAC_B, MAC_A, 0x86DD) + ip6_header(20, 6, 64, "fd00::1", "fd00::2") + seg_in
    out = F.tcp_reset(f)
    seg = struct.pack("!HHIIHHHH", 22, 1234, 0, 8, 0x5014, 0, 0, 0)
    ck = ones_csum(pseudo6("fd00::1", "fd00::2", 6, 20) + seg)
    seg = seg[:16] + struct.pack("!H", ck) + seg[18:]
    assert out == eth(MAC_B, MAC_A, 0x86DD) + ip6_header(20, 6, 63, "fd00::1", "fd00::2") + seg


def test_tcp_reset_drops() -> None:
    with pytest.raises(FrameError):
        F.tcp_reset(udp4_frame())
    with pytest.raises(FrameError):
        F.tcp_reset(tcp4_frame()[:36])      # no sequence number to read


# ---------------------------------------------------------------- SCTP abort


def sctp_frame(vtag: int, chunk: bytes, v6: bool = False) -> bytes:
    common = struct.pack("!HHII", 5000, 38412, vtag, 0) + chunk
    common = common[:8] + crc32c_bitwise(common).to_bytes(4, "little") + common[12:]
    if v6:
        return eth(MAC_B, MAC_A, 0x86DD) + ip6_header(len(common), 132, 64, "fd00::1",
                                                       "fd00::2") + common
    return eth(MAC_B, MAC_A, 0x0800) + ip4_header(20 + len(common), 64, 132, "10.0.0.1",
                                                   "10.0.0.2") + common


def init_chunk(tag: int) -> bytes:
    return struct.pack("!BBHIIHHI", 1, 0, 20, tag, 65535, 10, 10, 1)


def sctp_expect(vtag: int, flags: int, v6: bool = False, loopback: bool = False) -> bytes:
    s = struct.pack("!HHII", 38412, 5000, vtag, 0) + bytes((6, flags, 0, 4))
    s = s[:8] + crc32c_bitwise(s).to_bytes(4, "little") + s[12:]
    e_src, e_dst = (MAC_B, MAC_A) if loopback else (MAC_A, MAC_B)
    if v6:
        a, b = ("fd00::2", "fd00::1") if loopback else ("fd00::1", "fd00::2")
        return eth(e_dst, e_src, 0x86DD) + ip6_header(16, 132, 63, a, b) + s
    a, b = ("10.0.0.2", "10.0.0.1") if loopback else ("10.0.0.1", "10.0.0.2")
    return eth(e_dst, e_src, 0x0800) + ip4_header(36, 63, 132, a, b) + s


def test_sctp_abort_init_takes_initiate_tag() -> None:
    out = F.sctp_abort(sctp_frame(0, init_chunk(0xCAFEBABE)))
    assert out == sctp_expect(0xCAFEBABE, 0) and len(out) == 50
    s = decode(out).get_protocol(sctp.sctp)
    assert (s.src_port, s.dst_port, s.vtag) == (38412, 5000, 0xCAFEBABE)


def test_sctp_abort_reflects_vtag_with_t_bit() -> None:
    data = struct.pack("!BBHIHHI", 0, 3, 16, 1, 0, 0, 0)
    assert F.sctp_abort(sctp_frame(0x11223344, data)) == sctp_expect(0x11223344, 1)
    assert F.sctp_abort(sctp_frame(0x55, init_chunk(9))) == sctp_expect(0x55, 1)
    assert F.sctp_abort(sctp_frame(7, data, v6=True), loopback=True) == \
        sctp_expect(7, 1, v6=True, loopback=True)


def test_sctp_abort_drops() -> None:
    abort = bytes((6, 0, 0, 4))
    with pytest.raises(FrameError):
        F.sctp_abort(sctp_frame(1, abort))
    with pytest.raises(FrameError):          # INIT shorter than 16 bytes of parameters
        F.sctp_abort(sctp_frame(0, init_chunk(1)[:12]))
    with pytest.raises(FrameError):
        F.sctp_abort(tcp4_frame())
    with pytest.raises(FrameError):          # common header incomplete
        F.sctp_abort(sctp_frame(1, b"")[:-4])


# ---------------------------------------------------------------- reject


def test_reject_tcp_udp_icmp_swap_addresses() -> None:
    out = F.reject(tcp4_frame(seq=5))
    assert out == F.tcp_reset(tcp4_frame(seq=5), loopback=True)
    assert out[0:12] == h(mac(MAC_A) + mac(MAC_B))
    u = udp4_frame()
    assert F.reject(u) == icmp4_expect(u, 14, 3, MAC_B, MAC_A, "10.0.0.2", "10.0.0.1")
    u6 = udp6_frame()
    assert F.reject(u6) == icmp6_expect(u6, 4, "2001:db8::2", "2001:db8::1", MAC_B, MAC_A)
    assert F.reject(sctp_frame(3, struct.pack("!BBHIHHI", 0, 3, 16, 1, 0, 0, 0))) == \
        sctp_expect(3, 1, loopback=True)


def test_reject_ip_without_l4_payload_answers_host_unreachable() -> None:
    # An IPv4 "ICMP" packet of 20 bytes with no ICMP header is still answered.
    f = eth(MAC_B, MAC_A, 0x0800) + ip4_header(20, 255, 1, "10.0.0.1", "10.0.0.2", frag=0x4000)
    assert F.reject(f) == icmp4_expect(f, 14, 1, MAC_B, MAC_A, "10.0.0.2", "10.0.0.1")


def test_reject_ignores_errors_and_resets() -> None:
    assert F.reject(tcp4_frame(flags=0x004)) is None
    assert F.reject(tcp4_frame(flags=0x014)) is None
    unreach = bytes((3, 3, 0, 0, 0, 0, 0, 0))
    f4 = eth(MAC_B, MAC_A, 0x0800) + ip4_header(28, 64, 1, "10.0.0.1", "10.0.0.2") + unreach
    assert F.reject(f4) is None
    echo = bytes((8, 0, 0, 0, 0, 1, 0, 1))
    f4e = eth(MAC_B, MAC_A, 0x0800) + ip4_header(28, 64, 1, "10.0.0.1", "10.0.0.2") + echo
    out = F.reject(f4e)
    assert out is not None and out[34:36] == h("0301")
    f6 = eth(MAC_B, MAC_A, 0x86DD) + ip6_header(8, 58, 64, "fd00::1", "fd00::2") + \
        bytes((1, 4, 0, 0, 0, 0, 0, 0))
    assert F.reject(f6) is None
    with pytest.raises(FrameError):
        F.reject(eth(MAC_B, MAC_A, 0x0806) + bytes(28))


# ---------------------------------------------------------------- frag MTU


def test_set_icmp4_frag_mtu() -> None:
    err = F.icmp_error(udp4_frame(payload=b"x" * 1400), False)
    out = F.set_icmp4_frag_mtu(err, 1400)
    assert out[40:42] == struct.pack("!H", 1400)
    assert out[:36] == err[:36] and out[38:40] == err[38:40] and out[42:] == err[42:]
    assert ones_csum(out[34:]) == 0 and ones_csum(out[14:34]) == 0
    # the IP header checksum is recomputed, even when it was wrong
    bad = bytearray(err)
    bad[24:26] = b"\xde\xad"
    assert F.set_icmp4_frag_mtu(bytes(bad), 1400) == out


def test_set_icmp6_frag_mtu_covers_to_end_of_frame() -> None:
    err = F.icmp6_error(udp6_frame(payload=b"y" * 100), False)
    out = F.set_icmp6_frag_mtu(err, 1280)
    assert out[58:62] == struct.pack("!I", 1280)
    src, dst = "2001:db8::1", "2001:db8::2"
    assert ones_csum(pseudo6(src, dst, 58, len(out) - 54) + out[54:]) == 0
    padded = err + b"\0\x01"
    got = F.set_icmp6_frag_mtu(padded, 1280)
    plen = len(err) - 54
    assert ones_csum(pseudo6(src, dst, 58, plen) + got[54:]) == 0   # trailer included


def test_set_frag_mtu_needs_icmp() -> None:
    with pytest.raises(FrameError):
        F.set_icmp4_frag_mtu(udp4_frame(), 1400)
    with pytest.raises(FrameError):
        F.set_icmp6_frag_mtu(udp4_frame(), 1400)
    with pytest.raises(FrameError):
        F.set_icmp4_frag_mtu(F.icmp6_error(udp6_frame(), False), 1400)


# ---------------------------------------------------------------- parse


def test_parse_fields_and_offsets() -> None:
    p = F.parse(tcp4_frame(flags=0x012, tci=0x2005))
    assert (p.vlan_tci, p.dl_type, p.l3, p.l4, p.nw_proto, p.tp_src, p.tp_dst,
            p.tcp_flags, p.nw_ttl) == (0x3005, 0x0800, 18, 38, 6, 40000, 80, 0x012, 64)
    assert p.nw_src == ipaddress.IPv4Address("10.0.0.1").packed
    p = F.parse(udp4_frame(pad_to=60))
    assert p.l3_end == 14 + 20 + 13
    qinq = h(mac(MAC_B) + mac(MAC_A) + "88a8 0007 8100 0009 0800") + udp4_frame()[14:]
    p = F.parse(qinq)
    assert (p.vlan_tci, p.l3, p.nw_proto) == (0x1007, 22, 17)


def test_parse_snap_and_ipv6_extension_headers() -> None:
    snap = h(mac(MAC_B) + mac(MAC_A) + "0030 aaaa03 000000 0800") + udp4_frame()[14:]
    p = F.parse(snap)
    assert (p.dl_type, p.l3, p.nw_proto, p.tp_dst) == (0x0800, 22, 17, 53)
    llc = h(mac(MAC_B) + mac(MAC_A) + "0030 424203") + bytes(40)
    assert F.parse(llc).dl_type == 0x05FF
    dst_opts = bytes((17, 1)) + bytes(14)
    p = F.parse(udp6_frame(ext=dst_opts, first_nxt=60))
    assert (p.nw_proto, p.l4, p.tp_src) == (17, 14 + 40 + 16, 5000)
    later = struct.pack("!BBHI", 17, 0, 8 << 3, 1)
    p = F.parse(udp6_frame(ext=later, first_nxt=44))
    assert (p.nw_proto, p.nw_frag, p.tp_src) == (44, 3, 0)
    broken = bytes((17, 9)) + bytes(6)          # claims 80 bytes
    p = F.parse(udp6_frame(ext=broken, first_nxt=0))
    assert (p.nw_proto, p.l4, p.nw_src) == (0, None,
                                            ipaddress.IPv6Address("2001:db8::1").packed)


def test_parse_arp_and_nd() -> None:
    f = F.arp_request(udp4_frame())
    p = F.parse(f)
    assert (p.dl_type, p.nw_proto, p.arp_sha, p.nw_dst) == (
        0x0806, 1, h(mac(MAC_A)), ipaddress.IPv4Address("10.0.0.2").packed)
    p = F.parse(ns_frame("2001:db8::7"))
    assert p.is_nd and p.nd_target == ipaddress.IPv6Address("2001:db8::7").packed
    assert p.arp_sha == h(mac(MAC_A))


def test_parse_short_frame() -> None:
    with pytest.raises(FrameError):
        F.parse(b"\x00" * 13)
    p = F.parse(eth(MAC_B, MAC_A, 0x0800) + b"\x45")
    assert (p.dl_type, p.l4, p.nw_src) == (0x0800, None, bytes(4))
