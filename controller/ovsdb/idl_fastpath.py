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
  default; a reference: the row from the referenced table's dict), sets ->
  sorted unique values (sets of references: rows ordered by UUID without
  comparing rows), maps -> dict.  A row outside any transaction takes the
  shortest path: one lookup in a per-table entry (kind, converter) kept on
  the ``IdlTable``, scalars and maps converted inline, and an optional
  column the server never sent read as a new empty list or dict without
  building its default ``Datum``; pending
  ``setkey``/``delkey``/``addvalue``/``delvalue`` mutations of non-reference
  columns are applied to that result exactly as the library does (inserts
  added, then removes dropped; a map key both inserted and removed stays).

The result equals what the original method returns (checked against it by
``tests/agent/test_idl_fastpath.py`` on every column type of the SB schema).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import ovs.db.custom_index
import ovs.db.idl

_Converter = Callable[[Any, Any], Any]

_uuid_int = operator.attrgetter("int")
_DefaultDict = ovs.db.idl.ColumnDefaultDict
_IndexedRows = ovs.db.custom_index.IndexedRows
_ORIGINAL: Callable[[Any, str], Any] = ovs.db.idl.Row.__getattr__
_CONVERTERS: dict[int, tuple[Any, _Converter, bool]] = {}


def _rows_get(rows: Any) -> Callable[[Any], Any]:
    """``rows.get`` of a table's rows; for the IDL's ``IndexedRows`` (a
    ``UserDict`` whose reads are those of its ``data``) the dict's own."""
    if type(rows) is _IndexedRows:
        get: Callable[[Any], Any] = rows.data.get
        return get
    get = rows.get
    return get


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
            get = _rows_get(tables[ref_name].rows)
            out = []
            for u in sorted([a.value for a in datum.values], key=_uuid_int):
                r = get(u)
                if r is not None:
                    out.append(r)
            return out
    elif refs and value is None:
        # One reference: the row, or the type's default when it dangles.
        ref_name = key.ref_table.name

        def conv(datum: Any, row: Any) -> Any:
            values = datum.values
            tables = row._idl.tables
            if len(values) != 1 or ref_name not in tables:
                return datum.to_python(row._uuid_to_row)
            for atom in values:
                r = _rows_get(tables[ref_name].rows)(atom.value)
                return key.default() if r is None else r
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


_K_SCALAR, _K_MAP, _K_SET, _K_OTHER = range(4)
_Entry = tuple[int, _Converter, Any]
_NO_DEFAULT = object()


def _read_entries(table: Any) -> dict[str, _Entry]:
    """column name -> (kind, converter, value of an absent column) of `table`
    (an ``IdlTable``; kept on it)."""
    entries: dict[str, _Entry] | None = getattr(table, "_fastpath_reads", None)
    if entries is not None:
        return entries
    entries = {}
    for name, column in table.columns.items():
        conv, refs = _converter(column)
        t = column.type
        # An absent column of a ColumnDefaultDict reads as its default: for
        # optional columns a new empty list or dict (made here by kind).
        missing = _NO_DEFAULT if t.n_min != 0 else None
        if refs:
            kind = _K_OTHER
        elif t.is_scalar():
            kind = _K_SCALAR
        elif t.is_map():
            kind = _K_MAP
        else:
            kind = _K_SET
        entries[name] = (kind, conv, missing)
    table._fastpath_reads = entries
    return entries


def _fast_getattr(self: Any, column_name: str) -> Any:
    d = self.__dict__
    changes = d["_changes"]
    data = d["_data"]
    if changes or d["_mutations"] or changes is None or data is None:
        return _getattr_in_txn(self, column_name)
    table = d["_table"]
    entries = table.__dict__.get("_fastpath_reads")
    if entries is None:
        entries = _read_entries(table)
    entry = entries.get(column_name)
    if entry is None:
        return _ORIGINAL(self, column_name)
    kind, conv, missing = entry
    datum = data.get(column_name)
    if datum is None:
        if type(data) is not _DefaultDict:
            return _ORIGINAL(self, column_name)
        if missing is None and kind != _K_OTHER:
            return {} if kind == _K_MAP else []
        return conv(data[column_name], self)
    if kind == _K_SCALAR:
        values = datum.values
        if len(values) == 1:
            for atom in values:
                return atom.value
        return conv(datum, self)
    if kind == _K_MAP:
        return {k.value: v.value for k, v in datum.values.items()}
    return conv(datum, self)


def _getattr_in_txn(self: Any, column_name: str) -> Any:
    """Row.__getattr__ of a row the open transaction changed or mutated."""
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


# ------------------------------------------------------------ committed data
# Readers for a hot caller that reads a few known columns of many rows (the
# Logical_Flow views of logical_flow_output): the same values as the row's
# attributes, straight from the committed Datums, without the attribute
# lookup that fails into __getattr__ and the converter dispatch per column
# (seed-500, 25,655 views: about 11.5 -> 9.5 us each).  Anything unusual (a
# column the server never sent, a multi-valued scalar, a dangling table)
# reads the attribute.

def committed_data(row: Any) -> dict[str, Any] | None:
    """The committed column data of an IDL row nothing in a transaction
    touches, else None."""
    d = getattr(row, "__dict__", None)
    if d is None:
        return None
    changes = d.get("_changes")
    mutations = d.get("_mutations")
    data = d.get("_data")
    if type(changes) is not dict or changes or type(mutations) is not dict or mutations \
            or not isinstance(data, dict) or "_idl" not in d:
        return None
    return data


def read_scalar(data: dict[str, Any], row: Any, column: str) -> Any:
    datum = data.get(column)
    if datum is not None:
        values = datum.values
        if len(values) == 1:
            for atom in values:
                return atom.value
    return getattr(row, column)


def read_string_map(data: dict[str, Any], row: Any, column: str) -> dict[str, str]:
    datum = data.get(column)
    if datum is None:
        return dict(getattr(row, column))
    return {k.value: v.value for k, v in datum.values.items()}


def read_string_set(data: dict[str, Any], row: Any, column: str) -> list[str]:
    datum = data.get(column)
    if datum is None:
        return list(getattr(row, column))
    return sorted({k.value for k in datum.values})


def read_ref(data: dict[str, Any], row: Any, column: str, table_name: str) -> Any:
    """The row an optional reference column (to `table_name`) points to;
    None when empty or dangling."""
    datum = data.get(column)
    if datum is None or len(datum.values) > 1:
        values = getattr(row, column)
        return values[0] if values else None
    for atom in datum.values:
        table = row.__dict__["_idl"].tables.get(table_name)
        if table is None:
            values = getattr(row, column)
            return values[0] if values else None
        return _rows_get(table.rows)(atom.value)
    return None
