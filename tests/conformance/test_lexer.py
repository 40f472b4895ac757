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


def test_syntax_error_text() -> None:
    lexer = lx.Lexer("a next")
    lexer.get()
    assert lexer.match_id("a")
    assert not lexer.force_end()
    assert lexer.error == "Syntax error at `next' expecting end of input."


def test_lexical_error_wins() -> None:
    lexer = lx.Lexer("  &x")
    lexer.get()
    lexer.syntax_error("expecting foo")
    assert lexer.error == "`&' is only valid as part of `&&'."


def test_force_match_message() -> None:
    lexer = lx.Lexer("x")
    lexer.get()
    assert not lexer.force_match(lx.T_LPAREN)
    assert lexer.error == "Syntax error at `x' expecting `('."


def test_template_expansion() -> None:
    refs: set[str] = set()
    out = lx.parse_template_string("ip4.src == ^vip && ^unknown", {"vip": "10.0.0.1"}, refs)
    assert out == "ip4.src==10.0.0.1&&unknown"
    assert refs == {"vip", "unknown"}
    assert lx.parse_template_string("no templates", {}) == "no templates"


def test_comment_then_identifier() -> None:
    assert lex_line("a /* x */ cafe //tail") == "a cafe"
    assert lex_line("ca:fe:00:00:00:01 cafe") == "ca:fe:00:00:00:01 cafe"
