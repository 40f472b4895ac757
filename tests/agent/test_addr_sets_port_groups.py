"""The addr_sets and port_groups nodes keep their sets incrementally."""

from __future__ import annotations

from types import SimpleNamespace

from controller.engine.core import HANDLED_UNCHANGED, HANDLED_UPDATED, UNHANDLED
from controller.nodes.addr_sets import AddrSetsNode
from controller.nodes.port_groups import PortGroupsNode
from controller.ovsdb.tracking import ROW_CREATE, ROW_DELETE, ROW_UPDATE, TableChanges
from tests.agent.fakes import FakeRow


def _values(cs):
    return [c.value if c.string is None else c.string for c in cs.values]


def test_addr_sets_follow_row_changes_and_renames():
    a = FakeRow(name="as1", addresses=["10.0.0.1"])
    rows = {a.uuid: a}
    node = AddrSetsNode(lambda t: rows)
    node.run(None)
    assert _values(node.data.sets["as1"]) == [0x0A000001]
    tc = TableChanges("Address_Set")
    b = FakeRow(name="as2", addresses=["10.0.0.2", "10.0.0.3"])
    rows[b.uuid] = b
    tc.record(ROW_CREATE, b)
    a.__dict__["name"] = "as1-new"
    tc.record(ROW_UPDATE, a, {"name": "as1"})
    assert node.handlers["sb_address_set"](None, SimpleNamespace(data=tc)) is HANDLED_UPDATED
    assert node.data.changed == {"as1", "as1-new", "as2"}
    assert set(node.data.sets) == {"as1-new", "as2"}
    node.clear_tracked()
    tc = TableChanges("Address_Set")
    tc.record(ROW_DELETE, b)
    del rows[b.uuid]
    assert node.handlers["sb_address_set"](None, SimpleNamespace(data=tc)) is HANDLED_UPDATED
    assert node.data.changed == {"as2"} and set(node.data.sets) == {"as1-new"}


def test_port_groups_hold_related_members_and_follow_runtime_data():
    rt = SimpleNamespace(related_lports={"p1"}, tracked=False,
                         tracked_dps=SimpleNamespace(dps={}))
    pg = FakeRow(name="1_pg", ports=["p1", "p2"])
    other = FakeRow(name="1_other", ports=["p3"])
    rows = {pg.uuid: pg, other.uuid: other}
    node = PortGroupsNode(SimpleNamespace(rt=rt), lambda t: rows)  # type: ignore[arg-type]
    node.run(None)
    assert _values(node.data.sets["1_pg"]) == ["p1"] and _values(node.data.sets["1_other"]) == []
    inp = SimpleNamespace(data=None)
    assert node.handlers["runtime_data"](None, inp) is UNHANDLED      # rt recomputed
    rt.tracked = True
    assert node.handlers["runtime_data"](None, inp) is HANDLED_UNCHANGED
    rt.related_lports = {"p1", "p2"}                                   # p2 became related
    assert node.handlers["runtime_data"](None, inp) is HANDLED_UPDATED
    assert node.data.changed == {"1_pg"} and _values(node.data.sets["1_pg"]) == ["p1", "p2"]
    node.clear_tracked()
    # a tracked binding change of a member reports its group even if the set is the same
    rt.tracked_dps.dps = {1: SimpleNamespace(lports={"p3": None})}
    assert node.handlers["runtime_data"](None, inp) is HANDLED_UPDATED
    assert node.data.changed == {"1_other"}
