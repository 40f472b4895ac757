"""The OVN match language: one import for the whole expression API.

The implementation is split by stage (each module documents its part):

* ``lexer``          tokens (``Lexer``, ``format_token``, templates)
* ``symtab``         symbols (``Symtab``, ``ovn_symtab()``)
* ``expr_nodes``     ``Expr`` tree, constants, ``expr_format``
* ``expr_parse``     ``parse_expr``, ``parse_field``, constants, address sets / port groups
* ``expr_annotate``  ``annotate``, ``simplify``, ``evaluate_condition``
* ``expr_normalize`` ``normalize``
* ``expr_matches``   ``to_matches`` (``ofctrl.match.Match``), ``evaluate``
* ``expr_microflow`` ``parse_microflow`` (inject-pkt), ``find_inport``
* ``conj_ids``       conjunction-id allocation

``compile_match()`` runs the pipeline ovn-controller applies to the match of
one logical flow (templates, parse with address sets / port groups and
reference recording, action prerequisites, annotate, simplify, conditions,
normalise, matches).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, MutableSet

from controller.lflow.expr_annotate import (
    annotate, evaluate_condition, parse_field_with_prereqs, simplify,
)
from controller.lflow.expr_matches import (
    ExprMatch, evaluate, format_matches, prepare, to_matches,
)
from controller.lflow.expr_nodes import (
    C_INTEGER, C_STRING, E_AND, E_BOOL, E_CMP, E_COND, E_OR, R_EQ, R_GE, R_GT,
    R_LE, R_LT, R_NE, Constant, ConstantSet, Expr, clone, combine,
    const_set_from_integers, const_set_from_strings, const_set_integers_diff,
    constant_format, constant_set_format, expr_format, expr_not,
)
from controller.lflow.expr_microflow import find_inport, parse_microflow
from controller.lflow.expr_normalize import is_normalized, normalize
from controller.lflow.expr_parse import (
    ExprError, ExprField, expr_parse, format_field, parse_constant,
    parse_constant_set, parse_expr, parse_expr_string, parse_field,
    resolve_field, type_check,
)
from controller.lflow.lexer import parse_template_string
from controller.lflow.symtab import Symbol

__all__ = [
    "C_INTEGER", "C_STRING", "E_AND", "E_BOOL", "E_CMP", "E_COND", "E_OR",
    "R_EQ", "R_GE", "R_GT", "R_LE", "R_LT", "R_NE", "Constant", "ConstantSet",
    "Expr", "ExprError", "ExprField", "ExprMatch", "annotate", "clone",
    "combine", "compile_match", "const_set_from_integers",
    "const_set_from_strings", "const_set_integers_diff", "constant_format",
    "constant_set_format", "find_inport", "parse_microflow",
    "evaluate", "evaluate_condition", "expr_format", "expr_not", "expr_parse",
    "format_field", "format_matches", "is_normalized", "normalize",
    "parse_constant", "parse_constant_set", "parse_expr", "parse_expr_string",
    "parse_field", "parse_field_with_prereqs", "prepare", "resolve_field",
    "simplify", "to_matches", "type_check",
]


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
