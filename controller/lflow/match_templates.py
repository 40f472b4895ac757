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
Seed-500's 25,638 distinct match texts have 90 shapes in this sense
(measured: 25,540 texts compiled from a template, 98 the normal way): 500
routers and switches make the same flows with other addresses and port
names.  A *slot* is the constant part of ``FIELD == CONST`` or ``FIELD ==
{CONST, ...}`` where FIELD is a field or a symbol with a parent (``reg0``:
annotate moves the test to the parent, shifting value and mask), not a
predicate nor a ``[bits]`` subfield, and each CONST is an IPv4/IPv6/Ethernet
or masked integer (numeric field) or a string (string field: ``inport ==
"lrp-1"``).  The shape key is every other token exactly (type, text, value,
mask, format); for each slot its constants' token type, format and mask,
and for a set of several the ranks of its values (their order and
duplicates); and the prerequisites the actions add.  The slot values are
the instance.

Why putting an instance's values into the template's normalised expression
gives exactly what the normal compile gives.  A template is only learnt if,
in the annotated expression of its first text (prerequisites included), each
slot's symbol occurs only in ``==`` comparisons holding exactly that slot's
constants, and those of a set of several make up one whole OR.  Then:

* parse uses a slot value only to copy it (``value & ones``); its width
  checks depend on the format or mask (in the key); a one-constant set is the
  constant; annotate leaves a field's ``==`` alone and shifts a parented
  symbol's one (done to the slot value as well);
* simplify keeps an ``==`` with a non-zero mask and drops one with mask 0
  (mask in the key);
* normalise sorts operands by symbol name, and looks at values only between
  comparisons of one symbol: intersecting them in ANDs, sorting and
  de-duplicating them in ORs.  For a slot's symbol those are copies of the
  slot's one comparison (any value: every test comes out the same) or of its
  one OR, whose sort and de-duplication depend only on the ranks (in the key);
  distributing copies terms, so no AND gets two of its values.

So every instance gets the same structure, and a slot's symbol appears in it
only in copies of slot comparisons: mapping each teaching value to the
instance's value of the same position is the whole difference (a comparison
that holds no teaching value makes ``instantiate`` give up).  Texts with
address sets, port groups, templates, ``is_chassis_resident()`` (values that
change the structure) or lexical errors are not eligible; they, and shapes
whose first compile failed or did not verify, use the normal path.
Conversion to OpenFlow matches (port lookups, conjunction ids) runs per
instance, as before.  Templates depend on the symtab only, so they survive
``clear_text_cache``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from controller.lflow import lexer as lx
from controller.lflow.expr.nodes import E_AND, E_CMP, E_OR, R_EQ, RELOP_FROM_TOKEN, Expr, copy_node
from controller.lflow.symtab import Symbol

_ADDR_FORMATS = (lx.F_IPV4, lx.F_IPV6, lx.F_ETHERNET)
_NOT_ELIGIBLE = (lx.T_MACRO, lx.T_PORT_GROUP, lx.T_TEMPLATE, lx.T_ERROR)

# A slot: (symbol, is_string) of the comparisons annotate() leaves.
Slot = tuple[Symbol, bool]
# A slot's constants as those comparisons hold them: (value, mask) or string.
SlotValue = tuple[int, int] | str


class Shape:
    """One match text split into its shape key and its slot values."""

    __slots__ = ("key", "slots", "values")

    def __init__(self, key: tuple[object, ...], slots: tuple[Slot, ...],
                 values: tuple[tuple[SlotValue, ...], ...]) -> None:
        self.key = key
        self.slots = slots
        self.values = values


class _Template:
    __slots__ = ("expr", "by_symbol", "values")

    def __init__(self, expr: Expr, by_symbol: dict[Symbol, int],
                 values: tuple[tuple[SlotValue, ...], ...]) -> None:
        self.expr = expr
        self.by_symbol = by_symbol      # slot symbol -> slot index
        self.values = values            # the teaching instance's slot values


def _const(tok: lx.Token, sym: Symbol) -> SlotValue | None:
    """The comparison value of constant 'tok' against 'sym' once annotated,
    or None if 'tok' cannot be a slot constant."""
    t = tok.type
    if t == lx.T_STRING:
        return (tok.s or "") if not sym.width else None
    if not sym.width or not (t == lx.T_MASKED_INTEGER
                             or (t == lx.T_INTEGER and tok.format in _ADDR_FORMATS)):
        return None
    ones = (1 << sym.width) - 1
    mask = (tok.mask & ones) if t == lx.T_MASKED_INTEGER else ones
    # annotate() moves a parented symbol's test to its parent, shifted.
    shift = sym.parent_ofs if sym.parent is not None else 0
    return ((tok.value & ones) << shift, mask << shift)


def _ranks(vals: list[SlotValue]) -> tuple[int, ...]:
    order = {v: i for i, v in enumerate(sorted(set(vals)))}  # type: ignore[type-var]
    return tuple(order[v] for v in vals)


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
        toks = lx.tokenize(text)
        key: list[object] = []
        slots: list[Slot] = []
        values: list[tuple[SlotValue, ...]] = []
        symtab = self.symtab
        n = len(toks)
        i = 0
        while i < n:
            tok = toks[i]
            t = tok.type
            i += 1
            # Key entry: the punctuation kind (an int), an identifier's name (a
            # str), or the whole token (a tuple) for the other kinds.
            if t >= lx.T_LPAREN:
                key.append(t)
                continue
            if t != lx.T_ID:
                if t in _NOT_ELIGIBLE:
                    self.stats["ineligible"] += 1
                    return None
                key.append((t, tok.s, tok.value, tok.mask, tok.format))
                continue
            key.append(tok.s)
            # FIELD == CONST (not the left end of a range) or FIELD == {CONST, ...}.
            if i + 1 >= n or toks[i].type != lx.T_EQ:
                continue
            sym = symtab.get(tok.s or "")
            if sym is None or sym.predicate is not None:
                continue
            j = i + 1
            consts: list[lx.Token] = []
            curly = toks[j].type == lx.T_LCURLY
            if not curly:
                if j + 1 < n and toks[j + 1].type in RELOP_FROM_TOKEN:
                    continue
                consts.append(toks[j])
                j += 1
            else:
                j += 1
                while j < n and toks[j].type != lx.T_RCURLY:
                    if toks[j].type != lx.T_COMMA:
                        consts.append(toks[j])
                    j += 1
                if j >= n or not consts:
                    continue
                j += 1
            vals = [_const(c, sym) for c in consts]
            if None in vals:
                continue
            svals = cast(list[SlotValue], vals)
            # The token's own mask: the parser's width check uses it whole.
            key.append((lx.T_EQ, curly, tuple((c.type, c.format, c.mask) for c in consts),
                        _ranks(svals) if len(svals) > 1 else ()))
            slots.append((sym.parent or sym, not sym.width))
            values.append(tuple(svals))
            i = j
        return Shape(tuple(key), tuple(slots), tuple(values))

    def known(self, shape: Shape, prereq_key: object) -> bool:
        return (prereq_key, shape.key) in self._templates

    def instantiate(self, shape: Shape, prereq_key: object) -> Expr | None:
        """The normalised expression of 'shape', or None (no template, or a
        comparison the template cannot account for: take the normal path)."""
        tpl = self._templates.get((prereq_key, shape.key))
        if tpl is None:
            return None
        maps = [dict(zip(old, new)) for old, new in zip(tpl.values, shape.values)]
        try:
            e = _subst(tpl.expr, tpl.by_symbol, maps)
        except KeyError:
            return None
        self.stats["instances"] += 1
        return e

    def verify(self, shape: Shape, annotated: Expr) -> bool:
        """True if each slot's symbol occurs in 'annotated' only in ``==``
        comparisons holding exactly the slot's constants, and those of a
        set of several are the whole of one OR."""
        want: dict[Symbol, int] = {}
        for i, (sym, _s) in enumerate(shape.slots):
            if sym in want:
                return False
            want[sym] = i
        seen: list[list[SlotValue]] = [[] for _ in shape.slots]
        parents: list[set[int]] = [set() for _ in shape.slots]
        stack: list[tuple[Expr, Expr | None]] = [(annotated, None)]
        while stack:
            e, parent = stack.pop()
            t = e.type
            if t == E_AND or t == E_OR:
                stack.extend((s, e) for s in e.subs)
            elif t == E_CMP:
                i = want.get(e.symbol, -1)
                if i < 0:
                    continue
                if e.relop != R_EQ:
                    return False
                seen[i].append(e.string if shape.slots[i][1] else (e.value, e.mask))
                parents[i].add(id(parent))
                if len(shape.values[i]) > 1 and (parent is None or parent.type != E_OR
                                                 or len(parent.subs) != len(shape.values[i])):
                    return False
        for i, vals in enumerate(shape.values):
            if sorted(seen[i]) != sorted(vals):  # type: ignore[type-var]
                return False
            if len(vals) > 1 and len(parents[i]) != 1:
                return False
        return True

    def learn(self, shape: Shape, prereq_key: object, normalized: Expr | None) -> None:
        """Stores the template ('normalized' None: the shape is not one)."""
        k = (prereq_key, shape.key)
        if normalized is None:
            self.stats["rejected"] += 1
            self._templates[k] = None
            return
        self.stats["shapes"] += 1
        by_symbol = {sym: i for i, (sym, _s) in enumerate(shape.slots)}
        ident = [{v: v for v in vals} for vals in shape.values]
        self._templates[k] = _Template(_subst(normalized, by_symbol, ident), by_symbol,
                                       shape.values)


def _subst(e: Expr, by_symbol: dict[Symbol, int], maps: list[dict[SlotValue, SlotValue]]
           ) -> Expr:
    """A deep copy of 'e' (as nodes.clone) with the slot constants mapped
    (KeyError: a slot comparison holds no constant of its slot)."""
    n = copy_node(e)
    sym = e.symbol
    if e.type == E_CMP:
        i = by_symbol.get(sym, -1)
        if i >= 0:
            if sym.width:
                new = maps[i][(e.value, e.mask)]
                assert not isinstance(new, str)
                n.value = new[0]
            else:
                n.string = cast(str, maps[i][e.string])
    if e.subs:
        n.subs = [_subst(s, by_symbol, maps) for s in e.subs]
    return n


def expr_key(e: Expr | None) -> object:
    """A hashable value equal for structurally equal expressions (the
    prerequisites part of a template key)."""
    if e is None:
        return None
    subs = tuple(expr_key(s) for s in e.subs) if e.subs else ()
    return (e.type, e.symbol.name, e.relop, e.value, e.mask, e.string, e.boolean,
            e.cond_not, subs)
