"""put_nd_ra_opts: the RA body from userdata replaces the RS, payload
length and ICMPv6 checksum over the RS's addresses."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from os_ken.lib.packet import ethernet, icmpv6, ipv6, packet

from controller.pinctrl.dhcp6 import put_nd_ra_opts
from tests.pinctrl.l7_helpers import (
    CLIENT_MAC, after_result_field, controller_userdata, frame_of, inet_csum)

ACTION = ("reg0[5] = put_nd_ra_opts(addr_mode = \"slaac\", slla = 00:00:00:00:00:01, "
          "prefix = aef0::/64, mtu = 1450);")
BODY_BY_HAND = (bytes.fromhex("8600 0000 ff00 ffff 00000000 00000000".replace(" ", ""))
                + bytes.fromhex("0101 000000000001")                          # SLLA
                + bytes.fromhex("0304 40c0 ffffffff ffffffff 00000000".replace(" ", ""))
                + bytes.fromhex("aef00000000000000000000000000000")           # prefix
                + bytes.fromhex("0501 0000 000005aa".replace(" ", "")))        # MTU
SRC = "fe80::5254:ff:fe00:1"


def rs_frame(icmp_type: int = 133, code: int = 0) -> bytes:
    return frame_of(ethernet.ethernet(dst="33:33:00:00:00:02", src=CLIENT_MAC, ethertype=0x86DD),
                    ipv6.ipv6(src=SRC, dst="ff02::2", nxt=58, hop_limit=255),
                    icmpv6.icmpv6(type_=icmp_type, code=code,
                                  data=icmpv6.nd_router_solicit(
                                      option=icmpv6.nd_option_sla(hw_src=CLIENT_MAC))))


def test_encoder_builds_the_body_by_hand() -> None:
    assert after_result_field(controller_userdata(ACTION)) == BODY_BY_HAND


def test_ra_byte_exact() -> None:
    rs = rs_frame()
    ans = put_nd_ra_opts(rs, BODY_BY_HAND)
    ip = bytearray(rs[14:54])
    ip[4:6] = struct.pack("!H", len(BODY_BY_HAND))
    pseudo = bytes(ip[8:40]) + struct.pack("!IxxxB", len(BODY_BY_HAND), 58)
    csum = inet_csum(pseudo + BODY_BY_HAND)
    want = rs[:14] + bytes(ip) + BODY_BY_HAND[:2] + struct.pack("!H", csum) + BODY_BY_HAND[4:]
    assert ans.frame == want and ans.logs == ()


def test_ra_parses_with_os_ken() -> None:
    ans = put_nd_ra_opts(rs_frame(), BODY_BY_HAND)
    assert ans.frame is not None
    pkt = packet.Packet(ans.frame)
    ra = pkt.get_protocol(icmpv6.icmpv6)
    ip = pkt.get_protocol(ipv6.ipv6)
    assert ip.payload_length == len(BODY_BY_HAND) and ip.hop_limit == 255
    assert ra.type_ == 134 and isinstance(ra.data, icmpv6.nd_router_advert)
    assert ra.data.rou_l == 0xFFFF and ra.data.ch_l == 255
    assert ra.data.options[0].hw_src == "00:00:00:00:00:01"
    # os_ken stops after the first option; walk the rest of the TLVs by hand.
    opts, kinds = ans.frame[54 + 16:], []
    while opts:
        kinds.append(opts[0])
        opts = opts[opts[1] * 8:]
    assert kinds == [1, 3, 5]


@pytest.mark.parametrize("icmp_type, code", [(134, 0), (133, 1), (128, 0)])
def test_non_rs_gets_no_answer(icmp_type: int, code: int) -> None:
    ans = put_nd_ra_opts(rs_frame(icmp_type, code), BODY_BY_HAND)
    assert ans.frame is None
    assert ans.logs == (("warn", "put_nd_ra action on invalid or unsupported packet"),)


def test_empty_body() -> None:
    assert put_nd_ra_opts(rs_frame(), b"").logs == (
        ("warn", "IPv6 ND RA options not present in the userdata"),)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.binary(max_size=64))
def test_fuzz_never_raises(frame: bytes, body: bytes) -> None:
    ans = put_nd_ra_opts(frame, body)
    if ans.frame is not None:
        assert len(ans.frame) >= len(body)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=5))
def test_tiny_bodies(body: bytes) -> None:
    ans = put_nd_ra_opts(rs_frame(), body)
    assert ans.frame is not None and len(ans.frame) == 54 + len(body)
