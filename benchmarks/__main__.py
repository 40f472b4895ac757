"""Entry point of `make bench`: the seed-N benchmark (benchmarks/seed.py).

    make bench                          # seed-500, restart mode, 3 reps, 10 ops per kind
    make bench BENCH_ARGS=--quick       # seed-100
    python -m benchmarks --n 250 --reps 2 [--snapshot DIR] [--no-incremental]
    python -m benchmarks --mode wipe [--n 500 --reps 1]      # benchmarks/wipe.py
    python -m benchmarks --sizes 250,500,1000,2000           # benchmarks/scaling.py
    python -m benchmarks ... --snapshot-cache DIR            # keep/reuse DIR/seed-N
"""

import sys

from benchmarks.seed import main

sys.exit(main())
