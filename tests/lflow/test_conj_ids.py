"""`test-lflow-conj-ids operations ...` vectors (test mode: preferred id = uuid parts[0]).

The allocation dump lists a hash table, whose order is unspecified, so the
entry lines of the dump are compared as a sorted list."""

from __future__ import annotations

import shlex
import uuid
from typing import Any

import pytest

from controller.lflow.conj_ids import ConjIds, hash_int
from tests.conformance.harness import vector_params


def run_operations(argv: list[str]) -> list[str]:
    assert argv[:3] == ["ovstest", "test-lflow-conj-ids", "operations"]
    args = argv[3:]
    n_ops = int(args.pop(0))
    ids = ConjIds(test_mode=True)
    out = []
    for _ in range(n_ops):
        op = args.pop(0)
        u = uuid.UUID(args.pop(0))
        if op == "alloc":
            n = int(args.pop(0))
            out.append(f"alloc({u}, {n}): {ids.alloc(u, None, n):#x}")
        elif op == "alloc-specified":
            start = int(args.pop(0), 16)
            n = int(args.pop(0))
            ok = ids.alloc_specified(u, None, start, n)
            out.append(f"alloc_specified({u}, {start:#x}, {n}): {'true' if ok else 'false'}")
        elif op == "free":
            ids.free(u)
            out.append(f"free({u})")
        else:
            raise AssertionError(op)
    out.extend(ids.dump().splitlines())
    return out


def _canonical(lines: list[str]) -> list[str]:
    return sorted(line for line in lines if line.startswith("lflow: ")) + [
        line for line in lines if not line.startswith("lflow: ")]


@pytest.mark.parametrize("vec", vector_params("lflow-conj-ids"))
def test_lflow_conj_ids(vec: dict[str, Any]) -> None:
    got = run_operations(shlex.split(vec["command"]))
    assert _canonical(got) == _canonical(vec["expected"])


def test_hash_mode_is_stable_and_avoids_zero() -> None:
    ids = ConjIds()
    lf = uuid.UUID("12345678-0000-0000-0000-000000000000")
    dp = uuid.UUID("9abcdef0-0000-0000-0000-000000000000")
    first = ids.alloc(lf, dp, 2)
    assert first == (hash_int(0x12345678, 0x9ABCDEF0) or 1)
    assert ids.find(lf, dp) == first
    # Re-allocating the same pair frees and reuses the same range.
    assert ids.alloc(lf, dp, 2) == first
    assert len(ids) == 2
    ids.free(lf)
    assert len(ids) == 0 and ids.find(lf, dp) == 0


def test_wraps_past_top_of_range() -> None:
    ids = ConjIds(test_mode=True)
    assert ids.alloc("ffffffff-0000-0000-0000-000000000000", None, 2) == 1


def test_matches_real_agent_conjunction_ids() -> None:
    # reference-data/small: datapath sw0 1136f417-..., two ACL lflows whose
    # cookies (first 32 bits of the lflow UUID) are 0x2e98b9f4 and 0x23bacfd1
    # got conj_id=3783492861 and conj_id=2313513968 from the C agent.
    ids = ConjIds()
    dp = "1136f417-de7d-40d4-9ed9-24a64af82285"
    assert ids.alloc("2e98b9f4-0000-0000-0000-000000000000", dp, 1) == 3783492861
    assert ids.alloc("23bacfd1-0000-0000-0000-000000000000", dp, 1) == 2313513968
