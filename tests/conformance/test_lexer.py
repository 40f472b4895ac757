"""`test-ovn lex` vectors: tokens re-formatted, space separated, and re-lexable."""

from __future__ import annotations

from typing import Any

import pytest

from controller.lflow import lexer as lx
from tests.conformance.harness import vector_params


def lex_line(text: str) -> str:
    out = []
    lexer = lx.Lexer(text)
    while lexer.get() != lx.T_END:
        tok = lexer.token
        s = lx.format_token(tok)
        if tok.type != lx.T_ERROR:
            # The formatted token must lex back to the same token.
            again = lx.Lexer(s)
            again.get()
            t2 = again.token
            assert t2.type == tok.type, (s, t2)
            assert t2.s == tok.s
            if tok.type in (lx.T_INTEGER, lx.T_MASKED_INTEGER):
                assert t2.value == tok.value
                if tok.type == lx.T_MASKED_INTEGER:
                    assert t2.mask == tok.mask
        out.append(s)
    return " ".join(out)


@pytest.mark.parametrize("vec", vector_params("lexer"))
def test_lexer(vec: dict[str, Any]) -> None:
    assert lex_line(vec["input"]) == vec["expected"]
