"""dns_lookup: the cache built from SB DNS rows and byte-exact answers over
IPv4 and IPv6 (A, AAAA, ANY, PTR), flags, TTL, the arcount rule."""

from __future__ import annotations

import ipaddress
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from os_ken.lib.packet import ipv4, ipv6, packet, udp

from controller.pinctrl.dns import build_dns_cache, dns_lookup, parse_ip_addresses
from tests.pinctrl.l7_helpers import inet_csum, udp4_frame, udp6_frame

DP = 7
CACHE = build_dns_cache([
    ({"dns_id": "d1"}, {"vm1.ovn.org": "10.0.0.4 aef0::4 10.0.0.5",
                        "vm6.ovn.org": "aef0::6",
                        "4.0.0.10.in-addr.arpa": "vm1.ovn.org"}, [DP, 9]),
    ({"dns_id": "d2"}, {"vm2.ovn.org": "10.0.0.6/24"}, [DP]),
    ({}, {"ghost.ovn.org": "10.9.9.9"}, [DP]),                 # no dns_id: ignored
])


def qname(name: str) -> bytes:
    return b"".join(bytes((len(p),)) + p.encode() for p in name.split(".")) + b"\0"


def query(name: str, qtype: int, *, flags: int = 0x0100, qd: int = 1, an: int = 0,
          ns: int = 0, ar: int = 0, qid: int = 0x1A2B, extra: bytes = b"") -> bytes:
    return struct.pack("!HHHHHH", qid, flags, qd, an, ns, ar) + qname(name) + \
        struct.pack("!HH", qtype, 1) + extra


def q4(msg: bytes, vlan_id: int | None = None) -> bytes:
    return udp4_frame(msg, "10.0.0.4", "10.0.0.1", 33333, 53, vlan_id=vlan_id,
                      eth_dst="50:54:00:00:00:fe")


def q6(msg: bytes) -> bytes:
    return udp6_frame(msg, "aef0::4", "aef0::1", 33333, 53, eth_dst="50:54:00:00:00:fe")


def rr(name: str, rtype: int, rdata: bytes) -> bytes:
    return qname(name) + struct.pack("!HHIH", rtype, 1, 3600, len(rdata)) + rdata


def ip4(text: str) -> bytes:
    return ipaddress.ip_address(text).packed


def expected4(req: bytes, answers: bytes, ancount: int, l3: int = 14) -> bytes:
    l4 = l3 + 20
    dns = bytearray(req[l4 + 8:])
    dns[2] |= 0x80
    dns[6:8] = struct.pack("!H", ancount)
    udp_len = struct.unpack("!H", req[l4 + 4:l4 + 6])[0] + len(answers)
    ip = bytearray(req[l3:l4])
    ip[2:4] = struct.pack("!H", 20 + udp_len)
    ip[10:12] = b"\0\0"
    ip[10:12] = struct.pack("!H", inet_csum(bytes(ip)))
    return req[:l3] + bytes(ip) + req[l4:l4 + 4] + struct.pack("!HH", udp_len, 0) + \
        bytes(dns) + answers


def expected6(req: bytes, answers: bytes, ancount: int) -> bytes:
    l3, l4 = 14, 54
    dns = bytearray(req[l4 + 8:])
    dns[2] |= 0x80
    dns[6:8] = struct.pack("!H", ancount)
    udp_len = struct.unpack("!H", req[l4 + 4:l4 + 6])[0] + len(answers)
    ip = bytearray(req[l3:l4])
    ip[4:6] = struct.pack("!H", udp_len)
    seg = req[l4:l4 + 4] + struct.pack("!HH", udp_len, 0) + bytes(dns) + answers
    csum = inet_csum(bytes(ip[8:40]) + struct.pack("!IxxxB", udp_len, 17) + seg) or 0xFFFF
    return req[:l3] + bytes(ip) + seg[:6] + struct.pack("!H", csum) + seg[8:]


def test_a_over_ipv4_byte_exact() -> None:
    req = q4(query("vm1.ovn.org", 1))
    ans = dns_lookup(req, DP, CACHE)
    answers = rr("vm1.ovn.org", 1, ip4("10.0.0.4")) + rr("vm1.ovn.org", 1, ip4("10.0.0.5"))
    assert ans.frame == expected4(req, answers, 2)


def test_answer_parses_with_os_ken() -> None:
    req = q4(query("vm1.ovn.org", 1))
    ans = dns_lookup(req, DP, CACHE)
    assert ans.frame is not None
    pkt = packet.Packet(ans.frame)
    ip = pkt.get_protocol(ipv4.ipv4)
    u = pkt.get_protocol(udp.udp)
    assert (ip.src, ip.dst, ip.total_length) == ("10.0.0.4", "10.0.0.1", len(ans.frame) - 14)
    assert (u.src_port, u.dst_port, u.total_length, u.csum) == (33333, 53,
                                                                len(ans.frame) - 34, 0)
    qid, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", ans.frame[42:54])
    # QR set, RD kept, AA/RA/rcode 0.
    assert (qid, flags, qd, an, ns, ar) == (0x1A2B, 0x8100, 1, 2, 0, 0)


def test_aaaa_over_ipv6_byte_exact() -> None:
    req = q6(query("vm1.ovn.org", 28))
    ans = dns_lookup(req, DP, CACHE)
    assert ans.frame == expected6(req, rr("vm1.ovn.org", 28, ip4("aef0::4")), 1)
    pkt = packet.Packet(ans.frame)
    assert pkt.get_protocol(ipv6.ipv6).payload_length == len(ans.frame) - 54


def test_any_is_every_a_then_every_aaaa() -> None:
    req = q6(query("VM1.Ovn.Org", 255))
    ans = dns_lookup(req, DP, CACHE)
    answers = (rr("VM1.Ovn.Org", 1, ip4("10.0.0.4")) + rr("VM1.Ovn.Org", 1, ip4("10.0.0.5"))
               + rr("VM1.Ovn.Org", 28, ip4("aef0::4")))
    assert ans.frame == expected6(req, answers, 3)      # name copied as asked


def test_ptr_answer() -> None:
    req = q4(query("4.0.0.10.in-addr.arpa", 12))
    ans = dns_lookup(req, DP, CACHE)
    assert ans.frame == expected4(req, rr("4.0.0.10.in-addr.arpa", 12, qname("vm1.ovn.org")), 1)


def test_cidr_value_answers_the_address() -> None:
    req = q4(query("vm2.ovn.org", 1))
    assert dns_lookup(req, DP, CACHE).frame == expected4(req, rr("vm2.ovn.org", 1,
                                                                 ip4("10.0.0.6")), 1)


def test_vlan_tagged_ipv4_takes_the_ipv6_branch_as_in_c() -> None:
    req = q4(query("vm1.ovn.org", 1), vlan_id=5)
    ans = dns_lookup(req, DP, CACHE)
    assert ans.frame is not None
    l3, l4 = 18, 38
    # C tests the outer Ethernet type: it writes the new length at the IPv6
    # payload-length offset (IPv4 identification) and leaves total length alone.
    assert ans.frame[l3 + 2:l3 + 4] == req[l3 + 2:l3 + 4]
    udp_len = struct.unpack("!H", ans.frame[l4 + 4:l4 + 6])[0]
    assert ans.frame[l3 + 4:l3 + 6] == struct.pack("!H", udp_len)
    assert ans.frame[l4 + 6:l4 + 8] != b"\0\0"


@pytest.mark.parametrize("msg", [
    query("vm1.ovn.org", 1, flags=0x8100),                    # a response
    query("vm1.ovn.org", 1, qd=0),
    query("vm1.ovn.org", 1, ar=1, extra=b"\0\0\x29\x10\0\0\0\0\0\0\0"),   # EDNS OPT
    query("vm1.ovn.org", 15),                                 # MX
    query("vm6.ovn.org", 1),                                  # no A for this name
    query("nothere.ovn.org", 1),
    query("ghost.ovn.org", 1),
])
def test_unanswered(msg: bytes) -> None:
    assert dns_lookup(q4(msg), DP, CACHE).frame is None


def test_ptr_takes_any_record_value_as_a_name() -> None:
    # C labels whatever the record holds at its dots (spaces stay inside labels).
    req = q4(query("vm1.ovn.org", 12))
    rdata = b"\x0210\x010\x010\x0c4 aef0::4 10\x010\x010\x015\x00"
    assert dns_lookup(req, DP, CACHE).frame == expected4(req, rr("vm1.ovn.org", 12, rdata), 1)


def test_other_datapath_and_truncation() -> None:
    req = q4(query("vm2.ovn.org", 1))
    assert dns_lookup(req, 9, CACHE).frame is None            # d2 does not serve dp 9
    assert dns_lookup(q4(query("vm1.ovn.org", 1)), 9, CACHE).frame is not None
    short = q4(query("vm1.ovn.org", 1))[:14 + 20 + 8 + 11]
    assert dns_lookup(short, DP, CACHE).logs == (("warn", "truncated dns packet"),)
    cut = bytearray(q4(query("vm1.ovn.org", 1)))
    cut[38:40] = struct.pack("!H", 8 + 12 + 5)                # UDP length ends in the name
    assert dns_lookup(bytes(cut), DP, CACHE).frame is None


def test_arcount_is_logged_at_debug() -> None:
    ans = dns_lookup(q4(query("vm1.ovn.org", 1, ar=1)), DP, CACHE)
    assert ans.frame is None and ans.logs[0][0] == "dbg"


def test_trailing_bytes_are_copied_before_the_answers() -> None:
    req = q4(query("vm6.ovn.org", 28)) + b"\xee\xee"          # Ethernet trailer
    ans = dns_lookup(req, DP, CACHE)
    assert ans.frame is not None
    assert ans.frame.endswith(b"\xee\xee" + rr("vm6.ovn.org", 28, ip4("aef0::6")))


def test_cache_rules() -> None:
    cache = build_dns_cache([({"dns_id": "a"}, {"x.org": "1.1.1.1"}, [1]),
                             ({"dns_id": "a"}, {"x.org": "2.2.2.2"}, [1])])
    assert cache.lookup(1, b"x.org") == b"2.2.2.2"           # same dns_id: last row
    assert cache.lookup(2, b"x.org") is None


@pytest.mark.parametrize("text, v4, v6", [
    ("10.0.0.4 aef0::4", ["10.0.0.4"], ["aef0::4"]),
    ("  10.0.0.4/24  aef0::4/64 ", ["10.0.0.4"], ["aef0::4"]),
    ("10.0.0.4 bogus 10.0.0.5", ["10.0.0.4"], []),
    ("10.0.0.4/255.0.255.0 10.0.0.5", [], []),                # non-CIDR mask stops it
    ("aef0::4/xyz", [], ["aef0::4"]),
    ("", [], []),
])
def test_record_value_parsing(text: str, v4: list[str], v6: list[str]) -> None:
    got4, got6 = parse_ip_addresses(text.encode())
    assert got4 == [ip4(a) for a in v4]
    assert got6 == [ip4(a) for a in v6]


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 20))
def test_fuzz_random_bytes_never_raise(frame: bytes, dp: int) -> None:
    ans = dns_lookup(frame, dp, CACHE)
    assert ans.frame is None or isinstance(ans.frame, bytes)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40), st.integers(0, 255), st.integers(0, 60), st.booleans())
def test_fuzz_mangled_queries_never_raise(tail: bytes, qtype: int, cut: int, v6: bool) -> None:
    msg = query("vm1.ovn.org", qtype)
    frame = (q6 if v6 else q4)(msg[:max(0, len(msg) - cut)] + tail)
    ans = dns_lookup(frame, DP, CACHE)
    if ans.frame is not None:
        assert len(ans.frame) > len(frame)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_fuzz_record_values_never_raise(text: str) -> None:
    parse_ip_addresses(text.encode())


def test_cache_from_sb_rows_reaches_the_published_snapshot() -> None:
    from types import SimpleNamespace

    from controller.ovsdb.tracking import ChangeTracker
    from controller.pinctrl.sb_writes import SnapshotPublisher

    dp = SimpleNamespace(tunnel_key=DP)
    rows = [SimpleNamespace(external_ids={"dns_id": "x"}, records={"a.org": "1.2.3.4"},
                            datapaths=[dp]),
            SimpleNamespace(external_ids={}, records={"b.org": "1.2.3.5"}, datapaths=[dp])]
    published: list = []
    pub = SnapshotPublisher(published.append)
    tracker = ChangeTracker(["Port_Binding", "DNS"])
    assert pub.run("hv1", {}, lambda _u: [], tracker, lambda: rows)
    assert published[-1].dns.lookup(DP, b"a.org") == b"1.2.3.4"
    assert published[-1].dns.lookup(DP, b"b.org") is None
    # Unchanged DNS table: nothing new to publish.
    assert not pub.run("hv1", {}, lambda _u: [], tracker, lambda: rows)
    tracker.record("DNS", "update", SimpleNamespace(uuid=1), {})
    rows[0].records = {"a.org": "4.3.2.1"}
    assert pub.run("hv1", {}, lambda _u: [], tracker, lambda: rows)
    assert published[-1].dns.lookup(DP, b"a.org") == b"4.3.2.1"
