"""output, next, field loads/moves/exchanges, push/pop, ip.ttl--."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.lflow import lexer as lx
from controller.lflow.actions import ofb
from controller.lflow.actions.base import (
    P_INGRESS, ActionContext, Const, EncodeParams, FieldRef, OvnAction,
    parse_constant_for)
from controller.lflow.actions.controller_ops import OvnFieldLoad


@dataclass(frozen=True, slots=True)
class Output(OvnAction):
    def format(self) -> str:
        return "output;"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ofb.resubmit(ep.output_ptable))


@dataclass(frozen=True, slots=True)
class Next(OvnAction):
    pipeline: int
    ltable: int
    src_pipeline: int
    src_ltable: int

    def format(self) -> str:
        if self.pipeline != self.src_pipeline:
            name = "ingress" if self.pipeline == P_INGRESS else "egress"
            return f"next(pipeline={name}, table={self.ltable});"
        if self.ltable != self.src_ltable + 1:
            return f"next({self.ltable});"
        return "next;"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ofb.resubmit(ep.first_ptable(self.pipeline) + self.ltable))


def parse_next(ctx: ActionContext) -> OvnAction | None:
    pp = ctx.pp
    lexer = ctx.lexer
    if not pp.n_tables:
        ctx.fail('"next" action not allowed here.')
        return None
    pipeline = pp.pipeline
    table = pp.cur_ltable + 1
    if lexer.match(lx.T_LPAREN):
        if lexer.is_int():
            table = lexer.get_int() or 0
        else:
            while True:
                if lexer.match_id("pipeline"):
                    if not lexer.force_match(lx.T_EQUALS):
                        return None
                    if lexer.match_id("ingress"):
                        pipeline = P_INGRESS
                    elif lexer.match_id("egress"):
                        pipeline = 1
                    else:
                        lexer.syntax_error('expecting "ingress" or "egress"')
                        return None
                elif lexer.match_id("table"):
                    if not lexer.force_match(lx.T_EQUALS):
                        return None
                    v = lexer.force_int()
                    if v is None:
                        return None
                    table = v
                else:
                    lexer.syntax_error('expecting "pipeline" or "table"')
                    return None
                if not lexer.match(lx.T_COMMA):
                    break
        if not lexer.force_match(lx.T_RPAREN):
            return None
    if table >= pp.n_tables:
        ctx.fail(f'"next" action cannot advance beyond table {pp.n_tables - 1}.')
        return None
    return Next(pipeline, table, pp.pipeline, pp.cur_ltable)


@dataclass(frozen=True, slots=True)
class Load(OvnAction):
    dst: FieldRef
    imm: Const

    def format(self) -> str:
        return f"{self.dst.format()} = {self.imm.format()};"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        fname, ofs, n_bits = self.dst.resolve()
        if self.dst.symbol.width:
            bits = (1 << n_bits) - 1
            value = (self.imm.value & bits) << ofs
            if self.imm.mask is not None:
                mask = (self.imm.mask & bits) << ofs
            else:
                mask = bits << ofs
            out.append(ofb.set_field(fname, value, mask))
        else:
            port = ep.lookup_port(self.imm.string or "")
            out.append(ofb.set_field(fname, port or 0, None))


def parse_load(ctx: ActionContext, lhs: FieldRef) -> OvnAction | None:
    """parse_LOAD() (the OVN-field variant is in controller_ops)."""
    err = ctx.type_check(lhs, lhs.n_bits, True)
    if err:
        ctx.fail(err)
        return None
    c = parse_constant_for(ctx, lhs)
    if c is None:
        return None
    if lhs.symbol.ovn_field:
        return OvnFieldLoad(lhs, c)
    return Load(lhs, c)


@dataclass(frozen=True, slots=True)
class Move(OvnAction):
    lhs: FieldRef
    rhs: FieldRef

    def format(self) -> str:
        return f"{self.lhs.format()} = {self.rhs.format()};"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ofb.move(ofb.sub(*self.rhs.resolve()), ofb.sub(*self.lhs.resolve())))


@dataclass(frozen=True, slots=True)
class Exchange(OvnAction):
    lhs: FieldRef
    rhs: FieldRef

    def format(self) -> str:
        return f"{self.lhs.format()} <-> {self.rhs.format()};"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        r = ofb.sub(*self.rhs.resolve())
        lf = ofb.sub(*self.lhs.resolve())
        out.extend((ofb.push(r), ofb.push(lf), ofb.pop(r), ofb.pop(lf)))


def parse_assignment(ctx: ActionContext, exchange: bool, lhs: FieldRef) -> OvnAction | None:
    """parse_assignment_action()."""
    rhs = ctx.parse_field()
    if rhs is None:
        return None
    ls, rs = lhs.symbol, rhs.symbol
    if bool(ls.width) != bool(rs.width):
        def kind(s: Any) -> str:
            return "integer" if s.width else "string"
        if exchange:
            ctx.fail(f"Can't exchange {kind(ls)} field ({ls.name}) with "
                     f"{kind(rs)} field ({rs.name}).")
        else:
            ctx.fail(f"Can't assign {kind(rs)} field ({rs.name}) to "
                     f"{kind(ls)} field ({ls.name}).")
        return None
    if lhs.n_bits != rhs.n_bits:
        if exchange:
            ctx.fail(f"Can't exchange {lhs.n_bits}-bit field with "
                     f"{rhs.n_bits}-bit field.")
        else:
            ctx.fail(f"Can't assign {rhs.n_bits}-bit value to "
                     f"{lhs.n_bits}-bit destination.")
        return None
    if not lhs.n_bits and ofb.field_bits(ls.field) != ofb.field_bits(rs.field):
        ctx.fail(f"String fields {ls.name} and {rs.name} are incompatible for "
                 f"{'exchange' if exchange else 'assignment'}.")
        return None
    err = ctx.type_check(lhs, lhs.n_bits, True)
    if not err:
        err = ctx.type_check(rhs, rhs.n_bits, exchange)
    if err:
        ctx.fail(err)
        return None
    return Exchange(lhs, rhs) if exchange else Move(lhs, rhs)


@dataclass(frozen=True, slots=True)
class PushPop(OvnAction):
    field: FieldRef
    is_push: bool

    def format(self) -> str:
        return f"{'push' if self.is_push else 'pop'}({self.field.format()});"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        sf = ofb.sub(*self.field.resolve())
        out.append(ofb.push(sf) if self.is_push else ofb.pop(sf))


def parse_push_pop(ctx: ActionContext, is_push: bool) -> OvnAction | None:
    ctx.lexer.force_match(lx.T_LPAREN)
    f = ctx.parse_field()
    if f is None:
        return None
    err = ctx.type_check(f, f.n_bits, not is_push)
    if err:
        ctx.fail(err)
        return None
    ctx.lexer.force_match(lx.T_RPAREN)
    return PushPop(f, is_push)


@dataclass(frozen=True, slots=True)
class DecTtl(OvnAction):
    def format(self) -> str:
        return "ip.ttl--;"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ofb.dec_ttl())


def parse_dec_ttl(ctx: ActionContext) -> OvnAction | None:
    ctx.lexer.force_match(lx.T_DECREMENT)
    ctx.add_prerequisite("ip")
    return DecTtl()
