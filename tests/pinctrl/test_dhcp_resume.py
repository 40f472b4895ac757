"""The continuation handlers (opcodes 2 put_dhcp_opts, 5 put_dhcpv6_opts,
6 dns_lookup, 8 put_nd_ra_opts) end to end: NXT_PACKET_IN2 in, NXT_RESUME
out, through the registry, with the result bit written as 23.03.1 does."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import controller.pinctrl.handlers_l7  # noqa: F401  (registers the handlers)
from controller.lflow.actions.base import (
    OP_DNS_LOOKUP, OP_PUT_DHCP_OPTS, OP_PUT_DHCPV6_OPTS, OP_PUT_ND_RA_OPTS)
from controller.pinctrl.dhcp import put_dhcp_opts
from controller.pinctrl.dhcp6 import put_dhcpv6_opts, put_nd_ra_opts
from controller.pinctrl.dns import DnsCache, dns_lookup
from controller.pinctrl.handlers_l7 import ResultField, parse_result_field
from controller.pinctrl.outcome import LogIntent
from controller.pinctrl.packet_in import PacketIn, decode_packet_in2, encode_packet_in2
from controller.pinctrl.registry import REGISTRY, dispatch
from controller.pinctrl.state import PortInfo
from ofctrl import messages as m
from tests.pinctrl import test_dhcp4 as t4
from tests.pinctrl import test_dhcp6 as t6
from tests.pinctrl import test_dns as td
from tests.pinctrl import test_ra as tr
from tests.pinctrl.l7_helpers import controller_userdata

CONT = b"\x80\x00\x00\x10continuation-bytes"


@dataclass
class View:
    chassis_name: str = "hv1"
    dns: DnsCache = field(default_factory=lambda: td.CACHE)

    def port_by_key(self, dp_key: int, port_key: int) -> PortInfo | None:
        return None

    def port_by_name(self, name: str) -> PortInfo | None:
        return None


def pin_of(frame: bytes, userdata: bytes, metadata: list | None = None) -> PacketIn:
    md = metadata if metadata is not None else [("metadata", td.DP, None), ("reg14", 1, None),
                                                ("reg0", 0x10, None)]
    return decode_packet_in2(encode_packet_in2(frame, userdata, md, table_id=27,
                                               cookie=0xABCD, continuation=CONT))


def decoded_resume(msg: bytes) -> PacketIn:
    """Read an NXT_RESUME back with the packet-in decoder (same property list)."""
    assert struct.unpack("!BBHIII", msg[:16])[5] == m.NXT_RESUME
    return decode_packet_in2(msg[:12] + struct.pack("!I", 30) + msg[16:])


def run(pin: PacketIn) -> tuple[PacketIn, list]:
    out = dispatch(pin, View())
    assert out.drop is None and len(out.messages) == 1
    back = decoded_resume(out.messages[0])
    assert (back.table_id, back.cookie, back.continuation) == (27, 0xABCD, CONT)
    assert back.userdata == b""
    return back, out.intents


DHCP4 = controller_userdata(t4.ACTION)
DHCP6 = controller_userdata(t6.ACTION)
DNS = controller_userdata("reg0[4] = dns_lookup();")
RA = controller_userdata(tr.ACTION)


def test_all_four_opcodes_are_registered() -> None:
    for op in (OP_PUT_DHCP_OPTS, OP_PUT_DHCPV6_OPTS, OP_DNS_LOOKUP, OP_PUT_ND_RA_OPTS):
        assert REGISTRY[op].__module__ == "controller.pinctrl.handlers_l7"


def test_result_field_of_northd_reg0_bits() -> None:
    # reg0[3] is encoded as xxreg0 bit 99: packet-in metadata carries reg0.
    assert parse_result_field(DHCP4[8:])[0] == ResultField("reg0", 3)
    assert parse_result_field(DNS[8:])[0] == ResultField("reg0", 4)
    assert parse_result_field(RA[8:])[0] == ResultField("reg0", 5)


def test_dhcp_offer_resumes_with_reply_and_bit_set() -> None:
    frame = t4.request_frame(1)
    back, intents = run(pin_of(frame, DHCP4))
    assert back.packet == put_dhcp_opts(frame, t4.OFFER, t4.OPTS_BY_HAND).frame
    assert back.reg("reg0") == 0x18 and back.reg("reg14") == 1 and back.reg("metadata") == td.DP
    assert intents == [LogIntent("pinctrl", "info", "DHCPOFFER %s 10.0.0.4" % t4.CLIENT_MAC)]


def test_dhcp_release_resumes_original_with_bit_clear() -> None:
    frame = t4.request_frame(7)
    md = [("metadata", td.DP, None), ("reg0", 0x08, None)]     # bit 3 already set
    back, _ = run(pin_of(frame, DHCP4, md))
    assert back.packet == frame and back.reg("reg0") == 0


def test_bit_written_masked_when_register_absent() -> None:
    frame = t4.request_frame(1)
    back, _ = run(pin_of(frame, DHCP4, [("metadata", td.DP, None)]))
    item = dict((n, (v, mk)) for n, v, mk in back.metadata)["reg0"]
    assert item == (0x08, 0x08)


def test_dhcpv6_dns_and_ra() -> None:
    f6 = t6.request(1, t6.CLIENT_ID, t6.IA_NA_REQ)
    back, _ = run(pin_of(f6, DHCP6))
    assert back.packet == put_dhcpv6_opts(f6, t6.USERDATA_BY_HAND).frame
    assert back.reg("reg0") & 0x08
    fq = td.q4(td.query("vm1.ovn.org", 1))
    back, _ = run(pin_of(fq, DNS))
    assert back.packet == dns_lookup(fq, td.DP, td.CACHE).frame and back.reg("reg0") & 0x10
    back, _ = run(pin_of(fq, DNS, [("metadata", 99, None), ("reg0", 0x10, None)]))
    assert back.packet == fq and back.reg("reg0") == 0          # other datapath: no answer
    rs = tr.rs_frame()
    back, _ = run(pin_of(rs, RA))
    assert back.packet == put_nd_ra_opts(rs, tr.BODY_BY_HAND).frame and back.reg("reg0") & 0x20


@pytest.mark.parametrize("payload, warning", [
    (b"\x00\x01", "bad result OXM (OFPBMC_BAD_LEN)"),
    (b"\x7f\x7f\x00\x04\x00\x00\x00\x03", "bad result OXM (OFPBMC_BAD_FIELD)"),
    (b"\x00\x01\x01\x08" + bytes(8) + b"\x00\x00\x00\x03", "bad result OXM (OFPBMC_BAD_MASK)"),
    (b"\x00\x01\x00\x04\x00\x00\x00\x20", "bad result bit (OFPBAC_BAD_SET_LEN)"),
    (b"\x00\x01\x00\x04\x00\x00", "offset not present in the userdata"),
])
def test_bad_result_field_resumes_without_a_bit(payload: bytes, warning: str) -> None:
    frame = td.q4(td.query("vm1.ovn.org", 1))
    md = [("metadata", td.DP, None), ("reg0", 0x10, None)]
    back, intents = run(pin_of(frame, struct.pack("!I4x", OP_DNS_LOOKUP) + payload, md))
    assert back.packet == frame and back.reg("reg0") == 0x10
    assert intents == [LogIntent("pinctrl", "warn", warning)]


def test_unwritable_result_field() -> None:
    # NXM_OF_ETH_TYPE (class 0, field 3, 2 bytes) is not writable.
    ud = struct.pack("!I4x", OP_PUT_ND_RA_OPTS) + b"\x00\x00\x06\x02" + b"\x00\x00\x00\x01"
    back, intents = run(pin_of(tr.rs_frame(), ud + tr.BODY_BY_HAND))
    assert back.packet == tr.rs_frame()
    assert intents == [LogIntent("pinctrl", "warn", "bad result bit (OFPBAC_BAD_SET_ARGUMENT)")]


def test_dhcp_without_offer_ip() -> None:
    ud = DHCP4[:8 + 4 + 4 + 2]
    back, intents = run(pin_of(t4.request_frame(1), ud))
    assert back.reg("reg0") == 0x10
    assert intents == [LogIntent("pinctrl", "warn",
                                 "offset or offer_ip not present in the userdata")]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([OP_PUT_DHCP_OPTS, OP_PUT_DHCPV6_OPTS, OP_DNS_LOOKUP, OP_PUT_ND_RA_OPTS]),
       st.binary(max_size=60), st.binary(max_size=200))
def test_fuzz_handlers_always_resume(op: int, payload: bytes, frame: bytes) -> None:
    pin = pin_of(frame, struct.pack("!I4x", op) + payload)
    out = dispatch(pin, View())
    assert out.drop is None and len(out.messages) == 1


def test_log_lines_carry_c_rate_limits() -> None:
    def intents(frame: bytes, ud: bytes = DHCP4) -> list:
        return run(pin_of(frame, ud))[1]

    offer = intents(t4.request_frame(1))[0]
    ack = intents(t4.request_frame(3, extra=[(50, t4.OFFER)]))[0]
    release = intents(t4.request_frame(7, ciaddr="10.0.0.4"))[0]
    decline = intents(t4.request_frame(4, extra=[(50, t4.OFFER)]))[0]
    assert offer.rate_limit is ack.rate_limit                 # one limiter for replies
    assert offer.rate_limit.burst == 40 and offer.rate_limit.per_second == 20 / 60
    assert release.rate_limit is not offer.rate_limit and release.rate_limit.burst == 40
    assert decline.text.startswith("DHCPDECLINE") and decline.rate_limit is None
    warn6 = intents(t6.request(1, t6.IA_NA_REQ), DHCP6)[0]
    warn_dns = intents(td.q4(td.query("x", 1, ar=1)), DNS)[0]
    assert warn6.rate_limit.burst == 5 and warn6.rate_limit.per_second == 1 / 60
    assert warn_dns.rate_limit is not warn6.rate_limit and warn_dns.level == "dbg"
