"""Named stopwatches with OVS ``stopwatch/show`` output (lib/stopwatch.c).

Design note
-----------
Each :class:`Stopwatch` keeps the sample count, min/max, a 95th percentile
(P-square estimator, exact sort below 50 samples, like OVS) and two moving
averages (alpha 0.5 "short term", 0.01 "long term").  Samples are in ms.
``ovn-kubernetes`` parses this text, so the format is OVS's byte for byte.
"""

from __future__ import annotations

import time

P = 0.95
MARKERS = 5
P_SQUARE_MIN = 50


class Stopwatch:
    __slots__ = ("name", "n", "max", "min", "short", "long", "q", "npos", "nprime", "dn",
                 "samples", "percentile", "_start")

    def __init__(self, name: str) -> None:
        self.name = name
        self.reset()

    def reset(self) -> None:
        self.n = 0
        self.max = 0
        self.min = 0
        self.short = 0.0
        self.long = 0.0
        self.q = [0.0] * MARKERS
        self.npos = [0.0] * MARKERS
        self.nprime = [0.0] * MARKERS
        self.dn = [0.0] * MARKERS
        self.samples: list[int] = []
        self.percentile = 0.0
        self._start: float | None = None

    def start(self) -> None:
        self._start = time.monotonic()

    def stop(self) -> None:
        if self._start is None:
            return
        ms = int((time.monotonic() - self._start) * 1000)
        self._start = None
        self.add_sample(ms)

    def add_sample(self, ms: int) -> None:
        self.n += 1
        if self.n == 1 or ms > self.max:
            self.max = ms
        if self.n == 1 or ms < self.min:
            self.min = ms
        self._percentile(ms)
        self.short = ms * 0.5 + 0.5 * self.short
        self.long = ms * 0.01 + 0.99 * self.long

    def _percentile(self, x: int) -> None:
        n = self.n
        if n < P_SQUARE_MIN:
            self.samples.append(x)
        if n <= MARKERS:
            self.q[n - 1] = float(x)
            self.q[:n] = sorted(self.q[:n])
            if n == MARKERS:
                self.npos = [0.0, 1.0, 2.0, 3.0, 4.0]
                self.nprime = [0.0, 2 * P, 4 * P, 2 + 2 * P, 4.0]
                self.dn = [0.0, P / 2, P, (1 + P) / 2, 1.0]
            # OVS indexes q[(int) P * n], i.e. q[0] (cast binds first).
            self.percentile = self.q[0]
            return
        q, npos = self.q, self.npos
        if x < q[0]:
            k = 0
            q[0] = float(x)
        elif x < q[1]:
            k = 0
        elif x < q[2]:
            k = 1
        elif x < q[3]:
            k = 2
        elif x <= q[4]:
            k = 3
        else:
            k = 3
            q[4] = float(x)
        for i in range(k + 1, MARKERS):
            npos[i] += 1
        for i in range(MARKERS):
            self.nprime[i] += self.dn[i]
        for i in range(1, MARKERS - 1):
            d = self.nprime[i] - npos[i]
            if (d >= 1 and npos[i + 1] - npos[i] > 1) or (d <= -1 and npos[i - 1] - npos[i] < -1):
                d = 1.0 if d >= 0 else -1.0
                a = d / (npos[i + 1] - npos[i - 1])
                b = (npos[i] - npos[i - 1] + d) * (q[i + 1] - q[i]) / (npos[i + 1] - npos[i])
                c = (npos[i + 1] - npos[i] - d) * (q[i] - q[i - 1]) / (npos[i] - npos[i - 1])
                cand = q[i] + a * (b + c)
                if q[i - 1] < cand < q[i + 1]:
                    q[i] = cand
                else:
                    j = i + int(d)
                    q[i] = q[i] + d * (q[j] - q[i]) / (npos[j] - npos[i])
                npos[i] += d
        if n < P_SQUARE_MIN:
            self.percentile = float(sorted(self.samples)[int(P * n)])
        else:
            self.percentile = q[2]

    def text(self) -> str:
        return (f"Statistics for '{self.name}'\n"
                f"  Total samples: {self.n}\n"
                f"  Maximum: {self.max} msec\n"
                f"  Minimum: {self.min} msec\n"
                f"  95th percentile: {self.percentile:f} msec\n"
                f"  Short term average: {self.short:f} msec\n"
                f"  Long term average: {self.long:f} msec\n")


class Stopwatches:
    """The registry behind ``stopwatch/show`` and ``stopwatch/reset``."""

    def __init__(self, names: tuple[str, ...] = ()) -> None:
        self.by_name: dict[str, Stopwatch] = {}
        for n in names:
            self.create(n)

    def create(self, name: str) -> Stopwatch:
        sw = self.by_name.get(name)
        if sw is None:
            sw = self.by_name[name] = Stopwatch(name)
        return sw

    def __getitem__(self, name: str) -> Stopwatch:
        return self.by_name[name]

    def show(self, name: str | None = None) -> str | None:
        """Text of ``stopwatch/show [NAME]``; None when NAME is unknown."""
        if name is not None:
            sw = self.by_name.get(name)
            return sw.text() if sw is not None else None
        return "".join(sw.text() for sw in self.by_name.values())

    def reset(self, name: str | None = None) -> None:
        for n, sw in self.by_name.items():
            if name is None or n == name:
                sw.reset()


# The stopwatches ovn-controller 23.03 registers (ovn-kubernetes scrapes these).
AGENT_STOPWATCHES = ("flow-generation", "flow-installation", "pinctrl-run", "patch-run",
                     "ct-zone-commit", "if-status-mgr-run", "if-status-mgr-update",
                     "ofctrl-seqno-run", "bfd-run", "vif-plug-run")
