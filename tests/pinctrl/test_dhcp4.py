"""put_dhcp_opts (DHCPv4) answers: byte-exact replies derived by hand from
the 23.03.1 rules, replies re-parsed with os_ken, and the no-answer paths."""

from __future__ import annotations

import ipaddress
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from os_ken.lib.packet import dhcp, ipv4, packet, udp

from controller.pinctrl.dhcp import put_dhcp_opts
from tests.pinctrl.l7_helpers import (
    CLIENT_MAC, after_result_field, controller_userdata, inet_csum, udp4_frame)

OFFER_IP = "10.0.0.4"
OFFER = ipaddress.IPv4Address(OFFER_IP).packed
ACTION = ("reg0[3] = put_dhcp_opts(offerip = 10.0.0.4, router = 10.0.0.1, "
          "netmask = 255.255.255.0, dns_server = {8.8.8.8, 1.1.1.1}, "
          "domain_name = \"ovn.org\", lease_time = 3600, mtu = 1442, "
          "server_id = 10.0.0.1, classless_static_route = {30.0.0.0/24, 10.0.0.10, "
          "0.0.0.0/0, 10.0.0.1}, T1 = 1800, T2 = 3150);")
# The option TLVs the action must carry, written out by hand, in lflow order.
OPTS_BY_HAND = bytes.fromhex(
    "0304" "0a000001"                      # router
    "0104" "ffffff00"                      # netmask
    "0608" "08080808" "01010101"           # dns_server
    "0f07") + b"ovn.org" + bytes.fromhex(  # domain_name
    "3304" "00000e10"                      # lease_time
    "1a02" "05a2"                          # mtu
    "3604" "0a000001"                      # server_id
    "790d" "18" "1e0000" "0a00000a" "00" "0a000001"   # classless routes
    "3a04" "00000708"                      # T1
    "3b04" "00000c4e")                     # T2


def options_of(action: str) -> tuple[bytes, bytes]:
    """(offer IP, option TLVs) from the userdata our encoder writes."""
    rest = after_result_field(controller_userdata(action))
    return rest[:4], rest[4:]


def bootp(msg_type: int | None, *, xid: int = 0x3903F326, flags: int = 0,
          ciaddr: str = "0.0.0.0", siaddr: str = "0.0.0.0", op: int = 1,
          extra: list[tuple[int, bytes]] = (),  # type: ignore[assignment]
          chaddr: str = CLIENT_MAC) -> bytes:
    first = (12, b"vm1") if msg_type is None else (53, bytes((msg_type,)))
    opts = [dhcp.option(tag=first[0], value=first[1])]
    opts += [dhcp.option(tag=t, value=v) for t, v in extra]
    return dhcp.dhcp(op=op, chaddr=chaddr, xid=xid, flags=flags, ciaddr=ciaddr,
                     siaddr=siaddr, options=dhcp.options(option_list=opts)).serialize(None, None)


def request_frame(msg_type: int | None, **kw: object) -> bytes:
    vlan_id = kw.pop("vlan_id", None)
    mac = str(kw.pop("mac", CLIENT_MAC))
    payload = bootp(msg_type, chaddr=mac, **kw)  # type: ignore[arg-type]
    src = str(kw.get("ciaddr", "0.0.0.0"))
    return udp4_frame(payload, src, "255.255.255.255", 68, 67,
                      vlan_id=vlan_id, eth_src=mac)  # type: ignore[arg-type]


def expected_reply(req: bytes, l3: int, msg_type: int, opts: bytes, yiaddr: bytes,
                   siaddr: bytes | None, ip_dst: bytes) -> bytes:
    """The reply as the C rules describe it, assembled field by field."""
    l4 = l3 + 20
    dhcp_opts = b"\x63\x82\x53\x63" + bytes((53, 1, msg_type)) + opts + bytes(4) + b"\xff" + bytes(4)
    header = bytearray(req[l4 + 8:l4 + 8 + 236])
    header[0] = 2
    header[16:20] = yiaddr
    if siaddr is not None:
        header[20:24] = siaddr
    udp_len = 8 + 236 + len(dhcp_opts)
    udp_hdr = req[l4:l4 + 4] + struct.pack("!HH", udp_len, 0)
    ip = bytearray(req[l3:l4])
    ip[2:4] = struct.pack("!H", 20 + udp_len)
    ip[16:20] = ip_dst
    ip[10:12] = b"\0\0"
    ip[10:12] = struct.pack("!H", inet_csum(bytes(ip)))
    return req[:l3] + bytes(ip) + udp_hdr + bytes(header) + dhcp_opts


def test_encoder_writes_the_options_by_hand() -> None:
    offer, opts = options_of(ACTION)
    assert offer == OFFER
    assert opts == OPTS_BY_HAND


def test_discover_gets_offer_byte_exact() -> None:
    req = request_frame(1)
    ans = put_dhcp_opts(req, OFFER, OPTS_BY_HAND)
    assert ans.frame == expected_reply(req, 14, 2, OPTS_BY_HAND, OFFER, bytes(4), OFFER)
    assert ans.logs == (("info", "DHCPOFFER %s %s" % (CLIENT_MAC, OFFER_IP)),)


def test_offer_parses_with_os_ken() -> None:
    req = request_frame(1, xid=0xAABBCCDD)
    ans = put_dhcp_opts(req, OFFER, OPTS_BY_HAND)
    assert ans.frame is not None
    pkt = packet.Packet(ans.frame)
    ip = pkt.get_protocol(ipv4.ipv4)
    u = pkt.get_protocol(udp.udp)
    d = pkt.get_protocol(dhcp.dhcp)
    assert (ip.src, ip.dst, ip.tos, ip.ttl) == ("0.0.0.0", OFFER_IP, 0, 64)
    assert ip.total_length == len(ans.frame) - 14
    assert (u.src_port, u.dst_port, u.csum, u.total_length) == (68, 67, 0, len(ans.frame) - 34)
    assert (d.op, d.xid, d.yiaddr, d.siaddr, d.chaddr) == (2, 0xAABBCCDD, OFFER_IP, "0.0.0.0",
                                                           CLIENT_MAC)
    tags = [(o.tag, o.value) for o in d.options.option_list]
    assert tags[0] == (53, b"\x02")
    assert tags[1:] == [(3, bytes.fromhex("0a000001")), (1, bytes.fromhex("ffffff00")),
                        (6, bytes.fromhex("0808080801010101")), (15, b"ovn.org"),
                        (51, bytes.fromhex("00000e10")), (26, bytes.fromhex("05a2")),
                        (54, bytes.fromhex("0a000001")),
                        (121, bytes.fromhex("181e00000a00000a000a000001")),
                        (58, bytes.fromhex("00000708")), (59, bytes.fromhex("00000c4e"))]


def test_request_for_the_offer_gets_ack() -> None:
    req = request_frame(3, extra=[(50, OFFER)])
    ans = put_dhcp_opts(req, OFFER, OPTS_BY_HAND)
    assert ans.frame == expected_reply(req, 14, 5, OPTS_BY_HAND, OFFER, bytes(4), OFFER)
    assert ans.logs[-1] == ("info", "DHCPACK %s %s" % (CLIENT_MAC, OFFER_IP))


def test_renewal_uses_ciaddr() -> None:
    req = request_frame(3, ciaddr=OFFER_IP)
    ans = put_dhcp_opts(req, OFFER, OPTS_BY_HAND)
    assert ans.frame is not None and ans.frame[14 + 20 + 8 + 236 + 6] == 5


@pytest.mark.parametrize("flags, dst", [(0, OFFER), (0x8000, b"\xff" * 4)])
def test_request_for_another_ip_gets_nak(flags: int, dst: bytes) -> None:
    req = request_frame(3, flags=flags, siaddr="10.0.0.9",
                        extra=[(50, ipaddress.IPv4Address("10.0.0.99").packed)])
    ans = put_dhcp_opts(req, OFFER, OPTS_BY_HAND)
    assert ans.frame == expected_reply(req, 14, 6, b"", bytes(4), bytes(4), dst)
    assert ans.logs == (
        ("warn", "DHCPREQUEST requested IP 10.0.0.99 does not match offer 10.0.0.4"),
        ("info", "DHCPNAK %s %s" % (CLIENT_MAC, OFFER_IP)))


def test_broadcast_flag_sends_to_broadcast() -> None:
    req = request_frame(1, flags=0x8000)
    ans = put_dhcp_opts(req, OFFER, OPTS_BY_HAND)
    assert ans.frame == expected_reply(req, 14, 2, OPTS_BY_HAND, OFFER, bytes(4), b"\xff" * 4)


def test_inform_drops_address_and_lease_options() -> None:
    offer, opts = options_of(
        "reg0[3] = put_dhcp_opts(offerip = 10.0.0.4, netmask = 255.255.255.0, "
        "router = 10.0.0.1, lease_time = 3600, next_server = 10.0.0.2, T1 = 1800);")
    req = request_frame(8, ciaddr=OFFER_IP, siaddr="10.0.0.7")
    ans = put_dhcp_opts(req, offer, opts)
    kept = bytes.fromhex("fd04" "0a000002" "0304" "0a000001")
    # yiaddr 0 and siaddr left as the request had it (next_server ignored).
    assert ans.frame == expected_reply(req, 14, 5, kept, bytes(4), None, OFFER)
    assert ans.logs == (("info", "DHCPINFORM from %s 10.0.0.4" % CLIENT_MAC),
                        ("info", "DHCPACK %s %s" % (CLIENT_MAC, OFFER_IP)))


def test_release_and_decline_get_no_answer() -> None:
    ans = put_dhcp_opts(request_frame(7, ciaddr=OFFER_IP), OFFER, OPTS_BY_HAND)
    assert ans.frame is None
    assert ans.logs == (("info", "DHCPRELEASE %s %s" % (CLIENT_MAC, OFFER_IP)),)
    ans = put_dhcp_opts(request_frame(4, extra=[(50, OFFER)]), OFFER, OPTS_BY_HAND)
    assert ans.frame is None
    assert ans.logs == (("info", "DHCPDECLINE from %s, %s duplicated" % (CLIENT_MAC, OFFER_IP)),)
    assert put_dhcp_opts(request_frame(4), OFFER, OPTS_BY_HAND).logs == ()


BOOT = ("reg0[3] = put_dhcp_opts(offerip = 10.0.0.4, bootfile_name = \"pxe.efi\", "
        "bootfile_name_alt = \"ipxe.efi\", next_server = 10.0.0.2, router = 10.0.0.1);")


def test_bootfile_alt_for_plain_clients_and_next_server_kept() -> None:
    offer, opts = options_of(BOOT)
    assert opts == (b"\x43\x07pxe.efi" + b"\xfe\x08ipxe.efi" + bytes.fromhex("fd040a000002")
                    + bytes.fromhex("03040a000001"))
    req = request_frame(1)
    ans = put_dhcp_opts(req, offer, opts)
    want = b"\x43\x08ipxe.efi" + bytes.fromhex("fd040a000002" "03040a000001")
    assert ans.frame == expected_reply(req, 14, 2, want, OFFER,
                                       ipaddress.IPv4Address("10.0.0.2").packed, OFFER)


def test_bootfile_original_for_ipxe_clients() -> None:
    offer, opts = options_of(BOOT)
    req = request_frame(1, extra=[(175, b"\x01\x01\x01")])
    ans = put_dhcp_opts(req, offer, opts)
    want = b"\x43\x07pxe.efi" + bytes.fromhex("fd040a000002" "03040a000001")
    # C moves 67 over 254 in place but its cursor goes on from 67's old end,
    # lands on the stale 254 byte and jumps past the buffer: option 253 is
    # never seen, so siaddr stays the request's (0) while 253 is sent.
    assert ans.frame == expected_reply(req, 14, 2, want, OFFER, bytes(4), OFFER)


def test_lone_bootfile_alt_is_renamed() -> None:
    offer, opts = options_of("reg0[3] = put_dhcp_opts(offerip = 10.0.0.4, "
                             "bootfile_name_alt = \"ipxe.efi\", router = 10.0.0.1);")
    req = request_frame(1)
    ans = put_dhcp_opts(req, offer, opts)
    want = b"\x43\x08ipxe.efi" + bytes.fromhex("03040a000001")
    assert ans.frame == expected_reply(req, 14, 2, want, OFFER, bytes(4), OFFER)


def test_vlan_tag_is_copied() -> None:
    req = request_frame(1, vlan_id=42)
    ans = put_dhcp_opts(req, OFFER, OPTS_BY_HAND)
    assert ans.frame == expected_reply(req, 18, 2, OPTS_BY_HAND, OFFER, bytes(4), OFFER)


def test_ethernet_trailer_is_not_copied() -> None:
    req = request_frame(1)
    ans = put_dhcp_opts(req + b"\xee" * 6, OFFER, OPTS_BY_HAND)
    assert ans.frame == expected_reply(req, 14, 2, OPTS_BY_HAND, OFFER, bytes(4), OFFER)


def test_ip_options_are_copied_and_not_checksummed() -> None:
    req = bytearray(request_frame(1))
    # Insert a 4-byte IPv4 option (NOP x3, EOL) after the 20-byte header.
    req[14 + 20:14 + 20] = b"\x01\x01\x01\x00"
    req[14] = 0x46
    req[16:18] = struct.pack("!H", len(req) - 14)
    ans = put_dhcp_opts(bytes(req), OFFER, OPTS_BY_HAND)
    assert ans.frame is not None
    out = ans.frame
    assert out[14 + 20:14 + 24] == b"\x01\x01\x01\x00"
    hdr = bytearray(out[14:34])
    csum = struct.unpack("!H", bytes(hdr[10:12]))[0]
    hdr[10:12] = b"\0\0"
    assert csum == inet_csum(bytes(hdr))            # the first 20 bytes only
    assert struct.unpack("!H", out[16:18])[0] == len(out) - 14


@pytest.mark.parametrize("frame, why", [
    (request_frame(1)[:14 + 20 + 8 + 235], "Invalid or incomplete DHCP packet received, "
                                            "bad data length"),
    (request_frame(1, op=2), "Invalid opcode in the DHCP packet: 2"),
    (request_frame(None), "Missing DHCP message type"),
    (request_frame(5), "Invalid DHCP message type: 5"),
    (b"\x00" * 13, "Invalid or incomplete DHCP packet received"),
])
def test_bad_requests_get_no_answer(frame: bytes, why: str) -> None:
    if len(frame) > 34:
        fixed = bytearray(frame)  # keep the IP length consistent with the truncation
        fixed[16:18] = struct.pack("!H", len(frame) - 14)
        frame = bytes(fixed)
    ans = put_dhcp_opts(frame, OFFER, OPTS_BY_HAND)
    assert ans.frame is None
    assert ans.logs == (("warn", why),)


def test_bad_cookie_and_empty_options() -> None:
    req = bytearray(request_frame(1))
    req[14 + 28 + 236] ^= 0xFF
    assert put_dhcp_opts(bytes(req), OFFER, OPTS_BY_HAND).logs == (
        ("warn", "DHCP magic cookie not present in the DHCP packet"),)
    assert put_dhcp_opts(request_frame(1), OFFER, b"").logs == (
        ("warn", "DHCP options not present in the userdata"),)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.binary(min_size=4, max_size=4), st.binary(max_size=80))
def test_fuzz_random_bytes_never_raise(frame: bytes, offer: bytes, opts: bytes) -> None:
    ans = put_dhcp_opts(frame, offer, opts)
    assert ans.frame is None or isinstance(ans.frame, bytes)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 255), st.binary(max_size=60), st.binary(max_size=80),
       st.integers(0, 300))
def test_fuzz_mangled_requests_never_raise(msg_type: int, tail: bytes, opts: bytes,
                                           cut: int) -> None:
    req = request_frame(msg_type)
    frame = req[:len(req) - 1 - cut if cut < len(req) else 0] + tail
    ans = put_dhcp_opts(frame, OFFER, opts)
    if ans.frame is not None:
        assert ans.frame[:14] == frame[:14]


@pytest.mark.parametrize("option, tlv", [
    ("ip_forward_enable = 1", "1301" "01"),                         # bool
    ("default_ttl = 64", "1701" "40"),                              # uint8
    ("mtu = 9000", "1a02" "2328"),                                  # uint16
    ("arp_cache_timeout = 300", "2304" "0000012c"),                 # uint32
    ("ntp_server = {10.0.0.2, 10.0.0.3}", "2a08" "0a000002" "0a000003"),   # ipv4 list
    ("hostname = \"vm1\"", "0c03" + b"vm1".hex()),                  # str
    ("tftp_server = \"tftp.ovn.org\"", "420c" + b"tftp.ovn.org".hex()),    # host_id name
    ("tftp_server = 10.0.0.9", "4204" "0a000009"),                  # host_id address
    ("domain_search_list = \"ovn.org,abc.ovn.org\"",                # domains, compressed
     "770f" "036f766e036f726700" "03616263c000"),
    ("ms_classless_static_route = {0.0.0.0/0, 10.0.0.1}", "f905" "00" "0a000001"),
])
def test_every_option_type_is_sent_as_encoded(option: str, tlv: str) -> None:
    offer, opts = options_of("reg0[3] = put_dhcp_opts(offerip = 10.0.0.4, %s);" % option)
    assert opts == bytes.fromhex(tlv)
    req = request_frame(1)
    assert put_dhcp_opts(req, offer, opts).frame == expected_reply(
        req, 14, 2, bytes.fromhex(tlv), OFFER, bytes(4), OFFER)
