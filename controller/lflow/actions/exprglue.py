"""Glue between the action parser and the expression module.

Field references come from ``expr_annotate.parse_field_with_prereqs``
(OVS expr_field_parse()).  Prerequisite expressions are built with the
expression modules: a field's symbol prerequisites are
parsed *and annotated* (expanded), while prerequisites an action adds itself
(``add_prerequisite``: "ip", "ip4", "nd_ns", ...) are parsed but not
annotated, and all are AND-combined in order -- this is what ``has prereqs``
prints.
"""

from __future__ import annotations

from typing import Any

from controller.lflow import lexer as lx
from controller.lflow.actions.base import FieldRef
from controller.lflow.expr.annotate import parse_field_with_prereqs
from controller.lflow.expr.nodes import E_AND, clone, combine, expr_format
from controller.lflow.expr.parse import parse_expr_string


def field_parse(lexer: lx.Lexer, symtab: Any) -> tuple[FieldRef | None, list[Any]]:
    """expr_field_parse(): the field and the (annotated) prerequisites of its
    symbol and of every parent symbol."""
    if lexer.error is not None:
        return None, []
    f, prereqs = parse_field_with_prereqs(lexer, symtab)
    if f is None or lexer.error is not None:
        return None, []
    return FieldRef(f.symbol, f.ofs, f.n_bits), ([] if prereqs is None else [prereqs])


# ---------------------------------------------------------------------------
# Prerequisite expressions (delegated to the expression modules).

_PLAIN_CACHE: dict[tuple[int, str], Any] = {}


def parse_plain(text: str, symtab: Any) -> Any:
    """expr_parse_string(text) for a known-good prerequisite text ("ip",
    "ip4", "nd_ns", ...); parsed once per symbol table, cloned per use."""
    key = (id(symtab), text)
    e = _PLAIN_CACHE.get(key)
    if e is None:
        e, err = parse_expr_string(text, symtab)
        assert e is not None and err is None, err
        _PLAIN_CACHE[key] = e
    return clone(e)


def combine_and(a: Any, b: Any) -> Any:
    """expr_combine(EXPR_T_AND, a, b) (takes ownership of both)."""
    if a is None:
        return b
    if b is None:
        return a
    return combine(E_AND, a, b)


def format_expr(e: Any) -> str:
    return str(expr_format(e))


def parse_set_reference(ctx: Any, values: list[Any], kind: list[Any]) -> bool:
    """$set / @group inside an action constant: actions have no address
    sets or port groups in scope, as in OVN."""
    tok = ctx.lexer.token
    if tok.type == lx.T_MACRO:
        ctx.lexer.syntax_error("expecting address set name")
    else:
        ctx.lexer.syntax_error("expecting port group name")
    return False
