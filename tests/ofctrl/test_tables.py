"""Desired/installed tables and their diff, extend tables, seqno vectors."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ofctrl.desired import RANK_ALLOW, RANK_CONJ, RANK_DROP, AddrSetInfo, DesiredFlowTable
from ofctrl.flow import Flow
from ofctrl.groups import ExtendTable
from ofctrl.installed import InstalledFlowTable, update_by_compare, update_by_track
from ofctrl.messages import OFPFC_ADD, OFPFC_DELETE_STRICT, OFPFC_MODIFY_STRICT
from ofctrl.ofpacts import Conjunction, Output
from ofctrl.seqno import SeqnoTracker
from tests.ofctrl.fake_switch import OxmMatch

VECTORS = Path("/work/shared/ovn-at-vectors/ofctrl-seqno.json")


def fl(reg0: int, out: int | None = 1, cookie: int = 0, prio: int = 100) -> Flow:
    acts = () if out is None else (Output(out),)
    return Flow(10, prio, OxmMatch(reg0=reg0), acts, cookie)


class Recorder:
    def __init__(self) -> None:
        self.ops: list[tuple[int, Flow]] = []

    def __call__(self, cmd: int, flow: Flow) -> None:
        self.ops.append((cmd, flow))


def put(desired: DesiredFlowTable, installed: InstalledFlowTable) -> list[tuple[int, Flow]]:
    rec = Recorder()
    if desired.change_tracked:
        update_by_track(desired, installed, rec)
    else:
        update_by_compare(desired, installed, rec)
    desired.change_tracked = True
    return rec.ops


def switch_view(installed: InstalledFlowTable) -> dict[Any, Any]:
    return {(i.flow.table, i.flow.priority, i.flow.match): (i.flow.cookie, i.flow.actions) for i in installed}


def apply_ops(sw: dict[Any, Any], ops: list[tuple[int, Flow]]) -> None:
    for cmd, f in ops:
        key = (f.table, f.priority, f.match)
        if cmd == OFPFC_ADD:
            sw[key] = (f.cookie, f.actions)
        elif cmd == OFPFC_MODIFY_STRICT:
            assert key in sw
            sw[key] = (sw[key][0], f.actions)
        elif cmd == OFPFC_DELETE_STRICT:
            sw.pop(key, None)


def test_rank() -> None:
    assert DesiredFlowTable().add(fl(1), "a").rank == RANK_ALLOW  # type: ignore[union-attr]
    assert DesiredFlowTable().add(fl(1, None), "a").rank == RANK_DROP  # type: ignore[union-attr]
    conj = Flow(10, 1, OxmMatch(reg0=1), (Conjunction(1, 1, 2),))
    assert DesiredFlowTable().add(conj, "a").rank == RANK_CONJ  # type: ignore[union-attr]


def test_duplicate_for_same_owner_dropped() -> None:
    d = DesiredFlowTable()
    assert d.add(fl(1), "a") is not None
    assert d.add(fl(1, out=2), "a") is None
    assert d.add(fl(1, out=2), "b") is not None
    assert len(d) == 2
    assert sorted(map(str, d.owners_of(fl(1)))) == ["a"]


def test_key_hash_reused_for_lookup() -> None:
    d = DesiredFlowTable()
    f = fl(7)
    d.add(f, "x")
    assert list(d.by_key) == [f.key_hash]
    assert d.lookup(fl(7)) is not None
    assert d.lookup(fl(8)) is None


def test_remove_keeps_shared_flow_of_other_owner() -> None:
    d = DesiredFlowTable()
    d.add_or_append(Flow(10, 1, OxmMatch(reg0=1), (Conjunction(1, 1, 2),)), "a")
    d.add_or_append(Flow(10, 1, OxmMatch(reg0=1), (Conjunction(2, 2, 2),)), "b")
    (df,) = list(d)
    assert [a.format() for a in df.flow.actions] == ["conjunction(1,1/2)", "conjunction(2,2/2)"]
    assert df.flow.key_hash == Flow(10, 1, OxmMatch(reg0=1)).key_hash
    d.remove("a")
    assert len(d) == 1 and df.owners == ("b",)
    d.remove("b")
    assert len(d) == 0


def test_flood_remove_is_transitive() -> None:
    d = DesiredFlowTable()
    c = (Conjunction(1, 1, 2),)
    d.add_or_append(Flow(10, 1, OxmMatch(reg0=1), c), "a")
    d.add_or_append(Flow(10, 1, OxmMatch(reg0=1), c), "b")
    d.add_or_append(Flow(10, 1, OxmMatch(reg0=2), c), "b")
    d.add_or_append(Flow(10, 1, OxmMatch(reg0=2), c), "c")
    d.add(fl(3), "c")
    d.add(fl(4), "z")
    assert d.flood_remove({"a"}) == {"a", "b", "c"}
    assert [x.owners for x in d] == [("z",)]
    assert set(d.by_owner) == {"z"}


def test_remove_for_address_set_ip() -> None:
    d, inst = DesiredFlowTable(), InstalledFlowTable()
    ip1, ip2 = AddrSetInfo("as1", 0x0A000001, 0xFFFFFFFF), AddrSetInfo("as1", 0x0A000002, 0xFFFFFFFF)
    d.add(fl(1), "lf", as_info=ip1)
    d.add(fl(2), "lf", as_info=ip2)
    d.add(fl(3, prio=5), "lf", as_info=ip2)
    d.add(fl(4), "lf")
    put(d, inst)
    assert d.remove_for_as_ip("lf", ip2, 2)
    assert sorted(x.flow.match.items[0][1] for x in d) == [1, 4]
    ops = put(d, inst)
    assert sorted(c for c, _ in ops) == [OFPFC_DELETE_STRICT, OFPFC_DELETE_STRICT]
    assert not d.remove_for_as_ip("lf", ip2, 1)  # no longer tracked
    assert not d.remove_for_as_ip("lf", AddrSetInfo("other", 1, 1), 1)
    assert not d.remove_for_as_ip("lf", ip1, 2)  # count mismatch -> caller reprocesses
    assert d.remove_for_as_ip("nobody", ip1, 1)
    # A flow that becomes shared (conjunction append) is no longer tracked by IP.
    c = (Conjunction(1, 1, 2),)
    d.add_or_append(Flow(10, 1, OxmMatch(reg0=9), c), "x", as_info=ip1)
    d.add_or_append(Flow(10, 1, OxmMatch(reg0=9), c), "y", as_info=ip1)
    assert not d.remove_for_as_ip("x", ip1, 1)
    d.remove("lf")
    assert "lf" not in d.as_index


def test_extend_tables_follow_owner_removal() -> None:
    g = ExtendTable()
    d = DesiredFlowTable([g])
    assert g.assign_id("g1", "a") == 1
    assert g.assign_id("g2", "b") == 2
    assert g.assign_id("g1", "b") == 1
    d.add(fl(1), "a")
    d.remove("a")
    assert set(g.desired) == {"g1", "g2"}
    d.flood_remove({"b"})
    assert g.desired == {}
    assert g.assign_id("g3", "c") == 1  # lowest free id again


def test_extend_table_existing_peer_keeps_id() -> None:
    t = ExtendTable()
    assert t.assign_id("x", "o1") == 1
    assert [e.name for e in t.uninstalled()] == ["x"]
    t.sync()
    assert list(t.uninstalled()) == []
    t.remove_desired("o1")
    assert [e.name for e in t.unneeded()] == ["x"]
    # re-desired before the put: same id, peer again, nothing to delete
    assert t.assign_id("y", "o2") == 2
    assert t.assign_id("x", "o3") == 1
    assert list(t.unneeded()) == []
    t.remove_desired("o3")
    for e in list(t.unneeded()):
        t.remove_existing(e)
    assert t.assign_id("z", "o4") == 1


def test_compare_then_track() -> None:
    d, inst = DesiredFlowTable(), InstalledFlowTable()
    for i in range(5):
        d.add(fl(i), i)
    ops = put(d, inst)
    assert [c for c, _ in ops] == [OFPFC_ADD] * 5
    assert put(d, inst) == []
    d.remove(1)
    d.add(fl(1, out=9), 1)  # delete + add as separate tracked ops
    d.remove(2)
    d.remove(3)
    d.add(fl(3), 3)  # identical re-add: merged away
    ops = put(d, inst)
    assert [(c, f.match.items) for c, f in ops] == [
        (OFPFC_DELETE_STRICT, (("reg0", 1),)), (OFPFC_ADD, (("reg0", 1),)), (OFPFC_DELETE_STRICT, (("reg0", 2),))]
    assert len(inst) == 4


def test_track_conflict_and_cookie() -> None:
    d, inst = DesiredFlowTable(), InstalledFlowTable()
    d.add(fl(1, None, cookie=1), "drop")
    put(d, inst)
    d.add(fl(1, 5, cookie=2), "allow")
    ops = put(d, inst)
    assert [(c, f.cookie) for c, f in ops] == [(OFPFC_ADD, 2)]  # cookie change -> ADD
    d.remove("allow")
    ops = put(d, inst)
    assert [(c, f.actions) for c, f in ops] == [(OFPFC_ADD, ())]
    d.remove("drop")
    ops = put(d, inst)
    assert [c for c, _ in ops] == [OFPFC_DELETE_STRICT]
    assert len(inst) == 0


def test_recompute_compare_modifies() -> None:
    d, inst = DesiredFlowTable(), InstalledFlowTable()
    d.add(fl(1), "a")
    d.add(fl(2), "a")
    put(d, inst)
    d.clear()
    d.add(fl(1, out=3), "a")
    d.add(fl(3), "a")
    ops = put(d, inst)
    assert sorted((c, f.match.items) for c, f in ops) == [
        (OFPFC_ADD, (("reg0", 3),)), (OFPFC_MODIFY_STRICT, (("reg0", 1),)), (OFPFC_DELETE_STRICT, (("reg0", 2),))]


OPS = st.sampled_from(["add", "add", "conj", "remove", "flood", "clear", "put", "put", "untrack"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(OPS, st.integers(0, 5), st.integers(0, 3), st.sampled_from([None, 1, 2]),
                          st.integers(0, 1)), max_size=50))
def test_random_operations_switch_matches_preferred_desired(ops: list[tuple[str, int, int, int | None, int]]) -> None:
    """After any sequence of table operations and puts, the switch (ops
    applied) equals the installed view, and every key's installed actions are
    those of a most-preferred desired flow."""
    d, inst = DesiredFlowTable(), InstalledFlowTable()
    sw: dict[Any, Any] = {}
    for op, owner, reg, out, cookie in ops:
        if op == "add":
            d.add(fl(reg, out, cookie), owner)
        elif op == "conj":
            d.add_or_append(Flow(10, 100, OxmMatch(reg0=reg), (Conjunction(owner + 1, 1, 2),)), owner)
        elif op == "remove":
            d.remove(owner)
        elif op == "flood":
            gone = d.flood_remove({owner})
            assert owner in gone
            assert not any(o in gone for x in d for o in x.owners)
        elif op == "clear":
            d.clear()
        elif op == "untrack":
            d.untrack()
        else:
            apply_ops(sw, put(d, inst))
    apply_ops(sw, put(d, inst))
    assert sw == switch_view(inst)
    keys = {(f.table, f.priority, f.match) for f in d.flows()}
    assert set(sw) == keys
    assert len(d) == sum(1 for _ in d)
    for key, (_cookie, acts) in sw.items():
        cands = [x for x in d if (x.flow.table, x.flow.priority, x.flow.match) == key]
        best = min(c.rank for c in cands)
        assert any(c.rank == best and c.flow.actions == acts for c in cands)
    # Owner index and flows agree.
    for own, flows in d.by_owner.items():
        for x in flows:
            assert own in x.owners
    for x in d:
        for o in x.owners:
            assert x in d.by_owner[o]


# ------------------------------------------------------------------ seqno
def _run_seqno(argv: list[str]) -> list[str]:
    out: list[str] = []
    cmd = argv[0]
    t = SeqnoTracker()
    if cmd == "ofctrl_seqno_add_type":
        for _ in range(int(argv[1])):
            out.append(str(t.add_type()))
        return out
    assert cmd == "ofctrl_seqno_ack_seqnos"
    batch = argv[1] == "true"
    args = iter(argv[2:])
    n_types = int(next(args))
    n_reqs = 0
    for i in range(n_types):
        assert t.add_type() == i
        for _ in range(int(next(args))):
            t.update_create(i, int(next(args)))
            n_reqs += 1
    out.append("ofctrl-seqno-req-cfg: %d" % n_reqs)

    def dump(st_: int) -> None:
        acked = t.acked_seqnos(st_)
        out.append("ofctrl-seqno-type: %d" % st_)
        out.append("  last-acked %d" % acked.last_acked)
        for v in sorted(acked.acked):
            assert v in acked
            out.append("  %d" % v)

    for _ in range(int(next(args))):
        t.run(int(next(args)))
        if not batch:
            for s in range(n_types):
                dump(s)
    if batch:
        for s in range(n_types):
            dump(s)
    return out


def _seqno_vectors() -> list[Any]:
    # A missing vector file is an error (collection fails), not zero tests.
    vectors: list[Any] = json.loads(VECTORS.read_text())["vectors"]
    assert vectors, f"no vectors in {VECTORS}"
    return vectors


@pytest.mark.parametrize("vec", _seqno_vectors(), ids=lambda v: v["command"].split(" ", 2)[-1])
def test_ofctrl_seqno_vectors(vec: dict[str, Any]) -> None:
    argv = shlex.split(vec["command"])[2:]
    assert _run_seqno(argv) == vec["expected"]


def test_seqno_flush_and_req_cfg() -> None:
    t = SeqnoTracker()
    a = t.add_type()
    t.update_create(a, 10)
    t.update_create(a, 10)  # same value: no new request
    assert t.get_req_cfg() == 1
    t.flush()
    assert t.get_req_cfg() == 0
    t.run(5)
    assert t.acked_seqnos(a).acked == set()
