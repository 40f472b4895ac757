"""Option tables for put_dhcp_opts / put_dhcpv6_opts / put_nd_ra_opts and
trigger_event (OVN lib/ovn-l7.h semantics).

An option table maps an option name to ``GenOption(name, code, type)``.  The
DHCPv4/DHCPv6 tables of a running agent come from the SB ``DHCP_Options`` /
``DHCPv6_Options`` tables (``table_from_rows``); the constants below are the
well-known sets (what ovn-northd writes, and what the OVN test harness
declares).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping


@dataclass(frozen=True, slots=True)
class GenOption:
    name: str
    code: int
    type: str   # ipv4 ipv6 mac str bool uint8 uint16 uint32 host_id
    #             static_routes domains


OptionTable = Mapping[str, GenOption]


def table_from_rows(rows: Iterable[tuple[str, int, str]]) -> dict[str, GenOption]:
    """Build an option table from (name, code, type) triples (SB rows)."""
    return {name: GenOption(name, code, typ) for name, code, typ in rows}


# Special DHCPv4 codes (ovn-l7.h).
DHCP_OFFERIP_CODE = 0
DHCP_OPT_BOOTFILE_CODE = 67
DHCP_OPT_BOOTFILE_ALT_CODE = 254
DHCP_OPT_NEXT_SERVER_CODE = 253

# The DHCPv4 option set that the OVN test harness declares (a subset of
# what northd writes; "offerip" is pseudo-option 0).
DHCPV4_TEST_OPTIONS: dict[str, GenOption] = table_from_rows([
    ("offerip", 0, "ipv4"),
    ("netmask", 1, "ipv4"),
    ("router", 3, "ipv4"),
    ("dns_server", 6, "ipv4"),
    ("log_server", 7, "ipv4"),
    ("lpr_server", 9, "ipv4"),
    ("hostname", 12, "str"),
    ("domain_name", 15, "str"),
    ("swap_server", 16, "ipv4"),
    ("policy_filter", 21, "ipv4"),
    ("router_solicitation", 32, "ipv4"),
    ("nis_server", 41, "ipv4"),
    ("ntp_server", 42, "ipv4"),
    ("server_id", 54, "ipv4"),
    ("tftp_server", 66, "host_id"),
    ("classless_static_route", 121, "static_routes"),
    ("ip_forward_enable", 19, "bool"),
    ("router_discovery", 31, "bool"),
    ("ethernet_encap", 36, "bool"),
    ("default_ttl", 23, "uint8"),
    ("tcp_ttl", 37, "uint8"),
    ("mtu", 26, "uint16"),
    ("lease_time", 51, "uint32"),
    ("wpad", 252, "str"),
    ("bootfile_name", 67, "str"),
    ("path_prefix", 210, "str"),
    ("tftp_server_address", 150, "ipv4"),
    ("arp_cache_timeout", 35, "uint32"),
    ("tcp_keepalive_interval", 38, "uint32"),
    ("domain_search_list", 119, "domains"),
    ("bootfile_name_alt", 254, "str"),
    ("broadcast_address", 28, "ipv4"),
    ("netbios_name_server", 44, "ipv4"),
    ("netbios_node_type", 46, "uint8"),
    ("next_server", 253, "ipv4"),
])

# Additional DHCPv4 options northd supports (for a real agent the SB table is
# authoritative; these fill in when it is not available).
DHCPV4_OPTIONS: dict[str, GenOption] = {
    **DHCPV4_TEST_OPTIONS,
    **table_from_rows([
        ("ms_classless_static_route", 249, "static_routes"),
        ("T1", 58, "uint32"),
        ("T2", 59, "uint32"),
    ]),
}

DHCPV6_TEST_OPTIONS: dict[str, GenOption] = table_from_rows([
    ("server_id", 2, "mac"),
    ("ia_addr", 5, "ipv6"),
    ("dns_server", 23, "ipv6"),
    ("domain_search", 24, "str"),
])
DHCPV6_OPTIONS = DHCPV6_TEST_OPTIONS

# IPv6 ND RA.
ND_RA_FLAG_ADDR_MODE = 0
ND_RA_FLAG_PRF = 255
ND_OPT_SOURCE_LINKADDR = 1
ND_OPT_PREFIX_INFORMATION = 3
ND_OPT_MTU = 5
ND_OPT_ROUTE_INFO_TYPE = 24
ND_OPT_RDNSS = 25
ND_OPT_DNSSL = 31

ND_RA_OPTIONS: dict[str, GenOption] = table_from_rows([
    ("addr_mode", ND_RA_FLAG_ADDR_MODE, "str"),
    ("router_preference", ND_RA_FLAG_PRF, "str"),
    ("slla", ND_OPT_SOURCE_LINKADDR, "mac"),
    ("prefix", ND_OPT_PREFIX_INFORMATION, "ipv6"),
    ("mtu", ND_OPT_MTU, "uint32"),
    ("rdnss", ND_OPT_RDNSS, "ipv6"),
    ("dnssl", ND_OPT_DNSSL, "str"),
    ("route_info", ND_OPT_ROUTE_INFO_TYPE, "str"),
])

# Controller events (trigger_event).
OVN_EVENT_EMPTY_LB_BACKENDS = 0
EVENT_NAMES = ("empty_lb_backends",)
EMPTY_LB_VIP = 1
EMPTY_LB_PROTOCOL = 2
EMPTY_LB_LOAD_BALANCER = 3

CONTROLLER_EVENT_OPTIONS: tuple[dict[str, GenOption], ...] = (
    table_from_rows([
        ("vip", EMPTY_LB_VIP, "str"),
        ("protocol", EMPTY_LB_PROTOCOL, "str"),
        ("load_balancer", EMPTY_LB_LOAD_BALANCER, "str"),
    ]),
)
