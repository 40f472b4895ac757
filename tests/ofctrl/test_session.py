"""The ofctrl session against the in-memory fake switch (real socket code)."""

from __future__ import annotations

import struct
import time
from typing import Any, Callable

import pytest

from ofctrl import messages as m
from ofctrl.desired import DesiredFlowTable
from ofctrl.flow import Flow, encode_instructions
from ofctrl.groups import Bucket, GroupSpec, GroupTable
from ofctrl.meters import MeterBandConfig, MeterConfig, MeterTable
from ofctrl.ofpacts import Conjunction, Group, Output, Resubmit
from ofctrl.session import S_UPDATE_FLOWS, OfctrlSession
from tests.ofctrl.fake_switch import FakeSwitch, OxmMatch


def mk(table: int, prio: int, reg0: int, out: int = 1, cookie: int = 0, **kw: int) -> Flow:
    return Flow(table, prio, OxmMatch(reg0=reg0, **kw), (Resubmit(table=table + 1), Output(out)), cookie)


def expected(*tables: DesiredFlowTable, skip: Callable[[Flow], bool] = lambda f: False) -> set[Any]:
    out = set()
    for t in tables:
        for d in t:
            inst = d.installed
            f = inst.flow if inst is not None else d.flow
            if skip(f):
                continue
            out.add((f.table, f.priority, f.match.encode(), f.cookie, encode_instructions(f.actions)))
    return out


class Env:
    def __init__(self, **kw: Any) -> None:
        self.sw = FakeSwitch()
        self.groups = GroupTable()
        self.meters = MeterTable()
        self.lflows = DesiredFlowTable([self.groups, self.meters])
        self.pflows = DesiredFlowTable()
        self.sess = OfctrlSession(self.sw.connect, groups=self.groups, meters=self.meters, **kw)
        fsm = self.sess.conn.fsm
        fsm.min_backoff = fsm.max_backoff = 2  # ovs.reconnect clamps set_backoff() to >= 1 s
        self.req_cfg = 0
        self.sb_meters: dict[str, MeterConfig] = {}

    def step(self, put: bool = True, changed: bool = True) -> None:
        self.sess.run()
        self.sw.run()
        if put:
            self.sess.put(self.lflows, self.pflows, self.req_cfg, changed, changed, self.sb_meters)
        self.sw.run()
        self.sess.run()
        self.sw.run()

    def settle(self, cond: Callable[[], bool] | None = None, n: int = 200) -> None:
        """Run until the session is idle (and `cond` holds)."""
        for _ in range(n):
            self.step()
            if not self.sess.is_connected():
                time.sleep(0.001)
            if (
                self.sess.state == S_UPDATE_FLOWS
                and not self.sess.initial_clear
                and not self.sess.has_backlog()
                and not self.sess._flow_updates
                and (cond is None or cond())
            ):
                # one more idle round
                self.step(changed=False)
                return
        raise AssertionError("session did not settle: state=%s" % self.sess.state)

    def close(self) -> None:
        self.sess.close()
        self.sw.drop_connections()


@pytest.fixture
def env() -> Any:
    e = Env()
    yield e
    e.close()


def test_initial_install_is_one_atomic_bundle(env: Env) -> None:
    for i in range(100):
        env.lflows.add(mk(10, 100, i, cookie=i), owner="lf%d" % (i % 10))
    env.pflows.add(mk(0, 50, 1000), owner="pb1")
    env.settle()
    assert env.sw.flow_set() == expected(env.lflows, env.pflows)
    assert len(env.sw.flows) == 101
    # TLV negotiated at the lowest free slot.
    assert env.sess.geneve_field == "tun_metadata0"
    assert [(t.option_class, t.option_type, t.option_len, t.index) for t in env.sw.tlv_maps] == [(0x102, 0x80, 4, 0)]
    # Everything went through bundle adds, starting with delete-all flows and groups.
    assert m.OFPT_FLOW_MOD not in env.sw.received
    assert env.sw.received.count(1000 + m.OFPT_FLOW_MOD) == 102  # 101 adds + delete all
    assert env.sw.received.count(1000 + m.OFPT_GROUP_MOD) == 1
    assert env.sw.n_commits == 1
    assert env.sess.conn.datapath_id == 0xABC


def test_tracked_changes_send_only_the_delta(env: Env) -> None:
    for i in range(50):
        env.lflows.add(mk(10, 100, i), owner="lf%d" % i)
    env.settle()
    before = env.sw.received.count(1000 + m.OFPT_FLOW_MOD)
    # modify one (remove+add with other actions), delete one, add one, re-add identical one
    env.lflows.remove("lf1")
    env.lflows.add(mk(10, 100, 1, out=7), owner="lf1")
    env.lflows.remove("lf2")
    env.lflows.add(mk(10, 100, 999), owner="lf999")
    env.lflows.remove("lf3")
    env.lflows.add(mk(10, 100, 3), owner="lf3")  # identical: merged, nothing sent
    assert env.lflows.change_tracked
    env.settle()
    sent = env.sw.received.count(1000 + m.OFPT_FLOW_MOD) - before
    assert sent == 4  # lf1: delete+add (as 23.03), lf2 delete, lf999 add; lf3 merged
    assert env.sw.flow_set() == expected(env.lflows)
    assert len(env.sw.flows) == 50


def test_cookie_change_uses_add(env: Env) -> None:
    env.lflows.add(mk(10, 100, 1, cookie=5), owner="a")
    env.settle()
    env.lflows.remove("a")
    env.lflows.add(mk(10, 100, 1, cookie=6), owner="a")
    env.settle()
    (v,) = env.sw.flows.values()
    assert v.cookie == 6


def test_full_compare_after_recompute(env: Env) -> None:
    for i in range(20):
        env.lflows.add(mk(10, 100, i), owner=i)
    env.settle()
    before = env.sw.received.count(1000 + m.OFPT_FLOW_MOD)
    env.lflows.clear()
    assert not env.lflows.change_tracked
    for i in range(5, 25):
        env.lflows.add(mk(10, 100, i, out=2 if i == 10 else 1), owner=i)
    env.settle()
    assert env.sw.flow_set() == expected(env.lflows)
    # 5 deleted, 5 added, 1 modified
    assert env.sw.received.count(1000 + m.OFPT_FLOW_MOD) - before == 11


def test_preference_allow_over_drop_over_conjunction(env: Env) -> None:
    key = OxmMatch(reg0=1)
    env.lflows.add(Flow(10, 100, key, (Conjunction(1, 1, 2),)), owner="conj")
    env.lflows.add(Flow(10, 100, key, ()), owner="drop")
    env.settle()
    (v,) = env.sw.flows.values()
    assert v.instructions == b""  # drop beats conjunction
    env.lflows.add(Flow(10, 100, key, (Output(3),)), owner="allow")
    env.settle()
    (v,) = env.sw.flows.values()
    assert v.instructions == encode_instructions((Output(3),))
    env.lflows.remove("allow")
    env.lflows.remove("drop")
    env.settle()
    (v,) = env.sw.flows.values()
    assert v.instructions == encode_instructions((Conjunction(1, 1, 2),))
    env.lflows.remove("conj")
    env.settle()
    assert env.sw.flows == {}


def test_conjunction_append_and_flood_remove(env: Env) -> None:
    key = OxmMatch(reg0=1)
    env.lflows.add_or_append(Flow(10, 100, key, (Conjunction(1, 1, 2),)), owner="A")
    env.lflows.add_or_append(Flow(10, 100, key, (Conjunction(2, 1, 2),)), owner="B")
    env.lflows.add(mk(10, 100, 50), owner="B")
    env.lflows.add(mk(10, 100, 51), owner="C")
    env.settle()
    assert len(env.lflows) == 3
    inst = {v.instructions for v in env.sw.flows.values()}
    assert encode_instructions((Conjunction(1, 1, 2), Conjunction(2, 1, 2))) in inst
    removed = env.lflows.flood_remove({"A"})
    assert removed == {"A", "B"}
    env.settle()
    assert len(env.sw.flows) == 1
    assert env.sw.flow_set() == expected(env.lflows)


def test_reconnect_resyncs_without_empty_moment(env: Env) -> None:
    for i in range(200):
        env.lflows.add(mk(10, 100, i), owner=i)
    env.settle()
    assert env.sw.min_flow_count_after_first_commit == 200
    env.sw.drop_connections()
    for i in range(200, 210):
        env.lflows.add(mk(10, 100, i), owner=i)
    env.settle(lambda: env.sw.n_commits >= 2)
    assert env.sw.flow_set() == expected(env.lflows)
    assert env.sw.min_flow_count_after_first_commit == 200  # atomic replace never went below
    assert env.sess.conn.seqno == 2


def test_error_is_logged_with_flow_text_and_rest_installs(env: Env) -> None:
    bad = Flow(10, 100, OxmMatch(reg0=77), (Group(99),), 0x77)
    env.sw.poison.append(Group(99).encode())
    for i in range(30):
        env.lflows.add(mk(10, 100, i), owner=i)
    env.lflows.add(bad, owner="bad")
    env.settle(lambda: env.sw.n_commits >= 1)
    assert env.sw.flow_set() == expected(env.lflows, skip=lambda f: f is bad)
    names = [e[0] for e in env.sess.errors]
    assert "OFPBAC_BAD_OUT_GROUP" in names
    texts = [e[1] for e in env.sess.errors if e[0] == "OFPBAC_BAD_OUT_GROUP"]
    assert "reg0=0x4d" in texts[0] and "group:99" in texts[0]
    assert env.sess.conn.seqno >= 2  # reset and resynced
    # Once the flow changes, it is tried again.
    env.sw.poison.clear()
    env.lflows.remove("bad")
    env.lflows.add(Flow(10, 100, OxmMatch(reg0=77), (Output(5),)), owner="bad")
    env.settle()
    assert env.sw.flow_set() == expected(env.lflows)


def test_req_cfg_acked_by_barrier(env: Env) -> None:
    env.lflows.add(mk(10, 100, 1), owner=1)
    env.req_cfg = 5
    env.sess.run()
    env.settle()
    assert env.sess.cur_cfg == 5
    # No flow change: req_cfg moves immediately when nothing is in flight.
    env.req_cfg = 6
    env.sess.put(env.lflows, env.pflows, 6, False, False)
    assert env.sess.cur_cfg == 6
    # A change: acked only after its barrier.
    env.lflows.add(mk(10, 100, 2), owner=2)
    env.sess.put(env.lflows, env.pflows, 7, True, False)
    assert env.sess.cur_cfg == 6
    env.req_cfg = 7
    env.settle()
    assert env.sess.cur_cfg == 7


def test_put_skipped_while_backlogged_or_not_ready(env: Env) -> None:
    env.lflows.add(mk(10, 100, 1), owner=1)
    assert not env.sess.put(env.lflows, env.pflows, 1)
    assert env.sess._skipped_last_time
    env.settle()
    assert len(env.sw.flows) == 1


def test_tlv_existing_mapping_reused() -> None:
    e = Env()
    e.sw.tlv_maps = [m.TlvMap(0x999, 1, 4, 0), m.TlvMap(0x102, 0x80, 4, 3)]
    e.settle()
    assert e.sess.geneve_field == "tun_metadata3"
    assert len(e.sw.tlv_maps) == 2
    e.close()


def test_tlv_lowest_free_and_race_retry() -> None:
    e = Env()
    e.sw.tlv_maps = [m.TlvMap(0x999, 1, 4, 0), m.TlvMap(0x999, 2, 4, 2)]
    e.sw.tlv_race = 1
    e.settle()
    # first attempt at slot 1 raced; retry found 0,1,2 used and took 3
    assert e.sess.geneve_field == "tun_metadata3"
    e.close()


class FakeCtZones:
    def __init__(self) -> None:
        self.queued = [5, 7]
        self.sent: dict[int, int | None] = {}
        self.acked: list[int] = []
        self.reconnects = 0

    def take_queued_flushes(self) -> list[int]:
        q, self.queued = self.queued, []
        for z in q:
            self.sent[z] = None
        return q

    def assign_barrier(self, xid: int) -> None:
        for z, x in self.sent.items():
            if x is None:
                self.sent[z] = xid

    def barrier_acked(self, xid: int) -> None:
        for z, x in list(self.sent.items()):
            if x == xid:
                self.acked.append(z)
                del self.sent[z]

    def openflow_reconnected(self) -> None:
        self.reconnects += 1


def test_ct_zone_flush_then_ack() -> None:
    e = Env()
    ct = FakeCtZones()
    e.sess.ct_zones = ct
    e.lflows.add(mk(10, 100, 1), owner=1)
    e.settle()
    assert e.sw.ct_flushed == [5, 7]
    assert sorted(ct.acked) == [5, 7]
    assert ct.reconnects == 1
    # flushes precede the bundle
    first_bundle = e.sw.received.index(m.OFPT_BUNDLE_CONTROL)
    flushes = [i for i, t in enumerate(e.sw.received) if t == m.OFPT_EXPERIMENTER]
    assert max(flushes) < first_bundle
    e.close()


def test_groups_added_in_bundle_and_deleted_when_unused(env: Env) -> None:
    spec = GroupSpec("select", (Bucket(0, (Output(1),), 100), Bucket(1, (Output(2),), 100)), "dp_hash")
    gid = env.groups.assign_group(spec, owner="lf-g")
    assert gid == 1
    env.lflows.add(Flow(10, 100, OxmMatch(reg0=1), (Group(gid),)), owner="lf-g")
    env.settle()
    assert list(env.sw.groups) == [1]
    assert env.sw.groups[1][0] == m.OFPGT_SELECT
    env.lflows.remove("lf-g")  # also drops the group reference
    env.settle()
    assert env.sw.groups == {}
    assert env.sw.flows == {}
    # id 1 is free again
    assert env.groups.assign_group(spec, owner="x") == 1


def test_large_group_split_into_insert_buckets(env: Env) -> None:
    buckets = tuple(Bucket(i, tuple(Output(j) for j in range(1, 40)), 1) for i in range(200))
    gid = env.groups.assign_group(GroupSpec("select", buckets, "dp_hash"), owner="big")
    assert gid is not None
    env.settle()
    gtype, parts = env.sw.groups[gid]
    assert len(parts) >= 2
    total_buckets = 0
    for p in parts:
        off = 0
        while off < len(p):
            total_buckets += 1
            off += struct.unpack_from("!H", p, off)[0]
    assert total_buckets == 200


def test_meters_string_and_named(env: Env) -> None:
    s_name = "__string: uuid 12345678-1234-1234-1234-123456789abc kbps burst stats bands=type=drop rate=100 burst_size=10"
    assert len("__string: uuid 12345678-1234-1234-1234-123456789abc ") == 52
    mid1 = env.meters.assign_id(s_name, owner="a")
    mid2 = env.meters.assign_id("acl-meter", owner="b")
    assert mid1 == 1 and mid2 == 2
    env.sb_meters = {"acl-meter": MeterConfig("pktps", (MeterBandConfig("drop", 10, 0),))}
    env.lflows.add(mk(10, 100, 1), owner="a")
    env.settle()
    assert set(env.sw.meters) == {mid1, mid2}
    cmd, flags, _ = struct.unpack_from("!HHI", env.sw.meters[mid1])
    assert flags == m.OFPMF_KBPS | m.OFPMF_BURST | m.OFPMF_STATS
    # band change -> modify
    env.sb_meters = {"acl-meter": MeterConfig("pktps", (MeterBandConfig("drop", 20, 0),))}
    n_before = env.sw.received.count(m.OFPT_METER_MOD)
    env.lflows.add(mk(10, 100, 2), owner="c")
    env.settle()
    assert env.sw.received.count(m.OFPT_METER_MOD) == n_before + 1
    assert struct.unpack_from("!HHI", env.sw.meters[mid2])[0] == m.OFPMC_MODIFY
    assert struct.unpack_from("!I", env.sw.meters[mid2], 12)[0] == 20
    env.lflows.remove("b")
    env.lflows.remove("a")
    env.settle()
    assert env.sw.meters == {}


def test_echo_request_answered_and_probe_sent() -> None:
    e = Env(probe_interval_ms=1000)
    e.settle()
    peer = e.sw.peers[0]
    peer.sock.setblocking(True)
    peer.sock.sendall(m.echo_request(4242, b"hi"))
    peer.sock.setblocking(False)
    got: list[bytes] = []
    orig = e.sw._handle

    def spy(p: Any, msg: bytes) -> None:
        got.append(msg)
        orig(p, msg)

    e.sw._handle = spy  # type: ignore[method-assign]
    for _ in range(5):
        e.step(put=False)
    assert any(g[1] == m.OFPT_ECHO_REPLY and m.HEADER.unpack_from(g)[3] == 4242 and g[8:] == b"hi" for g in got)
    # Idle for longer than the probe interval: we send our own echo request.
    deadline = time.time() + 3
    while time.time() < deadline and not any(g[1] == m.OFPT_ECHO_REQUEST for g in got):
        e.step(put=False)
        time.sleep(0.01)
    assert any(g[1] == m.OFPT_ECHO_REQUEST for g in got)
    assert e.sess.conn.seqno == 1  # the switch answered: still the same connection
    e.close()


def test_reconnect_backoff_when_refused() -> None:
    e = Env()
    e.sw.refuse_connections = True
    for _ in range(3):
        e.sess.run()
    assert not e.sess.is_connected()
    assert e.sess.has_backlog()
    e.sw.refuse_connections = False
    deadline = time.time() + 2
    while not e.sess.is_connected() and time.time() < deadline:
        e.sess.run()
        e.sw.run()
        time.sleep(0.001)
    assert e.sess.is_connected()
    e.close()


def test_set_target_resyncs_new_switch_and_stats(env: Env) -> None:
    from ofctrl.connection import mgmt_target

    assert mgmt_target("br-x", "/r") == "unix:/r/br-x.mgmt"
    for i in range(10):
        env.lflows.add(mk(10, 100, i), owner=i)
    env.settle()
    st = env.sess.stats()
    assert st["installed_lflows"] == 10 and st["connection_seqno"] == 1
    old = env.sw
    env.sw = FakeSwitch()
    env.sess.set_target(env.sw.connect)
    env.settle(lambda: env.sess.conn.seqno == 2)
    assert env.sw.flow_set() == expected(env.lflows)
    assert len(old.flows) == 10
    old.drop_connections()


def test_meter_error_logged_without_reconnect(env: Env) -> None:
    env.lflows.add(mk(10, 100, 1), owner="a")
    env.settle()
    env.sw.meters[1] = b"stale"  # someone else added meter 1 behind our back
    env.meters.assign_id("__string: uuid 12345678-1234-1234-1234-123456789abc pktps stats bands=type=drop rate=5",
                         owner="a")
    env.lflows.add(mk(10, 100, 2), owner="a")
    env.settle()
    env.step()
    assert [e[0] for e in env.sess.errors] == ["OFPMMFC_METER_EXISTS"]
    assert env.sess.conn.seqno == 1
    assert len(env.sw.flows) == 2
    assert env.sess.in_flight() == 0


def test_group_named_by_ovs_text_is_parsed(env: Env) -> None:
    from tests.ofctrl.test_messages import LB_GROUP

    gid = env.groups.assign_id(LB_GROUP, "lb")
    env.groups.assign_id("type=select,bucket=bogus_action:1", "bad")
    env.lflows.add(Flow(10, 100, OxmMatch(reg0=1), (Group(gid),)), owner="lb")
    env.settle()
    assert list(env.sw.groups) == [gid]
    assert env.sw.flow_set() == expected(env.lflows)


def test_backlog_reported_until_switch_drains(env: Env) -> None:
    env.settle()
    for i in range(5000):
        env.lflows.add(mk(10, 100, i), owner=i)
    assert env.sess.put(env.lflows, env.pflows, 1)
    env.sess.run()
    assert env.sess.has_backlog()  # ~1 MB does not fit in the socket buffer
    assert not env.sess.can_put()
    env.lflows.add(mk(10, 100, 99999), owner="late")
    assert not env.sess.put(env.lflows, env.pflows, 2)  # skipped, remembered
    env.req_cfg = 2
    env.settle()
    assert not env.sess.has_backlog()
    assert env.sw.flow_set() == expected(env.lflows)
    assert env.sess.cur_cfg == 2


def test_tx_queue_bound_resets_connection() -> None:
    e = Env(max_tx_bytes=50_000)
    e.settle()
    for i in range(2000):
        e.lflows.add(mk(10, 100, i), owner=i)
    assert e.sess.put(e.lflows, e.pflows, 1)
    assert not e.sess.is_connected()  # overflow: dropped, will reconnect and resync
    e.close()


def test_meter_support_asked_on_every_connection() -> None:
    """The session asks OFPMP_METER_FEATURES itself (no side connection)."""
    e = Env()
    e.settle(lambda: e.sess.meter_support is not None)
    assert e.sess.meter_support is True
    e.sw.max_meter = 0
    e.sw.drop_connections()
    e.settle(lambda: e.sess.meter_support is not None)
    assert e.sess.meter_support is False
    e.sw.max_meter = None          # refused: no datapath meters
    e.sw.drop_connections()
    e.settle(lambda: e.sess.meter_support is not None)
    assert e.sess.meter_support is False
    assert not e.sess.errors       # the refusal is an answer, not an error
    e.close()


# -- the initial install streamed into its bundle (put_partial) ---------------

def _until_initial_clear(env: Env) -> None:
    for _ in range(200):
        env.step(put=False)
        if env.sess.state == S_UPDATE_FLOWS and env.sess.initial_clear and env.sess.can_put():
            return
        time.sleep(0.001)
    raise AssertionError("no initial install armed: state=%s" % env.sess.state)


def test_partial_puts_fill_one_bundle_that_the_put_commits(env: Env) -> None:
    for i in range(20):
        env.lflows.add(mk(10, 100, i), owner=i)
    env.settle()
    old, commits = env.sw.flow_set(), env.sw.n_commits
    env.sw.drop_connections()          # restart: the switch keeps its flows
    env.lflows.clear()                 # and the agent recomputes
    _until_initial_clear(env)
    for part in range(3):
        for i in range(100 + 10 * part, 110 + 10 * part):
            env.lflows.add(mk(10, 100, i, out=2), owner=i)
        assert env.sess.put_partial(env.lflows, env.pflows)
        env.sw.run()
        env.sess.run()
        # nothing committed: the old flows are the dataplane until the put
        assert env.sess.bundle_open and env.sw.n_commits == commits
        assert env.sw.flow_set() == old
    assert not env.sess.put_partial(env.lflows, env.pflows)   # nothing new
    env.lflows.remove(100)             # changed after it was streamed
    env.lflows.add(mk(10, 100, 105, out=9), owner="x")
    env.pflows.add(mk(0, 50, 7), owner="pb")
    assert env.sess.put(env.lflows, env.pflows, 3, False, False)
    env.req_cfg = 3
    env.settle()
    assert env.sw.n_commits == commits + 1
    assert env.sw.flow_set() == expected(env.lflows, env.pflows)
    assert len(env.sw.flows) == 30 and not env.sess.bundle_open
    assert env.sess.cur_cfg == 3


def _open_bundle_cmds(env: Env) -> list[int]:
    """Flow-mod commands of the bundles the fake switch holds open."""
    env.sw.run()
    cmds = []
    for p in env.sw.peers:
        for msgs in p.bundles.values():
            cmds += [msg[25] for msg in msgs if msg[1] == m.OFPT_FLOW_MOD]
    return cmds


def test_partial_puts_after_the_initial_install_stream_only_additions(env: Env) -> None:
    for i in range(5):
        env.lflows.add(mk(10, 100, i), owner=i)
    env.settle()
    old, commits = env.sw.flow_set(), env.sw.n_commits
    env.lflows.remove(0)                        # deleted
    env.lflows.remove(1)                        # modified
    env.lflows.add(mk(10, 100, 1, out=7), owner=1)
    env.lflows.remove(2)                        # removed and re-added identically
    env.lflows.add(mk(10, 100, 2), owner=2)
    for i in range(10, 20):                     # new keys
        env.lflows.add(mk(10, 100, i), owner=i)
    assert env.sess.put_partial(env.lflows, env.pflows)
    assert _open_bundle_cmds(env) == [m.OFPFC_ADD] * 10
    assert not env.sess.bundle_open             # not an initial install's bundle
    env.sess.run()
    assert env.sw.flow_set() == old and env.sw.n_commits == commits
    assert not env.sess.put_partial(env.lflows, env.pflows)   # nothing new
    env.lflows.remove(10)                       # streamed, then gone again
    env.lflows.add(mk(10, 100, 20), owner=20)
    assert env.sess.put_partial(env.lflows, env.pflows)
    assert env.sess.put(env.lflows, env.pflows, 4, True, True)
    env.req_cfg = 4
    env.settle()
    assert env.sw.n_commits == commits + 1
    assert env.sw.flow_set() == expected(env.lflows, env.pflows)
    assert len(env.sw.flows) == 4 + 10 and env.sess.cur_cfg == 4


def test_partial_puts_during_a_recompute_add_new_keys_and_the_put_compares(env: Env) -> None:
    for i in range(3):
        env.lflows.add(mk(10, 100, i), owner=i)
    env.settle()
    assert not env.sess.put_partial(env.lflows, env.pflows)   # nothing changed
    kept = dict(env.sw.flows)
    commits = env.sw.n_commits
    env.lflows.clear()                          # a recompute, sliced
    env.lflows.add(mk(10, 100, 0), owner=0)     # as installed
    env.lflows.add(mk(10, 100, 5), owner=5)     # new
    assert env.sess.put_partial(env.lflows, env.pflows)
    assert _open_bundle_cmds(env) == [m.OFPFC_ADD]
    env.lflows.add(mk(10, 100, 1, out=3), owner=1)   # changed: left to the put
    env.lflows.add(mk(10, 100, 6), owner=6)
    env.lflows.remove(5)                        # streamed, then gone
    assert env.sess.put_partial(env.lflows, env.pflows)
    assert _open_bundle_cmds(env) == [m.OFPFC_ADD] * 2
    assert env.sess.put(env.lflows, env.pflows, 2, True, True)
    env.req_cfg = 2
    env.settle()
    assert env.sw.n_commits == commits + 1
    assert env.sw.flow_set() == expected(env.lflows) and len(env.sw.flows) == 3
    # flow 0 was never re-sent; 1 was modified, 2 deleted
    assert [env.sw.flows.get(k) is v for k, v in sorted(kept.items())] == [True, False, False]


def test_recompute_of_the_same_flows_streams_and_sends_nothing(env: Env) -> None:
    for i in range(3):
        env.lflows.add(mk(10, 100, i), owner=i)
    env.settle()
    kept, commits = dict(env.sw.flows), env.sw.n_commits
    env.lflows.clear()
    for i in range(3):
        env.lflows.add(mk(10, 100, i), owner=i)
        assert not env.sess.put_partial(env.lflows, env.pflows)
    assert _open_bundle_cmds(env) == []
    env.sess.put(env.lflows, env.pflows, 1, True, True)
    env.req_cfg = 1
    env.settle()
    assert env.sw.n_commits == commits and env.sw.flows == kept
    assert len(env.sess.installed_lflows) == 3


def test_idle_additions_bundle_is_discarded_and_its_flows_put_again(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    import ofctrl.session as session_mod

    for i in range(3):
        env.lflows.add(mk(10, 100, i), owner=i)
    env.settle()
    commits = env.sw.n_commits
    for i in range(10, 15):
        env.lflows.add(mk(10, 100, i), owner=i)
    assert env.sess.put_partial(env.lflows, env.pflows)
    assert len(env.sess.installed_lflows) == 8
    monkeypatch.setattr(session_mod, "STREAM_IDLE_MS", 0)
    env.step(put=False)
    assert len(env.sess.installed_lflows) == 3 and not env.sess.initial_clear
    assert _open_bundle_cmds(env) == []
    env.settle()
    assert env.sw.flow_set() == expected(env.lflows) and len(env.sw.flows) == 8
    assert env.sw.n_commits == commits + 1


def test_idle_open_bundle_is_discarded_and_the_install_rearmed(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    import ofctrl.session as session_mod

    _until_initial_clear(env)
    for i in range(10):
        env.lflows.add(mk(10, 100, i), owner=i)
    assert env.sess.put_partial(env.lflows, env.pflows)
    monkeypatch.setattr(session_mod, "STREAM_IDLE_MS", 0)
    env.step(put=False)
    assert not env.sess.bundle_open and env.sess.initial_clear
    assert len(env.sess.installed_lflows) == 0
    env.lflows.add(mk(10, 100, 99), owner=99)
    env.settle()
    assert env.sw.flow_set() == expected(env.lflows) and len(env.sw.flows) == 11
    assert env.sw.n_commits == 1
