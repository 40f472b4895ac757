"""`test-ovn expr-to-flows` vectors (output sorted, as the tests pipe it through sort)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.lflow import expr_matches
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


def test_address_set_members_are_remembered() -> None:
    e, err = run_expr_steps("ip4.src == $set1 && tcp", 3)
    assert err is None
    matches, n_conjs = expr_matches.to_matches(e, lookup_port)
    assert n_conjs == 0
    assert sorted((m.as_name, m.as_ip, m.as_mask) for m in matches) == [
        ("set1", 0x0A000001, 0xFFFFFFFF), ("set1", 0x0A000002, 0xFFFFFFFF),
        ("set1", 0x0A000003, 0xFFFFFFFF)]


def test_prepare_offsets_conjunction_ids() -> None:
    e, _ = run_expr_steps("ip4.src == {1.1.1.1, 1.1.1.2} && ip4.dst == {2.2.2.1, 2.2.2.2}", 3)
    matches, n_conjs = expr_matches.to_matches(e, lookup_port)
    assert n_conjs == 1
    expr_matches.prepare(matches, 99)
    lines = sorted(expr_matches.format_matches(matches))
    assert lines[0] == "conj_id=100,ip"
    assert all("conjunction(100, " in line for line in lines[1:])
