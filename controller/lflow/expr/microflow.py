"""Microflows and other expression queries (OVN 23.03 lib/expr.c, tail).

Public API
----------
``parse_microflow(text, symtab, lookup_port, addr_sets=None, port_groups=None)
-> (Match | None, error | None)``: a match expression describing exactly one
packet stream ("ip4 && tcp.src == 80 && inport == \"p1\"") turned into the
field values of that packet, as OVS expr_parse_microflow() (used by the
``inject-pkt`` command).  Errors: parse/annotation errors, "Constraints are
contradictory." and "Constraints are ambiguous: <annotated expr>.".

``find_inport(expr) -> (name | None, error | None)`` (expr_find_inport()).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from controller.lflow import lexer as lx
from controller.lflow.expr.annotate import annotate, evaluate_condition, simplify
from controller.lflow.expr.matches import PartialMatch, constrain_match, finish_match
from controller.lflow.expr.nodes import (
    E_AND,
    E_BOOL,
    E_CMP,
    E_OR,
    R_EQ,
    ConstantSet,
    Expr,
    expr_format,
)
from controller.lflow.expr.normalize import normalize
from controller.lflow.expr.parse import ExprError, expr_parse
from controller.lflow.symtab import Symbol
from ofctrl.match import Match


def parse_microflow(text: str, symtab: Mapping[str, Symbol],
                    lookup_port: Callable[[str], int | None],
                    addr_sets: Mapping[str, ConstantSet] | None = None,
                    port_groups: Mapping[str, ConstantSet] | None = None,
                    ) -> tuple[Match | None, str | None]:
    """See module docstring.  is_chassis_resident() counts as true."""
    lexer = lx.Lexer(text)
    lexer.get()
    e = expr_parse(lexer, symtab, addr_sets, port_groups)
    lexer.force_end()
    m: PartialMatch = {}
    if e is not None and lexer.error is None:
        try:
            e = annotate(e, symtab)
        except ExprError as exc:
            lexer.set_error(str(exc))
        else:
            annotated = expr_format(e)
            e = normalize(evaluate_condition(simplify(e), lambda port: True))
            if e.type == E_BOOL:
                if not e.boolean:
                    lexer.set_error("Constraints are contradictory.")
            elif e.type == E_OR:
                lexer.set_error(f"Constraints are ambiguous: {annotated}.")
            elif e.type == E_CMP:
                constrain_match(e, lookup_port, m)
            elif e.type == E_AND:
                for sub in e.subs:
                    if sub.type == E_CMP:
                        constrain_match(sub, lookup_port, m)
                    else:
                        lexer.set_error(f"Constraints are ambiguous: {annotated}.")
                        break
    if lexer.error is not None:
        return None, lexer.error
    return finish_match(m), None


def _find_inports(e: Expr, out: dict[str, None]) -> None:
    t = e.type
    if t == E_CMP:
        if e.symbol.name == "inport" and not e.symbol.width and e.relop == R_EQ:
            out[e.string] = None
    elif t == E_AND or t == E_OR:
        for sub in e.subs:
            _find_inports(sub, out)


def find_inport(e: Expr) -> tuple[str | None, str | None]:
    """The one logical input port 'e' matches on, or (None, error)."""
    found: dict[str, None] = {}
    _find_inports(e, found)
    if len(found) == 1:
        return next(iter(found)), None
    if not found:
        return None, "flow match expression does not match on inport"
    return None, "flow match expression matches on multiple inports"
