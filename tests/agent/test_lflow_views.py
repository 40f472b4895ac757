"""RowViews.lflow reads IDL rows' committed data directly: the view must hold
what the row's attributes give (controller/nodes/logical_flow_output.py)."""

from __future__ import annotations

import random
import uuid
from typing import Any

import ovs.db.data
import ovs.db.idl
import pytest

from controller.binding.local_data import opt_first
from controller.nodes import logical_flow_output as lfo
from controller.ovsdb import idl_fastpath
from controller.ovsdb.connections import SB_SCHEMA


@pytest.fixture(scope="module")
def idl() -> Any:
    helper = ovs.db.idl.SchemaHelper(SB_SCHEMA)
    helper.register_all()
    i = ovs.db.idl.Idl("unix:/nonexistent/sb.sock", helper)
    idl_fastpath.install()
    yield i
    i.close()


def _row(idl: Any, tname: str, values: dict[str, Any], defaulted: bool) -> Any:
    table = idl.tables[tname]
    data = ovs.db.idl.ColumnDefaultDict(table) if defaulted else {}
    for cname, v in values.items():
        data[cname] = ovs.db.data.Datum.from_python(table.columns[cname].type, v,
                                                    ovs.db.idl._row_to_uuid)
    row = ovs.db.idl.Row(idl, table, uuid.uuid4(), data)
    table.rows[row.uuid] = row
    return row


def _lflows(idl: Any, rnd: random.Random) -> list[Any]:
    dps = [_row(idl, "Datapath_Binding",
                {"tunnel_key": k + 1,
                 "external_ids": {"logical-switch": "x"} if k % 2 else {"logical-router": "y"}},
                defaulted=False) for k in range(6)]
    groups = [_row(idl, "Logical_DP_Group", {"datapaths": [d.uuid for d in dps[i:i + 3]]},
                   defaulted=False) for i in range(3)]
    rows = []
    for n in range(200):
        vals: dict[str, Any] = {
            "pipeline": rnd.choice(["ingress", "egress"]), "table_id": rnd.randrange(30),
            "priority": rnd.randrange(65536), "match": f"reg0 == {n}",
            "actions": rnd.choice(["next;", "drop;", "output;"]),
            "tags": rnd.choice([{}, {"in_out_port": f"p{n}"}]),
            "controller_meter": rnd.choice([[], ["m1"]]),
            "logical_datapath": [], "logical_dp_group": []}
        kind = rnd.randrange(4)
        if kind == 0:
            vals["logical_datapath"] = [rnd.choice(dps).uuid]
        elif kind == 1:
            vals["logical_dp_group"] = [rnd.choice(groups).uuid]
        elif kind == 2:
            vals["logical_datapath"] = [uuid.uuid4()]       # dangling
        defaulted = rnd.random() < 0.5
        for cname in list(vals):
            if defaulted and rnd.random() < 0.1:
                del vals[cname]        # never sent: the IDL's default
        rows.append(_row(idl, "Logical_Flow", vals, defaulted))
    return rows


def _expected(row: Any) -> tuple[Any, ...]:
    dp = opt_first(row.logical_datapath)
    grp = opt_first(row.logical_dp_group)
    return (row.uuid, dp.uuid if dp is not None else None,
            [d.uuid for d in grp.datapaths] if grp is not None else None, row.pipeline,
            dict(row.tags), row.match, row.actions, row.table_id,
            list(row.controller_meter), row.priority)


def _seen(v: Any) -> tuple[Any, ...]:
    dp = v.logical_datapath[0] if v.logical_datapath else None
    grp = v.logical_dp_group[0] if v.logical_dp_group else None
    return (v.uuid, dp.uuid if dp is not None else None,
            [d.uuid for d in grp.datapaths] if grp is not None else None, v.pipeline,
            v.tags, v.match, v.actions, v.table_id, v.controller_meter, v.priority)


def test_view_equals_attributes(idl: Any) -> None:
    rows = _lflows(idl, random.Random(7))
    views = lfo.RowViews()
    for row in rows:
        assert idl_fastpath.committed_data(row) is not None       # the direct path is taken
        assert _seen(views.lflow(row)) == _expected(row)


def test_row_in_transaction_reads_attributes(idl: Any) -> None:
    row = _lflows(idl, random.Random(8))[0]
    column = row._table.columns["match"]
    row.__dict__["_changes"] = {"match": ovs.db.data.Datum.from_python(
        column.type, "reg1 == 1", ovs.db.idl._row_to_uuid)}
    assert idl_fastpath.committed_data(row) is None
    assert lfo.RowViews().lflow(row).match == "reg1 == 1"


def test_plain_rows_read_attributes() -> None:
    import types
    dp = types.SimpleNamespace(uuid=uuid.uuid4(), tunnel_key=3, external_ids={})
    row = types.SimpleNamespace(
        uuid=uuid.uuid4(), logical_datapath=[dp], logical_dp_group=[], pipeline="egress",
        tags={"a": "b"}, match="1", actions="next;", table_id=4, controller_meter=[],
        priority=10)
    assert idl_fastpath.committed_data(row) is None
    v = lfo.RowViews().lflow(row)
    assert (v.logical_datapath[0].tunnel_key, v.tags, v.table_id) == (3, {"a": "b"}, 4)
