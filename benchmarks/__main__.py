"""Entry point of `make bench`: the seed-N benchmark (benchmarks/seed.py).

    make bench                          # seed-500, 3 reps, 10 ops per kind
    make bench BENCH_ARGS=--quick       # seed-100
    python -m benchmarks --n 250 --reps 2 [--snapshot DIR] [--no-incremental]
"""

import sys

from benchmarks.seed import main

sys.exit(main())
