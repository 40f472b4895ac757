"""Symbol table of the OVN logical-flow language (OVN 23.03 lib/logical-fields.c).

Public API
----------
``Symbol`` (``name``, ``width`` (0 for string symbols), ``field`` (OVS
meta-flow field name, e.g. ``"reg14"``, for fields and string symbols),
``ovn_field`` (``"icmp4.frag_mtu"``...), ``parent``/``parent_ofs`` for subfields,
``predicate`` (expansion text) for predicates, ``level`` (``L_NOMINAL``,
``L_BOOLEAN``, ``L_ORDINAL``), ``prereqs`` (text or None),
``must_crossproduct``, ``rw`` (bitmap of write scopes ``WR_DEFAULT``,
``WR_CT_COMMIT``; 0 = read-only)).

``Symtab`` is a ``dict[str, Symbol]`` with ``lookup(name)`` and the OVS
``expr_symtab_add_*`` constructors: ``add_field``, ``add_subfield``,
``add_string``, ``add_predicate``, ``add_ovn_field``; ``format_symbol(sym)``
prints a symbol as ``dump-symtab`` does.

``ovn_symtab()`` returns the shared, read-only OVN 23.03 symbol table;
``build_ovn_symtab()`` builds a fresh one (to add test symbols to).
Widths, maskability and writability come from ``ofctrl.fields``.
"""

from __future__ import annotations

import re
from typing import Any

from controller.lflow import lexer as lx
from ofctrl import fields as of_fields
from physical.constants import (MLF_ALLOW_LOOPBACK_BIT, MLF_FORCE_SNAT_FOR_DNAT_BIT,
                                MLF_FORCE_SNAT_FOR_LB_BIT, MLF_SKIP_SNAT_FOR_LB_BIT,
                                MLF_USE_SNAT_ZONE_BIT, N_LOG_REGS)

L_NOMINAL = 0
L_BOOLEAN = 1
L_ORDINAL = 2
LEVEL_NAMES = ("nominal", "Boolean", "ordinal")

WR_DEFAULT = 1
WR_CT_COMMIT = 2
WR_ALL = 0xFFFFFFFF

# OVN-only fields (set by actions, never matched): name -> width.
OVN_FIELDS = {"icmp4.frag_mtu": 16, "icmp6.frag_mtu": 32}

class Symbol:
    """One symbol (see module docstring).  Treat as immutable."""

    __slots__ = ("name", "width", "field", "ovn_field", "parent", "parent_ofs",
                 "predicate", "level", "prereqs", "must_crossproduct", "rw",
                 "cache")

    def __init__(self, name: str, width: int, prereqs: str | None, level: int,
                 must_crossproduct: bool, rw: int) -> None:
        self.name = name
        self.width = width
        self.field: str | None = None
        self.ovn_field: str | None = None
        self.parent: Symbol | None = None
        self.parent_ofs = 0
        self.predicate: str | None = None
        self.level = level
        self.prereqs = prereqs if prereqs else None
        self.must_crossproduct = must_crossproduct
        self.rw = rw
        # Free slot for the expression code to cache parsed expansions.
        self.cache: dict[Any, Any] = {}

    def __repr__(self) -> str:
        return f"Symbol({self.name!r})"

    def root(self) -> tuple[Symbol, int]:
        """(field symbol at the root of the subfield chain, bit offset)."""
        sym = self
        ofs = 0
        while sym.parent is not None:
            ofs += sym.parent_ofs
            sym = sym.parent
        return sym, ofs


_SUBFIELD_RE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(?:\[\s*(\d+)\s*(?:\.\.\s*(\d+)\s*)?\])?\s*")


class SymtabError(ValueError):
    pass


class Symtab(dict[str, Symbol]):
    """Symbol table: name -> Symbol."""

    def lookup(self, name: str) -> Symbol | None:
        return self.get(name)

    def _add(self, sym: Symbol) -> Symbol:
        if sym.name in self:
            raise SymtabError(f"duplicate symbol {sym.name}")
        self[sym.name] = sym
        return sym

    def add_field(self, name: str, field: str, prereqs: str | None = None,
                  must_crossproduct: bool = False, scope: int = WR_DEFAULT) -> Symbol:
        """A symbol for a whole OVS field (expr_symtab_add_field_scoped)."""
        f = of_fields.field(field)
        sym = Symbol(name, f.n_bits, prereqs, L_ORDINAL if f.maskable else L_NOMINAL,
                     must_crossproduct, scope if f.writable else 0)
        sym.field = field
        return self._add(sym)

    def add_subfield(self, name: str, prereqs: str | None, subfield: str,
                     scope: int = WR_DEFAULT) -> Symbol:
        """A symbol for bits of another symbol, e.g. "vlan.tci[0..11]"."""
        m = _SUBFIELD_RE.fullmatch(subfield)
        if m is None or m.group(1) not in self:
            raise SymtabError(f"{subfield}: error parsing {name} subfield")
        parent = self[m.group(1)]
        if m.group(2) is None:
            lo, hi = 0, parent.width - 1
        else:
            lo = int(m.group(2))
            hi = int(m.group(3)) if m.group(3) is not None else lo
        if lo > hi or hi >= parent.width or not parent.width:
            raise SymtabError(f"{subfield}: bad bit range for {name}")
        sym = Symbol(name, hi - lo + 1, prereqs, parent.level, False,
                     scope if parent.rw else 0)
        sym.parent = parent
        sym.parent_ofs = lo
        return self._add(sym)

    def add_string(self, name: str, field: str, prereqs: str | None = None,
                   scope: int = WR_DEFAULT) -> Symbol:
        """A string-valued symbol stored in OVS field 'field' (port names)."""
        f = of_fields.field(field)
        sym = Symbol(name, 0, prereqs, L_NOMINAL, False, scope if f.writable else 0)
        sym.field = field
        return self._add(sym)

    def add_predicate(self, name: str, expansion: str) -> Symbol:
        """A Boolean predicate symbol expanding to 'expansion'.

        Its level is nominal if the expansion mentions any nominal symbol,
        else Boolean (expr_get_level() of the parsed expansion)."""
        level = L_BOOLEAN
        for tok in lx.tokenize(expansion):
            if tok.type == lx.T_ERROR:
                raise SymtabError(f"{expansion}: error parsing {name} expansion")
            if tok.type == lx.T_ID and tok.s is not None:
                ref = self.get(tok.s)
                if ref is not None and ref.level == L_NOMINAL:
                    level = L_NOMINAL
        sym = Symbol(name, 1, None, level, False, 0)
        sym.predicate = expansion
        return self._add(sym)

    def add_ovn_field(self, name: str) -> Symbol:
        sym = Symbol(name, OVN_FIELDS[name], None, L_NOMINAL, False, WR_ALL)
        sym.ovn_field = name
        return self._add(sym)


def format_symbol(sym: Symbol) -> str:
    """'name = definition' as OVS expr_symbol_format() (dump-symtab)."""
    if sym.parent is not None:
        p = sym.parent
        ofs = sym.parent_ofs
        if ofs or sym.width != p.width:
            if sym.width != 1:
                return f"{sym.name} = {p.name}[{ofs}..{ofs + sym.width - 1}]"
            return f"{sym.name} = {p.name}[{ofs}]"
        return f"{sym.name} = {p.name}"
    if sym.predicate is not None:
        return f"{sym.name} = {sym.predicate}"
    if sym.ovn_field is not None:
        return f"{sym.name} = {sym.name}"
    assert sym.field is not None
    # The field's OpenFlow 1.5 header name (nx_format_field_name(id, OF1.5)):
    # OXM_OF_ETH_SRC for eth_src, but NXM_OF_IN_PORT for in_port, whose OXM
    # header belongs to in_port_oxm.
    return f"{sym.name} = {of_fields.field(sym.field).oxm_name}"


# ct_state bits (23.03).
CT_STATE_BITS = (("new", 0), ("est", 1), ("rel", 2), ("rpl", 3), ("inv", 4),
                 ("trk", 5), ("snat", 6), ("dnat", 7))


def build_ovn_symtab() -> Symtab:
    """A fresh copy of the OVN 23.03 symbol table (ovn_init_symtab())."""
    st = Symtab()
    st.add_string("inport", "reg14")
    st.add_string("outport", "reg15")

    for xxi in range(N_LOG_REGS // 4):
        st.add_field(f"xxreg{xxi}", f"xxreg{xxi}")
    for xi in range(N_LOG_REGS // 2):
        xxi = xi // 2
        if xxi < N_LOG_REGS // 4:
            lsb = 64 * (1 - xi % 2)
            st.add_subfield(f"xreg{xi}", None, f"xxreg{xxi}[{lsb}..{lsb + 63}]")
        else:
            st.add_field(f"xreg{xi}", f"xreg{xi}")
    for i in range(N_LOG_REGS):
        xxi, xi = i // 4, i // 2
        if xxi < N_LOG_REGS // 4:
            lsb = 32 * (3 - i % 4)
            st.add_subfield(f"reg{i}", None, f"xxreg{xxi}[{lsb}..{lsb + 31}]")
        elif xi < N_LOG_REGS // 2:
            lsb = 32 * (1 - i % 2)
            st.add_subfield(f"reg{i}", None, f"xreg{xi}[{lsb}..{lsb + 31}]")
        else:
            st.add_field(f"reg{i}", f"reg{i}")

    st.add_field("flags", "reg10")
    st.add_subfield("flags.loopback", None, f"flags[{MLF_ALLOW_LOOPBACK_BIT}]")
    st.add_subfield("flags.force_snat_for_dnat", None, f"flags[{MLF_FORCE_SNAT_FOR_DNAT_BIT}]")
    st.add_subfield("flags.force_snat_for_lb", None, f"flags[{MLF_FORCE_SNAT_FOR_LB_BIT}]")
    st.add_subfield("flags.skip_snat_for_lb", None, f"flags[{MLF_SKIP_SNAT_FOR_LB_BIT}]")
    st.add_subfield("flags.use_snat_zone", None, f"flags[{MLF_USE_SNAT_ZONE_BIT}]")

    ct = WR_CT_COMMIT
    st.add_field("ct_mark", "ct_mark", scope=ct)
    st.add_subfield("ct_mark.blocked", None, "ct_mark[0]", ct)
    st.add_subfield("ct_mark.natted", None, "ct_mark[1]", ct)
    st.add_subfield("ct_mark.ecmp_reply_port", None, "ct_mark[16..31]", ct)
    st.add_subfield("ct_mark.skip_snat", None, "ct_mark[2]", ct)
    st.add_subfield("ct_mark.force_snat", None, "ct_mark[3]", ct)
    st.add_field("ct_label", "ct_label", scope=ct)
    st.add_subfield("ct_label.blocked", None, "ct_label[0]", ct)
    st.add_subfield("ct_label.natted", None, "ct_label[1]", ct)
    st.add_subfield("ct_label.ecmp_reply_eth", None, "ct_label[32..79]", ct)
    st.add_subfield("ct_label.ecmp_reply_port", None, "ct_label[80..95]", ct)
    st.add_subfield("ct_label.label", None, "ct_label[96..127]", ct)
    st.add_subfield("ct_label.skip_snat", None, "ct_label[2]", ct)
    st.add_subfield("ct_label.force_snat", None, "ct_label[3]", ct)

    st.add_field("ct_state", "ct_state")
    for name, bit in CT_STATE_BITS:
        st.add_subfield(f"ct.{name}", None if name == "trk" else "ct.trk",
                        f"ct_state[{bit}]")

    st.add_field("eth.src", "eth_src")
    st.add_field("eth.dst", "eth_dst")
    st.add_field("eth.type", "eth_type", None, True)
    st.add_predicate("eth.bcast", "eth.dst == ff:ff:ff:ff:ff:ff")
    st.add_subfield("eth.mcast", None, "eth.dst[40]")
    st.add_predicate("eth.mcastv6", "eth.dst[32..47] == 0x3333")

    st.add_field("vlan.tci", "vlan_tci")
    st.add_predicate("vlan.present", "vlan.tci[12]")
    st.add_subfield("vlan.pcp", "vlan.present", "vlan.tci[13..15]")
    st.add_subfield("vlan.vid", "vlan.present", "vlan.tci[0..11]")

    st.add_predicate("ip4", "eth.type == 0x800")
    st.add_predicate("ip6", "eth.type == 0x86dd")
    st.add_predicate("ip", "ip4 || ip6")
    st.add_field("ip.proto", "nw_proto", "ip", True)
    st.add_field("ip.dscp", "ip_dscp", "ip")
    st.add_field("ip.ecn", "nw_ecn", "ip")
    st.add_field("ip.ttl", "nw_ttl", "ip")

    st.add_field("ip4.src", "ip_src", "ip4")
    st.add_field("ip4.dst", "ip_dst", "ip4")
    st.add_predicate("ip4.src_mcast", "ip4.src[28..31] == 0xe")
    st.add_predicate("ip4.mcast", "eth.mcast && ip4.dst[28..31] == 0xe")

    st.add_predicate("icmp4", "ip4 && ip.proto == 1")
    st.add_field("icmp4.type", "icmp_type", "icmp4")
    st.add_field("icmp4.code", "icmp_code", "icmp4")

    st.add_predicate("igmp", "ip4 && ip.proto == 2")

    st.add_field("ip6.src", "ipv6_src", "ip6")
    st.add_field("ip6.dst", "ipv6_dst", "ip6")
    st.add_field("ip6.label", "ipv6_label", "ip6")

    st.add_predicate("ip6.mcast_rsvd", "ip6.dst[116..127] == 0xff0 && ip6.dst[0..111] == 0x0")
    st.add_predicate("ip6.mcast_all_nodes", "ip6.dst == ff01::1 || ip6.dst == ff02::1")
    st.add_predicate("ip6.mcast_all_rtrs",
                     "ip6.dst == ff01::2 || ip6.dst == ff02::2 || ip6.dst == ff05::2")
    st.add_predicate("ip6.mcast_sol_node", "ip6.dst == ff02::1:ff00:0000/104")
    st.add_predicate("ip6.mcast_flood",
                     "eth.mcastv6 && (ip6.mcast_rsvd || ip6.mcast_all_nodes || "
                     "ip6.mcast_all_rtrs || ip6.mcast_sol_node)")
    st.add_predicate("ip6.mcast", "eth.mcastv6 && ip6.dst[120..127] == 0xff")

    st.add_predicate("icmp6", "ip6 && ip.proto == 58")
    st.add_field("icmp6.type", "icmpv6_type", "icmp6", True)
    st.add_field("icmp6.code", "icmpv6_code", "icmp6", True)

    st.add_predicate("icmp", "icmp4 || icmp6")

    st.add_field("ip.frag", "ip_frag", "ip")
    st.add_predicate("ip.is_frag", "ip.frag[0]")
    st.add_predicate("ip.later_frag", "ip.frag[1]")
    st.add_predicate("ip.first_frag", "ip.is_frag && !ip.later_frag")

    for proto, eth_type in (("arp", "0x806"), ("rarp", "0x8035")):
        st.add_predicate(proto, f"eth.type == {eth_type}")
        st.add_field(f"{proto}.op", "arp_op", proto)
        st.add_field(f"{proto}.spa", "arp_spa", proto)
        st.add_field(f"{proto}.sha", "arp_sha", proto)
        st.add_field(f"{proto}.tpa", "arp_tpa", proto)
        st.add_field(f"{proto}.tha", "arp_tha", proto)

    st.add_predicate("nd", "icmp6.type == {135, 136} && icmp6.code == 0 && ip.ttl == 255")
    st.add_predicate("nd_ns", "icmp6.type == 135 && icmp6.code == 0 && ip.ttl == 255")
    st.add_predicate("nd_na", "icmp6.type == 136 && icmp6.code == 0 && ip.ttl == 255")
    st.add_predicate("nd_rs", "icmp6.type == 133 && icmp6.code == 0 && ip.ttl == 255")
    st.add_predicate("nd_ra", "icmp6.type == 134 && icmp6.code == 0 && ip.ttl == 255")
    st.add_field("nd.target", "nd_target", "nd")
    st.add_field("nd.sll", "nd_sll", "nd_ns")
    st.add_field("nd.tll", "nd_tll", "nd_na")

    st.add_predicate("mldv1", "ip6.src == fe80::/10 && icmp6.type == {130, 131, 132}")
    st.add_predicate("mldv2", "ip6.dst == ff02::16 && icmp6.type == 143")

    for proto, number in (("tcp", 6), ("udp", 17), ("sctp", 132)):
        st.add_predicate(proto, f"ip.proto == {number}")
        st.add_field(f"{proto}.src", f"{proto}_src", proto)
        st.add_field(f"{proto}.dst", f"{proto}_dst", proto)
        if proto == "tcp":
            st.add_field("tcp.flags", "tcp_flags", "tcp")

    st.add_field("pkt.mark", "pkt_mark")

    st.add_ovn_field("icmp4.frag_mtu")
    st.add_ovn_field("icmp6.frag_mtu")
    return st


_OVN_SYMTAB: Symtab | None = None


def ovn_symtab() -> Symtab:
    """The shared OVN 23.03 symbol table (do not modify it)."""
    global _OVN_SYMTAB
    if _OVN_SYMTAB is None:
        _OVN_SYMTAB = build_ovn_symtab()
    return _OVN_SYMTAB
