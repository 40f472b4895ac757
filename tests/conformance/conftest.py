"""Conformance tests replay the OVN 23.03.1 tests/ovn.at vectors (see harness.py)."""
