"""`test-ovn exhaustive` vectors: a port of the generator in tests/test-ovn.c.

The generator enumerates every tree shape of N terminals (Knuth's
compositions, AND/OR alternating by level, both root types) and, for each
shape, every assignment of terminal values to terminals 1..N-1 (terminal 0
is never advanced, a quirk of the C odometer, and the all-initial assignment
is never tested).  Each terminal runs through numeric comparisons (var x
relop x value/mask, skipping value bits outside the mask and, for < <= > >=,
zero or discontiguous masks), then string comparisons, then false/true.

The expected output is only the summary line, i.e. the number of
expressions the enumeration produces; it is computed here from the ported
generator (number of shapes x number of terminal values), so a mistake in
the port changes the count.  The C test also checks every expression: the
transformed expression (re-parsed / simplified / normalised / converted to
flows) must agree with the original on every assignment of the variables.
That check runs here on an evenly spread deterministic sample of the
enumerated expressions (``OVN_EXHAUSTIVE_SAMPLES`` per vector, default 2000;
set it to 0 to check every expression -- hours for the big vectors).
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterator

import pytest

from controller.lflow.expr import annotate as expr_annotate
from controller.lflow.expr import matches as expr_matches
from controller.lflow.expr import normalize as expr_normalize
from controller.lflow.expr import parse as expr_parse
from controller.lflow.expr.nodes import (
    E_AND,
    E_OR,
    R_EQ,
    R_NE,
    RELOP_TEXT,
    Expr,
    clone,
    expr_format,
    honors_invariants,
    make_andor,
    make_bool,
    make_cmp_node,
    make_string_cmp,
)
from controller.lflow.symtab import Symbol, Symtab
from tests.conformance.harness import vector_params

SAMPLES = int(os.environ.get("OVN_EXHAUSTIVE_SAMPLES", "2000"))

OP_CONVERT, OP_SIMPLIFY, OP_NORMALIZE, OP_FLOW = range(4)
_OPS = {"convert": OP_CONVERT, "simplify": OP_SIMPLIFY, "normalize": OP_NORMALIZE,
        "flow": OP_FLOW}
_OP_WORDS = ("converting", "simplifying", "normalizing", "converting to flows")


# ---------------------------------------------------------------------------
# Compositions and tree shapes (Knuth, TAOCP 7.2.1.1 exercise 12(a)).

class _Composition:
    __slots__ = ("state", "s", "sn")

    def __init__(self, n: int) -> None:
        self.state = 0
        self.s = [0] * 64
        self.s[0] = n
        self.sn = 1

    def next(self) -> int:
        s = self.s
        j = self.sn - 1
        self.state += 1
        if self.state & 1:
            if s[j] > 1:
                s[j] -= 1
                s[j + 1] = 1
                j += 1
            else:
                j -= 1
                s[j] += 1
        else:
            if s[j - 1] > 1:
                s[j - 1] -= 1
                s[j + 1] = s[j]
                s[j] = 1
                j += 1
            else:
                j -= 1
                if not j:
                    self.sn = 0
                    return 0
                s[j] = s[j + 1]
                s[j - 1] += 1
        self.sn = j + 1
        return self.sn


def _init_tree_shape__(ts: list[_Composition], n: int) -> None:
    if n <= 2:
        return
    c = _Composition(n)
    c.next()                    # the first composition (n itself) is skipped
    ts.append(c)
    for i in range(c.sn):
        _init_tree_shape__(ts, c.s[i])


def _init_tree_shape(n: int) -> list[_Composition]:
    c = _Composition(n)
    if n == 1:
        c.s[0] = 1
        c.sn = 1
        return [c]
    if n == 2:
        c.s[0] = c.s[1] = 1
        c.sn = 2
        return [c]
    ts: list[_Composition] = []
    _init_tree_shape__(ts, n)
    return ts


def _next_tree_shape(ts: list[_Composition]) -> bool:
    if len(ts) == 1 and ts[0].sn == 2 and ts[0].s[0] == 1 and ts[0].s[1] == 1:
        return False
    while ts:
        p = ts[-1]
        p.sn = p.next() if p.sn > 1 else 0
        if p.sn:
            for i in range(p.sn):
                _init_tree_shape__(ts, p.s[i])
            return True
        ts.pop()
    return False


def tree_shapes(n: int) -> Iterator[list[tuple[int, ...]]]:
    """Every tree shape of n leaves, each as the in-order list of compositions."""
    ts = _init_tree_shape(n)
    while True:
        yield [tuple(c.s[:c.sn]) for c in ts]
        if not _next_tree_shape(ts):
            return


# ---------------------------------------------------------------------------
# Terminals.

Terminal = tuple[Any, ...]   # ("n", var, relop, value, mask) | ("s", var, str) | ("b", bool)


def terminal_values(nvars: int, svars: int, bits: int, relops: list[int]) -> list[Terminal]:
    """Every value one terminal takes, in next_terminal() order."""
    out: list[Terminal] = []
    for var in range(nvars):
        for relop in relops:
            for nxt in range(1 << (2 * bits)):
                m = nxt >> bits
                v = nxt & ((1 << bits) - 1)
                if v & ~m:
                    continue
                contiguous = m and not (((m & -m) + m) & m)
                if relop not in (R_EQ, R_NE) and not contiguous:
                    continue
                out.append(("n", var, relop, v, m))
    for var in range(svars):
        for value in ("0", "1"):
            out.append(("s", var, value))
    out.append(("b", False))
    out.append(("b", True))
    return out


def _make_terminal(t: Terminal, nsyms: list[Symbol], ssyms: list[Symbol]) -> Expr:
    if t[0] == "n":
        return make_cmp_node(nsyms[t[1]], t[2], t[3], t[4])
    if t[0] == "s":
        return make_string_cmp(ssyms[t[1]], R_EQ, t[2])
    return make_bool(t[1])


def build_tree(base_type: int, shape: list[tuple[int, ...]], terms: list[Expr]) -> Expr:
    """build_tree_shape(): terminals are consumed left to right."""
    it = iter(terms)
    pos = [0]

    def build(type_: int) -> Expr:
        comp = shape[pos[0]]
        pos[0] += 1
        sub_type = E_OR if type_ == E_AND else E_AND
        subs = []
        for k in comp:
            if k > 2:
                subs.append(build(sub_type))
            elif k == 2:
                subs.append(make_andor(sub_type, [next(it), next(it)]))
            else:
                subs.append(next(it))
        return make_andor(type_, subs)

    return build(base_type)


# ---------------------------------------------------------------------------
# Checking one expression.

def _port(name: str) -> int:
    return int(name) if name.isdigit() else 0


def _classifier_finds(matches: list[expr_matches.ExprMatch], packet: dict[str, int]) -> bool:
    hits: dict[int, set[int]] = {}
    n_clauses: dict[int, int] = {}
    conj_flows: dict[int, expr_matches.ExprMatch] = {}
    for em in matches:
        cid = em.match.get("conj_id")
        if cid is not None:
            conj_flows[cid[0]] = em
            continue
        if not expr_matches.match_matches(em.match, packet):
            continue
        if not em.conjunctions:
            return True
        for conj_id, clause, n in em.conjunctions:
            hits.setdefault(conj_id, set()).add(clause)
            n_clauses[conj_id] = n
    for conj_id, clauses in hits.items():
        if len(clauses) == n_clauses[conj_id] and conj_id in conj_flows:
            flow = conj_flows[conj_id].match.without("conj_id")
            if expr_matches.match_matches(flow, packet):
                return True
    return False


def check_expression(expr: Expr, op: int, symtab: Symtab, nvars: int, svars: int,
                     bits: int) -> None:
    assert honors_invariants(expr)
    text = expr_format(expr)
    if op == OP_CONVERT:
        modified, err = expr_parse.parse_expr_string(text, symtab)
        assert err is None, f"{text} fails to parse ({err})"
        assert modified is not None
    else:
        modified = expr_annotate.simplify(clone(expr))
        modified = expr_annotate.evaluate_condition(modified, lambda port: True)
        assert honors_invariants(modified)
        if op >= OP_NORMALIZE:
            modified = expr_normalize.normalize(modified)
            assert honors_invariants(modified), expr_format(modified)
            assert expr_normalize.is_normalized(modified), expr_format(modified)
    matches: list[expr_matches.ExprMatch] = []
    if op == OP_FLOW:
        matches, _ = expr_matches.to_matches(modified, _port)
    mask = (1 << bits) - 1
    for subst in range(1 << (bits * nvars + svars)):
        packet = {f"reg{i}": (subst >> (i * bits)) & mask for i in range(nvars)}
        for i in range(svars):
            packet[f"reg{nvars + i}"] = (subst >> (nvars * bits + i)) & 1
        expected = expr_matches.evaluate(expr, packet, _port)
        actual = expr_matches.evaluate(modified, packet, _port)
        assert actual == expected, (
            f"{text} evaluates to {expected:d}, but {expr_format(modified)} "
            f"evaluates to {actual:d}, for {packet}")
        if op == OP_FLOW:
            found = _classifier_finds(matches, packet)
            assert found == expected, (
                f"{text} and {expr_format(modified)} evaluate to {expected:d} for "
                f"{packet}, flows: {expr_matches.format_matches(matches)}")


# ---------------------------------------------------------------------------
# Driver.

def _parse_argv(argv: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {"op": OP_FLOW, "nvars": 2, "svars": 2, "bits": 3,
                            "relops": list(range(6))}
    n_terminals = None
    for arg in argv[2:]:
        m = re.fullmatch(r"--(\w+)=(.*)", arg)
        if m is None:
            n_terminals = int(arg)
        elif m.group(1) == "operation":
            opts["op"] = _OPS[m.group(2)]
        elif m.group(1) == "relops":
            words = m.group(2).split()
            opts["relops"] = sorted(RELOP_TEXT.index(w) for w in words)
        else:
            opts[m.group(1)] = int(m.group(2))
    opts["n"] = n_terminals
    return opts


def _summary(op: int, n_tested: int, n: int, nvars: int, svars: int, bits: int,
             relops: list[int]) -> str:
    s = f"Tested {_OP_WORDS[op]}"
    s += f" {n_tested} expressions of {n} terminals" if n_tested else f" all {n}-terminal expressions"
    if nvars or svars:
        s += " with"
        if nvars:
            s += f" {nvars} numeric vars (each {bits} bits) in terms of operators"
            s += "".join(" " + RELOP_TEXT[r] for r in relops)
        if nvars and svars:
            s += " and"
        if svars:
            s += f" {svars} string vars"
    else:
        s += " in terms of Boolean constants only"
    return s + "."


def run_exhaustive(argv: list[str], samples: int) -> str:
    o = _parse_argv(argv)
    n, nvars, svars, bits, relops, op = (o["n"], o["nvars"], o["svars"], o["bits"],
                                         o["relops"], o["op"])
    symtab = Symtab()
    nsyms = [symtab.add_field(f"n{i}", f"reg{i}") for i in range(nvars)]
    ssyms = [symtab.add_string(f"s{i}", f"reg{nvars + i}") for i in range(svars)]
    values = terminal_values(nvars, svars, bits, relops)
    t = len(values)
    shapes = list(tree_shapes(n))
    per_shape = t ** (n - 1) - 1
    n_tested = 2 * len(shapes) * per_shape
    if n_tested:
        stride = 1 if samples <= 0 else max(1, n_tested // samples)
        for g in range(0, n_tested, stride):
            base_index, rest = divmod(g, len(shapes) * per_shape)
            shape_index, c = divmod(rest, per_shape)
            c += 1                      # the all-initial assignment is skipped
            digits = []
            for _ in range(n - 1):
                c, d = divmod(c, t)
                digits.append(d)
            chosen = [values[0]] + [values[d] for d in reversed(digits)]
            terms = [_make_terminal(x, nsyms, ssyms) for x in chosen]
            expr = build_tree(E_OR if base_index else E_AND, shapes[shape_index], terms)
            check_expression(expr, op, symtab, nvars, svars, bits)
    return _summary(op, n_tested, n, nvars, svars, bits, relops)


@pytest.mark.parametrize("vec", vector_params("exhaustive"))
def test_exhaustive(vec: dict[str, Any]) -> None:
    assert [run_exhaustive(vec["argv"], SAMPLES)] == vec["expected"]
