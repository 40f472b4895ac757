"""Match templates: one parse/annotate/simplify/normalise per match *shape*.

Public API
----------
``MatchTemplates(symtab)``:

* ``shape(match_text) -> Shape | None``: the text tokenised once, with the
  constants that may vary between otherwise equal matches ("slots")
  abstracted; None if the text is not eligible (see below);
* ``instantiate(shape, prereq_key) -> Expr | None``: the normalised
  expression of this text, made from the template of its shape by putting
  the text's constants into it; None if the shape has no template yet;
* ``verify(shape, annotated) -> bool``: whether the annotated expression
  of a normal compile of ``shape`` has the form that makes the shape a
  template (call it between ``annotate`` and ``simplify``), and
  ``learn(shape, prereq_key, normalised)`` stores the template;
* ``stats``: shapes learnt, instantiations, ineligible texts.

Design note
-----------
Seed-500's 25,655 logical flows have only about 180 shapes: 500 routers and
switches make the same flows with other addresses and port names. A *slot*
is the constant of ``FIELD == CONST`` or ``FIELD == {CONST}`` where FIELD is
a field or a symbol with a parent (``reg0``: annotate moves the test to the
parent, shifting value and mask), not a predicate nor a ``[bits]`` subfield,
and CONST is an IPv4/IPv6/Ethernet or masked integer (numeric field) or a
string (string field: ``inport == "lrp-1"``). The shape key is every other
token exactly (type, text, value, mask, format), each slot's token type,
format and mask, plus the prerequisites the actions add; the slot values are
the instance.

Why substituting the values into the template's normalised expression gives
exactly what the normal compile gives: a template is only learnt if, in the
annotated expression (prerequisites included), each slot's symbol occurs in
exactly one comparison, which is ``==`` and holds the slot's own value and
mask. The parser uses a slot value only to copy it (``value & ones``; its
width checks depend on the format or mask, which are in the key; a
one-constant set is the same as the constant); annotate leaves a field's
``==`` alone and shifts a parented symbol's one (done to the slot value);
simplify keeps an ``==`` with a non-zero mask and drops one with mask 0
(mask in the key); normalise sorts by symbol name, and compares, intersects,
sorts or de-duplicates values only between comparisons of one symbol, which
for a slot's symbol are all copies of that one comparison, so every such
test comes out the same for any value. Hence the normalised expression has
the same structure for every instance, and a slot's symbol appears in it
only in copies of the slot comparison, holding the slot value: replacing
those values is the whole difference. Texts with address sets, port groups,
templates, ``is_chassis_resident()`` (values that change the structure) or
lexical errors are not eligible; they, and shapes whose first compile failed
or did not verify, use the normal path. Conversion to OpenFlow matches (port
lookups, conjunction ids) still runs per instance, as before.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.lflow import lexer as lx
from controller.lflow.expr.nodes import E_AND, E_CMP, E_OR, R_EQ, RELOP_FROM_TOKEN, Expr
from controller.lflow.symtab import Symbol

_ADDR_FORMATS = (lx.F_IPV4, lx.F_IPV6, lx.F_ETHERNET)
_NOT_ELIGIBLE = (lx.T_MACRO, lx.T_PORT_GROUP, lx.T_TEMPLATE, lx.T_ERROR)

# A slot: (symbol, is_string, mask) of the comparison annotate() leaves.
Slot = tuple[Symbol, bool, int]


class Shape:
    """One match text split into its shape key and its slot values."""

    __slots__ = ("key", "slots", "values")

    def __init__(self, key: tuple[object, ...], slots: tuple[Slot, ...],
                 values: tuple[int | str, ...]) -> None:
        self.key = key
        self.slots = slots
        self.values = values


class _Template:
    __slots__ = ("expr", "by_symbol")

    def __init__(self, expr: Expr, by_symbol: dict[Symbol, int]) -> None:
        self.expr = expr
        self.by_symbol = by_symbol      # slot symbol -> slot index


def _slot_value(tok: lx.Token, sym: Symbol) -> int:
    return tok.value & ((1 << sym.width) - 1)


def _slot_mask(tok: lx.Token, sym: Symbol) -> int:
    ones = (1 << sym.width) - 1
    return (tok.mask & ones) if tok.type == lx.T_MASKED_INTEGER else ones


class MatchTemplates:
    """See the module docstring."""

    def __init__(self, symtab: Mapping[str, Symbol]) -> None:
        self.symtab = symtab
        self._templates: dict[tuple[object, tuple[object, ...]], _Template | None] = {}
        self.stats = {"shapes": 0, "instances": 0, "ineligible": 0, "rejected": 0}

    def clear(self) -> None:
        self._templates.clear()

    def shape(self, text: str) -> Shape | None:
        if "is_chassis_resident" in text:
            self.stats["ineligible"] += 1
            return None
        toks: list[lx.Token] = []
        pos = 0
        lex = lx.lex_token
        while True:
            tok, _, pos = lex(text, pos)
            t = tok.type
            if t == lx.T_END:
                break
            if t in _NOT_ELIGIBLE:
                self.stats["ineligible"] += 1
                return None
            toks.append(tok)
        key: list[object] = []
        slots: list[Slot] = []
        values: list[int | str] = []
        symtab = self.symtab
        n = len(toks)
        for i, tok in enumerate(toks):
            t = tok.type
            sym: Symbol | None = None
            if (t == lx.T_STRING or t == lx.T_MASKED_INTEGER
                    or (t == lx.T_INTEGER and tok.format in _ADDR_FORMATS)):
                f = -1
                if i >= 2 and toks[i - 1].type == lx.T_EQ:
                    # FIELD == CONST, not the left end of a range.
                    if i + 1 >= n or toks[i + 1].type not in RELOP_FROM_TOKEN:
                        f = i - 2
                elif (i >= 3 and toks[i - 1].type == lx.T_LCURLY
                      and toks[i - 2].type == lx.T_EQ and i + 1 < n
                      and toks[i + 1].type == lx.T_RCURLY):
                    f = i - 3           # FIELD == {CONST}: one constant, the same
                if f >= 0 and toks[f].type == lx.T_ID:
                    sym = symtab.get(toks[f].s or "")
                    if (sym is None or sym.predicate is not None
                            or (t == lx.T_STRING) != (sym.width == 0)):
                        sym = None
            if sym is None:
                key.append((t, tok.s, tok.value, tok.mask, tok.format))
            elif t == lx.T_STRING:
                key.append((t,))
                slots.append((sym, True, 0))
                values.append(tok.s or "")
            else:
                # annotate() moves a subfield symbol's comparison to its
                # parent, shifted by parent_ofs.
                shift = sym.parent_ofs if sym.parent is not None else 0
                mask = _slot_mask(tok, sym) << shift
                key.append((t, tok.format, mask))
                slots.append((sym.parent or sym, False, mask))
                values.append(_slot_value(tok, sym) << shift)
        return Shape(tuple(key), tuple(slots), tuple(values))

    def known(self, shape: Shape, prereq_key: object) -> bool:
        return (prereq_key, shape.key) in self._templates

    def instantiate(self, shape: Shape, prereq_key: object) -> Expr | None:
        tpl = self._templates.get((prereq_key, shape.key))
        if tpl is None:
            return None
        self.stats["instances"] += 1
        return _subst(tpl.expr, tpl.by_symbol, shape.values)

    def verify(self, shape: Shape, annotated: Expr) -> bool:
        """True if each slot's symbol occurs in exactly one comparison of
        'annotated', an ``==`` with the slot's value and mask."""
        want: dict[Symbol, int] = {}
        for i, (sym, _s, _m) in enumerate(shape.slots):
            if sym in want:
                return False
            want[sym] = i
        seen = [0] * len(shape.slots)
        stack = [annotated]
        while stack:
            e = stack.pop()
            t = e.type
            if t == E_AND or t == E_OR:
                stack.extend(e.subs)
            elif t == E_CMP:
                i = want.get(e.symbol, -1)
                if i < 0:
                    continue
                seen[i] += 1
                sym, is_string, mask = shape.slots[i]
                v = shape.values[i]
                if e.relop != R_EQ or (e.string != v if is_string
                                       else (e.value != v or e.mask != mask)):
                    return False
        return all(c == 1 for c in seen)

    def learn(self, shape: Shape, prereq_key: object, normalized: Expr | None) -> None:
        """Stores the template ('normalized' None: the shape is not one)."""
        k = (prereq_key, shape.key)
        if normalized is None:
            self.stats["rejected"] += 1
            self._templates[k] = None
            return
        self.stats["shapes"] += 1
        by_symbol = {sym: i for i, (sym, _s, _m) in enumerate(shape.slots)}
        self._templates[k] = _Template(_subst(normalized, by_symbol, shape.values), by_symbol)


def _subst(e: Expr, by_symbol: dict[Symbol, int], values: tuple[int | str, ...]) -> Expr:
    """A deep copy of 'e' (as nodes.clone) with the slot values put in."""
    n = Expr(e.type)
    sym = n.symbol = e.symbol
    n.relop = e.relop
    n.mask = e.mask
    n.boolean = e.boolean
    n.cond_not = e.cond_not
    i = by_symbol.get(sym, -1) if e.type == E_CMP else -1
    if i < 0:
        n.value = e.value
        n.string = e.string
    elif sym.width:
        n.value = values[i]  # type: ignore[assignment]
        n.string = e.string
    else:
        n.value = e.value
        n.string = values[i]  # type: ignore[assignment]
    if e.subs:
        n.subs = [_subst(s, by_symbol, values) for s in e.subs]
    return n


def expr_key(e: Expr | None) -> object:
    """A hashable value equal for structurally equal expressions (the
    prerequisites part of a template key)."""
    if e is None:
        return None
    subs = tuple(expr_key(s) for s in e.subs) if e.subs else ()
    return (e.type, e.symbol.name, e.relop, e.value, e.mask, e.string, e.boolean,
            e.cond_not, subs)
