"""Scaling run: restart-mode cold start of both agents at several seed sizes.

Design note
-----------
For each N of ``--sizes`` (ascending): the seed-N snapshot (built with
northd, or reused from ``--snapshot-cache DIR/seed-N``), one sandbox
replaying it with northd off, then one restart-mode cold start of the C
agent and right after it one of ours (``benchmarks.seed.cold_start``: the
same procedure, completion rule and figures as ``make bench``). One
repetition per agent and size: the run is for the trend, the seed-N
benchmark (``--n N --reps R``) for the ratio at one size.

Output: ``benchmarks/results/scaling.json`` (every run, the table) and
``scaling.png``: time to flows, agent CPU and peak RSS against N, C and ours
in each panel. Nothing is asserted.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.seed import KINDS, RESULTS, _fmt, cold_start, ratio
from benchmarks.snapshot import get_snapshot, open_sandbox, precompile_agent
from integration.sandbox import SandboxError

# (label, key, unit) of the figures drawn against N
PANELS = (("time to flows", "time_to_flows_s", "s"),
          ("agent CPU", "agent_cpu_s", "s"),
          ("peak RSS", "peak_rss_mib", "MiB"))
TABLE_KEYS = ("time_to_flows_s", "agent_cpu_s", "peak_rss_mib", "loop_max_ms", "flow_count")


def parse_sizes(text: str) -> list[int]:
    """"250,500,1000" -> [250, 500, 1000] (sorted, no duplicates, all >= 1)."""
    sizes = sorted({int(part) for part in text.replace(" ", "").split(",") if part})
    if not sizes or sizes[0] < 1:
        raise ValueError(f"--sizes needs positive integers, got {text!r}")
    return sizes


def scaling_rows(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per N: C, ours and ours/C for every TABLE_KEYS figure."""
    rows = []
    for point in points:
        row: dict[str, Any] = {"n": point["n"]}
        for key in TABLE_KEYS:
            c = point["c"].get(key)
            py = point["py"].get(key)
            row[key] = {"c": c, "py": py, "ratio": ratio(py, c)}
        rows.append(row)
    return rows


def format_scaling_table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'N':>6} {'flows':>9} | {'time to flows s: C':>18} {'ours':>7} {'ratio':>6} | "
            f"{'CPU s: C':>8} {'ours':>7} {'ratio':>6} | {'RSS MiB: C':>10} {'ours':>6} "
            f"{'ratio':>6} | {'max iter ms: ours':>17}")
    lines = ["scaling, restart mode, 1 cold start per agent and size (C, then ours)", head]
    for row in rows:
        t, cpu, rss = row["time_to_flows_s"], row["agent_cpu_s"], row["peak_rss_mib"]
        lines.append(
            f"{row['n']:>6} {_fmt(row['flow_count']['c']):>9} | {_fmt(t['c']):>18} "
            f"{_fmt(t['py']):>7} {_fmt(t['ratio']):>6} | {_fmt(cpu['c']):>8} "
            f"{_fmt(cpu['py']):>7} {_fmt(cpu['ratio']):>6} | {_fmt(rss['c']):>10} "
            f"{_fmt(rss['py']):>6} {_fmt(rss['ratio']):>6} | "
            f"{_fmt(row['loop_max_ms']['py']):>17}")
    return "\n".join(lines)


def draw_scaling(points: list[dict[str, Any]], path: Path, note: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [p["n"] for p in points]
    fig, axes = plt.subplots(1, len(PANELS), figsize=(15, 4.6))
    for ax, (label, key, unit) in zip(axes, PANELS):
        for kind, name, style in (("c", "C ovn-controller 23.03.1", "o-"),
                                  ("py", "ovn-controller-py", "s-")):
            values = [p[kind].get(key) for p in points]
            xs = [n for n, v in zip(sizes, values) if v is not None]
            ys = [v for v in values if v is not None]
            ax.plot(xs, ys, style, label=name)
            for x, y in zip(xs, ys):
                ax.annotate(f"{y:.3g}", (x, y), textcoords="offset points", xytext=(3, 4),
                            fontsize=7)
        ax.set_title(label)
        ax.set_xlabel("seed size N (routers)")
        ax.set_ylabel(unit)
        ax.set_xticks(sizes)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"cold start (restart mode) against N, {note}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_results(points: list[dict[str, Any]], sizes: list[int], started: float,
                  load_start: tuple[float, float, float], tag: str,
                  bytecode: str) -> dict[str, Any]:
    """JSON + PNG of the sizes done so far (rewritten after every size)."""
    rows = scaling_rows(points)
    table = format_scaling_table(rows)
    result = {
        "benchmark": "scaling", "sizes": [p["n"] for p in points], "run_sizes": sizes,
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "duration_s": round(time.time() - started, 1),
        "host": {"cpus": os.cpu_count(), "python": platform.python_version(),
                 "kernel": platform.release(), "loadavg_start": load_start,
                 "loadavg_end": os.getloadavg()},
        "bytecode": bytecode, "method": __doc__, "rows": rows, "points": points, "table": table,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "scaling" + (f"-{tag}" if tag else "")
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    done = ",".join(str(p["n"]) for p in points)
    draw_scaling(points, RESULTS / f"{name}.png", f"sizes {done}, 1 rep each")
    return result


def merged_points(done: list[dict[str, Any]],
                  previous: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Points of this run plus those of an earlier one for other sizes, by N."""
    sizes = {p["n"] for p in done}
    return sorted(done + [p for p in previous if p["n"] not in sizes], key=lambda p: p["n"])


def run_scaling(sizes: list[int], cache: Path | None, tag: str = "",
                merge: Path | None = None, timeout: float = 1800.0) -> dict[str, Any]:
    """`merge`: an earlier scaling JSON whose other sizes join this chart."""
    started = time.time()
    load_start = os.getloadavg()
    bytecode = precompile_agent()
    previous = json.loads(merge.read_text())["points"] if merge is not None else []
    work = Path(tempfile.mkdtemp(prefix="ovnpy-bench-scaling-"))
    points: list[dict[str, Any]] = []
    result: dict[str, Any] = {}
    try:
        for n in sizes:
            files, source = get_snapshot(n, None, cache, work)
            box = open_sandbox(files, n, northd=False)
            point: dict[str, Any] = {"n": n, "snapshot": source,
                                     "loadavg": list(os.getloadavg()),
                                     "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                  time.gmtime())}
            try:
                expected: int | None = None
                for kind in KINDS:
                    try:
                        res = cold_start(box, kind, expected, timeout=timeout)
                    except SandboxError as exc:     # one size failing ends only that size
                        point[kind] = {"error": str(exc)[:2000]}
                        print(f"scaling N={n} {kind:>2}: FAILED {str(exc)[:200]}", flush=True)
                        continue
                    point[kind] = res
                    expected = res["flow_count"] if expected is None else expected
                    print(f"scaling N={n} {kind:>2}: flows {res['time_to_flows_s']:.2f} s "
                          f"({res['flow_count']} flows), agent CPU {res['agent_cpu_s']:.2f} s, "
                          f"RSS {res['peak_rss_mib']:.0f} MiB", flush=True)
            finally:
                box.stop()
            points.append(point)
            result = write_results(merged_points(points, previous), sizes, started, load_start,
                                   tag, bytecode)
            if cache is None:
                shutil.rmtree(work / f"seed-{n}", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(result.get("table", ""), flush=True)
    name = "scaling" + (f"-{tag}" if tag else "")
    print(f"wrote {RESULTS / name}.json and .png", flush=True)
    return result
