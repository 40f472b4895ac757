"""Conntrack zone allocation, persistence and the pending-zone state machine.

Design note
-----------
Zone users are the local lports (VIF, localport, localnet, l2gateway...) and,
for every local datapath, ``<dp-uuid>_dnat`` and ``<dp-uuid>_snat``.  Zone 0
is reserved; other zones are allocated lowest-free-first inside the
``ct-zone-range`` knob (default 1-65535).  ``Datapath_Binding
external_ids:snat-ct-zone`` requests take precedence and steal the zone from
an auto-assigned user.  Assignments survive restarts through br-int
``external_ids:ct-zone-<user>=<zone>`` (restored before any allocation).

Every assignment or removal goes through one pending entry per user::

    OF_QUEUED --(ofctrl sends NXT_CT_FLUSH_ZONE + barrier)--> OF_SENT
    OF_SENT   --(barrier reply with that xid)---------------> DB_QUEUED
    DB_QUEUED --(commit(): per-key setkey/delkey on br-int)--> DB_SENT
    DB_SENT   --(OVS transaction committed)-----------------> (dropped)

An OpenFlow reconnect sends OF_SENT entries back to OF_QUEUED; a failed OVS
commit leaves DB_SENT entries to be written again.  ``commit`` writes one
key per entry and only when br-int does not already hold that value, so an
idle agent never touches br-int.
"""

from __future__ import annotations

import enum
import uuid as uuidlib
from typing import Any, Iterable, Mapping

import structlog

from controller.vlog import RateLimiter

log = structlog.get_logger("ct_zones")
_rl_exhausted = RateLimiter(per_minute=60, burst=1)

MAX_CT_ZONES = 65535
KEY_PREFIX = "ct-zone-"


class PendingState(enum.Enum):
    OF_QUEUED = "of_queued"
    OF_SENT = "of_sent"
    DB_QUEUED = "db_queued"
    DB_SENT = "db_sent"


class PendingEntry:
    __slots__ = ("zone", "add", "state", "of_xid")

    def __init__(self, zone: int, add: bool, state: PendingState) -> None:
        self.zone = zone
        self.add = add
        self.state = state
        self.of_xid: int | None = None

    def __repr__(self) -> str:
        return f"Pending({self.zone}, add={self.add}, {self.state.value})"


def dnat_key(dp_uuid: uuidlib.UUID) -> str:
    return f"{dp_uuid}_dnat"


def snat_key(dp_uuid: uuidlib.UUID) -> str:
    return f"{dp_uuid}_snat"


def requested_snat_zone(dp_row: Any) -> int:
    v = dp_row.external_ids.get("snat-ct-zone")
    if v is None:
        return -1
    try:
        z = int(v)
    except ValueError:
        return -1
    return z if 0 <= z <= MAX_CT_ZONES else -1


class CtZones:
    """The ``ct_zones`` engine node data."""

    def __init__(self, zone_range: tuple[int, int] = (1, MAX_CT_ZONES)) -> None:
        self.current: dict[str, int] = {}
        self.used: set[int] = {0}
        self.pending: dict[str, PendingEntry] = {}
        self.recomputed = False
        self.zone_range = zone_range
        # users seen since start, never kept by ``keep_absent`` (None once
        # the start-up grace period is over: see drop_absent)
        self.seen: set[str] | None = set()

    # -- helpers ------------------------------------------------------
    def _queue(self, name: str, zone: int, add: bool,
               state: PendingState = PendingState.OF_QUEUED) -> None:
        log.debug(f"{'assigning' if add else 'removing'} ct zone {zone} for '{name}'")
        self.pending[name] = PendingEntry(zone, add, state)

    def _alloc(self, name: str, scan: list[int]) -> bool:
        lo, hi = self.zone_range
        z = max(scan[0], lo)
        while z <= hi and z in self.used:
            z += 1
        if z > hi:
            # wrap once from the start of the range
            z = lo
            while z <= hi and z in self.used:
                z += 1
            if z > hi:
                log.warn_rl(_rl_exhausted, "exhausted all ct zones")
                return False
        scan[0] = z + 1
        self.used.add(z)
        self.current[name] = z
        self._queue(name, z, True)
        return True

    def _free(self, name: str) -> bool:
        z = self.current.pop(name, None)
        if z is None:
            return False
        self._queue(name, z, False)
        self.used.discard(z)
        return True

    # -- restore / recompute -------------------------------------------
    def restore(self, br_int_external_ids: Mapping[str, str] | None) -> None:
        """Load zones from pending additions, then from br-int external_ids."""
        for name, pe in self.pending.items():
            if pe.add:
                self.current[name] = pe.zone
        if br_int_external_ids is not None:
            for key, value in br_int_external_ids.items():
                if not key.startswith(KEY_PREFIX):
                    continue
                user = key[len(KEY_PREFIX):]
                if not user or user in self.pending:
                    continue
                try:
                    zone = int(value, 10)
                except ValueError:
                    continue
                if 0 <= zone <= MAX_CT_ZONES:
                    self.current[user] = zone
        self.used = {0} | set(self.current.values())

    def recompute(self, local_lports: Iterable[str], local_dps: Iterable[Any],
                  br_int_external_ids: Mapping[str, str] | None,
                  keep_absent: bool = False) -> None:
        """Full run of the node: restore, drop stale users, honour requests, allocate.

        ``keep_absent`` (start-up grace period: the SB contents may still be
        arriving) keeps the zones of users not seen yet instead of freeing
        them, so a restart never renumbers zones of ports that are merely
        late.  A user seen in an earlier run and gone now (a released port,
        a datapath no longer local) is freed as usual."""
        self.restore(br_int_external_ids)
        users: set[str] = set(local_lports)
        req_snat: dict[str, int] = {}
        for dp in local_dps:
            users.add(dnat_key(dp.uuid))
            sk = snat_key(dp.uuid)
            users.add(sk)
            z = requested_snat_zone(dp)
            if z >= 0:
                req_snat[sk] = z
        seen = self.seen if keep_absent else None
        for name in [n for n in self.current if n not in users
                     and (seen is None or n in seen)]:
            self._free(name)
        if seen is not None:
            seen |= users
        unrequested = {z: n for n, z in self.current.items() if n not in req_snat}
        for name, zone in sorted(req_snat.items()):
            other = unrequested.pop(zone, None)
            if other is not None and other != name:
                # The requested zone was auto-assigned to someone else: take it.
                del self.current[other]
            cur = self.current.get(name)
            if cur != zone:
                if cur is not None and cur not in (v for k, v in self.current.items()
                                                   if k != name):
                    self.used.discard(cur)
                self.current[name] = zone
                self._queue(name, zone, True)
            self.used.add(zone)
        scan = [1]
        for name in sorted(users):
            if name not in self.current:
                self._alloc(name, scan)
        self.recomputed = True

    def drop_absent(self, local_lports: Iterable[str], local_dps: Iterable[Any]) -> bool:
        """End of the start-up grace period: free the zones kept for users
        that never showed up (what the next full run would do; no flow uses
        them).  True if any zone was freed (its flush and DB removal are
        queued like any other)."""
        users: set[str] = set(local_lports)
        for dp in local_dps:
            users.add(dnat_key(dp.uuid))
            users.add(snat_key(dp.uuid))
        self.seen = None
        freed = False
        for name in [n for n in self.current if n not in users]:
            freed = self._free(name) or freed
        return freed

    # -- incremental -------------------------------------------------
    def lport_added(self, name: str) -> bool:
        if self.seen is not None:
            self.seen.add(name)
        if name in self.current:
            return False
        return self._alloc(name, [1])

    def users_added(self, names: Iterable[str], new_dps: Iterable[Any]) -> bool | None:
        """New users in one batch, as a full run would treat them: first the
        SNAT zones requested by datapaths that just became local, then the
        lowest free zone to each user without one, in name order.  None when
        only a full run can do it (a requested zone belongs to another user).
        True if a zone was assigned."""
        users = set(names)
        changed = False
        for dp in new_dps:
            dk, sk = dnat_key(dp.uuid), snat_key(dp.uuid)
            users.update((dk, sk))
            req = requested_snat_zone(dp)
            if req < 0 or self.current.get(sk) == req:
                continue
            if req in self.used:
                return None
            old = self.current.get(sk)
            if old is not None and old not in (v for k, v in self.current.items()
                                               if k != sk):
                self.used.discard(old)
            self.current[sk] = req
            self.used.add(req)
            self._queue(sk, req, True)
            changed = True
        if self.seen is not None:
            self.seen |= users
        scan = [1]
        for name in sorted(users):
            if name not in self.current:
                changed = self._alloc(name, scan) or changed
        return changed

    def lport_removed(self, name: str) -> bool:
        return self._free(name)

    # -- ofctrl side ---------------------------------------------------
    def take_queued_flushes(self) -> list[int]:
        """Zones to flush in this OpenFlow round (OF_QUEUED -> OF_SENT)."""
        zones = []
        for pe in self.pending.values():
            if pe.state is PendingState.OF_QUEUED:
                zones.append(pe.zone)
                pe.state = PendingState.OF_SENT
                pe.of_xid = None
        return zones

    def has_queued_flushes(self) -> bool:
        return any(pe.state is PendingState.OF_QUEUED for pe in self.pending.values())

    def assign_barrier(self, xid: int) -> None:
        for pe in self.pending.values():
            if pe.state is PendingState.OF_SENT and pe.of_xid is None:
                pe.of_xid = xid

    def barrier_acked(self, xid: int) -> None:
        for pe in self.pending.values():
            if pe.state is PendingState.OF_SENT and pe.of_xid == xid:
                pe.state = PendingState.DB_QUEUED

    def openflow_reconnected(self) -> None:
        for pe in self.pending.values():
            if pe.state is PendingState.OF_SENT:
                pe.state = PendingState.OF_QUEUED
                pe.of_xid = None

    # -- OVS DB side ---------------------------------------------------
    def commit(self, br_int: Any) -> int:
        """Write DB_QUEUED/DB_SENT entries to br-int, one key each.

        Returns the number of keys actually written.
        """
        ext: Mapping[str, str] = br_int.external_ids
        writes = 0
        for name, pe in self.pending.items():
            if pe.state not in (PendingState.DB_QUEUED, PendingState.DB_SENT):
                continue
            key = KEY_PREFIX + name
            if pe.add:
                value = str(pe.zone)
                if ext.get(key) != value:
                    br_int.setkey("external_ids", key, value)
                    writes += 1
            elif key in ext:
                br_int.delkey("external_ids", key)
                writes += 1
            pe.state = PendingState.DB_SENT
        return writes

    def db_committed(self) -> None:
        for name in [n for n, pe in self.pending.items() if pe.state is PendingState.DB_SENT]:
            del self.pending[name]

    def list_text(self) -> str:
        """``ct-zone-list`` output: ``<name> <zone>`` per line."""
        return "".join(f"{n} {z}\n" for n, z in sorted(self.current.items()))
