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


def field_parse(lexer: lx.Lexer, symtab: Any) -> tuple[FieldRef | None, list[Any]]:
    """expr_field_parse(): the field and the (annotated) prerequisites of its
    symbol and of every parent symbol."""
    if lexer.error is not None:
        return None, []
    from controller.lflow.expr_annotate import parse_field_with_prereqs
    f, prereqs = parse_field_with_prereqs(lexer, symtab)
    if f is None or lexer.error is not None:
        return None, []
    return FieldRef(f.symbol, f.ofs, f.n_bits), ([] if prereqs is None else [prereqs])


# ---------------------------------------------------------------------------
# Prerequisite expressions (delegated to the expression modules).

def parse_plain(text: str, symtab: Any) -> Any:
    """expr_parse_string(text) for a known-good prerequisite text."""
    from controller.lflow.expr_parse import parse_expr_string
    e, err = parse_expr_string(text, symtab)
    assert err is None, err
    return e


def combine_and(a: Any, b: Any) -> Any:
    """expr_combine(EXPR_T_AND, a, b) (takes ownership of both)."""
    if a is None:
        return b
    if b is None:
        return a
    from controller.lflow.expr_nodes import E_AND, combine
    return combine(E_AND, a, b)


def format_expr(e: Any) -> str:
    from controller.lflow.expr_nodes import expr_format
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
