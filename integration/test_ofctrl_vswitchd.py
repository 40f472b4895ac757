"""ofctrl against a real ovs-vswitchd (dummy datapath, private temp dir).

Checks that `ovs-ofctl dump-flows` ends exactly equal to the desired table
after installs, changes, deletes, a vswitchd kill+restart mid-install and a
session restart (atomic replace: a dump-aggregate poller never sees the
count drop), and that a flow OVS rejects is logged with its text while the
rest installs.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from typing import Any, Callable, Iterator

import ovs.poller
import pytest

from integration.ofswitch import Vswitchd
from ofctrl import messages as m
from ofctrl.desired import DesiredFlowTable
from ofctrl.flow import Flow
from ofctrl.match import Match
from ofctrl.ofpacts import Group, Resubmit, SetField
from ofctrl.session import S_UPDATE_FLOWS, OfctrlSession

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("ovs-vswitchd") is None, reason="needs ovs-vswitchd"),
]


@pytest.fixture
def vsd() -> Iterator[Vswitchd]:
    with Vswitchd(prefix="ofctrl-it-") as v:
        yield v


def text_of(f: Flow) -> str:
    mt = f.match.to_string()
    s = ("cookie=%#x, " % f.cookie if f.cookie else "") + ("table=%d, " % f.table if f.table else "")
    return s + "priority=%d" % f.priority + ("," + mt if mt else "") + " actions=" + f.actions_string()


def make_flow(i: int, variant: int = 0) -> Flow:
    table = 8 + i % 30
    match = Match([("metadata", 1 + i // 1000, None), ("reg14", i % 1000, None)])
    acts = (SetField("reg15", (i + variant) % 4096 + 1), Resubmit(table=table + 1))
    return Flow(table, 100 + i % 3, match, acts, cookie=i & 0xFFFFFFFF)


def expected(*tables: DesiredFlowTable, skip: Callable[[Flow], bool] = lambda f: False) -> set[str]:
    return {text_of(f) for t in tables for f in t.flows() if not skip(f)}


def pump(sess: OfctrlSession, lflows: DesiredFlowTable, pflows: DesiredFlowTable,
         done: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        sess.run()
        sess.put(lflows, pflows, 0, True, True)
        sess.run()
        if (sess.state == S_UPDATE_FLOWS and not sess.initial_clear and not sess.has_backlog()
                and not sess._flow_updates and done()):
            return
        p = ovs.poller.Poller()
        sess.wait(p)
        p.timer_wait(50)
        p.block()
    raise AssertionError("timeout; state=%s connected=%s" % (sess.state, sess.is_connected()))


def install_change_delete(vsd: Vswitchd, n: int) -> None:
    lflows, pflows = DesiredFlowTable(), DesiredFlowTable()
    for i in range(n):
        lflows.add(make_flow(i), owner=i)
    sess = OfctrlSession(vsd.target)
    try:
        pump(sess, lflows, pflows, lambda: True, timeout=120)
        assert vsd.flow_count() == n
        assert vsd.dump() == expected(lflows)
        step = max(1, n // 1000)
        changed = list(range(0, n, step))[:1000]
        for i in changed:  # change 1k
            lflows.remove(i)
            lflows.add(make_flow(i, variant=7), owner=i)
        deleted = list(range(1, n, step))[:1000]
        for i in deleted:  # delete 1k
            lflows.remove(i)
        pump(sess, lflows, pflows, lambda: True)
        assert vsd.flow_count() == n - len(deleted)
        assert vsd.dump() == expected(lflows)
    finally:
        sess.close()


def test_install_change_delete_10k(vsd: Vswitchd) -> None:
    install_change_delete(vsd, 10_000)


@pytest.mark.slow
def test_install_change_delete_100k(vsd: Vswitchd) -> None:
    install_change_delete(vsd, 100_000)


def test_vswitchd_restart_mid_install_resyncs(vsd: Vswitchd) -> None:
    lflows, pflows = DesiredFlowTable(), DesiredFlowTable()
    n = 20_000
    for i in range(n):
        lflows.add(make_flow(i), owner=i)
    sess = OfctrlSession(vsd.target)
    try:
        # Connect, negotiate and queue the big bundle, then kill vswitchd.
        deadline = time.time() + 30
        while sess.n_puts == 0 and time.time() < deadline:
            sess.run()
            sess.put(lflows, pflows, 0, True, True)
            time.sleep(0.001)
        assert sess.n_puts == 1
        vsd.kill_vswitchd()
        vsd.start_vswitchd()
        pump(sess, lflows, pflows, lambda: sess.conn.seqno >= 2, timeout=90)
        assert vsd.flow_count() == n
        assert vsd.dump() == expected(lflows)
    finally:
        sess.close()


def test_session_restart_is_atomic_replace(vsd: Vswitchd) -> None:
    lflows, pflows = DesiredFlowTable(), DesiredFlowTable()
    n = 10_000
    for i in range(n):
        lflows.add(make_flow(i), owner=i)
    sess = OfctrlSession(vsd.target)
    pump(sess, lflows, pflows, lambda: True)
    sess.close()
    assert vsd.flow_count() == n

    counts: list[int] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            counts.append(vsd.flow_count())

    th = threading.Thread(target=poll)
    th.start()
    try:
        time.sleep(0.1)
        lflows2, pflows2 = DesiredFlowTable(), DesiredFlowTable()
        for i in range(n):
            lflows2.add(make_flow(i), owner=i)
        sess2 = OfctrlSession(vsd.target)
        try:
            pump(sess2, lflows2, pflows2, lambda: True)
            time.sleep(0.2)
        finally:
            sess2.close()
    finally:
        stop.set()
        th.join()
    assert len(counts) >= 3
    assert min(counts) == n, counts
    assert vsd.dump() == expected(lflows2)


def test_rejected_flow_logged_rest_installed(vsd: Vswitchd) -> None:
    lflows, pflows = DesiredFlowTable(), DesiredFlowTable()
    for i in range(100):
        lflows.add(make_flow(i), owner=i)
    bad = Flow(10, 500, Match([("reg14", 4242, None)]), (Group(99),), 0xBAD)
    lflows.add(bad, owner="bad")
    sess = OfctrlSession(vsd.target)
    try:
        pump(sess, lflows, pflows, lambda: sess.conn.seqno >= 2)
        assert vsd.dump() == expected(lflows, skip=lambda f: f is bad)
        errs: list[Any] = [e for e in sess.errors if e[0] == "OFPBAC_BAD_OUT_GROUP"]
        assert errs, sess.errors
        assert "reg14=0x1092" in errs[0][1] and "group:99" in errs[0][1]
    finally:
        sess.close()


def test_groups_and_meters_installed(vsd: Vswitchd) -> None:
    from ofctrl.groups import Bucket, GroupSpec, GroupTable
    from ofctrl.meters import MeterBandConfig, MeterConfig, MeterTable
    from ofctrl.ofpacts import Meter, Output

    groups, meters = GroupTable(), MeterTable()
    lflows, pflows = DesiredFlowTable([groups, meters]), DesiredFlowTable()
    small = GroupSpec("select", (Bucket(0, (Output(1),), 100), Bucket(1, (Output(2),), 50)), "dp_hash")
    # 2000 buckets of 4 actions: ~200 kB, split into ADD + INSERT_BUCKET messages.
    big = GroupSpec("select", tuple(Bucket(i, (SetField("reg15", i + 1), Resubmit(table=40), Output(1), Output(2)), 1)
                                    for i in range(2000)), "dp_hash")
    g1 = groups.assign_group(small, "lf1")
    g2 = groups.assign_group(big, "lf2")
    m1 = meters.assign_id("__string: uuid 12345678-1234-1234-1234-123456789abc kbps burst stats "
                          "bands=type=drop rate=100 burst_size=20", "lf3")
    m2 = meters.assign_id("acl", "lf4")
    assert (g1, g2, m1, m2) == (1, 2, 1, 2)
    lflows.add(Flow(10, 100, Match([("reg14", 1, None)]), (Group(1),)), "lf1")
    lflows.add(Flow(10, 100, Match([("reg14", 2, None)]), (Group(2),)), "lf2")
    lflows.add(Flow(10, 100, Match([("reg14", 3, None)]), (Meter(1), Resubmit(table=11))), "lf3")
    lflows.add(Flow(10, 100, Match([("reg14", 4, None)]), (Meter(2), Resubmit(table=11))), "lf4")
    sb_meters = {"acl": MeterConfig("pktps", (MeterBandConfig("drop", 10, 0),))}
    sess = OfctrlSession(vsd.target, groups=groups, meters=meters)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            sess.run()
            sess.put(lflows, pflows, 1, True, True, sb_meters)
            if sess.cur_cfg == 1 and not sess.initial_clear:
                break
            time.sleep(0.005)
        assert sess.errors == []
        assert vsd.dump() == expected(lflows)
        gdump = vsd.ofctl("dump-groups", "br-int", "1")
        assert "group_id=1,type=select,selection_method=dp_hash,bucket=bucket_id:0,weight:100,actions=output:1," \
               "bucket=bucket_id:1,weight:50,actions=output:2" in gdump
        # OVS cannot print a >64 kB group back (its group desc length is 16 bits); the
        # flow using group 2 was accepted (no OFPBAC_BAD_OUT_GROUP), so the split ADD +
        # INSERT_BUCKET messages created it.
        assert len(m.group_mods(iter(range(1, 100)), m.OFPGC15_ADD, 1, 2, big.wire_buckets(), "dp_hash")) >= 3
        mdump = vsd.ofctl("dump-meters", "br-int")
        assert "meter=1 kbps burst stats bands=\ntype=drop rate=100 burst_size=20" in mdump
        assert "meter=2 pktps stats bands=\ntype=drop rate=10" in mdump
        # Drop the users: groups and meters go away.
        for o in ("lf1", "lf2", "lf3", "lf4"):
            lflows.remove(o)
        deadline = time.time() + 30
        while time.time() < deadline:
            sess.run()
            sess.put(lflows, pflows, 2, True, True, sb_meters)
            if sess.cur_cfg == 2:
                break
            time.sleep(0.005)
        assert vsd.dump() == set()
        assert "group_id" not in vsd.ofctl("dump-groups", "br-int")
        with pytest.raises(subprocess.CalledProcessError):
            vsd.ofctl("add-flow", "br-int", "table=10,priority=1,reg14=9,actions=group:2")
        assert "meter=" not in vsd.ofctl("dump-meters", "br-int")
    finally:
        sess.close()


def test_ct_flushes_accepted(vsd: Vswitchd) -> None:
    from ofctrl import messages as msgs

    class Zones:
        def __init__(self) -> None:
            self.queued, self.acked = [3, 4], []  # type: tuple[list[int], list[int]]
            self.xid: int | None = None

        def take_queued_flushes(self) -> list[int]:
            q, self.queued = self.queued, []
            return q

        def assign_barrier(self, xid: int) -> None:
            self.xid = xid

        def barrier_acked(self, xid: int) -> None:
            if xid == self.xid:
                self.acked = [3, 4]

        def openflow_reconnected(self) -> None:
            pass

    zones = Zones()
    lflows, pflows = DesiredFlowTable(), DesiredFlowTable()
    lflows.add(make_flow(1), 1)
    sess = OfctrlSession(vsd.target, ct_zones=zones)
    lb = [(6, msgs.ipv4_mapped(0x0A000001), 80, msgs.ipv4_mapped(0x0A000102), 8080)]
    try:
        deadline = time.time() + 30
        while time.time() < deadline and sess.cur_cfg != 1:
            sess.run()
            sess.put(lflows, pflows, 1, True, True, lb_ct_flushes=lb if sess.can_put() else ())
            time.sleep(0.005)
        assert sess.cur_cfg == 1
        assert zones.acked == [3, 4]
        assert sess.errors == [] and sess.conn.seqno == 1
        assert vsd.dump() == expected(lflows)
    finally:
        sess.close()


def test_lb_group_by_ovs_text(vsd: Vswitchd) -> None:
    from ofctrl.groups import GroupTable

    text = ("type=select,selection_method=dp_hash,bucket=bucket_id=0,weight:100,actions=ct(nat(dst=10.0.0.2:80),"
            "commit,table=15,zone=NXM_NX_REG13[0..15],exec(set_field:0x2/0x2->ct_mark)),bucket=bucket_id=1,"
            "weight:100,actions=ct(nat(dst=[fd0f::3]:8080),commit,table=15,zone=NXM_NX_REG13[0..15],"
            "exec(set_field:0x2/0x2->ct_mark))")
    groups = GroupTable()
    lflows, pflows = DesiredFlowTable([groups]), DesiredFlowTable()
    gid = groups.assign_id(text, "lb")
    lflows.add(Flow(10, 100, Match([("reg14", 1, None)]), (Group(gid),)), "lb")
    sess = OfctrlSession(vsd.target, groups=groups)
    try:
        pump(sess, lflows, pflows, lambda: True)
        assert sess.errors == []
        gdump = vsd.ofctl("dump-groups", "br-int")
        assert ("group_id=1,type=select,selection_method=dp_hash,bucket=bucket_id:0,weight:100,actions=ct(commit,"
                "table=15,zone=NXM_NX_REG13[0..15],nat(dst=10.0.0.2:80),exec(set_field:0x2/0x2->ct_mark)),"
                "bucket=bucket_id:1,weight:100,actions=ct(commit,table=15,zone=NXM_NX_REG13[0..15],"
                "nat(dst=[fd0f::3]:8080),exec(set_field:0x2/0x2->ct_mark))") in gdump
        assert vsd.dump() == expected(lflows)
    finally:
        sess.close()
