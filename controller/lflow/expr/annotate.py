"""Annotation, simplification and condition evaluation (OVN 23.03 lib/expr.c).

Public API
----------
``annotate(expr, symtab) -> Expr`` expands subfields and predicates and adds
prerequisites (raises ``ExprError`` with the OVS message, e.g. "Recursive
expansion of symbol `self_recurse'.").  ``simplify(expr)`` rewrites every
numeric comparison into equality tests; ``evaluate_condition(expr,
is_chassis_resident)`` replaces ``is_chassis_resident("port")`` by a Boolean.
``parse_field_with_prereqs(lexer, symtab) -> (ExprField | None, Expr | None)``
is OVS expr_field_parse(): a field usable as an lvalue plus the annotated
prerequisites of it and of its parents.

Design note: the annotated expansion of each symbol's prerequisites and
predicate is cached on the symbol (``Symbol.cache``) the first time it is
computed successfully and cloned on every later use, so a predicate such as
``ip4`` is parsed once per process, not once per logical flow.  Only
successes are cached: an expansion that succeeded once cannot be recursive
(see the recursion argument in annotate_cmp), so reuse is safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from controller.lflow import lexer as lx
from controller.lflow.expr.nodes import (
    E_AND,
    E_BOOL,
    E_CMP,
    E_COND,
    E_OR,
    R_EQ,
    R_GE,
    R_LE,
    R_LT,
    R_NE,
    Expr,
    bitwise_range,
    clone,
    combine,
    combine2,
    expr_not,
    fix,
    get_unique_symbol,
    insert_sub,
    make_bool,
    make_cmp_node,
)
from controller.lflow.expr.parse import (
    ExprError,
    ExprField,
    parse_expr_string,
    parse_field,
)
from controller.lflow.symtab import Symbol


def _parse_and_annotate(text: str, symtab: Mapping[str, Symbol],
                        nesting: set[str]) -> Expr:
    e, err = parse_expr_string(text, symtab)
    if e is not None:
        try:
            return _annotate(e, symtab, True, nesting)
        except ExprError as exc:
            err = str(exc)
    raise ExprError(f"Error parsing expression `{text}' encountered as "
                    f"prerequisite or predicate of initial expression: {err}")


def _expansion(sym: Symbol, which: str, text: str, symtab: Mapping[str, Symbol],
               nesting: set[str]) -> Expr:
    key = (which, id(symtab))
    cached = sym.cache.get(key)
    if cached is None:
        cached = _parse_and_annotate(text, symtab, nesting)
        sym.cache[key] = cached
        # Keep the symtab alive as long as the key refers to it.
        sym.cache[("symtab", id(symtab))] = symtab
    return clone(cached)


def _annotate_cmp(e: Expr, symtab: Mapping[str, Symbol], append_prereqs: bool,
                  nesting: set[str]) -> Expr:
    sym = e.symbol
    if sym.name in nesting:
        raise ExprError(f"Recursive expansion of symbol `{sym.name}'.")
    nesting.add(sym.name)
    try:
        prereqs = None
        if append_prereqs and sym.prereqs is not None:
            prereqs = _expansion(sym, "prereqs", sym.prereqs, symtab, nesting)
        if sym.parent is not None:
            e.symbol = sym.parent
            e.value <<= sym.parent_ofs
            e.mask <<= sym.parent_ofs
        elif sym.predicate is not None:
            pred = _expansion(sym, "predicate", sym.predicate, symtab, nesting)
            positive = bool(e.value & 1) ^ (e.relop == R_NE)
            if not positive:
                expr_not(pred)
            e = pred
    finally:
        nesting.discard(sym.name)
    return combine2(E_AND, e, prereqs) if prereqs is not None else e


def _annotate(e: Expr, symtab: Mapping[str, Symbol], append_prereqs: bool,
              nesting: set[str]) -> Expr:
    t = e.type
    if t == E_CMP:
        return _annotate_cmp(e, symtab, append_prereqs, nesting)
    if t == E_AND or t == E_OR:
        if append_prereqs:
            sym = get_unique_symbol(e)
            if sym is not None:
                append_prereqs = False
                if sym.prereqs is not None:
                    prereqs = _expansion(sym, "prereqs", sym.prereqs, symtab, nesting)
                    e = combine2(E_AND, e, prereqs)
        new: list[Expr] = []
        for sub in e.subs:
            insert_sub(e, new, _annotate(sub, symtab, append_prereqs, nesting))
        e.subs = new
        return e
    return e


def annotate(e: Expr, symtab: Mapping[str, Symbol]) -> Expr:
    """Expands subfields/predicates and appends prerequisites (expr_annotate())."""
    return _annotate(e, symtab, True, set())


def parse_field_with_prereqs(lexer: lx.Lexer, symtab: Mapping[str, Symbol]
                             ) -> tuple[ExprField | None, Expr | None]:
    """OVS expr_field_parse(): (field, prerequisites) or (None, None) with
    lexer.error set."""
    f = parse_field(lexer, symtab)
    if f is not None and f.symbol.predicate is not None:
        lexer.set_error(f"Predicate symbol {f.symbol.name} used where lvalue required.")
    prereqs: Expr | None = None
    if lexer.error is None and f is not None:
        sym: Symbol | None = f.symbol
        while sym is not None:
            if sym.prereqs is not None:
                try:
                    p = _expansion(sym, "prereqs", sym.prereqs, symtab, set())
                except ExprError as exc:
                    lexer.set_error(str(exc))
                    break
                prereqs = combine(E_AND, prereqs, p)
            sym = sym.parent
    if lexer.error is not None:
        return None, None
    return f, prereqs


# ---------------------------------------------------------------------------
# Simplification.

def _simplify_ne(e: Expr) -> Expr:
    sym = e.symbol
    value = e.value
    mask = e.mask & ((1 << sym.width) - 1)
    new: Expr | None = None
    while mask:
        low = mask & -mask
        mask ^= low
        new = combine(E_OR, new, make_cmp_node(sym, R_EQ, (value & low) ^ low, low))
    return new if new is not None else make_bool(False)


def _simplify_relational(e: Expr) -> Expr:
    sym = e.symbol
    value = e.value
    start, n_bits = bitwise_range(e.mask, sym.width)
    assert n_bits > 0
    rng = ((1 << n_bits) - 1) << start
    lt = e.relop == R_LT or e.relop == R_LE
    eq = e.relop == R_LE or e.relop == R_GE
    # Bits of the range that equal 'lt' (1-bits for <, 0-bits for >).
    hits = (value & rng) if lt else (~value & rng)
    # No bit equal to !lt: "x <= max", "x >= 0" (true) or "x < max", "x > 0" (!=).
    if hits == rng:
        if eq:
            return make_bool(True)
        return _simplify_ne(e)
    new: Expr | None = None
    if eq:
        new = clone(e)
        new.relop = R_EQ
    z_bits = hits
    while z_bits:
        low = z_bits & -z_bits
        z_bits ^= low
        z = low.bit_length() - 1
        below = ((1 << (z - start)) - 1) << start
        c = make_cmp_node(sym, R_EQ, (value ^ low) & ~below, e.mask & ~below)
        new = combine(E_OR, new, c)
    return new if new is not None else make_bool(False)


def simplify(e: Expr) -> Expr:
    """Rewrites comparisons into equality tests (expr_simplify())."""
    t = e.type
    if t == E_CMP:
        if not e.symbol.width:
            return e
        r = e.relop
        if r == R_EQ:
            return make_bool(True) if not e.mask else e
        if r == R_NE:
            return _simplify_ne(e)
        return _simplify_relational(e)
    if t == E_AND or t == E_OR:
        new: list[Expr] = []
        for sub in e.subs:
            insert_sub(e, new, simplify(sub))
        e.subs = new
        return fix(e)
    return e


def _has_condition(e: Expr) -> bool:
    t = e.type
    if t == E_COND:
        return True
    if t == E_AND or t == E_OR:
        for sub in e.subs:
            if _has_condition(sub):
                return True
    return False


def _evaluate_condition(e: Expr, is_chassis_resident: Callable[[str], bool]) -> Expr:
    t = e.type
    if t == E_AND or t == E_OR:
        new: list[Expr] = []
        for sub in e.subs:
            insert_sub(e, new, fix(_evaluate_condition(sub, is_chassis_resident)))
        e.subs = new
        return fix(e)
    if t == E_COND:
        return make_bool(bool(is_chassis_resident(e.string)) ^ e.cond_not)
    return e


def evaluate_condition(e: Expr, is_chassis_resident: Callable[[str], bool]) -> Expr:
    """Replaces is_chassis_resident() conditions by Booleans.

    An expression without conditions is returned as is (in OVS the walk only
    re-applies fix(), which is the identity on a simplified expression)."""
    if e.type == E_CMP or e.type == E_BOOL or not _has_condition(e):
        return e
    return _evaluate_condition(e, is_chassis_resident)
