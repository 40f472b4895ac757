"""Fixed cost of one small agent (issue 16): start, first flows, baseline memory.

Design note
-----------
The chassis of a density test holds little: here one switch with a few
bound VIFs, its router, ACLs on a shared port group with an address set, and
a gateway router with SNAT (ovn-heater's density shape, one chassis). With
so little to compute, what an agent costs is its fixed part: interpreter
start, imports, first compute, baseline heap.

One sandbox builds the topology with northd, then northd is stopped and
both agents alternate (C first) through ``benchmarks.seed.cold_start``
(restart mode: chassis deleted, br-int emptied, agent started, northd's
nb_cfg bump played by us, flows stable 3 s). Per start: time to flows, CPU,
peak RSS (VmHWM) and RSS 2 s after completion (VmRSS, "settled"), and
``started_s``: until the start command returned (C: detached; ours: detached
and its control socket listening). CPU is that of the daemon process after
``--detach`` forked: our imports run before the fork and are not in it, they
are the import figure below. For ours
also the import cost of a fresh interpreter (:func:`import_cost`: what
``python -m controller`` imports before it detaches).
Nothing is asserted; ``--json FILE`` keeps the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.seed import KINDS, cold_start, median
from benchmarks.snapshot import precompile_agent
from integration.sandbox import REPO_ROOT, Sandbox, agent_env, agent_python


def topology_commands(vifs: int) -> list[str]:
    """ovn-nbctl arguments of the small chassis' topology."""
    args = ["--", "ls-add", "ls1",
            "--", "lr-add", "lr1",
            "--", "lrp-add", "lr1", "lr1-ls1", "0a:00:00:00:00:01", "10.1.0.1/24",
            "--", "lsp-add", "ls1", "ls1-lr1", "--", "lsp-set-type", "ls1-lr1", "router",
            "--", "lsp-set-addresses", "ls1-lr1", "router",
            "--", "lsp-set-options", "ls1-lr1", "router-port=lr1-ls1",
            "--", "lr-add", "gw1", "--", "set", "Logical_Router", "gw1", "options:chassis=hv1",
            "--", "lrp-add", "gw1", "gw1-ext", "0a:00:00:00:01:01", "172.16.0.1/24",
            "--", "lr-nat-add", "gw1", "snat", "172.16.0.1", "10.1.0.0/24",
            "--", "create", "Address_Set", "name=as_admin", 'addresses="10.9.0.1","10.9.0.2"']
    ports = []
    for k in range(1, vifs + 1):
        lsp = f"ls1-p{k}"
        ports.append(lsp)
        args += ["--", "lsp-add", "ls1", lsp,
                 "--", "lsp-set-addresses", lsp, f"0a:00:00:01:00:{k:02x} 10.1.0.{10 + k}"]
    args += ["--", "pg-add", "pg_all", *ports,
             "--", "acl-add", "pg_all", "from-lport", "1001", "inport == @pg_all && ip4",
             "allow-related",
             "--", "acl-add", "pg_all", "to-lport", "1001",
             "outport == @pg_all && ip4 && ip4.src == $as_admin && tcp.dst == 22",
             "allow-related",
             "--", "acl-add", "pg_all", "to-lport", "1000", "outport == @pg_all && ip4", "drop"]
    return args


def proc_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


# as `python -m controller` does: run_daemon blocks AGENT_BLOCKED before the daemon
# loads and then finishes the dataclass cache (controller.dataclass_cache)
IMPORT_CODE = ("import controller.cli, controller.lazy_modules as m; m.block(*m.AGENT_BLOCKED); "
               "import controller.daemon; controller.cli.dataclass_cache.finish(); "
               "import controller.pinctrl")


def import_cost(python: str, reps: int = 5) -> dict[str, float | None]:
    """What importing the agent costs a fresh interpreter (medians of `reps`).

    ``import_cpu_s`` / ``import_maxrss_mib``: user+sys CPU and peak RSS of
    ``python -c IMPORT_CODE`` (controller.cli, the modules it blocks, the daemon, pinctrl)
    (os.wait4); ``import_ms``: the summed cumulative times of the top-level
    modules of ``-X importtime`` for the same imports (wall clock)."""
    cpu, rss, wall = [], [], []
    env = agent_env(dict(os.environ))      # the agent's bytecode (and dataclass) cache
    for _ in range(reps):
        proc = subprocess.Popen([python, "-c", IMPORT_CODE], cwd=REPO_ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
        cpu.append(usage.ru_utime + usage.ru_stime)
        rss.append(usage.ru_maxrss / 1024)
        out = subprocess.run([python, "-X", "importtime", "-c", IMPORT_CODE], cwd=REPO_ROOT,
                             env=env, capture_output=True, text=True, timeout=120)
        total = 0
        for line in out.stderr.splitlines():
            m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", line)
            if m:
                total += int(m.group(1))
        wall.append(total / 1000)
    return {"import_cpu_s": round(statistics.median(cpu), 3),
            "import_maxrss_mib": round(statistics.median(rss), 1),
            "import_ms": round(statistics.median(wall), 1)}


def run(vifs: int, reps: int, bytecode: bool = True) -> dict[str, Any]:
    note = (precompile_agent() if bytecode
            else "no precompiled bytecode (modules may compile at start)")
    print(note, flush=True)
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    with Sandbox(northd=True) as box:
        box.nbctl("--wait=sb", *topology_commands(vifs))
        box.bind_vifs((f"p{k}", f"ls1-p{k}") for k in range(1, vifs + 1))
        box.nbctl("--wait=sb", "sync")
        box.stop_daemon("northd")
        box.northd_enabled = False
        expected: int | None = None
        for rep in range(1, reps + 1):
            for kind in KINDS:
                res = cold_start(box, kind, expected)
                time.sleep(2.0)
                res["settled_rss_mib"] = round(proc_rss_mib(box.daemons["controller"].pid), 1)
                res["rep"] = rep
                runs[kind].append(res)
                if expected is None:
                    expected = res["flow_count"]
                print(f"rep {rep} {kind:>2}: flows {res['time_to_flows_s']:.2f} s "
                      f"({res['flow_count']} flows), CPU {res['agent_cpu_s']:.2f} s, peak RSS "
                      f"{res['peak_rss_mib']:.1f} MiB, settled RSS "
                      f"{res['settled_rss_mib']:.1f} MiB", flush=True)
        box.stop_controller()
    summary = {kind: {key: median([r.get(key) for r in runs[kind]])
                      for key in ("started_s", "time_to_flows_s", "agent_cpu_s",
                                  "peak_rss_mib", "settled_rss_mib", "loop_max_ms",
                                  "flow_count")}
               for kind in KINDS}
    summary["py"].update(import_cost(agent_python()))
    for key, value in summary["py"].items():
        print(f"{key:<18} C {summary['c'].get(key)!s:>8}  ours {value!s:>8}")
    return {"vifs": vifs, "reps": reps, "bytecode": note, "summary": summary, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.small_agent",
                                     description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--vifs", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--no-precompile", action="store_true",
                        help="do not write the agent's bytecode first (see benchmarks/snapshot.py)")
    args = parser.parse_args(argv)
    result = run(args.vifs, args.reps, not args.no_precompile)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
