"""Extend tables (group and meter ids by name) and OpenFlow group specs.

Design (after OVN lib/extend-table.c):

* An entry is identified by its *name* (for groups: the group's text spec,
  for meters: the meter name or a `__string: ...` description) and gets the
  lowest free id starting at 1.
* `desired` holds what the current flows reference (each entry with the set
  of owners, i.e. SB rows, that use it); `existing` what was installed.  A
  desired entry whose name is already installed reuses the installed id and
  the two are *peers*.  An id is released only when neither side holds it.
* After a put, `sync()` copies every desired entry without a peer into
  `existing`; existing entries without a desired peer are deleted from the
  switch by the put and dropped with `remove_existing()`.

Group contents travel as structured `GroupSpec` data given to `assign_id`
(this code base has no OVS group-string parser); `GroupSpec.to_string()`
prints the name the C agent would use.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Hashable, Iterator, Sequence

import structlog

from ofctrl.flow import encode_actions_bytes
from ofctrl.messages import GROUP_TYPES, GroupBucket

log = structlog.get_logger("ofctrl.groups")

MAX_EXT_TABLE_ID = 65535
EXT_TABLE_ID_INVALID = 0


class ExtendInfo:
    __slots__ = ("name", "table_id", "peer", "owners", "spec")

    def __init__(self, name: str, table_id: int, peer: "ExtendInfo | None", spec: Any = None) -> None:
        self.name = name
        self.table_id = table_id
        self.peer = peer
        if peer is not None:
            peer.peer = self
        self.owners: set[Hashable] = set()
        self.spec = spec

    def __repr__(self) -> str:
        return "ExtendInfo(%r, id=%d)" % (self.name, self.table_id)


class ExtendTable:
    """Ids by name, desired vs existing; see the module docstring."""

    def __init__(self, max_id: int = MAX_EXT_TABLE_ID) -> None:
        self.max_id = max_id
        self.desired: dict[str, ExtendInfo] = {}
        self.existing: dict[str, ExtendInfo] = {}
        self.by_owner: dict[Hashable, set[str]] = {}
        self._used: set[int] = set()
        self._free: list[int] = []  # released ids below _next (lazy heap)
        self._next = 1

    # ------------------------------------------------------------ ids
    def _alloc_id(self) -> int | None:
        while self._free:
            i = heapq.heappop(self._free)
            if i not in self._used:
                self._used.add(i)
                return i
        if self._next > self.max_id:
            return None
        i = self._next
        self._next += 1
        self._used.add(i)
        return i

    def _release_id(self, i: int) -> None:
        if i in self._used:
            self._used.discard(i)
            heapq.heappush(self._free, i)

    # ------------------------------------------------------------ desired
    def assign_id(self, name: str, owner: Hashable, spec: Any = None) -> int:
        """Id for `name`, referenced by `owner`; EXT_TABLE_ID_INVALID (0)
        when ids run out."""
        e = self.desired.get(name)
        if e is None:
            ex = self.existing.get(name)
            if ex is not None and ex.peer is None:
                table_id = ex.table_id
            else:
                ex = None
                new_id = self._alloc_id()
                if new_id is None:
                    log.error("out of table ids", name=name)
                    return EXT_TABLE_ID_INVALID
                table_id = new_id
            e = ExtendInfo(name, table_id, ex, spec)
            self.desired[name] = e
        elif spec is not None and e.spec is None:
            e.spec = spec
        e.owners.add(owner)
        self.by_owner.setdefault(owner, set()).add(name)
        return e.table_id

    def desired_lookup(self, name: str) -> ExtendInfo | None:
        return self.desired.get(name)

    def desired_by_id(self) -> dict[int, ExtendInfo]:
        return {e.table_id: e for e in self.desired.values()}

    def remove_desired(self, owner: Hashable) -> None:
        """Forget `owner`'s references; entries nobody references go away."""
        names = self.by_owner.pop(owner, None)
        if not names:
            return
        for name in names:
            e = self.desired.get(name)
            if e is None:
                continue
            e.owners.discard(owner)
            if not e.owners:
                self._drop_desired(e)

    def _drop_desired(self, e: ExtendInfo) -> None:
        del self.desired[e.name]
        if e.peer is not None:
            e.peer.peer = None
        else:
            self._release_id(e.table_id)

    def clear_desired(self) -> None:
        for e in list(self.desired.values()):
            self._drop_desired(e)
        self.by_owner = {}

    # ------------------------------------------------------------ existing
    def uninstalled(self) -> Iterator[ExtendInfo]:
        """Desired entries not installed yet."""
        return (e for e in list(self.desired.values()) if e.peer is None)

    def unneeded(self) -> Iterator[ExtendInfo]:
        """Installed entries no longer desired."""
        return (e for e in list(self.existing.values()) if e.peer is None)

    def remove_existing(self, e: "ExtendInfo | str") -> None:
        if isinstance(e, str):
            found = self.existing.get(e)
            if found is None:
                return
            e = found
        if self.existing.get(e.name) is e:
            del self.existing[e.name]
        if e.peer is not None:
            e.peer.peer = None
        else:
            self._release_id(e.table_id)

    def clear_existing(self) -> None:
        """The switch was cleared: nothing is installed any more."""
        for e in list(self.existing.values()):
            self.remove_existing(e)

    def sync(self) -> None:
        """Everything desired is now installed."""
        for e in self.desired.values():
            if e.peer is None:
                ex = ExtendInfo(e.name, e.table_id, e, e.spec)
                self.existing[e.name] = ex


# ------------------------------------------------------------------ groups
@dataclass(frozen=True, slots=True)
class Bucket:
    bucket_id: int
    actions: tuple[Any, ...]
    weight: int | None = None


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """An OpenFlow group, as OVN builds them (`type=select,...,bucket=...`)."""

    type: str  # "select" | "all" | "indirect" | "ff"
    buckets: tuple[Bucket, ...]
    selection_method: str | None = None
    selection_method_param: int = 0
    fields: bytes = b""  # encoded OXM headers of hash fields
    fields_text: str = ""  # e.g. "ip_src,ip_dst" for to_string()

    def type_code(self) -> int:
        return GROUP_TYPES[self.type]

    def wire_buckets(self) -> list[GroupBucket]:
        return [GroupBucket(b.bucket_id, encode_actions_bytes(b.actions), b.weight) for b in self.buckets]

    def to_string(self) -> str:
        parts = ["type=" + self.type]
        if self.selection_method:
            parts.append("selection_method=" + self.selection_method)
            if self.fields_text:
                parts.append("fields(" + self.fields_text + ")")
        for b in self.buckets:
            s = "bucket=bucket_id=%d" % b.bucket_id
            if b.weight is not None:
                s += ",weight:%d" % b.weight
            acts = ",".join(a.format() for a in b.actions)
            s += ",actions=" + (acts or "drop")
            parts.append(s)
        return ",".join(parts)


def hash_fields(items: Sequence[tuple[str, int | None]]) -> bytes:
    """Encoded `fields(...)` of a hash selection method: one OXM entry per
    field whose value is the mask applied before hashing (None: all ones)."""
    from ofctrl.fields import field
    from ofctrl.ofpacts.base import oxm_header

    out = b""
    for name, mask in items:
        f = field(name)
        n_bytes = (f.n_bits + 7) // 8
        value = (1 << f.n_bits) - 1 if mask is None else mask
        out += oxm_header(f) + value.to_bytes(n_bytes, "big")
    return out


def _parse_mask(text: str) -> int:
    import ipaddress

    if text.startswith("0x") or text.isdigit():
        return int(text, 0)
    if text.count(":") == 5 and all(len(p) == 2 for p in text.split(":")):
        return int(text.replace(":", ""), 16)
    return int(ipaddress.ip_address(text))


def parse_group_spec(text: str) -> GroupSpec:
    """A GroupSpec from ovs-ofctl group syntax (what the C agent uses as the
    group's name): `type=select,selection_method=dp_hash,fields(ip_src),
    bucket=bucket_id=0,weight:100,actions=...,bucket=...`.  ValueError if
    the text cannot be parsed."""
    from ofctrl.fields import lookup
    from ofctrl.ofpacts.parse import parse_actions, split_top

    gtype = "all"
    method: str | None = None
    param = 0
    field_items: list[tuple[str, int | None]] = []
    fields_text = ""
    buckets: list[Bucket] = []
    cur: list[str] | None = None
    bucket_texts: list[list[str]] = []
    for item in split_top(text):
        item = item.strip()
        if item.startswith("bucket="):
            cur = [item[len("bucket="):]]
            bucket_texts.append(cur)
        elif cur is not None:
            cur.append(item)
        elif item.startswith("type="):
            gtype = item[5:]
        elif item.startswith("selection_method="):
            method = item[len("selection_method="):]
        elif item.startswith("selection_method_param="):
            param = int(item[len("selection_method_param="):], 0)
        elif item.startswith("fields(") and item.endswith(")") or item.startswith("fields="):
            inner = item[7:-1] if item.startswith("fields(") else item[7:]
            fields_text = inner
            for fld in split_top(inner):
                name, _, mask = fld.strip().partition("=")
                field_items.append((lookup(name).name, _parse_mask(mask) if mask else None))
        elif item.startswith("group_id="):
            continue
        else:
            raise ValueError("unknown group spec item %r" % item)
    if gtype not in GROUP_TYPES:
        raise ValueError("unknown group type %r" % gtype)
    for n, parts in enumerate(bucket_texts):
        bucket_id = n
        weight: int | None = None
        acts_text: str | None = None
        for i, part in enumerate(parts):
            if part.startswith("actions="):
                acts_text = ",".join([part[len("actions="):]] + parts[i + 1:])
                break
            key, sep, value = part.replace(":", "=", 1).partition("=")
            if key == "bucket_id" and sep:
                bucket_id = int(value, 0)
            elif key == "weight" and sep:
                weight = int(value, 0)
            elif key in ("watch_port", "watch_group"):
                raise ValueError("%s is not supported" % key)
            else:
                acts_text = ",".join(parts[i:])
                break
        acts = tuple(parse_actions(acts_text)) if acts_text else ()
        buckets.append(Bucket(bucket_id, acts, weight))
    return GroupSpec(gtype, tuple(buckets), method, param, hash_fields(field_items) if field_items else b"",
                     fields_text)


class GroupTable(ExtendTable):
    def assign_group(self, spec: GroupSpec, owner: Hashable, name: str | None = None) -> int:
        """Id of the group `spec` (named by its text unless `name` given)."""
        return self.assign_id(name if name is not None else spec.to_string(), owner, spec)

    def specs(self) -> Sequence[tuple[int, GroupSpec | None]]:
        return [(e.table_id, e.spec) for e in self.desired.values()]
