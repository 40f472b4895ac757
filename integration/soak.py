"""Soak: random churn at a bounded rate on seed-50, RSS curve of the agent.

Usage::

    python -m integration.soak [--minutes 60] [--seed-size 50] [--rate 2]
                               [--agent py|c] [--sample 60] [--csv FILE]

Design note
-----------
One sandbox with northd and the seed-N topology (default 50) runs the agent.
The churn is a loop of *cycles*: each cycle makes a few random, reversible NB
changes (an ACL added to a seed switch, a new logical port bound to a new VIF
on br-int, an address set grown, a port's addresses rewritten, a load balancer
on a switch), at most ``--rate`` changes per second, then undoes every one of
them and waits for the nb_cfg handshake.  After each cycle the topology is
back to the seed exactly, so the agent's state should be the same size as at
the start: what RSS gains beyond noise is a leak.

The agent's RSS (``VmRSS`` of ``/proc/PID/status``) is read at the end of
every cycle; a line is printed every ``--sample`` seconds (elapsed minutes,
cycles, changes, RSS kB, flow count), and a summary at the end: the first
and last ten-minute medians (or the first and last quarter, for a shorter
run) and their difference.  Nothing is asserted: the curve is for a person
to read (the issue asks for it in the closing note).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from dataclasses import dataclass, field

from integration.sandbox import Sandbox
from integration.topologies import build_seed


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


@dataclass
class Churn:
    """Random reversible NB changes on seed-N; `undo` restores the seed."""

    box: Sandbox
    n: int
    rng: random.Random
    serial: int = 0
    undo_args: list[list[str]] = field(default_factory=list)
    vifs: list[str] = field(default_factory=list)

    def one(self) -> None:
        self.serial += 1
        k = self.serial
        i = self.rng.randint(1, self.n)
        ls = f"ls{i}"
        kind = self.rng.choice(("acl", "port", "aset", "addr", "lb"))
        if kind == "acl":
            match = f"ip4.src == 10.{200 + k % 50}.{k % 256}.0/24 && tcp.dst == {1024 + k % 60000}"
            self.box.nbctl("--no-wait", "acl-add", ls, "to-lport", str(1100 + k % 100), match,
                           self.rng.choice(("drop", "allow", "allow-related")))
            self.undo_args.append(["acl-del", ls, "to-lport", str(1100 + k % 100), match])
        elif kind == "port":
            lsp, vif = f"soak-p{k}", f"sk{k % 100000}"
            self.box.nbctl("--no-wait", "lsp-add", ls, lsp, "--", "lsp-set-addresses", lsp,
                           f"0a:03:00:00:{k // 256 % 256:02x}:{k % 256:02x} 10.{i // 256}.{i % 256}.{100 + k % 100}")
            self.box.bind_vif(vif, lsp)
            self.vifs.append(vif)
            self.undo_args.append(["lsp-del", lsp])
        elif kind == "aset":
            name = f"soak_as{k}"
            ips = ",".join(f'"192.0.{k % 256}.{j}"' for j in range(1, self.rng.randint(2, 40)))
            self.box.nbctl("--no-wait", "create", "Address_Set", f"name={name}",
                           f"addresses=[{ips}]", "--", "acl-add", ls, "from-lport", "1200",
                           f"ip4.dst == ${name}", "drop")
            self.undo_args.append(["acl-del", ls, "from-lport", "1200", f"ip4.dst == ${name}",
                                   "--", "destroy", "Address_Set", f"{self._uuid(name)}"])
        elif kind == "addr":
            lsp = f"ls{i}-p2"
            self.box.nbctl("--no-wait", "lsp-set-addresses", lsp,
                           f"0a:02:00:{i // 256:02x}:{i % 256:02x}:02 10.{i // 256}.{i % 256}.12 "
                           f"10.{i // 256}.{i % 256}.{50 + k % 50}")
            self.undo_args.append(["lsp-set-addresses", lsp,
                                   f"0a:02:00:{i // 256:02x}:{i % 256:02x}:02 "
                                   f"10.{i // 256}.{i % 256}.12"])
        else:
            lb = f"soak-lb{k}"
            self.box.nbctl("--no-wait", "lb-add", lb, f"10.250.{k % 256}.1:80",
                           f"10.{i // 256}.{i % 256}.11:8080", "tcp", "--", "ls-lb-add", ls, lb)
            self.undo_args.append(["lb-del", lb])

    def _uuid(self, aset: str) -> str:
        return self.box.nbctl("--bare", "--columns=_uuid", "find", "Address_Set",
                              f"name={aset}").strip()

    def undo(self) -> None:
        for args in reversed(self.undo_args):
            self.box.nbctl("--no-wait", *args)
        self.undo_args.clear()
        for vif in self.vifs:
            self.box.unbind_vif(vif)
        self.vifs.clear()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--seed-size", type=int, default=50)
    ap.add_argument("--rate", type=float, default=2.0, help="max NB changes per second")
    ap.add_argument("--per-cycle", type=int, default=10, help="changes per cycle")
    ap.add_argument("--agent", choices=("py", "c"), default="py")
    ap.add_argument("--sample", type=float, default=60.0, help="seconds between printed lines")
    ap.add_argument("--rng-seed", type=int, default=12)
    args = ap.parse_args(argv)

    with Sandbox(northd=True) as box:
        build_seed(box, args.seed_size)
        box.start_controller(args.agent)
        box.wait_hv_sync(timeout=300)
        pid = box.daemons["controller"].pid
        churn = Churn(box, args.seed_size, random.Random(args.rng_seed))
        base_flows = box.flow_count()
        t0 = time.monotonic()
        end = t0 + args.minutes * 60
        samples: list[tuple[float, int]] = [(0.0, rss_kb(pid))]
        print(f"soak: {args.agent} agent, seed-{args.seed_size}, {base_flows} flows, "
              f"rate <= {args.rate}/s, {args.minutes:.0f} min; RSS at start "
              f"{samples[0][1]} kB", flush=True)
        print("minute  cycles  changes  rss_kB  flows", flush=True)
        next_print = t0 + args.sample
        cycles = 0
        gap = 1.0 / args.rate
        while time.monotonic() < end:
            for _ in range(args.per_cycle):
                t = time.monotonic()
                churn.one()
                time.sleep(max(0.0, gap - (time.monotonic() - t)))
            box.wait_hv_sync(timeout=300, min_flows=0)
            churn.undo()
            box.wait_hv_sync(timeout=300, min_flows=0)
            cycles += 1
            if not box.controller_alive():
                print("agent died:\n" + box.log_tail(), flush=True)
                return 1
            now = time.monotonic()
            samples.append((now - t0, rss_kb(pid)))
            if now >= next_print:
                next_print += args.sample
                print(f"{(now - t0) / 60:6.1f}  {cycles:6d}  {churn.serial:7d}  "
                      f"{samples[-1][1]:6d}  {box.flow_count():5d}", flush=True)
        dur = time.monotonic() - t0
        window = min(600.0, dur / 4)
        first = [r for t, r in samples if t <= window]
        last = [r for t, r in samples if t >= dur - window]
        m1, m2 = statistics.median(first), statistics.median(last)
        print(f"soak done: {dur / 60:.1f} min, {cycles} cycles, {churn.serial} changes; "
              f"flows {base_flows} -> {box.flow_count()}; RSS median of the first "
              f"{window / 60:.0f} min {m1:.0f} kB, of the last {m2:.0f} kB "
              f"({m2 - m1:+.0f} kB, {100 * (m2 - m1) / m1:+.1f}%); min {min(r for _, r in samples)} "
              f"max {max(r for _, r in samples)} kB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
