"""Benchmark: compile every Logical_Flow of seed-500 into OpenFlow flows in memory.

Loads ``/work/shared/reference-data/seed-500/sb.db.gz`` (25,655 lflows) and
builds the compile context the agent would for the chassis of the
``conf-ovs.txt`` beside it (``controller.lflow.snapshot.context_from_snapshot``:
the agent's binding and input nodes, then its ``compile_context``; all 1,000
datapaths are local in that topology), then compiles each lflow for each of
its local datapaths with ``LflowCompiler``, collecting the ``Flow`` objects.  Prints
lflows/s, flows/s, total seconds, peak RSS, the distinct-text reuse rate and
the lflow-cache hit rate (``compile_all``, or ``--one-by-one`` calls with
the cyclic GC running), for a cold pass (empty caches) and a warm pass (a
full recompute: per-text memo cleared, uuid-keyed lflow cache kept, as after
an input change in the agent).  Numbers are printed, never asserted.

    python -m benchmarks.compile_seed [--profile] [--no-cache] [--one-by-one]
        [--conf CONF_OVS_TXT] [SB_DB]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import resource
import sys
import time
from pathlib import Path
from typing import Any

from controller.lflow.actions import OvsFeatures
from controller.lflow.cache import LflowCache, LflowCacheConfig
from controller.lflow.compile import CompileContext, CompiledLflow, LflowCompiler
from controller.lflow.snapshot import OvsConf, SbSnapshot, context_from_snapshot

SEED = Path("/work/shared/reference-data/seed-500/sb.db.gz")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def compile_pass(compiler: LflowCompiler, lflows: list[Any],
                 one_by_one: bool) -> tuple[int, int, float, float]:
    t0 = time.perf_counter()
    c0 = time.process_time()
    if one_by_one:
        results: list[Any] = []
        for lf in lflows:
            results.extend(compiler.compile_lflow_local(lf))
    else:
        results = compiler.compile_all(lflows)
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    n_flows = n_err = 0
    for res in results:
        if isinstance(res, CompiledLflow):
            n_flows += len(res.flows) + len(res.conj_flows)
        else:
            n_err += 1
    return n_flows, n_err, dt, cpu


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sb_db", nargs="?", default=str(SEED))
    ap.add_argument("--profile", action="store_true", help="cProfile the cold pass")
    ap.add_argument("--no-cache", action="store_true", help="ovn-enable-lflow-cache=false")
    ap.add_argument("--one-by-one", action="store_true",
                    help="compile_lflow_local() per row with the GC running, "
                         "instead of compile_all()")
    ap.add_argument("--conf", help="the chassis' conf-ovs.txt (default: beside SB_DB)")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    sb = SbSnapshot(args.sb_db)
    lflows = sb.table("Logical_Flow")
    conf = OvsConf.read(args.conf or Path(args.sb_db).parent / "conf-ovs.txt")
    print(f"snapshot: {len(lflows)} lflows, {len(sb.table('Datapath_Binding'))} datapaths, "
          f"loaded in {time.perf_counter() - t0:.2f} s, RSS {_rss_mb():.0f} MB")

    t0 = time.perf_counter()
    ctx = context_from_snapshot(sb, conf, CompileContext(
        features=OvsFeatures(ct_zero_snat=True, dp_hash_l4_sym=False, controller_meter=True)))
    n_local = sum(dp.tunnel_key in ctx.local_datapaths for dp in sb.table("Datapath_Binding"))
    print(f"context for chassis {conf.system_id}: {n_local} local datapaths, "
          f"built in {time.perf_counter() - t0:.2f} s")
    cache = LflowCache(LflowCacheConfig(enabled=not args.no_cache))
    compiler = LflowCompiler(ctx, cache)
    gc.collect()
    gc.freeze()

    prof = cProfile.Profile() if args.profile else None
    for label in ("cold", "warm"):
        if label == "warm":
            compiler.clear_text_cache()
            ctx.conj_ids.clear()
            for k in compiler.stats:
                compiler.stats[k] = 0
        if prof is not None and label == "cold":
            prof.enable()
        n_flows, n_err, dt, cpu = compile_pass(compiler, lflows, args.one_by_one)
        if prof is not None and label == "cold":
            prof.disable()
        st = compiler.stats
        inst = st["instances"]
        reuse = st["text_reuse"] / inst if inst else 0.0
        lookups = st["cache_hits"] + st["cache_misses"]
        hit = st["cache_hits"] / lookups if lookups else 0.0
        print(f"{label}: {len(lflows)} lflows ({inst} lflow x datapath) -> {n_flows} flows "
              f"in {dt:.2f} s (CPU {cpu:.2f} s): {len(lflows) / dt:,.0f} lflows/s, {n_flows / dt:,.0f} flows/s; "
              f"errors {n_err}; distinct texts {st['text_compiles']}, text reuse {reuse:.1%}; "
              f"actions encodes {st['encodes']} (reuse {st['encode_reuse']}); "
              f"lflow cache hit rate {hit:.1%}; peak RSS {_rss_mb():.0f} MB")
    print(cache.stats_text().rstrip())
    if prof is not None:
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main(sys.argv[1:])
