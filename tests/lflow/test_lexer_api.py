"""Unit tests of the lexer API beyond the upstream vectors (moved out of
tests/conformance so that directory holds exactly one case per vector)."""

from __future__ import annotations

from controller.lflow import lexer as lx
from tests.conformance.test_lexer import lex_line


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
