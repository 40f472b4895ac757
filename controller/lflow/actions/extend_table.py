"""Id allocation for OpenFlow groups and meters that logical actions create.

Design note
-----------
Some logical actions (``ct_lb(backends=...)``, ``select(...)``, ``fwd_group``,
``set_meter``, ``log(meter=...)``) need an OpenFlow group or meter.  The
action encoder describes the object by a *name* (for groups an ovs-ofctl
group spec such as ``type=select,...,bucket=...``; for meters a meter spec or
a Meter row name) and asks this table for an id.

The table keeps two views, like the C agent:

* ``desired``  -- name -> entry, what the current logical flows need; each
  entry records the logical flows (UUIDs) that reference it.
* ``existing`` -- name -> entry, what has been installed on the switch.

An id is shared between a desired entry and an existing entry of the same
name (so re-computing flows does not renumber installed groups).  A new name
takes the lowest free id >= 1 (id 0 is never used).  An id is free only when
neither view holds it.  ``remove_desired(lflow)`` drops the lflow's
references and forgets entries nobody references any more;
``sync()`` copies desired into existing after installation;
``remove_existing(name)`` forgets an installed entry (after deleting it on
the switch).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Iterator
from uuid import UUID

MAX_EXT_TABLE_ID = 65535
EXT_TABLE_ID_INVALID = 0


@dataclass(slots=True)
class ExtendTableEntry:
    """One named group/meter: its id and (for desired entries) users."""

    name: str
    table_id: int
    lflows: set[UUID] = field(default_factory=set)


class ExtendTable:
    """Group or meter id table (see module docstring)."""

    __slots__ = ("desired", "existing", "_lflow_to_names", "_used_ids",
                 "_free_heap", "_next_fresh")

    def __init__(self) -> None:
        self.desired: dict[str, ExtendTableEntry] = {}
        self.existing: dict[str, ExtendTableEntry] = {}
        self._lflow_to_names: dict[UUID, set[str]] = {}
        # Ids held by desired or existing entries -> number of holders (1..2).
        self._used_ids: dict[int, int] = {}
        # Released ids below _next_fresh, kept in a heap (lazy deletion).
        self._free_heap: list[int] = []
        self._next_fresh = 1

    # -- id bookkeeping ------------------------------------------------
    def _take_lowest_free(self) -> int:
        while self._free_heap:
            candidate = heapq.heappop(self._free_heap)
            if candidate not in self._used_ids:
                return candidate
        if self._next_fresh > MAX_EXT_TABLE_ID:
            return EXT_TABLE_ID_INVALID
        candidate = self._next_fresh
        self._next_fresh += 1
        return candidate

    def _hold(self, table_id: int) -> None:
        self._used_ids[table_id] = self._used_ids.get(table_id, 0) + 1

    def _release(self, table_id: int) -> None:
        count = self._used_ids.get(table_id, 0) - 1
        if count > 0:
            self._used_ids[table_id] = count
        else:
            self._used_ids.pop(table_id, None)
            heapq.heappush(self._free_heap, table_id)

    # -- public API ----------------------------------------------------
    def assign_id(self, name: str, lflow_uuid: UUID) -> int:
        """Id for ``name`` (reused if desired/existing), referenced by
        ``lflow_uuid``.  Returns EXT_TABLE_ID_INVALID (0) when full."""
        entry = self.desired.get(name)
        if entry is None:
            installed = self.existing.get(name)
            if installed is not None:
                table_id = installed.table_id
            else:
                table_id = self._take_lowest_free()
                if table_id == EXT_TABLE_ID_INVALID:
                    return EXT_TABLE_ID_INVALID
            self._hold(table_id)
            entry = ExtendTableEntry(name, table_id)
            self.desired[name] = entry
        entry.lflows.add(lflow_uuid)
        self._lflow_to_names.setdefault(lflow_uuid, set()).add(name)
        return entry.table_id

    def desired_lookup(self, name: str) -> ExtendTableEntry | None:
        return self.desired.get(name)

    def desired_by_id(self) -> dict[int, ExtendTableEntry]:
        return {e.table_id: e for e in self.desired.values()}

    def remove_desired(self, lflow_uuid: UUID) -> None:
        """Drop every reference of ``lflow_uuid``; unreferenced desired
        entries disappear (their id is freed unless installed)."""
        for name in self._lflow_to_names.pop(lflow_uuid, ()):
            entry = self.desired.get(name)
            if entry is None:
                continue
            entry.lflows.discard(lflow_uuid)
            if not entry.lflows:
                del self.desired[name]
                self._release(entry.table_id)

    def clear_desired(self) -> None:
        for entry in self.desired.values():
            self._release(entry.table_id)
        self.desired.clear()
        self._lflow_to_names.clear()

    def uninstalled(self) -> Iterator[ExtendTableEntry]:
        """Desired entries not yet installed (to add to the switch)."""
        for name, entry in self.desired.items():
            if name not in self.existing:
                yield entry

    def installed_unwanted(self) -> Iterator[ExtendTableEntry]:
        """Installed entries no longer desired (to delete from the switch)."""
        for name, entry in self.existing.items():
            if name not in self.desired:
                yield entry

    def remove_existing(self, name: str) -> None:
        entry = self.existing.pop(name, None)
        if entry is not None:
            self._release(entry.table_id)

    def sync(self) -> None:
        """Record every desired entry as installed."""
        for name, entry in self.desired.items():
            if name not in self.existing:
                self._hold(entry.table_id)
                self.existing[name] = ExtendTableEntry(name, entry.table_id)
