"""GARP/RARP planner (controller.pinctrl.garp.garp_inputs) and address parsing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.binding.local_data import LocalDatapath, add_local_datapath
from controller.ovsdb.indexes import SbIndexes
from controller.pinctrl.garp import (
    GarpEntry,
    PeerPort,
    extract_addresses,
    extract_addresses_with_port,
    garp_inputs,
)
from tests.agent.fakes import FakeRow, dp, pb

R = 'is_chassis_resident("%s")'


# ------------------------------------------------------------------ addresses
def test_extract_addresses_mac_ips_and_port() -> None:
    r = extract_addresses_with_port("0a:0:0:0:0:1 10.0.0.1 fd00::1 10.0.0.2/24 " + R % "cr-lrp")
    assert r is not None
    a, port = r
    assert (a.mac, a.ipv4, a.n_ipv6, port) == ("0a:00:00:00:00:01", ("10.0.0.1", "10.0.0.2"),
                                               1, "cr-lrp")


@pytest.mark.parametrize("text", ["router", "", "00:00:00:00:00", "zz:00:00:00:00:01 1.2.3.4"])
def test_extract_addresses_needs_a_mac(text: str) -> None:
    assert extract_addresses(text) is None
    assert extract_addresses_with_port(text) is None


def test_extract_addresses_stops_at_first_non_address() -> None:
    a = extract_addresses("00:00:00:00:00:01 10.0.0.1 unknown 10.0.0.2")
    assert a is not None and a.ipv4 == ("10.0.0.1",) and a.rest == " unknown 10.0.0.2"
    # Trailing text that is not is_chassis_resident(): usable, with no port (C logs it).
    r = extract_addresses_with_port("00:00:00:00:00:01 10.0.0.1 unknown")
    assert r is not None and r[1] is None and r[0].ipv4 == ("10.0.0.1",)


@pytest.mark.parametrize("tail", ['is_chassis_resident cr', 'is_chassis_resident(cr)',
                                  'is_chassis_resident("cr"'])
def test_extract_addresses_with_port_syntax_errors_reject_the_entry(tail: str) -> None:
    assert extract_addresses_with_port("00:00:00:00:00:01 10.0.0.1 " + tail) is None


def test_extract_addresses_scanf_quirks() -> None:
    # %hhu wraps like OVS's scanner; a non-CIDR mask ends the list.
    a = extract_addresses("00:00:00:00:00:01 10.0.0.300")
    assert a is not None and a.ipv4 == ("10.0.0.44",)
    a = extract_addresses("00:00:00:00:00:01 10.0.0.1/255.0.255.0")
    assert a is not None and a.ipv4 == () and a.rest == " 10.0.0.1/255.0.255.0"


# ------------------------------------------------------------------ topology
class Topo:
    """ls-pub (localnet ln-pub) with VIFs, a distributed router lr0 (patch +
    cr port) and a gateway router gw (l3gateway) on it; ls-int without
    localnet, with a VIF bound here."""

    def __init__(self) -> None:
        self.ch = FakeRow(name="hv1", hostname="hv1")
        self.ch2 = FakeRow(name="hv2", hostname="hv2")
        self.ls = dp(1, external_ids={"logical-switch": "x"})
        self.lr0 = dp(2, external_ids={"logical-router": "x"})
        self.gw = dp(3, external_ids={"logical-router": "y",
                                      "always_learn_from_arp_request": "false"})
        self.lsi = dp(4, external_ids={"logical-switch": "z"})
        self.group = FakeRow(name="g", ha_chassis=[FakeRow(chassis=[self.ch], priority=20)],
                             ref_chassis=[])
        self.rows: dict[str, Any] = {}
        ch = [self.ch]
        self.add(pb("ln-pub", self.ls, 1, "localnet", options={"network_name": "phys"}))
        self.add(pb("vm1", self.ls, 2, chassis=ch,
                    mac=["00:00:00:00:00:11 172.16.0.11 fd00::11"]))
        self.add(pb("vm2", self.ls, 3, chassis=[self.ch2], mac=["00:00:00:00:00:12 172.16.0.12"]))
        self.add(pb("vm-v6", self.ls, 4, chassis=ch, mac=["unknown", "00:00:00:00:00:13 fd00::13"]))
        self.add(pb("pub-md", self.ls, 5, "localport", mac=["00:00:00:00:00:14 172.16.0.14"]))
        self.add(pb("pub-lr0", self.ls, 6, "patch", options={"peer": "lr0-pub"}, nat_addresses=[
            "00:00:00:00:01:00 172.16.0.100 172.16.0.101 " + R % "cr-lr0-pub",
            "00:00:00:00:01:01 172.16.0.110 " + R % "vm2",
            "00:00:00:00:01:02 172.16.0.120"]))
        self.add(pb("pub-gw", self.ls, 7, "l3gateway", chassis=ch, options={"peer": "gw-pub"},
                    nat_addresses=["00:00:00:00:02:00 172.16.0.200 172.16.0.201",
                                   "00:00:00:00:02:01 fd00::200"]))
        self.add(pb("lr0-pub", self.lr0, 1, "patch", options={"peer": "pub-lr0"}))
        self.add(pb("cr-lr0-pub", self.lr0, 2, "chassisredirect", chassis=ch,
                    ha_chassis_group=[self.group]))
        self.add(pb("gw-pub", self.gw, 1, "l3gateway", chassis=ch, options={"peer": "pub-gw"}))
        self.add(pb("vm3", self.lsi, 1, chassis=ch, mac=["00:00:00:00:00:31 10.0.0.31"]))
        self.idx = SbIndexes()
        self.reindex()
        self.local: dict[Any, LocalDatapath] = {}
        for d in (self.ls, self.lsi):
            add_local_datapath(self.idx, d, self.ch, self.local, None)
        self.local[self.ls.uuid].localnet_port = self.rows["ln-pub"]
        self.ifaces = ["vm1", "vm2", "vm-v6", "pub-md", "vm3", "not-in-sb"]
        self.tunnels: set[str] = set()

    def add(self, row: FakeRow) -> None:
        self.rows[row.logical_port] = row

    def reindex(self) -> None:
        self.idx.rebuild({"Port_Binding": {r.uuid: r for r in self.rows.values()}})

    def plan(self) -> dict[str, GarpEntry]:
        got = garp_inputs(self.ch, self.idx, self.local, self.tunnels, self.ifaces)
        keys = [e.key for e in got.entries]
        assert len(keys) == len(set(keys))
        return {e.key: e for e in got.entries}


LR0_PEER = PeerPort(2, 1, False)      # lr0-pub on lr0
GW_PEER = PeerPort(3, 1, True)        # gw-pub on gw (always_learn_from_arp_request=false)


def test_plan_keys_macs_ips_and_injection_ports() -> None:
    t = Topo()
    got = t.plan()
    assert set(got) == {"vm1", "vm-v6", "pub-lr0-172.16.0.100", "pub-lr0-172.16.0.101",
                        "pub-gw-172.16.0.200", "pub-gw-172.16.0.201", "pub-gw-noip"}
    assert got["vm1"] == GarpEntry("vm1", "00:00:00:00:00:11", "172.16.0.11", 1, 2,
                                   (LR0_PEER, GW_PEER))
    # IPv6-only VIF: RARP, first parsable mac entry ("unknown" skipped), nothing learnt.
    assert got["vm-v6"] == GarpEntry("vm-v6", "00:00:00:00:00:13", None, 1, 4, ())
    # Distributed gateway port (patch): only entries resident here; ingress port not a peer.
    assert got["pub-lr0-172.16.0.100"] == GarpEntry(
        "pub-lr0-172.16.0.100", "00:00:00:00:01:00", "172.16.0.100", 1, 6, (GW_PEER,))
    # Gateway router (l3gateway bound here): entries need no residence condition.
    assert got["pub-gw-172.16.0.201"] == GarpEntry(
        "pub-gw-172.16.0.201", "00:00:00:00:02:00", "172.16.0.201", 1, 7, (LR0_PEER,))
    assert got["pub-gw-noip"] == GarpEntry("pub-gw-noip", "00:00:00:00:02:01", None, 1, 7, ())


def test_plan_resident_entries_follow_the_bound_port() -> None:
    t = Topo()
    t.rows["vm2"].chassis = [t.ch]          # the is_chassis_resident("vm2") entry now counts
    got = t.plan()
    assert got["pub-lr0-172.16.0.110"].mac == "00:00:00:00:01:01"
    t.rows["cr-lr0-pub"].chassis = []       # a cr port without chassis is resident nowhere
    got = t.plan()
    assert "pub-lr0-172.16.0.100" not in got and "pub-lr0-172.16.0.110" in got


def test_plan_chassisredirect_follows_the_active_ha_member() -> None:
    t = Topo()
    t.group.ha_chassis = [FakeRow(chassis=[t.ch], priority=10),
                          FakeRow(chassis=[t.ch2], priority=20)]
    t.tunnels = {"hv2"}
    assert "pub-lr0-172.16.0.100" not in t.plan()        # hv2 is active
    t.tunnels = set()                                    # no tunnel up: not active either
    assert "pub-lr0-172.16.0.100" not in t.plan()
    t.group.ha_chassis[0].priority = 30
    t.tunnels = {"hv2"}
    assert "pub-lr0-172.16.0.100" in t.plan()


def test_plan_needs_localnet_port_and_ofport() -> None:
    t = Topo()
    t.ifaces = ["vm-v6"]                    # vm1 has no interface with an ofport here
    got = t.plan()
    assert "vm1" not in got and "vm-v6" in got and "vm3" not in got
    t.local[t.ls.uuid].localnet_port = None  # no bridge mapping for the localnet
    assert t.plan() == {}


def test_plan_l3gateway_elsewhere_and_options_fallback() -> None:
    t = Topo()
    t.rows["pub-gw"].chassis = [t.ch2]
    assert not any(k.startswith("pub-gw") for k in t.plan())
    t = Topo()
    gw = t.rows["pub-gw"]
    gw.nat_addresses = []
    gw.options = {"peer": "gw-pub", "nat-addresses": "00:00:00:00:02:09 172.16.0.209"}
    got = t.plan()
    assert {k for k in got if k.startswith("pub-gw")} == {"pub-gw-172.16.0.209"}
    gw.options = {"peer": "gw-pub", "nat-addresses": "router"}   # never expanded here
    assert not any(k.startswith("pub-gw") for k in t.plan())


def test_plan_no_chassis_or_nothing_local() -> None:
    t = Topo()
    assert garp_inputs(None, t.idx, t.local, set(), t.ifaces).entries == ()
    assert garp_inputs(t.ch, t.idx, {}, set(), t.ifaces).entries == ()


def test_plan_is_comparable_for_change_detection() -> None:
    t = Topo()
    a = garp_inputs(t.ch, t.idx, t.local, set(), t.ifaces)
    b = garp_inputs(t.ch, t.idx, t.local, set(), list(reversed(t.ifaces)))
    assert a == b and hash(a) == hash(b)
    t.rows["vm1"].mac = ["00:00:00:00:00:11 172.16.0.99"]
    assert garp_inputs(t.ch, t.idx, t.local, set(), t.ifaces) != a


# ------------------------------------------------------------------ bad input
_ADDR_ALPHABET = "0123456789abcdefxX:./ -+\"()_\\is_chassis_resident\t"


_TOKENS = ["0a:00:00:00:00:01", "0x1:2:3:4:5:6", "-1:2:3:4:5:6", "10.0.0.1", "10.0.0.1/24",
           "10.0.0.1/33", "10.0.0.1/255.255.0.0", "1.2.3.4/-1", "300.1.2.3", "fd00::1",
           "fd00::1/64", "fd00::1/ffff::", "::ffff:1.2.3.4", ":::", "is_chassis_resident",
           '("cr-p")', "(", ")", '"', '"\\x"', "unknown", "/", " ", "\t"]
_ADDRESS_TEXT = (st.text(alphabet=_ADDR_ALPHABET, max_size=80) | st.text(max_size=40)
                 | st.lists(st.sampled_from(_TOKENS), max_size=8).map(" ".join)
                 | st.lists(st.sampled_from(_TOKENS), max_size=8).map("".join))


@settings(max_examples=600, deadline=None)
@given(_ADDRESS_TEXT)
def test_address_parsing_never_raises(text: str) -> None:
    r = extract_addresses_with_port(text)
    if r is not None:
        a, _port = r
        assert len(a.mac) == 17 and all(ip.count(".") == 3 for ip in a.ipv4)


@settings(max_examples=100, deadline=None)
@given(st.lists(_ADDRESS_TEXT, max_size=4), st.lists(_ADDRESS_TEXT, max_size=3))
def test_plan_with_garbage_addresses_never_raises(nat: list[str], macs: list[str]) -> None:
    t = Topo()
    t.rows["pub-gw"].nat_addresses = nat
    t.rows["pub-lr0"].nat_addresses = ["00:00:00:00:01:00 " + n for n in nat]
    t.rows["vm1"].mac = macs
    got = t.plan()
    assert all(e.mac.count(":") == 5 for e in got.values())
