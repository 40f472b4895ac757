"""Benchmark: parse every distinct action text of an SB snapshot.

Reads the snapshot as ``benchmarks.compile_seed`` does (``SbSnapshot`` plus
``context_from_snapshot`` for the chassis of the ``conf-ovs.txt`` beside it,
default seed-500), collects the distinct ``(actions, pipeline, table)``
keys the compiler parses (``LflowCompiler._actions``: templates expanded),
and times ``parse_actions`` over all of them with the parse parameters the
compiler builds, ``--reps`` times; prints the CPU (``time.process_time``) of
each pass and the minimum.  Each pass goes through ``LflowCompiler._actions``
of a fresh compiler, so its per-text memo and its action templates
(``controller.lflow.actions.templates``) start empty.  Numbers are printed,
never asserted.

    python -m benchmarks.parse_actions_texts [--reps N] [--profile]
        [--conf CONF_OVS_TXT] [SB_DB]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import sys
import time
from pathlib import Path
from typing import Any

from controller.lflow.compile import CompileContext, LflowCompiler
from controller.lflow.snapshot import OvsConf, SbSnapshot, context_from_snapshot
from controller.lflow.lexer import parse_template_string

SEED = Path("/work/shared/reference-data/seed-500/sb.db.gz")

ActionKey = tuple[str, bool, int]


def action_keys(sb: SbSnapshot, ctx: CompileContext) -> list[ActionKey]:
    """The distinct (actions, ingress, table) keys of the snapshot's lflows,
    in first-seen order, templates expanded as ``compile_lflow`` does."""
    seen: dict[ActionKey, None] = {}
    tvars = ctx.template_vars
    for lf in sb.table("Logical_Flow"):
        text: str = lf.actions
        if tvars is not None and "^" in text:
            text = parse_template_string(text, tvars, set())
        seen.setdefault((text, lf.pipeline == "ingress", lf.table_id), None)
    return list(seen)


def load(sb_db: str, conf_path: str | None) -> tuple[CompileContext, list[ActionKey]]:
    sb = SbSnapshot(sb_db)
    conf = OvsConf.read(conf_path or Path(sb_db).parent / "conf-ovs.txt")
    ctx = context_from_snapshot(sb, conf, CompileContext())
    return ctx, action_keys(sb, ctx)


def parse_pass(ctx: CompileContext, keys: list[ActionKey]) -> tuple[float, Any]:
    """CPU of one pass through a fresh compiler, and its action-template
    stats (None without them)."""
    compiler = LflowCompiler(ctx, None)
    c0 = time.process_time()
    for text, ingress, table in keys:
        compiler._actions(text, ingress, table)
    cpu = time.process_time() - c0
    tpls = getattr(compiler, "_action_templates", None)
    return cpu, None if tpls is None else tpls.stats


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sb_db", nargs="?", default=str(SEED))
    ap.add_argument("--conf", help="the chassis' conf-ovs.txt (default: beside SB_DB)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile one extra pass")
    args = ap.parse_args(argv)

    ctx, keys = load(args.sb_db, args.conf)
    n_texts = len({k[0] for k in keys})
    print(f"{len(keys)} distinct (actions, pipeline, table) keys, {n_texts} distinct texts")
    gc.collect()
    gc.freeze()
    cpus = []
    for i in range(args.reps):
        cpu, stats = parse_pass(ctx, keys)
        cpus.append(cpu)
        print(f"pass {i + 1}: CPU {cpu:.3f} s ({len(keys) / cpu:,.0f} keys/s); "
              f"action templates {stats}")
    print(f"min CPU {min(cpus):.3f} s over {args.reps} passes")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        parse_pass(ctx, keys)
        prof.disable()
        pstats_: Any = pstats.Stats(prof)
        pstats_.sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main(sys.argv[1:])
