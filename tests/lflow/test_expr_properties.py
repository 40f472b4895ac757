"""Property tests of the match-expression pipeline (hypothesis).

Random well-formed match strings over the OVN symbol table:
* compile without raising;
* normalisation is idempotent and yields the normalised shape;
* for random packets, the annotated expression, its normalised form and the
  generated OpenFlow matches (with conjunctions) all agree.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.lflow.expr import api as expr
from controller.lflow.expr.matches import ExprMatch, match_matches
from controller.lflow.symtab import ovn_symtab
from tests.lflow.match_pipeline import compile_match

SYMTAB = ovn_symtab()
PORTS = {"p1": 1, "p2": 2, "p3": 3}
ADDR_SETS = {"as1": expr.const_set_from_integers(["10.0.0.1", "10.0.0.2", "10.0.1.0/24"])}
PORT_GROUPS = {"7_pg": expr.const_set_from_strings(["p1", "p3", "p9"])}
SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

# (symbol text, width, constant formatter)
_ORDINAL = [
    ("eth.src", 48), ("eth.dst", 48), ("ip4.src", 32), ("ip4.dst", 32),
    ("tcp.src", 16), ("tcp.dst", 16), ("udp.dst", 16), ("reg0", 32), ("reg3", 32),
    ("reg9", 32), ("xxreg1", 128), ("flags", 32), ("ct_mark", 32), ("ct_label", 128),
    ("vlan.tci", 16), ("reg0[4..11]", 8), ("ct.est", 1), ("ct.new", 1),
    ("flags.loopback", 1), ("reg5[0]", 1),
]
# Boolean predicates without nominal prerequisites: negating "ip.is_frag"
# would negate its "ip" prerequisite into bitwise eth.type tests, which
# OpenFlow cannot express (OVS then silently drops them from the flow).
_BOOLEAN_PREDICATES = ["vlan.present", "eth.bcast", "eth.mcast"]
_NOMINAL_PREDICATES = ["ip4", "ip6", "ip", "tcp", "udp", "arp", "icmp4", "nd", "igmp"]
_SMALL = [0, 1, 2, 5, 6, 17, 0x800, 0x86dd, 0xa000001, 0xa000002, 0xa000100, 80, 443]


def _value(width: int) -> st.SearchStrategy[int]:
    top = (1 << width) - 1
    return st.one_of(st.sampled_from([v for v in _SMALL if v <= top]),
                     st.integers(0, top))


@st.composite
def ordinal_atom(draw: Any) -> tuple[str, list[int]]:
    name, width = draw(st.sampled_from(_ORDINAL))
    relop = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
    v = draw(_value(width))
    if relop in ("==", "!=") and width > 1:
        kind = draw(st.sampled_from(["plain", "masked", "set"]))
        if kind == "masked":
            m = draw(_value(width))
            return f"{name} {relop} {v:#x}/{m:#x}", [v & m]
        if kind == "set":
            vs = draw(st.lists(_value(width), min_size=1, max_size=3))
            return f"{name} {relop} {{{', '.join(hex(x) for x in vs)}}}", vs
    return f"{name} {relop} {v:#x}", [v]


@st.composite
def nominal_atom(draw: Any) -> tuple[str, list[int]]:
    kind = draw(st.sampled_from(["pred", "eth.type", "ip.proto", "port", "set", "pg", "frag"]))
    if kind == "frag":
        return "ip.is_frag", []
    if kind == "pred":
        return draw(st.sampled_from(_NOMINAL_PREDICATES)), []
    if kind == "eth.type":
        v = draw(st.sampled_from([0x800, 0x86dd, 0x806, 0x1234]))
        return f"eth.type == {v:#x}", [v]
    if kind == "ip.proto":
        v = draw(st.sampled_from([1, 6, 17, 58, 99]))
        return f"ip.proto == {v}", [v]
    if kind == "set":
        return "ip4.src == $as1", [0xa000001, 0xa000002, 0xa000100]
    if kind == "pg":
        return "outport == @pg", []
    ports = draw(st.lists(st.sampled_from(["p1", "p2", "p3", "p4"]), min_size=1, max_size=3))
    field = draw(st.sampled_from(["inport", "outport"]))
    if len(ports) == 1:
        return f'{field} == "{ports[0]}"', []
    return f"{field} == {{{', '.join(chr(34) + p + chr(34) for p in ports)}}}", []


def _expression(depth: int, negatable: bool) -> st.SearchStrategy[tuple[str, list[int]]]:
    atoms = [ordinal_atom(), st.sampled_from([(p, []) for p in _BOOLEAN_PREDICATES]),
             st.sampled_from([("0", []), ("1", [])])]
    if not negatable:
        atoms.append(nominal_atom())
    leaf = st.one_of(*atoms)
    if depth == 0:
        return leaf

    @st.composite
    def compound(draw: Any) -> tuple[str, list[int]]:
        op = draw(st.sampled_from([" && ", " || "]))
        parts = draw(st.lists(_expression(depth - 1, negatable), min_size=2, max_size=3))
        text = op.join(f"({t})" for t, _ in parts)
        consts = [c for _, cs in parts for c in cs]
        return text, consts

    @st.composite
    def negated(draw: Any) -> tuple[str, list[int]]:
        t, cs = draw(_expression(depth - 1, True))
        return f"!({t})", cs

    return st.one_of(leaf, compound(), negated())


EXPRESSIONS = _expression(2, False)


def _lookup(name: str) -> int | None:
    return PORTS.get(name)


def _pipeline(text: str) -> tuple[expr.Expr, expr.Expr, list[ExprMatch]]:
    e = expr.parse_expr(text, SYMTAB, ADDR_SETS, PORT_GROUPS, 7)
    annotated = expr.annotate(e, SYMTAB)
    n = expr.simplify(expr.clone(annotated))
    n = expr.evaluate_condition(n, lambda p: True)
    n = expr.normalize(n)
    matches, _ = expr.to_matches(expr.clone(n), _lookup)
    return annotated, n, matches


@given(EXPRESSIONS)
@SETTINGS
def test_well_formed_matches_compile(case: tuple[str, list[int]]) -> None:
    text, _ = case
    matches, n_conjs = compile_match(
        text, SYMTAB, addr_sets=ADDR_SETS, port_groups=PORT_GROUPS, dp_key=7,
        lookup_port=_lookup, is_chassis_resident=lambda p: True)
    assert n_conjs >= 0
    for m in matches:
        m.match.to_string()


@given(EXPRESSIONS)
@SETTINGS
def test_normalize_is_idempotent(case: tuple[str, list[int]]) -> None:
    _, n, _ = _pipeline(case[0])
    assert expr.is_normalized(n)
    once = expr.expr_format(n)
    again = expr.normalize(expr.clone(n))
    assert expr.is_normalized(again)
    assert expr.expr_format(again) == once


def _packet(draw: Any, consts: list[int]) -> dict[str, int]:
    def val(width: int) -> int:
        top = (1 << width) - 1
        pool = [c & top for c in consts] + [0, top]
        return int(draw(st.one_of(st.sampled_from(pool), st.integers(0, top))))

    p = {
        "eth_src": val(48), "eth_dst": val(48),
        "eth_type": draw(st.sampled_from([0x800, 0x86dd, 0x806, 0x1234])),
        "nw_proto": draw(st.sampled_from([1, 2, 6, 17, 58, 99])),
        "ip_src": val(32), "ip_dst": val(32), "tcp_src": val(16), "tcp_dst": val(16),
        "udp_dst": val(16), "ip_frag": draw(st.integers(0, 3)), "nw_ttl": draw(st.sampled_from([255, 64])),
        "icmpv6_type": draw(st.sampled_from([135, 136, 1])), "icmpv6_code": draw(st.sampled_from([0, 1])),
        "reg10": val(32), "reg14": draw(st.integers(0, 4)), "reg15": draw(st.integers(0, 4)),
        "ct_state": val(8), "ct_mark": val(32), "ct_label": val(128), "vlan_tci": val(16),
        "xxreg0": val(128), "xxreg1": val(128), "xreg4": val(64),
    }
    mask32 = 0xFFFFFFFF
    for k in range(2):
        for j in range(4):
            p[f"reg{4 * k + j}"] = (p[f"xxreg{k}"] >> (32 * (3 - j))) & mask32
    p["reg8"] = p["xreg4"] >> 32
    p["reg9"] = p["xreg4"] & mask32
    return p


def _found(matches: list[ExprMatch], packet: dict[str, int]) -> bool:
    hits: dict[int, set[int]] = {}
    sizes: dict[int, int] = {}
    conj_flows = {}
    for em in matches:
        cid = em.match.get("conj_id")
        if cid is not None:
            conj_flows[cid[0]] = em.match.without("conj_id")
        elif match_matches(em.match, packet):
            if not em.conjunctions:
                return True
            for i, clause, n in em.conjunctions:
                hits.setdefault(i, set()).add(clause)
                sizes[i] = n
    return any(len(c) == sizes[i] and i in conj_flows and match_matches(conj_flows[i], packet)
               for i, c in hits.items())


@given(st.data())
@SETTINGS
def test_matches_agree_with_expression(data: Any) -> None:
    text, consts = data.draw(EXPRESSIONS)
    annotated, normalized, matches = _pipeline(text)
    for _ in range(8):
        packet = _packet(data.draw, consts)
        expected = expr.evaluate(annotated, packet, _lookup)
        assert expr.evaluate(normalized, packet, _lookup) == expected, text
        assert _found(matches, packet) == expected, (text, packet)


def test_reference_recording() -> None:
    as_ref: dict[str, int] = {}
    pg_ref: set[str] = set()
    try:
        expr.parse_expr("ip4.src == {$as1, $as1} && outport == @pg && ip4.dst == $missing",
                        SYMTAB, ADDR_SETS, PORT_GROUPS, 7, as_ref, pg_ref)
    except expr.ExprError as exc:
        assert str(exc) == "Syntax error at `$missing' expecting address set name."
    assert as_ref == {"as1": 2, "missing": 1}
    assert pg_ref == {"7_pg"}
    pg_ref.clear()
    expr.parse_expr("outport == @legacy", SYMTAB, ADDR_SETS,
                    {"legacy": expr.const_set_from_strings(["p1"])}, 7, None, pg_ref)
    assert pg_ref == {"7_legacy", "legacy"}


@given(st.text(alphabet="0123456789abcdefxX:./ $@^\"\\&|!=<>-(){}[],;_gzGZ\t", max_size=40))
@SETTINGS
def test_lexer_tokens_round_trip(text: str) -> None:
    from controller.lflow import lexer as lx

    for tok in lx.tokenize(text):
        if tok.type == lx.T_ERROR:
            continue
        again = lx.tokenize(lx.format_token(tok))
        assert len(again) == 1
        t2 = again[0]
        assert (t2.type, t2.s, t2.value, t2.mask) == (tok.type, tok.s, tok.value, tok.mask)
