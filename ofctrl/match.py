"""OpenFlow match as an immutable, hashable value object.

A ``Match`` is a tuple of ``(field name, value, mask)`` items, one per
field, in one canonical order (the order OVS itself emits match fields in
OpenFlow 1.5, which puts every prerequisite -- eth_type, nw_proto, ICMP
type -- before the fields that depend on it).  Field names are OVS
meta-flow names.  Values and masks are ints; a mask of ``None`` means an
exact match; all-ones masks are normalised to ``None`` and a zero mask
drops the field.  One exception, as in OVS: a ``tcp_flags`` mask of just
the 12 flag bits (0xfff) is kept, not turned into an exact match.

Spellings that OVS stores in one place are normalised so that equal
matches compare equal: ``xreg``/``xxreg`` become their 32-bit ``reg``
parts, ``dl_vlan``/``vlan_vid``/``vlan_pcp``/``dl_vlan_pcp`` become
``vlan_tci``, ``ip_dscp`` becomes ``nw_tos``, ``in_port_oxm`` becomes
``in_port``, aliases (``dl_src``, ``nw_src``...) their meta-flow names.

``to_string()`` prints what OVS 3.1 ``match_format()`` prints (as in
``ovs-ofctl dump-flows``), ``parse()`` reads that text back, ``encode()``
produces the OF1.5 ``ofp_match`` OVS would send for it (byte for byte, as
checked against ovs-vswitchd's own flow-stats encoding) and ``decode()``
reads an ``ofp_match``.  ``prereq_errors()`` names fields whose OVS
prerequisites are unmet (OVS would answer OFPBMC_BAD_PREREQ).

Like OVS's, the text form is not injective in a few corners (``nw_frag=no``
is printed for two masks; tunnel-metadata masks that are all ones over the
bytes the value needs are omitted), so compare Match objects, not text.
"""

from __future__ import annotations

import json
import re
from typing import Iterable, Iterator

from ofctrl.fields import (
    FIELDS,
    format_frag,
    format_ipv4,
    format_ipv6,
    format_mac,
    format_port,
    lookup,
    parse_value,
    port_from_ofp11,
)
from ofctrl.oxm import OxmError, decode_oxms, encode_match_items, encode_ofp_match

__all__ = ["Match", "MatchError"]

Item = tuple[str, int, "int | None"]


class MatchError(ValueError):
    """Invalid match (unknown field, bad value or mask, bad text)."""


ETH_TYPE_IP = 0x0800
ETH_TYPE_ARP = 0x0806
ETH_TYPE_RARP = 0x8035
ETH_TYPE_IPV6 = 0x86DD
ETH_TYPE_MPLS = 0x8847
ETH_TYPE_MPLS_MCAST = 0x8848
IPPROTO_ICMP = 1
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_ICMPV6 = 58
IPPROTO_SCTP = 132

# Canonical order = the order OVS nx_put_raw() emits fields in OF1.5.
_ORDER: list[str] = (
    ["packet_type", "dp_hash", "recirc_id", "conj_id", "in_port", "actset_output",
     "eth_src", "eth_dst", "eth_type", "vlan_tci",
     "mpls_tc", "mpls_bos", "mpls_ttl", "mpls_label",
     "ip_src", "ip_dst", "ipv6_src", "ipv6_dst", "ip_frag", "nw_tos", "nw_ecn",
     "nw_ttl", "ipv6_label", "nw_proto",
     "tcp_src", "tcp_dst", "tcp_flags", "udp_src", "udp_dst", "sctp_src", "sctp_dst",
     "icmp_type", "icmp_code", "icmpv6_type", "icmpv6_code",
     "nd_reserved", "nd_target", "nd_options_type", "nd_sll", "nd_tll",
     "arp_op", "arp_spa", "arp_tpa", "arp_sha", "arp_tha",
     "tun_id", "tun_flags", "tun_src", "tun_dst", "tun_ipv6_src", "tun_ipv6_dst",
     "tun_gbp_id", "tun_gbp_flags"]
    + [f"tun_metadata{i}" for i in range(64)]
    + ["tun_erspan_idx", "tun_erspan_ver", "tun_erspan_dir", "tun_erspan_hwid",
       "tun_gtpu_flags", "tun_gtpu_msgtype",
       "nsh_flags", "nsh_ttl", "nsh_mdtype", "nsh_np", "nsh_spi", "nsh_si",
       "nsh_c1", "nsh_c2", "nsh_c3", "nsh_c4"]
    + [f"reg{i}" for i in range(16)]
    + ["pkt_mark", "ct_state", "ct_zone", "ct_mark", "ct_label",
       "ct_nw_src", "ct_ipv6_src", "ct_nw_dst", "ct_ipv6_dst",
       "ct_nw_proto", "ct_tp_src", "ct_tp_dst", "metadata"]
)
# Fields that are normalised into others, or cannot be matched via OpenFlow.
_FOLDED = {f"xreg{i}" for i in range(8)} | {f"xxreg{i}" for i in range(4)} | {
    "dl_vlan", "vlan_vid", "dl_vlan_pcp", "vlan_pcp", "ip_dscp", "in_port_oxm"}
_UNMATCHABLE = {"skb_priority", "tun_ttl", "tun_tos"}
for _name in FIELDS:
    if _name not in _ORDER and _name not in _FOLDED and _name not in _UNMATCHABLE:
        _ORDER.append(_name)
_RANK: dict[str, int] = {name: i for i, name in enumerate(_ORDER)}
# name -> (all-ones mask, maskable, rank) for the directly stored fields.
_PLAIN: dict[str, tuple[int, bool, int]] = {
    name: ((1 << FIELDS[name].n_bits) - 1, FIELDS[name].maskable, _RANK[name])
    for name in _ORDER}
_PLAIN["ct_state"] = (0xFF, True, _RANK["ct_state"])      # OVS keeps 8 bits of it
_PLAIN["arp_op"] = (0xFF, False, _RANK["arp_op"])         # kept in OVS's 8-bit nw_proto
# OVS keeps tcp_flags in 16 bits and keeps a mask of just the 12 flag bits
# (what OVN's mf_mask_subfield() produces) apart from an exact match: it is
# sent as a masked OXM, and is a different classifier rule.  (ipv6_label
# has no such distinction: OVS mf_set() turns a 20-bit mask into exact.)
_PLAIN["tcp_flags"] = (0xFFFF, True, _RANK["tcp_flags"])
_VLAN_RANK = _RANK["vlan_tci"]


class Match:
    """Immutable OpenFlow match (see module docstring)."""

    __slots__ = ("items", "_hash")

    items: tuple[Item, ...]
    _hash: int

    def __init__(self, items: Iterable[tuple[str, int, int | None]] = ()) -> None:
        # Hot path (the compiler builds a Match per expression conjunct):
        # exact or all-ones-masked plain fields are stored inline, an input
        # item tuple is reused when it is already canonical, and items that
        # arrive in canonical order are not sorted again.
        d: dict[int, Item] = {}            # rank -> item
        special: list[tuple[str, int, int | None]] | None = None
        plain = _PLAIN
        last = -1
        ordered = True
        for item in items:
            name, value, mask = item
            spec = plain.get(name)
            if spec is None:
                if special is None:
                    special = []
                special.append((name, value, mask))
                continue
            rank = spec[2]
            if rank <= last:
                ordered = False
            last = rank
            if 0 <= value <= spec[0]:
                if mask is None:
                    d[rank] = item if type(item) is tuple else (name, value, None)
                    continue
                if mask == spec[0]:
                    d[rank] = (name, value, None)
                    continue
            _store(d, name, spec, value, mask)
        if special is not None:
            ordered = False
            for name, value, mask in special:
                _store_special(d, name, value, mask)
        if ordered or len(d) < 2:
            self.items = tuple(d.values())
        else:
            self.items = tuple([d[r] for r in sorted(d)])
        self._hash = hash(self.items)

    # -- value-object protocol -------------------------------------------------
    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Match):
            return NotImplemented
        return self._hash == other._hash and self.items == other.items

    def __repr__(self) -> str:
        return "Match(%r)" % (self.to_string(),)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __reduce__(self) -> tuple[type, tuple[tuple[Item, ...]]]:
        return (Match, (self.items,))

    # -- access / derivation -----------------------------------------------------
    def get(self, name: str) -> tuple[int, int | None] | None:
        """(value, mask) of field ``name`` (canonical name or alias), or None.
        ``xreg``/``xxreg`` names are answered from their ``reg`` parts."""
        if name not in _RANK:
            name = _canonical_name(name)
            if name.startswith("xreg") or name.startswith("xxreg"):
                return self._get_wide(name)
        for n, v, m in self.items:
            if n == name:
                return v, m
        return None

    def _get_wide(self, name: str) -> tuple[int, int | None] | None:
        n_regs = FIELDS[name].n_bits // 32
        base = int(name.lstrip("x")[3:]) * n_regs
        value = mask = 0
        found = False
        for k in range(n_regs):
            part = self.get("reg%d" % (base + k))
            if part is not None:
                found = True
                shift = 32 * (n_regs - 1 - k)
                value |= part[0] << shift
                mask |= (0xFFFFFFFF if part[1] is None else part[1]) << shift
        if not found:
            return None
        return value, (None if mask == (1 << (32 * n_regs)) - 1 else mask)

    def with_field(self, name: str, value: int, mask: int | None = None) -> Match:
        """A copy with ``name`` set (replacing any previous value; mask 0 removes)."""
        return Match(self.items + ((name, value, mask),))

    def with_fields(self, items: Iterable[tuple[str, int, int | None]]) -> Match:
        return Match(self.items + tuple(items))

    def without(self, name: str) -> Match:
        name = _canonical_name(name) if name not in _RANK else name
        return Match(i for i in self.items if i[0] != name)

    def as_dict(self) -> dict[str, tuple[int, int | None]]:
        return {n: (v, m) for n, v, m in self.items}

    def prereq_errors(self) -> list[str]:
        """Fields whose OVS prerequisites this match does not satisfy (OVS
        would reject the flow with OFPBMC_BAD_PREREQ); empty when valid."""
        return _prereq_errors(self.as_dict())

    # -- text ------------------------------------------------------------------
    def to_string(self, port_names: dict[int, str] | None = None) -> str:
        """Exactly what OVS 3.1 match_format() prints (priority omitted)."""
        return _format_match(self.items, port_names)

    __str__ = to_string

    @classmethod
    def parse(cls, text: str, port_numbers: dict[str, int] | None = None) -> Match:
        """Parse OVS match text (as printed by dump-flows / to_string())."""
        return cls(_parse_match(text, port_numbers))

    # -- wire ------------------------------------------------------------------
    def encode_oxms(self) -> bytes:
        """The OXM TLVs alone (no ofp_match header, no padding)."""
        try:
            return encode_match_items(self.items)
        except OxmError as e:
            raise MatchError(str(e)) from e

    def encode(self) -> bytes:
        """OF1.5 ``ofp_match``: type OXM (1), length, OXM TLVs, zero padding to 8."""
        try:
            return encode_ofp_match(self.items)
        except OxmError as e:
            raise MatchError(str(e)) from e

    @classmethod
    def decode(cls, data: bytes) -> Match:
        """Parse an ``ofp_match`` (padding included or not)."""
        return cls.decode_prefix(data)[0]

    @classmethod
    def decode_prefix(cls, data: bytes, ofs: int = 0) -> tuple[Match, int]:
        """Parse the ``ofp_match`` at ``data[ofs:]``; returns it and the
        offset just after it (padding included)."""
        if len(data) < ofs + 4:
            raise MatchError("truncated ofp_match")
        mtype = int.from_bytes(data[ofs:ofs + 2], "big")
        length = int.from_bytes(data[ofs + 2:ofs + 4], "big")
        if mtype != 1 or length < 4 or len(data) < ofs + length:
            raise MatchError("bad ofp_match type %d length %d" % (mtype, length))
        try:
            items = [(f.name, v, m)
                     for f, v, m in decode_oxms(bytes(data[ofs + 4:ofs + length]))]
        except OxmError as e:
            raise MatchError(str(e)) from e
        return cls(items), ofs + ((length + 7) & ~7)


# ----------------------------------------------------------------------------
# Normalisation.

def _canonical_name(name: str) -> str:
    try:
        return lookup(name).name
    except KeyError:
        raise MatchError("unknown field %r" % name) from None


def _store(d: dict[int, Item], name: str, spec: tuple[int, bool, int],
           value: int, mask: int | None) -> None:
    all_ones, maskable, rank = spec
    if mask is not None:
        if mask & all_ones == all_ones:
            mask = None
        elif not mask & all_ones:
            d.pop(rank, None)
            return
        elif not maskable:
            raise MatchError("field %s is not maskable" % name)
        else:
            mask &= all_ones
            value &= mask
    if value < 0 or value > all_ones:
        if name == "ct_state" and value <= 0xFFFFFFFF:
            value &= 0xFF if mask is None else mask
        else:
            raise MatchError("value %#x too wide for %s" % (value, name))
    d[rank] = (name, value, mask)


def _store_special(d: dict[int, Item], name: str, value: int,
                   mask: int | None) -> None:
    if name not in FIELDS:
        name = _canonical_name(name)
        if name in _PLAIN:
            _store(d, name, _PLAIN[name], value, mask)
            return
    f = FIELDS[name]
    full = 0x1FFF if name == "vlan_vid" else (1 << f.n_bits) - 1
    m = full if mask is None else mask & full
    if name.startswith("xxreg") or name.startswith("xreg"):
        n_regs = f.n_bits // 32
        base = int(name.lstrip("x")[3:]) * n_regs
        for k in range(n_regs):
            shift = 32 * (n_regs - 1 - k)
            part_mask = (m >> shift) & 0xFFFFFFFF
            if part_mask:
                _store(d, "reg%d" % (base + k), _PLAIN["reg%d" % (base + k)],
                       (value >> shift) & part_mask, part_mask)
    elif name == "in_port_oxm":
        _store(d, "in_port", _PLAIN["in_port"], port_from_ofp11(value), None)
    elif name == "ip_dscp":
        _store(d, "nw_tos", _PLAIN["nw_tos"], (value << 2) & 0xFC, None)
    elif name in ("dl_vlan", "vlan_vid", "dl_vlan_pcp", "vlan_pcp"):
        _, tci, old_mask = d.get(_VLAN_RANK, ("vlan_tci", 0, 0))
        tmask = 0xFFFF if old_mask is None else old_mask
        if name == "dl_vlan":
            if value == 0xFFFF:                 # OFP10_VLAN_NONE: no 802.1Q header
                tci, tmask = 0, 0xFFFF
            else:
                tci = (tci & ~0x1FFF) | 0x1000 | (value & 0xFFF)
                tmask |= 0x1FFF
        elif name == "vlan_vid":
            m &= 0x1FFF
            tci = (tci & ~0x1FFF) | (value & m)
            tmask = (tmask & 0xE000) | m
        else:
            tci = (tci & ~0xE000) | 0x1000 | ((value & 7) << 13)
            tmask |= 0xF000
        _store(d, "vlan_tci", _PLAIN["vlan_tci"], tci & tmask, tmask)
    else:
        raise MatchError("field %s cannot be matched" % name)


# ----------------------------------------------------------------------------
# Prerequisites (OVS mf_are_prereqs_ok(), checked on values: an unmatched
# field reads as 0, as in OVS).

def _prereq_errors(d: dict[str, tuple[int, int | None]]) -> list[str]:
    def val(*names: str) -> int:
        vm = _first(d, *names)
        return vm[0] if vm is not None else 0

    dl_type = val("eth_type")
    nw_proto = val("nw_proto")
    is_ip4, is_ip6 = dl_type == ETH_TYPE_IP, dl_type == ETH_TYPE_IPV6
    icmp6 = is_ip6 and nw_proto == IPPROTO_ICMPV6
    icmp6_type = val("icmpv6_type")
    nd = icmp6 and val("icmpv6_code") == 0 and icmp6_type in (135, 136)
    later = bool(val("ip_frag") & 2)
    ct_state = val("ct_state")
    vm = d.get("ct_state")
    ct_mask = 0 if vm is None else (0xFF if vm[1] is None else vm[1])
    vm = d.get("vlan_tci")
    checks = {
        "": True, "eth": True,
        "arp": dl_type in (ETH_TYPE_ARP, ETH_TYPE_RARP),
        "ipv4": is_ip4, "ipv6": is_ip6, "ip": is_ip4 or is_ip6,
        "mpls": dl_type in (ETH_TYPE_MPLS, ETH_TYPE_MPLS_MCAST),
        "vlan_vid": vm is not None and bool(vm[0] & 0x1000),
        # later fragments carry no L4 header (OVS checks the value only)
        "tcp": (is_ip4 or is_ip6) and nw_proto == IPPROTO_TCP and not later,
        "udp": (is_ip4 or is_ip6) and nw_proto == IPPROTO_UDP and not later,
        "sctp": (is_ip4 or is_ip6) and nw_proto == IPPROTO_SCTP and not later,
        "icmp": is_ip4 and nw_proto == IPPROTO_ICMP,
        "icmp6": icmp6, "nd": nd,
        "nd_ns": nd and icmp6_type == 135, "nd_na": nd and icmp6_type == 136,
        "ct": bool(ct_state & 0xCF) or bool(ct_state & 0x20 and ct_mask & 0x10
                                                and not ct_state & 0x10),
        "nsh": dl_type == 0x894F,
    }
    return [name for name in d if not checks.get(FIELDS[name].prereqs, True)]


# ----------------------------------------------------------------------------
# Formatting (OVS match_format()).

def _hx(v: int) -> str:
    """C printf "%#x": "0" for zero, else "0x..."."""
    return "0x%x" % v if v else "0"


def _u32m(out: list[str], name: str, vm: tuple[int, int | None] | None) -> None:
    # format_uint32_masked / format_be64_masked
    if vm is not None:
        v, m = vm
        out.append("%s=%s" % (name, _hx(v)) if m is None
                   else "%s=%s/%s" % (name, _hx(v), _hx(m)))


def _u16m(out: list[str], name: str, vm: tuple[int, int | None] | None) -> None:
    # format_be16_masked / format_uint16_masked
    if vm is not None:
        v, m = vm
        out.append("%s=%d" % (name, v) if m is None else "%s=0x%x/0x%x" % (name, v, m))


def _be32m(out: list[str], name: str, vm: tuple[int, int | None] | None) -> None:
    # format_be32_masked (decimal when exact, %08x otherwise)
    if vm is not None:
        v, m = vm
        out.append("%s=%d" % (name, v) if m is None
                   else "%s=0x%08x/0x%08x" % (name, v, m))


def _ipm(out: list[str], name: str, vm: tuple[int, int | None] | None) -> None:
    if vm is not None:
        v, m = vm
        out.append("%s=%s" % (name, _fmt_ip(v, m)))


def _fmt_ip(v: int, m: int | None) -> str:
    if m is None:
        return format_ipv4(v)
    inv = ~m & 0xFFFFFFFF
    if not inv & (inv + 1):
        return "%s/%d" % (format_ipv4(v), 32 - inv.bit_length())
    return "%s/%s" % (format_ipv4(v), format_ipv4(m))


def _ip6m(out: list[str], name: str, vm: tuple[int, int | None] | None) -> None:
    if vm is not None:
        v, m = vm
        text = format_ipv6(v)
        if m is not None:
            inv = ~m & ((1 << 128) - 1)
            if not inv & (inv + 1):
                text += "/%d" % (128 - inv.bit_length())
            else:
                text += "/" + format_ipv6(m)
        out.append("%s=%s" % (name, text))


def _ethm(out: list[str], name: str, vm: tuple[int, int | None] | None) -> None:
    if vm is not None:
        v, m = vm
        out.append("%s=%s" % (name, format_mac(v)) if m is None
                   else "%s=%s/%s" % (name, format_mac(v), format_mac(m)))


def _flags(bits: tuple[tuple[int, str], ...], value: int, mask: int, max_mask: int) -> str:
    if mask == max_mask:
        names = [n for b, n in bits if value & b]
        bad = value & ~sum(b for b, _ in bits)
        if bad:
            names.append("0x%x" % bad)
        return "|".join(names) if names else "0"
    if not mask:
        return "0/0"
    bit_names = dict(bits)
    parts = []
    while mask:
        b = mask & -mask
        parts.append(("+" if value & b else "-") + bit_names.get(b, "[Unknown]"))
        mask &= ~b
    return "".join(parts)


_CT_BITS = ((0x01, "new"), (0x02, "est"), (0x04, "rel"), (0x08, "rpl"),
            (0x10, "inv"), (0x20, "trk"), (0x40, "snat"), (0x80, "dnat"))
_TCP_BITS = ((0x001, "fin"), (0x002, "syn"), (0x004, "rst"), (0x008, "psh"),
             (0x010, "ack"), (0x020, "urg"), (0x040, "ece"), (0x080, "cwr"),
             (0x100, "ns"), (0x200, "[200]"), (0x400, "[400]"), (0x800, "[800]"))


def _first(d: dict[str, tuple[int, int | None]], *names: str) -> tuple[int, int | None] | None:
    for n in names:
        vm = d.get(n)
        if vm is not None:
            return vm
    return None


_REG_NAMES = frozenset("reg%d" % i for i in range(16))
_TUN_MD_NAMES = frozenset("tun_metadata%d" % i for i in range(64))


def _format_match(items: tuple[Item, ...], port_names: dict[int, str] | None) -> str:
    d = {n: (v, m) for n, v, m in items}
    out: list[str] = []
    _u32m(out, "pkt_mark", d.get("pkt_mark"))
    _u32m(out, "recirc_id", d.get("recirc_id"))
    _u32m(out, "dp_hash", d.get("dp_hash"))
    vm = d.get("conj_id")
    if vm is not None:
        out.append("conj_id=%d" % vm[0])
    vm = d.get("actset_output")
    if vm is not None:
        out.append("actset_output=" + format_port(port_from_ofp11(vm[0]), port_names))
    vm = d.get("ct_state")
    if vm is not None:
        v, m = vm
        out.append("ct_state=" + _flags(_CT_BITS, v, 0xFF if m is None else m, 0xFF))
    _u16m(out, "ct_zone", d.get("ct_zone"))
    _u32m(out, "ct_mark", d.get("ct_mark"))
    _u32m(out, "ct_label", d.get("ct_label"))
    _ipm(out, "ct_nw_src", d.get("ct_nw_src"))
    _ip6m(out, "ct_ipv6_src", d.get("ct_ipv6_src"))
    _ipm(out, "ct_nw_dst", d.get("ct_nw_dst"))
    _ip6m(out, "ct_ipv6_dst", d.get("ct_ipv6_dst"))
    vm = d.get("ct_nw_proto")
    if vm is not None:
        out.append("ct_nw_proto=%d" % vm[0])
        _u16m(out, "ct_tp_src", d.get("ct_tp_src"))
        _u16m(out, "ct_tp_dst", d.get("ct_tp_dst"))

    vm = d.get("eth_type")
    dl_type = vm[0] if vm is not None else 0
    pvm = _first(d, "nw_proto", "arp_op")
    nw_proto = pvm[0] if pvm is not None else 0
    skip_type = skip_proto = False
    if vm is not None:
        skip_type = True
        if dl_type == ETH_TYPE_IP:
            if pvm is not None:
                skip_proto = True
                name = {IPPROTO_ICMP: "icmp", IPPROTO_TCP: "tcp", IPPROTO_UDP: "udp",
                        IPPROTO_SCTP: "sctp"}.get(nw_proto)
                if name is None:
                    name, skip_proto = "ip", False
                out.append(name)
            else:
                out.append("ip")
        elif dl_type == ETH_TYPE_IPV6:
            if pvm is not None:
                skip_proto = True
                name = {IPPROTO_ICMPV6: "icmp6", IPPROTO_TCP: "tcp6", IPPROTO_UDP: "udp6",
                        IPPROTO_SCTP: "sctp6"}.get(nw_proto)
                if name is None:
                    name, skip_proto = "ipv6", False
                out.append(name)
            else:
                out.append("ipv6")
        else:
            name = {ETH_TYPE_ARP: "arp", ETH_TYPE_RARP: "rarp", ETH_TYPE_MPLS: "mpls",
                    ETH_TYPE_MPLS_MCAST: "mplsm"}.get(dl_type)
            if name is None:
                skip_type = False
            else:
                out.append(name)

    for name, v, m in items:          # canonical order keeps reg0..reg15 sorted
        if name in _REG_NAMES:
            out.append("%s=%s" % (name, _hx(v)) if m is None
                       else "%s=%s/%s" % (name, _hx(v), _hx(m)))
    _u32m(out, "tun_id", d.get("tun_id"))
    _ipm(out, "tun_src", d.get("tun_src"))
    _ipm(out, "tun_dst", d.get("tun_dst"))
    _ip6m(out, "tun_ipv6_src", d.get("tun_ipv6_src"))
    _ip6m(out, "tun_ipv6_dst", d.get("tun_ipv6_dst"))
    _u16m(out, "tun_gbp_id", d.get("tun_gbp_id"))
    vm = d.get("tun_gbp_flags")
    if vm is not None:
        out.append("tun_gbp_flags=%s" % _hx(vm[0]))
    vm = d.get("tun_flags")
    if vm is not None:
        # OVS compares against all internal tunnel flag bits (0xf), so the one
        # public bit always prints as "+oam"/"-oam".
        out.append("tun_flags=" + _flags(((1, "oam"),), vm[0], 1, 0xF))
    for name, v, m in items:
        if name in _TUN_MD_NAMES:
            # OVS sizes a tunnel-metadata match to the bytes its value and
            # mask need, and omits a mask that is all ones over that size.
            if m is not None:
                n_bytes = (max(v.bit_length(), m.bit_length()) + 7) // 8
                if m == (1 << (8 * n_bytes)) - 1:
                    m = None
            out.append("%s=%s" % (name, _hx(v)) if m is None
                       else "%s=%s/%s" % (name, _hx(v), _hx(m)))
    _u32m(out, "metadata", d.get("metadata"))
    vm = d.get("in_port")
    if vm is not None:
        out.append("in_port=" + format_port(vm[0], port_names))

    vm = d.get("vlan_tci")
    if vm is not None:
        tci, tmask = vm[0], (0xFFFF if vm[1] is None else vm[1])
        vid_mask = tmask & 0x0FFF
        pcp_mask = tmask & 0xE000
        if (tmask & 0x1000 and tci & 0x1000 and vid_mask in (0, 0x0FFF)
                and pcp_mask in (0, 0xE000) and (vid_mask or pcp_mask)):
            if vid_mask:
                out.append("dl_vlan=%d" % (tci & 0x0FFF))
            if pcp_mask:
                out.append("dl_vlan_pcp=%d" % (tci >> 13))
        elif tmask == 0xFFFF:
            out.append("vlan_tci=0x%04x" % tci)
        else:
            out.append("vlan_tci=0x%04x/0x%04x" % (tci, tmask))

    _ethm(out, "dl_src", d.get("eth_src"))
    _ethm(out, "dl_dst", d.get("eth_dst"))
    if not skip_type and "eth_type" in d:
        out.append("dl_type=0x%04x" % dl_type)
    is_arp = dl_type in (ETH_TYPE_ARP, ETH_TYPE_RARP)
    if dl_type == ETH_TYPE_IPV6:
        _ip6m(out, "ipv6_src", d.get("ipv6_src"))
        _ip6m(out, "ipv6_dst", d.get("ipv6_dst"))
        vm = d.get("ipv6_label")
        if vm is not None:
            out.append("ipv6_label=0x%05x" % vm[0] if vm[1] is None
                       else "ipv6_label=0x%05x/0x%05x" % (vm[0], vm[1]))
    elif is_arp:
        _ipm(out, "arp_spa", _first(d, "arp_spa", "ip_src"))
        _ipm(out, "arp_tpa", _first(d, "arp_tpa", "ip_dst"))
    else:
        _ipm(out, "nw_src", _first(d, "ip_src", "arp_spa"))
        _ipm(out, "nw_dst", _first(d, "ip_dst", "arp_tpa"))
    if not skip_proto and pvm is not None:
        out.append(("arp_op=%d" if is_arp else "nw_proto=%d") % (nw_proto & 0xFF))
    if is_arp:
        _ethm(out, "arp_sha", _first(d, "arp_sha", "nd_sll"))
        _ethm(out, "arp_tha", _first(d, "arp_tha", "nd_tll"))
    vm = d.get("nw_tos")
    if vm is not None:
        out.append("nw_tos=%d" % (vm[0] & 0xFC))
    vm = d.get("nw_ecn")
    if vm is not None:
        out.append("nw_ecn=%d" % vm[0])
    vm = d.get("nw_ttl")
    if vm is not None:
        out.append("nw_ttl=%d" % vm[0])
    vm = d.get("mpls_label")
    if vm is not None:
        out.append("mpls_label=%d" % vm[0])
    vm = d.get("mpls_tc")
    if vm is not None:
        out.append("mpls_tc=%d" % vm[0])
    vm = d.get("mpls_ttl")
    if vm is not None:
        out.append("mpls_ttl=%d" % vm[0])
    vm = d.get("mpls_bos")
    if vm is not None:
        out.append("mpls_bos=%d" % vm[0])
    vm = d.get("ip_frag")
    if vm is not None:
        out.append("nw_frag=" + format_frag(vm[0], 3 if vm[1] is None else vm[1]))
    if dl_type == ETH_TYPE_IP and nw_proto == IPPROTO_ICMP:
        _u16m(out, "icmp_type", _first(d, "icmp_type", "tcp_src", "udp_src", "sctp_src"))
        _u16m(out, "icmp_code", _first(d, "icmp_code", "tcp_dst", "udp_dst", "sctp_dst"))
    elif dl_type == ETH_TYPE_IPV6 and nw_proto == IPPROTO_ICMPV6:
        _u16m(out, "icmp_type", _first(d, "icmpv6_type", "tcp_src", "udp_src"))
        _u16m(out, "icmp_code", _first(d, "icmpv6_code", "tcp_dst", "udp_dst"))
        _ip6m(out, "nd_target", d.get("nd_target"))
        _ethm(out, "nd_sll", _first(d, "nd_sll", "arp_sha"))
        _ethm(out, "nd_tll", _first(d, "nd_tll", "arp_tha"))
        _be32m(out, "nd_reserved", d.get("nd_reserved"))
        _u16m(out, "nd_options_type", d.get("nd_options_type"))
    else:
        _u16m(out, "tp_src", _first(d, "tcp_src", "udp_src", "sctp_src", "icmp_type",
                                    "icmpv6_type"))
        _u16m(out, "tp_dst", _first(d, "tcp_dst", "udp_dst", "sctp_dst", "icmp_code",
                                    "icmpv6_code"))
    vm = d.get("tcp_flags")
    if (vm is not None and nw_proto == IPPROTO_TCP
            and dl_type in (ETH_TYPE_IP, ETH_TYPE_IPV6)):
        out.append("tcp_flags=" + _flags(_TCP_BITS, vm[0],
                                         0xFFF if vm[1] is None else vm[1] & 0xFFF, 0xFFF))
    return ",".join(out)


# ----------------------------------------------------------------------------
# Parsing.

_SHORTHANDS: dict[str, tuple[int, int | None]] = {
    "ip": (ETH_TYPE_IP, None), "ipv6": (ETH_TYPE_IPV6, None),
    "icmp": (ETH_TYPE_IP, IPPROTO_ICMP), "icmp6": (ETH_TYPE_IPV6, IPPROTO_ICMPV6),
    "tcp": (ETH_TYPE_IP, IPPROTO_TCP), "tcp6": (ETH_TYPE_IPV6, IPPROTO_TCP),
    "udp": (ETH_TYPE_IP, IPPROTO_UDP), "udp6": (ETH_TYPE_IPV6, IPPROTO_UDP),
    "sctp": (ETH_TYPE_IP, IPPROTO_SCTP), "sctp6": (ETH_TYPE_IPV6, IPPROTO_SCTP),
    "arp": (ETH_TYPE_ARP, None), "rarp": (ETH_TYPE_RARP, None),
    "mpls": (ETH_TYPE_MPLS, None), "mplsm": (ETH_TYPE_MPLS_MCAST, None),
}
_TOKEN_RE = re.compile(r'(?:[^,"]|"(?:\\.|[^"\\])*")+')
_TP_NAMES = {IPPROTO_TCP: ("tcp_src", "tcp_dst"), IPPROTO_UDP: ("udp_src", "udp_dst"),
             IPPROTO_SCTP: ("sctp_src", "sctp_dst")}


def _parse_int(text: str) -> int:
    return int(text, 16) if text[:2].lower() == "0x" else int(text)


def _parse_match(text: str,
                 port_numbers: dict[str, int] | None) -> list[tuple[str, int, int | None]]:
    items: list[tuple[str, int, int | None]] = []
    pairs: list[tuple[str, str]] = []
    dl_type: int | None = None
    nw_proto: int | None = None
    for token in _TOKEN_RE.findall(text.strip()):
        token = token.strip()
        if not token:
            continue
        key, eq, val = token.partition("=")
        if not eq:
            sh = _SHORTHANDS.get(key)
            if sh is None:
                raise MatchError("unknown match keyword %r" % key)
            dl_type = sh[0]
            items.append(("eth_type", sh[0], None))
            if sh[1] is not None:
                nw_proto = sh[1]
                items.append(("nw_proto", sh[1], None))
            continue
        if key in ("dl_type", "eth_type"):
            dl_type = _parse_int(val)
        elif key in ("nw_proto", "ip_proto"):
            nw_proto = _parse_int(val)
        pairs.append((key, val))
    ipv6 = dl_type == ETH_TYPE_IPV6
    is_arp = dl_type in (ETH_TYPE_ARP, ETH_TYPE_RARP)
    for key, val in pairs:
        try:
            items.append(_parse_pair(key, val, ipv6, is_arp, nw_proto, port_numbers))
        except (KeyError, ValueError) as e:
            raise MatchError("bad match field %s=%s: %s" % (key, val, e)) from None
    return items


def _parse_pair(key: str, val: str, ipv6: bool, is_arp: bool, nw_proto: int | None,
                port_numbers: dict[str, int] | None) -> tuple[str, int, int | None]:
    if key in ("tp_src", "tp_dst"):
        names = _TP_NAMES.get(nw_proto or IPPROTO_TCP, ("tcp_src", "tcp_dst"))
        name = names[0] if key == "tp_src" else names[1]
    elif key in ("icmp_type", "icmp_code") and ipv6:
        name = "icmpv6_type" if key == "icmp_type" else "icmpv6_code"
    elif key in ("nw_src", "nw_dst") and is_arp:
        name = "arp_spa" if key == "nw_src" else "arp_tpa"
    elif key == "in_port":
        return ("in_port", _parse_port(val, port_numbers), None)
    elif key in ("dl_vlan", "dl_vlan_pcp", "nw_tos", "nw_ecn", "nw_ttl", "conj_id",
                 "ct_nw_proto"):
        return (key, _parse_int(val), None)
    elif key in ("vlan_tci", "ipv6_label") or key.startswith("tun_metadata"):
        v, _, m = val.partition("/")
        return (key, int(v, 16), int(m, 16) if m else None)
    elif key == "nw_frag":
        name = "ip_frag"
    else:
        name = lookup(key).name
    f = FIELDS[name]
    value, mask = parse_value(f, val, port_numbers)
    return (name, value, mask)


def _parse_port(val: str, port_numbers: dict[str, int] | None) -> int:
    from ofctrl.fields import parse_port
    if port_numbers is not None and val.startswith('"'):
        name = json.loads(val)
        if name in port_numbers:
            return port_numbers[name]
    return parse_port(val, port_numbers)
