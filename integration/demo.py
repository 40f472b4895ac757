"""`make demo`: OVS + OVN in a private sandbox, a seed topology, and the agent.

Brings up ovsdb-server, ovs-vswitchd (dummy datapath), the NB/SB databases and
ovn-northd in a temporary directory, builds seed-N (default 50 routers, 100
bound VIFs), starts our agent (``python -m controller``) if ``controller.daemon``
exists, otherwise the C ovn-controller (saying so), waits for the nb_cfg
handshake, prints what was installed and, when our agent answers,
``loop-stats``; then the C agent on the same topology for reference. Everything
is torn down at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import time
from collections import Counter

from integration.sandbox import Sandbox, SandboxError
from integration.topologies import build_seed


_TABLE = re.compile(r"(?:^|[ ,])table=(\d+)")


def _count(sb: Sandbox, table: str) -> int:
    return len(sb.sbctl("--bare", "--columns=_uuid", "list", table).split())


def _per_table(flows: list[str]) -> Counter[int]:
    tables: Counter[int] = Counter()
    for flow in flows:
        match = _TABLE.search(flow)
        tables[int(match.group(1)) if match else 0] += 1
    return tables


def _run_agent(sb: Sandbox, kind: str, timeout: float) -> tuple[float, int]:
    label = "ovn-controller-py (ours)" if kind == "py" else "ovn-controller 23.03.1 (C)"
    print(f"\n== starting {label}")
    t0 = time.monotonic()
    sb.start_controller(kind)
    waited = sb.wait_hv_sync(timeout=timeout)
    flows = sb.dump_flows()
    print(f"   hv sync after {time.monotonic() - t0:.2f}s (handshake wait {waited:.2f}s)")
    print(f"   br-int: {len(flows)} flows, "
          f"{len(sb.ofctl('dump-groups', 'br-int').splitlines()) - 1} groups, "
          f"{len(sb.ofctl('dump-meters', 'br-int').splitlines()) - 1} meter lines")
    top = ", ".join(f"t{t}:{n}" for t, n in _per_table(flows).most_common(6))
    print(f"   largest tables: {top}")
    return waited, len(flows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=50, help="seed-N routers (default 50)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds to wait for each agent's hv sync")
    parser.add_argument("--keep", action="store_true", help="keep the run directory")
    args = parser.parse_args(argv)

    ours = importlib.util.find_spec("controller.daemon") is not None
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
        our_flows: int | None = None
        if ours:
            try:
                our_flows = _run_agent(sb, "py", args.timeout)[1]
                try:
                    stats = sb.appctl("controller", "loop-stats", timeout=10)
                    print("   loop-stats:\n" + "\n".join(
                        "     " + line for line in stats.rstrip().splitlines()))
                except SandboxError as exc:
                    print(f"   (our agent did not answer loop-stats: {str(exc).splitlines()[0]})")
            except SandboxError as exc:
                print(f"\n!! our agent failed: {exc}")
                rc = 1
            sb.stop_controller()
            sb.ofctl("del-flows", "br-int")
        else:
            print("\n** NOTE: controller.daemon does not exist yet, so our agent cannot run;"
                  "\n** showing the C ovn-controller on the same sandbox instead.")
        try:
            c_flows = _run_agent(sb, "c", args.timeout)[1]
            print("   (reference: the C agent on the same topology)")
            if our_flows is not None:
                verdict = "same count" if our_flows == c_flows else "counts differ"
                print(f"\n== flows on br-int: ours {our_flows}, C {c_flows} ({verdict})")
        except SandboxError as exc:
            print(f"\n!! the C agent failed: {exc}")
            rc = 1
        if args.keep:
            print(f"   run directory kept: {sb.run}")
    print(f"\n== torn down; total {time.monotonic() - start:.2f}s")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
