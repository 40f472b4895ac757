"""Connection-tracking actions: ct_next, ct_commit (v1 and v2), ct_dnat,
ct_snat, ct_dnat_in_czone, ct_snat_in_czone, ct_commit_nat, ct_clear."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from controller.lflow import lexer as lx
from controller.lflow.actions import ofb
from controller.lflow.actions.base import (
    MFF_LOG_CT_ZONE, MFF_LOG_DNAT_ZONE, MFF_LOG_SNAT_ZONE, WR_CT_COMMIT,
    ActionContext, EncodeParams, OvnAction, encode_ovnacts, format_ovnacts)


def ct_zone(ep: EncodeParams) -> str:
    return MFF_LOG_CT_ZONE if ep.is_switch else MFF_LOG_DNAT_ZONE


def zero_snat(ep: EncodeParams) -> Any | None:
    """nat(src) inside ct(commit) when OVS supports all-zero SNAT."""
    return ofb.nat("src", None, None, None, None) if ep.features.ct_zero_snat else None


def append_commit(out: list[Any], commit: Any) -> None:
    """Append the ct(commit) of ct_commit (both syntaxes) as 23.03.1 does.

    C DEFECT, reproduced on purpose (we are a drop-in for 23.03.1): the C
    encoders of ct_commit re-point the "action being finished" at the start
    of the whole action buffer instead of at the ct action they just wrote.
    When ct_commit is the first action that is harmless.  When other actions
    come before it (northd's ``log(...); ct_commit { ... }; ...`` for logged
    reject/drop ACLs on switches with stateful ACLs, or ``reg8[17] = 1;
    ct_commit { ... };``), the first action of the buffer is stretched over
    everything written up to the end of the ct action, so the actions after
    the first one, the ct(commit) included, never reach OpenFlow; what follows
    ct_commit is kept.  Upstream fixed it after 23.03 (OVN commit 7b43959,
    "controller: Fix issue with ct_commit encode", in 24.09).

    The model assumes the first action is not itself a container of actions
    (ct, clone, learn), which northd 23.03 never puts before ct_commit; a
    ct_commit inside clone { } shares the outer buffer in C but starts a new
    list here (northd 23.03 emits no such flow either).
    """
    if out:
        del out[1:]
        return
    out.append(commit)


@dataclass(frozen=True, slots=True)
class CtNext(OvnAction):
    ltable: int

    def format(self) -> str:
        return "ct_next;"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ofb.ct(commit=False, table=ep.first_ptable(ep.pipeline) + self.ltable,
                          zone=ct_zone(ep), nat=None, actions=()))


def parse_ct_next(ctx: ActionContext) -> OvnAction | None:
    if ctx.pp.cur_ltable >= ctx.pp.n_tables:
        ctx.fail('"ct_next" action not allowed in last table.')
        return None
    ctx.add_prerequisite("ip")
    return CtNext(ctx.pp.cur_ltable + 1)


def _hex128(value: int) -> str:
    return f"0x{value:x}"


@dataclass(frozen=True, slots=True)
class CtCommitV1(OvnAction):
    ct_mark: int = 0
    ct_mark_mask: int = 0
    ct_label: int = 0
    ct_label_mask: int = 0

    def format(self) -> str:
        s = "ct_commit("
        if self.ct_mark_mask:
            s += f"ct_mark={self.ct_mark:#x}" if self.ct_mark else "ct_mark=0"
            if self.ct_mark_mask != 0xFFFFFFFF:
                s += f"/{self.ct_mark_mask:#x}"
        if self.ct_label_mask:
            if not s.endswith("("):
                s += ", "
            s += "ct_label=" + _hex128(self.ct_label)
            if self.ct_label_mask != (1 << 128) - 1:
                s += "/" + _hex128(self.ct_label_mask)
        if s.endswith("("):
            s = s[:-1]
        else:
            s += ")"
        return s + ";"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        inner: list[Any] = []
        if self.ct_mark_mask:
            inner.append(ofb.set_field("ct_mark", self.ct_mark, self.ct_mark_mask))
        if self.ct_label_mask:
            inner.append(ofb.set_field("ct_label", self.ct_label, self.ct_label_mask))
        append_commit(out, ofb.ct(commit=True, table=None, zone=MFF_LOG_CT_ZONE,
                                  nat=zero_snat(ep), actions=tuple(inner)))


def _parse_ct_commit_v1(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer
    ctx.add_prerequisite("ip")
    vals = {"ct_mark": [0, 0], "ct_label": [0, 0]}
    if lexer.match(lx.T_LPAREN):
        while not lexer.match(lx.T_RPAREN):
            name = None
            if lexer.match_id("ct_mark"):
                name, bits = "ct_mark", 32
            elif lexer.match_id("ct_label"):
                name, bits = "ct_label", 128
            else:
                lexer.syntax_error(None)
            if name is not None:
                if not lexer.force_match(lx.T_EQUALS):
                    return None
                tok = lexer.token
                full = (1 << bits) - 1
                if tok.type == lx.T_INTEGER:
                    vals[name] = [tok.value & full, full]
                elif tok.type == lx.T_MASKED_INTEGER:
                    vals[name] = [tok.value & full, tok.mask & full]
                else:
                    lexer.syntax_error("expecting integer")
                    return None
                lexer.get()
            if ctx.error:
                return None
            lexer.match(lx.T_COMMA)
    return CtCommitV1(vals["ct_mark"][0], vals["ct_mark"][1],
                      vals["ct_label"][0], vals["ct_label"][1])


@dataclass(frozen=True, slots=True)
class Nested(OvnAction):
    """Base of actions that carry nested actions in ``{ ... }``."""

    nested: tuple[OvnAction, ...]

    NAME = ""

    def format(self) -> str:
        return f"{self.NAME} {{ {format_ovnacts(self.nested)} }};"


@dataclass(frozen=True, slots=True)
class CtCommitV2(Nested):
    NAME = "ct_commit"

    def format(self) -> str:
        if self.nested:
            return Nested.format(self)
        return "ct_commit;"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        inner = encode_ovnacts(self.nested, ep)
        append_commit(out, ofb.ct(commit=True, table=None, zone=ct_zone(ep),
                                  nat=zero_snat(ep), actions=tuple(inner)))


def parse_ct_commit(ctx: ActionContext) -> OvnAction | None:
    tok = ctx.lexer.token
    if tok.type == lx.T_LCURLY:
        nested = ctx.parse_nested("ip", WR_CT_COMMIT)
        return None if nested is None else CtCommitV2(nested)
    if tok.type == lx.T_LPAREN:
        return _parse_ct_commit_v1(ctx)
    ctx.add_prerequisite("ip")
    return CtCommitV2(())


NAT_UNSPEC = ""


@dataclass(frozen=True, slots=True)
class CtNat(OvnAction):
    """ct_dnat / ct_snat / *_in_czone / ct_commit_nat."""

    name: str
    ltable: int
    commit: bool = False
    family: int = 0          # 0, 4 or 6
    nat_type: str = NAT_UNSPEC   # "", "src" or "dst"
    addr: int = 0
    port_lo: int = 0
    port_hi: int = 0
    has_ports: bool = False

    def format(self) -> str:
        if self.name == "ct_commit_nat":
            return "ct_commit_nat;"
        s = self.name
        if self.family == 4:
            s += "(" + lx.format_value(self.addr, lx.F_IPV4) + ")"
        elif self.family == 6:
            s += "(" + socket.inet_ntop(socket.AF_INET6, self.addr.to_bytes(16, "big")) + ")"
        if self.has_ports:
            if s.endswith(")"):
                s = s[:-1]
            s += f",{self.port_lo}"
            if self.port_hi:
                s += f"-{self.port_hi}"
            s += ")"
        return s + ";"

    def zone(self, ep: EncodeParams) -> str:
        if self.name in ("ct_dnat",):
            return MFF_LOG_DNAT_ZONE
        if self.name == "ct_snat":
            return MFF_LOG_SNAT_ZONE
        if self.name == "ct_commit_nat":
            return ct_zone(ep)
        return ep.common_nat_ct_zone

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        nat = ofb.nat(self.nat_type or None, self.family or None,
                      self.addr if self.family else None,
                      self.port_lo if self.has_ports else None,
                      self.port_hi if self.has_ports else None)
        out.append(ofb.ct(commit=self.commit,
                          table=self.ltable + ep.first_ptable(ep.pipeline),
                          zone=self.zone(ep), nat=nat, actions=()))


def parse_ct_nat(ctx: ActionContext, name: str, nat_type: str) -> OvnAction | None:
    lexer = ctx.lexer
    ctx.add_prerequisite("ip")
    if ctx.pp.cur_ltable >= ctx.pp.n_tables:
        ctx.fail(f'"{name}" action not allowed in last table.')
        return None
    ltable = ctx.pp.cur_ltable + 1
    if not lexer.match(lx.T_LPAREN):
        return CtNat(name, ltable)
    tok = lexer.token
    if tok.type != lx.T_INTEGER or tok.format not in (lx.F_IPV4, lx.F_IPV6):
        lexer.syntax_error("expecting IPv4 or IPv6 address")
        return None
    family = 4 if tok.format == lx.F_IPV4 else 6
    addr = tok.value
    lexer.get()
    port_lo = port_hi = 0
    has_ports = False
    if lexer.match(lx.T_COMMA):
        tok = lexer.token
        if tok.type != lx.T_INTEGER or tok.format != lx.F_DECIMAL:
            lexer.syntax_error("expecting Integer for port range")
        port_lo = tok.value & 0xFFFF if tok.type == lx.T_INTEGER else 0
        if port_lo == 0:
            lexer.syntax_error("range can't be 0")
        lexer.get()
        if lexer.match(lx.T_HYPHEN):
            tok = lexer.token
            if tok.type != lx.T_INTEGER:
                lexer.syntax_error("expecting Integer for port range")
            port_hi = tok.value & 0xFFFF if tok.type == lx.T_INTEGER else 0
            if port_hi <= port_lo:
                lexer.syntax_error("range high should be greater than range low")
            lexer.get()
        has_ports = True
    if not lexer.force_match(lx.T_RPAREN):
        return None
    return CtNat(name, ltable, True, family, nat_type, addr, port_lo, port_hi, has_ports)


def parse_ct_commit_nat(ctx: ActionContext) -> OvnAction | None:
    ctx.add_prerequisite("ip")
    if ctx.pp.cur_ltable >= ctx.pp.n_tables:
        ctx.fail('"ct_commit_related" action not allowed in last table.')
        return None
    return CtNat("ct_commit_nat", ctx.pp.cur_ltable + 1, commit=True)


@dataclass(frozen=True, slots=True)
class CtClear(OvnAction):
    def format(self) -> str:
        return "ct_clear;"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ofb.ct_clear())
