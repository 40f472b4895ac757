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

The agent runs the stages itself (``controller/lflow/compile.py``, which
caches between them); ``tests/lflow/match_pipeline.py`` chains them for the
expression tests.
"""

from __future__ import annotations

from controller.lflow.expr.annotate import (
    annotate,
    evaluate_condition,
    parse_field_with_prereqs,
    simplify,
)
from controller.lflow.expr.matches import (
    ExprMatch,
    evaluate,
    format_matches,
    prepare,
    to_matches,
)
from controller.lflow.expr.microflow import find_inport, parse_microflow
from controller.lflow.expr.nodes import (
    C_INTEGER,
    C_STRING,
    E_AND,
    E_BOOL,
    E_CMP,
    E_COND,
    E_OR,
    R_EQ,
    R_GE,
    R_GT,
    R_LE,
    R_LT,
    R_NE,
    Constant,
    ConstantSet,
    Expr,
    clone,
    combine,
    const_set_from_integers,
    const_set_from_strings,
    const_set_integers_diff,
    constant_format,
    constant_set_format,
    expr_format,
    expr_not,
)
from controller.lflow.expr.normalize import is_normalized, normalize
from controller.lflow.expr.parse import (
    ExprError,
    ExprField,
    expr_parse,
    format_field,
    parse_constant,
    parse_constant_set,
    parse_expr,
    parse_expr_string,
    parse_field,
    resolve_field,
    type_check,
)

__all__ = [
    "C_INTEGER", "C_STRING", "E_AND", "E_BOOL", "E_CMP", "E_COND", "E_OR",
    "R_EQ", "R_GE", "R_GT", "R_LE", "R_LT", "R_NE", "Constant", "ConstantSet",
    "Expr", "ExprError", "ExprField", "ExprMatch", "annotate", "clone",
    "combine", "const_set_from_integers",
    "const_set_from_strings", "const_set_integers_diff", "constant_format",
    "constant_set_format", "find_inport", "parse_microflow",
    "evaluate", "evaluate_condition", "expr_format", "expr_not", "expr_parse",
    "format_field", "format_matches", "is_normalized", "normalize",
    "parse_constant", "parse_constant_set", "parse_expr", "parse_expr_string",
    "parse_field", "parse_field_with_prereqs", "prepare", "resolve_field",
    "simplify", "to_matches", "type_check",
]
