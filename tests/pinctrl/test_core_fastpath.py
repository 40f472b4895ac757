"""The packet-in fast paths give what the straightforward code gives.

``_decode_metadata`` (per-header plans) and the METADATA memo of
``decode_packet_in2`` are compared with a plain field-by-field reader kept
here, which uses the ofctrl field registry directly; ``reload_metadata``
(precomputed set_field templates) with :class:`SetField` encoding."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.pinctrl import openflow as of
from controller.pinctrl import packet_in as P
from ofctrl.fields import field_by_header
from ofctrl.match import Match, MatchError
from ofctrl.ofpacts import SetField

FRAME = bytes(14)


def reference_metadata(data: bytes) -> tuple[P.MetadataItem, ...]:
    """Metadata OXMs read one by one, with no caching or precomputation."""
    items: list[P.MetadataItem] = []
    fold = False
    ofs = 0
    while ofs < len(data):
        if ofs + 4 > len(data):
            raise P.PacketInError("truncated OXM header in metadata")
        hdr = int.from_bytes(data[ofs:ofs + 4], "big")
        cls, fld, masked, length = hdr >> 16, (hdr >> 9) & 0x7F, bool(hdr & 0x100), hdr & 0xFF
        ofs += 4
        exp = None
        if cls == 0xFFFF:
            if ofs + 4 > len(data) or length < 4:
                raise P.PacketInError("truncated experimenter OXM in metadata")
            exp = int.from_bytes(data[ofs:ofs + 4], "big")
            ofs += 4
            length -= 4
        if ofs + length > len(data):
            raise P.PacketInError("truncated OXM payload in metadata")
        body = data[ofs:ofs + length]
        ofs += length
        f = field_by_header(cls, fld, exp)
        if f is None or length == 0:
            continue
        width = length // 2 if masked else length
        if masked and width * 2 != length:
            raise P.PacketInError("odd masked OXM length %d for %s" % (length, f.name))
        if not f.variable and width != f.n_bytes:
            raise P.PacketInError("bad OXM width %d for %s" % (width, f.name))
        value = int.from_bytes(body[:width], "big")
        mask = int.from_bytes(body[width:], "big") if masked else None
        if f.name.startswith("xreg"):
            base = 2 * int(f.name[4:])
            for k, shift in ((0, 32), (1, 0)):
                part = 0xFFFFFFFF if mask is None else (mask >> shift) & 0xFFFFFFFF
                if part:
                    items.append(("reg%d" % (base + k), (value >> shift) & part,
                                  None if part == 0xFFFFFFFF else part))
        elif f.name == "in_port_oxm":
            if value >= 0xFFFFFFFF or 0xFF00 <= value < 0xFFFFFF00:
                raise P.PacketInError("in_port %#x outside the range OVS maps" % value)
            items.append(("in_port", value - 0xFFFF0000 if value >= 0xFF00 else value, None))
        elif f.name in P._FOLDED:
            fold = True
            items.append((f.name, value, mask))
        elif mask is None or mask == (1 << (8 * width)) - 1:
            items.append((f.name, value, None))
        elif mask:
            items.append((f.name, value & mask, mask))
    if not fold:
        return tuple(items)
    try:
        return Match(items).items
    except (MatchError, ValueError) as e:
        raise P.PacketInError("bad metadata: %s" % e) from e


def oxm(cls: int, fld: int, body: bytes, masked: bool = False, exp: int | None = None,
        length: int | None = None) -> bytes:
    n = len(body) + (4 if exp is not None else 0) if length is None else length
    head = struct.pack("!I", (cls << 16) | (fld << 9) | (0x100 if masked else 0) | (n & 0xFF))
    return head + (b"" if exp is None else struct.pack("!I", exp)) + body


# (class, field, experimenter, value bytes): registers (NXM and OF1.5 pairs),
# metadata, in_port (16 and 32 bit), ct_state (folded), pkt_mark, a tunnel
# metadata field, an unknown header and an unknown experimenter header.
HEADERS = [(0x0001, 0, None, 4), (0x0001, 14, None, 4), (0x0001, 15, None, 4),
           (0x8001, 0, None, 8), (0x8001, 7, None, 8), (0x8000, 2, None, 8),
           (0x0000, 0, None, 2), (0x8000, 0, None, 4), (0x0001, 105, None, 4),
           (0x0001, 33, None, 4), (0x0001, 40, None, 4), (0x0001, 90, None, 3),
           (0x0001, 127, None, 4), (0xFFFF, 3, 0x4F4E4600, 8)]



def _low(value: int, n: int) -> bytes:
    return value.to_bytes(32, "big")[32 - n:]


one_oxm = st.builds(
    lambda h, masked, value, mask, width_fix: oxm(
        h[0], h[1], (_low(value, h[3] + width_fix)
                     + (_low(mask, h[3] + width_fix) if masked else b"")),
        masked, h[2]),
    st.sampled_from(HEADERS), st.booleans(), st.integers(0, (1 << 64) - 1),
    st.sampled_from([0, (1 << 64) - 1]) | st.integers(0, (1 << 64) - 1),
    st.sampled_from([0] * 12 + [-1, 1]))


def decoded_both_ways(data: bytes) -> tuple[object, object, object]:
    def run(fn: object) -> object:
        try:
            return fn(data)  # type: ignore[operator]
        except P.PacketInError as e:
            return ("error", str(e))
    P._PLANS.clear()
    cold = run(P._decode_metadata)
    warm = run(P._decode_metadata)
    return run(reference_metadata), cold, warm


@settings(max_examples=400, deadline=None)
@given(st.lists(one_oxm, max_size=5), st.integers(0, 80))
def test_metadata_decode_matches_reference(oxms: list[bytes], cut: int) -> None:
    data = b"".join(oxms)
    for blob in (data, data[:cut]):
        ref, cold, warm = decoded_both_ways(blob)
        assert cold == ref and warm == ref


def packet_in_msg(metadata: bytes) -> bytes:
    def prop(ptype: int, value: bytes) -> bytes:
        n = 4 + len(value)
        return struct.pack("!HH", ptype, n) + value + b"\0" * ((-n) % 8)
    body = prop(P.NXPINT_PACKET, FRAME) + prop(P.NXPINT_METADATA, metadata)
    return struct.pack("!BBHIII", 6, 4, 16 + len(body), 0, 0x2320, 30) + body


@settings(max_examples=200, deadline=None)
@given(st.lists(one_oxm, max_size=5))
def test_remembered_metadata_decodes_as_fresh(oxms: list[bytes]) -> None:
    msg = packet_in_msg(b"".join(oxms))
    P._METADATA_SEEN.clear()
    results = []
    for _ in range(2):
        try:
            results.append(P.decode_packet_in2(msg).metadata)
        except P.PacketInError as e:
            results.append(("error", str(e)))
    ref = decoded_both_ways(b"".join(oxms))[0]
    assert results == [ref, ref]


def test_metadata_memo_is_bounded() -> None:
    P._METADATA_SEEN.clear()
    for i in range(P._METADATA_SEEN_MAX + 5):
        P.decode_packet_in2(packet_in_msg(oxm(0x0001, 0, i.to_bytes(4, "big"))))
    assert 0 < len(P._METADATA_SEEN) <= P._METADATA_SEEN_MAX


REGS = ["reg%d" % i for i in range(16)] + ["metadata", "in_port", "pkt_mark"]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(REGS), st.integers(0, 0xFFFFFFFF)
                       | st.sampled_from([0, 1, 0xFFFFFFFF])))
def test_reload_metadata_matches_set_field_encoding(values: dict[str, int]) -> None:
    md = tuple((n, v, None) for n, v in values.items())
    pin = P.PacketIn(packet=FRAME, table_id=0, cookie=0, reason=1, metadata=md,
                     userdata=b"", continuation=None, properties=b"")
    expected = b"".join(SetField(name, pin.reg(name)).encode()
                        for name in ["reg%d" % i for i in range(16)] + ["metadata"]
                        if pin.reg(name))
    assert of.reload_metadata(pin) == expected
