"""MAC-binding, FDB and flag-result lookups: get_arp, get_nd, put_arp,
put_nd, lookup_arp, lookup_nd, lookup_arp_ip, lookup_nd_ip, get_fdb,
lookup_fdb, put_fdb, chk_lb_hairpin, chk_lb_hairpin_reply,
check_in_port_sec, check_out_port_sec, chk_ecmp_nh_mac, chk_ecmp_nh,
chk_lb_aff (and the shared argument marshalling)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from controller.lflow import lexer as lx
from controller.lflow.actions import ofb
from controller.lflow.actions.base import (
    MFF_LOG_FLAGS, MFF_LOG_INPORT, MFF_LOG_OUTPORT, MLF_CHECK_PORT_SEC_BIT,
    MLF_LOOKUP_COMMIT_ECMP_NH_BIT, MLF_LOOKUP_FDB_BIT, MLF_LOOKUP_LB_HAIRPIN_BIT,
    MLF_LOOKUP_MAC_BIT, MLF_USE_LB_AFF_SESSION_BIT, OFTABLE_CHK_LB_AFFINITY,
    OFTABLE_ECMP_NH, OFTABLE_ECMP_NH_MAC, OP_PUT_ARP, OP_PUT_FDB, OP_PUT_ND,
    ActionContext, EncodeParams, FieldRef, OvnAction, check_result_dst,
    flag_result, parse_result_args, restore_args, setup_args)
from controller.lflow.actions.controller_ops import ctl

# ---------------------------------------------------------------------------
# get_arp / get_nd

@dataclass(frozen=True, slots=True)
class GetMacBind(OvnAction):
    name: str            # get_arp / get_nd
    port: FieldRef
    ip: FieldRef

    def format(self) -> str:
        return f"{self.name}({self.port.format()}, {self.ip.format()});"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        ip_field = "reg0" if self.name == "get_arp" else "xxreg0"
        args = [(self.port, MFF_LOG_OUTPORT), (self.ip, ip_field)]
        setup_args(args, out)
        out.append(ofb.set_field("eth_dst", 0, None))
        out.append(ofb.resubmit(ep.mac_bind_ptable))
        restore_args(args, out)


def parse_field_args(ctx: ActionContext, *widths: int) -> list[FieldRef] | None:
    """The comma-separated field arguments of a call and its closing `)`, each
    checked for `width` bits (0: a string field such as inport); None on error."""
    lexer = ctx.lexer
    fields: list[FieldRef | None] = []
    for i, width in enumerate(widths):
        if i:
            lexer.force_match(lx.T_COMMA)
        fields.append(ctx.parse_checked_field(width, False))
    lexer.force_match(lx.T_RPAREN)
    if ctx.error or any(f is None for f in fields):
        return None
    return [f for f in fields if f is not None]


def parse_get_mac_bind(ctx: ActionContext, name: str, width: int) -> OvnAction | None:
    lexer = ctx.lexer
    lexer.force_match(lx.T_LPAREN)
    args = parse_field_args(ctx, 0, width)
    return None if args is None else GetMacBind(name, *args)


# ---------------------------------------------------------------------------
# put_arp / put_nd

@dataclass(frozen=True, slots=True)
class PutMacBind(OvnAction):
    name: str            # put_arp / put_nd
    port: FieldRef
    ip: FieldRef
    mac: FieldRef

    def format(self) -> str:
        return (f"{self.name}({self.port.format()}, {self.ip.format()}, "
                f"{self.mac.format()});")

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        arp = self.name == "put_arp"
        args = [(self.port, MFF_LOG_INPORT), (self.ip, "reg0" if arp else "xxreg0"),
                (self.mac, "eth_src")]
        setup_args(args, out)
        out.append(ctl(ep, OP_PUT_ARP if arp else OP_PUT_ND))
        restore_args(args, out)


def parse_put_mac_bind(ctx: ActionContext, name: str, width: int) -> OvnAction | None:
    lexer = ctx.lexer
    lexer.force_match(lx.T_LPAREN)
    args = parse_field_args(ctx, 0, width, 48)
    return None if args is None else PutMacBind(name, *args)


# ---------------------------------------------------------------------------
# lookup_arp / lookup_nd

@dataclass(frozen=True, slots=True)
class LookupMacBind(OvnAction):
    name: str            # lookup_arp / lookup_nd
    dst: FieldRef
    port: FieldRef
    ip: FieldRef
    mac: FieldRef

    def format(self) -> str:
        return (f"{self.dst.format()} = {self.name}({self.port.format()}, "
                f"{self.ip.format()}, {self.mac.format()});")

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        ip_field = "reg0" if self.name == "lookup_arp" else "xxreg0"
        args = [(self.port, MFF_LOG_INPORT), (self.ip, ip_field), (self.mac, "eth_src")]
        setup_args(args, out)
        flag_result(self.dst, ep.mac_lookup_ptable, MLF_LOOKUP_MAC_BIT, out)
        restore_args(args, out)


def parse_lookup_mac_bind(ctx: ActionContext, dst: FieldRef, name: str,
                          width: int) -> OvnAction | None:
    lexer = ctx.lexer
    if not check_result_dst(ctx, dst):
        return None
    lexer.get()
    lexer.get()
    args = parse_field_args(ctx, 0, width, 48)
    return None if args is None else LookupMacBind(name, dst, *args)


@dataclass(frozen=True, slots=True)
class LookupMacBindIp(OvnAction):
    name: str            # lookup_arp_ip / lookup_nd_ip
    dst: FieldRef
    port: FieldRef
    ip: FieldRef

    def format(self) -> str:
        return (f"{self.dst.format()} = {self.name}({self.port.format()}, "
                f"{self.ip.format()});")

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        ip_field = "reg0" if self.name == "lookup_arp_ip" else "xxreg0"
        args = [(self.port, MFF_LOG_OUTPORT), (self.ip, ip_field)]
        setup_args(args, out)
        out.append(ofb.push(ofb.whole("eth_dst")))
        flag_result(self.dst, ep.mac_bind_ptable, MLF_LOOKUP_MAC_BIT, out)
        out.append(ofb.pop(ofb.whole("eth_dst")))
        restore_args(args, out)


def parse_lookup_mac_bind_ip(ctx: ActionContext, dst: FieldRef, name: str,
                             width: int) -> OvnAction | None:
    lexer = ctx.lexer
    if not check_result_dst(ctx, dst):
        return None
    lexer.get()
    lexer.get()
    args = parse_field_args(ctx, 0, width)
    return None if args is None else LookupMacBindIp(name, dst, *args)


# ---------------------------------------------------------------------------
# FDB

@dataclass(frozen=True, slots=True)
class PutFdb(OvnAction):
    port: FieldRef
    mac: FieldRef

    def format(self) -> str:
        return f"put_fdb({self.port.format()}, {self.mac.format()});"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        args = [(self.port, MFF_LOG_INPORT), (self.mac, "eth_src")]
        setup_args(args, out)
        out.append(ctl(ep, OP_PUT_FDB))
        restore_args(args, out)


def parse_put_fdb(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer
    lexer.force_match(lx.T_LPAREN)
    args = parse_field_args(ctx, 0, 48)
    return None if args is None else PutFdb(*args)


@dataclass(frozen=True, slots=True)
class GetFdb(OvnAction):
    dst: FieldRef
    mac: FieldRef

    def format(self) -> str:
        return f"{self.dst.format()} = get_fdb({self.mac.format()});"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        args = [(self.mac, "eth_dst")]
        setup_args(args, out)
        out.append(ofb.set_field(MFF_LOG_OUTPORT, 0, None))
        out.append(ofb.resubmit(ep.fdb_ptable))
        restore_args(args, out)
        dst = ofb.sub(*self.dst.resolve())
        if dst.field.name != MFF_LOG_OUTPORT:
            out.append(ofb.move(ofb.sub(MFF_LOG_OUTPORT, 0, 32), dst))


def parse_get_fdb(ctx: ActionContext, dst: FieldRef) -> OvnAction | None:
    lexer = ctx.lexer
    lexer.get()
    lexer.get()
    if dst.n_bits and not check_result_dst(ctx, dst, 32):
        return None
    args = parse_field_args(ctx, 48)
    return None if args is None else GetFdb(dst, *args)


@dataclass(frozen=True, slots=True)
class LookupFdb(OvnAction):
    dst: FieldRef
    port: FieldRef
    mac: FieldRef

    def format(self) -> str:
        return (f"{self.dst.format()} = lookup_fdb({self.port.format()}, "
                f"{self.mac.format()});")

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        args = [(self.port, MFF_LOG_INPORT), (self.mac, "eth_src")]
        setup_args(args, out)
        out.append(ofb.load_bits(MFF_LOG_FLAGS, 0, MLF_LOOKUP_FDB_BIT, 1))
        out.append(ofb.resubmit(ep.fdb_lookup_ptable))
        restore_args(args, out)
        out.append(ofb.move(ofb.sub(MFF_LOG_FLAGS, MLF_LOOKUP_FDB_BIT, 1),
                            ofb.sub(*self.dst.resolve())))


def parse_lookup_fdb(ctx: ActionContext, dst: FieldRef) -> OvnAction | None:
    lexer = ctx.lexer
    lexer.get()
    lexer.get()
    if not check_result_dst(ctx, dst):
        return None
    args = parse_field_args(ctx, 0, 48)
    return None if args is None else LookupFdb(dst, *args)


# ---------------------------------------------------------------------------
# "R = name();" flag-result actions.

def _ptable(attr: str) -> Callable[[EncodeParams], int]:
    return lambda ep: int(getattr(ep, attr))


def _fixed(table: int) -> Callable[[EncodeParams], int]:
    return lambda ep: table


RESULT_ACTIONS: dict[str, tuple[Callable[[EncodeParams], int], int]] = {
    "chk_lb_hairpin": (_ptable("lb_hairpin_ptable"), MLF_LOOKUP_LB_HAIRPIN_BIT),
    "chk_lb_hairpin_reply": (_ptable("lb_hairpin_reply_ptable"),
                             MLF_LOOKUP_LB_HAIRPIN_BIT),
    "check_in_port_sec": (_ptable("in_port_sec_ptable"), MLF_CHECK_PORT_SEC_BIT),
    "check_out_port_sec": (_ptable("out_port_sec_ptable"), MLF_CHECK_PORT_SEC_BIT),
    "chk_ecmp_nh_mac": (_fixed(OFTABLE_ECMP_NH_MAC), MLF_LOOKUP_COMMIT_ECMP_NH_BIT),
    "chk_ecmp_nh": (_fixed(OFTABLE_ECMP_NH), MLF_LOOKUP_COMMIT_ECMP_NH_BIT),
    "chk_lb_aff": (_fixed(OFTABLE_CHK_LB_AFFINITY), MLF_USE_LB_AFF_SESSION_BIT),
}


@dataclass(frozen=True, slots=True)
class FlagResult(OvnAction):
    name: str
    dst: FieldRef

    def format(self) -> str:
        return f"{self.dst.format()} = {self.name}();"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        table_of, bit = RESULT_ACTIONS[self.name]
        flag_result(self.dst, table_of(ep), bit, out)


def parse_flag_result(ctx: ActionContext, name: str, dst: FieldRef) -> OvnAction | None:
    if not parse_result_args(ctx, name, dst, None):
        return None
    return FlagResult(name, dst)
