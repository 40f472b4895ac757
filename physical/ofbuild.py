"""Flow building blocks used by the physical-flow builders.

Design note
-----------
The builders in this package never touch OpenFlow encodings directly; they
create matches with :class:`PMatch` and actions with the small frozen action
classes below, and wrap them in :class:`PhysFlow` together with the SB row
UUID that owns the flow.  These classes are a stand-in with the same field
names as the shared ``ofctrl`` contract (docs/DESIGN.md): every field is a
meta-flow name, every value an ``int``.  ``PhysFlow.to_ofctrl()`` converts to
``ofctrl`` objects once those exist; ``to_string()`` prints exactly what
``ovs-ofctl dump-flows --no-stats`` prints (without the cookie), for the subset
of fields and actions used here, so parity with the C agent can be tested
without any other module.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence, Union

# --------------------------------------------------------------------------
# Field metadata: width and the NXM/OXM name OVS prints in move/push/learn.
# --------------------------------------------------------------------------

_NXM_NAMES: dict[str, tuple[str, int]] = {
    "in_port": ("NXM_OF_IN_PORT", 16),
    "metadata": ("OXM_OF_METADATA", 64),
    "tun_id": ("NXM_NX_TUN_ID", 64),
    "eth_src": ("NXM_OF_ETH_SRC", 48),
    "eth_dst": ("NXM_OF_ETH_DST", 48),
    "eth_type": ("NXM_OF_ETH_TYPE", 16),
    "ip_src": ("NXM_OF_IP_SRC", 32),
    "ip_dst": ("NXM_OF_IP_DST", 32),
    "ipv6_src": ("NXM_NX_IPV6_SRC", 128),
    "ipv6_dst": ("NXM_NX_IPV6_DST", 128),
    "nw_proto": ("NXM_OF_IP_PROTO", 8),
    "tcp_src": ("NXM_OF_TCP_SRC", 16),
    "tcp_dst": ("NXM_OF_TCP_DST", 16),
    "udp_src": ("NXM_OF_UDP_SRC", 16),
    "udp_dst": ("NXM_OF_UDP_DST", 16),
    "sctp_src": ("OXM_OF_SCTP_SRC", 16),
    "sctp_dst": ("OXM_OF_SCTP_DST", 16),
}
for _i in range(16):
    _NXM_NAMES[f"reg{_i}"] = (f"NXM_NX_REG{_i}", 32)
for _i in range(64):
    _NXM_NAMES[f"tun_metadata{_i}"] = (f"NXM_NX_TUN_METADATA{_i}", 32 * 8 * 4)


def field_bits(name: str) -> int:
    return _NXM_NAMES[name][1]


def subfield_str(name: str, ofs: int, n_bits: int) -> str:
    nxm, width = _NXM_NAMES[name]
    if ofs == 0 and n_bits == width:
        return f"{nxm}[]"
    if n_bits == 1:
        return f"{nxm}[{ofs}]"
    return f"{nxm}[{ofs}..{ofs + n_bits - 1}]"


def mac_str(mac: int) -> str:
    return ":".join(f"{(mac >> (40 - 8 * i)) & 0xFF:02x}" for i in range(6))


def ip4_str(ip: int) -> str:
    return str(ipaddress.IPv4Address(ip))


def ip6_str(ip: int) -> str:
    return str(ipaddress.IPv6Address(ip))


def _hex(v: int) -> str:
    return "0" if v == 0 else f"{v:#x}"


def _prefix_len(mask: int, width: int) -> int | None:
    inv = ~mask & ((1 << width) - 1)
    if inv & (inv + 1):
        return None
    return width - inv.bit_length()


def _fmt_ip(v: int, mask: int | None, width: int) -> str:
    text = ip4_str(v) if width == 32 else ip6_str(v)
    if mask is None:
        return text
    plen = _prefix_len(mask, width)
    if plen is not None:
        return f"{text}/{plen}"
    return f"{text}/{ip4_str(mask) if width == 32 else ip6_str(mask)}"


_CT_STATE_BITS = ("new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat")


# --------------------------------------------------------------------------
# Match
# --------------------------------------------------------------------------

_PORT_NAMES_TYPE = Mapping[int, str] | None


class PMatch:
    """Immutable match: meta-flow field name -> (value, mask or None)."""

    __slots__ = ("items", "_hash")

    def __init__(self, items: Iterable[tuple[str, int, int | None]] = ()) -> None:
        d: dict[str, tuple[int, int | None]] = {}
        for name, value, mask in items:
            d[name] = (value, mask)
        self.items: tuple[tuple[str, int, int | None], ...] = tuple(
            (k, v, m) for k, (v, m) in sorted(d.items()))
        self._hash = hash(self.items)

    def with_field(self, name: str, value: int, mask: int | None = None) -> PMatch:
        return PMatch([*(i for i in self.items if i[0] != name), (name, value, mask)])

    def get(self, name: str) -> tuple[int, int | None] | None:
        for k, v, m in self.items:
            if k == name:
                return (v, m)
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PMatch) and self.items == other.items

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"PMatch({self.to_string()!r})"

    def to_string(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        f = {k: (v, m) for k, v, m in self.items}
        out: list[str] = []

        def u(name: str, label: str | None = None) -> None:
            if name in f:
                v, m = f[name]
                out.append(f"{label or name}={_hex(v)}" + ("" if m is None else f"/{_hex(m)}"))

        def dec(name: str, label: str | None = None) -> None:
            if name in f:
                v, m = f[name]
                out.append(f"{label or name}={v}" if m is None else f"{label or name}={_hex(v)}/{_hex(m)}")

        def mac(name: str, label: str) -> None:
            if name in f:
                v, m = f[name]
                out.append(f"{label}={mac_str(v)}" + ("" if m is None else f"/{mac_str(m)}"))

        def ip(name: str, label: str, width: int) -> None:
            if name in f:
                v, m = f[name]
                out.append(f"{label}={_fmt_ip(v, m, width)}")

        if "conj_id" in f:
            out.append(f"conj_id={f['conj_id'][0]}")
        if "ct_state" in f:
            v, m = f["ct_state"]
            mm = 0xFF if m is None else m
            flags = "".join(("+" if v & (1 << b) else "-") + _CT_STATE_BITS[b]
                            for b in range(8) if mm & (1 << b))
            out.append(f"ct_state={flags}")
        u("ct_mark")
        u("ct_label")
        ip("ct_nw_dst", "ct_nw_dst", 32)
        ip("ct_ipv6_dst", "ct_ipv6_dst", 128)
        if "ct_nw_proto" in f:
            out.append(f"ct_nw_proto={f['ct_nw_proto'][0]}")
            dec("ct_tp_dst")
        eth_type = f["eth_type"][0] if "eth_type" in f else None
        proto = f["nw_proto"][0] if "nw_proto" in f else None
        skip_type = skip_proto = False
        if eth_type == 0x0800:
            skip_type = True
            names = {1: "icmp", 6: "tcp", 17: "udp", 132: "sctp"}
            if proto in names:
                out.append(names[proto])
                skip_proto = True
            else:
                out.append("ip")
        elif eth_type == 0x86DD:
            skip_type = True
            names = {58: "icmp6", 6: "tcp6", 17: "udp6", 132: "sctp6"}
            if proto in names:
                out.append(names[proto])
                skip_proto = True
            else:
                out.append("ipv6")
        elif eth_type == 0x0806:
            out.append("arp")
            skip_type = True
        elif eth_type == 0x8035:
            out.append("rarp")
            skip_type = True
        for i in range(16):
            u(f"reg{i}")
        u("tun_id")
        for i in range(64):
            u(f"tun_metadata{i}")
        u("metadata")
        if "in_port" in f:
            out.append("in_port=" + format_port(f["in_port"][0], port_names))
        if "vlan_tci" in f:
            v, m = f["vlan_tci"]
            mm = 0xFFFF if m is None else m
            if (mm & 0x1000) and (v & 0x1000) and (mm & 0xEFFF) in (0x0FFF, 0xEFFF):
                out.append(f"dl_vlan={v & 0xFFF}")
                if mm & 0xE000:
                    out.append(f"dl_vlan_pcp={v >> 13}")
            elif mm == 0xFFFF:
                out.append(f"vlan_tci=0x{v:04x}")
            else:
                out.append(f"vlan_tci=0x{v:04x}/0x{mm:04x}")
        mac("eth_src", "dl_src")
        mac("eth_dst", "dl_dst")
        if not skip_type and eth_type is not None:
            out.append(f"dl_type=0x{eth_type:04x}")
        if eth_type == 0x86DD:
            ip("ipv6_src", "ipv6_src", 128)
            ip("ipv6_dst", "ipv6_dst", 128)
        elif eth_type in (0x0806, 0x8035):
            ip("arp_spa", "arp_spa", 32)
            ip("arp_tpa", "arp_tpa", 32)
        else:
            ip("ip_src", "nw_src", 32)
            ip("ip_dst", "nw_dst", 32)
        if not skip_proto and proto is not None:
            out.append(f"nw_proto={proto}")
        if eth_type in (0x0806, 0x8035):
            mac("arp_sha", "arp_sha")
            mac("arp_tha", "arp_tha")
        dec("nw_ttl")
        if eth_type == 0x0800 and proto == 1:
            dec("icmp_type")
            dec("icmp_code")
        elif eth_type == 0x86DD and proto == 58:
            dec("icmpv6_type", "icmp_type")
            dec("icmpv6_code", "icmp_code")
            ip("nd_target", "nd_target", 128)
            mac("nd_sll", "nd_sll")
            mac("nd_tll", "nd_tll")
        else:
            for p in ("tcp", "udp", "sctp"):
                dec(f"{p}_src", "tp_src")
                dec(f"{p}_dst", "tp_dst")
        return ",".join(out)


def format_port(port: int, port_names: _PORT_NAMES_TYPE) -> str:
    if port in (0xFFFF, 0xFFFFFFFF):
        return "ANY"
    if port_names and port in port_names:
        name = port_names[port]
        if name[:1].isascii() and name[:1].isalpha() and name.isascii() and name.isalnum():
            return name
        return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(port)


# --------------------------------------------------------------------------
# Actions
# --------------------------------------------------------------------------

_SET_FIELD_FMT: dict[str, str] = {
    "eth_src": "mac", "eth_dst": "mac", "in_port": "port", "vlan_vid": "dec",
    "ip_src": "ip4", "ip_dst": "ip4", "ipv6_src": "ip6", "ipv6_dst": "ip6",
    "icmp_type": "dec", "icmp_code": "dec", "icmpv6_type": "dec", "icmpv6_code": "dec",
    "nw_ttl": "dec",
}
_SET_FIELD_BITS: dict[str, int] = {
    "eth_src": 48, "eth_dst": 48, "in_port": 16, "vlan_vid": 13,
    "ip_src": 32, "ip_dst": 32, "ipv6_src": 128, "ipv6_dst": 128,
    "tun_id": 64, "metadata": 64,
}


@dataclass(frozen=True, slots=True)
class SetField:
    field: str
    value: int
    mask: int | None = None   # None = all bits of the field

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        kind = _SET_FIELD_FMT.get(self.field, "hex")
        if kind == "mac":
            v = mac_str(self.value)
        elif kind == "port":
            v = format_port(self.value, port_names)
        elif kind == "dec":
            v = str(self.value)
        elif kind == "ip4":
            v = ip4_str(self.value)
        elif kind == "ip6":
            v = ip6_str(self.value)
        else:
            v = _hex(self.value)
        if self.mask is not None:
            v += "/" + _hex(self.mask)
        return f"set_field:{v}->{self.field}"


def load(field: str, value: int, ofs: int = 0, n_bits: int | None = None) -> SetField:
    """A set_field writing ``n_bits`` of ``value`` at bit ``ofs`` (OVN's put_load)."""
    width = _SET_FIELD_BITS.get(field, 32)
    if field.startswith("tun_metadata"):
        width = 32   # OVN maps its Geneve option with length 4
    if n_bits is None:
        n_bits = width - ofs
    mask = ((1 << n_bits) - 1) << ofs
    full = (1 << width) - 1
    return SetField(field, (value << ofs) & mask, None if mask == full else mask)


@dataclass(frozen=True, slots=True)
class Move:
    src: str
    src_ofs: int
    dst: str
    dst_ofs: int
    n_bits: int

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return (f"move:{subfield_str(self.src, self.src_ofs, self.n_bits)}->"
                f"{subfield_str(self.dst, self.dst_ofs, self.n_bits)}")


@dataclass(frozen=True, slots=True)
class Resubmit:
    table: int

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return f"resubmit(,{self.table})"


@dataclass(frozen=True, slots=True)
class Output:
    port: int

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return "output:" + format_port(self.port, port_names)


@dataclass(frozen=True, slots=True)
class StackPush:
    field: str

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return f"push:{subfield_str(self.field, 0, field_bits(self.field))}"


@dataclass(frozen=True, slots=True)
class StackPop:
    field: str

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return f"pop:{subfield_str(self.field, 0, field_bits(self.field))}"


@dataclass(frozen=True, slots=True)
class PopVlan:
    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return "pop_vlan"


@dataclass(frozen=True, slots=True)
class PushVlan:
    ethertype: int

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return f"push_vlan:0x{self.ethertype:04x}"


@dataclass(frozen=True, slots=True)
class CtClear:
    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return "ct_clear"


@dataclass(frozen=True, slots=True)
class Clone:
    actions: tuple[Action, ...]

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return f"clone({format_actions(self.actions, port_names)})"


@dataclass(frozen=True, slots=True)
class Conjunction:
    id: int
    clause: int      # 0-based
    n_clauses: int

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return f"conjunction({self.id},{self.clause + 1}/{self.n_clauses})"


@dataclass(frozen=True, slots=True)
class BundleActiveBackup:
    """bundle(eth_src,0,active_backup,ofport,members:...) as OVN builds it."""
    members: tuple[int, ...]

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        members = ",".join(format_port(p, port_names) for p in self.members)
        return f"bundle(eth_src,0,active_backup,ofport,members:{members})"


@dataclass(frozen=True, slots=True)
class Sample:
    probability: int
    collector_set_id: int
    obs_domain_id: int
    obs_point_id: int

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return (f"sample(probability={self.probability},collector_set_id={self.collector_set_id},"
                f"obs_domain_id={self.obs_domain_id},obs_point_id={self.obs_point_id})")


@dataclass(frozen=True, slots=True)
class CtCommitSnat:
    """ct(commit,zone=<zone_field>[0..15],nat(src=IP)) used by LB hairpin SNAT."""
    zone_field: str
    ip: int
    is_ipv6: bool

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        addr = ip6_str(self.ip) if self.is_ipv6 else ip4_str(self.ip)
        return (f"ct(commit,zone={subfield_str(self.zone_field, 0, 16)},"
                f"nat(src={addr}))")


@dataclass(frozen=True, slots=True)
class LearnSpec:
    """One learn() spec: ``kind`` is "match_field" (dst[] from src or same field),
    "match_imm" (dst=imm) or "load_imm" (load:imm->dst)."""
    kind: str
    dst: str
    dst_ofs: int = 0
    n_bits: int = 0          # 0 = whole field
    src: str | None = None
    imm: int = 0

    def format(self) -> str:
        nb = self.n_bits or field_bits(self.dst)
        if self.kind == "match_field":
            dst = subfield_str(self.dst, self.dst_ofs, nb)
            if self.src is None or self.src == self.dst:
                return dst
            return f"{dst}={subfield_str(self.src, 0, nb)}"
        if self.kind == "match_imm":
            if self.dst in ("ip_src", "ip_dst"):
                val = ip4_str(self.imm)
            elif self.dst in ("ipv6_src", "ipv6_dst"):
                val = ip6_str(self.imm)
            elif self.dst == "eth_type":
                val = _hex(self.imm)
            else:
                val = str(self.imm)
            return f"{self.dst}={val}"
        return f"load:{_hex(self.imm)}->{subfield_str(self.dst, self.dst_ofs, nb)}"


@dataclass(frozen=True, slots=True)
class Learn:
    table: int
    cookie: int
    specs: tuple[LearnSpec, ...]
    delete_learned: bool = True

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        parts = [f"table={self.table}"]
        if self.delete_learned:
            parts.append("delete_learned")
        if self.cookie:
            parts.append(f"cookie={self.cookie:#x}")
        parts.extend(s.format() for s in self.specs)
        return f"learn({','.join(parts)})"


@dataclass(frozen=True, slots=True)
class ControllerOp:
    """controller(userdata=<opcode><payload>[,pause]) with an OVN opcode.

    ``nested`` are OpenFlow actions carried in the userdata (encoded by the
    ofctrl ofpacts module); ``payload`` raw bytes appended after them."""
    opcode: int
    pause: bool = False
    nested: tuple[Action, ...] = ()
    payload: bytes = b""

    def userdata(self) -> bytes:
        body = b""
        if self.nested:
            body = _encode_nested(self.nested)
        return self.opcode.to_bytes(4, "big") + b"\x00" * 4 + body + self.payload

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        ud = ".".join(f"{b:02x}" for b in self.userdata())
        return f"controller(userdata={ud}{',pause' if self.pause else ''})"


@dataclass(frozen=True, slots=True)
class CheckPktLarger:
    pkt_len: int
    dst: str
    dst_ofs: int

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return f"check_pkt_larger({self.pkt_len})->{subfield_str(self.dst, self.dst_ofs, 1)}"


@dataclass(frozen=True, slots=True)
class SetIpTtl:
    """mod_nw_ttl:N (OFPAT_SET_NW_TTL), as OVN's PMTUD reply builds it."""
    ttl: int

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return f"mod_nw_ttl:{self.ttl}"


@dataclass(frozen=True, slots=True)
class RawAction:
    """An action known only by its OVS text (used for nested controller actions)."""
    text: str

    def format(self, port_names: _PORT_NAMES_TYPE = None) -> str:
        return self.text


Action = Union[SetField, Move, Resubmit, Output, StackPush, StackPop, PopVlan, PushVlan,
               CtClear, Clone, Conjunction, BundleActiveBackup, Sample, CtCommitSnat, Learn,
               ControllerOp, CheckPktLarger, SetIpTtl, RawAction]


def _encode_nested(actions: Sequence[Action]) -> bytes:
    """OF1.5 bytes of nested actions (controller userdata), via ofctrl.ofpacts."""
    from ofctrl.ofpacts import encode_actions

    from physical.to_ofctrl import to_ofctrl_actions
    return encode_actions(to_ofctrl_actions(tuple(actions)))


def format_actions(actions: Sequence[Action], port_names: _PORT_NAMES_TYPE = None) -> str:
    if not actions:
        return "drop"
    return ",".join(a.format(port_names) for a in actions)


# --------------------------------------------------------------------------
# Flow
# --------------------------------------------------------------------------

class PhysFlow:
    """One desired flow: table, priority, match, actions, cookie and owner UUID."""

    __slots__ = ("table", "priority", "match", "actions", "cookie", "owner")

    def __init__(self, table: int, priority: int, match: PMatch,
                 actions: Sequence[Action], cookie: int, owner: str | None) -> None:
        self.table = table
        self.priority = priority
        self.match = match
        self.actions: tuple[Action, ...] = tuple(actions)
        self.cookie = cookie
        self.owner = owner

    def key(self) -> tuple[int, int, PMatch]:
        return (self.table, self.priority, self.match)

    def __repr__(self) -> str:
        return f"PhysFlow({self.to_string()!r}, owner={self.owner})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PhysFlow) and self.key() == other.key()
                and self.actions == other.actions and self.cookie == other.cookie
                and self.owner == other.owner)

    def __hash__(self) -> int:
        return hash((self.table, self.priority, self.match, self.actions))

    def to_string(self, port_names: _PORT_NAMES_TYPE = None, cookie: bool = False) -> str:
        parts = []
        if cookie and self.cookie:
            parts.append(f"cookie={self.cookie:#x}, ")
        if self.table:
            parts.append(f"table={self.table}, ")
        m = self.match.to_string(port_names)
        parts.append(f"priority={self.priority}" + (f",{m}" if m else ""))
        parts.append(" actions=" + format_actions(self.actions, port_names))
        return "".join(parts)
