"""Faster application of OVSDB row updates to the python-ovs IDL replica.

Design note
-----------
For every row of an update the OVS 3.1 Python IDL parses each column with
``Datum.from_json`` (generic: type tests, list/tuple unwrapping, a
``check_constraints`` call per atom) and compares it with the row's current
value, which for a new row (an empty ``ColumnDefaultDict``) means building a
default ``Datum`` per column (``__missing__``); before that, ``__add_default``
adds to the JSON of every inserted row the default of each required scalar
column it lacks, checking per column whether the table is read-only.  Loading the Southbound of a big deployment, that is the
larger part of the IDL's CPU.

:class:`controller.ovsdb.connections.TrackedIdl` uses the functions here
in place of the library's private ``__row_update``, ``__apply_diff`` and
``__add_default`` (same arguments, same effect on the replica, the same
warnings):

* :func:`row_update` parses a column with a parser built once per column
  type (:func:`_build_parser`): strings, integers, booleans, UUIDs and sets or maps
  of them, with the constraints of the type (enum, length, range, number of
  elements) checked inline; anything else, or any JSON that is not exactly
  the expected shape, goes to ``Datum.from_json`` itself, which then returns
  the same datum or raises the same error.  A column missing from a
  ``ColumnDefaultDict`` is compared with the values of its default datum,
  computed once per column, instead of a new default datum;
* :func:`apply_diff` (``__apply_diff``, an update2 ``modify``) parses the
  same way;
* :func:`add_default` takes the list of the columns it completes from a
  list made once per table.  (None of those defaults can be skipped: the
  library's default datum of a required scalar holds an ``Atom`` as its atom
  value, so the parsed default never equals it and is always stored.)

Each parsed datum equals, atom for atom and type for type, the one
``Datum.from_json`` returns (``tests/agent/test_idl_update.py`` compares both
on every column type of the SB schema and on malformed JSON).
"""

from __future__ import annotations

from typing import Any, Callable

import ovs.db.data
import ovs.db.error
import ovs.db.idl
import ovs.db.types
import ovs.ovsuuid

_Parser = Callable[[Any], Any]

Atom = ovs.db.data.Atom
Datum = ovs.db.data.Datum
_DefaultDict = ovs.db.idl.ColumnDefaultDict
_from_json = Datum.from_json
_uuid_from_json = ovs.ovsuuid.from_json
_dict_get = dict.get
_vlog = ovs.db.idl.vlog

# Per column schema object: (column, parser, values of its default datum).
_COLUMNS: dict[int, tuple[Any, _Parser, dict[Any, Any]]] = {}
# Per table schema object: (table, readonly, columns add_default must add).
_ADD_DEFAULT: dict[int, tuple[Any, Any, list[Any]]] = {}


class _Slow(Exception):
    """The JSON is not the plain shape the fast parser handles."""


def _atom_parser(base: Any) -> Callable[[Any], Any] | None:
    """JSON -> Atom for `base`, raising _Slow on anything unusual; None when
    the type has no fast parser."""
    atype = base.type
    enum = base.enum
    if atype == ovs.db.types.StringType:
        lo_len, hi_len = base.min_length, base.max_length
        allowed = None if enum is None else frozenset(a.value for a in enum.values)

        def string(j: Any) -> Any:
            if type(j) is not str or (allowed is not None and j not in allowed) \
                    or not lo_len <= len(j) <= hi_len:
                raise _Slow
            return Atom(atype, j)
        return string
    if atype == ovs.db.types.IntegerType and enum is None:
        lo, hi = base.min, base.max

        def integer(j: Any) -> Any:
            if type(j) is not int or (lo is not None and j < lo) \
                    or (hi is not None and j > hi):
                raise _Slow
            return Atom(atype, j)
        return integer
    if atype == ovs.db.types.BooleanType and enum is None:
        def boolean(j: Any) -> Any:
            if type(j) is not bool:
                raise _Slow
            return Atom(atype, j)
        return boolean
    if atype == ovs.db.types.UuidType and enum is None:
        def uuid_atom(j: Any) -> Any:
            if type(j) is not list or len(j) != 2 or j[0] != "uuid":
                raise _Slow
            return Atom(atype, _uuid_from_json(j))
        return uuid_atom
    return None


def _scalar_parser(ctype: Any, general: _Parser) -> _Parser:
    """A required single string, integer or UUID (most columns): the datum
    made in one step, anything else to `general`."""
    base = ctype.key
    atype = base.type
    if base.enum is not None:
        return general
    if atype == ovs.db.types.StringType:
        lo_len, hi_len = base.min_length, base.max_length

        def string(j: Any) -> Any:
            if type(j) is str and lo_len <= len(j) <= hi_len:
                return Datum(ctype, {Atom(atype, j): None})
            return general(j)
        return string
    if atype == ovs.db.types.IntegerType:
        lo = float("-inf") if base.min is None else base.min
        hi = float("inf") if base.max is None else base.max

        def integer(j: Any) -> Any:
            if type(j) is int and lo <= j <= hi:
                return Datum(ctype, {Atom(atype, j): None})
            return general(j)
        return integer
    if atype == ovs.db.types.UuidType:
        def uuid_datum(j: Any) -> Any:
            if type(j) is list and len(j) == 2 and j[0] == "uuid":
                return Datum(ctype, {Atom(atype, _uuid_from_json(j)): None})
            return general(j)
        return uuid_datum
    return general


def _build_parser(ctype: Any) -> _Parser:
    general = _build_general_parser(ctype)
    if ctype.is_scalar():
        return _scalar_parser(ctype, general)
    return general


def _build_general_parser(ctype: Any) -> _Parser:
    key = _atom_parser(ctype.key)
    value = _atom_parser(ctype.value) if ctype.value is not None else None
    if key is None or (ctype.value is not None and value is None):
        return lambda j: _from_json(ctype, j)
    n_min, n_max = ctype.n_min, ctype.n_max
    if ctype.is_map():
        assert value is not None

        def map_datum(j: Any) -> Any:
            try:
                if type(j) is not list or len(j) != 2 or j[0] != "map":
                    raise _Slow
                inner = j[1]
                if type(inner) is not list or not n_min <= len(inner) <= n_max:
                    raise _Slow
                values = {}
                for pair in inner:
                    if type(pair) is not list or len(pair) != 2:
                        raise _Slow
                    values[key(pair[0])] = value(pair[1])
                if len(values) != len(inner):
                    raise _Slow             # duplicate key
            except _Slow:
                return _from_json(ctype, j)
            return Datum(ctype, values)
        return map_datum

    def set_datum(j: Any) -> Any:
        try:
            if type(j) is list and j and j[0] == "set":
                if len(j) != 2:
                    raise _Slow
                inner = j[1]
                if type(inner) is not list or not n_min <= len(inner) <= n_max:
                    raise _Slow
                values = dict.fromkeys([key(e) for e in inner])
                if len(values) != len(inner):
                    raise _Slow             # duplicate
                return Datum(ctype, values)
            return Datum(ctype, {key(j): None})
        except _Slow:
            return _from_json(ctype, j)
    return set_datum


def _column_entry(column: Any) -> tuple[Any, _Parser, dict[Any, Any]]:
    entry = _COLUMNS.get(id(column))
    if entry is None or entry[0] is not column:
        entry = (column, _build_parser(column.type), Datum.default(column.type).values)
        _COLUMNS[id(column)] = entry
    return entry


def _table_entries(table: Any) -> dict[str, tuple[Any, _Parser, dict[Any, Any]]]:
    """column name -> _column_entry of `table` (an ``IdlTable``; kept on it)."""
    entries: dict[str, Any] | None = table.__dict__.get("_fastpath_updates")
    if entries is None:
        entries = {name: _column_entry(c) for name, c in table.columns.items()}
        table._fastpath_updates = entries
    return entries


def parse_datum(column: Any, datum_json: Any) -> Any:
    """``Datum.from_json(column.type, datum_json)``, faster."""
    return _column_entry(column)[1](datum_json)


def row_update(idl: Any, table: Any, row: Any, row_json: dict[str, Any]) -> bool:
    """``Idl.__row_update``: apply the column values of `row_json` to `row`;
    True when a column with alerts changed."""
    changed = False
    entries = table.__dict__.get("_fastpath_updates") or _table_entries(table)
    data = row._data
    row_dict = row.__dict__
    defaults_dict = type(data) is _DefaultDict
    for column_name, datum_json in row_json.items():
        entry = entries.get(column_name)
        if entry is None:
            _vlog.warn("unknown column %s updating table %s" % (column_name, table.name))
            continue
        column, parse, default_values = entry
        try:
            datum = parse(datum_json)
        except ovs.db.error.Error as e:
            _vlog.warn("error parsing column %s in table %s: %s"
                       % (column_name, table.name, e))
            continue
        current = _dict_get(data, column_name)
        if current is None:
            if defaults_dict:
                if datum.values == default_values:
                    continue
            elif datum == data[column_name]:
                continue
        elif datum == current:
            continue
        data[column_name] = datum
        row_dict.pop(column_name, None)     # a kept Python value (idl_fastpath)
        if column.alert:
            changed = True
    return changed


def apply_diff(idl: Any, table: Any, row: Any, row_diff: dict[str, Any]) -> dict[str, Any]:
    """``Idl.__apply_diff``: apply an update2 ``modify`` to `row`; returns the
    old datums of the columns it names."""
    old_row = {}
    columns = table.columns
    data = row._data
    row_dict = row.__dict__
    for column_name, datum_diff_json in row_diff.items():
        column = columns.get(column_name)
        if not column:
            _vlog.warn("unknown column %s updating table %s" % (column_name, table.name))
            continue
        try:
            datum_diff = _column_entry(column)[1](datum_diff_json)
        except ovs.db.error.Error as e:
            _vlog.warn("error parsing column %s in table %s: %s"
                       % (column_name, table.name, e))
            continue
        old_row[column_name] = data[column_name].copy()
        # (A column missing from a ColumnDefaultDict: each read is a new
        # default datum, diffed and compared as the library does.)
        datum = data[column_name].diff(datum_diff)
        if datum != data[column_name]:
            data[column_name] = datum
        row_dict.pop(column_name, None)     # a kept Python value (idl_fastpath)
    return old_row


def _add_default_columns(idl: Any, table: Any) -> list[tuple[str, Any]]:
    entry = _ADD_DEFAULT.get(id(table))
    if entry is not None and entry[0] is table and entry[1] is idl.readonly:
        return entry[2]
    readonly = idl.readonly.get(table.name, ()) if table.name in idl.readonly else ()
    out = []
    for column in table.columns.values():
        t = column.type
        if column.name in readonly or t.n_min == 0 or t.is_map():
            continue
        key_default = t.key.type.default
        out.append((column.name, ovs.ovsuuid.to_json(key_default)
                    if t.key.type == ovs.db.types.UuidType else key_default))
    _ADD_DEFAULT[id(table)] = (table, idl.readonly, out)
    return out


def add_default(idl: Any, table: Any, row_update_json: dict[str, Any]) -> None:
    """``Idl.__add_default``: the JSON default of every required scalar column
    (not read-only) a new row lacks, from a list made once per table."""
    for name, default_json in _add_default_columns(idl, table):
        if name not in row_update_json:
            row_update_json[name] = default_json
