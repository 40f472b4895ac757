"""A full lflow compute in CPU-bounded slices (issue 15) builds exactly the
tables of one uninterrupted compute, also when Logical_Flow rows change while
rows are still queued; the real compiler on the ``rich`` reference snapshot."""

from __future__ import annotations

import types
import uuid
from pathlib import Path
from typing import Any

import pytest

from controller.lflow.actions import OvsFeatures
from controller.lflow.compile import CompileContext, LflowCompiler
from controller.lflow.snapshot import OvsConf, SbSnapshot, context_from_snapshot
from controller.nodes.logical_flow_output import LflowOutput
from controller.ovsdb.tracking import ROW_CREATE, ROW_DELETE, ROW_UPDATE
from ofctrl.desired import RANK_CONJ
from ofctrl.groups import GroupTable
from ofctrl.meters import MeterTable
from tests.agent.sliced_harness import OneNodeEngine

RICH = Path("/work/shared/reference-data/rich")

pytestmark = pytest.mark.skipif(not (RICH / "sb.db").exists(), reason="no reference data")


class Harness(OneNodeEngine):
    """An LflowOutput over the snapshot's Logical_Flow rows in a one-node
    engine whose only input is the Logical_Flow table."""

    def __init__(self, sb: SbSnapshot, rows: dict[uuid.UUID, Any], slice_ms: float | None) -> None:
        self.rows = rows
        self.groups, self.meters = GroupTable(), MeterTable()
        self.out = LflowOutput(types.SimpleNamespace(chassis=object()),   # type: ignore[arg-type]
                               lambda t: self.rows if t == "Logical_Flow" else {},
                               lambda: self.engine.run_count, dict)
        base = CompileContext(
            group_table=self.groups, meter_table=self.meters,
            features=OvsFeatures(ct_zero_snat=True, dp_hash_l4_sym=False, controller_meter=True))
        ctx = context_from_snapshot(sb, OvsConf.read(RICH / "conf-ovs.txt"), base,
                                    conj_ids=self.out.conj_ids)
        comp = LflowCompiler(ctx)
        self.out._compiler = lambda node: comp        # type: ignore[method-assign]
        self.out.views.lflow = lambda row: row        # type: ignore[method-assign]
        self.wire(self.out, "logical_flow_output", "SB_logical_flow", "Logical_Flow",
                  "logical_flow", slice_ms)

    def table(self) -> set[tuple[Any, ...]]:
        out = set()
        for d in self.out.data.flow_table:
            f = d.flow
            acts = tuple(repr(a) for a in f.actions)
            if d.rank == RANK_CONJ:     # clauses appended in processing order
                acts = tuple(sorted(acts))
            out.add((f.table, f.priority, f.cookie, f.match.encode(), acts,
                     tuple(sorted(str(o) for o in d.owners))))
        return out

    def extend(self) -> tuple[Any, ...]:
        return (sorted((e.name, e.table_id) for e in self.groups.desired.values()),
                sorted((e.name, e.table_id) for e in self.meters.desired.values()))


@pytest.fixture(scope="module")
def sb() -> SbSnapshot:
    return SbSnapshot(RICH / "sb.db")


def _rows(sb: SbSnapshot) -> dict[uuid.UUID, Any]:
    return {r.uuid: r for r in sb.table("Logical_Flow")}


def test_sliced_compute_builds_the_tables_of_one_long_compute(sb: SbSnapshot) -> None:
    whole = Harness(sb, _rows(sb), None)
    assert whole.finish() == 1
    sliced = Harness(sb, _rows(sb), 0.0)    # a clock look every 8 lflows ends a slice
    runs = sliced.finish()
    assert runs > 10 and sliced.out.n_slices == runs - 1
    assert len(whole.out.data.flow_table) > 900
    assert sliced.table() == whole.table()
    assert sliced.extend() == whole.extend()
    assert sliced.out.refs.by_lflow.keys() == whole.out.refs.by_lflow.keys()


def test_rows_changed_during_a_sliced_compute_end_up_as_a_fresh_compute(sb: SbSnapshot) -> None:
    rows = _rows(sb)
    h = Harness(sb, rows, 0.0)
    for _ in range(5):
        h.run()
    queued = list(h.out.pending_lflows)
    done = [u for u in rows if u not in h.out.pending_lflows]
    assert len(queued) > 50 and len(done) > 20
    # delete a compiled and a queued row, update others of both kinds, add one
    for u in (done[0], queued[0]):
        h.record(ROW_DELETE, rows.pop(u))
    for u in (done[1], done[2], queued[1], queued[-1]):
        new = types.SimpleNamespace(**vars(rows[u]))
        new.priority += 1
        rows[u] = new
        h.record(ROW_UPDATE, new)
    new = types.SimpleNamespace(**vars(rows[done[3]]))
    new.uuid = uuid.uuid4()
    new.match = f"{new.match} && ip4" if new.match != "1" else "ip4"
    rows[new.uuid] = new
    h.record(ROW_CREATE, new)
    h.run()
    assert h.node.pending()
    h.finish()
    fresh = Harness(sb, dict(rows), None)
    fresh.finish()
    assert h.table() == fresh.table()
    assert h.extend() == fresh.extend()


def test_big_sb_update_is_split_with_logical_flows_last() -> None:
    from controller.ovsdb.connections import _split_update

    lflows: dict[str, Any] = {f"lf{i}": {"insert": {"match": "1"}} for i in range(25)}
    lflows["gone"] = {"delete": None}
    lflows["changed"] = {"modify": {"priority": 3}}
    upd: dict[str, Any] = {"Port_Binding": {"pb": {"insert": {}}}, "Logical_DP_Group": {"g": {"delete": None}},
           "Logical_Flow": lflows}
    assert _split_update(upd, 30) is None           # small enough: at once
    parts = _split_update(upd, 10)
    assert parts is not None and len(parts) == 4
    # first every other table and the lflow deletions, then lflows 10 at a time
    assert parts[0] == {"Port_Binding": upd["Port_Binding"],
                        "Logical_DP_Group": upd["Logical_DP_Group"],
                        "Logical_Flow": {"gone": {"delete": None}}}
    assert [list(p) for p in parts[1:]] == [["Logical_Flow"]] * 3
    assert [len(p["Logical_Flow"]) for p in parts[1:]] == [10, 10, 6]
    merged: dict[str, object] = {}
    for p in parts:
        merged.update(p["Logical_Flow"])
    assert merged == lflows
    assert _split_update({"Port_Binding": {"pb": {"insert": {}}}}, 0) is None
