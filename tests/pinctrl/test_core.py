"""Unit tests of the pinctrl core: packet-in decoding, registry, dispatch, messages."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from controller.pinctrl import openflow as of
from controller.pinctrl import registry
from controller.pinctrl.outcome import DROP, Outcome
from controller.pinctrl.packet_in import (
    PacketIn, PacketInError, decode_packet_in2, encode_packet_in2)
from controller.pinctrl.state import EMPTY_VIEW, LocalSnapshot, PortInfo
from ofctrl import messages as m
from ofctrl.match import Match
from ofctrl.ofpacts import decode_actions, format_actions

FRAME = bytes.fromhex("ffffffffffff0000000000010806000108000604000100000000000"
                      "10a0000010000000000000a000002")


def userdata(opcode: int, payload: bytes = b"") -> bytes:
    return struct.pack("!I4x", opcode) + payload


def sample(**kw: object) -> bytes:
    args: dict = dict(packet=FRAME, userdata=userdata(1, b"abc"),
                      metadata=[("metadata", 5, None), ("reg14", 3, None),
                                ("reg0", 0x0a000002, None), ("reg15", 0x8000, None),
                                ("in_port", 7, None), ("pkt_mark", 9, None)],
                      table_id=27, cookie=0x1234abcd, continuation=b"\x00\x01\x00\x08abcd")
    args.update(kw)
    return encode_packet_in2(**args)


# ------------------------------------------------------------------- decoding
def test_decode_round_trip() -> None:
    pin = decode_packet_in2(sample())
    assert pin.packet == FRAME
    assert pin.table_id == 27 and pin.cookie == 0x1234abcd and pin.reason == 1
    assert pin.opcode == 1 and pin.payload == b"abc"
    assert pin.reg("metadata") == 5 and pin.reg("reg14") == 3 and pin.reg("reg15") == 0x8000
    assert pin.reg("reg0") == 0x0a000002 and pin.reg("reg1") == 0
    assert pin.reg("in_port") == 7 and pin.reg("pkt_mark") == 9
    assert pin.continuation == b"\x00\x01\x00\x08abcd"
    assert pin.has("reg14") and not pin.has("reg13")


def test_wide_registers_are_composed() -> None:
    md = [("reg0", 0x20010db8, None), ("reg1", 0, None), ("reg2", 0, None), ("reg3", 1, None)]
    pin = decode_packet_in2(sample(metadata=md))
    assert pin.reg("xxreg0") == 0x20010db8000000000000000000000001
    assert pin.reg("xreg1") == 1
    assert pin.reg("xxreg1") == 0


def test_metadata_as_vswitchd_sends_it() -> None:
    # OF1.5 vswitchd sends registers as 64-bit OXM_OF_PKT_REGn (class 0x8001),
    # half-masked when only one of the pair is set; in_port as 32-bit OXM.
    oxms = (struct.pack("!I", (0x8001 << 16) | (7 << 9) | 0x100 | 16)      # xreg7 = reg14/15
            + (0x0000000300000000).to_bytes(8, "big") + (0xFFFFFFFF00000000).to_bytes(8, "big")
            + struct.pack("!I", (0x8000 << 16) | (0 << 9) | 4) + (0xFFFFFFFD).to_bytes(4, "big")
            + struct.pack("!I", (0x8000 << 16) | (2 << 9) | 8) + (6).to_bytes(8, "big"))
    prop = struct.pack("!HH", 6, 4 + len(oxms)) + oxms
    prop += b"\0" * ((-len(prop)) % 8)
    pkt = struct.pack("!HH", 0, 4 + len(FRAME)) + FRAME
    pkt += b"\0" * ((-len(pkt)) % 8)
    body = pkt + prop
    msg = struct.pack("!BBHIII", 6, 4, 16 + len(body), 0, 0x2320, 30) + body
    pin = decode_packet_in2(msg)
    assert pin.reg("reg14") == 3 and not pin.has("reg15")
    assert pin.reg("in_port") == 0xFFFD and pin.reg("metadata") == 6
    assert pin.userdata == b"" and pin.reason == 0


def test_unknown_properties_and_fields_are_skipped() -> None:
    extra = struct.pack("!HH", 99, 6) + b"zz" + b"\0" * 2
    msg = sample()
    msg = msg[:2] + struct.pack("!H", len(msg) + len(extra)) + msg[4:] + extra
    assert decode_packet_in2(msg).packet == FRAME


def test_os_ken_reads_our_encoding() -> None:
    # Independent check of the property framing: os-ken's parser agrees.
    from os_ken.ofproto import ofproto_v1_5_parser as p
    msg = sample()
    version, mtype, length, xid = m.HEADER.unpack_from(msg)
    parsed = p.msg_parser(None, version, mtype, length, xid, msg)
    assert parsed.data == FRAME and parsed.userdata == userdata(1, b"abc")
    assert parsed.table_id == 27 and parsed.reason == 1


@pytest.mark.parametrize("cut", range(0, 120, 3))
def test_truncations_raise_packet_in_error(cut: int) -> None:
    msg = sample()
    short = msg[:cut]
    with pytest.raises(PacketInError):
        decode_packet_in2(short)
    # A fixed-up length field does not help: the framing is still broken
    # (or the packet is missing).
    if cut >= 16:
        fixed = short[:2] + struct.pack("!H", cut) + short[4:]
        try:
            pin = decode_packet_in2(fixed)
        except PacketInError:
            pass
        else:
            assert isinstance(pin, PacketIn)


def test_missing_packet_and_wrong_message() -> None:
    body = struct.pack("!HH", 3, 5) + b"\x05" + b"\0" * 3
    msg = struct.pack("!BBHIII", 6, 4, 16 + len(body), 0, 0x2320, 30) + body
    with pytest.raises(PacketInError, match="lacks a packet"):
        decode_packet_in2(msg)
    with pytest.raises(PacketInError, match="not an NXT_PACKET_IN2"):
        decode_packet_in2(m.echo_request(1) + b"\0" * 8)
    with pytest.raises(PacketInError):
        decode_packet_in2(sample(userdata=b"\0\0")).opcode


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_random_bytes(data: bytes) -> None:
    for msg in (data, struct.pack("!BBHIII", 6, 4, 16 + len(data), 0, 0x2320, 30) + data):
        try:
            pin = decode_packet_in2(msg)
        except PacketInError:
            continue
        assert isinstance(dispatch_all(pin), Outcome)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=6))
def test_fuzz_mutated_valid_message(edits: list[tuple[int, int]]) -> None:
    msg = bytearray(sample())
    for pos, val in edits:
        if pos < len(msg):
            msg[pos] = val
    try:
        pin = decode_packet_in2(bytes(msg))
    except PacketInError:
        return
    assert isinstance(dispatch_all(pin), Outcome)


def dispatch_all(pin: PacketIn) -> Outcome:
    out = registry.dispatch(pin, EMPTY_VIEW)
    assert isinstance(out, Outcome)
    return out


# ------------------------------------------------------------------- registry
def test_registry_rejects_duplicates_and_dispatches() -> None:
    op = 200
    calls = []

    @registry.handler(op)
    def h(pin: PacketIn, view: object) -> Outcome:
        calls.append(pin.payload)
        return Outcome(messages=[b"x"])

    try:
        with pytest.raises(ValueError, match="already handled"):
            @registry.handler(op)
            def h2(pin: PacketIn, view: object) -> Outcome:
                return Outcome()
        assert registry.REGISTRY[op] is h
        out = registry.dispatch(decode_packet_in2(sample(userdata=userdata(op, b"p"))), EMPTY_VIEW)
        assert out.messages == [b"x"] and calls == [b"p"]
    finally:
        registry.unregister(op)


def test_dispatch_drops_without_raising() -> None:
    out = registry.dispatch(decode_packet_in2(sample(userdata=userdata(201))), EMPTY_VIEW)
    assert out.drop == "unknown opcode 201"
    out = registry.dispatch(decode_packet_in2(sample(userdata=b"\0\0\0")), EMPTY_VIEW)
    assert out.drop is not None and "action header" in out.drop
    # Not OFPR_ACTION: ignored silently, as C does.
    out = registry.dispatch(decode_packet_in2(sample(reason=0)), EMPTY_VIEW)
    assert out.drop is None and not out.messages and not out.intents

    @registry.handler(202)
    def boom(pin: PacketIn, view: object) -> Outcome:
        raise RuntimeError("bug")

    @registry.handler(203)
    def bad(pin: PacketIn, view: object) -> Outcome:
        raise IndexError("short")

    try:
        out = registry.dispatch(decode_packet_in2(sample(userdata=userdata(202))), EMPTY_VIEW)
        assert out.drop is not None and "RuntimeError: bug" in out.drop
        out = registry.dispatch(decode_packet_in2(sample(userdata=userdata(203))), EMPTY_VIEW)
        assert out.drop == "opcode 203: IndexError: short"
    finally:
        registry.unregister(202)
        registry.unregister(203)
    assert DROP("x").drop == "x"


def test_snapshot_view() -> None:
    p = PortInfo("lsp1", "", 1, 2, ("00:00:00:00:00:01 10.0.0.1",))
    v = LocalSnapshot.build("ch1", [p])
    assert v.port_by_key(1, 2) is p and v.port_by_name("lsp1") is p
    assert v.port_by_key(1, 3) is None and v.chassis_name == "ch1"
    assert p.addresses == p.mac


# ------------------------------------------------------------------- messages
def _decode_po(msg: bytes) -> tuple[Match, str, bytes]:
    version, mtype, length, xid = m.HEADER.unpack_from(msg)
    assert (version, mtype, length) == (6, m.OFPT_PACKET_OUT, len(msg))
    buffer_id, alen = struct.unpack_from("!IH", msg, 8)
    assert buffer_id == 0xFFFFFFFF
    match, ofs = Match.decode_prefix(msg, 16)
    acts = msg[ofs:ofs + alen]
    return match, format_actions(decode_actions(acts)), msg[ofs + alen:]


def test_packet_out_shapes() -> None:
    pin = decode_packet_in2(sample())
    match, acts, frame = _decode_po(of.po_nested(pin, b"NEWFRAME", of.resubmit_controller(37)))
    assert match.to_string() == "in_port=CONTROLLER" and frame == b"NEWFRAME"
    assert acts == ("set_field:0xa000002->reg0,set_field:0x3->reg14,set_field:0x8000->reg15,"
                    "set_field:0x5->metadata,resubmit(CONTROLLER,37)")
    _, acts, _ = _decode_po(of.po_inject(b"f", 7, 4, 8, flag_bit=4))
    assert acts == ("set_field:0x7->metadata,set_field:0x4->reg14,"
                    "set_field:0x10/0x10->reg10,resubmit(CONTROLLER,8)")
    _, acts, _ = _decode_po(of.po_inject(b"f", 7, 32768, 40, reg="reg15"))
    assert acts == "set_field:0x7->metadata,set_field:0x8000->reg15,resubmit(CONTROLLER,40)"


def _resume_props(msg: bytes) -> dict[int, bytes]:
    assert m.nx_subtype(msg) == m.NXT_RESUME
    assert m.HEADER.unpack_from(msg)[2] == len(msg)
    body, props, ofs = msg[16:], {}, 0
    while ofs < len(body):
        t, n = struct.unpack_from("!HH", body, ofs)
        props[t] = body[ofs + 4:ofs + n]
        ofs += (n + 7) & ~7
    return props


def test_resume() -> None:
    pin = decode_packet_in2(sample())
    props = _resume_props(of.resume(pin))
    assert props[0] == FRAME and props[3] == b"\x1b" and props[5] == b"\x01"
    assert props[4] == b"\0" * 4 + (0x1234abcd).to_bytes(8, "big")
    assert props[8] == pin.continuation and 7 not in props
    # result bit written into a present register: exact; absent: masked.
    props = _resume_props(of.resume(pin, b"NEW", ("reg0", 3, 1)))
    assert props[0] == b"NEW"
    wrapped = encode_packet_in2(FRAME, metadata=[])
    base = decode_packet_in2(wrapped)
    md = dict((n, (v, k)) for n, v, k in decode_packet_in2(
        wrapped[:0] + _as_pin(props)).metadata)
    assert md["reg0"] == (0x0a00000a, None) and base.metadata == ()
    props = _resume_props(of.resume(pin, None, ("reg1", 5, 1)))
    md = dict((n, (v, k)) for n, v, k in decode_packet_in2(_as_pin(props)).metadata)
    assert md["reg1"] == (0x20, 0x20)
    props = _resume_props(of.resume(decode_packet_in2(sample(cookie=0xFFFFFFFFFFFFFFFF))))
    assert 4 not in props


def _as_pin(props: dict[int, bytes]) -> bytes:
    """Re-wrap resume properties as a packet-in to read them with our decoder."""
    body = b""
    for t, v in props.items():
        n = 4 + len(v)
        body += struct.pack("!HH", t, n) + v + b"\0" * ((-n) % 8)
    return struct.pack("!BBHIII", 6, 4, 16 + len(body), 0, 0x2320, 30) + body


_MD_FIELDS = ["reg%d" % i for i in range(16)] + ["metadata", "pkt_mark", "ct_mark", "ct_state",
                                                 "tun_id", "in_port"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_MD_FIELDS), st.integers(0, 2**64 - 1),
                          st.one_of(st.none(), st.integers(0, 2**64 - 1))), max_size=8))
def test_metadata_decoding_equals_match_normalisation(items: list) -> None:
    from ofctrl.fields import FIELDS
    norm = []
    for name, value, mask in items:
        f = FIELDS[name]
        top = (1 << f.n_bits) - 1
        value &= top if name != "in_port" else 0xFEFF
        mask = None if mask is None or not f.maskable or name == "in_port" else mask & top
        norm.append((name, value, mask))
    expected = Match(norm)
    pin = decode_packet_in2(encode_packet_in2(FRAME, metadata=expected.items))
    assert Match(pin.metadata) == expected
    assert dict((n, (v, k)) for n, v, k in pin.metadata) == expected.as_dict()
