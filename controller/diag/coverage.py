"""Coverage counters with OVS ``coverage/show`` output (lib/coverage.c).

Design note
-----------
Counters are plain ints bumped on hot paths (``COVERAGE.inc("lflow_run")``
costs one dict lookup and an add).  Names are the C agent's (OVN 23.03.1 plus
the OVS 3.1 library counters whose event exists here: ``rconn_*``,
``vconn_*``, ``stream_open``, ``txn_*``, ``unixctl_*``), registered in the
order the C binary prints them, because exporters and tests read them.
Only counters whose event we actually count are registered, so the
"N events never hit" line counts real counters.

Modules that must not import the agent (``ofctrl/``) keep their own plain
``dict[str, int]`` of totals; :meth:`Coverage.add_source` folds such a dict
in, read when the ring is advanced and when a counter is shown.

:meth:`Coverage.run` is called from the main loop.  As in OVS: the first
call arms a deadline 5 s ahead; a call past the deadline computes how many
5-second slots elapsed, spreads each counter's delta over them (an even
portion per slot, the remainder in the last one) in a 12-slot minute ring,
adds each slot to the current hour bucket (restarting the bucket on the
first slot of a minute), and arms the next deadline 5 s after *now*.  The
hour column therefore includes the minute in progress, as C's does.
"""

from __future__ import annotations

import time
from typing import Mapping

from ofctrl import connection as of_connection

RUN_INTERVAL_MS = 5000
MIN_AVG_LEN = 60000 // RUN_INTERVAL_MS
HR_AVG_LEN = 60


class _Counter:
    __slots__ = ("name", "total", "last_total", "mins", "hrs")

    def __init__(self, name: str) -> None:
        self.name = name
        self.total = 0
        self.last_total = 0
        self.mins = [0] * MIN_AVG_LEN
        self.hrs = [0] * HR_AVG_LEN


class Coverage:
    def __init__(self, names: tuple[str, ...] = ()) -> None:
        self.counters: dict[str, _Counter] = {}
        for n in names:
            if n in self.counters:
                raise ValueError(f"coverage counter {n!r} registered twice")
            self.counters[n] = _Counter(n)
        self._sources: list[Mapping[str, int]] = []
        self._next_run: float | None = None
        self._idx = 0

    def add_source(self, totals: Mapping[str, int]) -> None:
        """Fold a module's own totals (name -> count) into the counters."""
        for n in totals:
            if n not in self.counters:
                self.counters[n] = _Counter(n)
        self._sources.append(totals)

    def inc(self, name: str, n: int = 1) -> None:
        c = self.counters.get(name)
        if c is None:
            c = self.counters[name] = _Counter(name)
        c.total += n

    def _total(self, c: _Counter) -> int:
        return c.total + sum(s.get(c.name, 0) for s in self._sources)

    def read(self, name: str) -> int | None:
        c = self.counters.get(name)
        return self._total(c) if c is not None else None

    def run(self, now_ms: float | None = None) -> None:
        now = now_ms if now_ms is not None else time.monotonic() * 1000
        if self._next_run is None:
            self._next_run = now + RUN_INTERVAL_MS
        if now < self._next_run:
            return
        slots = int((now - self._next_run) // RUN_INTERVAL_MS) + 1
        ring = MIN_AVG_LEN * HR_AVG_LEN
        for c in list(self.counters.values()):   # the pinctrl thread may add one
            total = self._total(c)
            count = total - c.last_total
            c.last_total = total
            portion, rest = divmod(count, slots)
            idx = self._idx
            for j in range(slots):
                m_idx, h_idx = idx % MIN_AVG_LEN, idx // MIN_AVG_LEN
                c.mins[m_idx] = portion + (rest if j == slots - 1 else 0)
                c.hrs[h_idx] = c.mins[m_idx] + (c.hrs[h_idx] if m_idx else 0)
                idx = (idx + 1) % ring
        self._idx = (self._idx + slots) % ring
        self._next_run = now + RUN_INTERVAL_MS

    def show(self) -> str:
        counters = list(self.counters.values())
        totals = [self._total(c) for c in counters]
        lines = ["Event coverage, avg rate over last: %d seconds, last minute, last hour,  "
                 "hash=%08x:" % (RUN_INTERVAL_MS // 1000, _hash(counters, totals))]
        last = (self._idx - 1) % MIN_AVG_LEN
        never = 0
        for c, total in zip(counters, totals):
            if not total:
                never += 1
                continue
            lines.append("%-24s %5.1f/sec %9.3f/sec %13.4f/sec   total: %d" % (
                c.name, c.mins[last] * 1000.0 / RUN_INTERVAL_MS, sum(c.mins) / 60.0,
                sum(c.hrs) / 3600.0, total))
        lines.append(f"{never} events never hit")
        return "\n".join(lines) + "\n"


def _hash(counters: list[_Counter], totals: list[int]) -> int:
    """A digest of which counters were hit, grouped by equal totals (like
    OVS's, which ranks counters by total; the value itself differs from C's:
    OVS uses its own murmur hash, nothing parses this number)."""
    ranked = sorted(((-t, c.name) for c, t in zip(counters, totals) if t))
    h, groups, prev = 0, 0, None
    for rank, (neg_total, name) in enumerate(ranked):
        if neg_total != prev:
            groups += 1
            prev = neg_total
            h = (h * 1000003 + rank) & 0xFFFFFFFF
        for ch in name.encode():
            h = (h * 31 + ch) & 0xFFFFFFFF
    return (h * 1000003 + groups) & 0xFFFFFFFF


# In the order ovn-controller 23.03.1 (with OVS 3.1) prints them; only those
# whose event this agent counts (controller/, ofctrl/connection.py, db.py).
AGENT_COUNTERS = (
    "lflow_run", "consider_logical_flow",
    "lflow_cache_flush", "lflow_cache_add_expr", "lflow_cache_add_matches",
    "lflow_cache_free_expr", "lflow_cache_free_matches", "lflow_cache_add",
    "lflow_cache_hit", "lflow_cache_miss", "lflow_cache_delete", "lflow_cache_full",
    "lflow_cache_mem_full", "lflow_cache_made_room", "lflow_cache_trim",
    "lflow_conj_conflict", "lflow_conj_alloc", "lflow_conj_alloc_specified", "lflow_conj_free",
    "physical_run",
    "pinctrl_drop_put_mac_binding", "pinctrl_drop_buffered_packets_map",
    "pinctrl_drop_controller_event", "pinctrl_drop_put_vport_binding",
    "pinctrl_notify_main_thread", "pinctrl_total_pin_pkts",
    # this agent's own, no C equivalent
    "ct_zone_commit", "binding_recompute", "engine_recompute", "lflow_parse_error",
    # OVS library
    "txn_uncommitted", "txn_unchanged", "txn_incomplete", "txn_aborted", "txn_success",
    "txn_try_again", "txn_not_locked", "txn_error",
    "rconn_discarded", "rconn_overflow", "rconn_queued", "rconn_sent",
    "pstream_open", "stream_open", "long_poll_interval",
    "unixctl_received", "unixctl_replied",
    "vconn_open", "vconn_received", "vconn_sent")

COVERAGE = Coverage(AGENT_COUNTERS)
COVERAGE.add_source(of_connection.COUNTS)


def count_txn_status(status: str) -> None:
    """Count one ``Transaction.commit()`` result as C's ovsdb-idl does."""
    COVERAGE.inc("txn_" + status.replace(" ", "_"))
