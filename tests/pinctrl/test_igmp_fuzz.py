"""Fuzzing the IGMP/MLD path: malformed frames are counted and dropped, never raise."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from controller.pinctrl import frames
from controller.pinctrl.igmp import McastError, parse_igmp, parse_mld
from controller.pinctrl.mcast import McastSnoop, load_config
from controller.pinctrl.packet_in import PacketIn
from controller.pinctrl.registry import dispatch
from controller.pinctrl.state import EMPTY_VIEW
from integration.mcast_frames import (
    IGMP_QUERY, IGMPV2_REPORT, MLD_QUERY, MLD_REPORT, igmp_v2_frame, igmp_v3_report_frame,
    mld_v1_frame, mld_v2_report_frame)
from tests.pinctrl.test_igmp_mcast import row

MAC = "0a:00:00:00:00:05"
SEEDS = [
    igmp_v2_frame(MAC, "10.0.0.5", IGMPV2_REPORT, "239.1.1.1"),
    igmp_v2_frame(MAC, "10.0.0.5", IGMP_QUERY, "0.0.0.0"),
    igmp_v3_report_frame(MAC, "10.0.0.5", [(2, "239.0.0.1", []), (1, "239.0.0.2", ["1.2.3.4"])]),
    mld_v1_frame(MAC, "fe80::5", MLD_REPORT, "ff0e::1"),
    mld_v1_frame(MAC, "fe80::5", MLD_QUERY, "::"),
    mld_v2_report_frame(MAC, "fe80::5", [(4, "ff0e::1", []), (1, "ff0e::2", ["fe80::9"])]),
]
OP_IGMP_USERDATA = (16).to_bytes(4, "big") + bytes(4)


def _pin(frame: bytes) -> PacketIn:
    return PacketIn(packet=frame, table_id=0, cookie=0, reason=1, userdata=OP_IGMP_USERDATA,
                    metadata=(("metadata", 1, None), ("reg14", 3, None)),
                    continuation=None, properties=b"")


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    seed = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(0, 6))):
        i = draw(st.integers(0, len(seed) - 1))
        seed[i] = draw(st.integers(0, 255))
    cut = draw(st.integers(0, len(seed)))
    tail = draw(st.binary(max_size=64))
    return bytes(seed[:cut]) + tail


FRAMES = st.one_of(mutated(), st.binary(max_size=200))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FRAMES)
def test_parsers_raise_only_mcast_error(frame: bytes) -> None:
    try:
        h = frames.parse(frame)
    except frames.FrameError:
        return
    for parse in (parse_igmp, parse_mld):
        try:
            out = parse(frame, h)
        except McastError:
            continue
        for op, group in out.ops:
            assert len(group) == 16


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(FRAMES, min_size=1, max_size=8))
def test_handler_never_raises_and_counts_bad_frames(batch: list[bytes]) -> None:
    from controller.pinctrl.mcast import attach
    s = McastSnoop(clock=lambda: 5_000_000)
    s.configure({1: load_config(row(table_size=[10]))[0]})
    attach(s)
    rejected = 0
    for frame in batch:
        out = dispatch(_pin(frame), EMPTY_VIEW)
        warned = [i for i in out.intents if getattr(i, "level", "") == "warn"
                  and ("checksum" in i.text or "non-IP" in i.text)]
        if out.drop is not None:
            assert not out.drop.startswith("opcode 16"), out.drop    # an exception escaped
            assert out.messages == []
        elif warned:
            rejected += 1
            assert out.messages == []
        else:
            assert len(out.messages) <= 1
    assert s.stats["bad"] == rejected
    s.run(5_000_000)
    for members, _mrouters in s.view().values():
        assert len(members) <= 10


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40), st.text(max_size=40),
       st.lists(st.integers(-2**40, 2**40), max_size=1), st.lists(st.integers(-2**40, 2**40),
                                                                    max_size=1))
def test_config_loader_never_raises(eth: str, ip4: str, ip6: str, idle: list[int],
                                    size: list[int]) -> None:
    cfg, warnings = load_config(row(eth_src=eth, ip4_src=ip4, ip6_src=ip6, idle_timeout=idle,
                                    table_size=size))
    assert 0 <= cfg.idle_time_s < 2**32 and 0 <= cfg.table_size < 2**32
    assert cfg.querier == (cfg.querier_v4 or cfg.querier_v6)
    if cfg.querier_v4:
        assert len(cfg.ip4_src) == 4 and len(cfg.eth_src) == 6
    if cfg.querier_v6:
        assert len(cfg.ip6_src) == 16 and len(cfg.eth_src) == 6
    assert all(isinstance(w, str) for w in warnings)
