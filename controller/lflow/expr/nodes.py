"""Expression tree of the OVN match language (OVN 23.03 include/ovn/expr.h).

Public API
----------
``Expr`` is one mutable node; ``type`` is one of ``E_CMP``, ``E_AND``,
``E_OR``, ``E_BOOL``, ``E_COND`` (same order as OVS ``enum expr_type``):

* ``E_CMP``: ``symbol`` (``symtab.Symbol``), ``relop`` (``R_EQ`` ... ``R_GE``),
  ``value``/``mask`` (ints, bit 0 = least significant bit of the symbol) for
  numeric symbols, or ``string`` for string symbols.
* ``E_AND``/``E_OR``: ``subs`` (list of at least two nodes of other types
  once fixed up) and ``as_name`` (the address set a disjunction came from).
* ``E_BOOL``: ``boolean``.
* ``E_COND``: ``string`` (port of ``is_chassis_resident()``) and ``cond_not``.

Constructors ``make_cmp_node``, ``make_string_cmp``, ``make_andor``,
``make_bool``, ``make_cond``; helpers ``combine(type, a, b)``,
``expr_not(e)`` (in place), ``fix(e)``, ``clone(e)``, ``get_unique_symbol``,
``expr_format(e)`` (OVS expr_format()).  Transformations take ownership of
their argument (they may reuse or mutate it), as in OVS.

Constants: ``Constant`` (``value``, ``mask``, ``format``, ``masked`` or
``string``) and ``ConstantSet`` (``values``, ``type`` ``C_INTEGER``/
``C_STRING``, ``in_curlies``, ``as_name``), ``constant_format``,
``constant_set_format``, ``const_set_from_integers``,
``const_set_from_strings``, ``const_set_integers_diff``.
"""

from __future__ import annotations

import structlog

from controller.lflow import lexer as lx
from controller.lflow.symtab import Symbol
from controller.vlog import RateLimiter

log = structlog.get_logger("expr")
_invalid_entry_rl = RateLimiter(per_minute=5)

E_CMP = 0
E_AND = 1
E_OR = 2
E_BOOL = 3
E_COND = 4

R_EQ = 0
R_NE = 1
R_LT = 2
R_LE = 3
R_GT = 4
R_GE = 5
RELOP_TEXT = ("==", "!=", "<", "<=", ">", ">=")
RELOP_FROM_TOKEN = {lx.T_EQ: R_EQ, lx.T_NE: R_NE, lx.T_LT: R_LT, lx.T_LE: R_LE,
                    lx.T_GT: R_GT, lx.T_GE: R_GE}
RELOP_TURN = (R_EQ, R_NE, R_GT, R_GE, R_LT, R_LE)
RELOP_INVERT = (R_NE, R_EQ, R_GE, R_GT, R_LE, R_LT)

C_INTEGER = 0
C_STRING = 1


class Expr:
    """One expression node (see module docstring)."""

    __slots__ = ("type", "symbol", "relop", "value", "mask", "string", "subs",
                 "as_name", "boolean", "cond_not")

    def __init__(self, type: int) -> None:
        self.type = type
        self.symbol: Symbol = _NO_SYMBOL
        self.relop = R_EQ
        self.value = 0
        self.mask = 0
        self.string: str = ""
        self.subs: list[Expr] = []
        self.as_name: str | None = None
        self.boolean = False
        self.cond_not = False

    def __repr__(self) -> str:
        return f"Expr({expr_format(self)!r})"


_NO_SYMBOL = Symbol("", 0, None, 0, False, 0)


def make_cmp_node(symbol: Symbol, relop: int, value: int, mask: int) -> Expr:
    e = Expr(E_CMP)
    e.symbol = symbol
    e.relop = relop
    e.value = value
    e.mask = mask
    return e


def make_string_cmp(symbol: Symbol, relop: int, string: str) -> Expr:
    e = Expr(E_CMP)
    e.symbol = symbol
    e.relop = relop
    e.string = string
    return e


def make_andor(type: int, subs: list[Expr] | None = None) -> Expr:
    e = Expr(type)
    e.subs = subs if subs is not None else []
    return e


def make_bool(b: bool) -> Expr:
    e = Expr(E_BOOL)
    e.boolean = b
    return e


def make_cond(port: str, negated: bool = False) -> Expr:
    e = Expr(E_COND)
    e.string = port
    e.cond_not = negated
    return e


def combine(type: int, a: Expr | None, b: Expr | None) -> Expr | None:
    """AND/OR of 'a' and 'b', flattening nested nodes of the same type."""
    if a is None:
        return b
    if b is None:
        return a
    if a.type == type:
        if b.type == type:
            a.subs.extend(b.subs)
        else:
            a.subs.append(b)
        a.as_name = None
        return a
    if b.type == type:
        b.subs.insert(0, a)
        b.as_name = None
        return b
    return make_andor(type, [a, b])


def combine2(type: int, a: Expr, b: Expr) -> Expr:
    """combine() for two non-None operands."""
    r = combine(type, a, b)
    assert r is not None
    return r


def insert_sub(andor: Expr, out: list[Expr], new: Expr) -> None:
    """Appends 'new' to 'out' (the new sub list of 'andor'), splicing same-type nodes."""
    if new.type == andor.type:
        out.extend(new.subs)
    else:
        out.append(new)


def expr_not(e: Expr) -> None:
    """Negates 'e' in place (De Morgan)."""
    t = e.type
    if t == E_CMP:
        e.relop = RELOP_INVERT[e.relop]
    elif t == E_AND or t == E_OR:
        for sub in e.subs:
            expr_not(sub)
        e.type = E_OR if t == E_AND else E_AND
    elif t == E_BOOL:
        e.boolean = not e.boolean
    else:
        e.cond_not = not e.cond_not


def _fix_andor(e: Expr, short_circuit: bool) -> Expr:
    subs = e.subs
    for sub in subs:
        if sub.type == E_BOOL:
            for s in subs:
                if s.type == E_BOOL and s.boolean == short_circuit:
                    return make_bool(short_circuit)
            subs = [s for s in subs if s.type != E_BOOL]
            e.subs = subs
            break
    if len(subs) < 2:
        if not subs:
            return make_bool(not short_circuit)
        return subs[0]
    return e


def fix(e: Expr) -> Expr:
    """Drops Boolean operands at the top level, unwraps 1-operand AND/OR."""
    if e.type == E_AND:
        return _fix_andor(e, False)
    if e.type == E_OR:
        return _fix_andor(e, True)
    return e


def copy_node(e: Expr) -> Expr:
    """A copy of 'e' itself, without its sub-expressions."""
    n = Expr(e.type)
    n.symbol = e.symbol
    n.relop = e.relop
    n.value = e.value
    n.mask = e.mask
    n.string = e.string
    n.boolean = e.boolean
    n.cond_not = e.cond_not
    return n


def clone(e: Expr) -> Expr:
    """Deep copy."""
    n = copy_node(e)
    if e.subs:
        n.subs = [clone(s) for s in e.subs]
    return n


def get_unique_symbol(e: Expr) -> Symbol | None:
    """The only symbol 'e' (a CMP or AND/OR tree of CMPs) mentions, else None."""
    t = e.type
    if t == E_CMP:
        return e.symbol
    if t == E_AND or t == E_OR:
        prev: Symbol | None = None
        for sub in e.subs:
            sym = get_unique_symbol(sub)
            if sym is None or (prev is not None and sym is not prev):
                return None
            prev = sym
        return prev
    return None


def bitwise_range(mask: int, width: int) -> tuple[int, int]:
    """(start, n_bits) of the single run of 1-bits of 'mask' in [0,width), or (0, 0)."""
    m = mask & ((1 << width) - 1)
    if not m:
        return 0, 0
    start = (m & -m).bit_length() - 1
    run = m >> start
    if run & (run + 1):
        return 0, 0
    return start, run.bit_length()


def hex_subvalue(v: int) -> str:
    """OVS mf_format_subvalue()."""
    return f"0x{v:x}" if v else "0"


def _format_cmp(e: Expr, out: list[str]) -> None:
    sym = e.symbol
    if not sym.width:
        out.append(f"{sym.name} {RELOP_TEXT[e.relop]} {lx.json_escape(e.string)}")
        return
    ofs, n = bitwise_range(e.mask, sym.width)
    if n == 1 and (e.relop == R_EQ or e.relop == R_NE):
        positive = bool((e.value >> ofs) & 1) ^ (e.relop == R_NE)
        if not positive:
            out.append("!")
        out.append(sym.name)
        if sym.width > 1:
            out.append(f"[{ofs}]")
        return
    out.append(sym.name)
    if 0 < n < sym.width:
        out.append(f"[{ofs}..{ofs + n - 1}]" if n > 1 else f"[{ofs}]")
    out.append(f" {RELOP_TEXT[e.relop]} ")
    if n:
        out.append(hex_subvalue((e.value >> ofs) & ((1 << n) - 1)))
    else:
        out.append(f"{hex_subvalue(e.value)}/{hex_subvalue(e.mask)}")


def _format(e: Expr, out: list[str]) -> None:
    t = e.type
    if t == E_CMP:
        _format_cmp(e, out)
    elif t == E_AND or t == E_OR:
        op = " && " if t == E_AND else " || "
        for i, sub in enumerate(e.subs):
            if i:
                out.append(op)
            if sub.type == E_AND or sub.type == E_OR:
                out.append("(")
                _format(sub, out)
                out.append(")")
            else:
                _format(sub, out)
    elif t == E_BOOL:
        out.append("1" if e.boolean else "0")
    else:
        if e.cond_not:
            out.append("!")
        out.append(f"is_chassis_resident({lx.json_escape(e.string)})")


def expr_format(e: Expr) -> str:
    """String form of 'e' that parses back to an equivalent expression."""
    out: list[str] = []
    _format(e, out)
    return "".join(out)


def honors_invariants(e: Expr) -> bool:
    """OVS expr_honors_invariants()."""
    t = e.type
    if t == E_CMP:
        return not e.symbol.width or not (e.value & ~e.mask)
    if t == E_AND or t == E_OR:
        if len(e.subs) < 2:
            return False
        return all(s.type != t and honors_invariants(s) for s in e.subs)
    return True


# ---------------------------------------------------------------------------
# Constants.

class Constant:
    """An integer (value/mask/format/masked) or string constant."""

    __slots__ = ("value", "mask", "format", "masked", "string")

    def __init__(self, value: int = 0, mask: int = 0, format: int = lx.F_DECIMAL,
                 masked: bool = False, string: str | None = None) -> None:
        self.value = value
        self.mask = mask
        self.format = format
        self.masked = masked
        self.string = string

    def sort_key(self) -> tuple[int, int, int]:
        """Order of OVS compare_expr_constant_integer_cb()."""
        return (self.value, 0 if self.masked else 1, self.mask)

    def __repr__(self) -> str:
        if self.string is not None:
            return f"Constant({self.string!r})"
        return f"Constant({constant_format(self, C_INTEGER)})"


class ConstantSet:
    """A set of constants, from `{...}`, `$addrset`, `@portgroup` or one value."""

    __slots__ = ("values", "type", "in_curlies", "as_name")

    def __init__(self, values: list[Constant] | None = None, type: int = C_INTEGER,
                 in_curlies: bool = False, as_name: str | None = None) -> None:
        self.values = values if values is not None else []
        self.type = type
        self.in_curlies = in_curlies
        self.as_name = as_name


def constant_width(c: Constant) -> int:
    """Minimum width of integer constant 'c' (expr_constant_width())."""
    if c.masked:
        return c.mask.bit_length()
    f = c.format
    if f == lx.F_IPV4:
        return 32
    if f == lx.F_IPV6:
        return 128
    if f == lx.F_ETHERNET:
        return 48
    return c.value.bit_length()


def constant_format(c: Constant, type: int) -> str:
    if type == C_STRING:
        return lx.json_escape(c.string or "")
    tok = lx.Token(lx.T_MASKED_INTEGER if c.masked else lx.T_INTEGER,
                   value=c.value, mask=c.mask, format=c.format)
    return lx.format_token(tok)


def constant_set_format(cs: ConstantSet) -> str:
    body = ", ".join(constant_format(c, cs.type) for c in cs.values)
    if cs.in_curlies or len(cs.values) != 1:
        return "{" + body + "}"
    return body


def const_set_from_integers(values: list[str]) -> ConstantSet:
    """Address-set contents (expr_constant_set_create_integers()): each value
    is lexed; non-numbers are skipped; the result is sorted."""
    out: list[Constant] = []
    for text in values:
        tok, _, _ = lx.lex_token(text, 0)
        if tok.type == lx.T_INTEGER:
            out.append(Constant(tok.value, 0, tok.format, False))
        elif tok.type == lx.T_MASKED_INTEGER:
            out.append(Constant(tok.value, tok.mask, tok.format, True))
        elif _invalid_entry_rl.allow():
            log.warning(f"Invalid constant set entry: '{text}', token type: {tok.type}")
    out.sort(key=Constant.sort_key)
    return ConstantSet(out, C_INTEGER, True)


def const_set_from_strings(values: list[str], allowed: set[str] | None = None) -> ConstantSet:
    """Port-group contents (expr_const_sets_add_strings())."""
    out = [Constant(string=v) for v in values if allowed is None or v in allowed]
    return ConstantSet(out, C_STRING, True)


def const_set_integers_diff(old: ConstantSet, new: ConstantSet
                            ) -> tuple[ConstantSet | None, ConstantSet | None]:
    """(added, deleted) members between two sorted integer sets (as built by
    const_set_from_integers()), each None when empty
    (expr_constant_set_integers_diff())."""
    added: list[Constant] = []
    deleted: list[Constant] = []
    ov, nv = old.values, new.values
    oi = ni = 0
    while oi < len(ov) and ni < len(nv):
        ko, kn = ov[oi].sort_key(), nv[ni].sort_key()
        if ko < kn:
            deleted.append(ov[oi])
            oi += 1
        elif ko > kn:
            added.append(nv[ni])
            ni += 1
        else:
            oi += 1
            ni += 1
    deleted.extend(ov[oi:])
    added.extend(nv[ni:])
    return (ConstantSet(added) if added else None,
            ConstantSet(deleted) if deleted else None)
