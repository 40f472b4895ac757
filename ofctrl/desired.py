"""Desired flow table: the flows the agent wants, with their owners.

Design (after OVN 23.03 ofctrl.c, re-expressed for Python):

* A `DesiredFlow` wraps an immutable `Flow` and records its owners (SB row
  UUIDs or any hashable id; M:N: a conjunction flow can be shared by several
  lflows), the `InstalledFlow` it is linked to (or None), its preference
  rank (allow < drop < conjunction) and its tracking state.
* `by_key` indexes desired flows by `Flow.key_hash` (computed once when the
  flow was made).  A slot holds one DesiredFlow or, rarely, a list (several
  desired flows with the same key from different owners, or a hash
  collision); key equality is checked on lookup.
* `by_owner` maps an owner to an insertion-ordered dict of its flows, so
  removal by owner and flood removal are O(flows of that owner).
* Change tracking: once `change_tracked` is set (after a put), additions,
  modifications and deletions are recorded in `tracked` (ordered) so the
  next put walks only them.  `clear()` (a recompute) turns tracking off and
  the next put does a full compare.  While a partial put streams additions
  (ofctrl.session), `fresh` lists the flows added since it last looked.

No I/O here; `installed.py` turns the tables into flow_mod operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Iterator, Protocol

import structlog

from ofctrl.flow import Flow
from ofctrl.ofpacts import Conjunction as _Conjunction

log = structlog.get_logger("ofctrl.desired")

RANK_ALLOW = 0
RANK_DROP = 1
RANK_CONJ = 2

Owner = Hashable



def flow_rank(actions: tuple[Any, ...]) -> int:
    """Preference class of a flow's actions (lower is preferred)."""
    if not actions:
        return RANK_DROP
    conj = _Conjunction
    for a in actions:
        t = type(a)
        if t is conj or t.__name__ == "Conjunction":    # is_conjunction(), inlined
            return RANK_CONJ
    return RANK_ALLOW


@dataclass(frozen=True, slots=True)
class AddrSetInfo:
    """One IP (value/mask ints) of address set `name` that a flow was made for."""

    name: str
    ip: int
    mask: int


class OwnerRemovable(Protocol):
    """Group and meter tables also forget an owner's references."""

    def remove_desired(self, owner: Owner) -> None: ...


class DesiredFlow:
    __slots__ = ("flow", "owners", "installed", "rank", "deleted", "as_refs")

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self.owners: tuple[Owner, ...] = ()  # a tuple: usually one owner, no GC tracking
        self.installed: Any = None  # InstalledFlow | None
        self.rank = flow_rank(flow.actions)
        self.deleted = False
        # (owner, AddrSetInfo) entries of DesiredFlowTable.as_index naming this flow.
        self.as_refs: list[tuple[Owner, AddrSetInfo]] | None = None

    def __repr__(self) -> str:
        return "DesiredFlow(%r, owners=%r)" % (self.flow, self.owners)


_new_desired = object.__new__


class DesiredFlowTable:
    __slots__ = ("by_key", "by_owner", "tracked", "change_tracked", "extend_tables", "n_flows", "as_index",
                 "fresh")

    def __init__(self, extend_tables: Iterable[OwnerRemovable] = ()) -> None:
        self.by_key: dict[int, DesiredFlow | list[DesiredFlow]] = {}
        self.by_owner: dict[Owner, dict[DesiredFlow, None]] = {}
        # owner -> address set name -> (ip, mask) -> flows made for that IP.
        self.as_index: dict[Owner, dict[str, dict[tuple[int, int], list[DesiredFlow]]]] = {}
        self.tracked: dict[DesiredFlow, None] = {}
        self.change_tracked = False
        # Flows added since ofctrl's last partial put looked (None: not
        # collected; see OfctrlSession.put_partial).
        self.fresh: list[DesiredFlow] | None = None
        self.extend_tables = tuple(extend_tables)
        self.n_flows = 0

    # ------------------------------------------------------------ index
    def __len__(self) -> int:
        return self.n_flows

    def __iter__(self) -> Iterator[DesiredFlow]:
        for v in self.by_key.values():
            if type(v) is DesiredFlow:
                yield v
            else:
                yield from v  # type: ignore[misc]

    def flows(self) -> Iterator[Flow]:
        for d in self:
            yield d.flow

    def _insert(self, d: DesiredFlow) -> None:
        h = d.flow.key_hash
        cur = self.by_key.get(h)
        if cur is None:
            self.by_key[h] = d
        elif type(cur) is DesiredFlow:
            self.by_key[h] = [cur, d]
        else:
            cur.append(d)  # type: ignore[union-attr]
        self.n_flows += 1

    def _unindex(self, d: DesiredFlow) -> None:
        h = d.flow.key_hash
        cur = self.by_key[h]
        if cur is d:
            del self.by_key[h]
        else:
            lst: list[DesiredFlow] = cur  # type: ignore[assignment]
            lst.remove(d)
            if len(lst) == 1:
                self.by_key[h] = lst[0]
        self.n_flows -= 1

    def candidates(self, flow: Flow) -> Iterator[DesiredFlow]:
        """Desired flows with the same key as `flow`."""
        cur = self.by_key.get(flow.key_hash)
        if cur is None:
            return
        if type(cur) is DesiredFlow:
            if cur.flow.same_key(flow):
                yield cur
            return
        for d in cur:  # type: ignore[union-attr]
            if d.flow.same_key(flow):
                yield d

    def lookup(self, flow: Flow, pred: Callable[[DesiredFlow], bool] | None = None) -> DesiredFlow | None:
        """First desired flow with `flow`'s key (and satisfying `pred`)."""
        cur = self.by_key.get(flow.key_hash)
        if cur is None:
            return None
        if type(cur) is DesiredFlow:
            if cur.flow.same_key(flow) and (pred is None or pred(cur)):
                return cur
            return None
        for d in cur:  # type: ignore[union-attr]
            if d.flow.same_key(flow) and (pred is None or pred(d)):
                return d
        return None

    def _link_owner(self, d: DesiredFlow, owner: Owner) -> None:
        if owner in d.owners:
            return
        d.owners += (owner,)
        flows = self.by_owner.get(owner)
        if flows is None:
            self.by_owner[owner] = {d: None}
        else:
            flows[d] = None

    # ---------------------------------------------------------- tracking
    def _track_add_or_modify(self, d: DesiredFlow) -> None:
        if not self.change_tracked:
            return
        self.tracked.pop(d, None)
        d.deleted = False
        self.tracked[d] = None

    def _track_or_forget_deleted(self, d: DesiredFlow) -> None:
        if self.change_tracked:
            if d in self.tracked:
                del self.tracked[d]
                if d.installed is None:
                    return  # never installed: just forget it
            d.deleted = True
            self.tracked[d] = None
        else:
            if d.installed is not None:
                d.installed.unlink(d)

    # ---------------------------------------------------------- mutation
    def add(
        self, flow: Flow, owner: Owner, log_duplicate: bool = True, as_info: AddrSetInfo | None = None
    ) -> DesiredFlow | None:
        """Add `flow` owned by `owner`; an existing same-key flow of the same
        owner makes this a duplicate, which is dropped (returns None).
        `as_info` records the address-set IP the flow was made for (see
        `remove_for_as_ip`)."""
        # Hot path: the index, owner and tracking updates are inlined.
        h = flow.key_hash
        by_key = self.by_key
        cur = by_key.get(h)
        if cur is not None:
            for c in ((cur,) if type(cur) is DesiredFlow else cur):  # type: ignore[union-attr]
                if owner in c.owners and c.flow.same_key(flow):
                    if log_duplicate:
                        log.debug("dropping duplicate flow", flow=flow)
                    return None
        d = _new_desired(DesiredFlow)      # DesiredFlow(flow), inlined
        d.flow = flow
        d.installed = None
        d.deleted = False
        d.as_refs = None
        actions = flow.actions
        if not actions:
            d.rank = RANK_DROP
        else:
            d.rank = RANK_ALLOW
            for a in actions:
                t = type(a)
                if t is _Conjunction or t.__name__ == "Conjunction":
                    d.rank = RANK_CONJ
                    break
        if cur is None:
            by_key[h] = d
        elif type(cur) is DesiredFlow:
            by_key[h] = [cur, d]
        else:
            cur.append(d)  # type: ignore[union-attr]
        self.n_flows += 1
        d.owners = (owner,)
        owned = self.by_owner.get(owner)
        if owned is None:
            self.by_owner[owner] = {d: None}
        else:
            owned[d] = None
        if as_info is not None:
            self._as_link(d, owner, as_info)
        if self.change_tracked:
            self.tracked[d] = None
        if self.fresh is not None:
            self.fresh.append(d)
        return d

    def add_or_append(self, flow: Flow, owner: Owner, as_info: AddrSetInfo | None = None) -> DesiredFlow:
        """Add `flow`, or append its (conjunction) actions to an existing
        conjunctive flow with the same key, which then gains `owner` (a
        shared flow is no longer tracked by address-set IP)."""
        existing = self.lookup(flow, lambda c: c.rank == RANK_CONJ)
        if existing is None:
            d = DesiredFlow(flow)
            self._insert(d)
            self._link_owner(d, owner)
            if as_info is not None:
                self._as_link(d, owner, as_info)
            if self.fresh is not None:
                self.fresh.append(d)
        else:
            d = existing
            d.flow = d.flow.with_actions(d.flow.actions + flow.actions)
            d.rank = flow_rank(d.flow.actions)
            self._as_unlink_all(d)
            self._link_owner(d, owner)
        self._track_add_or_modify(d)
        return d

    # ---------------------------------------------------- address sets
    def _as_link(self, d: DesiredFlow, owner: Owner, info: AddrSetInfo) -> None:
        by_ip = self.as_index.setdefault(owner, {}).setdefault(info.name, {})
        by_ip.setdefault((info.ip, info.mask), []).append(d)
        if d.as_refs is None:
            d.as_refs = []
        d.as_refs.append((owner, info))

    def _as_unlink_all(self, d: DesiredFlow) -> None:
        refs = d.as_refs
        if not refs:
            return
        d.as_refs = None
        for owner, info in refs:
            by_ip = self.as_index.get(owner, {}).get(info.name)
            if by_ip is None:
                continue
            lst = by_ip.get((info.ip, info.mask))
            if lst is not None and d in lst:
                lst.remove(d)

    def remove_for_as_ip(self, owner: Owner, info: AddrSetInfo, expected_count: int) -> bool:
        """Remove exactly the flows `owner` made for one IP of an address set.

        Returns False when that cannot be done precisely (nothing tracked for
        the set or the IP, or a count different from `expected_count`); the
        caller then re-processes the owner."""
        if owner not in self.by_owner:
            return True
        by_ip = self.as_index.get(owner, {}).get(info.name)
        if by_ip is None:
            return False
        flows = by_ip.pop((info.ip, info.mask), None)
        if flows is None:
            return False
        count = 0
        owned = self.by_owner.get(owner)
        for d in flows:
            d.as_refs = None
            if d.owners != (owner,):  # pragma: no cover - shared flows are untracked
                continue
            d.owners = ()
            if owned is not None:
                owned.pop(d, None)
            self._unindex(d)
            self._track_or_forget_deleted(d)
            count += 1
        return count == expected_count

    def remove(self, owner: Owner) -> None:
        """Remove the flows of `owner` (flows shared with others stay)."""
        self._remove_owner(owner, None)
        for t in self.extend_tables:
            t.remove_desired(owner)

    def flood_remove(self, owners: set[Owner]) -> set[Owner]:
        """Remove the flows of `owners` and, transitively, of every owner that
        shares a flow with one of them.  `owners` is extended in place with
        the owners removed this way (so the caller can re-process them)."""
        for owner in list(owners):
            if owner in self.by_owner:
                self._remove_owner(owner, owners)
        for owner in owners:
            for t in self.extend_tables:
                t.remove_desired(owner)
        return owners

    def _remove_owner(self, owner: Owner, flood: set[Owner] | None) -> None:
        flows = self.by_owner.pop(owner, None)
        if flows is None:
            return
        self.as_index.pop(owner, None)
        shared: list[DesiredFlow] = []
        for d in flows:
            d.as_refs = None
            d.owners = tuple(o for o in d.owners if o != owner)
            if not d.owners:
                self._unindex(d)
                self._track_or_forget_deleted(d)
            elif flood is not None:
                shared.append(d)
        if not shared:
            return
        # Detach shared flows from their other owners before recursing.
        for d in shared:
            for o in d.owners:
                of = self.by_owner.get(o)
                if of is not None:
                    of.pop(d, None)
        assert flood is not None
        for d in shared:
            for o in d.owners:
                if o not in flood:
                    flood.add(o)
                    self._remove_owner(o, flood)
            d.owners = ()
            self._unindex(d)
            self._track_or_forget_deleted(d)

    def untrack(self) -> None:
        """Stop change tracking, settling pending tracked deletions; the next
        put compares the whole table."""
        self.change_tracked = False
        self.fresh = None
        for d in self.tracked:
            if d.deleted and d.installed is not None:
                d.installed.unlink(d)
        self.tracked = {}

    def clear(self) -> None:
        """Remove every flow (a recompute follows).  Turns tracking off."""
        self.untrack()
        for d in self:
            if d.installed is not None:
                d.installed.unlink(d)
        self.by_key = {}
        self.by_owner = {}
        self.as_index = {}
        self.n_flows = 0

    def owners_of(self, flow: Flow) -> list[Owner]:
        d = self.lookup(flow)
        return list(d.owners) if d else []
