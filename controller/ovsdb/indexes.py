"""Dictionary indexes over SB rows, maintained from tracked changes.

Design note
-----------
The ``ovs.db.custom_index`` indexes break on reference columns with the C
JSON parser, so the agent keeps its own dicts.  Each index remembers, per
row UUID, the key(s) under which the row was filed; an update or delete
first unfiles the row by those remembered keys (the IDL only gives raw old
datums), then files it again under its current keys.  After the initial
:meth:`SbIndexes.rebuild`, :meth:`SbIndexes.apply` touches only the rows
changed in this iteration, so no loop walks every Port_Binding.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any, Callable, Generic, Hashable, Iterable, Mapping, TypeVar

from controller.ovsdb.tracking import ChangeTracker, TableChanges

K = TypeVar("K", bound=Hashable)


def ref_uuid(row: Any, column: str) -> uuidlib.UUID | None:
    """UUID held in an optional/required reference column, without lookups."""
    data = row.__dict__.get("_data") if hasattr(row, "__dict__") else None
    if data is not None and column in data:
        datum = data[column]
        values = getattr(datum, "values", None)
        if values is not None:
            for atom in values:
                v = atom.value
                return v if isinstance(v, uuidlib.UUID) else None
            return None
    v = getattr(row, column, None)
    if isinstance(v, list):
        v = v[0] if v else None
    if v is None:
        return None
    if isinstance(v, uuidlib.UUID):
        return v
    u = getattr(v, "uuid", None)
    return u if isinstance(u, uuidlib.UUID) else None


class UniqueIndex(Generic[K]):
    """key -> row (last writer wins; duplicates are tolerated, not expected)."""

    def __init__(self, keyfn: Callable[[Any], K | None]) -> None:
        self.keyfn = keyfn
        self.by_key: dict[K, Any] = {}
        self._key_of: dict[uuidlib.UUID, K] = {}

    def get(self, key: K) -> Any | None:
        return self.by_key.get(key)

    def __len__(self) -> int:
        return len(self.by_key)

    def remove(self, u: uuidlib.UUID) -> None:
        k = self._key_of.pop(u, None)
        if k is not None:
            row = self.by_key.get(k)
            if row is not None and row.uuid == u:
                del self.by_key[k]

    def add(self, row: Any) -> None:
        k = self.keyfn(row)
        if k is None:
            return
        self._key_of[row.uuid] = k
        self.by_key[k] = row

    def clear(self) -> None:
        self.by_key.clear()
        self._key_of.clear()


class MultiIndex(Generic[K]):
    """key -> {uuid: row}."""

    def __init__(self, keyfn: Callable[[Any], K | None]) -> None:
        self.keyfn = keyfn
        self.by_key: dict[K, dict[uuidlib.UUID, Any]] = {}
        self._key_of: dict[uuidlib.UUID, K] = {}

    def get(self, key: K) -> Mapping[uuidlib.UUID, Any]:
        return self.by_key.get(key, {})

    def remove(self, u: uuidlib.UUID) -> None:
        k = self._key_of.pop(u, None)
        if k is not None:
            bucket = self.by_key.get(k)
            if bucket is not None:
                bucket.pop(u, None)
                if not bucket:
                    del self.by_key[k]

    def add(self, row: Any) -> None:
        k = self.keyfn(row)
        if k is None:
            return
        self._key_of[row.uuid] = k
        self.by_key.setdefault(k, {})[row.uuid] = row

    def clear(self) -> None:
        self.by_key.clear()
        self._key_of.clear()


AnyIndex = UniqueIndex[Any] | MultiIndex[Any]


def _pb_dp_key(row: Any) -> tuple[uuidlib.UUID, int] | None:
    dp = ref_uuid(row, "datapath")
    return (dp, int(row.tunnel_key)) if dp is not None else None


def _mg_dp_name(row: Any) -> tuple[uuidlib.UUID, str] | None:
    dp = ref_uuid(row, "datapath")
    return (dp, row.name) if dp is not None else None


class SbIndexes:
    """All SB indexes the agent uses."""

    def __init__(self) -> None:
        self.pb_by_name: UniqueIndex[str] = UniqueIndex(lambda r: r.logical_port)
        self.pb_by_key: UniqueIndex[tuple[uuidlib.UUID, int]] = UniqueIndex(_pb_dp_key)
        self.pb_by_datapath: MultiIndex[uuidlib.UUID] = MultiIndex(lambda r: ref_uuid(r, "datapath"))
        self.dp_by_key: UniqueIndex[int] = UniqueIndex(lambda r: int(r.tunnel_key))
        self.chassis_by_name: UniqueIndex[str] = UniqueIndex(lambda r: r.name)
        self.mg_by_name: UniqueIndex[tuple[uuidlib.UUID, str]] = UniqueIndex(_mg_dp_name)
        self.chassis_private_by_name: UniqueIndex[str] = UniqueIndex(lambda r: r.name)
        self.tables: dict[str, tuple[AnyIndex, ...]] = {
            "Port_Binding": (self.pb_by_name, self.pb_by_key, self.pb_by_datapath),
            "Datapath_Binding": (self.dp_by_key,),
            "Chassis": (self.chassis_by_name,),
            "Chassis_Private": (self.chassis_private_by_name,),
            "Multicast_Group": (self.mg_by_name,),
        }

    def rebuild(self, tables: Mapping[str, Mapping[uuidlib.UUID, Any]]) -> None:
        for name, idxs in self.tables.items():
            for idx in idxs:
                idx.clear()
            rows = tables.get(name)
            if rows is None:
                continue
            for row in rows.values():
                for idx in idxs:
                    idx.add(row)

    def apply_table(self, name: str, changes: TableChanges) -> None:
        idxs = self.tables.get(name)
        if not idxs or not changes:
            return
        for u in changes.deleted:
            for idx in idxs:
                idx.remove(u)
        for tr in changes.updated.values():
            for idx in idxs:
                idx.remove(tr.row.uuid)
                idx.add(tr.row)
        for tr in changes.created.values():
            for idx in idxs:
                idx.remove(tr.row.uuid)
                idx.add(tr.row)

    def apply(self, tracker: ChangeTracker) -> None:
        for name in self.tables:
            tc = tracker.tables.get(name)
            if tc:
                self.apply_table(name, tc)

    def pbs_on_datapath(self, dp: uuidlib.UUID) -> Iterable[Any]:
        return self.pb_by_datapath.get(dp).values()
