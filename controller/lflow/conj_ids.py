"""Conjunction-id allocation per (logical flow, datapath) (OVN 23.03 controller/lflow-conj-ids.c).

Public API
----------
``ConjIds(test_mode=False)``:

* ``alloc(lflow_uuid, dp_uuid, n_conjs) -> int``: a contiguous range of
  ``n_conjs`` free ids (0 never used); returns the first id, 0 if
  ``n_conjs`` is 0 or no range is free.  Any range the pair already held is
  released first.
* ``alloc_specified(lflow_uuid, dp_uuid, start, n_conjs) -> bool``: exactly
  ``[start, start + n_conjs)`` or nothing.
* ``find(lflow_uuid, dp_uuid) -> int`` (0 if none), ``free(lflow_uuid)``
  (every datapath of that flow), ``clear()``, ``dump() -> str`` (as
  ``lflow_conj_ids_dump()``; entries marked ``(*)`` did not get their
  preferred id).

Design note: the preferred first id is a hash of the two UUIDs (OVS
``hash_int(uuid_hash(lflow), uuid_hash(dp))``, reproduced bit for bit so
ids match the C agent); in test mode it is the first 32 bits of the flow
UUID.  On conflict the allocator probes upwards, skipping 0 and restarting
past any taken id, until a free contiguous range is found.  UUIDs are
``uuid.UUID`` objects or their string forms.  ``hash_int`` is
``physical.ovshash.hash_int`` (re-exported here).
"""

from __future__ import annotations

import uuid as uuidlib

from controller.diag.coverage import COVERAGE
from physical.ovshash import hash_int

__all__ = ["ConjIds", "hash_int", "uuid_hash"]

UuidLike = "uuidlib.UUID | str"
_M32 = 0xFFFFFFFF
_ZERO_UUID = uuidlib.UUID(int=0)


def uuid_hash(u: uuidlib.UUID) -> int:
    """OVS uuid_hash(): the first 32 bits."""
    return u.int >> 96


def _as_uuid(u: uuidlib.UUID | str) -> uuidlib.UUID:
    return u if isinstance(u, uuidlib.UUID) else uuidlib.UUID(u)


class _Entry:
    __slots__ = ("lflow", "dp", "start", "n", "hash")

    def __init__(self, lflow: uuidlib.UUID, dp: uuidlib.UUID, start: int, n: int,
                 hash_: int) -> None:
        self.lflow = lflow
        self.dp = dp
        self.start = start
        self.n = n
        self.hash = hash_


class ConjIds:
    """Allocator state (see module docstring)."""

    __slots__ = ("test_mode", "_allocated", "_entries", "_by_lflow")

    def __init__(self, test_mode: bool = False) -> None:
        self.test_mode = test_mode
        self._allocated: set[int] = set()
        self._entries: dict[tuple[uuidlib.UUID, uuidlib.UUID], _Entry] = {}
        self._by_lflow: dict[uuidlib.UUID, list[_Entry]] = {}

    def _hash(self, lflow: uuidlib.UUID, dp: uuidlib.UUID) -> int:
        if self.test_mode:
            return uuid_hash(lflow)
        return hash_int(uuid_hash(lflow), uuid_hash(dp))

    def _free_pair(self, lflow: uuidlib.UUID, dp: uuidlib.UUID) -> None:
        e = self._entries.get((lflow, dp))
        if e is not None:
            self._release(e)

    def _release(self, e: _Entry) -> None:
        COVERAGE.inc("lflow_conj_free")
        for cid in range(e.start, e.start + e.n):
            self._allocated.discard(cid)
        del self._entries[(e.lflow, e.dp)]
        lst = self._by_lflow.get(e.lflow)
        if lst is not None:
            lst.remove(e)

    def _insert(self, lflow: uuidlib.UUID, dp: uuidlib.UUID, start: int, n: int) -> None:
        self._allocated.update(range(start, start + n))
        e = _Entry(lflow, dp, start, n, self._hash(lflow, dp))
        self._entries[(lflow, dp)] = e
        self._by_lflow.setdefault(lflow, []).insert(0, e)

    def alloc(self, lflow_uuid: uuidlib.UUID | str, dp_uuid: uuidlib.UUID | str | None,
              n_conjs: int) -> int:
        if not n_conjs:
            return 0
        lflow = _as_uuid(lflow_uuid)
        dp = _as_uuid(dp_uuid) if dp_uuid is not None else _ZERO_UUID
        self._free_pair(lflow, dp)
        allocated = self._allocated
        start = self._hash(lflow, dp) or 1
        initial_id = start
        initial = True
        while True:
            if start == 0:
                start = 1
            available = True
            cid = start
            for _ in range(n_conjs):
                if cid > _M32:
                    available = False
                    cid = _M32   # next start wraps to 0, then 1
                    break
                if not initial and cid == initial_id:
                    return 0
                initial = False
                if cid in allocated:
                    COVERAGE.inc("lflow_conj_conflict")
                    available = False
                    break
                cid += 1
            if available:
                break
            start = (cid + 1) & _M32
        self._insert(lflow, dp, start, n_conjs)
        COVERAGE.inc("lflow_conj_alloc")
        return start

    def alloc_specified(self, lflow_uuid: uuidlib.UUID | str,
                        dp_uuid: uuidlib.UUID | str | None, start: int, n_conjs: int) -> bool:
        if not n_conjs:
            return False
        lflow = _as_uuid(lflow_uuid)
        dp = _as_uuid(dp_uuid) if dp_uuid is not None else _ZERO_UUID
        self._free_pair(lflow, dp)
        for cid in range(start, start + n_conjs):
            if cid == 0 or cid > _M32 or cid in self._allocated:
                return False
        self._insert(lflow, dp, start, n_conjs)
        COVERAGE.inc("lflow_conj_alloc_specified")
        return True

    def find(self, lflow_uuid: uuidlib.UUID | str, dp_uuid: uuidlib.UUID | str | None) -> int:
        dp = _as_uuid(dp_uuid) if dp_uuid is not None else _ZERO_UUID
        e = self._entries.get((_as_uuid(lflow_uuid), dp))
        return e.start if e is not None else 0

    def free(self, lflow_uuid: uuidlib.UUID | str) -> None:
        lflow = _as_uuid(lflow_uuid)
        for e in list(self._by_lflow.pop(lflow, [])):
            for cid in range(e.start, e.start + e.n):
                self._allocated.discard(cid)
            del self._entries[(e.lflow, e.dp)]

    def clear(self) -> None:
        self._allocated.clear()
        self._entries.clear()
        self._by_lflow.clear()

    def __len__(self) -> int:
        return len(self._allocated)

    def dump(self) -> str:
        lines = ["Conjunction IDs allocations:"]
        count = 0
        for e in self._entries.values():
            mark = " (*)" if e.start != e.hash else ""
            lines.append(f"lflow: {e.lflow}, dp: {e.dp}, start: {e.start}, n: {e.n}{mark}")
            count += e.n
        lines.append("---")
        lines.append(f"Total {count} IDs used.")
        if count != len(self._allocated):
            lines.append(f"WARNING: mismatch - {len(self._allocated)} allocated")
        return "\n".join(lines) + "\n"
