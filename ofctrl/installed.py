"""Installed flow table and the desired -> installed diff.

Design (after OVN 23.03 ofctrl.c):

* An `InstalledFlow` is what we believe is in the switch for one key
  (table, priority, match).  `flow` is the Flow last sent for it (Flows are
  immutable, so no copy is made: the desired flow's object is shared).
* `refs` lists every desired flow with that key, ordered by preference
  (allow actions > drop > conjunction, stable among equals); `refs[0]` is
  the active one, whose actions and cookie are installed.
* The diff emits `(command, flow)` pairs through a callback: ADD for a new
  key, MODIFY_STRICT when the active actions change (ADD when the cookie
  changes, which is the only way to update a cookie), DELETE_STRICT when no
  desired flow remains.  `update_by_compare` walks everything (first put,
  after a recompute or reconnect); `update_by_track` walks only the desired
  table's tracked changes, after merging delete+add pairs of identical
  flows so that a re-added identical flow sends nothing.
* `add_new` is the part of the diff that cannot depend on what comes
  later: desired flows whose key nothing installed has get their ADD (and
  leave the tracked set); deletions, modifications and flows sharing a key
  are left to the `update_by_track`/`update_by_compare` that follows.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from ofctrl.desired import DesiredFlow, DesiredFlowTable
from ofctrl.flow import Flow
from ofctrl.messages import OFPFC_ADD, OFPFC_DELETE_STRICT, OFPFC_MODIFY_STRICT

Emit = Callable[[int, Flow], None]


class InstalledFlow:
    __slots__ = ("flow", "refs")

    def __init__(self, flow: Flow, first: DesiredFlow | None = None) -> None:
        """`first`, if given, is linked as the only (so active) desired flow."""
        self.flow = flow
        if first is None:
            self.refs: list[DesiredFlow] = []
        else:
            self.refs = [first]
            first.installed = self

    def active(self) -> DesiredFlow | None:
        return self.refs[0] if self.refs else None

    def link(self, d: DesiredFlow) -> bool:
        """Add `d` in preference order; True if it became the active flow."""
        refs = self.refs
        rank = d.rank
        for idx, f in enumerate(refs):
            if rank < f.rank:
                refs.insert(idx, d)
                break
        else:
            refs.append(d)
        d.installed = self
        return refs[0] is d

    def unlink(self, d: DesiredFlow) -> bool:
        """Remove `d`; True if it was the active flow."""
        was_active = bool(self.refs) and self.refs[0] is d
        self.refs.remove(d)
        d.installed = None
        return was_active

    def replace(self, old: DesiredFlow, new: DesiredFlow) -> None:
        self.refs[self.refs.index(old)] = new
        old.installed = None
        new.installed = self

    def unlink_all(self) -> None:
        for d in self.refs:
            d.installed = None
        self.refs = []


class InstalledFlowTable:
    __slots__ = ("by_key", "n_flows")

    def __init__(self) -> None:
        self.by_key: dict[int, InstalledFlow | list[InstalledFlow]] = {}
        self.n_flows = 0

    def __len__(self) -> int:
        return self.n_flows

    def __iter__(self) -> Iterator[InstalledFlow]:
        for v in self.by_key.values():
            if type(v) is InstalledFlow:
                yield v
            else:
                yield from v  # type: ignore[misc]

    def flows(self) -> Iterator[Flow]:
        for i in self:
            yield i.flow

    def lookup(self, flow: Flow) -> InstalledFlow | None:
        cur = self.by_key.get(flow.key_hash)
        if cur is None:
            return None
        if type(cur) is InstalledFlow:
            return cur if cur.flow.same_key(flow) else None
        for i in cur:  # type: ignore[union-attr]
            if i.flow.same_key(flow):
                return i
        return None

    def insert(self, i: InstalledFlow) -> None:
        h = i.flow.key_hash
        cur = self.by_key.get(h)
        if cur is None:
            self.by_key[h] = i
        elif type(cur) is InstalledFlow:
            self.by_key[h] = [cur, i]
        else:
            cur.append(i)  # type: ignore[union-attr]
        self.n_flows += 1

    def remove(self, i: InstalledFlow) -> None:
        h = i.flow.key_hash
        cur = self.by_key[h]
        if cur is i:
            del self.by_key[h]
        else:
            lst: list[InstalledFlow] = cur  # type: ignore[assignment]
            lst.remove(i)
            if len(lst) == 1:
                self.by_key[h] = lst[0]
        self.n_flows -= 1

    def clear(self) -> None:
        """Forget everything (the switch was cleared)."""
        for i in self:
            i.unlink_all()
        self.by_key = {}
        self.n_flows = 0


def _modify(i: InstalledFlow, d: Flow, emit: Emit) -> None:
    emit(OFPFC_ADD if i.flow.cookie != d.cookie else OFPFC_MODIFY_STRICT, d)
    i.flow = d


def _add_if_new(installed: InstalledFlowTable, d: DesiredFlow, emit: Emit) -> InstalledFlow | None:
    """ADD the flow of `d` and install it linked to `d` if no installed
    flow has its key; else the installed flow with that key."""
    flow = d.flow
    h = flow.key_hash
    by_key = installed.by_key
    if h not in by_key:                 # the common case: a new key, inlined
        emit(OFPFC_ADD, flow)
        by_key[h] = InstalledFlow(flow, d)
        installed.n_flows += 1
        return None
    i = installed.lookup(flow)
    if i is None:
        emit(OFPFC_ADD, flow)
        installed.insert(InstalledFlow(flow, d))
    return i


def update_by_compare(desired: DesiredFlowTable, installed: InstalledFlowTable, emit: Emit) -> None:
    """Full diff of `desired` against `installed` (no tracked changes)."""
    assert not desired.tracked
    desired_by_key = desired.by_key
    for i in list(installed):
        if i.refs:
            i.unlink_all()
        old = i.flow
        cur = desired_by_key.get(old.key_hash)
        if cur is None:
            d = None
        elif type(cur) is DesiredFlow:      # one desired flow with that hash: inlined lookup
            d = cur if cur.flow.same_key(old) else None  # type: ignore[union-attr]
        else:
            d = desired.lookup(old)
        if d is None:
            emit(OFPFC_DELETE_STRICT, old)
            installed.remove(i)
        else:
            f = d.flow
            if f is not old and (f.cookie != old.cookie
                                 or (f.actions is not old.actions and f.actions != old.actions)):
                _modify(i, f, emit)
            i.refs = [d]                    # i.link(d): refs were just emptied
            d.installed = i
    for d in desired:
        if d.installed is not None:
            continue
        i2 = _add_if_new(installed, d, emit)
        if i2 is not None and i2.link(d):
            _modify(i2, d.flow, emit)


def _merge_tracked(desired: DesiredFlowTable) -> None:
    """Cancel delete+add pairs of identical flows (key, cookie, actions)."""
    deleted: dict[int, list[DesiredFlow]] = {}
    tracked = desired.tracked
    for f in list(tracked):
        if f.deleted:
            deleted.setdefault(f.flow.key_hash, []).append(f)
            continue
        if not deleted:                 # no deletion before this addition
            continue
        cands = deleted.get(f.flow.key_hash)
        if not cands:
            continue
        for del_f in cands:
            if not del_f.flow.same_content(f.flow):
                continue
            i = del_f.installed
            if i is None:
                continue
            if i.flow.cookie != f.flow.cookie or i.flow.actions != f.flow.actions:
                continue
            if f.installed is None:
                i.replace(del_f, f)
            else:
                i.unlink(del_f)
            cands.remove(del_f)
            del tracked[del_f]
            del tracked[f]
            break


def update_by_track(desired: DesiredFlowTable, installed: InstalledFlowTable, emit: Emit) -> None:
    """Diff only the tracked changes of `desired`."""
    _merge_tracked(desired)
    tracked = desired.tracked
    desired.tracked = {}
    for f in tracked:
        if f.deleted:
            i = f.installed
            if i is None:
                continue
            was_active = i.unlink(f)
            d = i.active()
            if d is None:
                emit(OFPFC_DELETE_STRICT, i.flow)
                installed.remove(i)
            elif was_active:
                _modify(i, d.flow, emit)
            continue
        i = _add_if_new(installed, f, emit)
        if i is None:
            continue
        if i.refs and i.refs[0] is f:
            _modify(i, f.flow, emit)
        elif f.installed is None:
            if i.link(f):
                _modify(i, f.flow, emit)


def add_new(desired: DesiredFlowTable, installed: InstalledFlowTable, emit: Emit,
            candidates: Iterable[DesiredFlow]) -> None:
    """ADD those of `candidates` (flows of `desired`) whose key is not
    installed, and take them out of the tracked set; the rest stays as it is
    (see the design note)."""
    tracked = desired.tracked
    for f in list(candidates):
        if not f.owners or f.deleted or f.installed is not None:
            continue
        if _add_if_new(installed, f, emit) is not None:
            continue
        tracked.pop(f, None)
