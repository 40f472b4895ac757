"""Differential test of ofctrl.match against a real ovs-vswitchd (OVS 3.1).

A throw-away ovsdb-server + ovs-vswitchd (dummy datapath, private temp dir)
gets one OF1.5 flow_mod per distinct match -- our ``Match.encode()`` bytes --
over ``unix:<dir>/br0.mgmt``; then ``ovs-ofctl -O OpenFlow15 dump-flows``
must print exactly ``Match.to_string()`` for every flow, and no flow_mod may
be rejected.  The matches are the distinct ones the real ovn-controller
installed (reference dumps) plus hand-written edge cases.
"""

from __future__ import annotations

import random
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from integration.flow_corpus import REF, distinct_matches, port_numbers
from integration.ofswitch import (
    OFPMP_FLOW_DESC, OFPT_MULTIPART_REPLY, OFPT_MULTIPART_REQUEST, RawOpenFlow, Vswitchd,
    flow_mod, of_msg, send_flow_mods)
from ofctrl.match import Match

pytestmark = pytest.mark.integration

EDGE_CASES = [
    "vlan_tci=0x0000/0x1000", "dl_vlan=0", "dl_vlan=5,dl_vlan_pcp=3",
    "vlan_tci=0x1000/0x1000", "ct_state=+new-est+trk", "ct_state=est|trk",
    "ct_state=-trk", "ct_mark=0x2/0x2", "ct_zone=5", "ct_label=0x1/0x1",
    "ct_label=0x8000000000000000000000000000000/0x8000000000000000000000000000000",
    "ip,nw_frag=later", "ip,nw_frag=first", "ip,nw_frag=no", "ip,nw_frag=yes",
    "ipv6,nw_frag=not_later", "tcp,tcp_flags=+syn-ack", "tcp6,tcp_flags=syn|ack",
    "ip,nw_tos=32,nw_ecn=1", "ipv6,ipv6_label=0x12345", "ip,nw_proto=89",
    # ct_* tuple fields need a valid conntrack state (OVS MFP_CT_VALID).
    "ip,ct_state=+est+trk,ct_nw_proto=6,ct_tp_src=80",
    "ipv6,ct_state=+trk-inv,ct_ipv6_dst=fe80::1,ct_nw_proto=17",
    "ip,ct_state=+new+trk,ct_nw_src=10.0.0.0/8,ct_nw_proto=6,ct_tp_dst=0x400/0xfc00",
    "sctp,tp_src=80", "sctp6,tp_dst=1000", "udp6,tp_src=0x400/0xfc00",
    "rarp,arp_spa=10.0.0.1", "arp,arp_op=2,arp_sha=0a:00:00:00:00:01,arp_tha=00:00:00:00:00:00",
    "tun_id=0x5", "tun_id=0x5/0xff", "pkt_mark=0x1/0x1", "conj_id=7,ip",
    "reg0=0x1/0x1,reg1=0x2,reg2=0,reg3=0xffffffff", "reg15=0x8000/0x8000",
    "metadata=0x4/0xff", "in_port=65534", "dl_src=01:00:00:00:00:00/01:00:00:00:00:00",
    "dl_type=0x88cc", "dl_dst=01:80:c2:00:00:00/ff:ff:ff:ff:ff:f0,dl_type=0x88cc",
    "ipv6,ipv6_src=fe80::/64,ipv6_dst=::ffff:10.0.0.1", "ip,nw_src=10.0.0.1/255.0.255.0",
    "icmp,icmp_type=3,icmp_code=4", "icmp6,icmp_type=136,icmp_code=0,nd_target=fe80::1,"
    "nd_tll=0a:00:00:00:00:01",
]
# Field-bits-only masks, as OVN's mf_mask_subfield() makes them (OVS prints
# the ipv6_label one as exact, the tcp_flags one as "syn|ack" but keeps it).
EDGE_ITEMS: list[list[tuple[str, int, int | None]]] = [
    [("eth_type", 0x86DD, None), ("ipv6_label", 5, 0xFFFFF)],
    [("eth_type", 0x0800, None), ("nw_proto", 6, None), ("tcp_flags", 0x12, 0xFFF)],
    [("eth_type", 0x0800, None), ("ip_frag", 1, 3)],
    [("ct_state", 0x22, 0xFF)],
]


# Matches OVS must refuse with OFPBMC_BAD_PREREQ (Match.prereq_errors() agrees).
INVALID: list[list[tuple[str, int, int | None]]] = [
    [("tcp_dst", 80, None)],
    [("eth_type", 0x0800, None), ("udp_src", 53, None)],
    [("eth_type", 0x86DD, None), ("ip_src", 1, None)],
    [("eth_type", 0x0800, None), ("ct_nw_proto", 6, None)],
    [("eth_type", 0x86DD, None), ("nw_proto", 58, None), ("icmpv6_type", 135, None),
     ("icmpv6_code", 0, None), ("nd_tll", 1, None)],
    [("arp_op", 1, None)],
    [("eth_type", 0x0800, None), ("nw_proto", 6, None), ("icmp_type", 8, None)],
    [("eth_type", 0x0800, None), ("nw_proto", 6, None), ("ip_frag", 3, None),
     ("tcp_dst", 80, None)],
]


def random_matches(n: int, seed: int = 20230301) -> list[Match]:
    """``n`` random matches that satisfy OVS prerequisites, over every field
    family OVN uses (deterministic for a given seed)."""
    rng = random.Random(seed)

    def bits(width: int) -> int:
        return rng.getrandbits(width)

    def mask(width: int) -> int | None:
        kind = rng.randrange(4)
        if kind == 0:
            return None
        if kind == 1:                               # CIDR-like prefix
            plen = rng.randrange(1, width)
            return ((1 << plen) - 1) << (width - plen)
        return bits(width) or 1

    out: list[Match] = []
    while len(out) < n:
        items: list[tuple[str, int, int | None]] = []

        def add(name: str, width: int, maskable: bool = True) -> None:
            items.append((name, bits(width), mask(width) if maskable else None))

        proto = rng.choice(["none", "ip", "ipv6", "tcp", "udp", "sctp", "icmp", "tcp6",
                            "udp6", "sctp6", "icmp6", "nd", "arp", "rarp", "lldp"])
        for i in rng.sample(range(16), rng.randrange(4)):
            add("reg%d" % i, 32)
        if rng.random() < 0.3:
            add("xxreg%d" % rng.randrange(4), 128)
        if rng.random() < 0.5:
            add("metadata", 64)
        if rng.random() < 0.2:
            items.append(("in_port", rng.randrange(1, 0xFF00), None))
        if rng.random() < 0.2:
            add("eth_src", 48)
        if rng.random() < 0.2:
            add("eth_dst", 48)
        vlan = rng.randrange(6)
        if vlan == 1:
            items.append(("vlan_tci", 0, 0x1000))
        elif vlan == 2:
            items.append(("dl_vlan", rng.randrange(4096), None))
        elif vlan == 3:
            items.append(("vlan_tci", 0x1000 | bits(12), 0x1FFF))
        if rng.random() < 0.15:
            add("pkt_mark", 32)
        if rng.random() < 0.1:
            add("tun_id", 64)
        if rng.random() < 0.1:
            add("tun_src", 32)
        if rng.random() < 0.05:
            add("tun_ipv6_dst", 128)
        if rng.random() < 0.05:
            items.append(("tun_flags", bits(1), None))
        if rng.random() < 0.1:
            items.append(("conj_id", bits(32), None))
        ct_valid = False
        if rng.random() < 0.3:
            cv, cm = bits(8), bits(8) | 0x20
            items.append(("ct_state", cv, cm))
            ct_valid = bool(cv & cm & 0xCF) or bool(cv & 0x20 and cm & 0x10 and not cv & 0x10)
        if rng.random() < 0.2:
            add("ct_mark", 32)
        if rng.random() < 0.2:
            add("ct_label", 128)
        if rng.random() < 0.1:
            items.append(("ct_zone", bits(16), None))
        ip4 = proto in ("ip", "tcp", "udp", "sctp", "icmp")
        ip6 = proto in ("ipv6", "tcp6", "udp6", "sctp6", "icmp6", "nd")
        if ip4 or ip6:
            items.append(("eth_type", 0x0800 if ip4 else 0x86DD, None))
            l4 = {"tcp": 6, "tcp6": 6, "udp": 17, "udp6": 17, "sctp": 132, "sctp6": 132,
                  "icmp": 1, "icmp6": 58, "nd": 58}.get(proto)
            if l4 is None and rng.random() < 0.3:
                l4 = rng.choice([2, 47, 89, 112])
            if l4 is not None:
                items.append(("nw_proto", l4, None))
            if ip4:
                for name in ("ip_src", "ip_dst"):
                    if rng.random() < 0.5:
                        add(name, 32)
            else:
                for name in ("ipv6_src", "ipv6_dst"):
                    if rng.random() < 0.5:
                        add(name, 128)
                if rng.random() < 0.2:
                    add("ipv6_label", 20)
            if rng.random() < 0.2:
                items.append(("ip_frag", *rng.choice([(0, 3), (1, 3), (3, 3), (0, 1), (1, 1),
                                                     (0, 2), (2, 2)])))
            if rng.random() < 0.2:
                items.append(("nw_ttl", bits(8), None))
            if rng.random() < 0.1:
                items.append(("nw_tos", bits(6) << 2, None))
            if rng.random() < 0.1:
                items.append(("nw_ecn", bits(2), None))
            later = any(n == "ip_frag" and v & 2 for n, v, _ in items)
            if l4 in (6, 17, 132) and not later:
                pre = {6: "tcp", 17: "udp", 132: "sctp"}[l4]
                for suffix in ("_src", "_dst"):
                    if rng.random() < 0.5:
                        add(pre + suffix, 16)
                if l4 == 6 and rng.random() < 0.3:
                    add("tcp_flags", 12)
            elif l4 == 1:
                if rng.random() < 0.7:
                    items.append(("icmp_type", bits(8), None))
                if rng.random() < 0.5:
                    items.append(("icmp_code", bits(8), None))
            elif l4 == 58:
                if proto == "nd":
                    icmp_type = rng.choice([135, 136])
                    items += [("icmpv6_type", icmp_type, None), ("icmpv6_code", 0, None)]
                    if rng.random() < 0.7:
                        add("nd_target", 128)
                    if rng.random() < 0.5:
                        add("nd_sll" if icmp_type == 135 else "nd_tll", 48)
                else:
                    if rng.random() < 0.7:
                        items.append(("icmpv6_type", bits(8), None))
                    if rng.random() < 0.5:
                        items.append(("icmpv6_code", bits(8), None))
            if ct_valid and rng.random() < 0.5:
                if ip4:
                    add("ct_nw_src", 32)
                    add("ct_nw_dst", 32)
                else:
                    add("ct_ipv6_src", 128)
                    add("ct_ipv6_dst", 128)
                items.append(("ct_nw_proto", rng.choice([6, 17, 132]), None))
                add("ct_tp_src", 16)
                add("ct_tp_dst", 16)
        elif proto in ("arp", "rarp"):
            items.append(("eth_type", 0x0806 if proto == "arp" else 0x8035, None))
            if rng.random() < 0.5:
                items.append(("arp_op", rng.randrange(1, 5), None))
            for name, width in (("arp_spa", 32), ("arp_tpa", 32), ("arp_sha", 48),
                                ("arp_tha", 48)):
                if rng.random() < 0.4:
                    add(name, width)
        elif proto == "lldp":
            items.append(("eth_type", 0x88CC, None))
        match = Match(items)
        assert not match.prereq_errors(), (match, match.prereq_errors())
        out.append(match)
    return out


def _sample() -> list[Match]:
    matches: list[Match] = []
    rich_ports = port_numbers("rich")
    matches += [Match.parse(t, rich_ports) for t in distinct_matches(REF / "rich/flows.raw.txt")]
    seed = distinct_matches(REF / "seed-500/flows.raw.txt.gz")
    seed_ports = port_numbers("seed-500")
    matches += [Match.parse(t, seed_ports) for t in seed[:: max(1, len(seed) // 400)]]
    matches += [Match.parse(t) for t in EDGE_CASES]
    matches += [Match(items) for items in EDGE_ITEMS]
    return list(dict.fromkeys(matches))


@pytest.fixture(scope="module")
def vswitchd() -> Iterator[Vswitchd]:
    if shutil.which("ovs-vswitchd") is None:
        pytest.fail("ovs-vswitchd is required for integration tests")
    with Vswitchd(bridge="br0", prefix="match-vswitchd-", timeout=60) as daemons:
        yield daemons


def _install(mgmt: Path, matches: list[Match], cookie_base: int = 0,
             priority: int = 100) -> dict[int, bytes]:
    """Send every match as a flow_mod (cookie = cookie_base + index + 1);
    return the OFPT_ERROR bodies by xid (100 + index)."""
    return send_flow_mods(mgmt, (flow_mod(100 + i, cookie_base + i + 1, priority, m.encode())
                                 for i, m in enumerate(matches)))


def _dump(vswitchd: Vswitchd) -> dict[int, str]:
    """Match text of every flow on br0 by cookie, as ovs-ofctl prints it."""
    dump = vswitchd.ofctl("--no-stats", "dump-flows", vswitchd.target)
    printed: dict[int, str] = {}
    for line in dump.splitlines():
        m = re.match(r"\s*cookie=0x([0-9a-f]+), (?:table=0, )?priority=100(?:,(\S*))? actions=",
                     line)
        if m:
            printed[int(m.group(1), 16)] = m.group(2) or ""
    return printed


def _flow_desc_matches(mgmt: Path) -> dict[int, bytes]:
    """Raw ofp_match bytes (padding included) of every flow, by cookie, as
    OVS itself encodes them in an OF1.5 OFPMP_FLOW_DESC reply."""
    request = (OFPMP_FLOW_DESC.to_bytes(2, "big") + bytes(6)
               + b"\xff" + bytes(3) + (0xFFFFFFFF).to_bytes(4, "big") * 2 + bytes(4)
               + bytes(16) + b"\x00\x01\x00\x04" + bytes(4))
    out: dict[int, bytes] = {}
    with RawOpenFlow(mgmt) as conn:
        conn.send(of_msg(OFPT_MULTIPART_REQUEST, 7, request))
        while True:
            mtype, xid, body = conn.recv()
            assert mtype == OFPT_MULTIPART_REPLY and xid == 7, (mtype, body[:16].hex())
            more = int.from_bytes(body[2:4], "big") & 1
            ofs = 8
            while ofs < len(body):
                length = int.from_bytes(body[ofs:ofs + 2], "big")
                cookie = int.from_bytes(body[ofs + 16:ofs + 24], "big")
                mlen = int.from_bytes(body[ofs + 26:ofs + 28], "big")
                out[cookie] = body[ofs + 24:ofs + 24 + ((mlen + 7) & ~7)]
                ofs += length
            if not more:
                return out


def test_vswitchd_prints_our_matches(vswitchd: Vswitchd) -> None:
    matches = _sample()
    assert len(matches) > 500
    mgmt = vswitchd.mgmt
    errors = _install(mgmt, matches)
    rejected = {matches[xid - 100].to_string(): body.hex() for xid, body in errors.items()}
    assert rejected == {}
    printed = _dump(vswitchd)
    mismatches = [(m.to_string(), printed.get(i + 1)) for i, m in enumerate(matches)
                  if printed.get(i + 1) != m.to_string()]
    assert mismatches == []
    assert [m.to_string() for m in matches if m.prereq_errors()] == []
    # OVS's own OF1.5 encoding of each installed match (flow stats reply) is
    # byte-identical to ours, and decodes to the same Match.
    wire = _flow_desc_matches(mgmt)
    differ = [(m.to_string(), wire.get(i + 1, b"").hex(), m.encode().hex())
              for i, m in enumerate(matches) if wire.get(i + 1) != m.encode()]
    assert differ == []
    assert all(Match.decode(wire[i + 1]) == m for i, m in enumerate(matches))


def test_vswitchd_prints_random_matches(vswitchd: Vswitchd) -> None:
    """Random prerequisite-satisfying matches over every field family: OVS
    accepts them and prints exactly to_string(); the text parses back."""
    matches = list(dict.fromkeys(random_matches(1500)))
    for m in matches:
        # Text is not injective ("nw_frag=no" is both mask 1 and mask 3, as
        # in OVS), so check that parsing the text reproduces the text.
        assert Match.parse(m.to_string()).to_string() == m.to_string()
    # Fresh cookies; the first test's flows stay but have other cookies.
    base = 1 << 32
    errors = _install(vswitchd.mgmt, matches, base)
    rejected = {matches[xid - 100].to_string(): body.hex() for xid, body in errors.items()}
    assert rejected == {}
    printed = _dump(vswitchd)
    mismatches = [(m.to_string(), printed.get(base + i + 1)) for i, m in enumerate(matches)
                  if printed.get(base + i + 1) != m.to_string()]
    assert mismatches == []
    wire = _flow_desc_matches(vswitchd.mgmt)
    differ = [(m.to_string(), wire.get(base + i + 1, b"").hex(), m.encode().hex())
              for i, m in enumerate(matches) if wire.get(base + i + 1) != m.encode()]
    assert differ == []


def test_vswitchd_tunnel_metadata(vswitchd: Vswitchd) -> None:
    """tun_metadata0 mapped to a 4-byte Geneve option, as OVN maps it."""
    vswitchd.ofctl("add-tlv-map", vswitchd.target,
                   "{class=0x102,type=0x80,len=4}->tun_metadata0")
    matches = [Match([("tun_metadata0", 0x12345, None)]),
               Match([("tun_metadata0", 0x5, 0xFF), ("reg14", 1, None)]),
               Match([("tun_metadata0", 0x500, 0xFF00), ("reg14", 2, None)]),
               Match([("tun_metadata0", 0x5, 0xFFFF), ("reg14", 3, None)]),
               Match([("tun_metadata0", 0x12345670, 0xFFFFFFF0)]),
               Match([("tun_metadata0", 0x80000000, 0x80000000), ("metadata", 3, None)])]
    base = 1 << 48
    assert _install(vswitchd.mgmt, matches, base, priority=300) == {}
    printed = {}
    dump = vswitchd.ofctl("--no-stats", "dump-flows", vswitchd.target)
    for line in dump.splitlines():
        m = re.match(r"\s*cookie=0x([0-9a-f]+), priority=300,(\S*) actions=", line)
        if m:
            printed[int(m.group(1), 16) - base] = m.group(2)
    assert printed == {i + 1: m.to_string() for i, m in enumerate(matches)}
    wire = _flow_desc_matches(vswitchd.mgmt)
    assert [wire[base + i + 1] for i in range(len(matches))] == [m.encode() for m in matches]


def test_vswitchd_rejects_what_prereq_errors_flags(vswitchd: Vswitchd) -> None:
    matches = [Match(items) for items in INVALID]
    assert all(m.prereq_errors() for m in matches)
    errors = _install(vswitchd.mgmt, matches)
    assert sorted(errors) == [100 + i for i in range(len(matches))]
    for body in errors.values():
        # ofp_error_msg: type OFPET_BAD_MATCH (4), code OFPBMC_BAD_PREREQ (9)
        assert body[:4] == b"\x00\x04\x00\x09", body.hex()


def test_vswitchd_rule_identity_follows_match_equality(vswitchd: Vswitchd) -> None:
    """Two flow_mods land in one OVS rule exactly when their Matches are equal
    (20-bit ipv6_label mask == exact; 12-bit tcp_flags mask != exact)."""
    tcp: list[tuple[str, int, int | None]] = [("eth_type", 0x0800, None), ("nw_proto", 6, None)]
    ip6: list[tuple[str, int, int | None]] = [("eth_type", 0x86DD, None)]
    pairs = [
        (Match(tcp + [("tcp_flags", 2, 0xFFF)]), Match(tcp + [("tcp_flags", 2, None)])),
        (Match(ip6 + [("ipv6_label", 5, 0xFFFFF)]), Match(ip6 + [("ipv6_label", 5, None)])),
        (Match([("ct_state", 0x22, 0xFF)]), Match([("ct_state", 0x22, None)])),
        (Match([("xxreg0", 5, 0xFFFFFFFF)]), Match([("reg3", 5, None)])),
        (Match([("reg2", 5, None)]), Match([("reg2", 5, 0xFFFF)])),
    ]
    flat = [m for pair in pairs for m in pair]
    assert _install(vswitchd.mgmt, flat, 1 << 40, priority=200) == {}
    dump = vswitchd.ofctl("--no-stats", "dump-flows", vswitchd.target)
    cookies = {int(c, 16) - (1 << 40) for c in
               re.findall(r"cookie=0x([0-9a-f]+), priority=200[, ]", dump)}
    for i, (a, b) in enumerate(pairs):
        first, second = 2 * i + 1, 2 * i + 2
        if a == b:      # the second flow_mod replaced the first (same rule)
            assert first not in cookies and second in cookies, (a, b)
        else:
            assert first in cookies and second in cookies, (a, b)
