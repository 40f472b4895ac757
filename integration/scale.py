"""Scale-out harness: N simulated hypervisors on a clustered, relayed Southbound.

Design note
-----------
The cluster (a 3-server RAFT SB with relays and northd, one sandbox per
simulated hypervisor, the density topology, the reset between agent kinds)
is :mod:`integration.scale_cluster`.

:func:`run_phase` measures one agent kind on the running cluster: start of
all N agents to ``ovn-nbctl --wait=hv sync``, per-agent peak RSS (VmHWM) and
CPU, SB server / relay CPU, ``--wait=hv`` latency of an ACL add and of one
VIF add+bind (both undone afterwards so the next phase sees the same NB),
logical flows in use per agent against the SB total and against the flows of
the chassis' local datapaths (the conditional monitoring bound), canonical
dumps of sampled chassis, then the faults (SB leader kill, relay kill, all
agents killed and restarted at once) with the time until ``--wait=hv`` works
again and the minimum flow count of the sampled chassis meanwhile.  Each
phase also records ``inc-engine/show-stats`` summed over the agents
(printed per node) and, with ``--count-rpc``, the requests the relays
received until convergence, by method.

Everything is measured, nothing is asserted here; integration/test_scale.py
asserts on a small N.  Tables and plots: :mod:`integration.scale_report`.  ``python -m integration.scale --help``.
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from integration.differential import dump_agent
from integration.sandbox import SandboxError, poll_until
from integration.scale_cluster import (Central, FlowSampler, Hypervisor, ScaleCluster, _net,
                                       kill_daemon, lflows_in_use, proc_cpu_s, proc_hwm_mib,
                                       sb_view, vif_names)
from integration.scale_report import compare_dumps, plot, table

__all__ = ["Hypervisor", "ScaleCluster", "kill_daemon", "lflows_in_use", "main", "run",
           "run_phase", "sb_view"]

RESULTS_DIR = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


# ---------------------------------------------------------------- one phase

def _median(values: Iterable[float]) -> float:
    vals = list(values)
    return round(statistics.median(vals), 2) if vals else 0.0


def _timed(fn: Callable[[], object]) -> float:
    start = time.monotonic()
    fn()
    return round(time.monotonic() - start, 3)


def _northd_sb_connected_s(c: Central, since_wall: float) -> float | None:
    """Seconds from `since_wall` to northd's last SB connection after it
    (from its log: the one that found the leader), None if none."""
    d = c.daemons.get("northd")
    if d is None:
        return None
    try:
        lines = d.log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    last = None
    for line in lines:
        if not line.endswith(": connected") or "/sb" not in line:
            continue
        try:
            stamp = calendar.timegm(time.strptime(line[:19], "%Y-%m-%dT%H:%M:%S")) \
                + float("0" + line[19:23])
        except ValueError:
            continue
        if stamp >= since_wall:
            last = round(stamp - since_wall, 3)
    return last


def measure_fault(cl: ScaleCluster, name: str, fault: Callable[[], None],
                  repair: Callable[[], None], settled: dict[str, int],
                  log: Callable[[str], None]) -> dict[str, Any]:
    """Run a fault with the flow sampler on; time until --wait=hv works again."""
    with FlowSampler(cl.sampled()) as sampler:
        time.sleep(0.5)
        start, wall = time.monotonic(), time.time()
        fault()
        cl.c.wait_hv(timeout=cl.patience)
        recovered = round(time.monotonic() - start, 3)
        time.sleep(1.0)
    repair()
    ratio = min((sampler.minimum[ch] / settled[ch]) if settled[ch] else 1.0
                for ch in sampler.minimum)
    northd = _northd_sb_connected_s(cl.c, wall)
    log(f"  fault {name}: --wait=hv works again after {recovered:.2f} s, "
        f"min flows {100 * ratio:.1f}% of settled"
        + (f" (northd back on the SB after {northd:.2f} s)" if northd is not None else ""))
    return {"recovered_s": recovered, "min_flow_ratio": round(ratio, 4),
            "min_flows": sampler.minimum, "settled_flows": settled,
            "samples": sampler.samples, "northd_sb_reconnect_s": northd}


def _agent_counters(hv: Hypervisor) -> dict[str, int]:
    """Full recomputes and failed SB commits seen in the agent's log."""
    d = hv.daemons.get("controller")
    if d is None:
        return {}
    try:
        text = d.log.read_text(errors="replace")
    except OSError:
        return {}
    return {"force_recompute": text.count("force recompute"),
            "sb_commit_failed": text.count("OVNSB commit failed")}


def _engine_stats(hv: Hypervisor) -> dict[str, list[int]]:
    """``inc-engine/show-stats`` of the agent: node -> [recompute, compute, abort]."""
    try:
        out = hv.appctl("controller", "inc-engine/show-stats", timeout=30)
    except SandboxError:
        return {}
    stats: dict[str, list[int]] = {}
    node: list[int] | None = None
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Node:"):
            node = stats.setdefault(line.split(":", 1)[1].strip(), [0, 0, 0])
        elif node is not None and line.startswith("- "):
            key, _, value = line[2:].partition(":")
            idx = {"recompute": 0, "compute": 1, "abort": 2}.get(key.strip())
            if idx is not None and value.strip().isdigit():
                node[idx] = int(value)
    return stats


def fleet_engine_stats(hvs: Iterable[Hypervisor]) -> dict[str, list[int]]:
    """Per engine node, [recompute, compute, abort] summed over the agents."""
    total: dict[str, list[int]] = {}
    for hv in hvs:
        for name, vals in _engine_stats(hv).items():
            acc = total.setdefault(name, [0, 0, 0])
            for i, v in enumerate(vals):
                acc[i] += v
    return total


def run_phase(cl: ScaleCluster, kind: str, faults: bool = True,
              log: Callable[[str], None] = print) -> dict[str, Any]:
    """Start `kind` agents on every hypervisor and measure; leaves them running."""
    c = cl.c
    res: dict[str, Any] = {"agent": kind, "n": cl.n,
                           "loadavg_1min": round(os.getloadavg()[0], 1)}
    marks = c.rpc_log_on() if cl.count_rpc else None
    cpu0 = c.server_cpu()
    t0 = time.monotonic()
    cl.start_agents(kind)
    res["started_s"] = round(time.monotonic() - t0, 3)
    cl.wait_converged()
    res["converge_s"] = round(time.monotonic() - t0, 3)
    cpu1 = c.server_cpu()
    res["server_cpu_s"] = {r: round(cpu1[r] - cpu0.get(r, 0.0), 2) for r in cpu1}
    pids = [hv.agent_pid for hv in cl.hvs]
    rss = [proc_hwm_mib(p) for p in pids if p]
    cpu = [proc_cpu_s(p) for p in pids if p]
    res["agent_rss_mib"] = {"median": _median(rss), "max": round(max(rss), 1)}
    res["agent_cpu_s"] = {"median": _median(cpu), "max": round(max(cpu), 2),
                          "total": round(sum(cpu), 1)}
    res["engine_stats_converged"] = fleet_engine_stats(cl.hvs)
    if marks is not None:
        res["relay_requests_to_converge"] = c.rpc_counts(marks)
        log(f"  requests the relays received until converged: "
            f"{res['relay_requests_to_converge']}")
    log(f"[{kind} N={cl.n}] converged in {res['converge_s']:.2f} s "
        f"(agents started in {res['started_s']:.2f} s); RSS median "
        f"{res['agent_rss_mib']['median']} MiB")

    view = sb_view(c)
    per: dict[str, Any] = {}
    for hv in cl.sampled():
        used = lflows_in_use(hv, view)
        bound = view.bound(hv.chassis)
        per[hv.chassis] = {"in_use": len(used), "local_dp_lflows": len(bound),
                           "outside_bound": len(used - bound)}
    res["lflows"] = {"sb_total": view.total, "per_chassis": per}
    res["dumps"] = {hv.chassis: dump_agent(hv, kind, 0.0) for hv in cl.sampled()}
    settled = {hv.chassis: hv.flow_count() for hv in cl.sampled()}

    res["acl_add_s"] = _timed(lambda: c.nbctl(
        "--wait=hv", "--type=port-group", "acl-add", "pg_all", "to-lport", "900",
        "outport == @pg_all && udp.dst == 5353", "drop", timeout=300))
    c.nbctl("--wait=hv", "--type=port-group", "acl-del", "pg_all", "to-lport", "900",
            "outport == @pg_all && udp.dst == 5353", timeout=300)
    hv1 = cl.hvs[0]
    a, b = _net(1)

    def bind() -> None:
        c.nbctl("lsp-add", "ls-hv1", "hv1-new", "--", "lsp-set-addresses", "hv1-new",
                f"0a:05:00:00:01:01 10.{a}.{b}.200", "--", "pg-set-ports", "pg_all",
                *[lsp for i in range(1, cl.n + 1) for _, lsp in vif_names(i, cl.vifs)],
                "hv1-new")
        hv1.bind_vif("vifnew", "hv1-new")
        if not poll_until(lambda: "ovn-installed" in hv1.vsctl(
                "get", "Interface", "vifnew", "external_ids"), timeout=300, period=0.05):
            raise SandboxError("hv1-new never ovn-installed")
        c.wait_hv(timeout=300)
    res["vif_bind_s"] = _timed(bind)
    hv1.unbind_vif("vifnew")
    c.nbctl("--wait=hv", "lsp-del", "hv1-new", timeout=300)
    log(f"  --wait=hv: ACL add {res['acl_add_s']:.2f} s, VIF add+bind "
        f"{res['vif_bind_s']:.2f} s")
    res["engine_stats_settled"] = fleet_engine_stats(cl.hvs)
    res["agent_cpu_settled_s"] = round(sum(proc_cpu_s(p) for p in pids if p), 1)

    if faults:
        res["faults"] = run_faults(cl, kind, settled, log)
    res["agent_log_counts"] = _sum_counts(_agent_counters(hv) for hv in cl.hvs)
    return res


def _sum_counts(items: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for item in items:
        for k, v in item.items():
            total[k] = total.get(k, 0) + v
    return total


def run_faults(cl: ScaleCluster, kind: str, settled: dict[str, int],
               log: Callable[[str], None]) -> dict[str, Any]:
    c = cl.c
    out: dict[str, Any] = {}
    before = _sum_counts(_agent_counters(hv) for hv in cl.hvs)
    leader = c.sb_leader()
    if leader is not None:
        out["sb_leader_kill"] = measure_fault(
            cl, "SB leader kill", lambda: kill_daemon(c, f"sb{leader}"),
            lambda: _restart_sb(c, leader), settled, log)
    if cl.relays >= 2:
        out["relay_sessions_before"] = c.sessions("relay1")
        out["relay_kill"] = measure_fault(
            cl, "relay kill", lambda: kill_daemon(c, "relay1"),
            lambda: (c.start_relay(1), None)[1], settled, log)
    after = _sum_counts(_agent_counters(hv) for hv in cl.hvs)
    out["relay_and_leader_log_counts"] = {k: after.get(k, 0) - before.get(k, 0) for k in after}

    def mass_restart() -> None:
        cl.kill_agents()
        cl.start_agents(kind)
    out["restart_all_agents"] = measure_fault(cl, "restart all agents", mass_restart,
                                              lambda: None, settled, log)
    return out


def _restart_sb(c: Central, k: int) -> None:
    c.start_sb(k)
    c.cmd(["ovsdb-client", "--timeout=60", "wait", f"unix:{c.run}/sb{k}.sock",
           "OVN_Southbound", "connected"], timeout=70)


def run(n: int, agents: Sequence[str], vifs: int = 3, relays: int = 2, faults: bool = True,
        keep: bool = False, log: Callable[[str], None] = print,
        agent_args: dict[str, list[str]] | None = None,
        profile: bool = False, count_rpc: bool = False) -> dict[str, Any]:
    """Build one cluster of n chassis and run each agent kind on it in turn
    (the chassis are reset in between: each kind starts from the same state)."""
    results: list[dict[str, Any]] = []
    with ScaleCluster(n, vifs=vifs, relays=relays, keep=keep,
                      agent_args=dict(agent_args or {}), profile=profile,
                      count_rpc=count_rpc) as cl:
        log(f"cluster of {n} chassis up in {cl.root}")
        for kind in agents:
            res = run_phase(cl, kind, faults=faults, log=log)
            results.append(res)
            cl.stop_agents()
            cl.reset_chassis()
    out: dict[str, Any] = {"n": n, "results": results}
    dumps = {r["agent"]: r.pop("dumps") for r in results}
    if "py" in dumps and "c" in dumps:
        out["flow_equality"] = compare_dumps(dumps["py"], dumps["c"])
    return out


def engine_table(results: Sequence[dict[str, Any]],
                 key: str = "engine_stats_settled") -> str:
    """Markdown: recomputes / computes per engine node summed over the
    agents of each run, the nodes that recomputed or computed anywhere."""
    stats = [r.get(key) or {} for r in results]
    names: list[str] = []
    for st in stats:
        names += [n for n, v in st.items() if n not in names and (v[0] or v[1])]
    heads = [f"{r['agent']} N={r['n']}" for r in results]
    lines = [f"engine nodes, recompute / compute summed over agents ({key}):",
             "| node | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    for name in names:
        cells = ["{} / {}".format(*st[name][:2]) if name in st else "-" for st in stats]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m integration.scale", description=__doc__.split(
        "\n\n")[0])
    p.add_argument("-n", "--chassis", default=os.environ.get("SCALE_N", "5"),
                   help="number(s) of chassis, e.g. '10' or '10 30' (env SCALE_N)")
    p.add_argument("--agent", default=os.environ.get("SCALE_AGENT", "both"),
                   choices=("ours", "py", "c", "both"))
    p.add_argument("--vifs", type=int, default=3, help="bound VIFs per chassis")
    p.add_argument("--relays", type=int, default=2, choices=(0, 1, 2))
    p.add_argument("--no-faults", action="store_true")
    p.add_argument("--out", default=os.environ.get("SCALE_OUT", str(RESULTS_DIR)),
                   help="directory for scale.json (and scale.png)")
    p.add_argument("--keep", action="store_true", help="keep the run directory")
    p.add_argument("--py-args", default="", help="extra arguments of our agents "
                   "(e.g. '-vinc_proc_eng:file:dbg'), split on blanks")
    p.add_argument("--c-args", default="", help="extra arguments of the C agents")
    p.add_argument("--profile", action="store_true", help="cProfile our agents into "
                   "<hv dir>/agent.prof (up to the first install) and agent.prof.steady, "
                   "with a per-iteration timeline in agent.timeline (with --keep)")
    p.add_argument("--count-rpc", action="store_true", help="count the JSON-RPC requests "
                   "the relays receive until convergence, by method (relay jsonrpc debug log)")
    p.add_argument("--merge", nargs="+", metavar="JSON",
                   help="run nothing: one table and plot from earlier scale.json files")
    args = p.parse_args(argv)
    agents = {"ours": ["py"], "py": ["py"], "c": ["c"], "both": ["py", "c"]}[args.agent]
    ns = [int(x) for x in args.chassis.replace(",", " ").split()]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    if args.merge:
        for path in args.merge:
            runs.extend(json.loads(Path(path).read_text())["runs"])
        ns = []
    for n in ns:
        runs.append(run(n, agents, vifs=args.vifs, relays=args.relays,
                        faults=not args.no_faults, keep=args.keep,
                        agent_args={"py": args.py_args.split(), "c": args.c_args.split()},
                        profile=args.profile, count_rpc=args.count_rpc))
    results = [r for one in runs for r in one["results"]]
    if ns:
        print(f"\n{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end\n")
    print(table(results))
    for one in runs:
        for ch, d in one.get("flow_equality", {}).items():
            print(f"N={one['n']} {ch}: {d['flows']} canonical flows ours, {d['c_flows']} C; "
                  f"only ours {d['only_ours']}, only C {d['only_c']}, "
                  f"groups differing {d['groups_differ']}")
    print(engine_table(results))
    (out_dir / "scale.json").write_text(json.dumps(
        {"cpus": os.cpu_count(), "runs": runs}, indent=1, default=str))
    if plot(results, out_dir / "scale.png"):
        print(f"plot: {out_dir / 'scale.png'}")
    print(f"json: {out_dir / 'scale.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
