"""Unit tests of the actions API beyond the upstream vectors (moved out of
tests/conformance so that directory holds exactly one case per vector)."""

from __future__ import annotations

from tests.conformance.test_actions import VECTORS


def test_vector_count() -> None:
    assert len(VECTORS) == 418
