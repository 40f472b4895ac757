"""Memory stays bounded (issue 12, point 7).

* ``ovn-memlimit-lflow-cache-kb`` set low: on seed-100 the agent's RSS after
  a full sync stays within the RSS of the same agent without any lflow
  cache (the flow tables and the replicas: the baseline, measured in the
  same sandbox) plus the limit, plus a noise margin (the spread of two
  baseline runs, at least 2 % of the baseline).  The cache's own accounting
  stays under the limit and under ``ovn-limit-lflow-cache`` entries.
* The inactivity trim (``ovn-trim-timeout-ms``, lib/memory-trim.c): after
  the sync, 1 s without cache activity makes the agent log "Detected
  inactivity ... trimming memory" and count a trim; ours and C's.
* Turning the cache off flushes and trims it (trim count), twice.

The two seed-100 tests are marked slow.  The figures are printed
(``pytest -s``) for the report.
"""

from __future__ import annotations

import re
import time

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import Sandbox
from integration.soak import rss_kb
from integration.test_agent_basic import wait_until
from integration.test_faults import AGENTS, agent, log_lines
from integration.topologies import build_rich, build_seed

pytestmark = pytest.mark.integration

SEED = 100
MEMLIMIT_KB = 512
ENTRY_LIMIT = 2000
KNOBS = ("ovn-enable-lflow-cache", "ovn-memlimit-lflow-cache-kb", "ovn-limit-lflow-cache")


def cache_stats(box: Sandbox) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in box.appctl("controller", "lflow-cache/show-stats").splitlines():
        key, _, val = line.partition(":")
        if val.strip().isdigit():
            out[key.strip()] = int(val)
    return out


def synced_rss(box: Sandbox, **knobs: str) -> tuple[int, dict[str, int]]:
    """Start our agent with these lflow-cache knobs, sync, settle; its RSS in kB
    and the cache statistics.  The agent is stopped again."""
    box.vsctl("remove", "Open_vSwitch", ".", "external_ids", *KNOBS)
    if knobs:
        box.vsctl("set", "Open_vSwitch", ".", *(f"external_ids:{k}={v}" for k, v in knobs.items()))
    box.start_controller("py")
    box.wait_hv_sync(timeout=300)
    time.sleep(2)
    rss = rss_kb(agent(box).pid)
    stats = cache_stats(box)
    box.stop_controller()
    return rss, stats


@pytest.mark.slow
def test_low_lflow_cache_limit_bounds_rss(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(northd=True)
    build_seed(box, SEED)
    base1, _ = synced_rss(box, **{"ovn-enable-lflow-cache": "false"})
    low, low_stats = synced_rss(box, **{"ovn-memlimit-lflow-cache-kb": str(MEMLIMIT_KB),
                                        "ovn-limit-lflow-cache": str(ENTRY_LIMIT)})
    full, full_stats = synced_rss(box)
    base2, _ = synced_rss(box, **{"ovn-enable-lflow-cache": "false"})
    base = max(base1, base2)
    # RSS of the same agent and table moves by a few MB from run to run (two
    # no-cache baselines differed by 1.5 MB in one run, and a capped cache once
    # came out 340 kB above an unlimited one): twice the spread seen, at least 4 %
    noise = max(2 * abs(base1 - base2), base // 25)
    print(f"\n[py] seed-{SEED} RSS: no cache {base1}/{base2} kB; memlimit {MEMLIMIT_KB} kB: "
          f"{low} kB ({low - base:+d}), cache {low_stats['total']} entries "
          f"{low_stats['Mem usage (KB)']} kB accounted; unlimited: {full} kB "
          f"({full - base:+d}), {full_stats['total']} entries "
          f"{full_stats['Mem usage (KB)']} kB accounted")
    assert low_stats["Mem usage (KB)"] <= MEMLIMIT_KB
    assert 0 < low_stats["total"] <= ENTRY_LIMIT
    assert low <= base + MEMLIMIT_KB + noise, \
        f"RSS {low} kB > baseline {base} + limit {MEMLIMIT_KB} + noise {noise}"


@AGENTS
def test_idle_trim_after_trim_timeout(sandbox_factory: SandboxFactory, kind: str) -> None:
    box = sandbox_factory(northd=True)
    box.vsctl("set", "Open_vSwitch", ".", "external_ids:ovn-trim-timeout-ms=1000")
    build_rich(box)
    box.start_controller(kind)
    box.wait_hv_sync(timeout=120)
    trims = re.compile(r"memory_trim\|INFO\|Detected inactivity \(last active (\d+) ms ago\): "
                       r"trimming memory")
    wait_until(lambda: any(trims.search(ln) for ln in log_lines(box)), timeout=30,
               what="the inactivity trim", box=box)
    count = cache_stats(box)["trim count"]
    idle = [int(m.group(1)) for ln in log_lines(box) if (m := trims.search(ln))]
    print(f"\n[{kind}] inactivity trim: {len(idle)} logged (idle {idle[:3]} ms), "
          f"trim count {count}")
    assert count >= 1
    assert all(ms >= 1000 for ms in idle)


def set_cache(box: Sandbox, enabled: bool) -> tuple[int, dict[str, int]]:
    """Turn the cache on (and refill it by a forced recompute) or off; the
    RSS once settled and the cache statistics."""
    box.vsctl("set", "Open_vSwitch", ".", f"external_ids:ovn-enable-lflow-cache={str(enabled).lower()}")
    if enabled:
        box.wait_hv_sync(timeout=120)
        box.appctl("controller", "inc-engine/recompute")
        wait_until(lambda: cache_stats(box)["total"] > 0, timeout=60, what="cache filled",
                   box=box)
    else:
        wait_until(lambda: cache_stats(box)["total"] == 0, timeout=30, what="cache flushed",
                   box=box)
    box.wait_hv_sync(timeout=120)
    time.sleep(2)
    return rss_kb(agent(box).pid), cache_stats(box)


@pytest.mark.slow
def test_cache_off_flushes_and_trims(sandbox_factory: SandboxFactory) -> None:
    """Off, on (refilled), off: each flush empties the cache and trims.  (RSS
    is printed, not bounded: the lflow recompute each toggle causes leaves
    its own peak behind, +14 MB once at seed-100, then flat over 15
    recomputes.)"""
    box = sandbox_factory(northd=True)
    build_seed(box, SEED)
    box.start_controller("py")
    box.wait_hv_sync(timeout=300)
    time.sleep(2)
    on0, stats = rss_kb(agent(box).pid), cache_stats(box)
    off1, s1 = set_cache(box, False)
    on1, s2 = set_cache(box, True)
    off2, s3 = set_cache(box, False)
    print(f"\n[py] seed-{SEED} cache on/off/on/off: RSS {on0} / {off1} / {on1} / {off2} kB "
          f"(entries {stats['total']} / 0 / {s2['total']} / 0); trim count "
          f"{stats['trim count']} -> {s1['trim count']} -> {s3['trim count']}")
    assert stats["total"] > 0 and s2["total"] > 0
    assert s1["trim count"] > stats["trim count"] and s3["trim count"] > s2["trim count"]
