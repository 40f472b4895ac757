"""`test-ovn annotate-expr` vectors."""

from __future__ import annotations

from typing import Any

import pytest

from controller.lflow.expr.nodes import expr_format
from tests.conformance.harness import run_expr_steps, vector_params


@pytest.mark.parametrize("vec", vector_params("annotate-expr"))
def test_annotate_expr(vec: dict[str, Any]) -> None:
    e, err = run_expr_steps(vec["input"], 1)
    assert (err if err is not None else expr_format(e)) == vec["expected"]
