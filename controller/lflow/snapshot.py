"""Read-only SB snapshot reader (standalone ovsdb file, optionally gzipped).

Design note: an ``ovsdb-client backup`` file is a sequence of records, each a
header line ``OVSDB JSON <length> <hash>`` followed by one JSON object; the
first is the schema, the rest are transactions.  ``SbSnapshot`` replays the
transactions and turns every row into a ``types.SimpleNamespace`` shaped like
a row of the python IDL: ``uuid`` plus one attribute per schema column, with
references resolved to row objects, optional columns as lists, maps as
dicts.  The schema comes from the file itself, so no installed schema is
needed.  It is meant for tests, benchmarks and the CLI (no I/O elsewhere).
"""

from __future__ import annotations

import gzip
import json
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

Row = types.SimpleNamespace


def _read_bytes(path: Path) -> bytes:
    if not path.exists() and Path(str(path) + ".gz").exists():
        path = Path(str(path) + ".gz")
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def records(path: Path | str) -> Iterator[dict[str, Any]]:
    """The JSON records of an ovsdb file (schema first)."""
    data = _read_bytes(Path(path))
    pos = 0
    n = len(data)
    while pos < n:
        nl = data.index(b"\n", pos)
        length = int(data[pos:nl].split()[2])
        yield json.loads(data[nl + 1:nl + 1 + length])
        pos = nl + 1 + length
        while pos < n and data[pos:pos + 1] == b"\n":
            pos += 1


class SbSnapshot:
    """Rows by table name (see module docstring)."""

    def __init__(self, path: Path | str) -> None:
        recs = records(path)
        schema = next(recs)["tables"]
        raw: dict[str, dict[str, dict[str, Any]]] = {}
        for rec in recs:
            for table, rows in rec.items():
                if table.startswith("_") or not isinstance(rows, dict):
                    continue
                tab = raw.setdefault(table, {})
                for u, row in rows.items():
                    if row is None:
                        tab.pop(u, None)
                    else:
                        tab.setdefault(u, {}).update(row)
        self.rows: dict[str, dict[str, Row]] = {
            table: {u: Row(uuid=uuid.UUID(u)) for u in rows} for table, rows in raw.items()}
        for table, rows in raw.items():
            cols = schema[table]["columns"]
            objs = self.rows[table]
            for u, row in rows.items():
                obj = objs[u]
                for col, ctype in cols.items():
                    setattr(obj, col, self._convert(row.get(col), ctype["type"]))

    def _atom(self, value: Any, base: Any) -> Any:
        if isinstance(value, list) and value and value[0] == "uuid":
            ref = base.get("refTable") if isinstance(base, dict) else None
            if ref:
                return self.rows.get(ref, {}).get(value[1])
            return uuid.UUID(value[1])
        return value

    def _convert(self, value: Any, ctype: Any) -> Any:
        if isinstance(ctype, str):
            ctype = {"key": ctype}
        key, val = ctype["key"], ctype.get("value")
        mn, mx = ctype.get("min", 1), ctype.get("max", 1)
        if value is None:
            if val is not None:
                return {}
            if mn == 1 and mx == 1:
                kt = key if isinstance(key, str) else key["type"]
                return {"string": "", "integer": 0, "boolean": False, "real": 0.0}.get(kt)
            return []
        if val is not None:
            pairs = value[1] if value[0] == "map" else []
            return {self._atom(k, key): self._atom(v, val) for k, v in pairs}
        if isinstance(value, list) and value and value[0] == "set":
            items = [self._atom(v, key) for v in value[1]]
        else:
            items = [self._atom(value, key)]
        items = [i for i in items if i is not None]
        if mn == 1 and mx == 1:
            return items[0] if items else None
        if items and hasattr(items[0], "uuid"):
            return sorted(items, key=lambda r: r.uuid)
        return sorted(items)

    def table(self, name: str) -> list[Row]:
        return list(self.rows.get(name, {}).values())
