"""A full physical_flow_output compute in CPU-bounded slices (issue 15)
builds exactly the table of one uninterrupted compute (and of
``physical.build_all``), also when rows change while items are still queued;
the real builders on the ``rich`` reference snapshot."""

from __future__ import annotations

import types
import uuid
from typing import Any

import pytest

import physical
from controller.lflow.snapshot import SbSnapshot
from controller.nodes.physical_flow_output import PflowOutput
from controller.ovsdb.tracking import ROW_DELETE, ROW_UPDATE
from integration.test_physical_parity import RICH, build_context
from ofctrl.desired import DesiredFlowTable
from tests.agent.sliced_harness import OneNodeEngine

pytestmark = pytest.mark.skipif(not (RICH / "sb.db").exists(), reason="no reference data")

TABLES = ("Port_Binding", "Multicast_Group", "MAC_Binding", "Static_MAC_Binding",
          "Load_Balancer", "FDB")


class Harness(OneNodeEngine):
    """A PflowOutput over the snapshot in a one-node engine whose only input
    is the Multicast_Group table (its handler rebuilds the changed groups)."""

    def __init__(self, sb: SbSnapshot, slice_ms: float | None) -> None:
        self.ctx, _ = build_context(sb, RICH)
        self.rows: dict[str, dict[uuid.UUID, Any]] = {
            t: {r.uuid: r for r in sb.table(t)} for t in TABLES}
        st = types.SimpleNamespace(chassis=object())
        self.out = PflowOutput(st, lambda t: self.rows.get(t, {}),   # type: ignore[arg-type]
                               lambda: None)
        self.out._ctx = lambda node: self.ctx       # type: ignore[method-assign]
        self.wire(self.out, "physical_flow_output", "SB_multicast_group", "Multicast_Group",
                  "multicast_group", slice_ms)

    def table(self) -> set[tuple[Any, ...]]:
        return _contents(self.out.data.flow_table)


def _contents(table: DesiredFlowTable) -> set[tuple[Any, ...]]:
    return {(d.flow.table, d.flow.priority, d.flow.cookie, d.flow.match.encode(),
             tuple(repr(a) for a in d.flow.actions), tuple(sorted(str(o) for o in d.owners)))
            for d in table}


@pytest.fixture(scope="module")
def sb() -> SbSnapshot:
    return SbSnapshot(RICH / "sb.db")


def test_sliced_pflow_compute_builds_the_table_of_build_all(sb: SbSnapshot) -> None:
    whole = Harness(sb, None)
    assert whole.finish() == 1
    sliced = Harness(sb, 0.0)       # a clock look every 4 items ends a slice
    runs = sliced.finish()
    assert runs > 10 and sliced.out.n_slices == runs - 1
    ref = DesiredFlowTable()
    ctx, tables = build_context(sb, RICH)
    physical.add_to_desired(ref, physical.build_all(ctx, tables))
    assert len(ref) > 100
    assert whole.table() == _contents(ref)
    assert sliced.table() == _contents(ref)


def test_groups_changed_during_a_sliced_pflow_compute(sb: SbSnapshot) -> None:
    h = Harness(sb, 0.0)
    mcs = h.rows["Multicast_Group"]
    assert len(mcs) > 4
    built: list[uuid.UUID] = []
    while True:     # until some groups are built and some still queued
        h.run()
        queued = {u for kind, u in h.out.queue if kind == "mc"}
        built = [u for u in mcs if u not in queued]
        if built and queued:
            break
    assert h.node.pending()
    changed = [built[0], sorted(queued)[0]]
    gone = [built[-1], sorted(queued)[-1]]
    for u in changed:
        new = types.SimpleNamespace(**vars(mcs[u]))
        new.ports = list(new.ports)[:-1]
        mcs[u] = new
        h.record(ROW_UPDATE, new)
    for u in gone:
        h.record(ROW_DELETE, mcs.pop(u))
    h.run()
    assert h.out._rebuilt >= set(changed) | set(gone)
    h.finish()
    assert not h.out._rebuilt
    fresh = Harness(sb, None)
    fresh.rows = h.rows
    fresh.finish()
    assert h.table() == fresh.table()
    # the changes did reach the table
    stale = Harness(sb, None)
    stale.finish()
    assert h.table() != stale.table()
