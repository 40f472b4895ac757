"""Benchmarks for ovn-controller-py (entry point: `python -m benchmarks`, run by `make bench`)."""
