"""``memory/show`` and the ``memory`` log lines (OVS lib/memory.c semantics).

Design note
-----------
*Sizes are measured, not guessed.*  Each usage figure is the
``sys.getsizeof`` of the structure's own containers plus the deep size of an
evenly spaced sample of at most ``SAMPLE`` entries, scaled by
``entries / sampled``.  The deep size follows tuples, lists, dicts, sets and
``__slots__`` objects; it stops at objects that belong to another figure
(``stop`` types: e.g. a desired flow does not count the installed flow it is
linked to) and at objects with a ``__dict__`` (IDL rows and the like, which
the ``idl-cells-*`` figures cover).  Objects seen once in a sample are not
counted again, so state shared by many entries (symbols, interned strings)
counts about once.  Cost: one pass over the entries to pick the sample plus
``SAMPLE`` deep walks per figure; it runs only for ``memory/show`` and when a
report is due.

Keys are C's; as in C, a figure of 0 is left out, KB figures round up and
the keys are printed sorted, ``name:value`` separated by spaces.

*Reports* (:class:`MemoryMonitor`): every 10 s after start the peak RSS is
read; the first time, and afterwards whenever it reached 1.5 times the last
reported value, an INFO line gives the peak (``N kB peak resident set size
after S seconds`` / ``peak resident set size grew P% in last S seconds, from
X kB to Y kB``) followed by a line with the usage figures.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from itertools import islice
from typing import Any, Callable, Iterable, Mapping

import structlog

SAMPLE = 64
CHECK_INTERVAL_MS = 10_000

log = structlog.get_logger("memory")

_LEAVES = (int, float, str, bytes, bool, type(None), complex)
_CONTAINERS = (tuple, list, set, frozenset)


def deep_size(obj: Any, seen: set[int], stop: tuple[type, ...] = ()) -> int:
    """Bytes reachable from `obj` (see the design note for what is followed)."""
    total = 0
    todo = [obj]
    getsizeof = sys.getsizeof
    stopped: dict[type, bool] = {}       # type -> an instance of `stop`
    while todo:
        o = todo.pop()
        if id(o) in seen:
            continue
        cls = type(o)
        if stop:
            is_stop = stopped.get(cls)
            if is_stop is None:
                is_stop = stopped[cls] = isinstance(o, stop)
            if is_stop:
                continue
        seen.add(id(o))
        kind = _KINDS.get(cls)
        if kind is None:
            kind = _KINDS[cls] = _kind_of(o)
        if kind is _OWNED:
            continue                      # someone else's object: not ours to count
        total += getsizeof(o)
        if kind is _LEAF:
            continue
        if kind is _SEQ:
            todo.extend(o)
        elif kind is _MAP:
            todo.extend(o.keys())
            todo.extend(o.values())
        else:
            for name in kind:
                v = getattr(o, name, None)
                if v is not None:
                    todo.append(v)
    return total


# How deep_size treats an object, by its type (computed once per type).
_LEAF: tuple[str, ...] = ("<leaf>",)      # counted, nothing followed
_SEQ: tuple[str, ...] = ("<seq>",)        # counted, items followed
_MAP: tuple[str, ...] = ("<map>",)        # counted, keys and values followed
_OWNED: tuple[str, ...] = ("<owned>",)    # has a __dict__: not counted
_KINDS: dict[type, tuple[str, ...]] = {}   # else: the __slots__ names to follow


def _kind_of(o: Any) -> tuple[str, ...]:
    if isinstance(o, _LEAVES):
        return _LEAF
    if isinstance(o, _CONTAINERS):
        return _SEQ
    if isinstance(o, dict):
        return _MAP
    if hasattr(o, "__dict__"):
        return _OWNED
    return _slots_of(type(o)) or _LEAF


# type -> its __slots__ names over the MRO (types do not change their slots)
_SLOTS: dict[type, tuple[str, ...]] = {}


def _slots_of(cls: type) -> tuple[str, ...]:
    names = _SLOTS.get(cls)
    if names is None:
        found: list[str] = []
        for klass in cls.__mro__:
            s = klass.__dict__.get("__slots__", ())
            found.extend((s,) if isinstance(s, str) else s)
        names = _SLOTS[cls] = tuple(found)
    return names


def sampled_size(entries: Iterable[Any], n: int, stop: tuple[type, ...] = (),
                 measure: Callable[[Any, set[int]], int] | None = None) -> int:
    """Deep size of `n` entries, estimated from an evenly spaced sample."""
    if n <= 0:
        return 0
    step = max(1, n // SAMPLE)
    sample = list(islice(entries, 0, None, step))[:SAMPLE]
    if not sample:
        return 0
    seen: set[int] = set()
    size = sum(measure(e, seen) if measure else deep_size(e, seen, stop) for e in sample)
    return size * n // len(sample)


def kb(n_bytes: int) -> int:
    """Round up to whole KB, as C's memory figures."""
    return (n_bytes + 1023) // 1024


def format_usage(usage: Mapping[str, int]) -> str:
    """C's report text: nonzero figures, sorted by key, ``key:value``."""
    return " ".join(f"{k}:{v}" for k, v in sorted(usage.items()) if v)


class MemoryMonitor:
    """When to log the peak RSS and the usage report (lib/memory.c)."""

    __slots__ = ("boot_ms", "next_check_ms", "last_report_ms", "last_maxrss_kb")

    def __init__(self, boot_ms: float | None = None) -> None:
        self.boot_ms = boot_ms if boot_ms is not None else time.monotonic() * 1000
        self.next_check_ms = self.boot_ms + CHECK_INTERVAL_MS
        self.last_report_ms = self.boot_ms
        self.last_maxrss_kb = 0

    def run(self, report: Callable[[], str], now_ms: float | None = None,
            maxrss_kb: int | None = None) -> bool:
        """Check if due; log and return True when a report was made."""
        now = now_ms if now_ms is not None else time.monotonic() * 1000
        if now < self.next_check_ms:
            return False
        self.next_check_ms = now + CHECK_INTERVAL_MS
        rss = maxrss_kb if maxrss_kb is not None else \
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss   # KB on Linux
        if not self.last_maxrss_kb:
            log.info(f"{rss} kB peak resident set size after "
                     f"{(now - self.boot_ms) / 1000.0:.1f} seconds")
        elif rss >= self.last_maxrss_kb * 1.5:
            log.info(f"peak resident set size grew "
                     f"{(rss / self.last_maxrss_kb - 1) * 100:.0f}% in last "
                     f"{(now - self.last_report_ms) / 1000.0:.1f} seconds, from "
                     f"{self.last_maxrss_kb} kB to {rss} kB")
        else:
            return False
        self.last_report_ms = now
        self.last_maxrss_kb = rss
        text = report().rstrip("\n")
        if text:
            log.info(text)
        return True


def process_age_ms() -> float | None:
    """Milliseconds since this process started (Linux /proc), or None."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as f:
            uptime_s = float(f.read().split()[0])
        return max(0.0, (uptime_s - start_ticks / os.sysconf("SC_CLK_TCK")) * 1000)
    except (OSError, ValueError, IndexError):
        return None


# ---------------------------------------------------------------- figures
def desired_flow_bytes(tables: Iterable[Any], stop: tuple[type, ...]) -> int:
    """The desired flows (flow, match, actions, encoded form) and their index."""
    total = 0
    for t in tables:
        if not t.n_flows:
            continue          # empty: 0, as C (whose empty tables own no entries)
        total += sys.getsizeof(t.by_key) + sys.getsizeof(t.tracked)
        total += sampled_size(_flatten(t.by_key.values()), t.n_flows, stop)
    return total


def sb_flow_ref_bytes(tables: Iterable[Any], stop: tuple[type, ...]) -> int:
    """Owner (SB row) -> flows references, address-set references included."""
    total = 0
    for t in tables:
        if not t.by_owner:
            continue
        total += sys.getsizeof(t.by_owner) + sys.getsizeof(t.as_index)
        total += sampled_size(t.by_owner.items(), len(t.by_owner),
                              measure=_shallow_pair)
        total += sampled_size(t.as_index.values(), len(t.as_index), stop)
    return total


def installed_flow_bytes(tables: Iterable[Any], stop: tuple[type, ...]) -> int:
    """What we believe is installed; the Flow objects are shared with the
    desired flows (immutable) and are counted there."""
    total = 0
    for t in tables:
        if not t.n_flows:
            continue
        total += sys.getsizeof(t.by_key)
        total += sampled_size(_flatten(t.by_key.values()), t.n_flows, stop)
    return total


def _flatten(values: Iterable[Any]) -> Iterable[Any]:
    for v in values:
        if type(v) is list:
            yield from v
        else:
            yield v


def _shallow_pair(pair: tuple[Any, Any], seen: set[int]) -> int:
    owner, flows = pair
    return deep_size(owner, seen) + sys.getsizeof(flows)


def lflow_cache_usage(cache: Any) -> dict[str, int]:
    """Entry counts per kind and the measured size, only while enabled (as C)."""
    if not cache.is_enabled():
        return {}
    from controller.lflow.cache import TYPE_NAMES
    usage = {f"lflow-cache-entries-{name}": cache.count(i) for i, name in enumerate(TYPE_NAMES)}
    size = sys.getsizeof(cache._index)
    for kind in cache._kinds:
        size += sum(sys.getsizeof(v) for v in vars(kind).values() if isinstance(v, dict))
        size += sampled_size(kind.values(), len(kind))
    usage["lflow-cache-size-KB"] = kb(size)
    return usage


def mapping_bytes(table: Mapping[Any, Any]) -> int:
    """A dict of entries: its own size plus its keys and values (0 if empty)."""
    if not table:
        return 0
    return sys.getsizeof(table) + sampled_size(table.items(), len(table))


def idl_cells(loop: Any) -> int:
    """Rows times columns over the replica's tables (C's idl-cells-DB)."""
    if loop is None:
        return 0
    return sum(len(t.rows) * len(t.columns) for t in loop.idl.tables.values())


def agent_usage(agent: Any, desired_tables: Iterable[Any]) -> dict[str, int]:
    """Every memory/show figure of the agent (C's keys)."""
    from ofctrl.desired import DesiredFlow
    from ofctrl.installed import InstalledFlow
    from ofctrl.flow import Flow
    desired = list(desired_tables)
    sess = agent.session
    installed = (sess.installed_lflows, sess.installed_pflows) if sess is not None else ()
    usage = {
        "idl-cells-OVN_Southbound": idl_cells(agent.sb),
        "idl-cells-Open_vSwitch": idl_cells(agent.ovs),
        "if_status_mgr_ifaces_usage-KB": kb(mapping_bytes(agent.if_mgr.ifaces)),
        "local_datapath_usage-KB": kb(mapping_bytes(agent.st.rt.local_datapaths)),
        "ofctrl_desired_flow_usage-KB": kb(desired_flow_bytes(desired, (InstalledFlow,))),
        "ofctrl_sb_flow_ref_usage-KB": kb(sb_flow_ref_bytes(desired, (DesiredFlow,))),
        "ofctrl_installed_flow_usage-KB": kb(
            installed_flow_bytes(installed, (DesiredFlow, Flow))),
        "ofctrl_rconn_packet_counter-KB": kb(
            sess.conn.tx_backlog_bytes() if sess is not None else 0),
    }
    usage.update(lflow_cache_usage(agent.lflow.cache))
    return usage
