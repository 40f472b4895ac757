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

:meth:`SbIndexes.track_references` stands in for the C IDL's reference
tracking where the agent reads through a reference: a row that changed
makes the rows referring to it tracked too (updated, no column changed).
Followed: HA_Chassis -> HA_Chassis_Group -> Port_Binding (the residency
of chassisredirect and external ports, and with it their lflows and ct
zones, follows a group's members without the Port_Binding row changing,
e.g. northd filling in ``HA_Chassis.chassis`` once a wiped SB has our
Chassis row again) and Logical_DP_Group -> Logical_Flow / Load_Balancer
(northd edits a datapath group in place when a datapath joins or leaves
it; the lflows of the group are then processed again, as C's noop edge
from SB_logical_dp_group expects).  The Logical_Flow-by-group index this
needs is built on the first group change, not at every load.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any, Callable, Generic, Hashable, Iterable, Mapping, TypeVar

from controller.ovsdb.tracking import ROW_UPDATE, ChangeTracker, TableChanges

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


def ref_uuids(row: Any, column: str) -> set[uuidlib.UUID]:
    """UUIDs held in a set-of-references column, without lookups."""
    data = row.__dict__.get("_data") if hasattr(row, "__dict__") else None
    if data is not None and column in data:
        values = getattr(data[column], "values", None)
        if values is not None:
            return {a.value for a in values if isinstance(a.value, uuidlib.UUID)}
    out: set[uuidlib.UUID] = set()
    for v in getattr(row, column, None) or ():
        u = v if isinstance(v, uuidlib.UUID) else getattr(v, "uuid", None)
        if isinstance(u, uuidlib.UUID):
            out.add(u)
    return out


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
        self.pb_by_ha_group: MultiIndex[uuidlib.UUID] = MultiIndex(
            lambda r: ref_uuid(r, "ha_chassis_group"))
        # Logical_Flow by group: the largest table, so built on the first
        # group change (not at every load) and maintained from then on.
        self.lf_by_dp_group: MultiIndex[uuidlib.UUID] | None = None
        self.dp_by_key: UniqueIndex[int] = UniqueIndex(lambda r: int(r.tunnel_key))
        self.chassis_by_name: UniqueIndex[str] = UniqueIndex(lambda r: r.name)
        self.mg_by_name: UniqueIndex[tuple[uuidlib.UUID, str]] = UniqueIndex(_mg_dp_name)
        self.chassis_private_by_name: UniqueIndex[str] = UniqueIndex(lambda r: r.name)
        self.tables: dict[str, tuple[AnyIndex, ...]] = {
            "Port_Binding": (self.pb_by_name, self.pb_by_key, self.pb_by_datapath,
                             self.pb_by_ha_group),
            "Datapath_Binding": (self.dp_by_key,),
            "Chassis": (self.chassis_by_name,),
            "Chassis_Private": (self.chassis_private_by_name,),
            "Multicast_Group": (self.mg_by_name,),
        }

    def rebuild(self, tables: Mapping[str, Mapping[uuidlib.UUID, Any]]) -> None:
        self.lf_by_dp_group = None
        self.tables.pop("Logical_Flow", None)
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

    def track_references(self, tracker: ChangeTracker,
                         tables: Callable[[str], Mapping[uuidlib.UUID, Any]]) -> None:
        """After :meth:`apply`: every row holding a reference to a row
        updated in this iteration becomes tracked as updated (no column
        changed), for the references the agent reads through (C's IDL does
        this for every reference).  A created or deleted row needs nothing:
        the referred tables are monitored without conditions, so a row's
        referrers can only have come or gone with it, in the same
        transaction (and a wiped SB refilled does not walk every lflow)."""
        def touched(table: str) -> set[uuidlib.UUID]:
            tc = tracker.tables.get(table)
            return set(tc.updated) if tc else set()

        def mark(table: str, rows: Iterable[Any]) -> None:
            tc = tracker.tables.get(table)
            for row in rows:
                if tc is None or row.uuid not in tc.deleted:
                    tracker.record(table, ROW_UPDATE, row, {})
                    tc = tracker.tables[table]

        members = touched("HA_Chassis")
        if members:
            mark("HA_Chassis_Group", [g for g in tables("HA_Chassis_Group").values()
                                      if not members.isdisjoint(ref_uuids(g, "ha_chassis"))])
        for g in touched("HA_Chassis_Group"):
            mark("Port_Binding", self.pb_by_ha_group.get(g).values())
        dp_groups = touched("Logical_DP_Group")
        if dp_groups:
            lf_idx = self._lf_by_dp_group(tables("Logical_Flow"))
            for g in dp_groups:
                mark("Logical_Flow", lf_idx.get(g).values())
            mark("Load_Balancer", [lb for lb in tables("Load_Balancer").values()
                                   if ref_uuid(lb, "datapath_group") in dp_groups])

    def _lf_by_dp_group(self, lflows: Mapping[uuidlib.UUID, Any]) -> MultiIndex[uuidlib.UUID]:
        idx = self.lf_by_dp_group
        if idx is None:
            idx = self.lf_by_dp_group = MultiIndex(lambda r: ref_uuid(r, "logical_dp_group"))
            for row in lflows.values():
                idx.add(row)
            self.tables["Logical_Flow"] = (idx,)
        return idx
