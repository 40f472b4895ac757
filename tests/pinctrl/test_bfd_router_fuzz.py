"""Hypothesis fuzz of the router BFD packet checks and handler: random,
truncated and mutated frames never raise; every rejected packet is counted
once and changes nothing; every accepted one satisfies C's checks."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.pinctrl import bfd_router as B
from tests.pinctrl.test_bfd_router import (DISC, bfd_body, peer_frame, pin, spec,
                                           up_session)

SEEDS = [
    peer_frame(bfd_body(B.DOWN)), peer_frame(bfd_body(B.INIT, flags=B.F_POLL)),
    peer_frame(bfd_body(B.UP, flags=B.F_DEMAND)),
    peer_frame(bfd_body(B.DOWN), "2001:db8::2", "2001:db8::1"),
    peer_frame(bfd_body(B.ADMIN_DOWN, your=0)),
]


def _check_accepted(frame: bytes, src: str, msg: B.BfdMsg) -> None:
    assert msg.version == 1 and not msg.flags & (B.F_AUTH | B.F_MULTIPOINT)
    assert msg.length >= 24 and msg.mult and msg.my_disc
    assert not (msg.flags & B.F_POLL and msg.flags & B.F_FINAL)
    assert msg.state < B.INIT or msg.your_disc
    assert src


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=120))
def test_random_bytes(data: bytes) -> None:
    got = B.parse_bfd(data)
    if isinstance(got, tuple):
        _check_accepted(data, *got)


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(SEEDS), st.integers(0, 200), st.lists(
    st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=6))
def test_mutated_and_truncated_through_the_handler(seed: bytes, cut: int,
                                                   edits: list[tuple[int, int]]) -> None:
    frame = bytearray(seed[:max(cut, 0)] if cut < len(seed) else seed)
    for ofs, val in edits:
        if ofs < len(frame):
            frame[ofs] = val
    s, _calls, _clock = up_session(spec())
    before = s.snapshot()
    n_bad = sum(s.malformed.values())
    out = s.handle(pin(bytes(frame)))          # must not raise
    got = B.parse_bfd(bytes(frame))
    if isinstance(got, B.BfdDrop):
        assert sum(s.malformed.values()) == n_bad + 1 and s.malformed[got.kind] >= 1
        assert out.messages == [] and s.snapshot() == before
    else:
        _check_accepted(bytes(frame), *got)
        assert sum(s.malformed.values()) == n_bad
        src, msg = got
        matched = src == "10.0.0.2" and msg.your_disc == DISC
        assert (s.snapshot() != before) == matched
        for m in out.messages:
            assert m[:2] == b"\x06\x0d"                 # OF1.5 packet-out (F reply)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3), st.integers(0, 0x3F), st.integers(0, 255), st.integers(0, 255),
       st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1),
       st.integers(0, 2**32 - 1))
def test_any_header_fields(state: int, flags: int, mult: int, length: int, my: int,
                           your: int, tx: int, rx: int) -> None:
    body = struct.pack("!BBBBIIIII", 0x20, (state << 6) | flags, mult, length, my, your,
                       tx, rx, 0)
    s, _calls, clock = up_session(spec())
    s.handle(pin(peer_frame(body)))
    clock.t += 100_000
    s.run()                                    # the table stays usable
    s.sync([spec()], True)
