"""Cold start in "wipe" mode (seed 001's scenario): both agents, one table.

Design note
-----------
Recipe §7 "wipe" mode. One sandbox replays a seed-N snapshot (NB and
conf.db; the snapshot's SB is only loaded to be wiped). Per repetition and
agent (C first, then ours, alternating): stop the agent and ovn-northd,
empty the SB (one ``ovsdb-client transact`` that deletes every row of every
table, then ``ovsdb-server/compact`` so the file is small again and
``ovn-sbctl init``), ``del-flows`` / ``del-groups`` / ``del-meters`` on
br-int, sleep 1 s, then t0: ovn-northd (in a thread) and the agent are
started at the same time. The agent connects to an empty SB, registers its
chassis and sees the SB fill as northd writes it. We poll every 0.25 s:
flow count, Chassis_Private row; once the row exists ``ovn-nbctl --wait=hv
sync`` runs in the background (it returns when the agent has installed the
flows of the SB northd wrote). The run ends when it has returned and the
flow count is non-zero and has been unchanged for 3 s. *Time to flows* =
the later of "final count first seen" and "--wait=hv returned".

Loop figures are read "at completion": every time a poll after the
``--wait=hv`` return sees a new flow count, the figures are read again, so
the last reading is the one at the first poll that saw the final count
(idle iterations of the 3 s stability wait are not in it).

* ours: ``loop-stats --json`` (iterations since process start, average and
  maximum iteration), plus the ``flow-generation`` stopwatch.
* C (23.03.1 has no main-loop counter or iteration stopwatch): the
  ``flow-generation`` stopwatch, which brackets ``engine_run`` once per
  main-loop iteration that runs the engine (samples = engine runs, a lower
  bound of the iterations; max = longest engine run, a lower bound of the
  longest iteration), and the longest "Unreasonably long N ms poll interval"
  of its log (logged only for iterations >= 1 s). The maximum iteration we
  report for C is the larger of the two.
* both: voluntary context switches of the main thread
  (``/proc/PID/task/PID/status``): each iteration that blocks in poll()
  adds one, so it approximates the number of iterations that waited (other
  blocking syscalls add some too). It is printed for both agents so that it
  can be compared with our exact iteration count.

CPU = utime+stime (/proc/PID/stat), peak RSS = VmHWM, both at the end.
Nothing is asserted; the results go to ``benchmarks/results/wipe-N.json``.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.seed import (KINDS, POLL_S, RESULTS, STABLE_S, _fmt, agent_log, clear_br_int,
                             log_since, log_size, long_poll_max_ms, median, proc_cpu_s,
                             proc_hwm_mib, ratio, recompute_reasons, stopwatch)
from benchmarks.snapshot import get_snapshot, open_sandbox, precompile_agent
from integration.sandbox import Sandbox, SandboxError, find_binary

SB_DB = "OVN_Southbound"


def main_thread_vcsw(pid: int) -> int | None:
    """voluntary_ctxt_switches of the main thread of `pid`."""
    try:
        with open(f"/proc/{pid}/task/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def wipe_sb(box: Sandbox) -> None:
    """Delete every row of the SB, compact the file, `ovn-sbctl init`."""
    client = find_binary("ovsdb-client")
    out = box.cmd([client, "--format=json", "list-tables", box.sb_sock, SB_DB])
    names = [row[0] for row in json.loads(out)["data"]]
    ops: list[Any] = [SB_DB] + [{"op": "delete", "table": t, "where": []} for t in names]
    box.cmd([client, "transact", box.sb_sock, json.dumps(ops)], timeout=300)
    box.appctl("sb", "ovsdb-server/compact", timeout=300)
    box.sbctl("init")


def completion_figures(box: Sandbox, kind: str, pid: int, log_text: str) -> dict[str, Any]:
    """Loop figures of the running agent (see the module docstring)."""
    gen = stopwatch(box, "flow-generation")
    fig: dict[str, Any] = {
        "flow_generation": gen, "long_poll_max_ms": long_poll_max_ms(log_text),
        "main_thread_vcsw": main_thread_vcsw(pid),
        "engine_runs": gen.get("samples"), "engine_avg_ms": gen.get("avg_ms"),
        "engine_max_ms": gen.get("max_ms"),
    }
    if kind == "py":
        stats = json.loads(box.appctl("controller", "loop-stats", "--json"))
        fig.update(loop_iterations=stats["iterations"], loop_avg_ms=stats["avg_ms"],
                   loop_max_ms=stats["max_ms"], loop_p95_ms=stats["p95_ms"],
                   first_install_ms=stats["first_install_ms"])
    else:
        candidates = [v for v in (gen.get("max_ms"), fig["long_poll_max_ms"]) if v]
        fig.update(loop_iterations=None, loop_avg_ms=None,
                   loop_max_ms=max(candidates) if candidates else None)
    return fig


def wipe_start(box: Sandbox, kind: str, expected: int | None,
               timeout: float = 900.0) -> dict[str, Any]:
    """One wipe-mode cold start of `kind`; figures from t0 = agent + northd start."""
    box.stop_controller()
    box.stop_daemon("northd")
    wipe_sb(box)
    clear_br_int(box)
    time.sleep(1.0)
    vswitchd = box.daemons["vswitchd"].pid
    vs_cpu0 = proc_cpu_s(vswitchd)
    log_path = agent_log(box, kind)
    log_offset = log_size(log_path)
    northd_err: list[BaseException] = []

    def start_northd() -> None:
        try:
            box.start_northd()
        except BaseException as exc:    # reported below, after the agent started
            northd_err.append(exc)

    t0 = time.monotonic()
    starter = threading.Thread(target=start_northd)
    starter.start()
    daemon = box.start_controller(kind)
    starter.join()
    if northd_err:
        raise SandboxError(f"ovn-northd did not start: {northd_err[0]}")
    chassis_seen: float | None = None
    waiter: subprocess.Popen[bytes] | None = None
    acked: float | None = None
    count, count_since = -1, 0.0
    figures: dict[str, Any] = {}
    try:
        while True:
            elapsed = time.monotonic() - t0
            if elapsed > timeout:
                raise SandboxError(f"{kind}: no stable flows after {timeout:.0f}s "
                                   f"(count {count})\n{box.log_tail()}")
            if not box.controller_alive():
                raise SandboxError(f"{kind} agent died\n{box.log_tail()}")
            current = box.flow_count()
            changed = current != count
            if changed:
                count, count_since = current, time.monotonic() - t0
            if chassis_seen is None and box.chassis_private_nb_cfg() is not None:
                chassis_seen = time.monotonic() - t0
                waiter = subprocess.Popen(["ovn-nbctl", "--wait=hv", "sync"], env=box.env,
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE)
            if waiter is not None and acked is None and waiter.poll() is not None:
                if waiter.returncode != 0:
                    err = waiter.stderr.read().decode() if waiter.stderr else ""
                    raise SandboxError(f"{kind}: ovn-nbctl --wait=hv sync failed: {err}")
                acked = time.monotonic() - t0
                changed = True
            if acked is not None and changed and count > 0:
                figures = completion_figures(box, kind, daemon.pid,
                                             log_since(log_path, log_offset))
            elapsed = time.monotonic() - t0
            if (acked is not None and count > 0 and elapsed - count_since >= STABLE_S
                    and (expected is None or count == expected
                         or elapsed - count_since >= 4 * STABLE_S)):
                break
            time.sleep(POLL_S)
    finally:
        if waiter is not None and waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    assert acked is not None
    log_text = log_since(log_path, log_offset)
    result: dict[str, Any] = {
        "agent": kind,
        "chassis_seen_s": round(chassis_seen or 0.0, 3),
        "flows_final_seen_s": round(count_since, 3),
        "hv_acked_s": round(acked, 3),
        "time_to_flows_s": round(max(count_since, acked), 3),
        "flow_count": count,
        "agent_cpu_s": round(proc_cpu_s(daemon.pid), 3),
        "vswitchd_cpu_s": round(proc_cpu_s(vswitchd) - vs_cpu0, 3),
        "peak_rss_mib": round(proc_hwm_mib(daemon.pid), 1),
        **figures,
        "recompute_log": recompute_reasons(log_text),
    }
    return result


# ---------------------------------------------------------------- report

# (label, key) of the wipe table; the first five are seed 001's table
WIPE_ROWS = (
    ("time until all flows installed (s)", "time_to_flows_s"),
    ("loop iterations", "loop_iterations"),
    ("average iteration (ms)", "loop_avg_ms"),
    ("maximum iteration (ms)", "loop_max_ms"),
    ("engine runs (flow-generation)", "engine_runs"),
    ("engine run avg / max (ms)", "engine_avg_ms", "engine_max_ms"),
    ("main-thread voluntary ctx sw", "main_thread_vcsw"),
    ("--wait=hv returned (s)", "hv_acked_s"),
    ("chassis row seen (s)", "chassis_seen_s"),
    ("agent CPU (s)", "agent_cpu_s"),
    ("ovs-vswitchd CPU (s)", "vswitchd_cpu_s"),
    ("peak RSS (MiB)", "peak_rss_mib"),
    ("flows", "flow_count"),
)


def summarize_wipe(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians per agent and key, and one row per WIPE_ROWS entry."""
    keys = sorted({k for row in WIPE_ROWS for k in row[1:]})
    agents = {kind: {key: median([r.get(key) for r in runs.get(kind, [])]) for key in keys}
              for kind in KINDS}
    rows = []
    for label, *row_keys in WIPE_ROWS:
        c = [agents["c"].get(k) for k in row_keys]
        py = [agents["py"].get(k) for k in row_keys]
        rows.append({"metric": label, "keys": row_keys, "c": c, "py": py,
                     "ratio": [ratio(p, q) for p, q in zip(py, c)]})
    return {"agents": agents, "rows": rows,
            "reps": {kind: len(runs.get(kind, [])) for kind in KINDS}}


def _cells(values: list[Any]) -> str:
    return " / ".join(_fmt(v) for v in values)


def format_wipe_table(summary: dict[str, Any], n: int) -> str:
    reps = summary["reps"]
    lines = [f"seed-{n}, wipe mode (SB emptied, agent and northd started together), "
             f"medians of {reps['c']} C / {reps['py']} ours runs",
             f"{'metric':<36} {'C':>15} {'ours':>15} {'ours/C':>12}"]
    for row in summary["rows"]:
        lines.append(f"{row['metric']:<36} {_cells(row['c']):>15} {_cells(row['py']):>15} "
                     f"{_cells(row['ratio']):>12}")
    lines.append("C: no loop counter; its maximum iteration = max(flow-generation max, "
                 "longest logged poll interval >= 1 s)")
    return "\n".join(lines)


def run_wipe(n: int, reps: int, snapshot: Path | None, cache: Path | None,
             tag: str = "") -> dict[str, Any]:
    started = time.time()
    load_start = os.getloadavg()
    bytecode = precompile_agent()
    work = Path(tempfile.mkdtemp(prefix="ovnpy-bench-wipe-"))
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    try:
        files, source = get_snapshot(n, snapshot, cache, work)
        box = open_sandbox(files, n, northd=False)
        try:
            expected: int | None = None
            for rep in range(1, reps + 1):
                for kind in KINDS:
                    res = wipe_start(box, kind, expected)
                    res["rep"] = rep
                    runs[kind].append(res)
                    print(f"wipe rep {rep} {kind:>2}: flows {res['time_to_flows_s']:.2f} s "
                          f"({res['flow_count']} flows), iterations "
                          f"{_fmt(res.get('loop_iterations'))}, max iteration "
                          f"{_fmt(res.get('loop_max_ms'))} ms, agent CPU "
                          f"{res['agent_cpu_s']:.2f} s, RSS {res['peak_rss_mib']:.0f} MiB",
                          flush=True)
                    if kind == "c" and expected is None:
                        expected = res["flow_count"]
        finally:
            box.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = summarize_wipe(runs)
    table = format_wipe_table(summary, n)
    print(table, flush=True)
    result = {
        "benchmark": "wipe", "n": n, "reps": reps,
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "duration_s": round(time.time() - started, 1),
        "host": {"cpus": os.cpu_count(), "python": platform.python_version(),
                 "kernel": platform.release(), "loadavg_start": load_start,
                 "loadavg_end": os.getloadavg()},
        "snapshot": source, "bytecode": bytecode, "method": __doc__, "summary": summary, "runs": runs,
        "table": table,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / (f"wipe-{n}" + (f"-{tag}" if tag else "") + ".json")
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}", flush=True)
    return result
