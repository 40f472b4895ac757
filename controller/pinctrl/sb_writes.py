"""Main-loop side of pinctrl: pending SB work, its application, the local view.

Design note
-----------
The service thread turns packet-ins into intents; :class:`PendingWork` holds
them between the two threads under one lock, keyed and capped as 23.03.1
keeps its maps (pinctrl-anatomy §1.3): MAC bindings by (dp, port, ip), last
MAC wins, at most 1000 keys (``pinctrl_drop_put_mac_binding``), each with a
commit time (0 ms for unicast-destined learns, 1-50 ms otherwise); FDB
entries by (dp, mac), 1000, silently capped; virtual-port claims by (dp,
vport), 1000 (``pinctrl_drop_put_vport_binding``); controller events by
their info, 1000 (``pinctrl_drop_controller_event``); activations as a
de-duplicated list.  So a VM flooding ARP replies for thousands of IPs
queues at most 1000 learns, and the queue cannot grow while the main loop
is busy.  One transaction writes at most ``MAX_WRITES_PER_TXN`` (100)
MAC_Binding and 100 FDB rows, the rest waits for the next one (C writes all
ready ones at once; the Python IDL costs 0.1-0.35 ms per row written, so
1000 rows held an iteration for up to 405 ms in a 3000-learn storm,
``benchmarks/pinctrl_storm.py``).

:class:`SbWriter` applies one batch in the iteration's SB transaction
(never without one: then the work waits, except events older than 10 s
which are dropped as C does).  Lookups go through its own indexes of
MAC_Binding (logical_port, ip) and FDB (mac, dp_key), maintained from the
tracked changes each iteration; rows inserted by this transaction are
remembered so a repeated key updates instead of inserting twice.  Applying
the same batch twice changes nothing the second time (MAC and timestamp are
rewritten only when the MAC differs; the IDL drops no-op writes).

:class:`SnapshotPublisher` keeps the :class:`~controller.pinctrl.state.LocalSnapshot`
the service reads: PortInfo for every Port_Binding of a local datapath,
updated from the tracked Port_Binding changes (full rebuild when the set of
local datapaths or the chassis changes) and published by swapping one
reference.
"""

from __future__ import annotations

import threading
import time
import uuid as uuidlib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping

from controller.diag.coverage import COVERAGE, Coverage
from controller.ovsdb.indexes import UniqueIndex
from controller.pinctrl.dns_cache import EMPTY_DNS_CACHE, DnsCache, dns_cache_from_sb
from controller.pinctrl.outcome import (
    ActivationIntent,
    EventIntent,
    FdbIntent,
    MacBindingIntent,
    SbIntent,
    VportIntent,
)
from controller.pinctrl.state import LocalSnapshot, PortInfo
from controller.vlog import RateLimiter, get_logger
from physical.inputs import opt_first

__all__ = ["PendingWork", "Batch", "SbWriter", "SnapshotPublisher", "MAX_PENDING",
           "EVENT_MAX_AGE_MS", "MAX_WRITES_PER_TXN"]

log = get_logger("pinctrl")
_rl_unknown = RateLimiter(per_minute=12, burst=1)

MAX_PENDING = 1000
# MAC bindings / FDB entries written per SB transaction (see the design note).
MAX_WRITES_PER_TXN = 100
EVENT_MAX_AGE_MS = 10_000


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass(slots=True)
class Batch:
    """Work taken out of :class:`PendingWork` for one SB transaction."""

    mac_bindings: list[tuple[int, int, str, str]] = field(default_factory=list)
    fdbs: list[tuple[int, str, int]] = field(default_factory=list)
    vports: list[tuple[int, int, int]] = field(default_factory=list)
    events: list[tuple[str, tuple[tuple[str, str], ...]]] = field(default_factory=list)
    activations: list[tuple[int, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.mac_bindings or self.fdbs or self.vports or self.events
                    or self.activations)


class PendingWork:
    """Thread-safe pending SB work (see module docstring)."""

    def __init__(self, coverage: Coverage = COVERAGE,
                 clock: Callable[[], int] = _now_ms) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._cov = coverage
        self._mac: dict[tuple[int, int, str], tuple[str, int]] = {}
        self._fdb: dict[tuple[int, str], int] = {}
        self._vport: dict[tuple[int, int], int] = {}
        self._events: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        self._activations: list[tuple[int, int]] = []
        # Activations recorded for the engine (ports unblocked before the SB
        # round trip); read by the physical flows, never cleared by a batch.
        self.activated: set[tuple[int, int]] = set()

    def add(self, intent: SbIntent) -> bool:
        """Queue one intent; False when a cap refused it."""
        now = self._clock()
        with self._lock:
            if isinstance(intent, MacBindingIntent):
                key = (intent.dp_key, intent.port_key, intent.ip)
                old = self._mac.get(key)
                if old is None:
                    if len(self._mac) >= MAX_PENDING:
                        self._cov.inc("pinctrl_drop_put_mac_binding")
                        return False
                    self._mac[key] = (intent.mac, now + intent.delay_ms)
                else:
                    self._mac[key] = (intent.mac, old[1])
            elif isinstance(intent, FdbIntent):
                fkey = (intent.dp_key, intent.mac)
                if fkey not in self._fdb and len(self._fdb) >= MAX_PENDING:
                    return False
                self._fdb[fkey] = intent.port_key
            elif isinstance(intent, VportIntent):
                vkey = (intent.dp_key, intent.vport_key)
                if vkey not in self._vport and len(self._vport) >= MAX_PENDING:
                    self._cov.inc("pinctrl_drop_put_vport_binding")
                    return False
                self._vport[vkey] = intent.parent_key
            elif isinstance(intent, EventIntent):
                ekey = (intent.event_type, intent.info)
                if ekey not in self._events:
                    if len(self._events) >= MAX_PENDING:
                        self._cov.inc("pinctrl_drop_controller_event")
                        return False
                    self._events[ekey] = now
                else:
                    return False          # already pending: no new work
            elif isinstance(intent, ActivationIntent):
                akey = (intent.dp_key, intent.port_key)
                if akey not in self._activations:
                    self._activations.append(akey)
                self.activated.add(akey)
            else:
                raise TypeError("not an SB intent: %r" % (intent,))
        return True

    def take(self, have_txn: bool) -> Batch:
        """Everything that may be written now (MAC bindings whose commit time
        came).  Without a transaction nothing is taken and stale events go."""
        now = self._clock()
        b = Batch()
        with self._lock:
            if not have_txn:
                for ek, ts in list(self._events.items()):
                    if now - ts > EVENT_MAX_AGE_MS:
                        del self._events[ek]
                return b
            for k, (mac, at) in list(self._mac.items()):
                if now >= at:
                    b.mac_bindings.append((k[0], k[1], k[2], mac))
                    del self._mac[k]
                    if len(b.mac_bindings) >= MAX_WRITES_PER_TXN:
                        break
            for fk in list(self._fdb)[:MAX_WRITES_PER_TXN]:
                b.fdbs.append((fk[0], fk[1], self._fdb.pop(fk)))
            b.vports = [(dp, vp, parent) for (dp, vp), parent in self._vport.items()]
            self._vport.clear()
            b.events = list(self._events)
            self._events.clear()
            b.activations = list(self._activations)
        return b

    def done_activation(self, key: tuple[int, int]) -> None:
        with self._lock:
            if key in self._activations:
                self._activations.remove(key)

    def next_commit_ms(self) -> int | None:
        """Earliest commit time of a pending MAC binding, or None."""
        with self._lock:
            return min((at for _, at in self._mac.values()), default=None)

    def has_immediate(self) -> bool:
        with self._lock:
            return bool(self._fdb or self._vport or self._events or self._activations)

    def __len__(self) -> int:
        with self._lock:
            return (len(self._mac) + len(self._fdb) + len(self._vport) + len(self._events)
                    + len(self._activations))


class SbWriter:
    """Applies batches in the SB transaction; keeps the lookups it needs."""

    def __init__(self) -> None:
        self.mb_index: UniqueIndex[tuple[str, str]] = UniqueIndex(
            lambda r: (r.logical_port, r.ip))
        self.fdb_index: UniqueIndex[tuple[str, int]] = UniqueIndex(
            lambda r: (r.mac, int(r.dp_key)))
        self._loaded = False
        self.event_seq_num = 0
        # MAC_Binding rows inserted into the current transaction, shared by
        # apply() and apply_local(): a put_arp learn and a GARP upsert of
        # the same (logical_port, ip) in one transaction must not insert twice.
        self._inserted: dict[tuple[str, str], Any] = {}
        self._inserted_txn: Any = None

    def _txn_inserted(self, txn: Any) -> dict[tuple[str, str], Any]:
        if txn is not self._inserted_txn:
            self._inserted, self._inserted_txn = {}, txn
        return self._inserted

    def track(self, tables: Mapping[str, Mapping[uuidlib.UUID, Any]], tracker: Any) -> None:
        """Follow this iteration's MAC_Binding/FDB changes (rebuild on reset)."""
        if not self._loaded or tracker.reset:
            for name, idx in (("MAC_Binding", self.mb_index), ("FDB", self.fdb_index)):
                idx.clear()
                for row in tables.get(name, {}).values():
                    idx.add(row)
            self._loaded = True
            return
        for name, uidx in (("MAC_Binding", self.mb_index), ("FDB", self.fdb_index)):
            tc = tracker.tables.get(name)
            if not tc:
                continue
            for u in tc.deleted:
                uidx.remove(u)
            for tr in tc.new_or_updated():
                uidx.remove(tr.row.uuid)
                uidx.add(tr.row)

    def apply(self, batch: Batch, txn: Any, tables: Mapping[str, Any], idx: Any,
              chassis: Any, can_timestamp: bool, done_activation: Callable[[tuple[int, int]], None],
              controller_events: Iterable[Any] = ()) -> int:
        """Write ``batch`` into ``txn``; returns the number of row writes queued."""
        n = 0
        inserted = self._txn_inserted(txn)

        def lport(dp_key: int, port_key: int) -> Any:
            dp = idx.dp_by_key.get(dp_key)
            return idx.pb_by_key.get((dp.uuid, port_key)) if dp is not None else None

        for dp_key, port_key, ip, mac in batch.mac_bindings:
            pb = lport(dp_key, port_key)
            if pb is None:
                log.warn_rl(_rl_unknown, "unknown logical port with datapath %d and port %d"
                            % (dp_key, port_key))
                continue
            key = (pb.logical_port, ip)
            row = inserted.get(key)
            new = row is not None
            if row is None:
                row = self.mb_index.get(key)
            if row is None:
                row = txn.insert(tables["MAC_Binding"])
                row.logical_port = pb.logical_port
                row.ip = ip
                row.datapath = pb.datapath
                inserted[key] = row
                new = True
                n += 1
            # (an inserted row's unset columns cannot be read back)
            if new or row.mac != mac:
                row.mac = mac
                if can_timestamp:
                    row.timestamp = int(time.time() * 1000)
                n += 1
        for dp_key, vport_key, parent_key in batch.vports:
            pb = lport(dp_key, vport_key)
            if pb is None:
                log.warn_rl(_rl_unknown, "unknown logical port with datapath %d and port %d"
                            % (dp_key, vport_key))
                continue
            if pb.type != "virtual":
                continue
            parent = lport(dp_key, parent_key)
            if parent is None or chassis is None:
                continue
            log.info("Claiming virtual lport %s for this chassis with the virtual parent %s"
                     % (pb.logical_port, parent.logical_port))
            pb.chassis = [chassis]
            pb.virtual_parent = [parent.logical_port]
            n += 1
        if chassis is not None:
            existing = set()
            for ev in controller_events:
                ch = opt_first(ev.chassis)
                if ev.event_type != "empty_lb_backends" or ch is None or ch.uuid != chassis.uuid:
                    continue
                info = ev.event_info
                existing.add(tuple((k, info.get(k)) for k in ("vip", "protocol", "load_balancer")))
            for event_type, info in batch.events:
                if info in existing:
                    continue
                row = txn.insert(tables["Controller_Event"])
                row.event_type = event_type
                self.event_seq_num += 1
                row.seq_num = self.event_seq_num
                row.event_info = dict(info)
                row.chassis = [chassis]
                existing.add(info)
                n += 1
        fdb_inserted: dict[tuple[str, int], Any] = {}
        for dp_key, mac, port_key in batch.fdbs:
            fkey = (mac, dp_key)
            row = fdb_inserted.get(fkey)
            new = row is not None
            if row is None:
                row = self.fdb_index.get(fkey)
            if row is None:
                row = txn.insert(tables["FDB"])
                row.dp_key = dp_key
                row.mac = mac
                fdb_inserted[fkey] = row
                new = True
            if new or row.port_key != port_key:
                row.port_key = port_key
            n += 1
        for dp_key, port_key in batch.activations:
            pb = lport(dp_key, port_key)
            if pb is None or chassis is None:
                done_activation((dp_key, port_key))
                continue
            current = pb.options.get("additional-chassis-activated")
            names = [c for c in (current or "").split(",") if c]
            if chassis.name in names:
                done_activation((dp_key, port_key))
                continue
            pb.setkey("options", "additional-chassis-activated",
                      "%s,%s" % (current, chassis.name) if current else chassis.name)
            n += 1
        return n

    def apply_local(self, bindings: Iterable[Any], txn: Any, tables: Mapping[str, Any], idx: Any,
                    can_timestamp: bool) -> int:
        """MAC_Binding upserts a GARP makes on peer router ports (C's
        send_garp_locally): (dp_key, port_key, ip, mac, update_only) each."""
        n = 0
        inserted = self._txn_inserted(txn)
        for b in bindings:
            dp = idx.dp_by_key.get(b.dp_key)
            pb = idx.pb_by_key.get((dp.uuid, b.port_key)) if dp is not None else None
            if pb is None:
                continue
            key = (pb.logical_port, b.ip)
            row = inserted.get(key)
            new = row is not None
            if row is None:
                row = self.mb_index.get(key)
            if row is None:
                if b.update_only:
                    continue
                row = txn.insert(tables["MAC_Binding"])
                row.logical_port = pb.logical_port
                row.ip = b.ip
                row.datapath = pb.datapath
                inserted[key] = row
                new = True
            if new or row.mac != b.mac:
                row.mac = b.mac
                if can_timestamp:
                    row.timestamp = int(time.time() * 1000)
                n += 1
        return n


def port_info(pb: Any, dp_key: int) -> PortInfo:
    ch = opt_first(pb.chassis)
    vp = opt_first(pb.virtual_parent)
    return PortInfo(name=pb.logical_port, type=pb.type, dp_key=dp_key,
                    port_key=int(pb.tunnel_key), mac=tuple(pb.mac),
                    options=MappingProxyType(dict(pb.options)),
                    chassis=ch.name if ch is not None else "", virtual_parent=vp or "")


class SnapshotPublisher:
    """Builds and publishes the LocalSnapshot (see module docstring)."""

    def __init__(self, publish: Callable[[LocalSnapshot], None]) -> None:
        self._publish = publish
        self._ports: dict[tuple[int, int], PortInfo] = {}
        self._key_of: dict[uuidlib.UUID, tuple[uuidlib.UUID, tuple[int, int]]] = {}
        self._by_dp: dict[uuidlib.UUID, set[uuidlib.UUID]] = {}
        self._dps: dict[uuidlib.UUID, int] = {}
        self._chassis: str | None = None
        self._dns: DnsCache = EMPTY_DNS_CACHE
        self._dns_loaded = False
        self.version = 0

    def run(self, chassis_name: str, local_datapaths: Mapping[uuidlib.UUID, Any],
            pbs_on_datapath: Callable[[uuidlib.UUID], Iterable[Any]], tracker: Any,
            dns_rows: Callable[[], Iterable[Any]] | None = None) -> bool:
        """Update from this iteration's state; True when a new snapshot was published.
        ``dns_rows`` gives the SB DNS rows; the DNS cache is rebuilt when they change.
        Datapaths that became (non-)local are filed (unfiled) one by one."""
        dps = {u: int(ld.key) for u, ld in local_datapaths.items()}
        changed = False
        if dns_rows is not None and (not self._dns_loaded or tracker.reset
                                     or tracker.has_changes("DNS")):
            self._dns, self._dns_loaded = dns_cache_from_sb(dns_rows()), True
            changed = True
        if chassis_name != self._chassis or tracker.reset:
            self._chassis = chassis_name
            self._ports.clear()
            self._key_of.clear()
            self._by_dp.clear()
            self._dps = {}
        if dps != self._dps:
            for u, key in list(self._dps.items()):
                if dps.get(u) != key:
                    for pu in list(self._by_dp.get(u, ())):
                        self._unfile(pu)
                    self._by_dp.pop(u, None)
            for u, key in dps.items():
                if self._dps.get(u) != key:
                    for pb in pbs_on_datapath(u):
                        self._file(pb, u, key)
            self._dps = dps
            changed = True
        tc = tracker.tables.get("Port_Binding")
        if tc:
            for u in tc.deleted:
                changed |= self._unfile(u)
            for tr in tc.new_or_updated():
                changed |= self._unfile(tr.row.uuid)
                dp = opt_first(tr.row.datapath)
                dp_key = dps.get(dp.uuid) if dp is not None else None
                if dp_key is not None:
                    self._file(tr.row, dp.uuid, dp_key)
                    changed = True
        if changed:
            self.version += 1
            ports = list(self._ports.values())
            self._publish(LocalSnapshot.build(chassis_name, ports, frozenset(dps.values()),
                                              self.version, self._dns))
        return changed

    def _file(self, pb: Any, dp_uuid: uuidlib.UUID, dp_key: int) -> None:
        info = port_info(pb, dp_key)
        key = (dp_key, info.port_key)
        self._ports[key] = info
        self._key_of[pb.uuid] = (dp_uuid, key)
        self._by_dp.setdefault(dp_uuid, set()).add(pb.uuid)

    def _unfile(self, u: uuidlib.UUID) -> bool:
        entry = self._key_of.pop(u, None)
        if entry is None:
            return False
        dp_uuid, key = entry
        self._ports.pop(key, None)
        members = self._by_dp.get(dp_uuid)
        if members is not None:
            members.discard(u)
        return True
