"""`test-ovn parse-expr` vectors: expr_format() of the parse, or the error."""

from __future__ import annotations

from typing import Any

import pytest

from controller.lflow.expr.nodes import expr_format
from tests.conformance.harness import run_expr_steps, vector_params


def parse_line(text: str) -> str:
    e, err = run_expr_steps(text, 0)
    if err is not None:
        return err
    return expr_format(e)


@pytest.mark.parametrize("vec", vector_params("parse-expr"))
def test_parse_expr(vec: dict[str, Any]) -> None:
    assert parse_line(vec["input"]) == vec["expected"]


# ---------------------------------------------------------------------------
# The parsing API the actions parser builds on.
