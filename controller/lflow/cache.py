"""Logical-flow cache (OVN 23.03 controller/lflow-cache.c semantics).

Design note
-----------
Entries are keyed by the Logical_Flow UUID and come in two kinds:

* ``EXPR``: the annotated + simplified match expression (before condition
  evaluation and normalisation), for lflows whose match references ports or
  multicast groups but no address set, port group or template variable;
* ``MATCHES``: the final datapath-independent matches with the conjunction
  id range they were given (``conj_id_ofs``, ``n_conjs``), for lflows with no
  external reference at all.

Nothing is cached for lflows using address sets, port groups or templates
(the compiler decides; this module only stores).  Storage is one
``cachetools.Cache`` per kind (unbounded there, with ``getsizeof`` giving each
entry's accounted size so ``currsize`` is the memory usage); the bounds are
applied here the way the C cache applies them:

* memory (``ovn-memlimit-lflow-cache-kb``): an add that would exceed it fails;
* entries (``ovn-limit-lflow-cache``): when full, adding a MATCHES entry
  evicts one EXPR entry, adding an EXPR entry fails;
* turning the cache off, or lowering a bound below the current usage,
  flushes it; changing the trim settings of an enabled cache may trim.

"Trimming" (``ovn-trim-limit-lflow-cache``, ``ovn-trim-wmark-perc-lflow-cache``)
keeps the C bookkeeping (high watermark reset, ``trim count``) so
``lflow-cache/show-stats`` prints the same numbers, and asks glibc to give
freed heap pages back to the kernel (``malloc_trim(0)``; Python's own small
object arenas are unmapped by Python once empty).  As in C, a trim is also
forced after ``ovn-trim-timeout-ms`` (at least 1 s) without cache activity
(an add, a delete, a flush or a trim): the main loop calls :meth:`run` every
iteration and :meth:`wait` arms the timer.  The accounted size of an entry
is a fixed overhead plus the caller-supplied value size, as in C.
"""

from __future__ import annotations

import ctypes
import math
import time
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any, Callable

import cachetools
import ovs.poller
import structlog

from controller.diag.coverage import COVERAGE
from controller.vlog import RateLimiter

log = structlog.get_logger("memory_trim")
_rl_trim = RateLimiter(per_minute=5, burst=1)
MIN_TRIM_TIMEOUT_MS = 1000


def _load_malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None (another libc)."""
    try:
        try:
            libc = ctypes.CDLL("libc.so.6")
        except OSError:          # not glibc's soname: ask (runs ldconfig; loads subprocess)
            from ctypes.util import find_library
            libc = ctypes.CDLL(find_library("c"))
        fn = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn  # type: ignore[no-any-return]


_malloc_trim = _load_malloc_trim()

UINT32_MAX = 0xFFFFFFFF
UINT64_MAX = 0xFFFFFFFFFFFFFFFF

T_EXPR = 0
T_MATCHES = 1
TYPE_NAMES = ("cache-expr", "cache-matches")

# sizeof(struct lflow_cache_entry) on 64-bit builds: every entry is charged
# this much on top of its value.
ENTRY_OVERHEAD = 64
_ADD_COUNTER = ("lflow_cache_add_expr", "lflow_cache_add_matches")
_FREE_COUNTER = ("lflow_cache_free_expr", "lflow_cache_free_matches")

DEFAULT_TRIM_LIMIT = 10000
DEFAULT_TRIM_WMARK_PERC = 50
DEFAULT_TRIM_TIMEOUT_MS = 30000


class LflowCacheValue:
    """What a lookup returns: the kind and its payload."""

    __slots__ = ("type", "expr", "matches", "conj_id_ofs", "n_conjs", "size")

    def __init__(self, type_: int, size: int, expr: Any = None, matches: Any = None,
                 conj_id_ofs: int = 0, n_conjs: int = 0) -> None:
        self.type = type_
        self.size = size
        self.expr = expr
        self.matches = matches
        self.conj_id_ofs = conj_id_ofs
        self.n_conjs = n_conjs


def _entry_size(value: LflowCacheValue) -> int:
    return value.size


@dataclass(slots=True)
class LflowCacheConfig:
    """The ovn-* knobs of the Open_vSwitch table that drive the cache."""

    enabled: bool = True
    capacity: int = UINT32_MAX                 # ovn-limit-lflow-cache
    max_mem_kb: int = UINT64_MAX // 1024       # ovn-memlimit-lflow-cache-kb
    trim_limit: int = DEFAULT_TRIM_LIMIT       # ovn-trim-limit-lflow-cache
    trim_wmark_perc: int = DEFAULT_TRIM_WMARK_PERC
    trim_timeout_ms: int = DEFAULT_TRIM_TIMEOUT_MS

    @classmethod
    def from_values(cls, enabled: bool | None = True, limit: int | None = None,
                    memlimit_kb: int | None = None, trim_limit: int | None = None,
                    trim_wmark_perc: int | None = None,
                    trim_timeout_ms: int | None = None) -> "LflowCacheConfig":
        """From parsed knob values; None means "not set" (the default)."""
        return cls(
            enabled=True if enabled is None else enabled,
            capacity=UINT32_MAX if limit is None else limit,
            max_mem_kb=UINT64_MAX // 1024 if memlimit_kb is None else memlimit_kb,
            trim_limit=DEFAULT_TRIM_LIMIT if trim_limit is None else trim_limit,
            trim_wmark_perc=DEFAULT_TRIM_WMARK_PERC if trim_wmark_perc is None
            else trim_wmark_perc,
            trim_timeout_ms=DEFAULT_TRIM_TIMEOUT_MS if trim_timeout_ms is None
            else trim_timeout_ms)

    @classmethod
    def from_external_ids(cls, ext: dict[str, str]) -> "LflowCacheConfig":
        """Reads the knobs from Open_vSwitch external_ids (as ovn-controller does)."""
        def num(key: str, default: int) -> int:
            try:
                return int(ext[key])
            except (KeyError, ValueError):
                return default
        return cls(
            enabled=ext.get("ovn-enable-lflow-cache", "true").lower() != "false",
            capacity=num("ovn-limit-lflow-cache", UINT32_MAX),
            max_mem_kb=num("ovn-memlimit-lflow-cache-kb", UINT64_MAX // 1024),
            trim_limit=num("ovn-trim-limit-lflow-cache", DEFAULT_TRIM_LIMIT),
            trim_wmark_perc=num("ovn-trim-wmark-perc-lflow-cache", DEFAULT_TRIM_WMARK_PERC),
            trim_timeout_ms=num("ovn-trim-timeout-ms", DEFAULT_TRIM_TIMEOUT_MS))


class LflowCache:
    """See the module docstring."""

    __slots__ = ("_kinds", "_index", "n_entries", "high_watermark", "capacity", "max_mem",
                 "trim_limit", "trim_wmark_perc", "trim_timeout_ms", "trim_count",
                 "enabled", "hits", "misses", "last_active", "recently_active")

    def __init__(self, config: LflowCacheConfig | None = None) -> None:
        self._kinds: tuple[cachetools.Cache[uuidlib.UUID, LflowCacheValue], ...] = tuple(
            cachetools.Cache(maxsize=math.inf, getsizeof=_entry_size) for _ in TYPE_NAMES)
        self._index: dict[uuidlib.UUID, LflowCacheValue] = {}
        self.n_entries = 0
        self.high_watermark = 0
        self.capacity = UINT32_MAX
        self.max_mem = UINT64_MAX
        self.trim_limit = DEFAULT_TRIM_LIMIT
        self.trim_wmark_perc = DEFAULT_TRIM_WMARK_PERC
        self.trim_timeout_ms = DEFAULT_TRIM_TIMEOUT_MS
        self.trim_count = 0
        self.enabled = False
        self.hits = 0
        self.misses = 0
        self.last_active = 0.0          # time.monotonic() of the last activity
        self.recently_active = False
        self.configure(config or LflowCacheConfig())

    # ------------------------------------------------------------ config
    @property
    def mem_usage(self) -> int:
        return int(sum(k.currsize for k in self._kinds))

    def is_enabled(self) -> bool:
        return self.enabled

    def configure(self, config: LflowCacheConfig) -> None:
        """lflow_cache_enable(): apply new knobs, flushing or trimming as needed."""
        wmark = min(config.trim_wmark_perc, 100)
        max_mem = config.max_mem_kb * 1024
        need_flush = ((self.enabled and not config.enabled)
                      or config.capacity < self.n_entries
                      or max_mem < self.mem_usage)
        need_trim = (not need_flush and self.enabled
                     and (self.trim_limit != config.trim_limit
                          or self.trim_wmark_perc != wmark))
        self.enabled = config.enabled
        self.capacity = config.capacity
        self.max_mem = max_mem
        self.trim_limit = config.trim_limit
        self.trim_wmark_perc = wmark
        if config.trim_timeout_ms < MIN_TRIM_TIMEOUT_MS:
            if _rl_trim.allow():
                log.warning(f"Invalid requested trim timeout: requested "
                            f"{config.trim_timeout_ms} ms, using 1000 ms instead")
            self.trim_timeout_ms = MIN_TRIM_TIMEOUT_MS
        else:
            self.trim_timeout_ms = config.trim_timeout_ms
        if need_flush:
            self._record_activity()
            self.flush()
        elif need_trim:
            self._record_activity()
            self._trim(False)

    # ------------------------------------------------------------ inactivity trim
    def _record_activity(self) -> None:
        self.last_active = time.monotonic()
        self.recently_active = True

    def run(self, now: float | None = None) -> bool:
        """Trim once the cache was idle for trim_timeout_ms after activity
        (lflow_cache_run()); True if it trimmed."""
        if not self.recently_active:
            return False
        now = time.monotonic() if now is None else now
        idle_ms = (now - self.last_active) * 1000
        if idle_ms < self.trim_timeout_ms:
            return False
        if _rl_trim.allow():
            log.info(f"Detected inactivity (last active {int(idle_ms)} ms ago): "
                     "trimming memory")
        self.recently_active = False
        self._trim(True)
        return True

    def wait(self, poller: ovs.poller.Poller, now: float | None = None) -> None:
        """Wake the loop when the inactivity trim is due."""
        if self.recently_active:
            now = time.monotonic() if now is None else now
            due_ms = self.last_active * 1000 + self.trim_timeout_ms - now * 1000
            poller.timer_wait(max(0, int(due_ms) + 1))

    # ------------------------------------------------------------ entries
    def _add(self, lflow_uuid: uuidlib.UUID | None, value: LflowCacheValue) -> bool:
        if not self.enabled or lflow_uuid is None:
            return False
        if lflow_uuid in self._index:
            self._remove(lflow_uuid)
        if value.size + self.mem_usage > self.max_mem:
            COVERAGE.inc("lflow_cache_mem_full")
            return False
        if self.n_entries >= self.capacity and not self._make_room(value.type):
            COVERAGE.inc("lflow_cache_full")
            return False
        self._record_activity()
        COVERAGE.inc(_ADD_COUNTER[value.type]); COVERAGE.inc("lflow_cache_add")  # noqa: E702
        self._kinds[value.type][lflow_uuid] = value
        self._index[lflow_uuid] = value
        self.n_entries += 1
        if self.n_entries > self.high_watermark:
            self.high_watermark = self.n_entries
        return True

    def _make_room(self, type_: int) -> bool:
        # Prefer keeping the more valuable kinds: evict a lower kind only.
        for lower in range(type_):
            kind = self._kinds[lower]
            if len(kind):
                evicted, _ = kind.popitem()
                del self._index[evicted]
                self.n_entries -= 1
                COVERAGE.inc("lflow_cache_made_room")
                return True
        return False

    def add_expr(self, lflow_uuid: uuidlib.UUID | None, expr: Any, value_size: int) -> bool:
        return self._add(lflow_uuid, LflowCacheValue(
            T_EXPR, ENTRY_OVERHEAD + value_size, expr=expr))

    def add_matches(self, lflow_uuid: uuidlib.UUID | None, conj_id_ofs: int, n_conjs: int,
                    matches: Any, value_size: int) -> bool:
        return self._add(lflow_uuid, LflowCacheValue(
            T_MATCHES, ENTRY_OVERHEAD + value_size, matches=matches,
            conj_id_ofs=conj_id_ofs, n_conjs=n_conjs))

    def get(self, lflow_uuid: uuidlib.UUID | None) -> LflowCacheValue | None:
        if not self.enabled or lflow_uuid is None:
            return None
        v = self._index.get(lflow_uuid)
        if v is not None:
            self.hits += 1
            COVERAGE.inc("lflow_cache_hit")
            return v
        self.misses += 1
        COVERAGE.inc("lflow_cache_miss")
        return None

    def __contains__(self, lflow_uuid: object) -> bool:
        return lflow_uuid in self._index

    def _remove(self, lflow_uuid: uuidlib.UUID) -> None:
        v = self._index.pop(lflow_uuid)
        COVERAGE.inc(_FREE_COUNTER[v.type])
        del self._kinds[v.type][lflow_uuid]
        self.n_entries -= 1

    def delete(self, lflow_uuid: uuidlib.UUID) -> None:
        if lflow_uuid in self._index:
            COVERAGE.inc("lflow_cache_delete")
            self._remove(lflow_uuid)
            self._trim(False)
            self._record_activity()

    def flush(self) -> None:
        COVERAGE.inc("lflow_cache_flush")
        for i, kind in enumerate(self._kinds):
            COVERAGE.inc(_FREE_COUNTER[i], len(kind))
            kind.clear()
        self._index.clear()
        self.n_entries = 0
        self._trim(True)

    def _trim(self, force: bool) -> None:
        upper = self.high_watermark * self.trim_wmark_perc // 100
        if not force and (self.high_watermark <= self.trim_limit or self.n_entries > upper):
            return
        COVERAGE.inc("lflow_cache_trim")
        if _malloc_trim is not None:
            _malloc_trim(0)
        self.high_watermark = self.n_entries
        self.trim_count += 1

    def count(self, type_: int) -> int:
        return len(self._kinds[type_])

    def __len__(self) -> int:
        return self.n_entries

    # ------------------------------------------------------------ stats
    def stats_text(self) -> str:
        """``lflow-cache/show-stats`` output."""
        lines = [f"Enabled: {'true' if self.enabled else 'false'}",
                 f"{'high-watermark':<16}: {self.high_watermark}",
                 f"{'total':<16}: {self.n_entries}"]
        for name, kind in zip(TYPE_NAMES, self._kinds):
            lines.append(f"{name:<16}: {len(kind)}")
        lines.append(f"{'trim count':<16}: {self.trim_count}")
        lines.append(f"{'Mem usage (KB)':<16}: {(self.mem_usage + 1023) // 1024}")
        return "\n".join(lines) + "\n"
