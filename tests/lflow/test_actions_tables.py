"""Group/meter id tables (the ofctrl tables the actions use) and controller
payload encoders."""

from __future__ import annotations

import struct
from uuid import UUID

import pytest

from controller.lflow.actions.base import Const, ConstSet
from controller.lflow.actions.controller_ops import (
    GenOptionValue, dhcpv4_payload, dhcpv6_payload, encode_domains, nd_ra_payload)
from controller.lflow.actions.dhcp_opts import (
    DHCPV4_OPTIONS, DHCPV6_OPTIONS, ND_RA_OPTIONS)
from ofctrl.groups import GroupTable
from ofctrl.meters import MeterTable
from controller.lflow import lexer as lx

A = UUID(int=1)
B = UUID(int=2)


@pytest.mark.parametrize("table_class", [GroupTable, MeterTable])
def test_lowest_free_id_and_reuse_by_name(table_class: type[GroupTable | MeterTable]) -> None:
    t = table_class()
    assert t.assign_id("g1", A) == 1
    assert t.assign_id("g2", A) == 2
    assert t.assign_id("g1", B) == 1          # same name, same id
    assert t.assign_id("g3", B) == 3
    t.remove_desired(A)                        # g2 only used by A -> freed
    assert set(t.desired) == {"g1", "g3"}
    assert t.assign_id("g4", B) == 2           # lowest free id again
    t.remove_desired(B)
    assert t.desired == {}
    assert t.assign_id("g5", A) == 1


@pytest.mark.parametrize("table_class", [GroupTable, MeterTable])
def test_installed_ids_stay_reserved(table_class: type[GroupTable | MeterTable]) -> None:
    t = table_class()
    assert t.assign_id("g1", A) == 1
    assert [e.name for e in t.uninstalled()] == ["g1"]
    t.sync()
    assert list(t.uninstalled()) == []
    t.remove_desired(A)
    assert [e.name for e in t.unneeded()] == ["g1"]
    # Still installed: a new name must not take id 1 ...
    assert t.assign_id("g2", B) == 2
    # ... and the installed name gets its old id back.
    assert t.assign_id("g1", B) == 1
    t.remove_desired(B)
    t.remove_existing("g1")
    assert t.assign_id("g3", A) == 1


def test_clear_desired() -> None:
    t = GroupTable()
    for i in range(5):
        t.assign_id(f"g{i}", A)
    t.clear_desired()
    assert t.assign_id("x", B) == 1


def opt(table: dict, name: str, *values: Const, curlies: bool = False) -> GenOptionValue:
    return GenOptionValue(table[name], ConstSet(tuple(values), values[0].string is not None,
                                                curlies))


def ip4(text: str, plen: int | None = None) -> Const:
    v = int.from_bytes(bytes(int(x) for x in text.split(".")), "big")
    mask = None if plen is None else ((1 << 32) - 1) ^ ((1 << (32 - plen)) - 1)
    return Const(v, mask, lx.F_IPV4)


def test_domain_search_list_compression() -> None:
    # The example of RFC 3397 / OVN's comment: "abc.com" then "xyz.abc.com".
    assert encode_domains("abc.com,xyz.abc.com") == \
        b"\x03abc\x03com\x00\x03xyz\xc0\x00"
    assert encode_domains("a" * 256) is None


def test_dhcpv4_payload_order_and_types() -> None:
    t = DHCPV4_OPTIONS
    payload = dhcpv4_payload((
        opt(t, "router", ip4("10.0.0.1")),
        opt(t, "next_server", ip4("10.0.0.9")),
        opt(t, "offerip", ip4("10.0.0.5")),
        opt(t, "lease_time", Const(3600)),
        opt(t, "classless_static_route", ip4("10.0.0.0", 8), ip4("10.0.0.1"),
            ip4("0.0.0.0", 0), ip4("10.0.0.2"), curlies=True),
        opt(t, "tftp_server", Const(string="srv")),
    ))
    assert payload == (bytes([10, 0, 0, 5])                   # offer ip first
                       + bytes([253, 4, 10, 0, 0, 9])          # then next_server
                       + bytes([3, 4, 10, 0, 0, 1])
                       + bytes([51, 4]) + struct.pack("!I", 3600)
                       + bytes([121, 11, 8, 10, 10, 0, 0, 1, 0, 10, 0, 0, 2])
                       + bytes([66, 3]) + b"srv")


def test_dhcpv6_payload() -> None:
    t = DHCPV6_OPTIONS
    payload = dhcpv6_payload((opt(t, "server_id", Const(0x0A0000000001, None, lx.F_ETHERNET)),
                              opt(t, "domain_search", Const(string="ovn.org"))))
    assert payload == (struct.pack("!HH", 2, 6) + bytes.fromhex("0a0000000001")
                       + struct.pack("!HH", 24, 7) + b"ovn.org")


def test_nd_ra_payload_options() -> None:
    t = ND_RA_OPTIONS
    prefix = Const(0xFD00 << 112, ((1 << 64) - 1) << 64, lx.F_IPV6)
    payload = nd_ra_payload((
        opt(t, "addr_mode", Const(string="slaac")),
        opt(t, "router_preference", Const(string="LOW")),
        opt(t, "prefix", prefix),
        opt(t, "rdnss", Const(1, None, lx.F_IPV6)),
        opt(t, "dnssl", Const(string="a.b")),
        opt(t, "route_info", Const(string="HIGH-fd00:1::/48")),
    ))
    ra = struct.pack("!BBHBBHII", 134, 0, 0, 255, 0x18, 0xFFFF, 0, 0)
    pfx = struct.pack("!BBBBIII", 3, 4, 64, 0xC0, 0xFFFFFFFF, 0xFFFFFFFF, 0) + \
        (0xFD00 << 112).to_bytes(16, "big")
    rdnss = struct.pack("!BBHI", 25, 3, 0, 0xFFFFFFFF) + (1).to_bytes(16, "big")
    dnssl = struct.pack("!BBHI", 31, 2, 0, 0xFFFFFFFF) + b"\x01a\x01b\x00" + bytes(3)
    route = struct.pack("!BBBBI", 24, 2, 48, 0x08, 0xFFFFFFFF) + \
        bytes.fromhex("fd00000100000000")
    assert payload == ra + pfx + rdnss + dnssl + route
