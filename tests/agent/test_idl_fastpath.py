"""controller.ovsdb.idl_fastpath returns exactly what ovs.db.idl.Row.__getattr__ does."""

from __future__ import annotations

import random
import uuid
from typing import Any

import ovs.db.data
import ovs.db.error
import ovs.db.idl
import pytest

from controller.ovsdb import idl_fastpath
from controller.ovsdb.connections import SB_SCHEMA

_ORIG = idl_fastpath._ORIGINAL


@pytest.fixture(scope="module")
def idl() -> Any:
    helper = ovs.db.idl.SchemaHelper(SB_SCHEMA)
    helper.register_all()
    i = ovs.db.idl.Idl("unix:/nonexistent/sb.sock", helper)
    yield i
    i.close()


def _atom_value(base: Any, rnd: random.Random, idl: Any) -> Any:
    if base.ref_table:
        rows = list(idl.tables[base.ref_table.name].rows.values())
        if rows and rnd.random() < 0.8:
            return rnd.choice(rows).uuid
        return uuid.uuid4()          # dangling reference
    t = base.type.to_string()
    if t == "string":
        if base.enum is not None:
            return rnd.choice(sorted(a.value for a in base.enum.values))
        return rnd.choice(["a", "b", "ct-zone-x", "zz", "1"]) + str(rnd.randrange(30))
    if t == "integer":
        lo = base.min if base.min is not None else 0
        hi = base.max if base.max is not None else 1000
        return rnd.randint(lo, min(hi, lo + 1000))
    if t == "real":
        return rnd.random()
    if t == "boolean":
        return rnd.random() < 0.5
    return uuid.uuid4()


def _random_value(column: Any, rnd: random.Random, idl: Any) -> Any:
    t = column.type
    n = rnd.randint(t.n_min, min(t.n_max, 6))
    if t.is_map():
        return {_atom_value(t.key, rnd, idl): _atom_value(t.value, rnd, idl) for _ in range(n)}
    vals = [_atom_value(t.key, rnd, idl) for _ in range(n)]
    if t.is_scalar():
        return vals[0]
    return vals


def _fill(idl: Any, rnd: random.Random) -> list[Any]:
    """Rows in every SB table; references point at earlier rows or dangle."""
    rows = []
    for tname in sorted(idl.tables):
        table = idl.tables[tname]
        for _ in range(4):
            data = ovs.db.idl.ColumnDefaultDict(table) if rnd.random() < 0.5 else {}
            for cname, column in table.columns.items():
                if rnd.random() < 0.15:
                    continue             # column absent from the committed data
                value = _random_value(column, rnd, idl)
                data[cname] = ovs.db.data.Datum.from_python(column.type, value,
                                                            ovs.db.idl._row_to_uuid)
            row = ovs.db.idl.Row(idl, table, uuid.uuid4(), data)
            table.rows[row.uuid] = row
            rows.append(row)
    return rows


def _read(getter: Any, row: Any, column: str) -> tuple[str, Any]:
    try:
        return "ok", getter(row, column)
    except AttributeError:
        return "attr", None
    except ovs.db.error.Error:
        # The library fails on some defaulted reference columns (it feeds
        # Atoms back to from_python); the fast path returns the default.
        return "library-error", None


def test_same_values_as_library_for_every_sb_column(idl: Any) -> None:
    rnd = random.Random(7)
    rows = _fill(idl, rnd)
    checked = 0
    for row in rows:
        for cname in row._table.columns:
            expected = _read(_ORIG, row, cname)
            if expected[0] == "library-error":
                continue
            assert _read(idl_fastpath._fast_getattr, row, cname) == expected, \
                (row._table.name, cname)
            checked += 1
    assert checked > 500


def test_same_values_with_pending_mutations(idl: Any) -> None:
    rnd = random.Random(11)
    rows = _fill(idl, rnd)
    mutated = 0
    for row in rows:
        ins: dict[str, Any] = {}
        rem: dict[str, Any] = {}
        for cname, column in row._table.columns.items():
            t = column.type
            if t.is_scalar() or t.n_max < 100 or rnd.random() < 0.3:
                continue                 # (a bounded column overflowing is a caller bug)
            if t.is_map():
                current = _ORIG(row, cname) if cname in row._data else {}
                ins[cname] = {_atom_value(t.key, rnd, idl): _atom_value(t.value, rnd, idl)
                              for _ in range(2)}
                keys = list(current) + list(ins[cname])
                rem[cname] = set(rnd.sample(keys, min(2, len(keys))))
            else:
                current = _ORIG(row, cname) if cname in row._data else []
                ins[cname] = {_atom_value(t.key, rnd, idl) for _ in range(2)}
                pool = [getattr(v, "uuid", v) for v in current] + list(ins[cname])
                rem[cname] = set(rnd.sample(pool, min(1, len(pool))))
            mutated += 1
        row.__dict__["_mutations"] = {"_inserts": ins, "_removes": rem}
        for cname in row._table.columns:
            if cname not in row._data:
                continue                 # library bug path (inserts.to_python) either way
            assert _read(idl_fastpath._fast_getattr, row, cname) == _read(_ORIG, row, cname), \
                (row._table.name, cname)
    assert mutated > 50


def test_changed_column_uses_library_path(idl: Any) -> None:
    table = idl.tables["Chassis"]
    col = table.columns["external_ids"]
    row = ovs.db.idl.Row(idl, table, uuid.uuid4(), {
        "external_ids": ovs.db.data.Datum.from_python(col.type, {"a": "1"},
                                                      ovs.db.idl._row_to_uuid)})
    row.__dict__["_changes"]["external_ids"] = ovs.db.data.Datum.from_python(
        col.type, {"b": "2"}, ovs.db.idl._row_to_uuid)
    assert idl_fastpath._fast_getattr(row, "external_ids") == {"b": "2"}
    with pytest.raises(AttributeError):
        idl_fastpath._fast_getattr(row, "no_such_column")


def test_install_and_uninstall() -> None:
    idl_fastpath.install()
    try:
        assert ovs.db.idl.Row.__getattr__ is idl_fastpath._fast_getattr
    finally:
        idl_fastpath.uninstall()
    assert ovs.db.idl.Row.__getattr__ is _ORIG
