"""Hypothesis fuzz of controller/pinctrl/frames.py: random, truncated and
mutated frames never raise anything but FrameError, and what the builders
produce from random valid packets always carries valid checksums."""

from __future__ import annotations

import struct
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.pinctrl import frames as F
from controller.pinctrl.frames import FrameError
from tests.pinctrl.test_frames import (crc32c_bitwise, eth, ip4_header, ip6_header, ones_csum,
                                       sctp_frame, tcp4_frame, udp4_frame, udp6_frame)

BUILDERS: list[tuple[str, Callable[[bytes], bytes | None]]] = [
    ("arp_request", F.arp_request),
    ("nd_ns", F.nd_ns),
    ("nd_na", lambda f: F.nd_na(f, False)),
    ("nd_na_router", lambda f: F.nd_na(f, True)),
    ("icmp", lambda f: F.icmp_error(f, True)),
    ("icmp_error", lambda f: F.icmp_error(f, False)),
    ("icmp4_error", lambda f: F.icmp4_error(f, False)),
    ("icmp6_error", lambda f: F.icmp6_error(f, True)),
    ("tcp_reset", F.tcp_reset),
    ("sctp_abort", F.sctp_abort),
    ("reject", F.reject),
    ("frag4", lambda f: F.set_icmp4_frag_mtu(f, 1400)),
    ("frag6", lambda f: F.set_icmp6_frag_mtu(f, 1280)),
]

SEEDS = [
    tcp4_frame(), tcp4_frame(tci=5), udp4_frame(), udp6_frame(), udp6_frame(ext=bytes(8),
                                                                          first_nxt=0),
    sctp_frame(0, struct.pack("!BBHIIHHI", 1, 0, 20, 77, 1, 1, 1, 1)),
    sctp_frame(0, struct.pack("!BBHIIHHI", 1, 0, 20, 77, 1, 1, 1, 1), v6=True),
    F.icmp_error(udp4_frame(), False), F.icmp_error(udp6_frame(), False),
    F.nd_ns(udp6_frame()), F.arp_request(udp4_frame()),
]


def run_all(frame: bytes) -> None:
    try:
        F.parse(frame)
    except FrameError:
        pass
    for name, fn in BUILDERS:
        try:
            out = fn(frame)
        except FrameError:
            continue
        assert isinstance(out, bytes) or name == "reject" and out is None, name


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    run_all(data)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SEEDS), st.integers(min_value=0, max_value=300),
       st.lists(st.tuples(st.integers(min_value=0, max_value=299),
                          st.integers(min_value=0, max_value=255)), max_size=6))
def test_truncated_and_mutated(seed: bytes, cut: int, flips: list[tuple[int, int]]) -> None:
    f = bytearray(seed[:cut])
    for pos, val in flips:
        if pos < len(f):
            f[pos] = val
    run_all(bytes(f))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([0x0800, 0x86DD]),
       st.sampled_from([0, 1, 6, 17, 43, 44, 51, 58, 60, 132]),
       st.binary(max_size=80))
def test_any_protocol_behind_valid_ip_header(etype: int, proto: int, payload: bytes) -> None:
    if etype == 0x0800:
        frame = eth("02:00:00:00:00:02", "02:00:00:00:00:01", etype) + \
            ip4_header(20 + len(payload), 9, proto, "1.2.3.4", "5.6.7.8") + payload
    else:
        frame = eth("02:00:00:00:00:02", "02:00:00:00:00:01", etype) + \
            ip6_header(len(payload), proto, 9, "fd00::1", "fd00::2") + payload
    run_all(frame)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=0xFFFFFFFF), st.integers(min_value=0, max_value=0xFFFF),
       st.integers(min_value=0, max_value=0xFFFF), st.booleans())
def test_tcp_reset_checksums(seq: int, sport: int, dport: int, loopback: bool) -> None:
    out = F.tcp_reset(tcp4_frame(seq=seq, sport=sport, dport=dport), loopback)
    assert ones_csum(out[14:34]) == 0
    pseudo = out[26:34] + struct.pack("!BBH", 0, 6, 20)
    assert ones_csum(pseudo + out[34:]) == 0
    assert struct.unpack("!I", out[42:46])[0] == (seq + 1) & 0xFFFFFFFF


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=1600), st.booleans(), st.integers(min_value=68, max_value=0xFFFF))
def test_icmp_errors_and_frag_mtu_checksums(payload: bytes, v6: bool, mtu: int) -> None:
    if v6:
        f = udp6_frame(payload=payload)
        out = F.icmp_error(f, True)
        assert len(out) == min(len(f), 1218 + 14) + 48
        out = F.set_icmp6_frag_mtu(out, mtu)
        pseudo = out[22:54] + struct.pack("!IxxxB", len(out) - 54, 58)
        assert ones_csum(pseudo + out[54:]) == 0
    else:
        f = udp4_frame(payload=payload)
        out = F.icmp_error(f, True)
        assert len(out) == min(len(f) - 14, 534) + 42
        out = F.set_icmp4_frag_mtu(out, mtu)
        assert ones_csum(out[14:34]) == 0 and ones_csum(out[34:]) == 0
        assert struct.unpack("!H", out[40:42])[0] == mtu


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=0xFFFFFFFF), st.booleans())
def test_sctp_abort_crc(tag: int, v6: bool) -> None:
    out = F.sctp_abort(sctp_frame(0, struct.pack("!BBHIIHHI", 1, 0, 20, tag, 1, 1, 1, 1), v6))
    l4 = 54 if v6 else 34
    body = bytearray(out[l4:])
    crc = bytes(body[8:12])
    body[8:12] = bytes(4)
    assert crc == crc32c_bitwise(bytes(body)).to_bytes(4, "little")
    assert struct.unpack("!I", out[l4 + 4:l4 + 8])[0] == tag
