"""pinctrl L3 services end to end: real daemons, a packet in, the answer out.

One small topology (ls-a -- lr0 -- ls-b, VIFs vif-a1 and vif-b1 on this
chassis, a reject ACL for TCP, UDP and SCTP port 80 from ls-a-p1) runs
under each agent (``c`` first, then ``py``).  A packet is injected with
``netdev-dummy/receive`` and the frame the agent's pinctrl makes of it is
read from a tx pcap; the test derives the whole expected frame by hand from
the injected frame (read back from the rx pcap) and asserts byte equality,
so the C run proves the expectation and the py run must give the same bytes.

* TTL 1 ping through lr0 -> ICMP time exceeded from 10.0.1.1 (opcode ICMP;
  its nested actions set type 11 code 0 and TTL 254);
* TCP SYN to port 80 -> RST|ACK back with addresses swapped (REJECT);
* UDP to port 80 -> ICMP port unreachable (REJECT, code 3);
* IPv6 TCP SYN to port 80 -> IPv6 RST; SCTP INIT to port 80 -> ABORT
  carrying the INIT's initiate tag (REJECT);
* TCP SYN to the router's own address -> RST (TCP_RESET, not swapped by
  pinctrl: its nested actions swap); UDP to its IPv6 address -> ICMPv6 port
  unreachable (ICMP); an NS for its IPv6 address -> NA with the router flag
  (ND_NA_ROUTER);
* ping to 10.0.2.77, no MAC binding -> lr0 broadcasts an ARP request on ls-b
  (opcode ARP; the original packet is buffered);
* IPv6 hop limit 1 through lr0 -> ICMPv6 time exceeded (opcode ICMP, nested
  actions set type 3 code 0 and hop limit 254);
* ping6 to fd00:b::77, no MAC binding -> lr0 sends a neighbour solicitation
  to its solicited-node group on ls-b (opcode ND_NS);
* a 1400-byte IPv4 / IPv6 datagram towards lr0-b (``gateway_mtu=1300``) ->
  fragmentation needed / packet too big with MTU 1300 (ICMP4/6_ERROR, whose
  nested actions pause at PUT_ICMP4/6_FRAG_MTU: a second packet-in answered
  with NXT_RESUME);
* an ARP reply for a buffered next hop -> MAC_Binding learnt and the
  buffered ping sent on to the learnt MAC (ARP's BufferIntent end to end;
  ls-b-p1 also takes unknown MACs so the released ping reaches vif-b1).
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from integration.packets import (Frame, Packet, PcapCursor, icmp4, inject, tcp4, udp4)
from integration.sandbox import Sandbox

pytestmark = pytest.mark.integration

A1_MAC, A1_IP, A1_IP6 = "0a:00:00:00:01:02", "10.0.1.2", "fd00:a::2"
B1_MAC, B1_IP, B1_IP6 = "0a:00:00:00:02:02", "10.0.2.2", "fd00:b::2"
LRA_MAC, LRA_IP, LRA_IP6 = "0a:00:00:00:01:01", "10.0.1.1", "fd00:a::1"
LRB_MAC, LRB_IP, LRB_IP6 = "0a:00:00:00:02:01", "10.0.2.1", "fd00:b::1"
UNKNOWN_IP, UNKNOWN_IP6 = "10.0.2.77", "fd00:b::77"
TIMEOUT = 10.0
GW_MTU = 1300

_NB = [
    "--", "ls-add", "ls-a", "--", "ls-add", "ls-b", "--", "lr-add", "lr0",
    "--", "lrp-add", "lr0", "lr0-a", LRA_MAC, LRA_IP + "/24", LRA_IP6 + "/64",
    "--", "lrp-add", "lr0", "lr0-b", LRB_MAC, LRB_IP + "/24", LRB_IP6 + "/64",
    "--", "lsp-add", "ls-a", "ls-a-lr0", "--", "lsp-set-type", "ls-a-lr0", "router",
    "--", "lsp-set-addresses", "ls-a-lr0", "router",
    "--", "lsp-set-options", "ls-a-lr0", "router-port=lr0-a",
    "--", "lsp-add", "ls-b", "ls-b-lr0", "--", "lsp-set-type", "ls-b-lr0", "router",
    "--", "lsp-set-addresses", "ls-b-lr0", "router",
    "--", "lsp-set-options", "ls-b-lr0", "router-port=lr0-b",
    "--", "lsp-add", "ls-a", "ls-a-p1", "--", "lsp-set-addresses", "ls-a-p1",
    f"{A1_MAC} {A1_IP} {A1_IP6}",
    "--", "lsp-add", "ls-b", "ls-b-p1", "--", "lsp-set-addresses", "ls-b-p1",
    f"{B1_MAC} {B1_IP} {B1_IP6}", "unknown",     # unknown: the learnt next hop's MAC
    "--", "set", "Logical_Router_Port", "lr0-b", f"options:gateway_mtu={GW_MTU}",
    "--", "acl-add", "ls-a", "from-lport", "1000",
    'inport == "ls-a-p1" && (tcp.dst == 80 || udp.dst == 80 || sctp.dst == 80)', "reject",
]


@dataclass
class Env:
    box: Sandbox
    kind: str

    def tx(self, iface: str) -> PcapCursor:
        return PcapCursor(self.box.run / f"{iface}-tx.pcap")

    def rx(self, iface: str) -> PcapCursor:
        return PcapCursor(self.box.run / f"{iface}-rx.pcap")


@pytest.fixture(scope="module", params=("c", "py"))
def env(request: pytest.FixtureRequest) -> Iterator[Env]:
    box = Sandbox(northd=True)
    try:
        box.start()
        box.nbctl("--no-wait", *_NB)
        box.bind_vif("vif-a1", "ls-a-p1", ofport=1, pcap=True)
        box.bind_vif("vif-b1", "ls-b-p1", ofport=2, pcap=True)
        box.start_controller(request.param)
        box.wait_hv_sync(timeout=120, min_flows=100)
        yield Env(box, request.param)
    finally:
        box.stop()


# ---------------------------------------------------------------- expectations


def csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def addr(text: str) -> bytes:
    return ipaddress.ip_address(text).packed


def ipv6(src: str, dst: str, nxt: int, hlim: int, l4: bytes) -> bytes:
    """IPv6 header (traffic class and flow label 0) followed by ``l4``."""
    return struct.pack("!IHBB", 0x60000000, len(l4), nxt, hlim) + addr(src) + addr(dst) + l4


def with_csum6(src: str, dst: str, nxt: int, l4: bytes, ck_ofs: int) -> bytes:
    """``l4`` with its checksum (at ``ck_ofs``) over the IPv6 pseudo-header."""
    pseudo = addr(src) + addr(dst) + struct.pack("!IxxxB", len(l4), nxt)
    l4 = l4[:ck_ofs] + b"\0\0" + l4[ck_ofs + 2:]
    return l4[:ck_ofs] + struct.pack("!H", csum(pseudo + l4)) + l4[ck_ofs + 2:]


def inject_raw(env: Env, iface: str, frame: bytes) -> None:
    env.box.appctl("ovs-vswitchd", "netdev-dummy/receive", iface, frame.hex())


def ipv4(src: str, dst: str, proto: int, ttl: int, l4: bytes) -> bytes:
    """pinctrl's IPv4 header (TOS 0, id 0, DF) followed by ``l4``."""
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0x4000, ttl, proto, 0,
                      addr(src), addr(dst))
    return hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:] + l4


def icmp_error(icmp_type: int, code: int, original: bytes) -> bytes:
    """ICMP error quoting the original IP datagram (up to 534 bytes)."""
    tot = struct.unpack_from("!H", original, 16)[0]
    quote = original[14:14 + min(tot, 534)]
    body = bytes((icmp_type, code, 0, 0)) + bytes(4) + quote
    return body[:2] + struct.pack("!H", csum(body)) + body[4:]


def sent_and_answer(env: Env, in_iface: str, out_iface: str, packet: Packet,
                    is_answer: Callable[[Frame], bool]) -> tuple[bytes, bytes]:
    """Inject ``packet`` on ``in_iface``: (the injected frame as vswitchd
    received it, the first new frame on ``out_iface`` that ``is_answer``)."""
    rx, tx = env.rx(in_iface), env.tx(out_iface)
    inject(env.box, in_iface, packet)
    sent, _ = rx.wait_for(lambda f: f.ip_src == packet.ip_src and f.ip_dst == packet.ip_dst,
                          timeout=TIMEOUT)
    assert sent is not None, f"{packet} not received on {in_iface}"
    got, seen = tx.wait_for(is_answer, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] no answer on {out_iface}; new frames:\n"
                             + "\n".join(f.summary() for f in seen) + "\n"
                             + env.box.log_tail())
    return sent.raw, got.raw


# ---------------------------------------------------------------- cases


def test_ttl_expired_ping_gets_time_exceeded(env: Env) -> None:
    ping = icmp4(A1_MAC, LRA_MAC, A1_IP, B1_IP, ttl=1)
    sent, got = sent_and_answer(env, "vif-a1", "vif-a1", ping,
                                lambda f: f.proto == 1 and f.icmp_type == 11)
    expected = mac(A1_MAC) + mac(LRA_MAC) + b"\x08\x00" + ipv4(
        LRA_IP, A1_IP, 1, 254, icmp_error(11, 0, sent))
    assert got == expected, f"[{env.kind}]\n got {got.hex()}\n exp {expected.hex()}"


def test_reject_tcp_gets_rst(env: Env) -> None:
    syn = tcp4(A1_MAC, LRA_MAC, A1_IP, B1_IP, 43210, 80)
    sent, got = sent_and_answer(env, "vif-a1", "vif-a1", syn,
                                lambda f: f.proto == 6 and f.ip_src == B1_IP)
    seq = struct.unpack_from("!I", sent, 38)[0]
    seg = struct.pack("!HHIIHHHH", 80, 43210, 0, (seq + 1) & 0xFFFFFFFF, 0x5014, 0, 0, 0)
    pseudo = addr(B1_IP) + addr(A1_IP) + struct.pack("!BBH", 0, 6, 20)
    seg = seg[:16] + struct.pack("!H", csum(pseudo + seg)) + seg[18:]
    expected = mac(A1_MAC) + mac(LRA_MAC) + b"\x08\x00" + ipv4(B1_IP, A1_IP, 6, 63, seg)
    assert got == expected, f"[{env.kind}]\n got {got.hex()}\n exp {expected.hex()}"


def test_reject_udp_gets_port_unreachable(env: Env) -> None:
    dgram = udp4(A1_MAC, LRA_MAC, A1_IP, B1_IP, 5353, 80)
    sent, got = sent_and_answer(env, "vif-a1", "vif-a1", dgram,
                                lambda f: f.proto == 1 and f.icmp_type == 3)
    expected = mac(A1_MAC) + mac(LRA_MAC) + b"\x08\x00" + ipv4(
        B1_IP, A1_IP, 1, 255, icmp_error(3, 3, sent))
    assert got == expected, f"[{env.kind}]\n got {got.hex()}\n exp {expected.hex()}"


def test_unknown_next_hop_gets_arp_request(env: Env) -> None:
    ping = icmp4(A1_MAC, LRA_MAC, A1_IP, UNKNOWN_IP)
    tx = env.tx("vif-b1")
    inject(env.box, "vif-a1", ping)
    got, seen = tx.wait_for(lambda f: f.eth_type == 0x0806, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] no ARP on vif-b1:\n"
                             + "\n".join(f.summary() for f in seen))
    expected = (b"\xff" * 6 + mac(LRB_MAC) + b"\x08\x06"
                + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + mac(LRB_MAC) + addr(LRB_IP)
                + bytes(6) + addr(UNKNOWN_IP))
    assert got.raw == expected, f"[{env.kind}]\n got {got.raw.hex()}\n exp {expected.hex()}"


def test_ipv6_hop_limit_expired_gets_time_exceeded(env: Env) -> None:
    udp = with_csum6(A1_IP6, B1_IP6, 17, struct.pack("!HHHH", 5000, 7, 12, 0) + b"ping", 6)
    sent = mac(LRA_MAC) + mac(A1_MAC) + b"\x86\xdd" + ipv6(A1_IP6, B1_IP6, 17, 1, udp)
    tx = env.tx("vif-a1")
    inject_raw(env, "vif-a1", sent)
    got, seen = tx.wait_for(lambda f: f.proto == 58 and f.icmp_type == 3, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] no ICMPv6 on vif-a1:\n"
                             + "\n".join(f.summary() for f in seen))
    body = with_csum6(LRA_IP6, A1_IP6, 58, bytes((3, 0, 0, 0)) + bytes(4) + sent[14:], 2)
    expected = mac(A1_MAC) + mac(LRA_MAC) + b"\x86\xdd" + ipv6(LRA_IP6, A1_IP6, 58, 254, body)
    assert got.raw == expected, f"[{env.kind}]\n got {got.raw.hex()}\n exp {expected.hex()}"


def test_unknown_ipv6_next_hop_gets_neighbour_solicitation(env: Env) -> None:
    echo = with_csum6(A1_IP6, UNKNOWN_IP6, 58, bytes((128, 0, 0, 0, 0, 1, 0, 1)), 2)
    sent = mac(LRA_MAC) + mac(A1_MAC) + b"\x86\xdd" + ipv6(A1_IP6, UNKNOWN_IP6, 58, 64, echo)
    tx = env.tx("vif-b1")
    inject_raw(env, "vif-a1", sent)
    got, seen = tx.wait_for(lambda f: f.proto == 58 and f.icmp_type == 135, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] no NS on vif-b1:\n"
                             + "\n".join(f.summary() for f in seen))
    target = addr(UNKNOWN_IP6)
    group = "ff02::1:ff" + target[13:14].hex() + ":" + target[14:16].hex()
    r = mac(LRB_MAC)
    lla = "fe80::%02x%02x:%02xff:fe%02x:%02x%02x" % (r[0] ^ 2, r[1], r[2], r[3], r[4], r[5])
    ns = with_csum6(lla, group, 58, bytes((135, 0, 0, 0)) + bytes(4) + target + b"\x01\x01" + r,
                    2)
    expected = (b"\x33\x33" + addr(group)[12:] + r + b"\x86\xdd"
                + ipv6(lla, group, 58, 255, ns))
    assert got.raw == expected, f"[{env.kind}]\n got {got.raw.hex()}\n exp {expected.hex()}"


def test_too_big_ipv4_gets_frag_needed_with_mtu(env: Env) -> None:
    payload = bytes(range(256)) * 6
    udp = struct.pack("!HHHH", 5000, 7, 8 + len(payload), 0) + payload
    sent = mac(LRA_MAC) + mac(A1_MAC) + b"\x08\x00" + ipv4(A1_IP, B1_IP, 17, 64, udp)
    tx = env.tx("vif-a1")
    inject_raw(env, "vif-a1", sent)
    got, seen = tx.wait_for(lambda f: f.proto == 1 and f.icmp_type == 3, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] no ICMP on vif-a1:\n"
                             + "\n".join(f.summary() for f in seen))
    quoted = ipv4(A1_IP, B1_IP, 17, 63, udp)        # as routed: TTL already decremented
    body = bytes((3, 4, 0, 0, 0, 0)) + struct.pack("!H", GW_MTU) + quoted[:534]
    body = body[:2] + struct.pack("!H", csum(body)) + body[4:]
    expected = mac(A1_MAC) + mac(LRA_MAC) + b"\x08\x00" + ipv4(LRA_IP, A1_IP, 1, 254, body)
    assert got.raw == expected, f"[{env.kind}]\n got {got.raw.hex()}\n exp {expected.hex()}"


def test_too_big_ipv6_gets_packet_too_big_with_mtu(env: Env) -> None:
    payload = bytes(range(256)) * 6
    udp = with_csum6(A1_IP6, B1_IP6, 17,
                     struct.pack("!HHHH", 5000, 7, 8 + len(payload), 0) + payload, 6)
    sent = mac(LRA_MAC) + mac(A1_MAC) + b"\x86\xdd" + ipv6(A1_IP6, B1_IP6, 17, 64, udp)
    tx = env.tx("vif-a1")
    inject_raw(env, "vif-a1", sent)
    got, seen = tx.wait_for(lambda f: f.proto == 58 and f.icmp_type == 2, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] no ICMPv6 on vif-a1:\n"
                             + "\n".join(f.summary() for f in seen))
    quoted = ipv6(A1_IP6, B1_IP6, 17, 63, udp)      # as routed: hop limit decremented
    body = with_csum6(LRA_IP6, A1_IP6, 58, bytes((2, 0, 0, 0)) + struct.pack("!I", GW_MTU)
                      + quoted[:1218], 2)
    expected = mac(A1_MAC) + mac(LRA_MAC) + b"\x86\xdd" + ipv6(LRA_IP6, A1_IP6, 58, 254, body)
    assert got.raw == expected, f"[{env.kind}]\n got {got.raw.hex()}\n exp {expected.hex()}"


def test_reject_ipv6_tcp_gets_rst(env: Env) -> None:
    syn = with_csum6(A1_IP6, B1_IP6, 6, struct.pack("!HHIIHHHH", 43211, 80, 0xFFFFFFFF, 0,
                                                    0x5002, 64240, 0, 0), 16)
    sent = mac(LRA_MAC) + mac(A1_MAC) + b"\x86\xdd" + ipv6(A1_IP6, B1_IP6, 6, 64, syn)
    tx = env.tx("vif-a1")
    inject_raw(env, "vif-a1", sent)
    got, seen = tx.wait_for(lambda f: f.proto == 6 and f.ip_src == B1_IP6, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] no RST on vif-a1:\n"
                             + "\n".join(f.summary() for f in seen))
    rst = with_csum6(B1_IP6, A1_IP6, 6, struct.pack("!HHIIHHHH", 80, 43211, 0, 0, 0x5014, 0,
                                                    0, 0), 16)
    expected = mac(A1_MAC) + mac(LRA_MAC) + b"\x86\xdd" + ipv6(B1_IP6, A1_IP6, 6, 63, rst)
    assert got.raw == expected, f"[{env.kind}]\n got {got.raw.hex()}\n exp {expected.hex()}"


def crc32c(data: bytes) -> bytes:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 * (crc & 1))
    return (~crc & 0xFFFFFFFF).to_bytes(4, "little")


def test_reject_sctp_init_gets_abort(env: Env) -> None:
    tag = 0x0BADCAFE
    init = struct.pack("!HHII", 40000, 80, 0, 0) + struct.pack("!BBHIIHHI", 1, 0, 20, tag,
                                                               65535, 10, 10, 1)
    init = init[:8] + crc32c(init) + init[12:]
    sent = mac(LRA_MAC) + mac(A1_MAC) + b"\x08\x00" + ipv4(A1_IP, B1_IP, 132, 64, init)
    tx = env.tx("vif-a1")
    inject_raw(env, "vif-a1", sent)
    got, seen = tx.wait_for(lambda f: f.proto == 132 and f.ip_src == B1_IP, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] no ABORT on vif-a1:\n"
                             + "\n".join(f.summary() for f in seen))
    abort = struct.pack("!HHII", 80, 40000, tag, 0) + bytes((6, 0, 0, 4))
    abort = abort[:8] + crc32c(abort) + abort[12:]
    expected = mac(A1_MAC) + mac(LRA_MAC) + b"\x08\x00" + ipv4(B1_IP, A1_IP, 132, 63, abort)
    assert got.raw == expected, f"[{env.kind}]\n got {got.raw.hex()}\n exp {expected.hex()}"


def test_tcp_to_router_address_gets_rst(env: Env) -> None:
    syn = struct.pack("!HHIIHHHH", 43212, 22, 77, 0, 0x5002, 64240, 0, 0)
    pseudo = addr(A1_IP) + addr(LRA_IP) + struct.pack("!BBH", 0, 6, 20)
    syn = syn[:16] + struct.pack("!H", csum(pseudo + syn)) + syn[18:]
    sent = mac(LRA_MAC) + mac(A1_MAC) + b"\x08\x00" + ipv4(A1_IP, LRA_IP, 6, 64, syn)
    tx = env.tx("vif-a1")
    inject_raw(env, "vif-a1", sent)
    got, seen = tx.wait_for(lambda f: f.proto == 6 and f.ip_src == LRA_IP, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] no RST on vif-a1:\n"
                             + "\n".join(f.summary() for f in seen))
    rst = struct.pack("!HHIIHHHH", 22, 43212, 0, 78, 0x5014, 0, 0, 0)
    pseudo = addr(LRA_IP) + addr(A1_IP) + struct.pack("!BBH", 0, 6, 20)
    rst = rst[:16] + struct.pack("!H", csum(pseudo + rst)) + rst[18:]
    expected = mac(A1_MAC) + mac(LRA_MAC) + b"\x08\x00" + ipv4(LRA_IP, A1_IP, 6, 62, rst)
    assert got.raw == expected, f"[{env.kind}]\n got {got.raw.hex()}\n exp {expected.hex()}"


def test_udp_to_router_ipv6_address_gets_port_unreachable(env: Env) -> None:
    udp = with_csum6(A1_IP6, LRA_IP6, 17, struct.pack("!HHHH", 5001, 9, 11, 0) + b"abc", 6)
    sent = mac(LRA_MAC) + mac(A1_MAC) + b"\x86\xdd" + ipv6(A1_IP6, LRA_IP6, 17, 64, udp)
    tx = env.tx("vif-a1")
    inject_raw(env, "vif-a1", sent)
    got, seen = tx.wait_for(lambda f: f.proto == 58 and f.icmp_type == 1, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] no ICMPv6 on vif-a1:\n"
                             + "\n".join(f.summary() for f in seen))
    body = with_csum6(LRA_IP6, A1_IP6, 58, bytes((1, 4, 0, 0)) + bytes(4) + sent[14:], 2)
    expected = mac(A1_MAC) + mac(LRA_MAC) + b"\x86\xdd" + ipv6(LRA_IP6, A1_IP6, 58, 254, body)
    assert got.raw == expected, f"[{env.kind}]\n got {got.raw.hex()}\n exp {expected.hex()}"


def test_ns_for_router_address_gets_router_na(env: Env) -> None:
    target = addr(LRA_IP6)
    group = "ff02::1:ff" + target[13:14].hex() + ":" + target[14:16].hex()
    ns = with_csum6(A1_IP6, group, 58, bytes((135, 0, 0, 0)) + bytes(4) + target
                    + b"\x01\x01" + mac(A1_MAC), 2)
    sent = b"\x33\x33" + addr(group)[12:] + mac(A1_MAC) + b"\x86\xdd" + ipv6(
        A1_IP6, group, 58, 255, ns)
    tx = env.tx("vif-a1")
    inject_raw(env, "vif-a1", sent)
    got, seen = tx.wait_for(lambda f: f.proto == 58 and f.icmp_type == 136, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] no NA on vif-a1:\n"
                             + "\n".join(f.summary() for f in seen))
    na = with_csum6(LRA_IP6, A1_IP6, 58, bytes((136, 0, 0, 0)) + struct.pack("!I", 0xE0000000)
                    + target + b"\x02\x01" + mac(LRA_MAC), 2)
    expected = mac(A1_MAC) + mac(LRA_MAC) + b"\x86\xdd" + ipv6(LRA_IP6, A1_IP6, 58, 255, na)
    assert got.raw == expected, f"[{env.kind}]\n got {got.raw.hex()}\n exp {expected.hex()}"


def test_buffered_packet_released_after_arp_reply(env: Env) -> None:
    """The packet that triggered ``arp`` is held (BufferIntent) and sent on
    once an ARP reply has been learnt as a MAC_Binding."""
    hop, hop_mac = "10.0.2.88", "0a:00:00:00:02:88"
    ping = icmp4(A1_MAC, LRA_MAC, A1_IP, hop)
    tx = env.tx("vif-b1")
    inject(env.box, "vif-a1", ping)
    got, seen = tx.wait_for(lambda f: f.eth_type == 0x0806, timeout=TIMEOUT)
    assert got is not None, f"[{env.kind}] no ARP on vif-b1"
    reply = (mac(LRB_MAC) + mac(hop_mac) + b"\x08\x06"
             + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + mac(hop_mac) + addr(hop)
             + mac(LRB_MAC) + addr(LRB_IP))
    inject_raw(env, "vif-b1", reply)
    got, seen = tx.wait_for(lambda f: f.proto == 1 and f.ip_dst == hop, timeout=TIMEOUT)
    assert got is not None, (f"[{env.kind}] buffered ping not released on vif-b1:\n"
                             + "\n".join(f.summary() for f in seen) + env.box.log_tail())
    assert (got.eth_src, got.eth_dst, got.ttl, got.ip_src) == (LRB_MAC, hop_mac, 63, A1_IP)
    rows = env.box.sbctl("--bare", "--columns=ip,mac", "find", "MAC_Binding", f"ip={hop}")
    assert hop_mac in rows, rows
