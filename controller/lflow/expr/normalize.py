"""Normalisation of OVN match expressions (OVN 23.03 lib/expr.c expr_normalize()).

Public API
----------
``normalize(expr) -> Expr`` takes a simplified expression (no relational
operators other than ==, no conditions) and returns a Boolean, a CMP, or an
OR of CMPs/ANDs where each AND operand is a CMP or a disjunction of CMPs over
one symbol: the shape ``expr_matches.to_matches`` turns into (conjunctive)
OpenFlow matches.  ``is_normalized(expr)`` checks that shape.

Clauses over one symbol are "crushed" (``crush_cmps``): ANDs of
value/mask tests are intersected, ORs are sorted and de-duplicated, and an
AND of ORs is multiplied out.  OR operands whose symbol is marked
must-crossproduct (or that mix symbols) are distributed over the AND.
"""

from __future__ import annotations

from controller.lflow.expr.nodes import (
    E_AND,
    E_BOOL,
    E_CMP,
    E_COND,
    E_OR,
    R_EQ,
    Expr,
    clone,
    combine,
    fix,
    get_unique_symbol,
    insert_sub,
    make_andor,
    make_bool,
    make_cmp_node,
    make_string_cmp,
)
from controller.lflow.symtab import Symbol


def _intersect(av: int, am: int, bv: int, bm: int) -> tuple[int, int] | None:
    """mf_subvalue_intersect(): combined (value, mask) or None if disjoint."""
    if (av ^ bv) & am & bm:
        return None
    return av | bv, am | bm


def _crush_and_string(e: Expr, symbol: Symbol) -> Expr:
    singleton: Expr | None = None
    kept: list[Expr] = []
    for sub in e.subs:
        new = crush_cmps(sub, symbol)
        t = new.type
        if t == E_CMP:
            if singleton is None:
                kept.append(new)
                singleton = new
            elif new.string != singleton.string:
                return make_bool(False)
        elif t == E_OR:
            kept.append(new)
        elif t == E_BOOL:
            if not new.boolean:
                return new
    if singleton is not None:
        for sub in kept:
            if sub.type == E_OR and not any(s.string == singleton.string for s in sub.subs):
                return make_bool(False)
        return singleton
    result: list[str] | None = None
    for sub in kept:
        strings = [s.string for s in sub.subs]
        if result is None:
            result = list(dict.fromkeys(strings))
        else:
            present = set(strings)
            result = [s for s in result if s in present]
        if not result:
            return make_bool(False)
    out = make_andor(E_OR, [make_string_cmp(symbol, R_EQ, s) for s in (result or [])])
    return fix(out)


def _crush_and_numeric(e: Expr, symbol: Symbol) -> Expr:
    value = 0
    mask = 0
    ors: list[Expr] = []
    for sub in e.subs:
        new = crush_cmps(sub, symbol)
        t = new.type
        if t == E_CMP:
            r = _intersect(value, mask, new.value, new.mask)
            if r is None:
                return make_bool(False)
            value, mask = r
        elif t == E_OR:
            ors.append(new)
        elif t == E_BOOL:
            if not new.boolean:
                return new
    if not ors:
        if not mask:
            return make_bool(True)
        return make_cmp_node(symbol, R_EQ, value, mask)
    if len(ors) == 1:
        # a && (b || c || d) -> ab || ac || ad.
        subs = []
        for sub in ors[0].subs:
            r = _intersect(value, mask, sub.value, sub.mask)
            if r is not None:
                sub.value, sub.mask = r
                subs.append(sub)
        if not subs:
            return make_bool(False)
        if len(subs) == 1:
            return subs[0]
        return crush_cmps(make_andor(E_OR, subs), symbol)
    # x && (a0 || a1) && (b0 || b1) && ... -> (xa0b0 || xa0b1 || ...) && ...
    as_, bs = ors[0], ors[1]
    rest = ors[2:]
    product: list[Expr] = []
    for a in as_.subs:
        ra = _intersect(value, mask, a.value, a.mask)
        if ra is None:
            continue
        for b in bs.subs:
            r = _intersect(ra[0], ra[1], b.value, b.mask)
            if r is not None:
                product.append(make_cmp_node(symbol, R_EQ, r[0], r[1]))
    if not product:
        return make_bool(False)
    if len(product) == 1:
        if not rest:
            return crush_cmps(product[0], symbol)
        return crush_cmps(make_andor(E_AND, [product[0]] + rest), symbol)
    if rest:
        return crush_cmps(make_andor(E_AND, [make_andor(E_OR, product)] + rest), symbol)
    return crush_cmps(make_andor(E_OR, product), symbol)


def _cmp_key(e: Expr) -> tuple[int, int] | str:
    if e.symbol.width:
        return (e.value, e.mask)
    return e.string


def _crush_or(e: Expr, symbol: Symbol) -> Expr:
    new: list[Expr] = []
    for sub in e.subs:
        insert_sub(e, new, crush_cmps(sub, symbol))
    e.subs = new
    e = fix(e)
    if e.type != E_OR:
        return e
    subs = sorted(e.subs, key=_cmp_key)  # type: ignore[arg-type]
    out = [subs[0]]
    last = _cmp_key(subs[0])
    for b in subs[1:]:
        k = _cmp_key(b)
        if k != last:
            out.append(b)
            last = k
        else:
            e.as_name = None
    e.subs = out
    return fix(e)


def crush_cmps(e: Expr, symbol: Symbol) -> Expr:
    """Reduces 'e' (over the single 'symbol') to a CMP, an OR of CMPs or a Boolean."""
    t = e.type
    if t == E_OR:
        return _crush_or(e, symbol)
    if t == E_AND:
        return _crush_and_numeric(e, symbol) if symbol.width else _crush_and_string(e, symbol)
    return e


def _sort_key(item: tuple[Expr, Symbol | None, int]) -> tuple[int, str | int]:
    e, sym, t = item
    if sym is not None:
        return (t, sym.name)
    if t == E_AND or t == E_OR:
        return (t, len(e.subs))
    return (t, 0)


def _expr_sort(e: Expr) -> Expr:
    items = []
    for sub in e.subs:
        sym = get_unique_symbol(sub)
        items.append((sub, sym, E_CMP if sym is not None else sub.type))
    items.sort(key=_sort_key)
    result: Expr | None = None
    n = len(items)
    i = 0
    while i < n:
        sub, sym, _ = items[i]
        if sym is None:
            result = combine(E_AND, result, sub)
            i += 1
            continue
        j = i + 1
        while j < n and items[j][1] is sym:
            j += 1
        if j == i + 1:
            crushed = crush_cmps(sub, sym)
        else:
            combined: Expr | None = sub
            for k in range(i + 1, j):
                combined = combine(E_AND, combined, items[k][0])
            assert combined is not None
            crushed = crush_cmps(combined, sym)
        if crushed.type == E_BOOL:
            if not crushed.boolean:
                return crushed
        else:
            result = combine(E_AND, result, crushed)
        i = j
    return result if result is not None else make_bool(True)


def _normalize_and(e: Expr) -> Expr:
    e = _expr_sort(e)
    if e.type != E_AND:
        return e
    subs = e.subs
    kept: list[Expr] = []
    for idx, a in enumerate(subs):
        b = subs[idx + 1] if idx + 1 < len(subs) else None
        if (b is None or a.type != E_CMP or b.type != E_CMP or a.symbol is not b.symbol):
            kept.append(a)
            continue
        if a.symbol.width:
            r = _intersect(a.value, a.mask, b.value, b.mask)
            if r is None:
                return make_bool(False)
            b.value, b.mask = r
        elif a.string != b.string:
            return make_bool(False)
    e.subs = subs = kept
    if len(subs) < 2:
        return subs[0]
    for sub in subs:
        if sub.type == E_CMP or sub.type == E_COND:
            continue
        assert sub.type == E_OR
        sym = get_unique_symbol(sub)
        if sym is None or sym.must_crossproduct:
            or_subs: list[Expr] = []
            for k in sub.subs:
                and_subs: list[Expr] = []
                for m in subs:
                    term = k if m is sub else m
                    if term.type == E_AND:
                        and_subs.extend(clone(p) for p in term.subs)
                    else:
                        and_subs.append(clone(term))
                or_subs.append(make_andor(E_AND, and_subs))
            return _normalize_or(make_andor(E_OR, or_subs))
    return e


def _normalize_or(e: Expr) -> Expr:
    new: list[Expr] = []
    for sub in e.subs:
        if sub.type == E_AND:
            n = _normalize_and(sub)
            if n.type == E_BOOL:
                if n.boolean:
                    return n
            else:
                insert_sub(e, new, n)
        else:
            new.append(sub)
    e.subs = new
    if not new:
        return make_bool(False)
    if len(new) == 1:
        return new[0]
    return e


def normalize(e: Expr) -> Expr:
    """OVS expr_normalize() (see module docstring)."""
    t = e.type
    if t == E_AND:
        return _normalize_and(e)
    if t == E_OR:
        return _normalize_or(e)
    return e


def _is_normalized_and(e: Expr) -> bool:
    return all(get_unique_symbol(s) is not None for s in e.subs)


def is_normalized(e: Expr) -> bool:
    """True if 'e' has the shape normalize() produces."""
    t = e.type
    if t == E_AND:
        return _is_normalized_and(e)
    if t == E_OR:
        if get_unique_symbol(e) is None:
            return all(get_unique_symbol(s) is not None or _is_normalized_and(s)
                       for s in e.subs)
        return True
    return t != E_COND
