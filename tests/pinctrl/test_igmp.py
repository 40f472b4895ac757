"""IGMP/MLD parsing and the snooping table (controller.pinctrl.igmp)."""

from __future__ import annotations

import pytest

from controller.pinctrl import frames
from controller.pinctrl.igmp import (
    FWD_NONE, FWD_QUERY, FWD_REPORT, JOIN, LEAVE, MROUTER, McastError, Snooping, group_str,
    parse_igmp, parse_mld)
from integration.mcast_frames import (
    IGMP_LEAVE, IGMP_QUERY, IGMPV1_REPORT, IGMPV2_REPORT, MLD_DONE, MLD_QUERY, MLD_REPORT,
    igmp_v2_frame, igmp_v3_report_frame, mld_v1_frame, mld_v2_report_frame)
from integration.pinctrl_frames import ip4_bytes, ip6_bytes

MAC, IP, IP6 = "0a:00:00:00:00:01", "10.0.0.1", "fe80::1"
V4M = b"\0" * 10 + b"\xff\xff"


def g4(text: str) -> bytes:
    return V4M + ip4_bytes(text)


def igmp(frame: bytes):
    return parse_igmp(frame, frames.parse(frame))


def mld(frame: bytes):
    return parse_mld(frame, frames.parse(frame))


@pytest.mark.parametrize("mtype", [IGMPV1_REPORT, IGMPV2_REPORT])
def test_igmp_v1_v2_report_joins_the_header_group(mtype: int) -> None:
    out = igmp(igmp_v2_frame(MAC, IP, mtype, "239.1.1.1"))
    assert out.ops == ((JOIN, g4("239.1.1.1")),)
    assert out.forward == FWD_REPORT


def test_igmp_leave_and_query() -> None:
    out = igmp(igmp_v2_frame(MAC, IP, IGMP_LEAVE, "239.1.1.1"))
    assert out.ops == ((LEAVE, g4("239.1.1.1")),) and out.forward == FWD_REPORT
    out = igmp(igmp_v2_frame(MAC, IP, IGMP_QUERY, "0.0.0.0", max_resp=100))
    assert out.ops == ((MROUTER, bytes(16)),) and out.forward == FWD_QUERY


def test_igmp_unknown_type_does_nothing_and_is_not_forwarded() -> None:
    out = igmp(igmp_v2_frame(MAC, IP, 0x30, "239.1.1.1"))
    assert out.ops == () and out.forward == FWD_NONE


def test_igmp_v3_records_include_without_sources_is_a_leave() -> None:
    frame = igmp_v3_report_frame(MAC, IP, [
        (2, "239.0.0.1", []),                    # MODE_IS_EXCLUDE {} -> join
        (1, "239.0.0.2", []),                    # MODE_IS_INCLUDE {} -> leave
        (3, "239.0.0.3", []),                    # TO_INCLUDE {} -> leave
        (1, "239.0.0.4", ["10.0.0.9"]),          # MODE_IS_INCLUDE {S} -> join
        (6, "239.0.0.5", ["10.0.0.9", "10.0.0.8"]),   # BLOCK_OLD -> join (as OVS)
    ])
    assert igmp(frame).ops == ((JOIN, g4("239.0.0.1")), (LEAVE, g4("239.0.0.2")),
                               (LEAVE, g4("239.0.0.3")), (JOIN, g4("239.0.0.4")),
                               (JOIN, g4("239.0.0.5")))


def test_igmp_v3_behind_the_router_alert_option() -> None:
    frame = igmp_v3_report_frame(MAC, IP, [(4, "239.0.0.7", [])], router_alert=True)
    assert frame[14] == 0x46
    assert igmp(frame).ops == ((JOIN, g4("239.0.0.7")),)


def test_igmp_v3_unknown_record_type_stalls_the_walk_as_ovs() -> None:
    frame = igmp_v3_report_frame(MAC, IP, [(2, "239.0.0.1", []), (9, "239.0.0.2", []),
                                           (2, "239.0.0.3", [])])
    assert igmp(frame).ops == ((JOIN, g4("239.0.0.1")),)


def test_igmp_v3_record_count_past_the_end_stops() -> None:
    frame = bytearray(igmp_v3_report_frame(MAC, IP, [(2, "239.0.0.1", [])]))
    l4 = 14 + 20
    frame[l4 + 6:l4 + 8] = (50).to_bytes(2, "big")
    frame[l4 + 2:l4 + 4] = b"\0\0"
    frame[l4 + 2:l4 + 4] = frames.csum(bytes(frame[l4:])).to_bytes(2, "big")
    assert igmp(bytes(frame)).ops == ((JOIN, g4("239.0.0.1")),)


def test_igmp_bad_checksum_raises() -> None:
    frame = bytearray(igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.1.1.1"))
    frame[-1] ^= 1
    with pytest.raises(McastError, match="bad IGMP checksum"):
        igmp(bytes(frame))


def test_igmp_checksum_covers_the_ip_payload_not_the_l2_padding() -> None:
    frame = igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.1.1.1") + b"\x55" * 12
    assert igmp(frame).ops == ((JOIN, g4("239.1.1.1")),)


def test_igmp_truncated_raises() -> None:
    frame = igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.1.1.1")
    with pytest.raises(McastError):
        igmp(frame[:14 + 20 + 4])


def test_mld_v1_report_done_query() -> None:
    assert mld(mld_v1_frame(MAC, IP6, MLD_REPORT, "ff0e::1")).ops == \
        ((JOIN, ip6_bytes("ff0e::1")),)
    out = mld(mld_v1_frame(MAC, IP6, MLD_DONE, "ff0e::1"))
    assert out.ops == ((LEAVE, ip6_bytes("ff0e::1")),) and out.forward == FWD_REPORT
    out = mld(mld_v1_frame(MAC, IP6, MLD_QUERY, "::"))
    assert out.ops == ((MROUTER, bytes(16)),) and out.forward == FWD_QUERY


def test_mld_query_from_unspecified_source_is_not_an_mrouter_but_forwarded() -> None:
    out = mld(mld_v1_frame(MAC, "::", MLD_QUERY, "::"))
    assert out.ops == () and out.forward == FWD_QUERY


def test_mld_v2_records_skip_unknown_types_and_advance() -> None:
    frame = mld_v2_report_frame(MAC, IP6, [(4, "ff0e::1", []), (9, "ff0e::2", []),
                                           (3, "ff0e::3", []), (5, "ff0e::4", ["fe80::9"])])
    assert mld(frame).ops == ((JOIN, ip6_bytes("ff0e::1")), (LEAVE, ip6_bytes("ff0e::3")),
                              (JOIN, ip6_bytes("ff0e::4")))


def test_mld_bad_checksum_raises() -> None:
    frame = bytearray(mld_v1_frame(MAC, IP6, MLD_REPORT, "ff0e::1"))
    frame[-1] ^= 0x10
    with pytest.raises(McastError, match="bad MLD checksum"):
        mld(bytes(frame))


def test_group_str() -> None:
    assert group_str(g4("239.1.2.3")) == "239.1.2.3"
    assert group_str(ip6_bytes("ff0e:0:0::1")) == "ff0e::1"


# ---------------------------------------------------------------- table
def test_join_refresh_leave() -> None:
    s = Snooping()
    assert s.join(g4("239.0.0.1"), 5, 100) is True
    assert s.run(100) is True            # new group -> changed, cleared by run
    assert s.join(g4("239.0.0.1"), 5, 110) is False
    assert s.run(110) is False           # a refresh changes nothing
    assert s.join(g4("239.0.0.1"), 6, 111) is False   # new port of a known group...
    assert s.run(111) is True            # ...still a change
    assert s.members() == {g4("239.0.0.1"): (5, 6)}
    assert s.leave(g4("239.0.0.1"), 5) is True
    assert s.members() == {g4("239.0.0.1"): (6,)}
    assert s.leave(g4("239.0.0.1"), 5) is False


def test_group_expires_idle_time_after_last_report() -> None:
    s = Snooping()
    s.set_idle_time(20)
    s.join(g4("239.0.0.1"), 1, 1000)
    s.join(g4("239.0.0.2"), 1, 1005)
    s.run(1000)
    assert s.next_wake_ms() == 1020 * 1000
    s.run(1019)
    assert len(s.members()) == 2
    assert s.run(1020) is True
    assert s.members() == {g4("239.0.0.2"): (1,)}
    s.run(1025)
    assert s.members() == {} and s.groups == {}


def test_idle_time_is_clamped_and_shifts_expiry() -> None:
    s = Snooping()
    s.join(g4("239.0.0.1"), 1, 0)                 # expires at 300
    s.set_idle_time(5)                           # clamped to 15: expiry 15
    assert s.idle_time == 15
    assert s.groups[g4("239.0.0.1")][1] == 15
    s.set_idle_time(99999)
    assert s.idle_time == 3600


def test_table_size_evicts_least_recently_reported_group() -> None:
    s = Snooping()
    s.set_max_entries(3)
    assert s.max_entries == 10
    for i in range(10):
        s.join(g4("239.0.0.%d" % i), 1, 0)
    s.join(g4("239.0.0.0"), 1, 1)                 # refresh: 239.0.0.1 is now the LRU
    s.join(g4("239.0.0.99"), 1, 2)
    assert g4("239.0.0.1") not in s.groups and len(s.groups) == 10


def test_mrouter_port_cannot_join_and_expires_after_180s() -> None:
    s = Snooping()
    assert s.add_mrouter(7, 0) is True
    assert s.join(g4("239.0.0.1"), 7, 0) is False
    assert s.members() == {}
    s.run(0)
    assert s.run(179) is False and s.mrouter_ports() == (7,)
    assert s.run(180) is True and s.mrouter_ports() == ()


def test_flush() -> None:
    s = Snooping()
    s.join(g4("239.0.0.1"), 1, 0)
    s.add_mrouter(2, 0)
    s.run(0)
    s.flush()
    assert s.members() == {} and s.mrouter_ports() == () and s.run(0) is True
