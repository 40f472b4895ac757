"""clone, set_queue, set_meter, check_pkt_larger, sample, commit_ecmp_nh,
ct_snat_to_vip."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.lflow import lexer as lx
from controller.lflow.actions import ofb
from controller.lflow.actions.base import (
    MFF_LOG_FLAGS, MLF_LOOKUP_COMMIT_ECMP_NH_BIT, OFTABLE_ECMP_NH,
    OFTABLE_ECMP_NH_MAC, WR_DEFAULT, ActionContext, EncodeParams, FieldRef,
    OvnAction, encode_ovnacts, format_ovnacts, parse_bool)
from controller.lflow.actions.lb import IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP, PROTO_NAMES
from ofctrl.groups import EXT_TABLE_ID_INVALID


@dataclass(frozen=True, slots=True)
class Clone(OvnAction):
    nested: tuple[OvnAction, ...]

    def format(self) -> str:
        return f"clone {{ {format_ovnacts(self.nested)} }};"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ofb.clone(encode_ovnacts(self.nested, ep)))


def parse_clone(ctx: ActionContext) -> OvnAction | None:
    nested = ctx.parse_nested(None, WR_DEFAULT)
    return None if nested is None else Clone(nested)


@dataclass(frozen=True, slots=True)
class CtSnatToVip(OvnAction):
    def format(self) -> str:
        return "ct_snat_to_vip;"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ofb.resubmit(ep.ct_snat_vip_ptable))


QDISC_MIN_QUEUE_ID = 0
QDISC_MAX_QUEUE_ID = 0xF000


@dataclass(frozen=True, slots=True)
class SetQueue(OvnAction):
    queue_id: int

    def format(self) -> str:
        return f"set_queue({self.queue_id});"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ofb.set_queue(self.queue_id))


def parse_set_queue(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer
    if not lexer.force_match(lx.T_LPAREN):
        return None
    queue_id = lexer.get_int()
    if queue_id is None or not lexer.force_match(lx.T_RPAREN):
        return None
    if not QDISC_MIN_QUEUE_ID <= queue_id <= QDISC_MAX_QUEUE_ID:
        ctx.fail(f"Queue ID {queue_id} for set_queue is not in valid range "
                 f"{QDISC_MIN_QUEUE_ID} to {QDISC_MAX_QUEUE_ID}.")
        return None
    return SetQueue(queue_id)


@dataclass(frozen=True, slots=True)
class SetMeter(OvnAction):
    rate: int
    burst: int

    def format(self) -> str:
        if self.burst:
            return f"set_meter({self.rate}, {self.burst});"
        return f"set_meter({self.rate});"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        if self.burst:
            name = (f"__string: uuid {ep.lflow_uuid} kbps burst stats "
                    f"bands=type=drop rate={self.rate} burst_size={self.burst}")
        else:
            name = (f"__string: uuid {ep.lflow_uuid} kbps stats "
                    f"bands=type=drop rate={self.rate}")
        meter_id = ep.meter_table.assign_id(name, ep.lflow_uuid)
        if meter_id != EXT_TABLE_ID_INVALID:
            out.append(ofb.meter(meter_id))


def _signed64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def parse_set_meter(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer
    rate = burst = 0
    lexer.force_match(lx.T_LPAREN)
    tok = lexer.token
    if tok.type == lx.T_INTEGER and tok.format == lx.F_DECIMAL:
        rate = tok.value
    lexer.get()
    if lexer.match(lx.T_COMMA):
        tok = lexer.token
        if tok.type == lx.T_INTEGER and tok.format == lx.F_DECIMAL:
            burst = tok.value
        lexer.get()
    lexer.force_match(lx.T_RPAREN)
    if not rate:
        ctx.fail(f"Rate {_signed64(rate)} for set_meter is not in valid.")
        return None
    return SetMeter(_signed64(rate), _signed64(burst))


@dataclass(frozen=True, slots=True)
class CheckPktLarger(OvnAction):
    dst: FieldRef
    pkt_len: int

    def format(self) -> str:
        return f"{self.dst.format()} = check_pkt_larger({self.pkt_len});"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ofb.check_pkt_larger(self.pkt_len, ofb.sub(*self.dst.resolve())))


def parse_check_pkt_larger(ctx: ActionContext, dst: FieldRef) -> OvnAction | None:
    lexer = ctx.lexer
    err = ctx.type_check(dst, 1, True)
    if err:
        ctx.fail(err)
        return None
    lexer.get()
    if not lexer.force_match(lx.T_LPAREN):
        return None
    pkt_len = lexer.get_int()
    if pkt_len is None or not lexer.force_match(lx.T_RPAREN):
        return None
    return CheckPktLarger(dst, pkt_len)


@dataclass(frozen=True, slots=True)
class Sample(OvnAction):
    probability: int = 0
    collector_set_id: int = 0
    obs_domain_id: int = 0
    obs_point_id: int = 0
    use_cookie: bool = False

    def format(self) -> str:
        point = "$cookie" if self.use_cookie else str(self.obs_point_id)
        return (f"sample(probability={self.probability},"
                f"collector_set={self.collector_set_id},"
                f"obs_domain={self.obs_domain_id},obs_point={point});")

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        if ep.collector_ids is None or self.collector_set_id not in ep.collector_ids:
            return
        domain = ((self.obs_domain_id << 24) | (ep.dp_key & 0xFFFFFF)) & 0xFFFFFFFF
        point = (ep.lflow_uuid.int >> 96) if self.use_cookie else self.obs_point_id
        out.append(ofb.sample(self.probability, self.collector_set_id, domain, point))


def parse_sample(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer
    vals = {"probability": 0, "collector_set": 0, "obs_domain": 0, "obs_point": 0}
    use_cookie = False
    if lexer.match(lx.T_LPAREN):
        while not lexer.match(lx.T_RPAREN):
            tok = lexer.token
            if lexer.match_id("probability"):
                if not lexer.force_match(lx.T_EQUALS):
                    return None
                tok = lexer.token
                if tok.type == lx.T_INTEGER and tok.format == lx.F_DECIMAL:
                    p = ctx.parse_uint16("probability")
                    if p is None:
                        return None
                    vals["probability"] = p
            elif lexer.match_id("obs_point"):
                if not lexer.force_match(lx.T_EQUALS):
                    return None
                tok = lexer.token
                if tok.type == lx.T_MACRO and tok.s == "cookie":
                    use_cookie = True
                    lexer.get()
                elif tok.type == lx.T_INTEGER and tok.format == lx.F_DECIMAL:
                    vals["obs_point"] = tok.value & 0xFFFFFFFF
                    lexer.get()
                else:
                    lexer.syntax_error("malformed sample observation_point_id")
            elif lexer.match_id("obs_domain"):
                if not lexer.force_match(lx.T_EQUALS):
                    return None
                tok = lexer.token
                if tok.type == lx.T_INTEGER and tok.format == lx.F_DECIMAL:
                    if (tok.value & 0xFFFFFFFF) > 0xFF:
                        lexer.syntax_error("obs_domain must be 8-bit long")
                        return None
                    vals["obs_domain"] = tok.value & 0xFF
                lexer.get()
            elif lexer.match_id("collector_set"):
                if not lexer.force_match(lx.T_EQUALS):
                    return None
                tok = lexer.token
                if tok.type == lx.T_INTEGER and tok.format == lx.F_DECIMAL:
                    vals["collector_set"] = tok.value & 0xFFFFFFFF
                lexer.get()
            else:
                lexer.syntax_error("unknown argument")
            if ctx.error:
                return None
            lexer.match(lx.T_COMMA)
    if not vals["probability"]:
        ctx.fail("probability must be greater than zero")
        return None
    return Sample(vals["probability"], vals["collector_set"], vals["obs_domain"],
                  vals["obs_point"], use_cookie)


@dataclass(frozen=True, slots=True)
class CommitEcmpNh(OvnAction):
    ipv6: bool
    proto: int

    def format(self) -> str:
        return (f"commit_ecmp_nh(ipv6 = {'true' if self.ipv6 else 'false'}, "
                f"proto = {PROTO_NAMES.get(self.proto, 'tcp')});")

    def _learn(self, nw_conn: bool) -> Any:
        v6 = self.ipv6
        src_ip, dst_ip = ("ipv6_src", "ipv6_dst") if v6 else ("ip_src", "ip_dst")
        l4 = {IPPROTO_TCP: "tcp", IPPROTO_UDP: "udp", IPPROTO_SCTP: "sctp"}[self.proto]
        specs = [ofb.learn_match_field("metadata", "metadata")]
        if nw_conn:
            specs.append(ofb.learn_match_field("eth_src", "eth_src"))
        specs.append(ofb.learn_match_imm("eth_type", 0x86DD if v6 else 0x0800))
        specs.append(ofb.learn_match_field(src_ip, src_ip if nw_conn else dst_ip))
        specs.append(ofb.learn_match_field(dst_ip, dst_ip if nw_conn else src_ip))
        specs.append(ofb.learn_match_imm("nw_proto", self.proto))
        specs.append(ofb.learn_match_field(f"{l4}_src", f"{l4}_src" if nw_conn else f"{l4}_dst"))
        specs.append(ofb.learn_match_field(f"{l4}_dst", f"{l4}_dst" if nw_conn else f"{l4}_src"))
        specs.append(ofb.learn_load_imm(MFF_LOG_FLAGS, MLF_LOOKUP_COMMIT_ECMP_NH_BIT, 1, 1))
        return ofb.learn(table=OFTABLE_ECMP_NH_MAC if nw_conn else OFTABLE_ECMP_NH,
                         idle_timeout=20, hard_timeout=30, delete_learned=True,
                         specs=specs)

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(self._learn(True))
        out.append(self._learn(False))


def parse_commit_ecmp_nh(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer
    lexer.force_match(lx.T_LPAREN)
    if not lexer.match_id("ipv6"):
        lexer.syntax_error("invalid parameter")
        return None
    if not lexer.force_match(lx.T_EQUALS):
        lexer.syntax_error("invalid parameter")
        return None
    flag = parse_bool(lexer)
    if flag is None:
        return None
    ipv6 = flag
    lexer.force_match(lx.T_COMMA)
    if not lexer.match_id("proto"):
        lexer.syntax_error("invalid parameter")
        return None
    if not lexer.force_match(lx.T_EQUALS):
        lexer.syntax_error("invalid parameter")
        return None
    for pname, pnum in (("tcp", IPPROTO_TCP), ("udp", IPPROTO_UDP), ("sctp", IPPROTO_SCTP)):
        if lexer.match_id(pname):
            proto = pnum
            break
    else:
        lexer.syntax_error("invalid protocol")
        return None
    lexer.force_match(lx.T_RPAREN)
    return CommitEcmpNh(ipv6, proto)
