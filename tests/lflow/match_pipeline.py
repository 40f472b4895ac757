"""The match pipeline of one logical flow, as the compiler runs it
(``controller/lflow/compile.py`` runs the same stages with caches between
them): templates, parse with address sets / port groups and reference
recording, action prerequisites, annotate, simplify, conditions, normalise,
matches.  A test helper for the expression tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, MutableSet

from controller.lflow.expr.api import (
    E_AND,
    ConstantSet,
    Expr,
    ExprMatch,
    annotate,
    combine,
    evaluate_condition,
    normalize,
    parse_expr,
    simplify,
    to_matches,
)
from controller.lflow.lexer import parse_template_string
from controller.lflow.symtab import Symbol


def compile_match(text: str, symtab: Mapping[str, Symbol], *,
                  addr_sets: Mapping[str, ConstantSet] | None = None,
                  port_groups: Mapping[str, ConstantSet] | None = None,
                  dp_key: int = 0,
                  lookup_port: Callable[[str], int | None],
                  is_chassis_resident: Callable[[str], bool],
                  prereqs: Expr | None = None,
                  template_vars: Mapping[str, str] | None = None,
                  template_refs: MutableSet[str] | None = None,
                  addr_sets_ref: MutableMapping[str, int] | None = None,
                  port_groups_ref: MutableSet[str] | None = None,
                  ) -> tuple[list[ExprMatch], int]:
    """Matches of one logical-flow match string and the number of conjunction
    ids they use (ids start at 1; see ``prepare``).  'prereqs' (from the
    actions) is ANDed in before annotation and consumed.  Raises ExprError."""
    if template_vars is not None and "^" in text:
        text = parse_template_string(text, template_vars, template_refs)
    e = parse_expr(text, symtab, addr_sets, port_groups, dp_key, addr_sets_ref,
                   port_groups_ref)
    if prereqs is not None:
        e = combine(E_AND, e, prereqs) or e
    e = annotate(e, symtab)
    e = simplify(e)
    e = evaluate_condition(e, is_chassis_resident)
    e = normalize(e)
    return to_matches(e, lookup_port)
