"""`make demo`: OVN with our agent in a private sandbox, live, then parity with C.

1. A sandbox with OVS (dummy datapath), NB/SB and a real ovn-northd; the
   seed-N topology (default 50 routers, 100 bound VIFs).
2. Our agent (``python -m controller``) starts; while it works a live
   progress line shows flows desired / installed / in flight and main-loop
   iterations, from ``loop-stats --json`` on its control socket polled 4x/s
   (rewritten in place with ``\\r`` on a terminal, plain lines otherwise),
   until the nb_cfg handshake (``ovn-nbctl --wait=hv sync``) completes.
3. Its ``loop-stats`` report.
4. Parity: the settled NB/SB/conf are saved; the C ovn-controller 23.03.1 runs
   on that snapshot in a second sandbox (northd off, so the SB is identical);
   both br-int dumps are normalised and compared (integration/differential.py)
   and one summary line is printed (the first differences if any).

Everything is torn down at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TextIO

from integration.differential import (
    AgentDump, compare_dumps, dump_agent, learnt_rows, lflows_by_cookie)
from integration.sandbox import Sandbox, SandboxError
from integration.topologies import build_seed

POLL_S = 0.25


def _count(sb: Sandbox, table: str) -> int:
    return len(sb.sbctl("--bare", "--columns=_uuid", "list", table).split())


class ProgressLine:
    """One status line: rewritten in place on a TTY, else a line per change (<= 1/s)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.last_text = ""
        self.last_plain = 0.0
        self.width = 0

    def show(self, text: str) -> None:
        if self.tty:
            pad = max(0, self.width - len(text))
            self.out.write("\r" + text + " " * pad)
            self.out.flush()
            self.width = len(text)
        elif text != self.last_text and time.monotonic() - self.last_plain >= 1.0:
            self.out.write(text + "\n")
            self.out.flush()
            self.last_plain = time.monotonic()
        self.last_text = text

    def done(self, text: str) -> None:
        if self.tty:
            self.show(text)
            self.out.write("\n")
        else:
            self.out.write(text + "\n")
        self.out.flush()


def _progress_text(elapsed: float, stats: dict[str, object] | None, note: str = "") -> str:
    if stats is None:
        return f"   [{elapsed:6.1f}s] starting...{note}"
    return (f"   [{elapsed:6.1f}s] flows desired {stats.get('flows_desired', 0):>7}  "
            f"installed {stats.get('flows_installed', 0):>7}  "
            f"in flight {stats.get('flows_in_flight', 0):>6}  "
            f"loop iterations {stats.get('iterations', 0):>5}{note}")


def _loop_stats(sb: Sandbox) -> dict[str, object] | None:
    try:
        out = sb.appctl("controller", "loop-stats", "--json", timeout=5)
        data = json.loads(out)
        return data if isinstance(data, dict) else None
    except (SandboxError, ValueError):
        return None


def run_ours_live(sb: Sandbox, timeout: float, out: TextIO) -> float:
    """Start our agent and show its progress until hv sync; returns seconds."""
    t0 = time.monotonic()
    sb.start_controller("py")
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            sb.wait_hv_sync(timeout=timeout)
        except BaseException as exc:       # reported by the main thread
            errors.append(exc)

    waiter = threading.Thread(target=wait, name="hv-sync", daemon=True)
    waiter.start()
    line = ProgressLine(out)
    stats: dict[str, object] | None = None
    while waiter.is_alive():
        stats = _loop_stats(sb) or stats
        line.show(_progress_text(time.monotonic() - t0, stats))
        waiter.join(POLL_S)
    if errors:
        line.done(_progress_text(time.monotonic() - t0, stats, "  FAILED"))
        raise errors[0]
    stats = _loop_stats(sb) or stats
    elapsed = time.monotonic() - t0
    line.done(_progress_text(elapsed, stats, "  in sync"))
    return elapsed


def parity_with_c(sb: Sandbox, ours: AgentDump, timeout: float, name: str) -> str:
    """Replay sb's saved databases under the C agent and compare; the report."""
    with tempfile.TemporaryDirectory(prefix="ovnpy-demo-snap-") as snap:
        files = sb.backup(Path(snap))
        with Sandbox.from_snapshot(files["nb"], files["sb"], files["conf"], northd=False) as c_box:
            t0 = time.monotonic()
            c_box.start_controller("c")
            c_box.wait_hv_sync(timeout=timeout)
            theirs = dump_agent(c_box, "c", time.monotonic() - t0)
            theirs.origins = lflows_by_cookie(c_box)
            theirs.learnt = learnt_rows(c_box)
    result = compare_dumps(name, ours, theirs)
    text = "== parity with the C ovn-controller: " + result.summary()
    if not result.ok:
        text += "\n" + result.report()
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=50, help="seed-N routers (default 50)")
    parser.add_argument("--timeout", type=float, default=150.0,
                        help="seconds to wait for each agent's hv sync")
    parser.add_argument("--keep", action="store_true", help="keep the run directory")
    parser.add_argument("--no-parity", action="store_true", help="skip the C comparison")
    args = parser.parse_args(argv)

    out = sys.stdout
    start = time.monotonic()
    rc = 0
    with Sandbox(northd=True, keep=args.keep) as sb:
        print(f"== sandbox up in {time.monotonic() - start:.2f}s: {sb.run}")
        print(f"   daemons: {', '.join(f'{r}={p}' for r, p in sb.pids().items())}")
        t0 = time.monotonic()
        build_seed(sb, args.size)
        print(f"== seed-{args.size} built in {time.monotonic() - t0:.2f}s: "
              f"{_count(sb, 'Logical_Flow')} logical flows, "
              f"{_count(sb, 'Port_Binding')} port bindings, "
              f"{_count(sb, 'Datapath_Binding')} datapaths")
        print("\n== starting ovn-controller-py (ours)")
        try:
            settle = run_ours_live(sb, args.timeout, out)
            ours = dump_agent(sb, "py", settle)
            ours.origins = lflows_by_cookie(sb)
            ours.learnt = learnt_rows(sb)
            print(f"   br-int: {len(ours.canonical.flows)} flows, "
                  f"{len(ours.canonical.groups)} groups, {len(ours.canonical.meters)} meters")
            print("\n== loop-stats")
            print("\n".join("   " + ln for ln in
                            sb.appctl("controller", "loop-stats").rstrip().splitlines()))
            if not args.no_parity:
                print()
                print(parity_with_c(sb, ours, args.timeout, f"seed-{args.size}"))
        except SandboxError as exc:
            print(f"\n!! {exc}")
            rc = 1
        if args.keep:
            print(f"   run directory kept: {sb.run}")
    print(f"\n== torn down; total {time.monotonic() - start:.2f}s")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
