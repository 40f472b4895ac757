"""Fuzz the DHCPv6 prefix-delegation parsers: any bytes after a valid
IPv6/UDP header, and any frame at all, never raise; what parses obeys C's
checks."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.pinctrl import prefix_delegation as PD
from controller.pinctrl.frames import parse
from tests.pinctrl.test_prefix_delegation import (
    ENTRY, client_id, ia_pd, ia_prefix, opt, pin, server_frame)

_OPTION = st.one_of(
    st.binary(max_size=40),
    st.builds(lambda aid, t1, t2, subs: ia_pd(aid, subs, t1, t2),
              st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFFFFFF),
              st.integers(0, 0xFFFFFFFF),
              st.lists(st.one_of(st.builds(ia_prefix, st.binary(min_size=16, max_size=16),
                                           st.integers(0, 255), st.integers(0, 0xFFFFFFFF),
                                           st.integers(0, 0xFFFFFFFF)),
                                 st.builds(lambda c: opt(13, struct.pack("!H", c)),
                                           st.integers(0, 3)),
                                 st.binary(max_size=12)), max_size=3).map(b"".join)),
    st.builds(lambda b: opt(2, b), st.binary(max_size=200)),
    st.just(client_id()))
_BODY = st.lists(_OPTION, max_size=5).map(b"".join)


def _machine() -> PD.PrefixDelegation:
    pd = PD.PrefixDelegation(randrange=lambda n: 0, rand16=lambda: 0)
    pd.update(PD.PdInputs((ENTRY,)), 0, True)
    pd.run(0)                        # SOLICIT with IAID 0
    return pd


@settings(max_examples=400, deadline=None)
@given(_BODY, st.sampled_from([PD.MSG_ADVERTISE, PD.MSG_REPLY]), st.integers(0, 40))
def test_structured_messages(body: bytes, mtype: int, cut: int) -> None:
    frame = server_frame(mtype, body)
    frame = frame[:len(frame) - cut] if cut else frame
    h = parse(frame)
    adv = PD.parse_advertise(frame, h)
    if adv is not None:
        aid, options = adv
        assert 0 <= aid <= 0xFFFFFFFF
        req = PD.request_frame(frame, h, options)
        assert parse(req).tp_src == 546
    rep = PD.parse_reply(frame, h)
    if rep is not None:
        assert len(rep.prefix) == 16 and -128 <= rep.plen <= 127
        assert len(rep.server_duid) <= PD.MAX_DUID
    out = _machine().handle(pin(frame))
    assert out.drop is None and len(out.messages) <= 1


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_frames(frame: bytes) -> None:
    out = _machine().handle(pin(frame))
    assert out.drop is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_arbitrary_udp_payload(payload: bytes) -> None:
    pd = _machine()
    for mtype in (PD.MSG_ADVERTISE, PD.MSG_REPLY):
        # the raw bytes after the type and xid, UDP/IPv6 lengths matching
        frame = server_frame(mtype, payload, xid=0)
        assert parse(frame).l3_end == len(frame)
        pd.handle(pin(frame))
    pd.update(PD.PdInputs((ENTRY,)), 1, True)
    pd.run(10**7)
