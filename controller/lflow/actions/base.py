"""Shared pieces of the OVN action compiler: parameters, constants, field
references, the parse context, and small OpenFlow building helpers.

Design note
-----------
Every logical action is a small ``__slots__`` dataclass deriving from
``OvnAction`` with two methods: ``format()`` (OVN syntax, re-parseable) and
``encode(ep, out)`` which appends ofctrl action objects to ``out``.  Parsing
state lives in ``ActionContext`` (lexer, parse params, accumulated
prerequisites, nesting depth, write scope); the lexer's sticky first-error
rule gives exactly OVN's error messages.  Expressions (field references,
constants, prerequisite expressions) come from ``controller.lflow.expr.api`` /
``symtab``; only the thin glue needed here is in this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence
from uuid import UUID

from controller.lflow import lexer as lx
from controller.lflow.actions import ofb
from controller.lflow.actions.dhcp_opts import (
    CONTROLLER_EVENT_OPTIONS,
    DHCPV4_OPTIONS,
    DHCPV6_OPTIONS,
    ND_RA_OPTIONS,
    GenOption,
)
from controller.lflow.symtab import WR_CT_COMMIT, WR_DEFAULT  # noqa: F401  (re-exported)
from ofctrl.groups import ExtendTable, GroupTable
from ofctrl.meters import MeterTable
from physical import constants as C
from physical.constants import (  # noqa: F401  (re-exported: the action modules use them)
    MLF_CHECK_PORT_SEC_BIT,
    MLF_LOOKUP_COMMIT_ECMP_NH_BIT,
    MLF_LOOKUP_FDB_BIT,
    MLF_LOOKUP_LB_HAIRPIN_BIT,
    MLF_LOOKUP_MAC_BIT,
    MLF_USE_LB_AFF_SESSION_BIT,
    OP_ACTIVATION_STRATEGY_RARP,
    OP_ARP,
    OP_BFD_MSG,
    OP_BIND_VPORT,
    OP_DHCP6_SERVER,
    OP_DNS_LOOKUP,
    OP_EVENT,
    OP_HANDLE_SVC_CHECK,
    OP_ICMP,
    OP_ICMP4_ERROR,
    OP_ICMP6_ERROR,
    OP_IGMP,
    OP_LOG,
    OP_ND_NA,
    OP_ND_NA_ROUTER,
    OP_ND_NS,
    OP_PUT_ARP,
    OP_PUT_DHCP_OPTS,
    OP_PUT_DHCPV6_OPTS,
    OP_PUT_FDB,
    OP_PUT_ICMP4_FRAG_MTU,
    OP_PUT_ICMP6_FRAG_MTU,
    OP_PUT_ND,
    OP_PUT_ND_RA_OPTS,
    OP_REJECT,
    OP_SCTP_ABORT,
    OP_TCP_RESET,
)

# ---------------------------------------------------------------------------
# Fixed numbers: tables, logical registers, flag bits and controller opcodes
# live in physical/constants.py (one home for OVN facts); the names the
# action modules use are imported from there.

OFTABLE_ECMP_NH_MAC = C.T_ECMP_NH_MAC
OFTABLE_ECMP_NH = C.T_ECMP_NH
OFTABLE_CHK_LB_AFFINITY = C.T_CHK_LB_AFFINITY

MFF_LOG_FLAGS = C.LOG_FLAGS
MFF_LOG_DNAT_ZONE = C.LOG_DNAT_ZONE
MFF_LOG_SNAT_ZONE = C.LOG_SNAT_ZONE
MFF_LOG_CT_ZONE = C.LOG_CT_ZONE
MFF_LOG_INPORT = C.LOG_INPORT
MFF_LOG_OUTPORT = C.LOG_OUTPORT

P_INGRESS = 0
P_EGRESS = 1

NX_CTLR_NO_METER = 0

MAX_NESTED_ACTION_DEPTH = 32


# ---------------------------------------------------------------------------
# Parameters.

@dataclass(slots=True)
class ParseParams:
    """What ``parse_actions`` needs (struct ovnact_parse_params)."""

    symtab: Any
    dhcp_opts: dict[str, GenOption] = field(default_factory=lambda: DHCPV4_OPTIONS)
    dhcpv6_opts: dict[str, GenOption] = field(default_factory=lambda: DHCPV6_OPTIONS)
    nd_ra_opts: dict[str, GenOption] = field(default_factory=lambda: ND_RA_OPTIONS)
    controller_event_opts: Sequence[dict[str, GenOption]] = CONTROLLER_EVENT_OPTIONS
    pipeline: int = P_INGRESS
    n_tables: int = C.LOG_PIPELINE_LEN
    cur_ltable: int = 0


@dataclass(slots=True)
class OvsFeatures:
    """OVS capabilities that change the encoding (all off in the vectors)."""

    ct_zero_snat: bool = False        # nat(src) inside ct_commit's ct()
    dp_hash_l4_sym: bool = False      # selection_method_param on select groups
    controller_meter: bool = False    # meter_id= on controller() actions


def _no_port(name: str) -> int | None:
    return None


@dataclass(slots=True)
class EncodeParams:
    """What ``encode_ovnacts`` needs (struct ovnact_encode_params)."""

    lookup_port: Callable[[str], int | None] = _no_port
    tunnel_ofport: Callable[[str], int | None] = _no_port
    is_switch: bool = True
    pipeline: int = P_INGRESS
    ingress_ptable: int = C.T_LOG_INGRESS
    egress_ptable: int = C.T_LOG_EGRESS
    output_ptable: int = C.T_OUTPUT_INIT
    mac_bind_ptable: int = C.T_MAC_BINDING
    mac_lookup_ptable: int = C.T_MAC_LOOKUP
    lb_hairpin_ptable: int = C.T_CHK_LB_HAIRPIN
    lb_hairpin_reply_ptable: int = C.T_CHK_LB_HAIRPIN_REPLY
    ct_snat_vip_ptable: int = C.T_CT_SNAT_HAIRPIN
    fdb_ptable: int = C.T_GET_FDB
    fdb_lookup_ptable: int = C.T_LOOKUP_FDB
    in_port_sec_ptable: int = C.T_CHK_IN_PORT_SEC
    out_port_sec_ptable: int = C.T_CHK_OUT_PORT_SEC
    common_nat_ct_zone: str = MFF_LOG_DNAT_ZONE
    lflow_uuid: UUID = UUID(int=0)
    dp_key: int = 0
    ctrl_meter_id: int = NX_CTLR_NO_METER
    collector_ids: frozenset[int] | set[int] | None = None
    # Id tables shared across flows (the agent passes its ofctrl tables).
    group_table: ExtendTable = field(default_factory=GroupTable)
    meter_table: ExtendTable = field(default_factory=MeterTable)
    features: OvsFeatures = field(default_factory=OvsFeatures)

    def first_ptable(self, pipeline: int) -> int:
        return self.ingress_ptable if pipeline == P_INGRESS else self.egress_ptable


# ---------------------------------------------------------------------------
# Constants (union expr_constant) and constant sets.

@dataclass(frozen=True, slots=True)
class Const:
    """An integer constant (value, optional mask, lex format) or a string."""

    value: int = 0
    mask: int | None = None
    fmt: int = lx.F_DECIMAL
    string: str | None = None

    @property
    def masked(self) -> bool:
        return self.mask is not None

    def width(self) -> int:
        """expr_constant_width(): bits needed to hold the constant."""
        if self.mask is not None:
            return self.mask.bit_length()
        if self.fmt in (lx.F_DECIMAL, lx.F_HEXADECIMAL):
            return self.value.bit_length()
        return {lx.F_IPV4: 32, lx.F_IPV6: 128, lx.F_ETHERNET: 48}[self.fmt]

    def format(self) -> str:
        if self.string is not None:
            return lx.json_escape(self.string)
        if self.mask is not None:
            tok = lx.Token(lx.T_MASKED_INTEGER, None, self.value, self.mask, self.fmt)
        else:
            tok = lx.Token(lx.T_INTEGER, None, self.value, 0, self.fmt)
        return lx.format_token(tok)


@dataclass(frozen=True, slots=True)
class ConstSet:
    values: tuple[Const, ...]
    is_string: bool
    in_curlies: bool

    def format(self) -> str:
        body = ", ".join(c.format() for c in self.values)
        if self.in_curlies or len(self.values) != 1:
            return "{" + body + "}"
        return body


# ---------------------------------------------------------------------------
# Field references (struct expr_field) over the symbol table.

@dataclass(frozen=True, slots=True)
class FieldRef:
    symbol: Any      # symtab symbol
    ofs: int
    n_bits: int      # 0 for string fields

    @property
    def name(self) -> str:
        return str(self.symbol.name)

    def format(self) -> str:
        sym = self.symbol
        if self.ofs or self.n_bits != sym.width:
            if self.n_bits != 1:
                return f"{sym.name}[{self.ofs}..{self.ofs + self.n_bits - 1}]"
            return f"{sym.name}[{self.ofs}]"
        return str(sym.name)

    def resolve(self) -> tuple[str, int, int]:
        """(OVS field name, bit offset, bit count), as expr_resolve_field()."""
        sym = self.symbol
        ofs = self.ofs
        while sym.parent is not None:
            ofs += sym.parent_ofs
            sym = sym.parent
        fname = symbol_field_name(sym)
        n_bits = self.n_bits if sym.width else field_bits(fname)
        return fname, ofs, n_bits


def symbol_field_name(sym: Any) -> str:
    f = sym.field
    if isinstance(f, str):
        return f
    return str(f.name)


field_bits = ofb.field_bits


# ---------------------------------------------------------------------------
# Errors / results.

class ActionError(str):
    """A parse error message (exactly OVN's text)."""

    __slots__ = ()


class OvnAction:
    """Base class of every parsed logical action."""

    __slots__ = ()

    def format(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:  # pragma: no cover
        raise NotImplementedError


def format_ovnacts(actions: Sequence[OvnAction]) -> str:
    """ovnacts_format(): "drop;" for an empty list, else space-joined."""
    if not actions:
        return "drop;"
    return " ".join(a.format() for a in actions)


def encode_ovnacts(actions: Sequence[OvnAction], ep: EncodeParams) -> list[Any]:
    out: list[Any] = []
    for a in actions:
        a.encode(ep, out)
    return out


# ---------------------------------------------------------------------------
# Parse context.

class ActionContext:
    """State of one ovnacts_parse() run (struct action_context)."""

    __slots__ = ("pp", "lexer", "prereqs", "depth", "scope")

    def __init__(self, pp: ParseParams, lexer: lx.Lexer, depth: int = 0,
                 scope: int = WR_DEFAULT) -> None:
        self.pp = pp
        self.lexer = lexer
        self.prereqs: Any = None      # expr (or None)
        self.depth = depth
        self.scope = scope

    # -- errors --------------------------------------------------------
    @property
    def error(self) -> str | None:
        return self.lexer.error

    def fail(self, message: str) -> None:
        self.lexer.set_error(message)

    def syntax_error(self, message: str | None = None) -> None:
        self.lexer.syntax_error(message)

    # -- prerequisites -------------------------------------------------
    def add_prerequisite(self, text: str) -> None:
        """add_prerequisite(): parse 'text' (not annotated) and AND it in."""
        self.prereqs = exprglue.combine_and(
            self.prereqs, exprglue.parse_plain(text, self.pp.symtab))

    # -- fields and constants -----------------------------------------
    def parse_field(self) -> FieldRef | None:
        """expr_field_parse(): a field reference plus its prerequisites."""
        ref, prereqs = exprglue.field_parse(self.lexer, self.pp.symtab)
        if ref is None:
            return None
        if prereqs:
            for p in prereqs:
                self.prereqs = exprglue.combine_and(self.prereqs, p)
        return ref

    def type_check(self, f: FieldRef, n_bits: int, rw: bool) -> str | None:
        return type_check(f, n_bits, rw, self.scope)

    def parse_checked_field(self, n_bits: int, rw: bool) -> FieldRef | None:
        """action_parse_field()."""
        f = self.parse_field()
        if f is None:
            return None
        err = self.type_check(f, n_bits, rw)
        if err:
            self.fail(err)
            return None
        return f

    def parse_nested(self, prereq: str | None, scope: int) -> tuple[OvnAction, ...] | None:
        """parse_nested_action(): ``{ actions }``.

        With a 'prereq' the nested prerequisites are dropped and 'prereq'
        is added; without one (clone, reject) the nested prerequisites are
        ANDed in front of the outer ones."""
        lexer = self.lexer
        if not lexer.force_match(lx.T_LCURLY):
            return None
        if self.depth + 1 == MAX_NESTED_ACTION_DEPTH:
            self.fail("maximum depth of nested actions reached")
            return None
        inner = ActionContext(self.pp, lexer, self.depth + 1, scope)
        assert PARSE_ACTION_LIST is not None
        nested = PARSE_ACTION_LIST(inner, lx.T_RCURLY)
        if prereq is not None:
            self.add_prerequisite(prereq)
        else:
            self.prereqs = exprglue.combine_and(inner.prereqs, self.prereqs)
        if lexer.error is not None:
            return None
        return tuple(nested)

    def parse_uint16(self, what: str) -> int | None:
        """action_parse_uint16()."""
        lexer = self.lexer
        if lexer.is_int() and lexer.token.value <= 0xffff:
            v = lexer.token.value
            lexer.get()
            return v
        lexer.syntax_error(f"expecting {what}")
        return None


# Set by the parser module: parse_actions() over a sentinel token.
PARSE_ACTION_LIST: Callable[[ActionContext, int], list[OvnAction]] | None = None


def check_result_dst(ctx: ActionContext, dst: FieldRef, n_bits: int = 1) -> bool:
    """The destination of ``dst = name(...)`` must be an n-bit writable field."""
    err = ctx.type_check(dst, n_bits, True)
    if err:
        ctx.fail(err)
        return False
    return True


def parse_result_args(ctx: ActionContext, name: str, dst: FieldRef,
                      prereq: str | None) -> bool:
    """parse_ovnact_result(): ``name()`` with a 1-bit writable result."""
    lexer = ctx.lexer
    lexer.get()
    lexer.get()
    if not lexer.match(lx.T_RPAREN):
        ctx.fail(f"{name} doesn't take any parameters")
        return False
    if not check_result_dst(ctx, dst):
        return False
    if prereq:
        ctx.add_prerequisite(prereq)
    return True


def parse_bool(lexer: lx.Lexer) -> bool | None:
    """`true`/`false`, quoted or bare; None (with a syntax error) otherwise."""
    if lexer.match_string("true") or lexer.match_id("true"):
        return True
    if lexer.match_string("false") or lexer.match_id("false"):
        return False
    lexer.syntax_error("expecting true or false")
    return None


# ---------------------------------------------------------------------------
# Argument marshalling for actions that pass fields in fixed registers.

Arg = tuple[FieldRef, str]   # (source field, destination OVS field)


def setup_args(args: list[Arg], out: list[Any]) -> None:
    """encode_setup_args(): save destinations, push sources (reversed), pop
    them into the destinations.  Arguments already in place are skipped."""
    resolved = [(ofb.sub(*src.resolve()), dst) for src, dst in args]
    moving = [(s, d) for s, d in resolved if s.field.name != d]
    for _, d in moving:
        out.append(ofb.push(ofb.whole(d)))
    for s, _ in reversed(moving):
        out.append(ofb.push(s))
    for _, d in moving:
        out.append(ofb.pop(ofb.whole(d)))


def restore_args(args: list[Arg], out: list[Any]) -> None:
    resolved = [(src.resolve()[0], dst) for src, dst in args]
    for s, d in reversed(resolved):
        if s != d:
            out.append(ofb.pop(ofb.whole(d)))


def flag_result(dst: FieldRef, table: int, bit: int, out: list[Any]) -> None:
    """Clear flag bit, resubmit to 'table', copy the flag bit into 'dst'."""
    out.append(ofb.load_bits(MFF_LOG_FLAGS, 0, bit, 1))
    out.append(ofb.resubmit(table))
    out.append(ofb.move(ofb.sub(MFF_LOG_FLAGS, bit, 1), ofb.sub(*dst.resolve())))



def type_check(f: FieldRef, n_bits: int, rw: bool, scope: int) -> str | None:
    """expr_type_check()."""
    sym = f.symbol
    if n_bits != f.n_bits:
        if n_bits and f.n_bits:
            return (f"Cannot use {f.n_bits}-bit field {sym.name}"
                    f"[{f.ofs}..{f.ofs + f.n_bits - 1}] "
                    f"where {n_bits}-bit field is required.")
        if n_bits:
            return (f"Cannot use string field {sym.name} where numeric "
                    "field is required.")
        return (f"Cannot use numeric field {sym.name} where string "
                "field is required.")
    if rw and not (symbol_rw(sym) & scope):
        return f"Field {sym.name} is not modifiable."
    return None


def symbol_rw(sym: Any) -> int:
    rw = sym.rw
    if isinstance(rw, bool):
        return WR_DEFAULT if rw else 0
    return int(rw)


def token_const(tok: lx.Token) -> Const:
    if tok.type == lx.T_STRING:
        return Const(string=tok.s or "")
    mask = tok.mask if tok.type == lx.T_MASKED_INTEGER else None
    return Const(tok.value, mask, tok.format)


def parse_constant_one(ctx: ActionContext, values: list[Const],
                       kind: list[bool | None]) -> bool:
    """parse_constant() restricted to what actions accept (strings,
    integers; address sets are looked up by the expr glue)."""
    lexer = ctx.lexer
    tok = lexer.token
    if tok.type == lx.T_TEMPLATE:
        ctx.fail("Unexpanded template.")
        return False
    if tok.type == lx.T_STRING or tok.type in (lx.T_INTEGER, lx.T_MASKED_INTEGER):
        is_string = tok.type == lx.T_STRING
        if values and kind[0] is not None and kind[0] != is_string:
            lexer.syntax_error("expecting " + ("string" if kind[0] else "integer"))
            return False
        kind[0] = is_string
        values.append(token_const(tok))
        lexer.get()
        return True
    if tok.type in (lx.T_MACRO, lx.T_PORT_GROUP):
        return exprglue.parse_set_reference(ctx, values, kind)
    lexer.syntax_error("expecting constant")
    return False


def parse_constant_set(ctx: ActionContext) -> ConstSet | None:
    """expr_constant_set_parse()."""
    if ctx.error:
        return None
    lexer = ctx.lexer
    values: list[Const] = []
    kind: list[bool | None] = [None]
    if lexer.match(lx.T_LCURLY):
        while True:
            if not parse_constant_one(ctx, values, kind):
                return None
            lexer.match(lx.T_COMMA)
            if lexer.match(lx.T_RCURLY):
                break
        return ConstSet(tuple(values), bool(kind[0]), True)
    if not parse_constant_one(ctx, values, kind):
        return None
    return ConstSet(tuple(values), bool(kind[0]), False)


def parse_constant_for(ctx: ActionContext, f: FieldRef) -> Const | None:
    """expr_constant_parse(): one constant type-checked against 'f'."""
    if ctx.error:
        return None
    values: list[Const] = []
    kind: list[bool | None] = [None]
    if not parse_constant_one(ctx, values, kind):
        return None
    sym = f.symbol
    is_string = bool(kind[0])
    if is_string != (not sym.width):
        ctx.fail(f"{'Integer' if sym.width else 'String'} field {sym.name} is "
                 f"not compatible with {'string' if is_string else 'integer'} "
                 "constant.")
        return None
    if sym.width:
        for c in values:
            w = c.width()
            if w > sym.width:
                ctx.fail(f"{w}-bit constant is not compatible with "
                         f"{sym.width}-bit field {sym.name}.")
                return None
    return values[0]


# Imported last: exprglue needs FieldRef from this module.
from controller.lflow.actions import exprglue  # noqa: E402
