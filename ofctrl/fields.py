"""OpenFlow field registry: OVS meta-flow fields as OVS 3.1 knows them.

Every field is named by its OVS meta-flow name (``reg14``, ``eth_src``...).
For each field the registry records its width, whether it is fully
maskable and writable, its OVS prerequisite, how OVS formats its values,
the name OVS prints for it in subfield references (``NXM_NX_REG14``,
``OXM_OF_METADATA``...) and the OXM class/field (and experimenter id) OVS
uses for it under OpenFlow 1.5.

The table below was derived from the field descriptions in OVS 3.1
``include/openvswitch/meta-flow.h``:

* ``nxm_name`` is the header name ``mf_format_subfield()`` prints (the
  legacy NXM name when there is one, otherwise the OXM name);
* ``oxm_class``/``oxm_field``/``experimenter`` is the header OVS itself
  emits for the field in OpenFlow 1.5 (standard OXM when one exists,
  otherwise NXM class 0x0000/0x0001, or an experimenter class 0xffff).

The module also formats values exactly as OVS ``mf_format()`` does
(``format_value``) and handles subfield references (``Subfield``).
Pure data and pure functions: no I/O, no state.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass

__all__ = [
    "Field",
    "FIELDS",
    "field",
    "field_by_header",
    "lookup",
    "format_value",
    "format_subvalue",
    "parse_value",
    "Subfield",
    "parse_subfield",
    "format_port",
    "parse_port",
    "format_ipv4",
    "format_ipv6",
    "format_mac",
    "CT_STATE_BITS",
    "TCP_FLAG_BITS",
    "FRAG_ANY",
    "FRAG_LATER",
    "RESERVED_PORTS",
]


@dataclass(frozen=True, slots=True)
class Field:
    """One OVS meta-flow field (see module docstring)."""

    name: str
    n_bits: int
    maskable: bool
    writable: bool
    nxm_name: str
    oxm_class: int | None
    oxm_field: int | None
    experimenter: int | None
    prereqs: str
    fmt: str
    n_bytes: int = 0
    alias: str = ""
    variable: bool = False
    other_names: tuple[str, ...] = ()
    oxm_name: str = ""   # name of the OF1.5 header (OVS nx_format_field_name(id, OF1.5))

    @property
    def all_ones(self) -> int:
        return (1 << self.n_bits) - 1

    @property
    def oxm_length(self) -> int:
        """Payload length of the exact-match OXM TLV (experimenter id included)."""
        return self.n_bytes + (4 if self.experimenter is not None else 0)


# Columns: name, alias, n_bytes, n_bits, maskable, writable, fmt, prereqs,
#          nxm_name, oxm_class, oxm_field, experimenter, other header names.
# reg0/xreg0/xxreg0/tun_metadata0 stand for their numbered groups (expanded below).
# fmt is one of: hex decimal mac ipv4 ipv6 port port_oxm ct_state frag
#                tcp_flags tun_flags packet_type.
# prereqs is one of: "" eth arp vlan_vid ipv4 ipv6 ip ct mpls tcp udp sctp
#                    icmp icmp6 nd nd_ns nd_na nsh.
_TABLE: tuple[tuple[str, str, int, int, bool, bool, str, str, str,
                    int | None, int | None, int | None, tuple[str, ...]], ...] = (
    ('dp_hash', '', 4, 32, True, False, 'hex', '', 'NXM_NX_DP_HASH', 0x0001, 35, None, ('NXOXM_ET_DP_HASH',)),
    ('recirc_id', '', 4, 32, False, False, 'decimal', '', 'NXM_NX_RECIRC_ID', 0x0001, 36, None, ()),
    ('packet_type', '', 4, 32, False, False, 'packet_type', '', 'OXM_OF_PACKET_TYPE', 0x8000, 44, None, ()),
    ('conj_id', '', 4, 32, False, False, 'decimal', '', 'NXM_NX_CONJ_ID', 0x0001, 37, None, ()),
    ('tun_id', 'tunnel_id', 8, 64, True, True, 'hex', '', 'NXM_NX_TUN_ID', 0x8000, 38, None, ('OXM_OF_TUNNEL_ID',)),
    ('tun_src', '', 4, 32, True, True, 'ipv4', '', 'NXM_NX_TUN_IPV4_SRC', 0x0001, 31, None, ()),
    ('tun_dst', '', 4, 32, True, True, 'ipv4', '', 'NXM_NX_TUN_IPV4_DST', 0x0001, 32, None, ()),
    ('tun_ipv6_src', '', 16, 128, True, True, 'ipv6', '', 'NXM_NX_TUN_IPV6_SRC', 0x0001, 109, None, ()),
    ('tun_ipv6_dst', '', 16, 128, True, True, 'ipv6', '', 'NXM_NX_TUN_IPV6_DST', 0x0001, 110, None, ()),
    ('tun_flags', '', 2, 1, True, True, 'tun_flags', '', 'NXM_NX_TUN_FLAGS', 0x0001, 104, None, ()),
    ('tun_ttl', '', 1, 8, False, False, 'decimal', '', 'tun_ttl', None, None, None, ()),
    ('tun_tos', '', 1, 8, False, False, 'decimal', '', 'tun_tos', None, None, None, ()),
    ('tun_gbp_id', '', 2, 16, True, True, 'decimal', '', 'NXM_NX_TUN_GBP_ID', 0x0001, 38, None, ()),
    ('tun_gbp_flags', '', 1, 8, True, True, 'hex', '', 'NXM_NX_TUN_GBP_FLAGS', 0x0001, 39, None, ()),
    ('tun_erspan_idx', '', 4, 20, True, True, 'hex', '', 'NXOXM_ET_ERSPAN_IDX', 0xffff, 11, 0x2320, ()),
    ('tun_erspan_ver', '', 1, 4, True, True, 'decimal', '', 'NXOXM_ET_ERSPAN_VER', 0xffff, 12, 0x2320, ()),
    ('tun_erspan_dir', '', 1, 1, True, True, 'decimal', '', 'NXOXM_ET_ERSPAN_DIR', 0xffff, 13, 0x2320, ()),
    ('tun_erspan_hwid', '', 1, 6, True, True, 'hex', '', 'NXOXM_ET_ERSPAN_HWID', 0xffff, 14, 0x2320, ()),
    ('tun_gtpu_flags', '', 1, 8, True, False, 'hex', '', 'NXOXM_ET_GTPU_FLAGS', 0xffff, 15, 0x2320, ()),
    ('tun_gtpu_msgtype', '', 1, 8, True, False, 'decimal', '', 'NXOXM_ET_GTPU_MSGTYPE', 0xffff, 16, 0x2320, ()),
    ('tun_metadata0', '', 124, 992, True, True, 'hex', '', 'NXM_NX_TUN_METADATA0', 0x0001, 40, None, ()),
    ('metadata', '', 8, 64, True, True, 'hex', '', 'OXM_OF_METADATA', 0x8000, 2, None, ()),
    ('in_port', '', 2, 16, False, True, 'port', '', 'NXM_OF_IN_PORT', 0x0000, 0, None, ()),
    ('in_port_oxm', '', 4, 32, False, True, 'port_oxm', '', 'OXM_OF_IN_PORT', 0x8000, 0, None, ()),
    ('actset_output', '', 4, 32, False, False, 'port_oxm', '', 'ONFOXM_ET_ACTSET_OUTPUT', 0x8000, 43, None, ('OXM_OF_ACTSET_OUTPUT',)),
    ('skb_priority', '', 4, 32, False, False, 'hex', '', 'skb_priority', None, None, None, ()),
    ('pkt_mark', '', 4, 32, True, True, 'hex', '', 'NXM_NX_PKT_MARK', 0x0001, 33, None, ()),
    ('ct_state', '', 4, 32, True, False, 'ct_state', '', 'NXM_NX_CT_STATE', 0x0001, 105, None, ()),
    ('ct_zone', '', 2, 16, False, False, 'hex', '', 'NXM_NX_CT_ZONE', 0x0001, 106, None, ()),
    ('ct_mark', '', 4, 32, True, True, 'hex', '', 'NXM_NX_CT_MARK', 0x0001, 107, None, ()),
    ('ct_label', '', 16, 128, True, True, 'hex', '', 'NXM_NX_CT_LABEL', 0x0001, 108, None, ()),
    ('ct_nw_proto', '', 1, 8, False, False, 'decimal', 'ct', 'NXM_NX_CT_NW_PROTO', 0x0001, 119, None, ()),
    ('ct_nw_src', '', 4, 32, True, False, 'ipv4', 'ct', 'NXM_NX_CT_NW_SRC', 0x0001, 120, None, ()),
    ('ct_nw_dst', '', 4, 32, True, False, 'ipv4', 'ct', 'NXM_NX_CT_NW_DST', 0x0001, 121, None, ()),
    ('ct_ipv6_src', '', 16, 128, True, False, 'ipv6', 'ct', 'NXM_NX_CT_IPV6_SRC', 0x0001, 122, None, ()),
    ('ct_ipv6_dst', '', 16, 128, True, False, 'ipv6', 'ct', 'NXM_NX_CT_IPV6_DST', 0x0001, 123, None, ()),
    ('ct_tp_src', '', 2, 16, True, False, 'decimal', 'ct', 'NXM_NX_CT_TP_SRC', 0x0001, 124, None, ()),
    ('ct_tp_dst', '', 2, 16, True, False, 'decimal', 'ct', 'NXM_NX_CT_TP_DST', 0x0001, 125, None, ()),
    ('reg0', '', 4, 32, True, True, 'hex', '', 'NXM_NX_REG0', 0x0001, 0, None, ()),
    ('xreg0', '', 8, 64, True, True, 'hex', '', 'OXM_OF_PKT_REG0', 0x8001, 0, None, ()),
    ('xxreg0', '', 16, 128, True, True, 'hex', '', 'NXM_NX_XXREG0', 0x0001, 111, None, ()),
    ('eth_src', 'dl_src', 6, 48, True, True, 'mac', 'eth', 'NXM_OF_ETH_SRC', 0x8000, 4, None, ('OXM_OF_ETH_SRC',)),
    ('eth_dst', 'dl_dst', 6, 48, True, True, 'mac', 'eth', 'NXM_OF_ETH_DST', 0x8000, 3, None, ('OXM_OF_ETH_DST',)),
    ('eth_type', 'dl_type', 2, 16, False, False, 'hex', 'eth', 'NXM_OF_ETH_TYPE', 0x8000, 5, None, ('OXM_OF_ETH_TYPE',)),
    ('vlan_tci', '', 2, 16, True, True, 'hex', 'eth', 'NXM_OF_VLAN_TCI', 0x0000, 4, None, ()),
    ('dl_vlan', '', 2, 12, False, True, 'decimal', 'eth', 'dl_vlan', None, None, None, ()),
    ('vlan_vid', '', 2, 12, True, True, 'decimal', 'eth', 'OXM_OF_VLAN_VID', 0x8000, 6, None, ()),
    ('dl_vlan_pcp', '', 1, 3, False, True, 'decimal', 'eth', 'dl_vlan_pcp', None, None, None, ()),
    ('vlan_pcp', '', 1, 3, False, True, 'decimal', 'vlan_vid', 'OXM_OF_VLAN_PCP', 0x8000, 7, None, ()),
    ('mpls_label', '', 4, 20, False, True, 'decimal', 'mpls', 'OXM_OF_MPLS_LABEL', 0x8000, 34, None, ()),
    ('mpls_tc', '', 1, 3, False, True, 'decimal', 'mpls', 'OXM_OF_MPLS_TC', 0x8000, 35, None, ()),
    ('mpls_bos', '', 1, 1, False, False, 'decimal', 'mpls', 'OXM_OF_MPLS_BOS', 0x8000, 36, None, ()),
    ('mpls_ttl', '', 1, 8, False, True, 'decimal', 'mpls', 'NXM_NX_MPLS_TTL', 0x0001, 30, None, ()),
    ('ip_src', 'nw_src', 4, 32, True, True, 'ipv4', 'ipv4', 'NXM_OF_IP_SRC', 0x8000, 11, None, ('OXM_OF_IPV4_SRC',)),
    ('ip_dst', 'nw_dst', 4, 32, True, True, 'ipv4', 'ipv4', 'NXM_OF_IP_DST', 0x8000, 12, None, ('OXM_OF_IPV4_DST',)),
    ('ipv6_src', '', 16, 128, True, True, 'ipv6', 'ipv6', 'NXM_NX_IPV6_SRC', 0x8000, 26, None, ('OXM_OF_IPV6_SRC',)),
    ('ipv6_dst', '', 16, 128, True, True, 'ipv6', 'ipv6', 'NXM_NX_IPV6_DST', 0x8000, 27, None, ('OXM_OF_IPV6_DST',)),
    ('ipv6_label', '', 4, 20, True, True, 'hex', 'ipv6', 'NXM_NX_IPV6_LABEL', 0x8000, 28, None, ('OXM_OF_IPV6_FLABEL',)),
    ('nw_proto', 'ip_proto', 1, 8, False, False, 'decimal', 'ip', 'NXM_OF_IP_PROTO', 0x8000, 10, None, ('OXM_OF_IP_PROTO',)),
    ('nw_tos', '', 1, 8, False, True, 'decimal', 'ip', 'NXM_OF_IP_TOS', 0x0000, 5, None, ()),
    ('ip_dscp', '', 1, 6, False, True, 'decimal', 'ip', 'OXM_OF_IP_DSCP', 0x8000, 8, None, ()),
    ('nw_ecn', 'ip_ecn', 1, 2, False, True, 'decimal', 'ip', 'NXM_NX_IP_ECN', 0x8000, 9, None, ('OXM_OF_IP_ECN',)),
    ('nw_ttl', '', 1, 8, False, True, 'decimal', 'ip', 'NXM_NX_IP_TTL', 0x0001, 29, None, ()),
    ('ip_frag', 'nw_frag', 1, 2, True, False, 'frag', 'ip', 'NXM_NX_IP_FRAG', 0x0001, 26, None, ()),
    ('arp_op', '', 2, 16, False, True, 'decimal', 'arp', 'NXM_OF_ARP_OP', 0x8000, 21, None, ('OXM_OF_ARP_OP',)),
    ('arp_spa', '', 4, 32, True, True, 'ipv4', 'arp', 'NXM_OF_ARP_SPA', 0x8000, 22, None, ('OXM_OF_ARP_SPA',)),
    ('arp_tpa', '', 4, 32, True, True, 'ipv4', 'arp', 'NXM_OF_ARP_TPA', 0x8000, 23, None, ('OXM_OF_ARP_TPA',)),
    ('arp_sha', '', 6, 48, True, True, 'mac', 'arp', 'NXM_NX_ARP_SHA', 0x8000, 24, None, ('OXM_OF_ARP_SHA',)),
    ('arp_tha', '', 6, 48, True, True, 'mac', 'arp', 'NXM_NX_ARP_THA', 0x8000, 25, None, ('OXM_OF_ARP_THA',)),
    ('tcp_src', 'tp_src', 2, 16, True, True, 'decimal', 'tcp', 'NXM_OF_TCP_SRC', 0x8000, 13, None, ('OXM_OF_TCP_SRC',)),
    ('tcp_dst', 'tp_dst', 2, 16, True, True, 'decimal', 'tcp', 'NXM_OF_TCP_DST', 0x8000, 14, None, ('OXM_OF_TCP_DST',)),
    ('tcp_flags', '', 2, 12, True, False, 'tcp_flags', 'tcp', 'NXM_NX_TCP_FLAGS', 0x8000, 42, None, ('ONFOXM_ET_TCP_FLAGS', 'OXM_OF_TCP_FLAGS')),
    ('udp_src', '', 2, 16, True, True, 'decimal', 'udp', 'NXM_OF_UDP_SRC', 0x8000, 15, None, ('OXM_OF_UDP_SRC',)),
    ('udp_dst', '', 2, 16, True, True, 'decimal', 'udp', 'NXM_OF_UDP_DST', 0x8000, 16, None, ('OXM_OF_UDP_DST',)),
    ('sctp_src', '', 2, 16, True, True, 'decimal', 'sctp', 'OXM_OF_SCTP_SRC', 0x8000, 17, None, ()),
    ('sctp_dst', '', 2, 16, True, True, 'decimal', 'sctp', 'OXM_OF_SCTP_DST', 0x8000, 18, None, ()),
    ('icmp_type', '', 1, 8, False, True, 'decimal', 'icmp', 'NXM_OF_ICMP_TYPE', 0x8000, 19, None, ('OXM_OF_ICMPV4_TYPE',)),
    ('icmp_code', '', 1, 8, False, True, 'decimal', 'icmp', 'NXM_OF_ICMP_CODE', 0x8000, 20, None, ('OXM_OF_ICMPV4_CODE',)),
    ('icmpv6_type', '', 1, 8, False, True, 'decimal', 'icmp6', 'NXM_NX_ICMPV6_TYPE', 0x8000, 29, None, ('OXM_OF_ICMPV6_TYPE',)),
    ('icmpv6_code', '', 1, 8, False, True, 'decimal', 'icmp6', 'NXM_NX_ICMPV6_CODE', 0x8000, 30, None, ('OXM_OF_ICMPV6_CODE',)),
    ('nd_target', '', 16, 128, True, True, 'ipv6', 'nd', 'NXM_NX_ND_TARGET', 0x8000, 31, None, ('OXM_OF_IPV6_ND_TARGET',)),
    ('nd_sll', '', 6, 48, True, True, 'mac', 'nd_ns', 'NXM_NX_ND_SLL', 0x8000, 32, None, ('OXM_OF_IPV6_ND_SLL',)),
    ('nd_tll', '', 6, 48, True, True, 'mac', 'nd_na', 'NXM_NX_ND_TLL', 0x8000, 33, None, ('OXM_OF_IPV6_ND_TLL',)),
    ('nd_reserved', '', 4, 32, False, True, 'decimal', 'nd', 'ERICOXM_OF_ICMPV6_ND_RESERVED', 0x1000, 1, None, ()),
    ('nd_options_type', '', 1, 8, False, True, 'decimal', 'nd', 'ERICOXM_OF_ICMPV6_ND_OPTIONS_TYPE', 0x1000, 2, None, ()),
    ('nsh_flags', '', 1, 8, True, True, 'decimal', 'nsh', 'NXOXM_NSH_FLAGS', 0xffff, 1, 0x5ad650, ()),
    ('nsh_mdtype', '', 1, 8, False, False, 'decimal', 'nsh', 'NXOXM_NSH_MDTYPE', 0xffff, 2, 0x5ad650, ()),
    ('nsh_np', '', 1, 8, False, False, 'decimal', 'nsh', 'NXOXM_NSH_NP', 0xffff, 3, 0x5ad650, ()),
    ('nsh_spi', 'nsp', 4, 24, False, True, 'hex', 'nsh', 'NXOXM_NSH_SPI', 0xffff, 4, 0x5ad650, ()),
    ('nsh_si', 'nsi', 1, 8, False, True, 'decimal', 'nsh', 'NXOXM_NSH_SI', 0xffff, 5, 0x5ad650, ()),
    ('nsh_c1', 'nshc1', 4, 32, True, True, 'hex', 'nsh', 'NXOXM_NSH_C1', 0xffff, 6, 0x5ad650, ()),
    ('nsh_c2', 'nshc2', 4, 32, True, True, 'hex', 'nsh', 'NXOXM_NSH_C2', 0xffff, 7, 0x5ad650, ()),
    ('nsh_c3', 'nshc3', 4, 32, True, True, 'hex', 'nsh', 'NXOXM_NSH_C3', 0xffff, 8, 0x5ad650, ()),
    ('nsh_c4', 'nshc4', 4, 32, True, True, 'hex', 'nsh', 'NXOXM_NSH_C4', 0xffff, 9, 0x5ad650, ()),
    ('nsh_ttl', '', 1, 8, False, True, 'decimal', 'nsh', 'NXOXM_NSH_TTL', 0xffff, 10, 0x5ad650, ()),
)

_GROUPS = {"reg0": 16, "xreg0": 8, "xxreg0": 4, "tun_metadata0": 64}

# Other header assignments OVS accepts for some fields (legacy NXM codes for
# fields whose OF1.5 header is a standard OXM one, experimenter variants).
_ALT_HEADERS: dict[str, tuple[int, int, int | None]] = {
    "NXOXM_ET_DP_HASH": (0xffff, 0, 0x2320),
    "NXM_NX_TUN_ID": (0x0001, 16, None),
    "ONFOXM_ET_ACTSET_OUTPUT": (0xffff, 43, 0x4f4e4600),
    "NXM_OF_ETH_SRC": (0x0000, 2, None),
    "NXM_OF_ETH_DST": (0x0000, 1, None),
    "NXM_OF_ETH_TYPE": (0x0000, 3, None),
    "NXM_OF_IP_SRC": (0x0000, 7, None),
    "NXM_OF_IP_DST": (0x0000, 8, None),
    "NXM_NX_IPV6_SRC": (0x0001, 19, None),
    "NXM_NX_IPV6_DST": (0x0001, 20, None),
    "NXM_NX_IPV6_LABEL": (0x0001, 27, None),
    "NXM_OF_IP_PROTO": (0x0000, 6, None),
    "NXM_NX_IP_ECN": (0x0001, 28, None),
    "NXM_OF_ARP_OP": (0x0000, 15, None),
    "NXM_OF_ARP_SPA": (0x0000, 16, None),
    "NXM_OF_ARP_TPA": (0x0000, 17, None),
    "NXM_NX_ARP_SHA": (0x0001, 17, None),
    "NXM_NX_ARP_THA": (0x0001, 18, None),
    "NXM_OF_TCP_SRC": (0x0000, 9, None),
    "NXM_OF_TCP_DST": (0x0000, 10, None),
    "NXM_NX_TCP_FLAGS": (0x0001, 34, None),
    "ONFOXM_ET_TCP_FLAGS": (0xffff, 42, 0x4f4e4600),
    "NXM_OF_UDP_SRC": (0x0000, 11, None),
    "NXM_OF_UDP_DST": (0x0000, 12, None),
    "NXM_OF_ICMP_TYPE": (0x0000, 13, None),
    "NXM_OF_ICMP_CODE": (0x0000, 14, None),
    "NXM_NX_ICMPV6_TYPE": (0x0001, 21, None),
    "NXM_NX_ICMPV6_CODE": (0x0001, 22, None),
    "NXM_NX_ND_TARGET": (0x0001, 23, None),
    "NXM_NX_ND_SLL": (0x0001, 24, None),
    "NXM_NX_ND_TLL": (0x0001, 25, None),
}


def _build() -> tuple[dict[str, Field], dict[str, Field]]:
    fields: dict[str, Field] = {}
    names: dict[str, Field] = {}
    for (name, alias, n_bytes, n_bits, maskable, writable, fmt, prereqs,
         nxm_name, oxm_class, oxm_field, experimenter, others) in _TABLE:
        count = _GROUPS.get(name, 1)
        for i in range(count):
            if count > 1:
                stem = name[:-1]
                fname = f"{stem}{i}"
                fnxm = f"{nxm_name[:-1]}{i}"
                assert oxm_field is not None
                ffield: int | None = oxm_field + i
            else:
                fname, fnxm, ffield = name, nxm_name, oxm_field
            # The OF1.5 header's name is the one assignment not listed as an
            # alternative (non-OF1.5) header.
            oxm_name = next((n for n in (fnxm,) + others if n not in _ALT_HEADERS), fnxm)
            f = Field(
                name=fname, n_bits=n_bits, maskable=maskable, writable=writable,
                nxm_name=fnxm, oxm_class=oxm_class, oxm_field=ffield,
                experimenter=experimenter, prereqs=prereqs, fmt=fmt,
                n_bytes=n_bytes, alias=alias,
                variable=name == "tun_metadata0", other_names=others, oxm_name=oxm_name)
            fields[fname] = f
            names[fname] = f
            if alias:
                names[alias] = f
            if fnxm != fname:
                names[fnxm] = f
            for other in others:
                names[other] = f
    return fields, names


FIELDS, _BY_NAME = _build()


def _build_header_index() -> dict[tuple[int, int, int | None], Field]:
    index: dict[tuple[int, int, int | None], Field] = {}
    for f in FIELDS.values():
        if f.oxm_class is not None and f.oxm_field is not None:
            index.setdefault((f.oxm_class, f.oxm_field, f.experimenter), f)
    for hname, key in _ALT_HEADERS.items():
        index.setdefault(key, _BY_NAME[hname])
    return index


_BY_HEADER = _build_header_index()


def field_by_header(oxm_class: int, oxm_field: int,
                    experimenter: int | None = None) -> Field | None:
    """The field an OXM/NXM header (class, field[, experimenter]) denotes, for
    every assignment OVS knows (OF1.5 OXM and legacy NXM), or None."""
    return _BY_HEADER.get((oxm_class, oxm_field, experimenter))


def field(name: str) -> Field:
    """The field called ``name`` (meta-flow name). KeyError when unknown."""
    return FIELDS[name]


def lookup(name: str) -> Field:
    """The field for any name OVS accepts: meta-flow name, alias (``dl_src``,
    ``nw_src``, ``tunnel_id``...) or NXM/OXM header name (``NXM_NX_REG14``,
    ``OXM_OF_PKT_REG4``...). KeyError when unknown."""
    return _BY_NAME[name]


# --------------------------------------------------------------------------
# Value formatting (OVS mf_format()).

CT_STATE_BITS: tuple[tuple[int, str], ...] = (
    (0x01, "new"), (0x02, "est"), (0x04, "rel"), (0x08, "rpl"),
    (0x10, "inv"), (0x20, "trk"), (0x40, "snat"), (0x80, "dnat"),
)
TCP_FLAG_BITS: tuple[tuple[int, str], ...] = (
    (0x001, "fin"), (0x002, "syn"), (0x004, "rst"), (0x008, "psh"),
    (0x010, "ack"), (0x020, "urg"), (0x040, "ece"), (0x080, "cwr"),
    (0x100, "ns"), (0x200, "[200]"), (0x400, "[400]"), (0x800, "[800]"),
)
TUN_FLAG_BITS: tuple[tuple[int, str], ...] = ((0x1, "oam"),)
_CT_STATE_NAMES = dict(CT_STATE_BITS)
_TCP_FLAG_NAMES = dict(TCP_FLAG_BITS)
_TUN_FLAG_NAMES = dict(TUN_FLAG_BITS)

FRAG_ANY = 0x1
FRAG_LATER = 0x2
# (name, mask, value), in the order OVS searches them.
_FRAG_FORMS: tuple[tuple[str, int, int], ...] = (
    ("no", 3, 0), ("first", 3, 1), ("later", 3, 3),
    ("no", 1, 0), ("yes", 1, 1),
    ("not_later", 2, 0), ("later", 2, 2),
)

RESERVED_PORTS: dict[int, str] = {
    0xfff7: "UNSET", 0xfff8: "IN_PORT", 0xfff9: "TABLE", 0xfffa: "NORMAL",
    0xfffb: "FLOOD", 0xfffc: "ALL", 0xfffd: "CONTROLLER", 0xfffe: "LOCAL",
    0xffff: "ANY",
}
_RESERVED_PORT_NUMBERS = {v: k for k, v in RESERVED_PORTS.items()}
_RESERVED_PORT_NUMBERS["NONE"] = 0xffff

_NAME_NEEDS_NO_QUOTES = re.compile(r"[A-Za-z][A-Za-z0-9]*\Z")


def _hex(value: int) -> str:
    # OVS ds_put_hex(): "0x" and the bytes without leading zero bytes, "0" if zero.
    return "0x%x" % value if value else "0"


def format_subvalue(value: int) -> str:
    """OVS mf_format_subvalue() (e.g. the value of ``load:`` and learn's
    ``load:``/``=`` immediates): "0x..." hex, or "0"."""
    return _hex(value)


def format_mac(value: int) -> str:
    b = value.to_bytes(6, "big")
    return "%02x:%02x:%02x:%02x:%02x:%02x" % (b[0], b[1], b[2], b[3], b[4], b[5])


def format_ipv4(value: int) -> str:
    return "%d.%d.%d.%d" % (value >> 24, (value >> 16) & 255, (value >> 8) & 255,
                            value & 255)


def format_ipv6(value: int) -> str:
    # glibc inet_ntop(), as OVS uses it (e.g. "::ffff:1.2.3.4", no "::" for one zero word).
    return socket.inet_ntop(socket.AF_INET6, value.to_bytes(16, "big"))


def _cidr_bits(mask: int, n_bits: int) -> int | None:
    """Prefix length if ``mask`` is a CIDR mask (leading ones then zeros)."""
    inv = ~mask & ((1 << n_bits) - 1)
    if inv & (inv + 1):
        return None
    return n_bits - inv.bit_length()


def _format_flags(bits: dict[int, str], flags: int, mask: int, max_mask: int,
                  delim: str = "|") -> str:
    """OVS format_flags_masked() without the name prefix."""
    if mask == max_mask:
        if not flags:
            return "0"
        out = []
        bad = 0
        while flags:
            bit = flags & -flags
            name = bits.get(bit)
            if name is None:
                bad |= bit
            else:
                out.append(name)
            flags &= ~bit
        if bad:
            out.append("0x%x" % bad)
        return delim.join(out)
    if not mask:
        return "0/0"
    out = []
    while mask:
        bit = mask & -mask
        out.append(("+" if flags & bit else "-") + bits.get(bit, "[Unknown]"))
        mask &= ~bit
    return "".join(out)


def format_frag(value: int, mask: int) -> str:
    mask &= 3
    value &= mask
    for name, m, v in _FRAG_FORMS:
        if m == mask and v == value:
            return name
    return "<error>"


def port_from_ofp11(port: int) -> int:
    """OpenFlow 1.1+ 32-bit port number to OVS's 16-bit port number."""
    if port < 0xff00:
        return port
    if port >= 0xffffff00:
        return port - 0xffff0000
    raise ValueError("port %#x outside the range OVS maps" % port)


def port_to_ofp11(port: int) -> int:
    """OVS 16-bit port number to an OpenFlow 1.1+ 32-bit port number."""
    return port if port < 0xff00 else port + 0xffff0000


def format_port(port: int, port_names: dict[int, str] | None = None) -> str:
    """OVS ofputil_format_port(): reserved names, then names from ``port_names``
    (quoted unless alphanumeric), else the decimal number."""
    reserved = RESERVED_PORTS.get(port)
    if reserved is not None:
        return reserved
    if port_names is not None:
        name = port_names.get(port)
        if name is not None:
            return name if _NAME_NEEDS_NO_QUOTES.match(name) else _json_quote(name)
    return str(port)


def _json_quote(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ord(ch) < 0x20:
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                        "\t": "\\t"}.get(ch, "\\u%04x" % ord(ch)))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def parse_port(text: str, port_numbers: dict[str, int] | None = None) -> int:
    """Inverse of format_port(): number, reserved name (any case), or a port
    name (quoted or not) from ``port_numbers``."""
    if text.isdigit():
        return int(text)
    reserved = _RESERVED_PORT_NUMBERS.get(text.upper())
    if reserved is not None:
        return reserved
    name = text
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        import json
        name = json.loads(text)
    if port_numbers is not None and name in port_numbers:
        return port_numbers[name]
    raise ValueError("unknown port %r" % text)


def format_value(f: Field, value: int, mask: int | None = None,
                 port_names: dict[int, str] | None = None) -> str:
    """``value``/``mask`` of field ``f`` as OVS mf_format() prints it (the
    form used by ``set_field:``, ``load:`` etc.). ``mask`` None = exact."""
    all_ones = (1 << (8 * f.n_bytes)) - 1
    if mask is not None:
        if mask == 0:
            return "ANY"
        if mask & all_ones == all_ones:
            mask = None
    kind = f.fmt
    if kind == "port_oxm" and mask is None:
        # OVS maps a 32-bit port it cannot fold to 16 bits to OFPP_NONE
        # ("ANY") when printing, rather than failing.
        try:
            port = port_from_ofp11(value)
        except ValueError:
            port = 0xffff
        return format_port(port, port_names)
    if kind == "port" and mask is None:
        return format_port(value, port_names)
    if kind in ("hex", "decimal", "port", "port_oxm"):
        text = _hex(value) if kind == "hex" else str(value)
        return text if mask is None else text + "/" + _hex(mask)
    if kind == "mac":
        if mask is None:
            return format_mac(value)
        return format_mac(value) + "/" + format_mac(mask)
    if kind == "ipv4":
        if mask is None:
            return format_ipv4(value)
        bits = _cidr_bits(mask, 32)
        return format_ipv4(value) + ("/%d" % bits if bits is not None
                                     else "/" + format_ipv4(mask))
    if kind == "ipv6":
        if mask is None:
            return format_ipv6(value)
        bits = _cidr_bits(mask, 128)
        return format_ipv6(value) + ("/%d" % bits if bits is not None
                                     else "/" + format_ipv6(mask))
    if kind == "ct_state":
        return _format_flags(_CT_STATE_NAMES, value,
                             0xffffffff if mask is None else mask, 0xffff)
    if kind == "frag":
        return format_frag(value, 0xff if mask is None else mask)
    if kind == "tcp_flags":
        return _format_flags(_TCP_FLAG_NAMES, value,
                             0x0fff if mask is None else mask & 0x0fff, 0x0fff)
    if kind == "tun_flags":
        return _format_flags(_TUN_FLAG_NAMES, value,
                             1 if mask is None else mask & 1, 1)
    if kind == "packet_type":
        return _format_packet_type(value, 0xffffffff if mask is None else mask)
    raise ValueError("unknown format kind %r" % kind)


def _put_u16_masked(value: int, mask: int) -> str:
    if not mask:
        return "*"
    text = "0x%x" % value if value > 9 else "%d" % value
    return text if mask == 0xffff else text + "/0x%x" % mask


def _format_packet_type(value: int, mask: int) -> str:
    if value == 0 and mask == 0xffffffff:
        return "eth"
    return "packet_type=(%s,%s)" % (_put_u16_masked(value >> 16, mask >> 16),
                                    _put_u16_masked(value & 0xffff, mask & 0xffff))


# --------------------------------------------------------------------------
# Value parsing (the inverse of format_value, tolerant like OVS mf_parse()).

def _parse_int(text: str) -> int:
    return int(text, 0) if text[:2].lower() == "0x" else int(text, 10)


def parse_mac(text: str) -> int:
    parts = text.split(":")
    if len(parts) != 6:
        raise ValueError("bad Ethernet address %r" % text)
    return int("".join("%02x" % int(p, 16) for p in parts), 16)


def parse_ipv4(text: str) -> int:
    return int.from_bytes(socket.inet_pton(socket.AF_INET, text), "big")


def parse_ipv6(text: str) -> int:
    return int.from_bytes(socket.inet_pton(socket.AF_INET6, text), "big")


def _parse_flags(bits: dict[int, str], text: str, max_mask: int) -> tuple[int, int]:
    by_name = {v: k for k, v in bits.items()}
    if text[:1] in "+-":
        value = mask = 0
        for sign, name in re.findall(r"([+-])([^+-]+)", text):
            bit = by_name[name]
            mask |= bit
            if sign == "+":
                value |= bit
        return value, mask
    if text[:1].isdigit():
        v, _, m = text.partition("/")
        return _parse_int(v), (_parse_int(m) if m else max_mask)
    value = 0
    for name in re.split(r"[|,]", text):
        value |= by_name[name]
    return value, max_mask


def parse_value(f: Field, text: str,
                port_numbers: dict[str, int] | None = None) -> tuple[int, int | None]:
    """Parse ``value[/mask]`` for field ``f`` as OVS prints it; returns
    (value, mask) with mask None for an exact match."""
    all_ones = (1 << (8 * f.n_bytes)) - 1
    kind = f.fmt
    mask: int | None
    if kind in ("port", "port_oxm"):
        port = parse_port(text, port_numbers)
        return (port_to_ofp11(port) if kind == "port_oxm" else port), None
    if kind == "ct_state":
        value, mask = _parse_flags(_CT_STATE_NAMES, text, 0xffffffff)
    elif kind == "tcp_flags":
        value, mask = _parse_flags(_TCP_FLAG_NAMES, text, 0x0fff)
        if mask == 0x0fff:
            mask = None
    elif kind == "tun_flags":
        value, mask = _parse_flags(_TUN_FLAG_NAMES, text, 1)
        if mask == 1:
            mask = None
    elif kind == "frag":
        for name, m, v in _FRAG_FORMS:
            if name == text:
                value, mask = v, m
                break
        else:
            raise ValueError("bad frag value %r" % text)
    else:
        vtext, slash, mtext = text.partition("/")
        if kind == "mac":
            value = parse_mac(vtext)
            mask = parse_mac(mtext) if slash else None
        elif kind in ("ipv4", "ipv6"):
            n_bits = 32 if kind == "ipv4" else 128
            value = parse_ipv4(vtext) if kind == "ipv4" else parse_ipv6(vtext)
            if not slash:
                mask = None
            elif mtext.isdigit():
                plen = int(mtext)
                mask = ((1 << plen) - 1) << (n_bits - plen)
            else:
                mask = parse_ipv4(mtext) if kind == "ipv4" else parse_ipv6(mtext)
        else:
            value = _parse_int(vtext)
            mask = _parse_int(mtext) if slash else None
    if mask is not None and mask & all_ones == all_ones:
        mask = None
    return value, mask


# --------------------------------------------------------------------------
# Subfields ("NXM_NX_XXREG0[64..95]").

@dataclass(frozen=True, slots=True)
class Subfield:
    """Bits ``ofs .. ofs+n_bits-1`` of ``field``."""

    field: Field
    ofs: int
    n_bits: int

    @classmethod
    def whole(cls, f: Field) -> "Subfield":
        return cls(f, 0, f.n_bits)

    @property
    def is_whole(self) -> bool:
        return self.ofs == 0 and self.n_bits == self.field.n_bits

    def format(self) -> str:
        """As OVS mf_format_subfield() prints it."""
        name = self.field.nxm_name
        if self.is_whole:
            return name + "[]"
        if self.n_bits == 1:
            return "%s[%d]" % (name, self.ofs)
        return "%s[%d..%d]" % (name, self.ofs, self.ofs + self.n_bits - 1)

    def __str__(self) -> str:
        return self.format()


_SUBFIELD_RE = re.compile(r"([A-Za-z0-9_]+?)(_W)?(?:\[(?:(\d+)(?:\.\.(\d+))?)?\])?\Z")


def parse_subfield(text: str) -> Subfield:
    """Parse ``NAME[]``, ``NAME[bit]``, ``NAME[start..end]`` or a bare
    ``NAME``; NAME may be an NXM/OXM header name or a meta-flow name."""
    m = _SUBFIELD_RE.match(text.strip())
    if not m:
        raise ValueError("bad subfield %r" % text)
    name, wild, start, end = m.groups()
    f = _BY_NAME.get(name + (wild or ""))
    if f is None and wild:
        f = _BY_NAME.get(name)
    if f is None:
        raise ValueError("unknown field in subfield %r" % text)
    if start is None:
        ofs, n_bits = 0, f.n_bits
    else:
        ofs = int(start)
        last = int(end) if end is not None else ofs
        if last < ofs or last >= f.n_bits:
            raise ValueError("bad bit range in subfield %r" % text)
        n_bits = last - ofs + 1
    return Subfield(f, ofs, n_bits)
