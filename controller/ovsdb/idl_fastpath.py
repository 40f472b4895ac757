"""Faster column reads on ``ovs.db.idl.Row`` (the agent's hottest IDL path).

Design note
-----------
``Row.__getattr__`` of the OVS 3.1 Python IDL converts a set or map column
three times on *every* read: ``Datum`` -> Python list/dict -> new ``Datum``
(``from_python`` with full constraint checks) -> Python again.  Profiling a
seed-500 cold start showed that round trip as the largest single cost of the
agent (reading ``Logical_Flow`` columns during compilation, and br-int's
``external_ids`` with thousands of ``ct-zone-*`` keys while a transaction holds
mutations on it).

:func:`install` replaces ``Row.__getattr__`` with a version that returns the
same values without the round trip:

* a column changed in the open transaction (``_changes``), a referencing
  (row-valued) column with pending mutations, or a row without committed data
  keeps the library's original code path;
* otherwise the committed ``Datum`` is converted once, by a converter built
  per column type and cached: scalars -> the atom value (or the type's
  default), sets -> sorted unique values (sets of references: rows ordered
  by UUID without comparing rows), maps -> dict; pending
  ``setkey``/``delkey``/``addvalue``/``delvalue`` mutations of non-reference
  columns are applied to that result exactly as the library does (inserts
  added, then removes dropped; a map key both inserted and removed stays).

The result equals what the original method returns (checked against it by
``tests/agent/test_idl_fastpath.py`` on every column type of the SB schema).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import ovs.db.idl

_Converter = Callable[[Any, Any], Any]

_uuid_int = operator.attrgetter("int")
_DefaultDict = ovs.db.idl.ColumnDefaultDict
_ORIGINAL: Callable[[Any, str], Any] = ovs.db.idl.Row.__getattr__
_CONVERTERS: dict[int, tuple[Any, _Converter, bool]] = {}


def _converter(column: Any) -> tuple[_Converter, bool]:
    """(datum, row) -> Python value for `column`; bool: column refers to rows."""
    cached = _CONVERTERS.get(id(column))
    if cached is not None and cached[0] is column:
        return cached[1], cached[2]
    t = column.type
    key, value = t.key, t.value
    refs = bool(key.ref_table or (value is not None and value.ref_table))
    conv: _Converter
    if refs and value is None and not t.is_scalar():
        # Set of references: rows sorted by UUID (what sorting the rows
        # does, ``Row.__lt__`` compares UUIDs), dangling ones dropped.
        ref_name = key.ref_table.name

        def conv(datum: Any, row: Any) -> Any:
            tables = row._idl.tables
            if ref_name not in tables:
                return datum.to_python(row._uuid_to_row)
            get = tables[ref_name].rows.get
            out = []
            for u in sorted([a.value for a in datum.values], key=_uuid_int):
                r = get(u)
                if r is not None:
                    out.append(r)
            return out
    elif refs:
        def conv(datum: Any, row: Any) -> Any:
            return datum.to_python(row._uuid_to_row)
    elif t.is_scalar():
        default = key.default()

        def conv(datum: Any, row: Any) -> Any:
            values = datum.values
            if len(values) == 1:
                for atom in values:
                    return atom.value
            return default
    elif t.is_map():
        def conv(datum: Any, row: Any) -> Any:
            return {k.value: v.value for k, v in datum.values.items()}
    else:
        def conv(datum: Any, row: Any) -> Any:
            return sorted({k.value for k in datum.values})
    _CONVERTERS[id(column)] = (column, conv, refs)
    return conv, refs


def _apply_mutations(column: Any, value: Any, inserts: Any, removes: Any) -> Any:
    """The library's merge of pending mutations into a non-reference column."""
    t = column.type
    if t.is_map():
        merged = dict(value)
        if inserts is not None:
            merged.update(inserts)
        if removes is not None:
            for k in removes:
                if k not in (inserts or {}):
                    merged.pop(k, None)
        return merged
    if t.is_set():
        items = set(value)
        if inserts is not None:
            items.update(inserts)
        if removes is not None:
            items.difference_update(removes)
        return sorted(items)
    return value


def _fast_getattr(self: Any, column_name: str) -> Any:
    d = self.__dict__
    changes = d["_changes"]
    data = d["_data"]
    if changes is None or data is None or column_name in changes:
        return _ORIGINAL(self, column_name)
    datum = data.get(column_name)
    if datum is None:
        # A column the server never sent holds its default value: the IDL's
        # ColumnDefaultDict makes that datum on demand.
        if type(data) is not _DefaultDict or column_name not in d["_table"].columns:
            return _ORIGINAL(self, column_name)
        datum = data[column_name]
    column = d["_table"].columns[column_name]
    conv, refs = _converter(column)
    mutations = d["_mutations"]
    if not mutations:
        return conv(datum, self)
    ins_map = mutations.get("_inserts")
    rem_map = mutations.get("_removes")
    inserts = ins_map.get(column_name) if ins_map else None
    removes = rem_map.get(column_name) if rem_map else None
    if inserts is None and removes is None:
        return conv(datum, self)
    if refs:
        return _ORIGINAL(self, column_name)
    return _apply_mutations(column, conv(datum, self), inserts, removes)


def install() -> None:
    """Use the fast path for every ``ovs.db.idl.Row`` (idempotent)."""
    ovs.db.idl.Row.__getattr__ = _fast_getattr  # type: ignore[method-assign]


def uninstall() -> None:
    ovs.db.idl.Row.__getattr__ = _ORIGINAL  # type: ignore[method-assign]
