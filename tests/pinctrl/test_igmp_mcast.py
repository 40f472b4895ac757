"""IP_Multicast config, querier frames and schedule, opcode 16, IGMP_Group sync
(controller.pinctrl.mcast)."""

from __future__ import annotations

import struct
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from os_ken.lib.packet import icmpv6, igmp, ipv4, ipv6, packet

from controller.pinctrl import frames
from controller.pinctrl.mcast import (
    MC_FLOOD, MC_FLOOD_L2, MC_MROUTER_FLOOD, PORT_BURST, McastConfig, McastSnoop, cleanup,
    igmp_query, load_config, mld_query)
from controller.pinctrl.openflow import packet_out, po_inject, resubmit_controller, set_field
from controller.pinctrl.packet_in import PacketIn
from integration.mcast_frames import (
    IGMP_LEAVE, IGMP_QUERY, IGMPV2_REPORT, MLD_REPORT, igmp_v2_frame, mld_v1_frame)

ETH = bytes.fromhex("0a0000000001")
IP4 = bytes((10, 0, 0, 254))
IP6 = bytes.fromhex("fe800000000000000000000000000001")
MAC, IP = "0a:00:00:00:00:05", "10.0.0.5"


def row(**kw: Any) -> Any:
    base: dict[str, Any] = dict(enabled=[True], querier=[True], eth_src="0a:00:00:00:00:01",
                                ip4_src="10.0.0.254", ip6_src="fe80::1", table_size=[],
                                idle_timeout=[], query_interval=[], query_max_resp=[], seq_no=0)
    base.update(kw)
    return SimpleNamespace(**base)


# ---------------------------------------------------------------- config
def test_defaults() -> None:
    cfg, warn = load_config(row())
    assert warn == []
    assert (cfg.enabled, cfg.querier_v4, cfg.querier_v6) == (True, True, True)
    assert (cfg.table_size, cfg.idle_time_s, cfg.query_interval_s, cfg.query_max_resp_s) == \
        (2048, 300, 150, 1)
    assert (cfg.eth_src, cfg.ip4_src, cfg.ip6_src) == (ETH, IP4, IP6)


def test_query_interval_defaults_to_half_idle_at_least_one() -> None:
    assert load_config(row(idle_timeout=[1]))[0].query_interval_s == 1
    assert load_config(row(idle_timeout=[40]))[0].query_interval_s == 20
    assert load_config(row(idle_timeout=[40], query_interval=[7]))[0].query_interval_s == 7


def test_querier_needs_enabled_addresses_and_mac() -> None:
    assert not load_config(row(enabled=[False]))[0].querier
    assert not load_config(row(querier=[]))[0].querier
    cfg, warn = load_config(row(ip4_src="", ip6_src="bogus"))
    assert (cfg.querier_v4, cfg.querier_v6) == (False, False)
    assert warn == ["MLD Querier enabled with invalid IPv6 src address",
                    "IGMP Querier enabled without a valid IPv4 or IPv6 address"]
    cfg, warn = load_config(row(eth_src="zz"))
    assert not cfg.querier and warn == ["IGMP Querier enabled with invalid ETH src address"]
    cfg, _ = load_config(row(ip6_src=""))
    assert (cfg.querier_v4, cfg.querier_v6) == (True, False)


# ---------------------------------------------------------------- frames
def test_igmp_query_bytes() -> None:
    f = igmp_query(ETH, IP4, 1)
    assert f[:14] == bytes.fromhex("01005e000001") + ETH + b"\x08\x00"
    ip = f[14:34]
    assert ip[:2] == b"\x45\x00" and struct.unpack("!H", ip[2:4])[0] == 32
    assert ip[4:8] == b"\0\0\x40\0" and ip[8] == 1 and ip[9] == 2
    assert ip[12:16] == IP4 and ip[16:20] == bytes((224, 0, 0, 1))
    assert frames.csum(ip) == 0
    body = f[34:]
    assert len(body) == 12 and frames.csum(body) == 0
    assert body[0] == 0x11 and body[1] == 10 and body[4:8] == bytes(4)
    assert body[8] == 0 and body[9] == 10 and body[10:12] == b"\0\0"
    pkt = packet.Packet(f)
    q = pkt.get_protocol(igmp.igmpv3_query)
    assert q is not None and q.maxresp == 10 and q.qqic == 10 and q.num == 0
    assert pkt.get_protocol(ipv4.ipv4).ttl == 1


def test_igmp_query_max_resp_wraps_at_8_bits() -> None:
    body = igmp_query(ETH, IP4, 30)[34:]
    assert body[1] == (300 & 0xFF) and body[9] == (300 & 0xFF) and frames.csum(body) == 0


def test_mld_query_bytes() -> None:
    f = mld_query(ETH, IP6, 2)
    assert f[:14] == bytes.fromhex("333300000000") + ETH + b"\x86\xdd"
    ip6 = f[14:54]
    assert struct.unpack("!IHBB", ip6[:8]) == (0x60000000, 36, 0, 1)
    assert ip6[8:24] == IP6 and ip6[24:40] == bytes.fromhex("ff02" + "00" * 13 + "01")
    assert f[54:62] == bytes((58, 0, 5, 2, 0, 0, 0, 0))
    mld = f[62:]
    assert len(mld) == 28 and mld[0] == 130 and mld[1] == 0
    assert struct.unpack("!H", mld[4:6])[0] == 2000 and mld[8:24] == bytes(16)
    assert mld[24] == 0 and mld[25] == 2 and mld[26:28] == b"\0\0"
    pkt = packet.Packet(f)
    assert pkt.get_protocol(ipv6.ipv6).hop_limit == 1
    ic = pkt.get_protocol(icmpv6.icmpv6)
    assert ic is not None and ic.type_ == 130
    h = frames.parse(f)
    assert frames.csum(mld, frames._pseudo6(h.nw_src, h.nw_dst, 58, 28)) == 0


# ---------------------------------------------------------------- handler
class Clock:
    def __init__(self, t: int = 1_000_000) -> None:
        self.t = t

    def __call__(self) -> int:
        return self.t


def pin(frame: bytes, dp: int = 1, port: int = 3) -> PacketIn:
    return PacketIn(packet=frame, table_id=0, cookie=0, reason=1, userdata=bytes(8),
                    metadata=(("metadata", dp, None), ("reg14", port, None)),
                    continuation=None, properties=b"")


def snoop(clock: Clock, **kw: Any) -> tuple[McastSnoop, list[str]]:
    calls: list[str] = []
    s = McastSnoop(notify_service=lambda: calls.append("svc"),
                   notify_main=lambda: calls.append("main"), clock=clock)
    cfg, _ = load_config(row(**kw))
    s.configure({1: cfg})
    return s, calls


def fwd(frame: bytes, dp: int, inport: int, outport: int) -> bytes:
    return packet_out(frame, set_field("metadata", dp) + set_field("reg14", inport)
                      + set_field("reg15", outport) + resubmit_controller(37))


def test_report_joins_and_is_forwarded_to_mrouters() -> None:
    clock = Clock()
    s, calls = snoop(clock)
    f = igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.1.1.1")
    out = s.handle(pin(f))
    assert out.drop is None and out.messages == [fwd(f, 1, 3, MC_MROUTER_FLOOD)]
    assert s.view() == {1: ({b"\0" * 10 + b"\xff\xff" + bytes((239, 1, 1, 1)): (3,)}, ())}
    assert "main" in calls and s.dirty


def test_query_is_an_mrouter_and_flooded_l2() -> None:
    s, _ = snoop(Clock())
    f = igmp_v2_frame(MAC, IP, IGMP_QUERY, "0.0.0.0")
    out = s.handle(pin(f, port=9))
    assert out.messages == [fwd(f, 1, 9, MC_FLOOD_L2)]
    assert s.view()[1][1] == (9,)


def test_disabled_or_unknown_datapath_is_ignored() -> None:
    s, _ = snoop(Clock(), enabled=[False])
    f = igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.1.1.1")
    assert s.handle(pin(f)).messages == [] and s.view() == {}
    assert s.handle(pin(f, dp=77)).messages == []


def test_bad_checksum_is_counted_warned_not_forwarded() -> None:
    s, _ = snoop(Clock())
    f = bytearray(mld_v1_frame(MAC, "fe80::5", MLD_REPORT, "ff0e::1"))
    f[-3] ^= 0xFF
    out = s.handle(pin(bytes(f)))
    assert out.drop is None and out.messages == []
    assert [(i.level, i.text) for i in out.intents] == \
        [("warn", "multicast snooping received bad MLD checksum")]
    assert s.stats["bad"] == 1


def test_non_ip_is_counted_and_warned() -> None:
    s, _ = snoop(Clock())
    out = s.handle(pin(bytes(12) + b"\x08\x06" + bytes(28)))
    assert out.messages == [] and s.stats["bad"] == 1
    assert [i.text for i in out.intents] == ["IGMP action on non-IP packet (eth_type 0x806)"]


def test_per_port_rate_limit_on_membership_changes() -> None:
    clock = Clock()
    s, _ = snoop(clock, table_size=[100000])
    n_ok = 0
    for i in range(PORT_BURST + 50):
        f = igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.2.%d.%d" % (i // 250, i % 250))
        out = s.handle(pin(f))
        assert len(out.messages) == 1            # forwarded regardless
        n_ok += not out.intents
    assert n_ok == PORT_BURST and s.stats["rate_limited"] == 50
    assert len(s.view()[1][0]) == PORT_BURST
    # refreshes of known memberships are never limited
    f = igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.2.0.0")
    assert s.handle(pin(f)).intents == []
    # another port has its own budget
    f = igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.9.9.9")
    assert s.handle(pin(f, port=4)).intents == []
    clock.t += 1000                              # one second refills PORT_RATE tokens
    f = igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.8.8.8")
    assert s.handle(pin(f)).intents == []


def test_leave_removes_port() -> None:
    s, _ = snoop(Clock())
    s.handle(pin(igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.1.1.1")))
    s.handle(pin(igmp_v2_frame(MAC, IP, IGMP_LEAVE, "239.1.1.1")))
    assert s.view() == {1: ({}, ())}


# ---------------------------------------------------------------- querier
def q4(dp: int = 1) -> bytes:
    return po_inject(igmp_query(ETH, IP4, 1), dp, MC_FLOOD, 40, reg="reg15", flag_bit=16)


def q6(dp: int = 1) -> bytes:
    return po_inject(mld_query(ETH, IP6, 1), dp, MC_FLOOD, 40, reg="reg15", flag_bit=16)


def test_querier_sends_at_once_then_every_interval() -> None:
    clock = Clock()
    s, _ = snoop(clock, query_interval=[5])
    assert s.next_wake_ms() == 0
    assert s.run(clock.t) == [q4(), q6()]
    assert s.next_wake_ms() == clock.t + 5000
    assert s.run(clock.t + 4999) == []
    assert s.run(clock.t + 5001) == [q4(), q6()]
    assert s.query_time_ms(1) == clock.t + 10001


def test_querier_off_without_querier_and_shorter_interval_pulls_in() -> None:
    clock = Clock()
    s, _ = snoop(clock, querier=[False])
    assert s.run(clock.t) == [] and s.next_wake_ms() is None
    s, _ = snoop(clock, query_interval=[100])
    s.run(clock.t)
    cfg = load_config(row(query_interval=[10]))[0]
    s.configure({1: cfg}, now_ms=clock.t + 1000)
    assert s.query_time_ms(1) == clock.t + 1000
    assert s.run(clock.t + 1000) == [q4(), q6()]


def test_seq_no_change_flushes_and_reports_the_datapath() -> None:
    clock = Clock()
    s, _ = snoop(clock)
    s.handle(pin(igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.1.1.1")))
    changed, flush = s.configure({1: load_config(row(seq_no=1))[0]})
    assert changed and flush == {1}
    assert s.view() == {1: ({}, ())}


def test_reenabled_table_keeps_default_size_as_c() -> None:
    clock = Clock()
    s, _ = snoop(clock, idle_timeout=[60])
    s.configure({1: load_config(row(idle_timeout=[60], enabled=[False]))[0]})
    s.configure({1: load_config(row(idle_timeout=[60]))[0]})
    s.handle(pin(igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.1.1.1")))
    inst = s._inst[1]
    assert inst.snoop is not None and inst.snoop.idle_time == 300


def test_groups_age_out_in_run_and_wake_main() -> None:
    clock = Clock()
    s, calls = snoop(clock, idle_timeout=[20], querier=[False])
    s.handle(pin(igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.1.1.1")))
    s.run(clock.t)
    calls.clear()
    assert s.next_wake_ms() == (clock.t // 1000 + 20) * 1000
    s.run(clock.t + 21_000)
    assert s.view() == {1: ({}, ())} and calls == ["main"]


# ---------------------------------------------------------------- SB sync
class Row(SimpleNamespace):
    deleted = False

    def delete(self) -> None:
        self.deleted = True


class Txn:
    def __init__(self) -> None:
        self.rows: list[Row] = []

    def insert(self, table: Any) -> Row:
        r = Row(uuid=uuid.uuid4(), ports=[])
        self.rows.append(r)
        return r


def test_sync_inserts_updates_and_deletes() -> None:
    clock = Clock()
    s, _ = snoop(clock)
    chassis = SimpleNamespace(uuid=uuid.uuid4())
    other = SimpleNamespace(uuid=uuid.uuid4())
    dp = SimpleNamespace(uuid=uuid.uuid4(), tunnel_key=1)
    pbs = {k: SimpleNamespace(uuid=uuid.uuid4(), tunnel_key=k) for k in (3, 4)}
    s.handle(pin(igmp_v2_frame(MAC, IP, IGMPV2_REPORT, "239.1.1.1"), port=3))
    s.handle(pin(mld_v1_frame(MAC, "fe80::5", MLD_REPORT, "ff0e::1"), port=4))
    s.handle(pin(mld_v1_frame(MAC, "fe80::5", MLD_REPORT, "ff0e::1"), port=3))
    stale = Row(uuid=uuid.uuid4(), address="239.9.9.9", datapath=[dp], chassis=[chassis],
                ports=[pbs[3]])
    foreign = Row(uuid=uuid.uuid4(), address="239.9.9.9", datapath=[dp], chassis=[other],
                  ports=[])
    existing = Row(uuid=uuid.uuid4(), address="239.1.1.1", datapath=[dp], chassis=[chassis],
                   ports=[pbs[4]])
    txn = Txn()
    n = s.sync(txn, None, [stale, foreign, existing], chassis, {1: dp},
               lambda d, p: pbs.get(p) if d == 1 else None)
    assert n > 0 and not s.dirty
    assert stale.deleted and not foreign.deleted and not existing.deleted
    assert [p.tunnel_key for p in existing.ports] == [3]
    got = {r.address: sorted(p.tunnel_key for p in r.ports) for r in txn.rows}
    assert got == {"ff0e::1": [3, 4], "mrouters": []}
    assert all(r.chassis == [chassis] and r.datapath == [dp] for r in txn.rows)


def test_sync_deletes_rows_of_disabled_datapaths_and_on_flush() -> None:
    clock = Clock()
    s, _ = snoop(clock, enabled=[False])
    chassis = SimpleNamespace(uuid=uuid.uuid4())
    dp = SimpleNamespace(uuid=uuid.uuid4(), tunnel_key=1)
    r = Row(uuid=uuid.uuid4(), address="mrouters", datapath=[dp], chassis=[chassis], ports=[])
    s.sync(Txn(), None, [r], chassis, {1: dp}, lambda d, p: None)
    assert r.deleted
    s2, _ = snoop(clock)
    r2 = Row(uuid=uuid.uuid4(), address="mrouters", datapath=[dp], chassis=[chassis], ports=[])
    txn = Txn()
    s2.sync(txn, None, [r2], chassis, {1: dp}, lambda d, p: None, flush={1})
    assert r2.deleted and [x.address for x in txn.rows] == ["mrouters"]


def test_sync_leaves_rows_of_non_local_datapaths() -> None:
    s, _ = snoop(Clock())
    chassis = SimpleNamespace(uuid=uuid.uuid4())
    far = SimpleNamespace(uuid=uuid.uuid4(), tunnel_key=9)
    r = Row(uuid=uuid.uuid4(), address="239.1.1.1", datapath=[far], chassis=[chassis], ports=[])
    s.sync(Txn(), None, [r], chassis, {}, lambda d, p: None)
    assert not r.deleted


def test_cleanup_deletes_everything_only_with_a_txn() -> None:
    rows = [Row(uuid=uuid.uuid4()) for _ in range(3)]
    assert cleanup(None, rows) is True and not any(r.deleted for r in rows)
    assert cleanup(object(), rows) is True and all(r.deleted for r in rows)


@pytest.mark.parametrize("cfg", [McastConfig()])
def test_empty_config_has_no_querier(cfg: McastConfig) -> None:
    assert not cfg.querier
