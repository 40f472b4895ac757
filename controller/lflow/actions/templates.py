"""Action templates: one parse per action-text *shape*.

Public API
----------
``ActionTemplates()``: ``parse(text, pp)`` gives what
``parse_actions(text, pp)`` gives (a ``ParsedActions`` or an
``ActionError``), parsing only the first text of each shape and making the
others from it; ``stats`` counts texts that were the first of their shape
(``first``), the second, learnt from (``learnt``), made from a template
(``hits``), of a shape that is not a template (``rejected``) and without
constants to abstract (``plain``).

Design note
-----------
Seed-500's 7,111 distinct (actions, pipeline, table) keys have 44 shapes in
this sense, 10 of which cover 7,004 keys, and 73 keys have no slot (measured
with ``benchmarks.parse_actions_texts``, 2026-12-02): the same ``eth.dst =
MAC; outport = "PORT"; output;`` for every port.  A shape is learnt from its
second text, so shapes of one text cost only the scan.  A *slot* is the constant of
``FIELD = CONST;`` -- a constant token between an ``=`` and a ``;`` -- found
in the text by a scan (``_SCAN_RE``) that steps over string literals and
comments as the lexer does; its value, lexed alone, must be exactly one
integer, masked integer or string token.  The shape is the text around the
slots, character for character, plus per slot what the parser may look at
besides copying the value: string or integer, and for an integer its format
and mask, and for a decimal or hexadecimal one its bit length (the width
check against the field).  The parse parameters (pipeline, table, option
tables) are part of the key too.

Why a template instance is exactly the normal parse:

* Lexing.  The lexer scans each token from its start position only, and
  every slot is delimited by ``=`` (with white space) on the left and white
  space or ``;`` on the right, which end any token; string literals and
  comments, the only places where ``=`` or ``;`` are not tokens, are found
  as the lexer finds them; so the token stream of
  an instance is the template's with the slot tokens replaced.  When a
  template is learnt this is checked on its first text (the whole text's
  tokens equal the pieces' tokens with the slot tokens between them).
* Parsing.  A ``FIELD = CONST;`` statement is a load (``Load`` or
  ``OvnFieldLoad``), whose parse uses the constant only through
  ``parse_constant_for``: its kind and width (in the key) and a copy into
  the action.  Every load's constant is a slot, so a template is learnt only
  if its first text parsed, the loads found in its actions (in order,
  walking ``nested`` of ``clone``/``ct_commit``/controller actions; any
  other action holding actions rejects the shape) are exactly as many as
  the slots, and each holds its slot's constant.  Nothing else in the
  actions or the prerequisites came from a slot; an instance is the
  template's actions with new loads for the new constants, and the template's
  prerequisites.

Action objects are frozen, so the parts without slots are shared between
instances, as the parser shares ``Output()`` already.  The prerequisite
expression is shared too: callers read it or clone it (the compiler clones
it before combining it with the match), never change it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from typing import Any

from controller.lflow import lexer as lx
from controller.lflow.actions import ParsedActions, parse_actions
from controller.lflow.actions.base import ActionError, Const, OvnAction, ParseParams, token_const
from controller.lflow.actions.controller_ops import ControllerNested, OvnFieldLoad
from controller.lflow.actions.ct import CtCommitV2
from controller.lflow.actions.fields_ops import Load
from controller.lflow.actions.misc import Clone
from controller.lflow.expr.nodes import clone

_WS = r"[ \t\n\r\v\f]"
_STRING = r'"(?:[^"\\]|\\.)*"'
# A string literal or a comment (skipped), or "= VALUE" followed by optional
# white space and ";" (group 1: VALUE).  VALUE starts as a constant can: a
# digit or ":", or hex digits and ":" (MAC, IPv6), so that "= eth.src;" is
# not looked at; a constant it missed stays in a piece, and the shape is not
# learnt (the load count differs).  The "=" must not end "==", "<=", ">=" or "!=".
_SCAN_RE = re.compile(
    _STRING + r"|/\*[^\n]*?\*/|//[^\n]*"
    r"|(?<![=<>!])=" + _WS + r"*(" + _STRING + r"|(?:[0-9:]|[0-9a-fA-F]+:)[0-9A-Za-z.:/]*)"
    r"(?=" + _WS + r"*;)",
    re.DOTALL)

_CONST_TYPES = (lx.T_INTEGER, lx.T_MASKED_INTEGER, lx.T_STRING)
_LOADS = (Load, OvnFieldLoad)
_CONTAINERS = (Clone, ControllerNested, CtCommitV2)

SlotKind = tuple[int, int, int, int]
ShapeKey = tuple[tuple[str, ...], tuple[SlotKind, ...], int]


SlotMemo = dict[str, "tuple[SlotKind, Const] | None"]
_SLOT_MEMO_MAX = 1024


def _slot(value: str, memo: SlotMemo) -> tuple[SlotKind, Const] | None:
    """The kind and constant of a slot value, if it lexes to one constant
    (memoised: constants repeat between texts, and ``Const`` is frozen)."""
    try:
        return memo[value]
    except KeyError:
        pass
    slot = _lex_slot(value)
    if len(memo) >= _SLOT_MEMO_MAX:
        memo.clear()
    memo[value] = slot
    return slot


def _lex_slot(value: str) -> tuple[SlotKind, Const] | None:
    lexer = lx.Lexer(value)
    lexer.get()
    tok = lexer.token
    if tok.type not in _CONST_TYPES or lexer.get() != lx.T_END:
        return None
    if tok.type == lx.T_STRING:
        return (lx.T_STRING, 0, 0, 0), token_const(tok)
    fmt = tok.format
    bits = tok.value.bit_length() if fmt in (lx.F_DECIMAL, lx.F_HEXADECIMAL) else 0
    mask = tok.mask if tok.type == lx.T_MASKED_INTEGER else 0
    return (tok.type, fmt, mask, bits), token_const(tok)


def _scan(text: str, memo: SlotMemo) -> tuple[list[str], list[str], list[SlotKind], list[Const]]:
    """(pieces around the slots, slot value texts, kinds, constants)."""
    pieces: list[str] = []
    values: list[str] = []
    kinds: list[SlotKind] = []
    consts: list[Const] = []
    last = 0
    for m in _SCAN_RE.finditer(text):
        start = m.start(1)
        if start < 0:
            continue
        value = m.group(1)
        slot = _slot(value, memo)
        if slot is None:
            continue
        pieces.append(text[last:start])
        values.append(value)
        kinds.append(slot[0])
        consts.append(slot[1])
        last = m.end(1)
    pieces.append(text[last:])
    return pieces, values, kinds, consts


def split_slots(text: str, memo: SlotMemo | None = None
                ) -> tuple[tuple[str, ...], tuple[SlotKind, ...], list[Const]] | None:
    """(pieces around the slots, slot kinds, slot constants), or None if the
    text has no slot."""
    if "=" not in text:
        return None
    pieces, _, kinds, consts = _scan(text, {} if memo is None else memo)
    if not consts:
        return None
    return tuple(pieces), tuple(kinds), consts


def _tokens(text: str) -> list[tuple[Any, ...]]:
    lexer = lx.Lexer(text)
    out = []
    while lexer.get() != lx.T_END:
        t = lexer.token
        out.append((t.type, t.s, t.value, t.mask, t.format))
    return out


def _lexes_in_pieces(text: str) -> bool:
    """Whether 'text' lexes as its pieces and slot values lexed apart, with
    no lexical error."""
    whole = _tokens(text)
    pieces, values, _, _ = _scan(text, {})
    joined: list[tuple[Any, ...]] = []
    for piece, value in zip(pieces, values):
        joined.extend(_tokens(piece))
        joined.extend(_tokens(value))
    joined.extend(_tokens(pieces[-1]))
    return whole == joined and all(t[0] != lx.T_ERROR for t in whole)


def _loads(actions: Sequence[OvnAction], out: list[OvnAction]) -> bool:
    """Appends the loads of 'actions' in order; False if an action other
    than the known containers holds actions."""
    for a in actions:
        if isinstance(a, _LOADS):
            out.append(a)
        elif type(a) in _CONTAINERS:
            if not _loads(a.nested, out):  # type: ignore[attr-defined]
                return False
        else:
            for f in dataclasses.fields(a):  # type: ignore[arg-type]
                v = getattr(a, f.name)
                if isinstance(v, OvnAction) or (
                        isinstance(v, tuple) and any(isinstance(x, OvnAction) for x in v)):
                    return False
    return True


def _has_load(a: OvnAction) -> bool:
    found: list[OvnAction] = []
    _loads((a,), found)
    return bool(found)


def _rebuild(a: OvnAction, consts: Iterator[Const]) -> OvnAction:
    if isinstance(a, Load):
        return Load(a.dst, next(consts))
    if isinstance(a, OvnFieldLoad):
        return OvnFieldLoad(a.dst, next(consts))
    if type(a) in _CONTAINERS:
        nested = tuple(_rebuild(n, consts) for n in a.nested)  # type: ignore[attr-defined]
        return dataclasses.replace(a, nested=nested)  # type: ignore[type-var]
    return a


_SHARED, _LOAD, _CONTAINER = 0, 1, 2


class _Template:
    __slots__ = ("plan", "prereqs")

    def __init__(self, actions: list[OvnAction], prereqs: Any) -> None:
        # Per action: shared as is, a load to remake, or a container to remake.
        self.plan = tuple(
            (a, _LOAD if isinstance(a, _LOADS) else _CONTAINER if _has_load(a) else _SHARED)
            for a in actions)
        self.prereqs = None if prereqs is None else clone(prereqs)

    def instantiate(self, consts: list[Const]) -> ParsedActions:
        it = iter(consts)
        acts: list[OvnAction] = []
        for a, how in self.plan:
            if how == _SHARED:
                acts.append(a)
            elif how == _LOAD:
                acts.append(type(a)(a.dst, next(it)))  # type: ignore[call-arg, attr-defined]
            else:
                acts.append(_rebuild(a, it))
        return ParsedActions(acts, self.prereqs)


def _learn(text: str, consts: list[Const],
           parsed: ParsedActions | ActionError) -> _Template | None:
    if isinstance(parsed, ActionError):
        return None
    loads: list[OvnAction] = []
    if not _loads(parsed.actions, loads) or len(loads) != len(consts):
        return None
    if any(ld.imm != c for ld, c in zip(loads, consts)):  # type: ignore[attr-defined]
        return None
    if not _lexes_in_pieces(text):
        return None
    return _Template(parsed.actions, parsed.prereqs)


# A shape seen once: learnt from its second text (most shapes of a small
# chassis are seen once, and learning costs a second lexing of the text).
_ONCE = object()
# Shapes kept at most (seed-500 has 44, 10 of them with more than one text).
_MAX_SHAPES = 20000


class ActionTemplates:
    """See the module docstring."""

    def __init__(self) -> None:
        self._shapes: dict[ShapeKey, object] = {}     # _Template, None (not one), _ONCE
        # The parse parameters the keys refer to by id (kept alive here).
        self._params: dict[int, ParseParams] = {}
        self._slot_memo: SlotMemo = {}
        self.stats = {"learnt": 0, "hits": 0, "rejected": 0, "first": 0, "plain": 0}

    def parse(self, text: str, pp: ParseParams) -> ParsedActions | ActionError:
        split = split_slots(text, self._slot_memo)
        if split is None:
            self.stats["plain"] += 1
            return parse_actions(text, pp)
        pieces, kinds, consts = split
        key = (pieces, kinds, id(pp))
        shapes = self._shapes
        tpl = shapes.get(key)
        if type(tpl) is _Template:
            self.stats["hits"] += 1
            return tpl.instantiate(consts)
        parsed = parse_actions(text, pp)
        if tpl is None and key not in shapes:
            if len(shapes) >= _MAX_SHAPES:
                shapes.clear()      # bounded: start again
                self._params.clear()
            self._params[id(pp)] = pp
            shapes[key] = _ONCE
            self.stats["first"] += 1
        elif tpl is _ONCE:
            learnt = shapes[key] = _learn(text, consts, parsed)
            self.stats["learnt" if learnt is not None else "rejected"] += 1
        else:
            self.stats["rejected"] += 1
        return parsed
