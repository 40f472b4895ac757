"""Coverage counters with OVS ``coverage/show`` output (lib/coverage.c).

Design note
-----------
Counters are plain ints bumped on hot paths (``COVERAGE.inc("lflow_run")``
costs one dict update).  :meth:`Coverage.run` is called from the main loop;
every 5 s it stores the interval delta in a 12-slot ring (last minute) and
every minute rolls that into a 60-slot ring (last hour), which give the three
rates OVS prints.  Names follow the C agent (``lflow_run``,
``physical_run``, ``long_poll_interval``, ...), because tests and exporters
read them.
"""

from __future__ import annotations

import time

RUN_INTERVAL_MS = 5000
MIN_AVG_LEN = 60000 // RUN_INTERVAL_MS
HR_AVG_LEN = 60


class _Counter:
    __slots__ = ("total", "last_total", "mins", "hrs")

    def __init__(self) -> None:
        self.total = 0
        self.last_total = 0
        self.mins = [0] * MIN_AVG_LEN
        self.hrs = [0] * HR_AVG_LEN


class Coverage:
    def __init__(self, names: tuple[str, ...] = ()) -> None:
        self.counters: dict[str, _Counter] = {}
        for n in names:
            self.counters[n] = _Counter()
        self._next_run = time.monotonic() * 1000 + RUN_INTERVAL_MS
        self._idx = 0

    def inc(self, name: str, n: int = 1) -> None:
        c = self.counters.get(name)
        if c is None:
            c = self.counters[name] = _Counter()
        c.total += n

    def read(self, name: str) -> int | None:
        c = self.counters.get(name)
        return c.total if c is not None else None

    def run(self, now_ms: float | None = None) -> None:
        now = now_ms if now_ms is not None else time.monotonic() * 1000
        while now >= self._next_run:
            slot = self._idx % MIN_AVG_LEN
            for c in list(self.counters.values()):   # the pinctrl thread may add one
                c.mins[slot] = c.total - c.last_total
                c.last_total = c.total
                if slot == MIN_AVG_LEN - 1:
                    c.hrs[(self._idx // MIN_AVG_LEN) % HR_AVG_LEN] = sum(c.mins)
            self._idx += 1
            self._next_run += RUN_INTERVAL_MS

    def show(self) -> str:
        lines = ["Event coverage, avg rate over last: 5 seconds, last minute, last hour,  "
                 f"hash={self._hash():08x}:"]
        never = 0
        last = (self._idx - 1) % MIN_AVG_LEN
        for name in sorted(self.counters):
            c = self.counters[name]
            if not c.total:
                never += 1
                continue
            lines.append(f"{name:<24s} {c.mins[last] * 1000.0 / RUN_INTERVAL_MS:5.1f}/sec "
                         f"{sum(c.mins) / 60.0:9.3f}/sec {sum(c.hrs) / 3600.0:13.4f}/sec"
                         f"   total: {c.total}")
        lines.append(f"{never} events never hit")
        return "\n".join(lines) + "\n"

    def _hash(self) -> int:
        h = 0
        for name in sorted(n for n, c in list(self.counters.items()) if c.total):
            for ch in name.encode():
                h = (h * 31 + ch) & 0xFFFFFFFF
        return h


AGENT_COUNTERS = ("lflow_run", "physical_run", "long_poll_interval", "txn_success",
                  "txn_try_again", "txn_error", "txn_unchanged", "txn_incomplete",
                  "ct_zone_commit", "binding_recompute", "engine_recompute",
                  "lflow_parse_error",
                  # pinctrl (controller/pinctrl/), the six counters of 23.03.1 pinctrl.c
                  "pinctrl_total_pin_pkts", "pinctrl_notify_main_thread",
                  "pinctrl_drop_put_mac_binding", "pinctrl_drop_buffered_packets_map",
                  "pinctrl_drop_controller_event", "pinctrl_drop_put_vport_binding")

COVERAGE = Coverage(AGENT_COUNTERS)
