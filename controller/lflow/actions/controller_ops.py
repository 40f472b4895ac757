"""Actions handled by pinctrl through ``controller(userdata=...)``.

Userdata layout: ``be32 opcode, 4 bytes pad`` followed by an opcode-specific
payload.  Nested actions (``arp { ... }`` etc.) are carried as OpenFlow 1.5
action bytes; put_*_opts/dns_lookup carry the OXM header and bit offset of
the result field, then their options (payload encoders below are pure
functions of the parsed options).
"""

from __future__ import annotations

import struct
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any

from controller.lflow import lexer as lx
from controller.lflow.actions import ofb
from controller.lflow.actions.base import (
    MFF_LOG_INPORT, OP_BFD_MSG, OP_BIND_VPORT, OP_DHCP6_SERVER, OP_DNS_LOOKUP,
    OP_EVENT, OP_HANDLE_SVC_CHECK, OP_IGMP, OP_LOG, OP_PUT_DHCP_OPTS,
    OP_PUT_DHCPV6_OPTS, OP_PUT_ICMP4_FRAG_MTU, OP_PUT_ICMP6_FRAG_MTU,
    OP_PUT_ND_RA_OPTS, ActionContext, Const, ConstSet, EncodeParams, FieldRef,
    OvnAction, encode_ovnacts, format_ovnacts, parse_constant_set,
    parse_result_args, restore_args, setup_args)
from controller.lflow.actions.lb import parse_lb_key
from controller.lflow.actions.dhcp_opts import (
    DHCP_OFFERIP_CODE, DHCP_OPT_BOOTFILE_ALT_CODE, DHCP_OPT_BOOTFILE_CODE,
    DHCP_OPT_NEXT_SERVER_CODE, EMPTY_LB_LOAD_BALANCER, EMPTY_LB_PROTOCOL,
    EMPTY_LB_VIP, EVENT_NAMES, ND_OPT_DNSSL, ND_OPT_MTU,
    ND_OPT_PREFIX_INFORMATION, ND_OPT_RDNSS, ND_OPT_ROUTE_INFO_TYPE,
    ND_OPT_SOURCE_LINKADDR, ND_RA_FLAG_ADDR_MODE, ND_RA_FLAG_PRF, GenOption)


def userdata_header(opcode: int) -> bytes:
    return struct.pack("!I4x", opcode)


def ctl(ep: EncodeParams, opcode: int, payload: bytes = b"", pause: bool = False,
        meter_id: int | None = None) -> Any:
    """encode_controller_op(): a controller action for pinctrl."""
    if meter_id is None:
        meter_id = ep.ctrl_meter_id
    if not ep.features.controller_meter:
        meter_id = 0
    return ofb.controller(userdata_header(opcode) + payload, pause, meter_id)


def field_header_and_ofs(dst: FieldRef) -> bytes:
    """nx_put_header(OF1.5) of the result field + be32 bit offset."""
    fname, ofs, _ = dst.resolve()
    return ofb.oxm_header(fname) + struct.pack("!I", ofs)


# ---------------------------------------------------------------------------
# Nested-action controller ops: arp, nd_ns, nd_na, ...

@dataclass(frozen=True, slots=True)
class ControllerNested(OvnAction):
    name: str
    opcode: int
    nested: tuple[OvnAction, ...]

    def format(self) -> str:
        return f"{self.name} {{ {format_ovnacts(self.nested)} }};"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        inner = encode_ovnacts(self.nested, ep)
        out.append(ctl(ep, self.opcode, ofb.encode_actions(inner)))


# name -> (opcode, prerequisite)
NESTED_CONTROLLER_ACTIONS: dict[str, tuple[int, str | None]] = {
    "arp": (0, "ip4"),
    "icmp4": (10, "ip4"),
    "icmp4_error": (14, "ip4"),
    "icmp6": (10, "ip6"),
    "icmp6_error": (20, "ip6"),
    "tcp_reset": (11, "tcp"),
    "sctp_abort": (24, "sctp"),
    "nd_na": (3, "nd_ns"),
    "nd_na_router": (12, "nd_ns"),
    "nd_ns": (9, "ip6"),
    "reject": (22, None),
}


def parse_controller_nested(ctx: ActionContext, name: str) -> OvnAction | None:
    opcode, prereq = NESTED_CONTROLLER_ACTIONS[name]
    nested = ctx.parse_nested(prereq, ctx.scope)
    if nested is None:
        return None
    return ControllerNested(name, opcode, nested)


# ---------------------------------------------------------------------------
# Simple controller ops.

@dataclass(frozen=True, slots=True)
class SimpleController(OvnAction):
    text: str
    opcode: int

    def format(self) -> str:
        return self.text

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ctl(ep, self.opcode))


IGMP = SimpleController("igmp;", OP_IGMP)
DHCP6_REPLY = SimpleController("handle_dhcpv6_reply;", OP_DHCP6_SERVER)
BFD_MSG = SimpleController("handle_bfd_msg();", OP_BFD_MSG)


def parse_handle_bfd_msg(ctx: ActionContext) -> OvnAction | None:
    if not ctx.lexer.force_match(lx.T_LPAREN):
        return None
    ctx.lexer.force_match(lx.T_RPAREN)
    return BFD_MSG


@dataclass(frozen=True, slots=True)
class HandleSvcCheck(OvnAction):
    port: FieldRef

    def format(self) -> str:
        return f"handle_svc_check({self.port.format()});"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        args = [(self.port, MFF_LOG_INPORT)]
        setup_args(args, out)
        out.append(ctl(ep, OP_HANDLE_SVC_CHECK))
        restore_args(args, out)


def parse_handle_svc_check(ctx: ActionContext) -> OvnAction | None:
    if not ctx.lexer.force_match(lx.T_LPAREN):
        return None
    port = ctx.parse_checked_field(0, False)
    ctx.lexer.force_match(lx.T_RPAREN)
    if port is None or ctx.error:
        return None
    return HandleSvcCheck(port)


@dataclass(frozen=True, slots=True)
class BindVport(OvnAction):
    vport: str
    parent: FieldRef

    def format(self) -> str:
        return f'bind_vport("{self.vport}", {self.parent.format()});'

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        key = ep.lookup_port(self.vport)
        if key is None:
            return
        args = [(self.parent, MFF_LOG_INPORT)]
        setup_args(args, out)
        out.append(ctl(ep, OP_BIND_VPORT, struct.pack("!I", key)))
        restore_args(args, out)


def parse_bind_vport(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer
    if not lexer.force_match(lx.T_LPAREN):
        return None
    if lexer.token.type != lx.T_STRING:
        lexer.syntax_error("expecting port name string")
        return None
    vport = lexer.token.s or ""
    lexer.get()
    if not lexer.force_match(lx.T_COMMA):
        return None
    parent = ctx.parse_checked_field(0, False)
    if parent is None or not lexer.force_match(lx.T_RPAREN):
        return None
    return BindVport(vport, parent)


# ---------------------------------------------------------------------------
# icmp4.frag_mtu / icmp6.frag_mtu loads.

@dataclass(frozen=True, slots=True)
class OvnFieldLoad(OvnAction):
    dst: FieldRef
    imm: Const

    def format(self) -> str:
        return f"{self.dst.symbol.name} = {self.imm.value & 0xFFFF};"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        if self.dst.symbol.name == "icmp4.frag_mtu":
            out.append(ctl(ep, OP_PUT_ICMP4_FRAG_MTU,
                           struct.pack("!H", self.imm.value & 0xFFFF), pause=True))
        else:
            out.append(ctl(ep, OP_PUT_ICMP6_FRAG_MTU,
                           struct.pack("!I", self.imm.value & 0xFFFFFFFF), pause=True))


# ---------------------------------------------------------------------------
# Generic options (put_dhcp_opts, put_dhcpv6_opts, put_nd_ra_opts,
# trigger_event).

@dataclass(frozen=True, slots=True)
class GenOptionValue:
    option: GenOption
    value: ConstSet

    def format(self) -> str:
        return f"{self.option.name} = {self.value.format()}"


def parse_gen_opt(ctx: ActionContext, table: dict[str, GenOption] | None,
                  opts_type: str) -> GenOptionValue | None:
    lexer = ctx.lexer
    tok = lexer.token
    if tok.type != lx.T_ID:
        lexer.syntax_error(None)
        return None
    option = table.get(tok.s or "") if table else None
    if option is None:
        lexer.syntax_error(f"expecting {opts_type} option name")
        return None
    lexer.get()
    if not lexer.force_match(lx.T_EQUALS):
        return None
    value = parse_constant_set(ctx)
    if value is None:
        return None
    if option.type == "host_id":
        return GenOptionValue(option, value)
    if option.type in ("str", "domains"):
        if not value.is_string:
            ctx.fail(f"{opts_type} option {option.name} requires string value.")
            return None
    elif value.is_string:
        ctx.fail(f"{opts_type} option {option.name} requires numeric value.")
        return None
    return GenOptionValue(option, value)


def _find_opt(options: tuple[GenOptionValue, ...], code: int) -> GenOptionValue | None:
    for o in options:
        if o.option.code == code:
            return o
    return None


def _parse_opts_list(ctx: ActionContext, dst: FieldRef, table: dict[str, GenOption] | None,
                     opts_type: str) -> tuple[GenOptionValue, ...] | None:
    """parse_put_opts(): the caller saw ``dst = name(``."""
    lexer = ctx.lexer
    lexer.get()
    lexer.get()
    err = ctx.type_check(dst, 1, True)
    if err:
        ctx.fail(err)
        return None
    options: list[GenOptionValue] = []
    while not lexer.match(lx.T_RPAREN):
        o = parse_gen_opt(ctx, table, opts_type)
        if o is None or ctx.error:
            return None
        options.append(o)
        lexer.match(lx.T_COMMA)
    return tuple(options)


# -- DHCPv4 payload ---------------------------------------------------------

def _plen(c: Const) -> int:
    if c.mask is None:
        return 32
    return 32 - ((~c.mask) & 0xFFFFFFFF).bit_length()


def _strtok_dot(s: str) -> tuple[str | None, str]:
    """strtok_r(s, "."): (token or None, remaining text)."""
    s = s.lstrip(".")
    if not s:
        return None, s
    i = s.find(".")
    if i < 0:
        return s, ""
    return s[:i], s[i + 1:]


def encode_domains(text: str) -> bytes | None:
    """DHCP option 119 (RFC 1035 name compression), exactly as OVN encodes
    it, including its suffix bookkeeping (which drops the last character of
    each remaining-name key).  None when a name is longer than 255."""
    out = bytearray()
    seen: dict[str, int] = {}
    for domain in [d for d in text.split(",") if d]:
        if len(domain) > 255:
            return None
        suffix = domain[:len(domain) - 1]
        label, rest = _strtok_dot(domain)
        while label is not None:
            ofs = seen.get(suffix)
            if ofs is not None:
                out += struct.pack("!H", 0xC000 | ofs)
                break
            seen[suffix] = len(out)
            raw = label.encode()
            out.append(len(raw) & 0xFF)
            out += raw
            if rest:
                suffix = rest[:len(rest) - 1]
            label, rest = _strtok_dot(rest)
        else:
            out.append(0)
    return bytes(out)


def encode_dhcpv4_option(o: GenOptionValue) -> bytes:
    typ = o.option.type
    values = o.value.values
    c = values[0]
    code = o.option.code & 0xFF
    if typ in ("bool", "uint8"):
        return bytes((code, 1, c.value & 0xFF))
    if typ == "uint16":
        return bytes((code, 2)) + struct.pack("!H", c.value & 0xFFFF)
    if typ == "uint32":
        return bytes((code, 4)) + struct.pack("!I", c.value & 0xFFFFFFFF)
    if typ == "ipv4":
        data = b"".join(struct.pack("!I", v.value & 0xFFFFFFFF) for v in values)
        return bytes((code, len(data) & 0xFF)) + data
    if typ == "static_routes":
        n = len(values) - (len(values) % 2)
        routes = bytearray()
        for i in range(0, n, 2):
            plen = _plen(values[i])
            routes.append(plen)
            routes += struct.pack("!I", values[i].value & 0xFFFFFFFF)[:(plen + 7) // 8]
            routes += struct.pack("!I", values[i + 1].value & 0xFFFFFFFF)
        return bytes((code, len(routes) & 0xFF)) + bytes(routes)
    if typ == "str":
        raw = (c.string or "").encode()
        return bytes((code, len(raw) & 0xFF)) + raw[:len(raw) & 0xFF]
    if typ == "host_id":
        if c.string is not None:
            raw = c.string.encode()
            return bytes((code, len(raw) & 0xFF)) + raw[:len(raw) & 0xFF]
        return bytes((code, 4)) + struct.pack("!I", c.value & 0xFFFFFFFF)
    if typ == "domains":
        names = encode_domains(c.string or "")
        if names is None:
            return bytes((code, 0))
        return bytes((code, len(names) & 0xFF)) + names
    return bytes((code, 0))


def dhcpv4_payload(options: tuple[GenOptionValue, ...]) -> bytes:
    """offerip first, then bootfile_name, bootfile_name_alt, next_server,
    then every other option in the given order."""
    offer = _find_opt(options, DHCP_OFFERIP_CODE)
    assert offer is not None
    out = bytearray(struct.pack("!I", offer.value.values[0].value & 0xFFFFFFFF))
    special: list[GenOptionValue] = [offer]
    for code in (DHCP_OPT_BOOTFILE_CODE, DHCP_OPT_BOOTFILE_ALT_CODE):
        o = _find_opt(options, code)
        if o is not None:
            raw = (o.value.values[0].string or "").encode()
            out += bytes((code, len(raw) & 0xFF)) + raw[:len(raw) & 0xFF]
            special.append(o)
    o = _find_opt(options, DHCP_OPT_NEXT_SERVER_CODE)
    if o is not None:
        out += bytes((DHCP_OPT_NEXT_SERVER_CODE, 4))
        out += struct.pack("!I", o.value.values[0].value & 0xFFFFFFFF)
        special.append(o)
    for o in options:
        if not any(o is s for s in special):
            out += encode_dhcpv4_option(o)
    return bytes(out)


def dhcpv6_payload(options: tuple[GenOptionValue, ...]) -> bytes:
    out = bytearray()
    for o in options:
        typ = o.option.type
        values = o.value.values
        if typ == "ipv6":
            data = b"".join(v.value.to_bytes(16, "big") for v in values)
        elif typ == "mac":
            data = (values[0].value & ((1 << 48) - 1)).to_bytes(6, "big")
        elif typ == "str":
            data = (values[0].string or "").encode()
        else:
            data = b""
        out += struct.pack("!HH", o.option.code, len(data)) + data
    return bytes(out)


# -- ND RA payload ------------------------------------------------------------

RA_MANAGED = 0x80
RA_OTHER = 0x40
PRF_HIGH = 0x08
PRF_LOW = 0x18
PRF_RESET_MASK = 0xE7


def _dnssl(text: str) -> bytes | None:
    size = 8
    buf = bytearray()
    for domain in [d for d in text.split(",") if d]:
        size += len(domain) + 2
        if size > 255:
            return None
        for label in [lb for lb in domain.split(".") if lb]:
            raw = label.encode()[:255]
            buf.append(len(raw))
            buf += raw
        buf.append(0)
    total = (size + 7) // 8 * 8
    body = bytes(buf) + bytes(max(0, total - 8 - len(buf)))
    return struct.pack("!BBHI", ND_OPT_DNSSL, total // 8, 0, 0xFFFFFFFF) + body[:total - 8]


def _route_info(text: str) -> bytes:
    import ipaddress
    out = bytearray()
    for item in [t for t in text.split(",") if t]:
        parts = [p for p in item.split("-") if p]
        flags = 0
        index = 0
        for part in parts:
            if index == 0:
                flags = {"HIGH": PRF_HIGH, "LOW": PRF_LOW}.get(part, 0)
                index = 1
                continue
            try:
                net = ipaddress.ip_network(part, strict=False)
            except ValueError:
                return bytes(out)
            if net.version != 6:
                return bytes(out)
            plen = (net.prefixlen + 63) // 64
            out += struct.pack("!BBBBI", ND_OPT_ROUTE_INFO_TYPE, 1 + plen,
                               net.prefixlen, flags, 0xFFFFFFFF)
            out += int(net.network_address).to_bytes(16, "big")[:plen * 8]
            index = 0
    return bytes(out)


def nd_ra_payload(options: tuple[GenOptionValue, ...]) -> bytes:
    """Complete ICMPv6 Router Advertisement with the options."""
    mo_flags = 0
    opts = bytearray()
    for o in options:
        c = o.value.values[0]
        code = o.option.code
        if code == ND_RA_FLAG_ADDR_MODE:
            if c.string == "dhcpv6_stateful":
                mo_flags |= RA_MANAGED
            elif c.string == "dhcpv6_stateless":
                mo_flags |= RA_OTHER
        elif code == ND_RA_FLAG_PRF:
            mo_flags |= {"LOW": PRF_LOW, "HIGH": PRF_HIGH}.get(c.string or "", 0)
        elif code == ND_OPT_SOURCE_LINKADDR:
            opts += bytes((ND_OPT_SOURCE_LINKADDR, 1))
            opts += (c.value & ((1 << 48) - 1)).to_bytes(6, "big")
        elif code == ND_OPT_MTU:
            opts += struct.pack("!BBHI", ND_OPT_MTU, 1, 0, c.value & 0xFFFFFFFF)
        elif code == ND_OPT_PREFIX_INFORMATION:
            mask = c.mask or 0
            plen = 128 - ((~mask) & ((1 << 128) - 1)).bit_length()
            la_flags = 0x80 if mo_flags & RA_MANAGED else 0xC0
            opts += struct.pack("!BBBBIII", ND_OPT_PREFIX_INFORMATION, 4, plen,
                                la_flags, 0xFFFFFFFF, 0xFFFFFFFF, 0)
            opts += (c.value & ((1 << 128) - 1)).to_bytes(16, "big")
        elif code == ND_OPT_RDNSS:
            opts += struct.pack("!BBHI", ND_OPT_RDNSS, 3, 0, 0xFFFFFFFF)
            opts += (c.value & ((1 << 128) - 1)).to_bytes(16, "big")
        elif code == ND_OPT_DNSSL:
            data = _dnssl(c.string or "")
            if data is not None:
                opts += data
        elif code == ND_OPT_ROUTE_INFO_TYPE:
            opts += _route_info(c.string or "")
    router_lifetime = 0xFFFF
    if router_lifetime == 0:
        mo_flags &= PRF_RESET_MASK
    ra = struct.pack("!BBHBBHII", 134, 0, 0, 255, mo_flags, router_lifetime, 0, 0)
    return ra + bytes(opts)


@dataclass(frozen=True, slots=True)
class PutOpts(OvnAction):
    name: str            # put_dhcp_opts / put_dhcpv6_opts / put_nd_ra_opts
    dst: FieldRef
    options: tuple[GenOptionValue, ...]

    def format(self) -> str:
        body = ", ".join(o.format() for o in self.options)
        return f"{self.dst.format()} = {self.name}({body});"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        if self.name == "put_dhcp_opts":
            opcode, payload = OP_PUT_DHCP_OPTS, dhcpv4_payload(self.options)
        elif self.name == "put_dhcpv6_opts":
            opcode, payload = OP_PUT_DHCPV6_OPTS, dhcpv6_payload(self.options)
        else:
            opcode, payload = OP_PUT_ND_RA_OPTS, nd_ra_payload(self.options)
        out.append(ctl(ep, opcode, field_header_and_ofs(self.dst) + payload, pause=True))


def parse_put_dhcp_opts(ctx: ActionContext, dst: FieldRef, v6: bool) -> OvnAction | None:
    table = ctx.pp.dhcpv6_opts if v6 else ctx.pp.dhcp_opts
    options = _parse_opts_list(ctx, dst, table, "DHCPv6" if v6 else "DHCPv4")
    if options is None:
        return None
    if not v6 and _find_opt(options, DHCP_OFFERIP_CODE) is None:
        ctx.fail("put_dhcp_opts requires offerip to be specified.")
        return None
    return PutOpts("put_dhcpv6_opts" if v6 else "put_dhcp_opts", dst, options)


def parse_put_nd_ra_opts(ctx: ActionContext, dst: FieldRef) -> OvnAction | None:
    options = _parse_opts_list(ctx, dst, ctx.pp.nd_ra_opts, "IPv6 ND RA")
    if options is None:
        return None
    stateful = prefix_set = slla_present = False
    for o in options:
        values = o.value.values
        name = o.option.name
        if len(values) > 1:
            ctx.fail(f'Invalid value for "{name}" option')
            return None
        c = values[0]
        code = o.option.code
        ok = True
        if code == ND_RA_FLAG_ADDR_MODE:
            ok = c.string in ("slaac", "dhcpv6_stateful", "dhcpv6_stateless")
            stateful = stateful or (ok and c.string == "dhcpv6_stateful")
        elif code == ND_RA_FLAG_PRF:
            ok = c.string in ("MEDIUM", "HIGH", "LOW")
        elif code == ND_OPT_SOURCE_LINKADDR:
            ok = c.string is None and c.fmt == lx.F_ETHERNET
            slla_present = True
        elif code == ND_OPT_PREFIX_INFORMATION:
            ok = c.string is None and c.fmt == lx.F_IPV6 and c.masked
            prefix_set = True
        elif code == ND_OPT_MTU:
            ok = c.string is None and c.fmt == lx.F_DECIMAL
        elif code == ND_OPT_RDNSS:
            ok = c.string is None and c.fmt == lx.F_IPV6
        elif code in (ND_OPT_ROUTE_INFO_TYPE, ND_OPT_DNSSL):
            ok = c.string is not None
        if not ok:
            ctx.fail(f'Invalid value for "{name}" option')
            return None
    if not slla_present:
        ctx.fail("slla option not present")
        return None
    if not stateful and not prefix_set:
        ctx.fail("prefix option needs to be set when address mode is "
                 "slaac/dhcpv6_stateless.")
        return None
    ctx.add_prerequisite("ip6")
    return PutOpts("put_nd_ra_opts", dst, options)


# ---------------------------------------------------------------------------
# dns_lookup

@dataclass(frozen=True, slots=True)
class DnsLookup(OvnAction):
    dst: FieldRef

    def format(self) -> str:
        return f"{self.dst.format()} = dns_lookup();"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        out.append(ctl(ep, OP_DNS_LOOKUP, field_header_and_ofs(self.dst), pause=True))


def parse_dns_lookup(ctx: ActionContext, dst: FieldRef) -> OvnAction | None:
    if not parse_result_args(ctx, "dns_lookup", dst, "udp"):
        return None
    return DnsLookup(dst)


# ---------------------------------------------------------------------------
# log

VERDICTS = ("allow", "drop", "reject")
SEVERITIES = {"alert": 1, "warning": 4, "notice": 5, "info": 6, "debug": 7}
SEVERITY_NAMES = {v: k for k, v in SEVERITIES.items()}
LOG_VERDICT_UNKNOWN = 255


@dataclass(frozen=True, slots=True)
class Log(OvnAction):
    name: str | None
    verdict: int
    severity: int
    meter: str | None

    def format(self) -> str:
        s = "log("
        if self.name is not None:
            s += f'name="{self.name}", '
        verdict = VERDICTS[self.verdict] if self.verdict < 3 else "<unknown>"
        s += f"verdict={verdict}, severity={SEVERITY_NAMES.get(self.severity, '<unknown>')}"
        if self.meter is not None:
            s += f', meter="{self.meter}"'
        return s + ");"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        meter_id = 0
        if self.meter is not None:
            meter_id = ep.meter_table.assign_id(self.meter, ep.lflow_uuid)
            if meter_id == 0:
                return
        payload = bytes((self.verdict, self.severity)) + (self.name or "").encode()
        out.append(ctl(ep, OP_LOG, payload, meter_id=meter_id))


def parse_log(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer
    name: str | None = None
    meter: str | None = None
    verdict = LOG_VERDICT_UNKNOWN
    severity = SEVERITIES["info"]
    if lexer.match(lx.T_LPAREN):
        while not lexer.match(lx.T_RPAREN):
            if lexer.match_id("verdict"):
                if not lexer.force_match(lx.T_EQUALS):
                    return None
                for i, v in enumerate(VERDICTS):
                    if lexer.match_id(v):
                        verdict = i
                        break
                else:
                    lexer.syntax_error("unknown verdict")
                    return None
            elif lexer.match_id("name"):
                if not lexer.force_match(lx.T_EQUALS):
                    return None
                if lexer.token.type != lx.T_STRING:
                    lexer.syntax_error("expecting string")
                    return None
                if len((lexer.token.s or "").encode()) >= 64:
                    lexer.syntax_error("name must be shorter than 64 characters")
                    return None
                name = lexer.token.s or ""
                lexer.get()
            elif lexer.match_id("severity"):
                if not lexer.force_match(lx.T_EQUALS):
                    return None
                if lexer.token.type == lx.T_ID:
                    sev = SEVERITIES.get(lexer.token.s or "")
                    if sev is None:
                        lexer.syntax_error("unknown severity")
                        return None
                    severity = sev
                    lexer.get()
                else:
                    lexer.syntax_error("expecting severity")
            elif lexer.match_id("meter"):
                if not lexer.force_match(lx.T_EQUALS):
                    return None
                if lexer.token.type != lx.T_STRING:
                    lexer.syntax_error("expecting string")
                    return None
                meter = lexer.token.s or ""
                lexer.get()
            else:
                lexer.syntax_error(None)
            if ctx.error:
                return None
            lexer.match(lx.T_COMMA)
    if verdict == LOG_VERDICT_UNKNOWN:
        lexer.syntax_error("expecting verdict")
        return None
    return Log(name, verdict, severity, meter)


# ---------------------------------------------------------------------------
# trigger_event

def _valid_vip(text: str) -> bool:
    return parse_lb_key(text) is not None


@dataclass(frozen=True, slots=True)
class TriggerEvent(OvnAction):
    event_type: int
    options: tuple[GenOptionValue, ...]

    def format(self) -> str:
        s = f'trigger_event(event = "{EVENT_NAMES[self.event_type]}"'
        for o in self.options:
            s += f", {o.format()}"
        return s + ");"

    def encode(self, ep: EncodeParams, out: list[Any]) -> None:
        payload = bytearray(struct.pack("!I", self.event_type))
        for o in self.options:
            raw = (o.value.values[0].string or "").encode()
            payload += struct.pack("!HH", o.option.code, len(raw)) + raw
        out.append(ctl(ep, OP_EVENT, bytes(payload)))


def parse_trigger_event(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer
    lexer.force_match(lx.T_LPAREN)
    if not lexer.match_id("event"):
        lexer.syntax_error("Expecting 'event' option")
        return None
    if not lexer.force_match(lx.T_EQUALS):
        return None
    tok = lexer.token
    if tok.type != lx.T_STRING or len((tok.s or "").encode()) >= 64:
        lexer.syntax_error("Expecting string")
        return None
    if tok.s not in EVENT_NAMES:
        lexer.syntax_error("Unknown event '-1'")
        return None
    event_type = EVENT_NAMES.index(tok.s)
    lexer.get()
    lexer.match(lx.T_COMMA)
    options: list[GenOptionValue] = []
    table = ctx.pp.controller_event_opts[event_type]
    while not lexer.match(lx.T_RPAREN):
        o = parse_gen_opt(ctx, table, EVENT_NAMES[event_type])
        if o is None or ctx.error:
            return None
        options.append(o)
        lexer.match(lx.T_COMMA)
    for o in options:
        values = o.value.values
        c = values[0]
        if len(values) > 1 or c.string is None:
            ctx.fail(f'Invalid value for "{o.option.name}" option')
            return None
        code = o.option.code
        if code == EMPTY_LB_VIP and not _valid_vip(c.string):
            ctx.fail(f"Invalid load balancer VIP '{c.string}'")
            return None
        if code == EMPTY_LB_PROTOCOL and c.string not in ("tcp", "udp", "sctp"):
            ctx.fail(f"Load balancer protocol '{c.string}' is not 'tcp', 'udp', "
                     "or 'sctp'")
            return None
        if code == EMPTY_LB_LOAD_BALANCER:
            try:
                uuidlib.UUID(c.string)
                ok = len(c.string) == 36
            except ValueError:
                ok = False
            if not ok:
                ctx.fail(f"Load balancer '{c.string}' is not a UUID")
                return None
    return TriggerEvent(event_type, tuple(options))
