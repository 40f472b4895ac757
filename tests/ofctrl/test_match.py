"""Tests for ofctrl.match.Match: normalisation, OVS text format, OF1.5 wire."""

from __future__ import annotations

import json
import re
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

from integration.flow_corpus import REF, distinct_matches, port_numbers
from ofctrl.match import Match, MatchError

VECTORS = Path("/work/shared/ovn-at-vectors/expr-to-flows.json")


@lru_cache(maxsize=None)
def corpus() -> tuple[tuple[str, dict[str, int], tuple[str, ...]], ...]:
    """(topology, port map, distinct match texts) of the real agent's dumps."""
    return (
        ("rich", port_numbers("rich"), tuple(distinct_matches(REF / "rich/flows.raw.txt"))),
        ("seed-500", port_numbers("seed-500"),
         tuple(distinct_matches(REF / "seed-500/flows.raw.txt.gz"))),
    )


def test_corpus_text_roundtrip() -> None:
    """Match.parse(m).to_string() == m for every distinct match the real
    ovn-controller installed (80k+ texts, in_port names via ports.txt)."""
    total = 0
    failures = []
    for _topo, ports, texts in corpus():
        names = {v: k for k, v in ports.items()}
        for text in texts:
            total += 1
            got = Match.parse(text, ports).to_string(names)
            if got != text:
                failures.append((text, got))
    assert total > 80000
    assert failures == []


def test_corpus_wire_roundtrip() -> None:
    for _topo, ports, texts in corpus():
        for text in texts:
            m = Match.parse(text, ports)
            data = m.encode()
            assert len(data) % 8 == 0
            assert Match.decode(data) == m, text


def test_expr_to_flows_vectors_format() -> None:
    lines = []
    for vec in json.loads(VECTORS.read_text())["vectors"]:
        for line in vec["expected_sorted"]:
            if not line.startswith("("):
                lines.append(line.split(": ")[0])
    assert len(lines) > 100
    for line in lines:
        assert Match.parse(line).to_string() == line


@pytest.mark.parametrize(
    "items,text",
    [
        ([("eth_type", 0x800, None), ("reg14", 5, None)], "ip,reg14=0x5"),
        ([("conj_id", 1, None), ("eth_type", 0x800, None)], "conj_id=1,ip"),
        ([("eth_type", 0x800, None), ("nw_proto", 6, None), ("ip_src", 0x0A000001, None),
          ("tcp_dst", 80, None)], "tcp,nw_src=10.0.0.1,tp_dst=80"),
        ([("eth_type", 0x86DD, None), ("nw_proto", 58, None), ("metadata", 4, None),
          ("nw_ttl", 255, None), ("icmpv6_type", 135, None), ("icmpv6_code", 0, None)],
         "icmp6,metadata=0x4,nw_ttl=255,icmp_type=135,icmp_code=0"),
        ([("eth_type", 0x806, None), ("arp_op", 1, None)], "arp,arp_op=1"),
        ([("eth_type", 0x86DD, None), ("ipv6_src", 1, None)], "ipv6,ipv6_src=::1"),
        ([("vlan_tci", 0, 0x1000)], "vlan_tci=0x0000/0x1000"),
        ([("vlan_tci", 0x1000, 0x1FFF)], "dl_vlan=0"),
        ([("dl_vlan", 0, None)], "dl_vlan=0"),
        ([("vlan_vid", 0x1005, None)], "dl_vlan=5"),
        ([("reg9", 4, 4)], "reg9=0x4/0x4"),
        ([("reg0", 0, None)], "reg0=0"),
        ([("ct_state", 0x21, 0x23)], "ct_state=+new-est+trk"),
        ([("ct_state", 0x22, None)], "ct_state=est|trk"),
        ([("eth_type", 0x800, None), ("ip_frag", 3, None)], "ip,nw_frag=later"),
        ([("eth_type", 0x800, None), ("ip_frag", 1, 1)], "ip,nw_frag=yes"),
        ([("eth_type", 0x800, None), ("nw_proto", 6, None), ("tcp_flags", 2, 0x12)],
         "tcp,tcp_flags=+syn-ack"),
        ([("eth_type", 0x800, None), ("nw_proto", 17, None), ("udp_dst", 0x400, 0xFC00)],
         "udp,tp_dst=0x400/0xfc00"),
        ([("eth_type", 0x800, None), ("nw_proto", 89, None)], "ip,nw_proto=89"),
        ([("eth_type", 0x88CC, None)], "dl_type=0x88cc"),
        ([("eth_src", 0x0A0000000001, None), ("eth_type", 0x88CC, None)],
         "dl_src=0a:00:00:00:00:01,dl_type=0x88cc"),
        ([("ct_label", 1 << 96, 1 << 96)],
         "ct_label=0x1000000000000000000000000/0x1000000000000000000000000"),
        ([("ct_mark", 0, 1)], "ct_mark=0/0x1"),
        ([("eth_type", 0x800, None), ("nw_tos", 0x20, None), ("nw_ecn", 1, None)],
         "ip,nw_tos=32,nw_ecn=1"),
        ([("eth_type", 0x800, None), ("ip_dscp", 8, None)], "ip,nw_tos=32"),
        ([("in_port", 0xFFFE, None)], "in_port=LOCAL"),
        ([("in_port_oxm", 7, None)], "in_port=7"),
        ([("tun_id", 5, None), ("in_port", 1, None)], "tun_id=0x5,in_port=1"),
        ([("xxreg0", 0xA << 64, 0xFFFFFFFF << 64)], "reg1=0xa"),
        ([("xreg4", (1 << 32) | 2, None)], "reg8=0x1,reg9=0x2"),
        ([("pkt_mark", 3, None), ("reg15", 1, None)], "pkt_mark=0x3,reg15=0x1"),
        ([("eth_type", 0x800, None), ("ip_dst", 0x0A000000, 0xFF000000)],
         "ip,nw_dst=10.0.0.0/8"),
        ([("eth_type", 0x806, None), ("arp_spa", 0x0A000001, None),
          ("arp_sha", 0x0A0000000001, None)],
         "arp,arp_spa=10.0.0.1,arp_sha=0a:00:00:00:00:01"),
        ([], ""),
    ],
)
def test_to_string(items: list[tuple[str, int, int | None]], text: str) -> None:
    m = Match(items)
    assert m.to_string() == text
    assert Match.decode(m.encode()) == m


def test_normalisation_and_identity() -> None:
    a = Match([("reg0", 5, 0xFFFFFFFF), ("metadata", 1, None)])
    b = Match([("metadata", 1, None), ("reg0", 5, None)])
    assert a == b and hash(a) == hash(b)
    assert a.items == (("reg0", 5, None), ("metadata", 1, None))
    assert Match([("reg0", 5, 0)]) == Match()
    assert Match([("dl_src", 1, None)]).items == (("eth_src", 1, None),)
    assert Match([("reg1", 0xFF, 0x0F)]).get("reg1") == (0x0F, 0x0F)
    assert Match([("xxreg0", 7, None)]).items == (
        ("reg0", 0, None), ("reg1", 0, None), ("reg2", 0, None), ("reg3", 7, None))
    m = Match().with_field("reg14", 5).with_field("eth_type", 0x800)
    assert m.to_string() == "ip,reg14=0x5"
    assert m.with_field("reg14", 6).get("reg14") == (6, None)
    assert m.without("reg14").to_string() == "ip"
    assert m.get("nw_src") is None and m.get("reg14") == (5, None)
    assert {m: 1}[Match.parse("ip,reg14=0x5")] == 1


def test_errors() -> None:
    with pytest.raises(MatchError):
        Match([("bogus", 1, None)])
    with pytest.raises(MatchError):
        Match([("reg0", 1 << 32, None)])
    with pytest.raises(MatchError):
        Match([("nw_ttl", 1, 0xF0)])
    with pytest.raises(MatchError):
        Match.parse("ip,bogus=1")
    with pytest.raises(MatchError):
        Match.decode(b"\x00\x01\x00\x08\xff\xff\xff\x04")


def test_encode_layout() -> None:
    m = Match.parse("tcp,reg14=0x5,metadata=0x1,nw_src=10.0.0.1,tp_dst=80")
    data = m.encode()
    assert data[:2] == b"\x00\x01"
    length = int.from_bytes(data[2:4], "big")
    assert len(data) == (length + 7) // 8 * 8
    body = data[4:length]
    headers = []
    payloads = []
    ofs = 0
    while ofs < len(body):
        hdr = int.from_bytes(body[ofs:ofs + 4], "big")
        headers.append((hdr >> 16, (hdr >> 9) & 0x7F))
        payloads.append(body[ofs + 4:ofs + 4 + (hdr & 0xFF)])
        ofs += 4 + (hdr & 0xFF)
    # eth_type, ipv4_src, ip_proto, tcp_dst, xreg7 (reg14+reg15), metadata:
    # every prerequisite precedes its dependants, registers as OF1.5 xregs.
    assert headers == [(0x8000, 5), (0x8000, 11), (0x8000, 10), (0x8000, 14),
                       (0x8001, 7), (0x8000, 2)]
    assert payloads[4] == (5 << 32).to_bytes(8, "big") + (0xFFFFFFFF << 32).to_bytes(8, "big")
    assert payloads[3] == (80).to_bytes(2, "big")


def test_encode_matches_os_ken_where_it_orders_correctly() -> None:
    from os_ken.ofproto import ofproto_v1_5_parser as parser

    cases: list[tuple[Match, dict[str, object]]] = [
        (Match.parse("metadata=0x4"), dict(metadata=4)),
        (Match.parse("ip,nw_src=10.0.0.1"), dict(eth_type=0x800, ipv4_src="10.0.0.1")),
        (Match.parse("dl_src=0a:00:00:00:00:01,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00"),
         dict(eth_src="0a:00:00:00:00:01",
              eth_dst=("01:00:00:00:00:00", "01:00:00:00:00:00"))),
        (Match.parse("tun_id=0x5,in_port=3"), dict(in_port=3, tunnel_id=5)),
        (Match.parse("tcp,tp_dst=80"), dict(eth_type=0x800, ip_proto=6, tcp_dst=80)),
        (Match.parse("ipv6,ipv6_dst=fe80::/64"),
         dict(eth_type=0x86DD, ipv6_dst=("fe80::", "ffff:ffff:ffff:ffff::"))),
        (Match.parse("ct_mark=0x2/0x2"), dict(ct_mark=(2, 2))),
        (Match.parse("conj_id=7"), dict(conj_id=7)),
    ]
    for ours, kwargs in cases:
        buf = bytearray()
        parser.OFPMatch(**kwargs).serialize(buf, 0)
        theirs = bytes(buf)
        # Same TLVs; os-ken sorts them by field code, OVS (and we) by
        # dependency order, so compare bytes exactly only for one field.
        assert sorted(_tlvs(ours.encode())) == sorted(_tlvs(theirs)), ours
        if len(kwargs) == 1:
            assert ours.encode() == theirs


def _tlvs(data: bytes) -> list[bytes]:
    length = int.from_bytes(data[2:4], "big")
    out = []
    ofs = 4
    while ofs < length:
        n = 4 + data[ofs + 3]
        out.append(data[ofs:ofs + n])
        ofs += n
    return out


@lru_cache(maxsize=1)
def _have_ofctl() -> bool:
    try:
        subprocess.run(["ovs-ofctl", "--version"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def _flow_mod(match: Match) -> bytes:
    """Minimal OF1.5 OFPT_FLOW_MOD (add, table 0, priority 100, no actions)."""
    body = (bytes(8) + bytes(8) + b"\x00\x00" + (0).to_bytes(2, "big")
            + (0).to_bytes(2, "big") + (100).to_bytes(2, "big")
            + (0xFFFFFFFF).to_bytes(4, "big") + (0xFFFFFFFF).to_bytes(4, "big")
            + (0xFFFFFFFF).to_bytes(4, "big") + b"\x00\x00" + b"\x00\x00")
    payload = body + match.encode()
    return bytes([6, 14]) + (8 + len(payload)).to_bytes(2, "big") + (1).to_bytes(4, "big") + payload


def test_ofp_print_agrees_on_sample() -> None:
    """OVS's own decoder (ovs-ofctl ofp-print) prints our encoding as to_string()."""
    if not _have_ofctl():
        pytest.fail("ovs-ofctl is required (OVS 3.1 is part of the environment)")
    sample = []
    for _topo, ports, texts in corpus():
        step = max(1, len(texts) // 60)
        sample += [Match.parse(t, ports) for t in texts[::step]]
    for m in sample:
        out = subprocess.run(["ovs-ofctl", "ofp-print", _flow_mod(m).hex()],
                             capture_output=True, text=True, check=True).stdout
        printed = re.search(r"priority=100(?:,(\S*))? actions", out)
        assert printed is not None, out
        assert (printed.group(1) or "") == m.to_string(), out


@pytest.mark.parametrize(
    "text,canonical",
    [
        ("ct_state=trk|est", "ct_state=est|trk"),
        ("in_port=LOCAL,ip", "ip,in_port=LOCAL"),
        ("tcp,tp_src=80", "tcp,tp_src=80"),
        ("udp,tp_dst=53", "udp,tp_dst=53"),
        ("icmp6,icmp_type=135", "icmp6,icmp_type=135"),
        ("arp,nw_src=10.0.0.1", "arp,arp_spa=10.0.0.1"),
        ("dl_type=0x0800,nw_proto=6", "tcp"),
        ("nw_proto=6,dl_type=0x0800,tp_dst=22", "tcp,tp_dst=22"),
        ("reg0=5", "reg0=0x5"),
        ("xxreg0=0x1/0x1", "reg3=0x1/0x1"),
        ("tun_flags=+oam", "tun_flags=+oam"),
        ("tun_flags=-oam", "tun_flags=-oam"),
        ("ipv6,ipv6_label=0x12345", "ipv6,ipv6_label=0x12345"),
        ("ip,nw_src=10.0.0.0/255.255.255.0", "ip,nw_src=10.0.0.0/24"),
        ("metadata=0x1/0xffffffffffffffff", "metadata=0x1"),
    ],
)
def test_parse_variants(text: str, canonical: str) -> None:
    m = Match.parse(text)
    assert m.to_string() == canonical
    assert Match.parse(canonical) == m


def test_prereq_errors() -> None:
    assert Match.parse("tcp,tp_dst=80").prereq_errors() == []
    assert Match([("tcp_dst", 80, None)]).prereq_errors() == ["tcp_dst"]
    assert Match.parse("ip,ct_nw_proto=6").prereq_errors() == ["ct_nw_proto"]
    assert Match.parse("ip,ct_state=+est+trk,ct_nw_proto=6").prereq_errors() == []
    assert Match.parse("ip,ct_state=+trk-inv,ct_nw_proto=6").prereq_errors() == []
    nd = "icmp6,icmp_type=135,icmp_code=0,nd_target=::1,"
    assert Match.parse(nd + "nd_sll=00:00:00:00:00:01").prereq_errors() == []
    assert Match.parse(nd + "nd_tll=00:00:00:00:00:01").prereq_errors() == ["nd_tll"]
    assert Match([("arp_op", 1, None)]).prereq_errors() == ["arp_op"]
    assert Match.parse("dl_vlan=5,dl_vlan_pcp=3").prereq_errors() == []


def test_prereq_later_fragments_have_no_ports() -> None:
    assert Match.parse("tcp,nw_frag=first,tp_dst=80").prereq_errors() == []
    m = Match([("eth_type", 0x800, None), ("nw_proto", 17, None), ("ip_frag", 3, None),
               ("udp_dst", 53, None)])
    assert m.prereq_errors() == ["udp_dst"]
    assert Match.parse("icmp,nw_frag=later,icmp_type=8").prereq_errors() == []


def test_get_wide_registers() -> None:
    m = Match([("xxreg0", 0xAB << 64, 0xFF << 64), ("reg3", 1, None)])
    assert m.get("xxreg0") == ((0xAB << 64) | 1, (0xFF << 64) | 0xFFFFFFFF)
    assert m.get("xreg1") == (1, 0xFFFFFFFF)
    assert m.get("xreg0") == (0xAB, 0xFF)
    assert m.get("xxreg1") is None
    assert Match([("xreg2", 5, None)]).get("xreg2") == (5, None)


def test_random_matches_roundtrip() -> None:
    """Random prerequisite-satisfying matches over every field family (the
    same generator the vswitchd differential test uses): the text parses back
    to itself and the wire encoding decodes to the same Match."""
    from integration.test_match_vswitchd import random_matches

    matches = random_matches(3000, seed=7)
    for m in matches:
        text = m.to_string()
        assert Match.parse(text).to_string() == text
        assert Match.decode(m.encode()) == m, text
        assert m.prereq_errors() == []


def test_field_bits_only_masks() -> None:
    """OVS (mf_set) makes a 20-bit ipv6_label mask exact but keeps a 12-bit
    tcp_flags mask apart from an exact match (checked against vswitchd)."""
    label = Match([("eth_type", 0x86DD, None), ("ipv6_label", 5, 0xFFFFF)])
    assert label.to_string() == "ipv6,ipv6_label=0x00005"
    assert label == Match([("eth_type", 0x86DD, None), ("ipv6_label", 5, None)])
    flags = Match([("eth_type", 0x800, None), ("nw_proto", 6, None), ("tcp_flags", 2, 0xFFF)])
    assert flags.to_string() == "tcp,tcp_flags=syn"
    assert flags.get("tcp_flags") == (2, 0xFFF)
    assert Match.decode(flags.encode()) == flags
    assert Match([("ct_state", 0x22, 0xFF)]).get("ct_state") == (0x22, None)
    assert Match([("eth_type", 0x800, None), ("ip_frag", 1, 3)]).get("ip_frag") == (1, None)


def test_tunnel_metadata_format() -> None:
    # OVS omits a mask that is all ones over the bytes value and mask need.
    assert Match([("tun_metadata0", 5, 0xFF)]).to_string() == "tun_metadata0=0x5"
    assert Match([("tun_metadata0", 5, 0xFFFF)]).to_string() == "tun_metadata0=0x5"
    assert Match([("tun_metadata0", 0x500, 0xFF00)]).to_string() == \
        "tun_metadata0=0x500/0xff00"
    assert Match([("tun_metadata0", 5, None)]).to_string() == "tun_metadata0=0x5"
    assert Match([("tun_metadata0", 5, 0xFF)]) != Match([("tun_metadata0", 5, None)])
    assert Match([("tun_metadata0", 5, 0xFF)]).encode().hex() == \
        "000100100001510800000005000000ff"
