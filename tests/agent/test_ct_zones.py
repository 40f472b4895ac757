from controller.binding.ct_zones import CtZones, PendingState
from tests.agent.fakes import FakeRow, dp


def flush_and_ack(z: CtZones, xid: int = 7) -> list[int]:
    zones = z.take_queued_flushes()
    z.assign_barrier(xid)
    z.barrier_acked(xid)
    return zones


def test_allocation_reserved_zero_and_lowest_free():
    z = CtZones()
    d = dp(1)
    z.recompute(["p1", "p2"], [d], {})
    assert 0 not in z.current.values()
    assert sorted(z.current.values()) == [1, 2, 3, 4]
    assert all(pe.state is PendingState.OF_QUEUED for pe in z.pending.values())
    assert set(z.current) == {"p1", "p2", f"{d.uuid}_dnat", f"{d.uuid}_snat"}


def test_state_machine_and_per_key_commit():
    z = CtZones()
    z.recompute(["p1", "p2"], [], {})
    br = FakeRow(external_ids={"other": "x"})
    assert z.commit(br) == 0            # nothing acked by OpenFlow yet
    assert br.writes == []
    assert sorted(flush_and_ack(z)) == [1, 2]
    assert z.commit(br) == 2
    assert sorted(br.writes) == [("setkey", "external_ids", "ct-zone-p1", "1"),
                                 ("setkey", "external_ids", "ct-zone-p2", "2")]
    z.db_committed()
    assert z.pending == {}
    # An idle iteration writes nothing.
    br.writes.clear()
    z.recompute(["p1", "p2"], [], br.external_ids)
    assert z.pending == {} and z.commit(br) == 0 and br.writes == []
    # Removing p2 queues a flush + delkey of exactly that key.
    z.recompute(["p1"], [], br.external_ids)
    assert flush_and_ack(z) == [2]
    assert z.commit(br) == 1
    assert br.writes == [("delkey", "external_ids", "ct-zone-p2")]


def test_restore_after_restart_keeps_zones():
    ext = {"ct-zone-p1": "5", "ct-zone-p2": "9", "ct-zone-": "3", "ct-zone-bad": "x"}
    z = CtZones()
    z.recompute(["p1", "p2", "p3"], [], ext)
    assert z.current == {"p1": 5, "p2": 9, "p3": 1}
    assert list(z.pending) == ["p3"]


def test_snat_request_steals_auto_zone():
    z = CtZones()
    d = dp(1)
    z.recompute(["p1"], [d], {})
    victim = z.current["p1"]
    d.external_ids = {"snat-ct-zone": str(victim)}
    z.recompute(["p1"], [d], {})
    assert z.current[f"{d.uuid}_snat"] == victim
    assert z.current["p1"] != victim
    assert len(set(z.current.values())) == 3


def test_openflow_reconnect_requeues_and_incremental_add_remove():
    z = CtZones()
    assert z.lport_added("a")
    assert not z.lport_added("a")
    z.take_queued_flushes()
    z.assign_barrier(3)
    z.openflow_reconnected()
    assert z.pending["a"].state is PendingState.OF_QUEUED
    assert z.lport_removed("a") and not z.lport_removed("a")
    assert z.pending["a"].add is False and z.current == {}
    assert z.list_text() == ""


def test_zone_range_knob():
    z = CtZones((10, 11))
    z.recompute(["a", "b", "c"], [], {})
    assert sorted(z.current.values()) == [10, 11] and len(z.current) == 2


def test_keep_absent_during_startup_grace():
    ext = {"ct-zone-p1": "5", "ct-zone-late": "9"}
    z = CtZones()
    z.recompute(["p1"], [], ext, keep_absent=True)
    assert z.current == {"p1": 5, "late": 9} and z.pending == {}
    z.recompute(["p1"], [], ext)            # grace over: the stale zone goes
    assert z.current == {"p1": 5} and z.pending["late"].add is False


def test_drop_absent_at_end_of_grace_matches_a_full_run():
    d = dp(3)
    ext = {"ct-zone-p1": "5", "ct-zone-late": "9", "ct-zone-gone_dnat": "12"}
    z = CtZones()
    z.recompute(["p1"], [d], ext, keep_absent=True)
    kept = dict(z.current)
    assert z.drop_absent(["p1"], [d]) is True
    full = CtZones()
    full.recompute(["p1"], [d], ext)
    assert z.current == full.current
    assert {n for n, pe in z.pending.items() if not pe.add} == {"late", "gone_dnat"}
    assert set(kept) - set(z.current) == {"late", "gone_dnat"}
    assert z.drop_absent(["p1"], [d]) is False


def test_datapath_becoming_local_matches_a_full_run():
    # incremental: zones of an existing datapath, then a new datapath + port
    old, new = dp(1), dp(2, external_ids={"snat-ct-zone": "9"})
    inc = CtZones()
    inc.recompute(["p1"], [old], {})
    assert inc.users_added(["p2"], [new]) is True
    full = CtZones()
    full.recompute(["p1"], [old], {})
    full.recompute(["p1", "p2"], [old, new], {})
    assert inc.current == full.current
    assert inc.current[f"{new.uuid}_snat"] == 9
    assert inc.pending[f"{new.uuid}_dnat"].state is PendingState.OF_QUEUED
    # a requested zone held by another user: only a full run may move it
    taken = dp(3, external_ids={"snat-ct-zone": str(inc.current["p1"])})
    assert inc.users_added([], [taken]) is None
