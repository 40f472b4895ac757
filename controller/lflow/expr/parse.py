"""Parser of the OVN match language (OVN 23.03 lib/expr.c, parsing half).

Public API
----------
``parse_expr(text, symtab, addr_sets=None, port_groups=None, dp_key=0,
addr_sets_ref=None, port_groups_ref=None) -> Expr`` raises ``ExprError`` with
the OVS error text; ``parse_expr_string(...)`` returns ``(expr, error)``
instead.  ``expr_parse(lexer, symtab, ...)`` parses from an existing ``Lexer``
(returns None and leaves the message in ``lexer.error`` on failure), for the
actions parser.

``addr_sets``: ``{name: ConstantSet}`` (global, referenced as ``$name``);
``port_groups``: ``{"<dp_key>_<name>": ConstantSet}`` (``@name`` looks up
``<dp_key>_<name>`` then ``name``).  Every reference is recorded:
``addr_sets_ref`` (``{name: count}``) and ``port_groups_ref`` (set of the
names looked up), so a caller can re-process only flows that use a set.

``parse_field(lexer, symtab) -> ExprField | None`` (``ExprField`` is the
named tuple ``(symbol, ofs, n_bits)``), ``format_field(field)``,
``parse_constant(lexer, field) -> Constant | None``,
``parse_constant_set(lexer) -> ConstantSet | None``, ``type_check(field,
n_bits, rw, scope) -> str | None`` (expr_type_check()), ``resolve_field(field)
-> (ovs_field_name, ofs, n_bits)``.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, MutableSet
from typing import NamedTuple

from controller.lflow import lexer as lx
from controller.lflow.expr.nodes import (
    C_INTEGER,
    C_STRING,
    E_AND,
    E_OR,
    R_EQ,
    R_GE,
    R_GT,
    R_LE,
    R_LT,
    R_NE,
    RELOP_FROM_TOKEN,
    RELOP_TURN,
    Constant,
    ConstantSet,
    Expr,
    combine,
    constant_width,
    expr_not,
    make_bool,
    make_cmp_node,
    make_cond,
    make_string_cmp,
)
from controller.lflow.symtab import L_BOOLEAN, L_NOMINAL, LEVEL_NAMES, Symbol

MAX_PAREN_DEPTH = 100


class ExprError(ValueError):
    """A parse or annotation error; str() is the OVS message."""


class ExprField(NamedTuple):
    symbol: Symbol
    ofs: int
    n_bits: int


class _Context:
    __slots__ = ("lexer", "symtab", "addr_sets", "port_groups", "addr_sets_ref",
                 "port_groups_ref", "dp_id", "not_", "paren_depth")

    def __init__(self, lexer: lx.Lexer, symtab: Mapping[str, Symbol] | None,
                 addr_sets: Mapping[str, ConstantSet] | None = None,
                 port_groups: Mapping[str, ConstantSet] | None = None,
                 addr_sets_ref: MutableMapping[str, int] | None = None,
                 port_groups_ref: MutableSet[str] | None = None,
                 dp_id: int = 0) -> None:
        self.lexer = lexer
        self.symtab = symtab
        self.addr_sets = addr_sets
        self.port_groups = port_groups
        self.addr_sets_ref = addr_sets_ref
        self.port_groups_ref = port_groups_ref
        self.dp_id = dp_id
        self.not_ = False
        self.paren_depth = 0


def _make_cmp1(f: ExprField, r: int, c: Constant) -> Expr:
    sym = f.symbol
    if sym.width:
        ones = (1 << f.n_bits) - 1
        value = (c.value & ones) << f.ofs
        mask = ((c.mask & ones) if c.masked else ones) << f.ofs
        return make_cmp_node(sym, r, value, mask)
    return make_string_cmp(sym, r, c.string or "")


def _type_check_set(ctx: _Context, f: ExprField, cs: ConstantSet) -> bool:
    sym = f.symbol
    if cs.type != (C_INTEGER if sym.width else C_STRING):
        ctx.lexer.set_error(
            f"{'Integer' if sym.width else 'String'} field {sym.name} is not "
            f"compatible with {'integer' if cs.type == C_INTEGER else 'string'} constant.")
        return False
    if sym.width:
        for c in cs.values:
            w = constant_width(c)
            if w > sym.width:
                ctx.lexer.set_error(f"{w}-bit constant is not compatible with "
                                    f"{sym.width}-bit field {sym.name}.")
                return False
    return True


def _make_cmp(ctx: _Context, f: ExprField, r: int, cs: ConstantSet) -> Expr | None:
    if not _type_check_set(ctx, f, cs):
        return None
    sym = f.symbol
    lexer = ctx.lexer
    if r != R_EQ and r != R_NE:
        if cs.in_curlies:
            lexer.set_error("Only == and != operators may be used with value sets.")
            return None
        if sym.level == L_NOMINAL or sym.level == L_BOOLEAN:
            lexer.set_error("Only == and != operators may be used with "
                            f"{LEVEL_NAMES[sym.level]} field {sym.name}.")
            return None
        if not cs.values:
            lexer.set_error("Only == and != operators may be used to compare a "
                            "field against an empty value set.")
            return None
        if cs.values[0].masked:
            lexer.set_error(
                "Only == and != operators may be used with masked constants.  "
                "Consider using subfields instead (e.g. eth.src[0..15] > 0x1111 "
                "in place of eth.src > 00:00:00:00:11:11/00:00:00:00:ff:ff).")
            return None
    if sym.level == L_NOMINAL:
        if sym.predicate is not None:
            for c in cs.values:
                positive = bool(c.value & 1) ^ (r == R_NE) ^ ctx.not_
                if not positive:
                    n = sym.name
                    lexer.set_error(
                        f"Nominal predicate {n} may only be tested positively, "
                        f"e.g. `{n}' or `{n} == 1' but not `!{n}' or `{n} == 0'.")
                    return None
        elif r != (R_NE if ctx.not_ else R_EQ):
            lexer.set_error(f"Nominal field {sym.name} may only be tested for "
                            "equality (taking enclosing `!' operators into account).")
            return None
    values = cs.values
    if not values:
        return make_bool(r == R_NE)
    e = _make_cmp1(f, r, values[0])
    if len(values) > 1:
        subs = [e]
        subs.extend(_make_cmp1(f, r, c) for c in values[1:])
        e = Expr(E_OR if r == R_EQ else E_AND)
        e.subs = subs
        if r == R_EQ and cs.as_name is not None:
            e.as_name = cs.as_name
    return e


def _parse_field(lexer: lx.Lexer, symtab: Mapping[str, Symbol] | None) -> ExprField | None:
    tok = lexer.token
    if tok.type != lx.T_ID:
        lexer.syntax_error("expecting field name")
        return None
    sym = symtab.get(tok.s or "") if symtab is not None else None
    if sym is None:
        lexer.syntax_error("expecting field name")
        return None
    lexer.get()
    if lexer.token.type != lx.T_LSQUARE:
        return ExprField(sym, 0, sym.width)
    lexer.get()
    if not sym.width:
        lexer.set_error(f"Cannot select subfield of string field {sym.name}.")
        return None
    low = lexer.force_int()
    if low is None:
        return None
    if lexer.match(lx.T_ELLIPSIS):
        high = lexer.force_int()
        if high is None:
            return None
    else:
        high = low
    if not lexer.force_match(lx.T_RSQUARE):
        return None
    if low > high:
        lexer.set_error(f"Invalid bit range {low} to {high}.")
        return None
    if high >= sym.width:
        lexer.set_error(f"Cannot select bits {low} to {high} of {sym.width}-bit "
                        f"field {sym.name}.")
        return None
    if sym.level == L_NOMINAL and (low != 0 or high != sym.width - 1):
        lexer.set_error(f"Cannot select subfield of nominal field {sym.name}.")
        return None
    return ExprField(sym, low, high - low + 1)


def parse_field(lexer: lx.Lexer, symtab: Mapping[str, Symbol] | None) -> ExprField | None:
    """Parses `name` or `name[lo..hi]`/`name[bit]`; None (lexer.error set) on error."""
    return _parse_field(lexer, symtab)


def format_field(f: ExprField) -> str:
    """OVS expr_field_format()."""
    sym = f.symbol
    if f.ofs or f.n_bits != sym.width:
        if f.n_bits != 1:
            return f"{sym.name}[{f.ofs}..{f.ofs + f.n_bits - 1}]"
        return f"{sym.name}[{f.ofs}]"
    return sym.name


def _assign_type(ctx: _Context, cs: ConstantSet, type: int) -> bool:
    if not cs.values or cs.type == type:
        cs.type = type
        return True
    ctx.lexer.syntax_error("expecting integer" if cs.type == C_INTEGER else "expecting string")
    return False


def _parse_addr_set(ctx: _Context, cs: ConstantSet) -> bool:
    name = ctx.lexer.token.s or ""
    if ctx.addr_sets_ref is not None:
        ctx.addr_sets_ref[name] = ctx.addr_sets_ref.get(name, 0) + 1
    aset = ctx.addr_sets.get(name) if ctx.addr_sets is not None else None
    if aset is None:
        ctx.lexer.syntax_error("expecting address set name")
        return False
    if not _assign_type(ctx, cs, C_INTEGER):
        return False
    if not cs.values:
        cs.as_name = name
    cs.values.extend(aset.values)
    return True


def _parse_port_group(ctx: _Context, cs: ConstantSet) -> bool:
    name = ctx.lexer.token.s or ""
    sb_name = f"{ctx.dp_id}_{name}"
    if ctx.port_groups_ref is not None:
        ctx.port_groups_ref.add(sb_name)
    pg = None
    if ctx.port_groups is not None:
        pg = ctx.port_groups.get(sb_name)
        if pg is None:
            pg = ctx.port_groups.get(name)
            if ctx.port_groups_ref is not None:
                ctx.port_groups_ref.add(name)
    if pg is None:
        ctx.lexer.syntax_error("expecting port group name")
        return False
    if not _assign_type(ctx, cs, C_STRING):
        return False
    cs.values.extend(pg.values)
    return True


def _parse_constant(ctx: _Context, cs: ConstantSet) -> bool:
    cs.as_name = None
    lexer = ctx.lexer
    tok = lexer.token
    t = tok.type
    if t == lx.T_INTEGER or t == lx.T_MASKED_INTEGER:
        if not _assign_type(ctx, cs, C_INTEGER):
            return False
        masked = t == lx.T_MASKED_INTEGER
        cs.values.append(Constant(tok.value, tok.mask if masked else 0, tok.format, masked))
        lexer.get()
        return True
    if t == lx.T_STRING:
        if not _assign_type(ctx, cs, C_STRING):
            return False
        cs.values.append(Constant(string=tok.s))
        lexer.get()
        return True
    if t == lx.T_TEMPLATE:
        lexer.set_error("Unexpanded template.")
        return False
    if t == lx.T_MACRO:
        if not _parse_addr_set(ctx, cs):
            return False
        lexer.get()
        return True
    if t == lx.T_PORT_GROUP:
        if not _parse_port_group(ctx, cs):
            return False
        lexer.get()
        return True
    lexer.syntax_error("expecting constant")
    return False


def _parse_constant_set(ctx: _Context) -> ConstantSet | None:
    cs = ConstantSet()
    lexer = ctx.lexer
    if lexer.match(lx.T_LCURLY):
        cs.in_curlies = True
        while True:
            if not _parse_constant(ctx, cs):
                return None
            lexer.match(lx.T_COMMA)
            if lexer.match(lx.T_RCURLY):
                return cs
    if not _parse_constant(ctx, cs):
        return None
    return cs


def parse_constant(lexer: lx.Lexer, f: ExprField) -> Constant | None:
    """One constant compatible with field 'f' (expr_constant_parse())."""
    if lexer.error is not None:
        return None
    ctx = _Context(lexer, None)
    cs = ConstantSet()
    if _parse_constant(ctx, cs) and _type_check_set(ctx, f, cs):
        return cs.values[0] if lexer.error is None else None
    return None


def parse_constant_set(lexer: lx.Lexer) -> ConstantSet | None:
    """A constant or {}-set of constants (expr_constant_set_parse())."""
    if lexer.error is not None:
        return None
    cs = _parse_constant_set(_Context(lexer, None))
    return cs if lexer.error is None else None


def _parse_chassis_resident(ctx: _Context) -> Expr | None:
    lexer = ctx.lexer
    if lexer.token.type != lx.T_STRING:
        lexer.syntax_error("expecting string")
        return None
    e = make_cond(lexer.token.s or "")
    lexer.get()
    if not lexer.force_match(lx.T_RPAREN):
        return None
    return e


def _parse_primary(ctx: _Context) -> tuple[Expr | None, bool]:
    """Returns (expr, atomic)."""
    lexer = ctx.lexer
    tok = lexer.token
    t = tok.type
    if t == lx.T_LPAREN:
        lexer.get()
        if ctx.paren_depth >= MAX_PAREN_DEPTH:
            lexer.set_error("Parentheses nested too deeply.")
            return None, False
        ctx.paren_depth += 1
        e = _parse_or_and(ctx)
        ctx.paren_depth -= 1
        if e is None or not lexer.force_match(lx.T_RPAREN):
            return None, False
        return e, True
    if t == lx.T_TEMPLATE:
        lexer.set_error("Unexpanded template.")
        return None, False
    if t == lx.T_ID:
        if lexer.lookahead() == lx.T_LPAREN:
            if lexer.match_id("is_chassis_resident"):
                lexer.get()
                return _parse_chassis_resident(ctx), True
            lexer.set_error("parsing function name")
            return None, False
        f = _parse_field(lexer, ctx.symtab)
        if f is None:
            return None, False
        r = RELOP_FROM_TOKEN.get(lexer.token.type)
        if r is None:
            if not f.n_bits or lexer.token.type == lx.T_EQUALS:
                lexer.syntax_error("expecting relational operator")
                return None, False
            if f.n_bits > 1 and not ctx.not_:
                lexer.set_error("Explicit `!= 0' is required for inequality "
                                "test of multibit field against 0.")
                return None, False
            cs = ConstantSet([Constant(0, 0, lx.F_HEXADECIMAL, False)])
            return _make_cmp(ctx, f, R_NE, cs), True
        lexer.get()
        cs1 = _parse_constant_set(ctx)
        if cs1 is None:
            return None, False
        return _make_cmp(ctx, f, r, cs1), False

    c1 = _parse_constant_set(ctx)
    if c1 is None:
        return None, False
    if (lexer.token.type not in RELOP_FROM_TOKEN and len(c1.values) == 1
            and c1.type == C_INTEGER and c1.values[0].format == lx.F_DECIMAL
            and not c1.values[0].masked and not c1.in_curlies):
        x = c1.values[0].value
        if x <= 1:
            return make_bool(bool(x)), True
    r1 = RELOP_FROM_TOKEN.get(lexer.token.type)
    if r1 is None:
        lexer.syntax_error("expecting relational operator")
        return None, False
    lexer.get()
    f = _parse_field(lexer, ctx.symtab)
    if f is None:
        return None, False
    r2 = RELOP_FROM_TOKEN.get(lexer.token.type)
    if r2 is None:
        return _make_cmp(ctx, f, RELOP_TURN[r1], c1), False
    lexer.get()
    c2 = _parse_constant_set(ctx)
    if c2 is None:
        return None, False
    if not (((r1 == R_LT or r1 == R_LE) and (r2 == R_LT or r2 == R_LE))
            or ((r1 == R_GT or r1 == R_GE) and (r2 == R_GT or r2 == R_GE))):
        lexer.set_error("Range expressions must have the form `x < field < y' or "
                        "`x > field > y', with each `<' optionally replaced by "
                        "`<=' or `>' by `>=').")
        return None, False
    e1 = _make_cmp(ctx, f, RELOP_TURN[r1], c1)
    e2 = _make_cmp(ctx, f, r2, c2)
    if lexer.error is not None:
        return None, False
    return combine(E_AND, e1, e2), False


def _parse_not(ctx: _Context) -> Expr | None:
    lexer = ctx.lexer
    if lexer.token.type == lx.T_LOG_NOT:
        lexer.get()
        ctx.not_ = not ctx.not_
        e, atomic = _parse_primary(ctx)
        ctx.not_ = not ctx.not_
        if e is not None:
            if not atomic:
                lexer.set_error("Missing parentheses around operand of !.")
                return None
            expr_not(e)
        return e
    return _parse_primary(ctx)[0]


def _parse_or_and(ctx: _Context) -> Expr | None:
    e = _parse_not(ctx)
    if e is None:
        return None
    lexer = ctx.lexer
    lt = lexer.token.type
    if lt == lx.T_LOG_AND or lt == lx.T_LOG_OR:
        etype = E_AND if lt == lx.T_LOG_AND else E_OR
        lexer.get()
        while True:
            e2 = _parse_not(ctx)
            if e2 is None:
                return None
            e = combine(etype, e, e2)
            if not lexer.match(lt):
                break
        t2 = lexer.token.type
        if t2 == lx.T_LOG_AND or t2 == lx.T_LOG_OR:
            lexer.set_error("&& and || must be parenthesized when used together.")
            return None
    return e


def expr_parse(lexer: lx.Lexer, symtab: Mapping[str, Symbol],
               addr_sets: Mapping[str, ConstantSet] | None = None,
               port_groups: Mapping[str, ConstantSet] | None = None,
               addr_sets_ref: MutableMapping[str, int] | None = None,
               port_groups_ref: MutableSet[str] | None = None,
               dp_id: int = 0) -> Expr | None:
    """Parses an expression from 'lexer' (positioned on its first token)."""
    if lexer.error is not None:
        return None
    ctx = _Context(lexer, symtab, addr_sets, port_groups, addr_sets_ref,
                   port_groups_ref, dp_id)
    e = _parse_or_and(ctx)
    return e if lexer.error is None else None


def parse_expr_string(text: str, symtab: Mapping[str, Symbol],
                      addr_sets: Mapping[str, ConstantSet] | None = None,
                      port_groups: Mapping[str, ConstantSet] | None = None,
                      dp_key: int = 0,
                      addr_sets_ref: MutableMapping[str, int] | None = None,
                      port_groups_ref: MutableSet[str] | None = None,
                      ) -> tuple[Expr | None, str | None]:
    """(expr, None) or (None, error message) (expr_parse_string())."""
    lexer = lx.Lexer(text)
    lexer.get()
    e = expr_parse(lexer, symtab, addr_sets, port_groups, addr_sets_ref,
                   port_groups_ref, dp_key)
    lexer.force_end()
    if lexer.error is not None:
        return None, lexer.error
    return e, None


def parse_expr(text: str, symtab: Mapping[str, Symbol],
               addr_sets: Mapping[str, ConstantSet] | None = None,
               port_groups: Mapping[str, ConstantSet] | None = None,
               dp_key: int = 0,
               addr_sets_ref: MutableMapping[str, int] | None = None,
               port_groups_ref: MutableSet[str] | None = None) -> Expr:
    """Parses 'text'; raises ExprError with the OVS message on failure."""
    e, err = parse_expr_string(text, symtab, addr_sets, port_groups, dp_key,
                               addr_sets_ref, port_groups_ref)
    if err is not None or e is None:
        raise ExprError(err or "parse error")
    return e


def type_check(f: ExprField, n_bits: int, rw: bool, scope: int) -> str | None:
    """Error message if 'f' is not 'n_bits' wide (0 = string) or not writable
    in 'scope' when 'rw' (expr_type_check()); None if acceptable."""
    sym = f.symbol
    if n_bits != f.n_bits:
        if n_bits and f.n_bits:
            return (f"Cannot use {f.n_bits}-bit field {sym.name}[{f.ofs}.."
                    f"{f.ofs + f.n_bits - 1}] where {n_bits}-bit field is required.")
        if n_bits:
            return f"Cannot use string field {sym.name} where numeric field is required."
        return f"Cannot use numeric field {sym.name} where string field is required."
    if rw and not (sym.rw & scope):
        return f"Field {sym.name} is not modifiable."
    return None


def resolve_field(f: ExprField) -> tuple[str, int, int]:
    """(OVS field name, ofs, n_bits) that 'f' denotes (expr_resolve_field()).

    For OVN-only fields (icmp4.frag_mtu) the name is the OVN field name."""
    sym = f.symbol
    ofs = f.ofs
    while sym.parent is not None:
        ofs += sym.parent_ofs
        sym = sym.parent
    name = sym.field or sym.ovn_field or sym.name
    if sym.width:
        return name, ofs, f.n_bits
    from ofctrl.fields import field as of_field
    return name, ofs, of_field(name).n_bits
