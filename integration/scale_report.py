"""Tables, plots and flow-dump comparison of integration/scale.py results.

Pure functions over the result dictionaries of :func:`integration.scale.run_phase`
(no daemons): :func:`table` (markdown, one column per agent and N),
:func:`plot` (convergence time and per-agent RSS against N, when matplotlib
is installed) and :func:`compare_dumps` (canonical flows of the same chassis
under ours and under C).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from integration.differential import AgentDump
from integration.normalise import compare_lists


def compare_dumps(ours: dict[str, AgentDump], theirs: dict[str, AgentDump]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ch in sorted(set(ours) & set(theirs)):
        a, b = ours[ch].canonical, theirs[ch].canonical
        only_ours, only_c = compare_lists(a.flows, b.flows)
        g_ours, g_c = compare_lists(a.groups, b.groups)
        out[ch] = {"flows": len(a.flows), "c_flows": len(b.flows),
                   "only_ours": len(only_ours), "only_c": len(only_c),
                   "groups_differ": len(g_ours) + len(g_c),
                   "examples": (only_ours[:3], only_c[:3])}
    return out


def _row(label: str, values: Sequence[object]) -> str:
    return f"| {label} | " + " | ".join(str(v) for v in values) + " |"


def table(results: Sequence[dict[str, Any]]) -> str:
    """Markdown table, one column per (agent, N)."""
    heads = [f"{r['agent']} N={r['n']}" for r in results]
    lines = ["| figure | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]

    def g(r: dict[str, Any], *path: str) -> object:
        v: Any = r
        for p in path:
            if not isinstance(v, dict) or p not in v:
                return "-"
            v = v[p]
        return v
    rows: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
        ("machine load average (1 min) at the start", lambda r: r.get("loadavg_1min", "-")),
        ("all converged (start -> --wait=hv), s", lambda r: r["converge_s"]),
        ("agent peak RSS median / max, MiB",
         lambda r: f"{r['agent_rss_mib']['median']} / {r['agent_rss_mib']['max']}"),
        ("agent CPU to converge median / total, s",
         lambda r: f"{r['agent_cpu_s']['median']} / {r['agent_cpu_s']['total']}"),
        ("SB servers CPU (sum), s",
         lambda r: round(sum(v for k, v in r["server_cpu_s"].items() if k.startswith("sb")), 2)),
        ("relays CPU (sum), s",
         lambda r: round(sum(v for k, v in r["server_cpu_s"].items()
                             if k.startswith("relay")), 2)),
        ("--wait=hv ACL add, s", lambda r: r["acl_add_s"]),
        ("--wait=hv VIF add+bind, s", lambda r: r["vif_bind_s"]),
        ("lflows in use hv1 / local-dp bound / SB total",
         lambda r: "{} / {} / {}".format(
             g(r, "lflows", "per_chassis", "hv1", "in_use"),
             g(r, "lflows", "per_chassis", "hv1", "local_dp_lflows"), r["lflows"]["sb_total"])),
    ]
    for key, label in (("sb_leader_kill", "SB leader kill"), ("relay_kill", "relay kill"),
                       ("restart_all_agents", "restart all agents")):
        rows.append((f"{label}: --wait=hv again, s / min flows %", _fault_cell(g, key)))
    rows.append(("forced recomputes / failed SB commits in leader+relay kills (logs)",
                 lambda r: "{} / {}".format(
                     g(r, "faults", "relay_and_leader_log_counts", "force_recompute"),
                     g(r, "faults", "relay_and_leader_log_counts", "sb_commit_failed"))))
    rows.append(("client sessions on the killed relay",
                 lambda r: g(r, "faults", "relay_sessions_before")))
    for label, fn in rows:
        lines.append(_row(label, [fn(r) for r in results]))
    return "\n".join(lines)


def _fault_cell(g: Callable[..., object], key: str) -> Callable[[dict[str, Any]], object]:
    def cell(r: dict[str, Any]) -> object:
        return f"{g(r, 'faults', key, 'recovered_s')} / " \
            f"{_pct(g(r, 'faults', key, 'min_flow_ratio'))}"
    return cell


def _pct(v: object) -> object:
    return round(100 * v, 1) if isinstance(v, float) else v


def plot(results: Sequence[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for kind in sorted({r["agent"] for r in results}):
        rs = sorted((r for r in results if r["agent"] == kind), key=lambda r: r["n"])
        ns = [r["n"] for r in rs]
        ax1.plot(ns, [r["converge_s"] for r in rs], marker="o", label=kind)
        ax2.plot(ns, [r["agent_rss_mib"]["median"] for r in rs], marker="o", label=kind)
    ax1.set(xlabel="chassis", ylabel="start -> --wait=hv (s)", title="convergence")
    ax2.set(xlabel="chassis", ylabel="median peak RSS (MiB)", title="agent memory")
    ax1.legend()
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path)
    return True
