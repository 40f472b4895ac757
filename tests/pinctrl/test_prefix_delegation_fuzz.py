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


_TEXT = st.text(alphabet="0123456789abcdefABCDEF:./ -x", max_size=60)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, max_size=3), st.lists(_TEXT, max_size=3), _TEXT)
def test_planner_and_seed_on_any_strings(gw_macs: list[str], macs: list[str],
                                         pd_list: str) -> None:
    from tests.pinctrl.test_prefix_delegation import CH, _world
    pbs, by_name, lds = _world()
    pbs[0].mac = gw_macs
    pbs[1].mac = macs
    pbs[1].options = dict(pbs[1].options, ipv6_ra_pd_list=pd_list)
    got = PD.pd_inputs(pbs, CH, by_name, lds)
    for e in got.entries:
        assert len(e.ea) == 6 and len(e.ipv6) == 16 and len(e.cmac) == 6
    seeded = PD.seed(pd_list)
    if seeded is not None:
        assert len(seeded[1]) == 16
    pd = PD.PrefixDelegation(randrange=lambda n: 0, rand16=lambda: 0)
    pd.update(got, 0, True)
    pd.run(0)
