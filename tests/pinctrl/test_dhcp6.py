"""put_dhcpv6_opts answers: byte-exact replies derived by hand, re-parsed
with os_ken, the type mapping and the no-answer paths."""

from __future__ import annotations

import ipaddress
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from os_ken.lib.packet import dhcp6, ipv6, packet, udp

from controller.pinctrl.dhcp6 import put_dhcpv6_opts
from tests.pinctrl.l7_helpers import (
    after_result_field, controller_userdata, inet_csum, udp6_frame)

CLIENT_LLA = "fe80::5254:ff:fe00:1"
ACTION = ("reg0[3] = put_dhcpv6_opts(ia_addr = aef0::4, dns_server = {ae70::1, ae70::2}, "
          "domain_search = \"ovn.org\", server_id = 00:00:00:10:00:01);")
IA_ADDR = ipaddress.IPv6Address("aef0::4").packed
DNS1, DNS2 = ipaddress.IPv6Address("ae70::1").packed, ipaddress.IPv6Address("ae70::2").packed
USERDATA_BY_HAND = (struct.pack("!HH", 5, 16) + IA_ADDR
                    + struct.pack("!HH", 23, 32) + DNS1 + DNS2
                    + struct.pack("!HH", 24, 7) + b"ovn.org"
                    + struct.pack("!HH", 2, 6) + bytes.fromhex("000000100001"))
CLIENT_ID = struct.pack("!HHHH", 1, 10, 3, 1) + bytes.fromhex("525400000001")
IAID = b"\x0a\x0b\x0c\x0d"
IA_NA_REQ = struct.pack("!HH", 3, 12) + IAID + bytes(8)


def request(msg_type: int, *opts: bytes, xid: bytes = b"\x12\x34\x56") -> bytes:
    return udp6_frame(bytes((msg_type,)) + xid + b"".join(opts),
                      CLIENT_LLA, "ff02::1:2", 546, 547)


def expected_reply(req: bytes, out_type: int, body: bytes) -> bytes:
    """Request L2/L3 + UDP header + type + xid + client id + ``body``."""
    l3, l4 = 14, 54
    msg = bytes((out_type,)) + req[l4 + 9:l4 + 12] + CLIENT_ID + body
    udp_len = 8 + len(msg)
    ip = bytearray(req[l3:l4])
    ip[4:6] = struct.pack("!H", udp_len)
    pseudo = bytes(ip[8:40]) + struct.pack("!IxxxB", udp_len, 17)
    seg = req[l4:l4 + 4] + struct.pack("!HH", udp_len, 0) + msg
    csum = inet_csum(pseudo + seg) or 0xFFFF
    return req[:l3] + bytes(ip) + seg[:6] + struct.pack("!H", csum) + seg[8:]


IA_NA_REPLY = (struct.pack("!HH", 3, 40) + IAID + b"\xff" * 8
               + struct.pack("!HH", 5, 24) + IA_ADDR + b"\xff" * 8)
REST_REPLY = (struct.pack("!HH", 23, 32) + DNS1 + DNS2
              + struct.pack("!HHB", 24, 9, 7) + b"ovn.org\x00"
              + struct.pack("!HHHH", 2, 10, 3, 1) + bytes.fromhex("000000100001"))


def test_encoder_writes_the_options_by_hand() -> None:
    assert after_result_field(controller_userdata(ACTION)) == USERDATA_BY_HAND


@pytest.mark.parametrize("in_type, out_type", [(1, 2), (3, 7), (4, 7), (9, 7)])
def test_stateful_answers(in_type: int, out_type: int) -> None:
    req = request(in_type, CLIENT_ID, IA_NA_REQ)
    ans = put_dhcpv6_opts(req, USERDATA_BY_HAND)
    assert ans.frame == expected_reply(req, out_type, IA_NA_REPLY + REST_REPLY)


def test_information_request_gets_no_ia_na() -> None:
    req = request(11, CLIENT_ID)
    ans = put_dhcpv6_opts(req, USERDATA_BY_HAND)
    assert ans.frame == expected_reply(req, 7, REST_REPLY)


def test_advertise_parses_with_os_ken() -> None:
    req = request(1, struct.pack("!HH", 8, 2) + b"\0\0", CLIENT_ID, IA_NA_REQ,
                  xid=b"\xab\xcd\xef")
    ans = put_dhcpv6_opts(req, USERDATA_BY_HAND)
    assert ans.frame is not None
    pkt = packet.Packet(ans.frame)
    ip = pkt.get_protocol(ipv6.ipv6)
    u = pkt.get_protocol(udp.udp)
    assert (ip.src, ip.dst, ip.payload_length) == (CLIENT_LLA, "ff02::1:2", len(ans.frame) - 54)
    assert (u.src_port, u.dst_port, u.total_length) == (546, 547, len(ans.frame) - 54)
    d, _, _ = dhcp6.dhcp6.parser(ans.frame[62:])
    assert d.msg_type == 2 and d.transaction_id == 0xABCDEF
    assert [o.code for o in d.options.option_list] == [1, 3, 23, 24, 2]
    # The elapsed-time option of the request is not echoed; the client id is.
    assert d.options.option_list[0].data == CLIENT_ID[4:]


def test_last_client_id_and_ia_na_win() -> None:
    other = struct.pack("!HHHH", 1, 10, 3, 1) + bytes.fromhex("525400000099")
    req = request(3, other, IA_NA_REQ, CLIENT_ID)
    ans = put_dhcpv6_opts(req, USERDATA_BY_HAND)
    assert ans.frame == expected_reply(req, 7, IA_NA_REPLY + REST_REPLY)


@pytest.mark.parametrize("msg_type", [5, 6, 8, 2, 7, 10, 12, 0, 255])
def test_renew_rebind_release_and_others_get_nothing(msg_type: int) -> None:
    ans = put_dhcpv6_opts(request(msg_type, CLIENT_ID, IA_NA_REQ), USERDATA_BY_HAND)
    assert ans == type(ans)(None)


def test_missing_client_id_or_ia_na() -> None:
    assert put_dhcpv6_opts(request(1, IA_NA_REQ), USERDATA_BY_HAND).logs == (
        ("warn", "DHCPv6 option - Client id not present in the DHCPv6 packet"),)
    assert put_dhcpv6_opts(request(1, CLIENT_ID), USERDATA_BY_HAND).logs == (
        ("warn", "DHCPv6 option - IA NA not present in the DHCPv6 packet"),)
    zero_iaid = struct.pack("!HH", 3, 12) + bytes(12)
    assert put_dhcpv6_opts(request(3, CLIENT_ID, zero_iaid), USERDATA_BY_HAND).frame is None


def test_bad_userdata() -> None:
    req = request(1, CLIENT_ID, IA_NA_REQ)
    assert put_dhcpv6_opts(req, b"").logs == (
        ("warn", "DHCPv6 options not present in the userdata"),)
    for bad in (struct.pack("!HH", 99, 0), struct.pack("!HH", 5, 4) + bytes(4),
                struct.pack("!HH", 23, 16) + bytes(8), b"\x00\x17\x00"):
        assert put_dhcpv6_opts(req, bad).logs == (("warn", "Invalid userdata"),)


def test_short_udp_length_bounds_the_option_walk() -> None:
    req = bytearray(request(1, CLIENT_ID, IA_NA_REQ))
    req[58:60] = struct.pack("!H", 8 + 4 + len(CLIENT_ID))     # IA_NA outside UDP length
    ans = put_dhcpv6_opts(bytes(req), USERDATA_BY_HAND)
    assert ans.frame is None
    assert ans.logs == (("warn", "DHCPv6 option - IA NA not present in the DHCPv6 packet"),)


def test_truncated_packet() -> None:
    req = request(1, CLIENT_ID, IA_NA_REQ)
    assert put_dhcpv6_opts(req[:54 + 4], USERDATA_BY_HAND).logs == (
        ("warn", "truncated dhcpv6 packet"),)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.binary(max_size=80))
def test_fuzz_random_bytes_never_raise(frame: bytes, opts: bytes) -> None:
    ans = put_dhcpv6_opts(frame, opts)
    assert ans.frame is None or isinstance(ans.frame, bytes)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 255), st.binary(max_size=64), st.integers(0, 80))
def test_fuzz_mangled_requests_never_raise(msg_type: int, tail: bytes, cut: int) -> None:
    req = request(msg_type, CLIENT_ID, IA_NA_REQ)
    frame = req[:max(0, len(req) - cut)] + tail
    ans = put_dhcpv6_opts(frame, USERDATA_BY_HAND)
    if ans.frame is not None:
        assert ans.frame[:14] == frame[:14]
