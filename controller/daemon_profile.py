"""Profiling, iteration tracing and cyclic-GC tuning of the agent (dev aids
and start-up cost).

Design note
-----------
Three things that watch or tune the main loop without taking part in it:

* ``OVN_CONTROLLER_PY_PROFILE=FILE``: :func:`start_profile` starts cProfile
  before the daemon exists; the profile up to the first complete install goes
  to FILE, what follows to FILE.steady (``dump_profile(restart=True)`` at the
  first install, ``restart_profile`` from ``inc-engine/clear-stats``);
* ``OVN_CONTROLLER_PY_TIMELINE=FILE``: ``_trace_iteration`` appends one line
  per iteration (stage times, CPU, recomputes, SB condition state, time in
  cyclic GC passes and the oldest generation collected);
* the cyclic GC thresholds for start-up and steady state (below).

:class:`DevProfile` is a mixin of :class:`~controller.daemon.Daemon`; its
state (``profile``, ``_profile_path``, ``_timeline``) is created by
``Daemon.__init__`` and only declared here.
"""

from __future__ import annotations

import gc
import os
import time
from typing import IO, Any

from controller.diag.loop_stats import LoopStats
from controller.engine.core import Engine
from controller.ovsdb import connections as dbmod


class DevProfile:
    """cProfile dumps and the per-iteration timeline (mixin of ``Daemon``)."""

    # Created by Daemon.__init__.
    profile: Any
    _profile_path: str
    _timeline: IO[str] | None
    loop_stats: LoopStats
    engine: Engine
    sb: dbmod.IdlLoop | None
    _engine_ran: bool

    def _trace_iteration(self) -> None:
        ls = self.loop_stats
        assert self._timeline is not None
        if not _GC_TIME:
            gc.callbacks.append(_gc_timer)
            _GC_TIME.extend([0.0, -1, 0.0])
        gc_ms, gc_gen = _GC_TIME[0] * 1000, _GC_TIME[1]
        _GC_TIME[0], _GC_TIME[1] = 0.0, -1
        stages = " ".join(f"{k}={v:.0f}" for k, v in ls.stages_last.items())
        recomputed = [f"{n.name}:{n.stats.recompute}" for n in self.engine.nodes
                      if n.name in ("runtime_data", "logical_flow_output",
                                    "physical_flow_output")]
        self._timeline.write(
            f"t={time.monotonic() - ls.started:.3f} it={ls.last_ms:.0f}ms {stages} "
            f"cpu={sum(os.times()[:2]):.2f} force={self.engine.force_recompute} "
            f"ran={self._engine_ran} recomputed={','.join(recomputed)} "
            f"sb_settled={self.sb.conditions_settled() if self.sb else None} "
            f"gc={gc_ms:.0f}ms/gen{gc_gen} "
            f"gauges={ls.gauges}\n")

    def restart_profile(self) -> None:
        """(``inc-engine/clear-stats``) profile afresh into FILE.steady."""
        if self.profile is not None:
            import cProfile
            self.profile.disable()
            self._profile_path = os.environ["OVN_CONTROLLER_PY_PROFILE"] + ".steady"
            self.profile = cProfile.Profile()
            self.profile.enable()

    def dump_profile(self, restart: bool = False) -> None:
        """Write the profile; `restart`: then profile afresh into FILE.steady
        (what follows the first complete install)."""
        prof = self.profile
        if prof is None:
            return
        prof.disable()
        prof.dump_stats(self._profile_path)
        if restart:
            import cProfile
            self._profile_path = os.environ["OVN_CONTROLLER_PY_PROFILE"] + ".steady"
            self.profile = cProfile.Profile()
            self.profile.enable()


# Timeline only: [seconds in GC passes since the last line, oldest
# generation collected, start of the pass under way].
_GC_TIME: list[Any] = []


def _gc_timer(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _GC_TIME[2] = time.perf_counter()
    else:
        _GC_TIME[0] += time.perf_counter() - _GC_TIME[2]
        _GC_TIME[1] = max(_GC_TIME[1], info["generation"])


# Cyclic GC during start-up: the agent builds hundreds of thousands of
# long-lived objects (IDL rows, compiled flows, desired/installed tables) and
# makes almost no cyclic garbage; every generation-2 pass rescans all of them.
# Collections stay rare until the first complete install, then the start-up
# heap is frozen (moved out of the collector's view) and the usual rhythm
# resumes for the incremental phase.  No collection before the freeze: at
# seed-500 a full pass over that heap costs ~1 s of CPU (in the iteration of
# the first complete install, delaying the port-up commit) and frees nothing
# (measured: 0 objects; ~700 in all the start-up collections together).
#
# The same for a bulk phase after it: a compute sliced over many iterations
# (a wiped SB refilled by northd arrives after a first complete install of
# the near-empty one, at seed-500 ~1 s after the start, so the whole refill
# ran under the steady thresholds; ablation, wipe mode at load ~8: 13.2 s
# agent CPU and 3.8 s wall in collections without this, 12.1 s and 2.1 s
# with it).
# The daemon calls gc_bulk while a sliced compute is pending and
# gc_after_startup at each complete install, which freezes (again) only when
# the start-up thresholds are in force.
STARTUP_GC_THRESHOLD = (200_000, 50, 1000)
STEADY_GC_THRESHOLD = (20_000, 20, 20)
_GC_STARTUP = [False]     # the start-up thresholds are in force


def gc_startup() -> None:
    gc.set_threshold(*STARTUP_GC_THRESHOLD)
    _GC_STARTUP[0] = True


def gc_bulk() -> None:
    """A sliced compute is under way: start-up thresholds until it is installed."""
    if not _GC_STARTUP[0]:
        gc_startup()


def gc_after_startup() -> None:
    if not _GC_STARTUP[0]:
        return
    _GC_STARTUP[0] = False
    gc.freeze()
    gc.set_threshold(*STEADY_GC_THRESHOLD)


def start_profile() -> Any:
    """``OVN_CONTROLLER_PY_PROFILE=FILE``: cProfile the agent up to the first
    complete install into FILE, the rest (until exit) into FILE.steady (dev aid)."""
    path = os.environ.get("OVN_CONTROLLER_PY_PROFILE")
    if not path:
        return None
    import cProfile
    prof = cProfile.Profile()
    prof.enable()
    return prof
