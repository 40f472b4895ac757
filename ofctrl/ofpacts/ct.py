"""Connection tracking and nesting actions: ``ct(...)``, ``nat(...)``,
``clone(...)``.

``Ct.actions`` holds the nested actions exactly as they go on the wire;
OVS prints a leading ``Nat`` outside the ``exec(...)`` envelope, so
``Ct(commit=True, table=19, zone_src=..., actions=(Nat(...), SetField(...)))``
prints ``ct(commit,table=19,zone=NXM_NX_REG13[0..15],nat(dst=...),exec(set_field:...))``.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from ofctrl.fields import Subfield
from ofctrl.ofpacts.base import Action, encode_list, join_actions, legacy_header32, nx_header

__all__ = ["Ct", "Nat", "Clone", "NX_NAT_F_SRC", "NX_NAT_F_DST",
           "NX_NAT_F_PERSISTENT", "NX_NAT_F_PROTO_HASH", "NX_NAT_F_PROTO_RANDOM"]

NXAST_CT = 35
NXAST_NAT = 36
NXAST_CLONE = 42

NX_CT_F_COMMIT = 1
NX_CT_F_FORCE = 2

NX_NAT_F_SRC = 1 << 0
NX_NAT_F_DST = 1 << 1
NX_NAT_F_PERSISTENT = 1 << 2
NX_NAT_F_PROTO_HASH = 1 << 3
NX_NAT_F_PROTO_RANDOM = 1 << 4

NX_NAT_RANGE_IPV4_MIN = 1 << 0
NX_NAT_RANGE_IPV4_MAX = 1 << 1
NX_NAT_RANGE_IPV6_MIN = 1 << 2
NX_NAT_RANGE_IPV6_MAX = 1 << 3
NX_NAT_RANGE_PROTO_MIN = 1 << 4
NX_NAT_RANGE_PROTO_MAX = 1 << 5

_ALG_NAMES = {21: "ftp", 69: "tftp"}


@dataclass(frozen=True, slots=True)
class Nat(Action):
    """``nat``, ``nat(src)``, ``nat(dst=IP[-IP][:PORT[-PORT]][,persistent,hash,random])``.

    ``flags`` are NX_NAT_F_* bits. ``ipv6`` selects the address family when
    ``addr_min`` is set (None = no range). Addresses are ints."""

    flags: int = 0
    addr_min: int | None = None
    addr_max: int | None = None
    ipv6: bool = False
    port_min: int = 0
    port_max: int = 0

    @classmethod
    def make(cls, kind: str = "", addr_min: int | None = None,
             addr_max: int | None = None, ipv6: bool = False, port_min: int = 0,
             port_max: int = 0, persistent: bool = False, hash: bool = False,
             random: bool = False) -> "Nat":
        """Convenience constructor: ``kind`` is "", "src" or "dst"."""
        flags = {"": 0, "src": NX_NAT_F_SRC, "dst": NX_NAT_F_DST}[kind]
        if persistent:
            flags |= NX_NAT_F_PERSISTENT
        if hash:
            flags |= NX_NAT_F_PROTO_HASH
        if random:
            flags |= NX_NAT_F_PROTO_RANDOM
        return cls(flags, addr_min, addr_max, ipv6, port_min, port_max)

    def _encode(self) -> bytes:
        present = 0
        opts = b""
        if self.addr_min is not None:
            if self.ipv6:
                if self.addr_min:
                    opts += self.addr_min.to_bytes(16, "big")
                    present |= NX_NAT_RANGE_IPV6_MIN
                if self.addr_max:
                    opts += self.addr_max.to_bytes(16, "big")
                    present |= NX_NAT_RANGE_IPV6_MAX
            else:
                if self.addr_min:
                    opts += struct.pack("!I", self.addr_min)
                    present |= NX_NAT_RANGE_IPV4_MIN
                if self.addr_max:
                    opts += struct.pack("!I", self.addr_max)
                    present |= NX_NAT_RANGE_IPV4_MAX
            if self.port_min:
                opts += struct.pack("!H", self.port_min)
                present |= NX_NAT_RANGE_PROTO_MIN
            if self.port_max:
                opts += struct.pack("!H", self.port_max)
                present |= NX_NAT_RANGE_PROTO_MAX
        return nx_header(NXAST_NAT, struct.pack("!2xHH", self.flags, present) + opts)

    def format(self) -> str:
        flags = self.flags
        if not flags & (NX_NAT_F_SRC | NX_NAT_F_DST):
            return "nat"
        parts = ["src" if flags & NX_NAT_F_SRC else "dst"]
        if self.addr_min is not None:
            text = "="
            if self.ipv6:
                bracket = bool(self.port_min)
                text += _ipv6_bracket(self.addr_min, bracket)
                if self.addr_max and self.addr_max != self.addr_min:
                    text += "-" + _ipv6_bracket(self.addr_max, bracket)
            else:
                text += _ipv4(self.addr_min)
                if self.addr_max and self.addr_max != self.addr_min:
                    text += "-" + _ipv4(self.addr_max)
            if self.port_min:
                text += ":%d" % self.port_min
                if self.port_max and self.port_max != self.port_min:
                    text += "-%d" % self.port_max
            parts[0] += text
            if flags & NX_NAT_F_PERSISTENT:
                parts.append("persistent")
            if flags & NX_NAT_F_PROTO_HASH:
                parts.append("hash")
            if flags & NX_NAT_F_PROTO_RANDOM:
                parts.append("random")
        return "nat(%s)" % ",".join(parts)


def _ipv4(v: int) -> str:
    return "%d.%d.%d.%d" % (v >> 24, (v >> 16) & 255, (v >> 8) & 255, v & 255)


def _ipv6_bracket(v: int, bracket: bool) -> str:
    text = socket.inet_ntop(socket.AF_INET6, v.to_bytes(16, "big"))
    return "[%s]" % text if bracket else text


@dataclass(frozen=True, slots=True)
class Ct(Action):
    """``ct(...)`` (NXAST_CT). ``table`` 255 = no recirculation; the zone is
    ``zone_src`` (a 16-bit subfield) when set, else the immediate ``zone_imm``."""

    commit: bool = False
    force: bool = False
    table: int = 255
    zone_src: Subfield | None = None
    zone_imm: int = 0
    alg: int = 0
    actions: tuple[Action, ...] = ()

    def _encode(self) -> bytes:
        flags = (NX_CT_F_COMMIT if self.commit else 0) | (NX_CT_F_FORCE if self.force else 0)
        if self.zone_src is not None:
            zone_src = legacy_header32(self.zone_src.field)
            zone = (self.zone_src.ofs << 6) | (self.zone_src.n_bits - 1)
        else:
            zone_src, zone = 0, self.zone_imm
        head = struct.pack("!HIHB3xH", flags, zone_src, zone, self.table, self.alg)
        return nx_header(NXAST_CT, head + encode_list(self.actions))

    def format(self) -> str:
        parts = []
        if self.commit:
            parts.append("commit")
        if self.force:
            parts.append("force")
        if self.table != 255:
            parts.append("table=%d" % self.table)
        if self.zone_src is not None:
            parts.append("zone=" + self.zone_src.format())
        elif self.zone_imm:
            parts.append("zone=%d" % self.zone_imm)
        acts = self.actions
        if acts and isinstance(acts[0], Nat):
            parts.append(acts[0].format())
            acts = acts[1:]
        if acts:
            parts.append("exec(%s)" % join_actions(acts))
        if self.alg:
            parts.append("alg=%s" % _ALG_NAMES.get(self.alg, str(self.alg)))
        return "ct(%s)" % ",".join(parts)


@dataclass(frozen=True, slots=True)
class Clone(Action):
    """``clone(ACTIONS)`` (NXAST_CLONE)."""

    actions: tuple[Action, ...] = ()

    def _encode(self) -> bytes:
        return nx_header(NXAST_CLONE, b"\0" * 6 + encode_list(self.actions))

    def format(self) -> str:
        return "clone(%s)" % join_actions(self.actions)
