"""Load-balancing actions: ct_lb, ct_lb_mark, select, fwd_group,
commit_lb_aff.  The first three create OpenFlow select groups named by their
ovs-ofctl group spec (allocated in ``EncodeParams.group_table``)."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Any

from controller.lflow import lexer as lx
from controller.lflow.actions import ofb
from controller.lflow.actions.base import (
    MFF_LOG_CT_ZONE, MFF_LOG_DNAT_ZONE, MFF_LOG_FLAGS, MFF_LOG_OUTPORT,
    MLF_USE_LB_AFF_SESSION_BIT, OFTABLE_CHK_LB_AFFINITY, ActionContext,
    EncodeParams, FieldRef, OvnAction, parse_bool)
from ofctrl.groups import EXT_TABLE_ID_INVALID
from physical.constants import IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP

PROTO_NAMES = {IPPROTO_TCP: "tcp", IPPROTO_UDP: "udp", IPPROTO_SCTP: "sctp"}


def ipv6_str(value: int) -> str:
    return socket.inet_ntop(socket.AF_INET6, value.to_bytes(16, "big"))


def ipv4_str(value: int) -> str:
    return lx.format_value(value, lx.F_IPV4)


# ---------------------------------------------------------------------------
# ct_lb / ct_lb_mark

@dataclass(frozen=True, slots=True)
class LbDst:
    family: int     # 4 or 6
    addr: int
    port: int


@dataclass(frozen=True, slots=True)
class CtLb(OvnAction):
    mark: bool                  # ct_lb_mark
    ltable: int
    dsts: tuple[LbDst, ...]
    hash_fields: str | None
    ct_flag: str | None          # None, "skip_snat", "force_snat"

    def format(self) -> str:
        s = "ct_lb_mark" if self.mark else "ct_lb"
        if self.dsts:
            parts = []
            for d in self.dsts:
                if d.family == 4:
                    t = ipv4_str(d.addr)
                    if d.port:
                        t += f":{d.port}"
                else:
                    t = ipv6_str(d.addr)
                    if d.port:
                        t = f"[{t}]:{d.port}"
                parts.append(t)
            s += "(backends=" + ",".join(parts)
            if self.hash_fields is not None:
                s += f'; hash_fields="{self.hash_fields}"'
            if self.ct_flag:
                s += "; " + self.ct_flag
            s += ")"
        return s + ";"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        recirc_table = self.ltable + ep.first_ptable(ep.pipeline)
        zone = MFF_LOG_CT_ZONE if ep.is_switch else MFF_LOG_DNAT_ZONE
        if not self.dsts:
            out.append(ofb.ct(commit=False, table=recirc_table, zone=zone,
                              nat=ofb.nat(None, None, None, None, None), actions=()))
            return
        flag_reg = "ct_mark" if self.mark else "ct_label"
        flag_value = {"skip_snat": "4/4", "force_snat": "8/8"}.get(self.ct_flag or "")
        spec = ["type=select,selection_method="
                + ("hash" if self.hash_fields is not None else "dp_hash")]
        if self.hash_fields is not None:
            spec.append(f",fields({self.hash_fields})")
        zone_reg = zone[3:]
        for bucket_id, d in enumerate(self.dsts):
            addr = ipv4_str(d.addr) if d.family == 4 else ipv6_str(d.addr)
            if d.family == 6 and d.port:
                addr = f"[{addr}]"
            if d.port:
                addr += f":{d.port}"
            spec.append(f",bucket=bucket_id={bucket_id},weight:100,actions="
                        f"ct(nat(dst={addr}),commit,table={recirc_table},"
                        f"zone=NXM_NX_REG{zone_reg}[0..15],"
                        f"exec(set_field:2/2->{flag_reg}")
            if flag_value:
                spec.append(f",set_field:{flag_value}->{flag_reg}")
            spec.append("))")
        group_id = ep.group_table.assign_id("".join(spec), ep.lflow_uuid)
        if group_id != EXT_TABLE_ID_INVALID:
            out.append(ofb.group(group_id))


def parse_ct_lb(ctx: ActionContext, mark: bool) -> OvnAction | None:
    lexer = ctx.lexer
    if ctx.pp.cur_ltable >= ctx.pp.n_tables:
        ctx.fail('"ct_lb" action not allowed in last table.')
        return None
    ctx.add_prerequisite("ip")
    dsts: list[LbDst] = []
    hash_fields: str | None = None
    ct_flag: str | None = None
    if lexer.match(lx.T_LPAREN) and not lexer.match(lx.T_RPAREN):
        if not lexer.match_id("backends") or not lexer.force_match(lx.T_EQUALS):
            lexer.syntax_error("expecting backends")
            return None
        while not lexer.match(lx.T_SEMICOLON) and not lexer.match(lx.T_RPAREN):
            if lexer.match(lx.T_LSQUARE):
                tok = lexer.token
                if tok.type != lx.T_INTEGER or tok.format != lx.F_IPV6:
                    lexer.syntax_error("expecting IPv6 address")
                    return None
                family, addr = 6, tok.value
                lexer.get()
                if not lexer.match(lx.T_RSQUARE):
                    lexer.syntax_error("no closing square bracket")
                    return None
                port = 0
                if lexer.match(lx.T_COLON):
                    p = ctx.parse_uint16("port number")
                    if p is None:
                        return None
                    port = p
            else:
                tok = lexer.token
                if tok.type != lx.T_INTEGER or tok.format not in (lx.F_IPV4, lx.F_IPV6):
                    lexer.syntax_error("expecting IP address")
                    return None
                family = 4 if tok.format == lx.F_IPV4 else 6
                addr = tok.value
                lexer.get()
                port = 0
                if lexer.match(lx.T_COLON):
                    if family == 6:
                        lexer.syntax_error("IPv6 address needs square brackets "
                                           "if port is included")
                        return None
                    p = ctx.parse_uint16("port number")
                    if p is None:
                        return None
                    port = p
            lexer.match(lx.T_COMMA)
            dsts.append(LbDst(family, addr, port))
        if lexer.match_id("hash_fields"):
            if not lexer.match(lx.T_EQUALS) or lexer.token.type != lx.T_STRING:
                lexer.syntax_error("invalid hash_fields")
                return None
            hash_fields = lexer.token.s or ""
            lexer.get()
            if not lexer.match(lx.T_SEMICOLON):
                lexer.get()
        if lexer.match_id("skip_snat"):
            ct_flag = "skip_snat"
            lexer.get()
        elif lexer.match_id("force_snat"):
            ct_flag = "force_snat"
            lexer.get()
    return CtLb(mark, ctx.pp.cur_ltable + 1, tuple(dsts), hash_fields, ct_flag)


# ---------------------------------------------------------------------------
# select

@dataclass(frozen=True, slots=True)
class Select(OvnAction):
    res_field: FieldRef
    ltable: int
    dsts: tuple[tuple[int, int], ...]     # (id, weight)

    def format(self) -> str:
        members = ", ".join(f"{i}={w}" for i, w in self.dsts)
        return f"{self.res_field.format()} = select({members});"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        resubmit_table = self.ltable + ep.first_ptable(ep.pipeline)
        spec = ["type=select,selection_method=dp_hash"]
        if ep.features.dp_hash_l4_sym:
            spec.append(",selection_method_param=0x100000000")
        fname, ofs, n_bits = self.res_field.resolve()
        for bucket_id, (member, weight) in enumerate(self.dsts):
            spec.append(f",bucket=bucket_id={bucket_id},weight:{weight},actions="
                        f"load:{member}->{fname}[{ofs}..{ofs + n_bits - 1}],"
                        f"resubmit(,{resubmit_table})")
        group_id = ep.group_table.assign_id("".join(spec), ep.lflow_uuid)
        if group_id != EXT_TABLE_ID_INVALID:
            out.append(ofb.group(group_id))


def parse_select(ctx: ActionContext, res: FieldRef) -> OvnAction | None:
    lexer = ctx.lexer
    err = ctx.type_check(res, res.n_bits, True)
    if err:
        ctx.fail(err)
        return None
    if res.n_bits < 16:
        ctx.fail(f"cannot use {res.n_bits}-bit field {res.symbol.name}"
                 f"[{res.ofs}..{res.ofs + res.n_bits - 1}] for \"select\", "
                 "which requires at least 16 bits.")
        return None
    if ctx.pp.cur_ltable >= ctx.pp.n_tables:
        ctx.fail('"select" action not allowed in last table.')
        return None
    lexer.get()
    lexer.get()
    dsts: list[tuple[int, int]] = []
    while not lexer.match(lx.T_RPAREN):
        member = ctx.parse_uint16("id")
        if member is None:
            return None
        weight = 0
        if lexer.match(lx.T_EQUALS):
            w = ctx.parse_uint16("weight")
            if w is None:
                return None
            weight = w
            if weight == 0:
                lexer.syntax_error("weight can't be 0")
        if weight == 0:
            weight = 100
        lexer.match(lx.T_COMMA)
        dsts.append((member, weight))
        if lexer.error:
            break
    if len(dsts) <= 1:
        lexer.syntax_error("expecting at least 2 group members")
        return None
    return Select(res, ctx.pp.cur_ltable + 1, tuple(dsts))


# ---------------------------------------------------------------------------
# fwd_group

@dataclass(frozen=True, slots=True)
class FwdGroup(OvnAction):
    ltable: int
    liveness: bool
    child_ports: tuple[str, ...]

    def format(self) -> str:
        s = "fwd_group("
        if self.liveness:
            s += 'liveness="true", '
        if self.child_ports:
            s += "childports=" + ", ".join(f'"{p}"' for p in self.child_ports)
        return s + ");"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        if not self.child_ports:
            return
        reg_index = int(MFF_LOG_OUTPORT[3:])
        spec = ["type=select,selection_method=dp_hash"]
        for port_name in self.child_ports:
            key = ep.lookup_port(port_name)
            if key is None:
                return
            spec.append(",bucket=")
            if self.liveness:
                ofport = ep.tunnel_ofport(port_name)
                if ofport is None:
                    return
                spec.append(f"watch_port:{ofport},")
            # "0x%d" (sic): OVN prints the key in decimal after "0x".
            spec.append(f"load=0x{key}->NXM_NX_REG{reg_index}[0..15]")
            spec.append(f",resubmit(,{ep.output_ptable})")
        group_id = ep.group_table.assign_id("".join(spec), ep.lflow_uuid)
        if group_id != EXT_TABLE_ID_INVALID:
            out.append(ofb.group(group_id))


def parse_fwd_group(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer
    liveness = False
    ports: list[str] = []
    if lexer.match(lx.T_LPAREN):
        if lexer.match_id("liveness"):
            if not lexer.force_match(lx.T_EQUALS):
                return None
            flag = parse_bool(lexer)
            if flag is None:
                return None
            liveness = flag
            lexer.force_match(lx.T_COMMA)
        if lexer.match_id("childports"):
            if not lexer.force_match(lx.T_EQUALS):
                return None
            while not lexer.match(lx.T_RPAREN):
                if lexer.token.type != lx.T_STRING:
                    lexer.syntax_error("expecting logical switch port")
                    return None
                ports.append(lexer.token.s or "")
                lexer.get()
                lexer.match(lx.T_COMMA)
    return FwdGroup(ctx.pp.cur_ltable + 1, liveness, tuple(ports))


# ---------------------------------------------------------------------------
# commit_lb_aff

def parse_lb_key(key: str) -> tuple[int, int, int] | None:
    """ip_address_and_port_from_lb_key(): (family, addr, port) or None."""
    host, port_s = key, ""
    if key.startswith("["):
        end = key.find("]")
        if end < 0:
            return None
        host, rest = key[1:end], key[end + 1:]
        if rest:
            if not rest.startswith(":"):
                return None
            port_s = rest[1:]
    elif key.count(":") == 1:
        host, port_s = key.split(":")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    port = 0
    if port_s:
        if not port_s.isdigit() or int(port_s) > 65535:
            return None
        port = int(port_s)
    return (ip.version, int(ip), port)


@dataclass(frozen=True, slots=True)
class CommitLbAff(OvnAction):
    family: int
    vip: int
    vip_port: int
    backend: int
    backend_port: int
    proto: int
    timeout: int

    def format(self) -> str:
        def addr(v: int, port: int) -> str:
            t = f"[{ipv6_str(v)}]" if self.family == 6 else ipv4_str(v)
            return t + (f":{port}" if port else "")
        s = (f'commit_lb_aff(vip = "{addr(self.vip, self.vip_port)}", '
             f'backend = "{addr(self.backend, self.backend_port)}"')
        if self.proto:
            s += f", proto = {PROTO_NAMES.get(self.proto, 'tcp')}"
        return s + f", timeout = {self.timeout});"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        v6 = self.family == 6
        specs = [ofb.learn_match_field("metadata", "metadata"),
                 ofb.learn_match_imm("eth_type", 0x86DD if v6 else 0x0800)]
        src, dst = ("ipv6_src", "ipv6_dst") if v6 else ("ip_src", "ip_dst")
        specs.append(ofb.learn_match_field(src, src))
        specs.append(ofb.learn_match_imm(dst, self.vip))
        if self.proto:
            specs.append(ofb.learn_match_imm("nw_proto", self.proto))
            port_field = {IPPROTO_TCP: "tcp_dst", IPPROTO_UDP: "udp_dst",
                          IPPROTO_SCTP: "sctp_dst"}[self.proto]
            specs.append(ofb.learn_match_imm(port_field, self.vip_port))
        specs.append(ofb.learn_load_imm(MFF_LOG_FLAGS, MLF_USE_LB_AFF_SESSION_BIT, 1, 1))
        if v6:
            backend_field = "xxreg0" if ep.is_switch else "xxreg1"
        else:
            backend_field = "reg4"
        specs.append(ofb.learn_load_imm(backend_field, 0, ofb.field_bits(backend_field),
                                        self.backend))
        if self.backend_port:
            specs.append(ofb.learn_load_imm("reg8", 0, 16, self.backend_port))
        out.append(ofb.learn(table=OFTABLE_CHK_LB_AFFINITY, idle_timeout=self.timeout,
                             hard_timeout=0, delete_learned=True, specs=specs))


def parse_commit_lb_aff(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer

    def keyword(name: str) -> bool:
        if not lexer.match_id(name):
            lexer.syntax_error("invalid parameter")
            return False
        if not lexer.force_match(lx.T_EQUALS):
            lexer.syntax_error("invalid parameter")
            return False
        return True

    lexer.force_match(lx.T_LPAREN)
    parsed: list[tuple[int, int, int]] = []
    for name in ("vip", "backend"):
        if not keyword(name):
            return None
        if lexer.token.type != lx.T_STRING:
            lexer.syntax_error("invalid parameter")
            return None
        key = parse_lb_key(lexer.token.s or "")
        if key is None:
            lexer.syntax_error("invalid parameter")
            return None
        if parsed and key[0] != parsed[0][0]:
            lexer.syntax_error("invalid protocol family")
            return None
        parsed.append(key)
        lexer.get()
        lexer.force_match(lx.T_COMMA)
    (family, vip, vip_port), (_, backend, backend_port) = parsed
    proto = 0
    if vip_port:
        if not keyword("proto"):
            return None
        for pname, pnum in (("tcp", IPPROTO_TCP), ("udp", IPPROTO_UDP),
                            ("sctp", IPPROTO_SCTP)):
            if lexer.match_id(pname):
                proto = pnum
                break
        else:
            lexer.syntax_error("invalid protocol")
            return None
        lexer.force_match(lx.T_COMMA)
    if not keyword("timeout"):
        return None
    timeout = ctx.parse_uint16("affinity timeout")
    if timeout is None:
        return None
    lexer.force_match(lx.T_RPAREN)
    return CommitLbAff(family, vip, vip_port, backend, backend_port, proto, timeout)
