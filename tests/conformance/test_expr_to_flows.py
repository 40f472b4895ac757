"""`test-ovn expr-to-flows` vectors (output sorted, as the tests pipe it through sort)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.lflow.expr import matches as expr_matches
from tests.conformance.harness import lookup_port, run_expr_steps, vector_params


def expr_to_flows(text: str) -> list[str]:
    e, err = run_expr_steps(text, 3)
    if err is not None:
        return [err]
    matches, _ = expr_matches.to_matches(e, lookup_port)
    return expr_matches.format_matches(matches)


@pytest.mark.parametrize("vec", vector_params("expr-to-flows"))
def test_expr_to_flows(vec: dict[str, Any]) -> None:
    assert sorted(expr_to_flows(vec["input"])) == vec["expected_sorted"]


# ---------------------------------------------------------------------------
# Differential check against the flows the real ovn-controller 23.03.1
# installed for reference-data/rich (every logical flow of every datapath:
# plain matches, conjunctive clauses with their conjunction ids, conj_id
# flows).  The agent-side context is rebuilt from the SB snapshot: port keys
# per datapath (and multicast groups), is_chassis_resident for chassis hv1,
# port groups reduced to local ports, action prerequisites (from the actions
# parser), and the skip of switch flows pinned to a non-local port.
