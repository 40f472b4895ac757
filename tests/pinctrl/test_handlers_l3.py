"""Tests of controller/pinctrl/handlers_l3.py with synthetic packet-ins.

The packet-outs and resumes are taken apart here by hand (OpenFlow 1.5
layouts) rather than compared with what the module's own helpers build, so
a wrong shape shows up as a wrong field."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

import controller.pinctrl  # noqa: F401  (registers every handler module)
from controller.lflow.actions import base as ops
from controller.pinctrl import frames as F
from controller.pinctrl import handlers_l3 as H
from controller.pinctrl import registry
from controller.pinctrl.outcome import BufferIntent, Outcome
from controller.pinctrl.packet_in import PacketIn
from controller.pinctrl.state import PortInfo
from ofctrl.ofpacts import Resubmit, decode_actions, format_actions
from tests.pinctrl.test_frames import (init_chunk, ns_frame, sctp_frame, tcp4_frame, udp4_frame,
                                       udp6_frame)


@dataclass(frozen=True)
class View:
    chassis_name: str = "hv1"

    def port_by_key(self, dp_key: int, port_key: int) -> PortInfo | None:
        return None

    def port_by_name(self, name: str) -> PortInfo | None:
        return None


VIEW = View()
NESTED = Resubmit(table=10, in_port=0xFFF8).encode()      # what `next;` encodes to
MD = (("metadata", 5, None), ("reg14", 1, None), ("reg15", 3, None),
      ("reg0", 0x0A0000FE, None), ("in_port", 7, None))


def pin_of(opcode: int, frame: bytes, payload: bytes = NESTED,
           metadata: tuple[tuple[str, int, int | None], ...] = MD,
           continuation: bytes | None = None) -> PacketIn:
    return PacketIn(packet=frame, table_id=27, cookie=0xABCD, reason=1, metadata=metadata,
                    userdata=struct.pack("!I4x", opcode) + payload,
                    continuation=continuation, properties=b"")


def split_packet_out(msg: bytes) -> tuple[str, bytes]:
    """(actions as ovs-ofctl text, frame) of an OF1.5 OFPT_PACKET_OUT."""
    version, mtype, length = struct.unpack_from("!BBH", msg)
    assert (version, mtype, length) == (6, 13, len(msg))
    buffer_id, actions_len = struct.unpack_from("!IH", msg, 8)
    assert buffer_id == 0xFFFFFFFF
    mt, mlen = struct.unpack_from("!HH", msg, 16)
    assert mt == 1
    # the match holds exactly in_port=CONTROLLER (OXM OF_IN_PORT, 4 bytes)
    assert msg[20:20 + mlen - 4] == struct.pack("!HBBI", 0x8000, 0, 4, 0xFFFFFFFD)
    ofs = 16 + (mlen + 7) // 8 * 8
    actions = msg[ofs:ofs + actions_len]
    return format_actions(decode_actions(actions)), msg[ofs + actions_len:]


def resume_props(msg: bytes) -> dict[int, bytes]:
    version, mtype, length, _xid, vendor, subtype = struct.unpack_from("!BBHIII", msg)
    assert (version, mtype, length, vendor, subtype) == (6, 4, len(msg), 0x2320, 28)
    props: dict[int, bytes] = {}
    ofs = 16
    while ofs < len(msg):
        ptype, plen = struct.unpack_from("!HH", msg, ofs)
        props[ptype] = msg[ofs + 4:ofs + plen]
        ofs += (plen + 7) // 8 * 8
    return props


RELOAD = "set_field:0xa0000fe->reg0,set_field:0x1->reg14,set_field:0x3->reg15," \
         "set_field:0x5->metadata"


def only_reply(out: Outcome) -> tuple[str, bytes]:
    assert out.drop is None and len(out.messages) == 1
    return split_packet_out(out.messages[0])


# ---------------------------------------------------------------- registration


def test_every_opcode_is_registered_here() -> None:
    mine = {ops.OP_ARP: H.handle_arp, ops.OP_ND_NA: H.handle_nd_na,
            ops.OP_ND_NS: H.handle_nd_ns, ops.OP_ICMP: H.handle_icmp,
            ops.OP_TCP_RESET: H.handle_tcp_reset, ops.OP_ND_NA_ROUTER: H.handle_nd_na,
            ops.OP_PUT_ICMP4_FRAG_MTU: H.handle_icmp_frag_mtu,
            ops.OP_ICMP4_ERROR: H.handle_icmp_error, ops.OP_ICMP6_ERROR: H.handle_icmp_error,
            ops.OP_PUT_ICMP6_FRAG_MTU: H.handle_icmp_frag_mtu, ops.OP_REJECT: H.handle_reject,
            ops.OP_SCTP_ABORT: H.handle_sctp_abort}
    for op, fn in mine.items():
        assert registry.REGISTRY[op] is fn


# ---------------------------------------------------------------- ARP / ND


def test_arp_sends_request_and_buffers_packet() -> None:
    frame = udp4_frame("10.0.0.1", "8.8.8.8")
    pin = pin_of(ops.OP_ARP, frame)
    out = registry.dispatch(pin, VIEW)
    actions, sent = only_reply(out)
    assert actions == RELOAD + ",resubmit(,10)"
    assert sent == F.arp_request(frame)
    (buf,) = out.intents
    assert isinstance(buf, BufferIntent)
    assert (buf.dp_key, buf.port_key, buf.ip, buf.frame) == (5, 3, 0xFFFF0A0000FE, frame)
    assert format_actions(decode_actions(buf.reload)) == RELOAD


def test_arp_on_ipv6_is_dropped_without_buffering() -> None:
    out = H.handle_arp(pin_of(ops.OP_ARP, udp6_frame()), VIEW)
    assert out.messages == [] and out.intents == []
    assert out.drop == "ARP action on non-IP packet (Ethertype 86dd)"


def test_nd_ns_buffers_under_xxreg0() -> None:
    md = (("metadata", 2, None), ("reg15", 4, None), ("reg0", 0x20010DB8, None),
          ("reg3", 0x99, None), ("pkt_mark", 9, None))
    frame = udp6_frame("2001:db8::1", "2001:db8::99")
    out = H.handle_nd_ns(pin_of(ops.OP_ND_NS, frame, metadata=md), VIEW)
    actions, sent = only_reply(out)
    assert sent == F.nd_ns(frame)
    assert actions.startswith("set_field:0x20010db8->reg0,set_field:0x99->reg3,")
    (buf,) = out.intents
    assert isinstance(buf, BufferIntent)
    assert (buf.dp_key, buf.port_key, buf.ip, buf.frame, buf.pkt_mark) == (
        2, 4, 0x20010DB8_00000000_00000000_00000099, frame, 9)
    out = H.handle_nd_ns(pin_of(ops.OP_ND_NS, udp4_frame()), VIEW)
    assert out.drop == "NS action on non-IPv6 packet" and not out.intents


def test_nd_na_and_router_flag() -> None:
    ns = ns_frame("2001:db8::1")
    _a, na = only_reply(registry.dispatch(pin_of(ops.OP_ND_NA, ns), VIEW))
    _a, na_r = only_reply(registry.dispatch(pin_of(ops.OP_ND_NA_ROUTER, ns), VIEW))
    assert na == F.nd_na(ns, False) and na_r == F.nd_na(ns, True)
    assert na[58] == 0x60 and na_r[58] == 0xE0
    assert H.handle_nd_na(pin_of(ops.OP_ND_NA, udp6_frame()), VIEW).drop == \
        "NA action on non-ND packet"


def test_unusable_nested_actions_send_nothing_but_still_buffer() -> None:
    frame = udp4_frame()
    for bad in (NESTED[:12], b"\x00\x00\x00\x04\x00\x00\x00\x00",
                NESTED[:2] + b"\x00\x18" + NESTED[4:]):
        out = H.handle_arp(pin_of(ops.OP_ARP, frame, payload=bad), VIEW)
        assert out.messages == [] and out.drop is not None
        assert out.drop.startswith("failed to parse actions from userdata (OFPB")
        assert [type(i) for i in out.intents] == [BufferIntent]
        out = H.handle_icmp(pin_of(ops.OP_ICMP, frame, payload=bad), VIEW)
        assert out.messages == [] and out.intents == [] and out.drop is not None
    out = H.handle_tcp_reset(pin_of(ops.OP_TCP_RESET, tcp4_frame(), payload=b""), VIEW)
    assert len(out.messages) == 1 and out.drop is None       # an empty list is fine


# ---------------------------------------------------------------- ICMP


def test_icmp_opcodes_choose_the_udp_code() -> None:
    u4, u6 = udp4_frame(), udp6_frame()
    cases = [(ops.OP_ICMP, u4, 34, 3), (ops.OP_ICMP4_ERROR, u4, 34, 1),
             (ops.OP_ICMP, u6, 54, 4), (ops.OP_ICMP6_ERROR, u6, 54, 1),
             # the opcode does not choose the family, the frame does
             (ops.OP_ICMP4_ERROR, u6, 54, 1)]
    for op, frame, l4, code in cases:
        actions, sent = only_reply(registry.dispatch(pin_of(op, frame), VIEW))
        assert actions == RELOAD + ",resubmit(,10)"
        assert sent[l4 + 1] == code, (op, code)
        assert sent == F.icmp_error(frame, op == ops.OP_ICMP)


def test_icmp_drops_non_ip() -> None:
    out = H.handle_icmp(pin_of(ops.OP_ICMP, F.arp_request(udp4_frame())), VIEW)
    assert out.drop == "ICMP action on non-IP packet (eth_type 0x806)" and not out.messages


# ---------------------------------------------------------------- TCP / SCTP / reject


def test_tcp_reset_and_sctp_abort() -> None:
    t = tcp4_frame(seq=41)
    _a, sent = only_reply(registry.dispatch(pin_of(ops.OP_TCP_RESET, t), VIEW))
    assert sent == F.tcp_reset(t)
    s = sctp_frame(0, init_chunk(0x1234))
    _a, sent = only_reply(registry.dispatch(pin_of(ops.OP_SCTP_ABORT, s), VIEW))
    assert sent == F.sctp_abort(s)
    assert H.handle_tcp_reset(pin_of(ops.OP_TCP_RESET, udp4_frame()), VIEW).drop == \
        "TCP_RESET action on non-TCP packet"
    assert H.handle_sctp_abort(pin_of(ops.OP_SCTP_ABORT, t), VIEW).drop == \
        "SCTP_ABORT action on non-SCTP packet"


def test_reject_answers_with_swapped_addresses_or_stays_silent() -> None:
    t = tcp4_frame()
    _a, sent = only_reply(H.handle_reject(pin_of(ops.OP_REJECT, t), VIEW))
    assert sent == F.tcp_reset(t, loopback=True)
    _a, sent = only_reply(H.handle_reject(pin_of(ops.OP_REJECT, udp6_frame()), VIEW))
    assert sent == F.reject(udp6_frame())
    silent = H.handle_reject(pin_of(ops.OP_REJECT, tcp4_frame(flags=0x004)), VIEW)
    assert silent.messages == [] and silent.drop is None and silent.intents == []


# ---------------------------------------------------------------- frag MTU


def test_frag_mtu_resumes_with_the_patched_packet() -> None:
    err4 = F.icmp_error(udp4_frame(payload=b"z" * 200), False)
    cont = b"\x00\x01\x00\x08abcd"
    pin = pin_of(ops.OP_PUT_ICMP4_FRAG_MTU, err4, payload=struct.pack("!H", 1400),
                 continuation=cont)
    out = registry.dispatch(pin, VIEW)
    assert out.drop is None and out.intents == [] and len(out.messages) == 1
    props = resume_props(out.messages[0])
    assert props[0] == F.set_icmp4_frag_mtu(err4, 1400)
    assert props[8] == cont and props[3] == bytes((27,))
    assert 7 not in props                         # no userdata in a resume

    err6 = F.icmp_error(udp6_frame(), False)
    for op in (ops.OP_PUT_ICMP6_FRAG_MTU, ops.OP_PUT_ICMP4_FRAG_MTU):
        out = registry.dispatch(pin_of(op, err6, payload=struct.pack("!I", 1280)), VIEW)
        assert resume_props(out.messages[0])[0] == F.set_icmp6_frag_mtu(err6, 1280)


def test_frag_mtu_resumes_unchanged_when_nothing_to_patch() -> None:
    err4 = F.icmp_error(udp4_frame(), False)
    out = H.handle_icmp_frag_mtu(pin_of(ops.OP_PUT_ICMP4_FRAG_MTU, err4, payload=b"\x05"), VIEW)
    assert resume_props(out.messages[0])[0] == err4 and out.intents == [] and out.drop is None
    u = udp4_frame()
    out = H.handle_icmp_frag_mtu(pin_of(ops.OP_PUT_ICMP4_FRAG_MTU, u, payload=b"\x05\xdc"),
                                 VIEW)
    assert resume_props(out.messages[0])[0] == u and out.intents == []
    assert out.drop == "put_icmp(4/6)_frag_mtu action on non-ICMPv4/v6 packet"


# ---------------------------------------------------------------- fuzz

MY_OPCODES = sorted({ops.OP_ARP, ops.OP_ND_NA, ops.OP_ND_NS, ops.OP_ICMP, ops.OP_TCP_RESET,
                     ops.OP_ND_NA_ROUTER, ops.OP_PUT_ICMP4_FRAG_MTU, ops.OP_ICMP4_ERROR,
                     ops.OP_ICMP6_ERROR, ops.OP_PUT_ICMP6_FRAG_MTU, ops.OP_REJECT,
                     ops.OP_SCTP_ABORT})
SEEDS = [udp4_frame(), udp6_frame(), tcp4_frame(), ns_frame("fd00::1"),
         sctp_frame(0, init_chunk(5)), F.icmp_error(udp4_frame(), False),
         F.icmp_error(udp6_frame(), False)]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(MY_OPCODES), st.sampled_from(SEEDS), st.integers(0, 200),
       st.lists(st.tuples(st.integers(0, 199), st.integers(0, 255)), max_size=4),
       st.one_of(st.just(NESTED), st.binary(max_size=12)))
def test_handlers_never_raise(op: int, seed: bytes, cut: int, flips: list[tuple[int, int]],
                              payload: bytes) -> None:
    f = bytearray(seed[:cut])
    for pos, val in flips:
        if pos < len(f):
            f[pos] = val
    pin = pin_of(op, bytes(f), payload=payload)
    out = registry.REGISTRY[op](pin, VIEW)        # called directly: no dispatcher safety net
    assert isinstance(out, Outcome)
    frag_mtu = op in (ops.OP_PUT_ICMP4_FRAG_MTU, ops.OP_PUT_ICMP6_FRAG_MTU)
    assert len(out.messages) == 1 if frag_mtu else out.drop is None or not out.messages
