"""Normalised expressions to OpenFlow matches (OVN 23.03 lib/expr.c expr_to_matches()).

Public API
----------
``to_matches(expr, lookup_port) -> (list[ExprMatch], n_conjs)``: 'expr' must
be normalised; ``lookup_port(name) -> int | None`` maps logical port names
to keys (an unknown name makes that comparison false).  Each ``ExprMatch``
has ``match`` (``ofctrl.match.Match``), ``conjunctions`` (list of
``(conj_id, clause, n_clauses)``; empty for ordinary flows), and, when the
match came from one member of an address set, ``as_name``, ``as_ip`` and
``as_mask`` (the member's value/mask), so the agent can add or remove just
that flow when the address set changes.  Conjunction ids start at 1;
``prepare(matches, conj_id_ofs)`` offsets them (expr_matches_prepare()).
Equal matches are merged: conjunctions are concatenated, and a plain flow
absorbs conjunctive ones (OVS expr_match_add()).

``to_matches`` does not modify 'expr', so one normalised expression can be
turned into matches for several datapaths (with different port lookups).

``format_matches(matches)`` gives the lines ``expr_matches_print()`` prints.
``evaluate(expr, packet, lookup_port)`` evaluates an expression against a
packet given as ``{ovs_field_name: int}`` (OVS expr_evaluate()).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from controller.lflow.expr.nodes import (
    E_AND,
    E_BOOL,
    E_CMP,
    E_OR,
    R_EQ,
    R_GE,
    R_GT,
    R_LE,
    R_LT,
    Expr,
    get_unique_symbol,
)
from ofctrl.fields import field as of_field
from ofctrl.match import Match

LookupPort = Callable[[str], "int | None"]
PartialMatch = dict[str, tuple[int, int]]


class ExprMatch:
    """One OpenFlow match produced from an expression (see module docstring)."""

    __slots__ = ("match", "conjunctions", "as_name", "as_ip", "as_mask")

    def __init__(self, match: Match, conjunctions: list[tuple[int, int, int]] | None = None,
                 as_name: str | None = None, as_ip: int = 0, as_mask: int = 0) -> None:
        self.match = match
        self.conjunctions = conjunctions if conjunctions is not None else []
        self.as_name = as_name
        self.as_ip = as_ip
        self.as_mask = as_mask

    def format(self) -> str:
        s = self.match.to_string()
        for i, (cid, clause, n) in enumerate(self.conjunctions):
            s += f"{':' if i == 0 else ','} conjunction({cid}, {clause}/{n})"
        return s

    def __repr__(self) -> str:
        return f"ExprMatch({self.format()!r})"


_FIELD_INFO: dict[str, tuple[int, bool]] = {}


def _field_info(name: str) -> tuple[int, bool]:
    """(all-ones value, fully maskable) of OVS field 'name'."""
    info = _FIELD_INFO.get(name)
    if info is None:
        f = of_field(name)
        info = _FIELD_INFO[name] = ((1 << f.n_bits) - 1, f.maskable)
    return info


def constrain_match(cmp: Expr, lookup_port: LookupPort, m: PartialMatch) -> bool:
    """Applies CMP 'cmp' to partial match 'm'; False if a port name is unknown.

    Like OVS mf_mask_subfield()/mf_set(), a partial mask on a field that is
    not maskable (e.g. eth_type, from "!ip") leaves the match unchanged."""
    sym = cmp.symbol
    name = sym.field
    assert name is not None, f"symbol {sym.name} has no OpenFlow field"
    if sym.width:
        old = m.get(name)
        if old is None:
            value, mask = cmp.value & cmp.mask, cmp.mask
        else:
            ov, om = old
            mask = cmp.mask
            value, mask = (ov & ~mask) | (cmp.value & mask), om | mask
        ones, maskable = _field_info(name)
        if not maskable and mask & ones != ones and mask & ones:
            return True
        m[name] = (value, mask)
        return True
    port = lookup_port(cmp.string)
    if port is None:
        return False
    m[name] = (port, _field_info(name)[0])
    return True


def finish_match(m: PartialMatch) -> Match:
    return Match([(n, v, mask) for n, (v, mask) in m.items()])


class _Matches:
    __slots__ = ("by_match",)

    def __init__(self) -> None:
        self.by_match: dict[Match, ExprMatch] = {}

    def add(self, em: ExprMatch) -> None:
        old = self.by_match.get(em.match)
        if old is None:
            self.by_match[em.match] = em
            return
        if not old.conjunctions or not em.conjunctions:
            old.conjunctions = []
        else:
            old.conjunctions.append(em.conjunctions[0])
        old.as_name = None


def _add_disjunction(or_: Expr, lookup_port: LookupPort, base: PartialMatch,
                     clause: int, n_clauses: int, conj_id: int, out: _Matches) -> bool:
    n = 0
    for sub in or_.subs:
        m = dict(base)
        if not constrain_match(sub, lookup_port, m):
            continue
        conj = [(conj_id, clause, n_clauses)] if conj_id else []
        em = ExprMatch(finish_match(m), conj)
        if or_.as_name is not None:
            em.as_name = or_.as_name
            em.as_ip = sub.value & ((1 << 128) - 1)
            em.as_mask = sub.mask & ((1 << 128) - 1)
        out.add(em)
        n += 1
    return n > 0


def _add_conjunction(and_: Expr, lookup_port: LookupPort, n_conjs: list[int],
                     out: _Matches) -> None:
    m: PartialMatch = {}
    n_clauses = 0
    for sub in and_.subs:
        if sub.type == E_CMP:
            if not constrain_match(sub, lookup_port, m):
                return
        elif sub.type == E_OR:
            n_clauses += 1
        else:
            raise AssertionError("expression is not normalized")
    if not n_clauses:
        out.add(ExprMatch(finish_match(m)))
    elif n_clauses == 1:
        for sub in and_.subs:
            if sub.type == E_OR:
                _add_disjunction(sub, lookup_port, m, 0, 0, 0, out)
    else:
        n_conjs[0] += 1
        conj_id = n_conjs[0]
        clause = 0
        for sub in and_.subs:
            if sub.type == E_OR:
                if not _add_disjunction(sub, lookup_port, m, clause, n_clauses, conj_id, out):
                    return
                clause += 1
        m["conj_id"] = (conj_id, 0xFFFFFFFF)
        out.add(ExprMatch(finish_match(m)))


def _add_cmp_flow(cmp: Expr, lookup_port: LookupPort, out: _Matches) -> None:
    m: PartialMatch = {}
    if constrain_match(cmp, lookup_port, m):
        out.add(ExprMatch(finish_match(m)))


def to_matches(expr: Expr, lookup_port: LookupPort) -> tuple[list[ExprMatch], int]:
    """OpenFlow matches for normalised 'expr' and the number of conjunction ids used."""
    out = _Matches()
    n_conjs = [0]
    t = expr.type
    if t == E_CMP:
        _add_cmp_flow(expr, lookup_port, out)
    elif t == E_AND:
        _add_conjunction(expr, lookup_port, n_conjs, out)
    elif t == E_OR:
        if get_unique_symbol(expr) is not None:
            for sub in expr.subs:
                _add_cmp_flow(sub, lookup_port, out)
        else:
            for sub in expr.subs:
                if sub.type == E_AND:
                    _add_conjunction(sub, lookup_port, n_conjs, out)
                else:
                    _add_cmp_flow(sub, lookup_port, out)
    elif t == E_BOOL:
        if expr.boolean:
            out.add(ExprMatch(Match()))
    else:
        raise AssertionError("conditions must be evaluated before to_matches()")
    return list(out.by_match.values()), n_conjs[0]


def prepare(matches: list[ExprMatch], conj_id_ofs: int) -> None:
    """Adds 'conj_id_ofs' to every conjunction id and conj_id match (in place)."""
    if not conj_id_ofs:
        return
    for em in matches:
        cid = em.match.get("conj_id")
        if cid is not None:
            em.match = em.match.with_field("conj_id", cid[0] + conj_id_ofs)
        if em.conjunctions:
            em.conjunctions = [(i + conj_id_ofs, c, n) for i, c, n in em.conjunctions]


def format_matches(matches: list[ExprMatch]) -> list[str]:
    """Lines of OVS expr_matches_print() (unsorted)."""
    if not matches:
        return ["(no flows)"]
    return [em.format() for em in matches]


# ---------------------------------------------------------------------------
# Evaluation against a packet.

def _evaluate_cmp(e: Expr, packet: Mapping[str, int], lookup_port: LookupPort) -> bool:
    sym = e.symbol
    name = sym.field
    assert name is not None
    if sym.width:
        a = packet.get(name, 0) & e.mask
        b = e.value
    else:
        port = lookup_port(e.string)
        if port is None:
            return False
        a = packet.get(name, 0)
        b = port
    r = e.relop
    if r == R_EQ:
        return a == b
    if r == R_LT:
        return a < b
    if r == R_LE:
        return a <= b
    if r == R_GT:
        return a > b
    if r == R_GE:
        return a >= b
    return a != b


def evaluate(e: Expr, packet: Mapping[str, int], lookup_port: LookupPort) -> bool:
    """Value of annotated expression 'e' for 'packet' ({ovs field: value}).

    Conditions (is_chassis_resident) evaluate as true, as in OVS."""
    t = e.type
    if t == E_CMP:
        return _evaluate_cmp(e, packet, lookup_port)
    if t == E_AND:
        return all(evaluate(s, packet, lookup_port) for s in e.subs)
    if t == E_OR:
        return any(evaluate(s, packet, lookup_port) for s in e.subs)
    if t == E_BOOL:
        return e.boolean
    return not e.cond_not


def match_matches(em_match: Match, packet: Mapping[str, int]) -> bool:
    """True if 'packet' ({ovs field: value}) satisfies Match 'em_match'.

    Fields are compared by name, so only fields a Match keeps under their own
    name (registers, addresses, ports...) are meaningful here."""
    for name, value, mask in em_match.items:
        v = packet.get(name, 0)
        if mask is None:
            if v != value:
                return False
        elif v & mask != value:
            return False
    return True
