"""Main-loop timing statistics behind ``loop-stats [--json]``.

Design note
-----------
The daemon brackets every iteration with :meth:`LoopStats.begin` /
:meth:`LoopStats.end` and each stage inside it with :meth:`stage_done`
(elapsed since the previous mark).  We keep the last 1024 iteration times
for the percentile, running totals for the averages, the time from process
start to the first complete flow installation, and gauges the daemon fills
(flows desired/installed/in flight).  An iteration that runs for 1 s or more
logs OVS's ``Unreasonably long ...ms poll interval`` warning and bumps the
``long_poll_interval`` coverage counter.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from typing import Any

import structlog

from controller.diag.coverage import COVERAGE

log = structlog.get_logger("timeval")

LONG_POLL_MS = 1000


class LoopStats:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.iterations = 0
        self.last_ms = 0.0
        self.total_ms = 0.0
        self.max_ms = 0.0
        self.recent: deque[float] = deque(maxlen=1024)
        self.stages_last: dict[str, float] = {}
        self.stages_total: dict[str, float] = {}
        self.first_install_ms: float | None = None
        self.gauges: dict[str, int] = {"flows_desired": 0, "flows_installed": 0,
                                       "flows_in_flight": 0}
        self._t0 = 0.0
        self._mark = 0.0
        self._cpu0 = (0.0, 0.0)

    def begin(self) -> None:
        self._t0 = self._mark = time.monotonic()
        t = os.times()
        self._cpu0 = (t.user, t.system)

    def cpu_ms(self) -> float:
        """CPU time of the process since :meth:`begin`."""
        t = os.times()
        return (t.user - self._cpu0[0] + t.system - self._cpu0[1]) * 1000

    def stage_done(self, name: str) -> None:
        now = time.monotonic()
        ms = (now - self._mark) * 1000
        self._mark = now
        self.stages_last[name] = ms
        self.stages_total[name] = self.stages_total.get(name, 0.0) + ms

    def end(self) -> float:
        ms = (time.monotonic() - self._t0) * 1000
        self.iterations += 1
        self.last_ms = ms
        self.total_ms += ms
        self.max_ms = max(self.max_ms, ms)
        self.recent.append(ms)
        if ms >= LONG_POLL_MS:
            t = os.times()
            user = int((t.user - self._cpu0[0]) * 1000)
            system = int((t.system - self._cpu0[1]) * 1000)
            log.warning(f"Unreasonably long {int(ms)}ms poll interval "
                        f"({user}ms user, {system}ms system)")
            COVERAGE.inc("long_poll_interval")
        return ms

    def first_install_done(self) -> None:
        if self.first_install_ms is None:
            self.first_install_ms = (time.monotonic() - self.started) * 1000

    def p95(self) -> float:
        if not self.recent:
            return 0.0
        s = sorted(self.recent)
        return s[min(len(s) - 1, int(0.95 * len(s)))]

    def as_dict(self) -> dict[str, Any]:
        n = self.iterations
        return {
            "iterations": n,
            "last_ms": round(self.last_ms, 3),
            "avg_ms": round(self.total_ms / n, 3) if n else 0.0,
            "p95_ms": round(self.p95(), 3),
            "max_ms": round(self.max_ms, 3),
            "first_install_ms": (round(self.first_install_ms, 3)
                                 if self.first_install_ms is not None else None),
            "uptime_s": round(time.monotonic() - self.started, 3),
            "stages_last_ms": {k: round(v, 3) for k, v in self.stages_last.items()},
            "stages_avg_ms": {k: round(v / n, 3) if n else 0.0
                              for k, v in self.stages_total.items()},
            **self.gauges,
        }

    def text(self) -> str:
        d = self.as_dict()
        fi = d["first_install_ms"]
        lines = [
            f"iterations: {d['iterations']}",
            f"iteration last/avg/p95/max ms: {d['last_ms']:.3f} / {d['avg_ms']:.3f} / "
            f"{d['p95_ms']:.3f} / {d['max_ms']:.3f}",
            "time to first complete install ms: " + (f"{fi:.3f}" if fi is not None else "n/a"),
            f"flows desired: {d['flows_desired']}",
            f"flows installed: {d['flows_installed']}",
            f"flows in flight: {d['flows_in_flight']}",
            "stages (last ms / avg ms):",
        ]
        for k in self.stages_last:
            lines.append(f"  {k}: {d['stages_last_ms'][k]:.3f} / {d['stages_avg_ms'][k]:.3f}")
        return "\n".join(lines) + "\n"

    def json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True) + "\n"
