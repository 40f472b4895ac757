"""Unit tests of the exhaustive API beyond the upstream vectors (moved out of
tests/conformance so that directory holds exactly one case per vector)."""

from __future__ import annotations

from tests.conformance.test_exhaustive import run_exhaustive, tree_shapes


def test_tree_shapes_of_4() -> None:
    # Compositions of 4 other than 4 itself; a part of 3 expands into the
    # three shapes of 3 leaves (21, 12, 111).
    got = [", ".join("".join(str(k) for k in comp) for comp in shape)
           for shape in tree_shapes(4)]
    assert sorted(got) == sorted(["31, 21", "31, 12", "31, 111", "13, 21", "13, 12",
                                  "13, 111", "22", "211", "121", "112", "1111"])
    assert len(got) == len(set(got))


def test_full_small_vector() -> None:
    """Every one of the 578 two-terminal expressions, fully checked."""
    out = run_exhaustive(["test-ovn", "exhaustive", "--operation=flow", "2"], 0)
    assert out.startswith("Tested converting to flows 578 expressions of 2 terminals")
