"""Micro-benchmark: lex every distinct match and action text of a snapshot,
and shape every distinct match text (``MatchTemplates.shape``).

Reads the Logical_Flow table of ``sb.db.gz`` (seed-500 by default) with
``controller.lflow.snapshot.SbSnapshot``, then times, in CPU seconds
(``time.process_time``), four passes: ``lexer.tokenize`` over all distinct
match texts, the same over all distinct action texts, a ``Lexer`` stepped
with ``get()`` through each action text (``lookahead()`` at each
identifier, as the action parser does for ``name(``), and
``MatchTemplates(ovn_symtab()).shape`` over all distinct match texts (a fresh
instance per repetition).  Prints the minimum over ``--reps`` repetitions
(default 3) and the token counts.  Numbers are printed, never asserted.

    python -m benchmarks.lex_texts [--reps N] [SB_DB]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

from controller.lflow import lexer as lx
from controller.lflow.match_templates import MatchTemplates
from controller.lflow.snapshot import SbSnapshot
from controller.lflow.symtab import ovn_symtab

SEED = Path("/work/shared/reference-data/seed-500/sb.db.gz")


def _min_cpu(fn: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        gc.collect()
        c0 = time.process_time()
        fn()
        best = min(best, time.process_time() - c0)
    return best


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sb_db", nargs="?", default=str(SEED))
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)

    lflows = SbSnapshot(args.sb_db).table("Logical_Flow")
    matches = sorted({lf.match for lf in lflows})
    actions = sorted({lf.actions for lf in lflows})
    symtab = ovn_symtab()
    n_mtok = sum(len(lx.tokenize(t)) for t in matches)
    n_atok = sum(len(lx.tokenize(t)) for t in actions)

    def lex_all(texts: list[str]) -> None:
        tokenize = lx.tokenize
        for t in texts:
            tokenize(t)

    def step_actions() -> None:
        for t in actions:
            lexer = lx.Lexer(t)
            while lexer.get() != lx.T_END:
                if lexer.token.type == lx.T_ID:
                    lexer.lookahead()

    def shape_all() -> None:
        shape = MatchTemplates(symtab).shape
        for t in matches:
            shape(t)

    cpu_m = _min_cpu(lambda: lex_all(matches), args.reps)
    cpu_a = _min_cpu(lambda: lex_all(actions), args.reps)
    cpu_g = _min_cpu(step_actions, args.reps)
    cpu_s = _min_cpu(shape_all, args.reps)
    print(f"{len(lflows)} lflows: {len(matches)} distinct matches ({n_mtok} tokens), "
          f"{len(actions)} distinct actions ({n_atok} tokens); min CPU of {args.reps}:")
    print(f"lex matches {cpu_m:.3f} s ({cpu_m / max(n_mtok, 1) * 1e6:.2f} us/token)")
    print(f"lex actions {cpu_a:.3f} s ({cpu_a / max(n_atok, 1) * 1e6:.2f} us/token)")
    print(f"Lexer.get actions {cpu_g:.3f} s ({cpu_g / max(n_atok, 1) * 1e6:.2f} us/token)")
    print(f"shape matches {cpu_s:.3f} s ({cpu_s / max(len(matches), 1) * 1e6:.1f} us/text)")


if __name__ == "__main__":
    main(sys.argv[1:])
