"""controller.ovsdb.idl_update applies updates exactly as the python-ovs IDL does."""

from __future__ import annotations

import copy
import random
import uuid
from typing import Any

import ovs.db.data
import ovs.db.error
import ovs.db.idl
import pytest

from controller.ovsdb import idl_update
from controller.ovsdb.connections import SB_SCHEMA, TrackedIdl
from controller.ovsdb.tracking import ChangeTracker


def _helper() -> Any:
    helper = ovs.db.idl.SchemaHelper(SB_SCHEMA)
    helper.register_all()
    return helper


@pytest.fixture(scope="module")
def idl() -> Any:
    i = ovs.db.idl.Idl("unix:/nonexistent/sb.sock", _helper())
    yield i
    i.close()


def _atom_json(base: Any, rnd: random.Random) -> Any:
    t = base.type.to_string()
    if base.enum is not None and rnd.random() < 0.9:
        return rnd.choice(sorted(a.value for a in base.enum.values))
    if t == "string":
        return rnd.choice(["", "a", "ct-zone-x", "zz", "1", "é"]) + str(rnd.randrange(30))
    if t == "integer":
        lo = base.min if base.min is not None else -5
        hi = base.max if base.max is not None else 1000
        return rnd.choice([lo, hi, rnd.randint(lo, min(hi, lo + 1000)), lo - 1, hi + 1])
    if t == "real":
        return rnd.choice([rnd.random(), 3, 2.0])
    if t == "boolean":
        return rnd.random() < 0.5
    return ["uuid", str(uuid.uuid4())]


def _datum_json(column: Any, rnd: random.Random) -> Any:
    t = column.type
    n = rnd.randint(t.n_min, min(t.n_max, 5) + 1)       # sometimes one too many
    if t.is_map():
        return ["map", [[_atom_json(t.key, rnd), _atom_json(t.value, rnd)] for _ in range(n)]]
    if t.is_scalar() or (n == 1 and rnd.random() < 0.5):
        return _atom_json(t.key, rnd)
    return ["set", [_atom_json(t.key, rnd) for _ in range(n)]]


MALFORMED: list[Any] = [
    None, 1, 1.5, True, "x", [], ["set"], ["set", "x"], ["set", [1, 1]], ["map"],
    ["map", [["a"]]], ["map", [["a", "b"], ["a", "c"]]], ["map", "x"], ["uuid", "nope"],
    ["uuid", str(uuid.uuid4())], ["named-uuid", "n"], ("set", []), {"a": 1},
    ["set", [["uuid", str(uuid.uuid4())], ["uuid", "bad"]]], 2 ** 70, 7.0,
]


def _outcome(parse: Any, column: Any, json: Any) -> tuple[str, Any]:
    try:
        d = parse(column, copy.deepcopy(json))
    except ovs.db.error.Error as e:
        return "error", str(e)
    return "ok", (d.type is column.type,
                  [(type(k.value), k.value, k.type, None if v is None else
                    (type(v.value), v.value, v.type)) for k, v in d.values.items()])


def _library(column: Any, json: Any) -> Any:
    return ovs.db.data.Datum.from_json(column.type, json)


def test_parse_datum_equals_library_on_every_sb_column(idl: Any) -> None:
    rnd = random.Random(5)
    checked = errors = 0
    for table in idl.tables.values():
        for column in table.columns.values():
            samples = [_datum_json(column, rnd) for _ in range(25)] + MALFORMED
            for json in samples:
                expected = _outcome(_library, column, json)
                assert _outcome(idl_update.parse_datum, column, json) == expected, \
                    (table.name, column.name, json)
                checked += 1
                errors += expected[0] == "error"
    assert checked > 5000 and errors > 1000


def _random_update(idl: Any, rnd: random.Random, uuids: dict[str, list[str]],
                   op: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tname, table in sorted(idl.tables.items()):
        rows = {}
        for u in uuids[tname]:
            cols = {c: _datum_json(col, rnd) for c, col in table.columns.items()
                    if rnd.random() < 0.4}
            if rnd.random() < 0.05:
                cols["no_such_column"] = 1
            rows[u] = {op: cols}
        out[tname] = rows
    return out


class _Recorder:
    def __init__(self, idl: Any) -> None:
        self.events: list[tuple[str, str, Any]] = []
        idl.notify = self.notify

    def notify(self, event: str, row: Any, updates: Any = None) -> None:
        old = None if updates is None else sorted(
            (c, d.to_json()) for c, d in updates._data.items())
        self.events.append((event, str(row.uuid), old))


def _replica(idl: Any) -> list[Any]:
    out = []
    for tname, table in sorted(idl.tables.items()):
        for u, row in sorted(table.rows.items()):
            out.append((tname, str(u), type(row._data).__name__,
                        sorted((c, d.to_json(), d.type is table.columns[c].type)
                               for c, d in dict.items(row._data))))
    return out


def test_updates_leave_the_same_replica_and_notices() -> None:
    """Initial rows, inserts over existing rows, modifies: the same rows,
    datums and notifications as the library's own update code."""
    rnd = random.Random(9)
    lib = ovs.db.idl.Idl("unix:/nonexistent/sb.sock", _helper())
    ours = TrackedIdl("unix:/nonexistent/sb.sock", _helper(), ChangeTracker(()))
    try:
        assert type(ours)._Idl__row_update is not ovs.db.idl.Idl._Idl__row_update
        rec_lib, rec_ours = _Recorder(lib), _Recorder(ours)
        uuids = {t: [str(uuid.uuid4()) for _ in range(6)] for t in lib.tables}
        for version, op in ((ovs.db.idl.OVSDB_UPDATE3, "initial"),
                            (ovs.db.idl.OVSDB_UPDATE2, "insert"),
                            (ovs.db.idl.OVSDB_UPDATE2, "modify")):
            update = _random_update(lib, rnd, uuids, op)
            lib._Idl__parse_update(copy.deepcopy(update), version)
            ours._Idl__parse_update(copy.deepcopy(update), version)
            assert _replica(ours) == _replica(lib)
            assert rec_ours.events == rec_lib.events
            assert rec_lib.events
        # New rows with no columns: the required ones get the added defaults.
        empty = {t: {str(uuid.uuid4()): {"insert": {}}} for t in ("Chassis", "Meter", "DNS")}
        lib._Idl__parse_update(copy.deepcopy(empty), ovs.db.idl.OVSDB_UPDATE2)
        ours._Idl__parse_update(copy.deepcopy(empty), ovs.db.idl.OVSDB_UPDATE2)
        assert rec_ours.events == rec_lib.events
        assert _replica(ours) == _replica(lib)
    finally:
        lib.close()
        ours.close()


def test_add_default_adds_what_the_library_adds(idl: Any) -> None:
    # (The library's default datum of a required scalar holds an Atom as its
    # value, so no parsed default ever equals it: nothing can be skipped.)
    added = 0
    for table in idl.tables.values():
        for present in ({}, {c: 1 for c in list(table.columns)[::2]}):
            ours: dict[str, Any] = dict(present)
            lib: dict[str, Any] = dict(present)
            idl_update.add_default(idl, table, ours)
            idl._Idl__add_default(table, lib)
            assert ours == lib, table.name
            added += len(lib) - len(present)
    assert added > 20
