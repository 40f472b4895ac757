"""Benchmark: install the seed-500 flow table (165k flows) from empty.

Measures (printed, never asserted):
* encoding rate of the hot path (Flow.wire() + bundle_flow_mod) alone;
* end to end: a fresh OfctrlSession connects to a private ovs-vswitchd
  (dummy datapath), negotiates the Geneve TLV, sends one atomic bundle with
  every flow and waits until the barrier acknowledging the put's request id
  is answered;
* the reference: `ovs-ofctl -O OpenFlow15 --bundle add-flows` of the same
  flows (as text) into the same, emptied bridge.

Usage: .venv/bin/python -m benchmarks.ofctrl_install [--limit N] [--flows FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import ovs.poller

from integration.flow_corpus import REF, flow_texts, port_numbers
from integration.ofswitch import Vswitchd
from ofctrl import messages as m
from ofctrl.desired import DesiredFlowTable
from ofctrl.flow import Flow
from ofctrl.match import Match
from ofctrl.ofpacts import parse_actions
from ofctrl.session import S_UPDATE_FLOWS, OfctrlSession

SEED_TOPOLOGY = "seed-500"


def load_flows(path: Path, ports: dict[str, int], limit: int | None) -> list[Flow]:
    flows = []
    for ft in flow_texts(path):
        flows.append(Flow(ft.table, ft.priority, Match.parse(ft.match, ports),
                          parse_actions(ft.actions, ports), ft.cookie))
        if limit and len(flows) >= limit:
            break
    return flows


def flow_text(f: Flow) -> str:
    mt = f.match.to_string()
    return "cookie=%#x,table=%d,priority=%d%s,actions=%s" % (
        f.cookie, f.table, f.priority, ("," + mt) if mt else "", f.actions_string())


def bench_encode(flows: list[Flow]) -> float:
    for f in flows:
        f._wire = None
    t0 = time.perf_counter()
    pack = m.bundle_flow_mod
    out = [pack(i, 1, 3, m.OFPFC_ADD, f.table, f.priority, f.cookie, f.wire()) for i, f in enumerate(flows, 1)]
    dt = time.perf_counter() - t0
    assert len(out) == len(flows)
    for f in flows:
        f._wire = None  # the end-to-end run encodes again
    return dt


def _until_acked(sess: OfctrlSession, lflows: DesiredFlowTable, pflows: DesiredFlowTable, req_cfg: int) -> None:
    t0 = time.perf_counter()
    while True:
        sess.run()
        sess.put(lflows, pflows, req_cfg, True, True)
        sess.run()
        if sess.state == S_UPDATE_FLOWS and not sess.initial_clear and sess.cur_cfg == req_cfg:
            return
        if time.perf_counter() - t0 > 600:
            raise RuntimeError("timeout")
        p = ovs.poller.Poller()
        sess.wait(p)
        p.timer_wait(100)
        p.block()


def bench_session(vsd: Vswitchd, flows: list[Flow]) -> tuple[float, float, int, float, int]:
    """(install wall, install CPU, errors, 1k-change wall, flows on switch)."""
    lflows, pflows = DesiredFlowTable(), DesiredFlowTable()
    for i, f in enumerate(flows):
        lflows.add(f, owner=i)
    t0 = time.perf_counter()
    c0 = time.process_time()
    sess = OfctrlSession(vsd.target)
    try:
        _until_acked(sess, lflows, pflows, 1)
        dt = time.perf_counter() - t0
        cpu = time.process_time() - c0
        n = vsd.flow_count()
        # Incremental: 1000 flows change their actions (tracked put).
        step = max(1, len(flows) // 1000)
        t1 = time.perf_counter()
        for i in range(0, len(flows), step)[:1000]:
            f = flows[i]
            lflows.remove(i)
            lflows.add(f.with_actions(f.actions + f.actions[:1] if f.actions else ()), owner=i)
        _until_acked(sess, lflows, pflows, 2)
        dt_inc = time.perf_counter() - t1
        return dt, cpu, len(sess.errors), dt_inc, n
    finally:
        sess.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flows", default=str(REF / SEED_TOPOLOGY / "flows.raw.txt.gz"))
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()

    t0 = time.perf_counter()
    flows = load_flows(Path(args.flows), port_numbers(SEED_TOPOLOGY), args.limit)
    print("parsed %d flows in %.1f s (not part of the measurement)" % (len(flows), time.perf_counter() - t0))

    enc = bench_encode(flows)
    print("encode (Flow.wire + bundle_flow_mod): %.2f s  %9.0f flow-mods/s" % (enc, len(flows) / enc))

    vsd = Vswitchd(prefix="ofctrl-bench-", timeout=600)
    try:
        dt, cpu, nerr, dt_inc, n = bench_session(vsd, flows)
        print("ofctrl session, empty -> installed + barrier ack: %.2f s wall (%.2f s CPU)  %9.0f flows/s"
              "  [switch had %d flows, %d errors]" % (dt, cpu, len(flows) / dt, n, nerr))
        print("ofctrl session, 1000 flows changed (tracked put) -> barrier ack: %.3f s" % dt_inc)

        vsd.ofctl("del-flows", "br-int")
        ref = vsd.run_dir / "flows.txt"
        ref.write_text("".join(flow_text(f) + "\n" for f in flows))
        t1 = time.perf_counter()
        vsd.ofctl("--bundle", "add-flows", "br-int", str(ref))
        dt2 = time.perf_counter() - t1
        n2 = vsd.flow_count()
        print("reference ovs-ofctl --bundle add-flows: %.2f s  %9.0f flows/s  [switch has %d flows]"
              % (dt2, len(flows) / dt2, n2))
    finally:
        vsd.stop()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
