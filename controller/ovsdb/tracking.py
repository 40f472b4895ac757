"""Per-table change tracking built from IDL ``notify()`` events.

Design note
-----------
The Python OVSDB IDL has no equivalent of the C IDL's ``ovsdb_idl_track_*``
API: it only calls ``Idl.notify(event, row, updates)`` after each batch of
row updates has been applied.  :class:`ChangeTracker` turns that stream into
one :class:`TableChanges` per table holding, for the current main-loop
iteration, the rows created, updated (with the old values of the changed
columns) and deleted.  The main loop calls :meth:`ChangeTracker.clear` at the
end of every iteration, exactly where the C agent calls
``ovsdb_idl_track_clear()``.

Several events on the same row inside one iteration are folded:

* create then update            -> created
* create then delete            -> nothing at all
* update then update            -> updated, keeping the *oldest* old values
* update then delete            -> deleted
* delete then create (same uuid) -> updated (old values = every column)

Rows are kept as the live IDL objects (or anything with ``uuid``), so reading
a tracked row gives its current contents; ``old`` holds the previous values
of the columns that changed, by column name.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any, Iterable, Iterator

ROW_CREATE = "create"
ROW_UPDATE = "update"
ROW_DELETE = "delete"


class TrackedRow:
    """One row touched in this iteration: the row and its old column values."""

    __slots__ = ("row", "old")

    def __init__(self, row: Any, old: dict[str, Any] | None = None) -> None:
        self.row = row
        self.old: dict[str, Any] = old if old is not None else {}

    def column_changed(self, column: str) -> bool:
        return column in self.old

    def only_changed(self, columns: frozenset[str]) -> bool:
        """An update of nothing but (some of) `columns`."""
        return bool(self.old) and columns.issuperset(self.old)

    def old_value(self, column: str) -> Any:
        """Previous Python value of a changed column (as the IDL would give it).

        References come back as UUIDs, not rows."""
        v = self.old.get(column)
        to_python = getattr(v, "to_python", None)
        if to_python is not None:
            return to_python(lambda atom, base: atom)
        return v


class TableChanges:
    """Rows created/updated/deleted in one table during this iteration."""

    __slots__ = ("name", "created", "updated", "deleted")

    def __init__(self, name: str) -> None:
        self.name = name
        self.created: dict[uuidlib.UUID, TrackedRow] = {}
        self.updated: dict[uuidlib.UUID, TrackedRow] = {}
        self.deleted: dict[uuidlib.UUID, TrackedRow] = {}

    def __bool__(self) -> bool:
        return bool(self.created or self.updated or self.deleted)

    def __len__(self) -> int:
        return len(self.created) + len(self.updated) + len(self.deleted)

    def clear(self) -> None:
        self.created.clear()
        self.updated.clear()
        self.deleted.clear()

    def record(self, event: str, row: Any, old: dict[str, Any] | None = None) -> None:
        u = row.uuid
        if event == ROW_CREATE:
            if u in self.deleted:
                prev = self.deleted.pop(u)
                # Reappeared (e.g. monitor condition flip): report as an update
                # whose old values are the whole former row.
                self.updated[u] = TrackedRow(row, _all_columns(prev.row))
            else:
                self.created[u] = TrackedRow(row)
        elif event == ROW_UPDATE:
            if u in self.created:
                self.created[u].row = row
                return
            tr = self.updated.get(u)
            if tr is None:
                self.updated[u] = TrackedRow(row, dict(old or {}))
            else:
                tr.row = row
                for col, val in (old or {}).items():
                    tr.old.setdefault(col, val)
        elif event == ROW_DELETE:
            if self.created.pop(u, None) is not None:
                return
            prev_upd = self.updated.pop(u, None)
            self.deleted[u] = TrackedRow(row, prev_upd.old if prev_upd else None)
        else:  # pragma: no cover - defensive
            raise ValueError(f"unknown event {event!r}")

    def new_or_updated(self) -> Iterator[TrackedRow]:
        yield from self.created.values()
        yield from self.updated.values()

    def all(self) -> Iterator[TrackedRow]:
        yield from self.created.values()
        yield from self.updated.values()
        yield from self.deleted.values()

    def is_new(self, u: uuidlib.UUID) -> bool:
        return u in self.created

    def is_deleted(self, u: uuidlib.UUID) -> bool:
        return u in self.deleted


def _all_columns(row: Any) -> dict[str, Any]:
    data = getattr(row, "_data", None)
    if isinstance(data, dict):
        return dict(data)
    return {}


class ChangeTracker:
    """Tracked changes for every table of one database.

    ``reset`` is set when the IDL threw its whole replica away (reconnect
    without ``monitor_cond_since`` history): per-row changes are then not
    meaningful and consumers must rebuild from the full tables.
    """

    __slots__ = ("tables", "reset")

    def __init__(self, table_names: Iterable[str]) -> None:
        self.tables: dict[str, TableChanges] = {n: TableChanges(n) for n in table_names}
        self.reset = False

    def __getitem__(self, table: str) -> TableChanges:
        return self.tables[table]

    def record(self, table: str, event: str, row: Any, old: dict[str, Any] | None = None) -> None:
        tc = self.tables.get(table)
        if tc is None:
            tc = self.tables[table] = TableChanges(table)
        tc.record(event, row, old)

    def has_changes(self, table: str) -> bool:
        tc = self.tables.get(table)
        return bool(tc)

    def any_changes(self) -> bool:
        return self.reset or any(self.tables.values())

    def clear(self) -> None:
        for tc in self.tables.values():
            tc.clear()
        self.reset = False
