"""`python -m controller ...` is the `ovn-controller-py` command."""

from controller.cli import main

raise SystemExit(main())
