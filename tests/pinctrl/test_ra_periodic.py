"""Periodic IPv6 RAs (controller/pinctrl/ra.py): config parsing, the frame
byte for byte, the packet-out and the schedule on a fake clock.

Expected frames are assembled option by option the way the upstream
"IPv6 periodic RA" test (tests/ovn.at, 23.03.1) describes them; its router
port is 00:00:00:00:00:01 with link-local source fe80::200:ff:fe00:1.
"""

from __future__ import annotations

import shutil
import subprocess
from types import SimpleNamespace
from typing import Any

import pytest

from controller.pinctrl.frames import csum
from controller.pinctrl.ra import RaInputs, RaSender, extract_ip_addresses, ra_config, ra_inputs

HAVE_OFCTL = shutil.which("ovs-ofctl") is not None
SRC_MAC = "000000000001"
SRC_IP = "fe80000000000000020000fffe000001"
DST_IP = "ff020000000000000000000000000001"
AEF0 = ("40", "aef00000000000000000000000000000")
FD0F = ("30", "fd0f0000000000000000000000000000")
DNS = "aef00000000000000000000000000011"
DNSSL = "02616102626202636300000000000000"                 # aa.bb.cc
ROUTES = ("18023008ffffffffaef1000000000000"                # HIGH-aef1::11/48
          "18036018ffffffffaef20000000000000000000000000000")  # LOW-aef2::11/96


def _opts(**kw: str) -> dict[str, str]:
    base = {"ipv6_ra_send_periodic": "true", "ipv6_ra_address_mode": "slaac",
            "ipv6_ra_max_interval": "4", "ipv6_ra_min_interval": "3",
            "ipv6_ra_prefixes": "aef0::/64", "ipv6_ra_src_eth": "00:00:00:00:00:01",
            "ipv6_ra_src_addr": "fe80::200:ff:fe00:1", "ipv6_ra_prf": "MEDIUM"}
    base.update(kw)
    return {k: v for k, v in base.items() if v != "-"}


def _expected(mtu: str, mo: str, la: str, prefixes: list[tuple[str, str]], rdnss: str = "",
              dnssl: str = "", routes: str = "") -> bytes:
    ra = "ff" + mo + "ffff" + "00000000" + "00000000" + "0101" + SRC_MAC
    if mtu:
        ra += "05010000" + mtu
    for plen, net in prefixes:
        ra += "0304" + plen + la + "ffffffff" "ffffffff" "00000000" + net
    if rdnss:
        ra += "19030000ffffffff" + rdnss
    if dnssl:
        ra += "1f030000ffffffff" + dnssl
    ra += routes
    icmp = bytes.fromhex("86000000" + ra)
    pseudo = bytes.fromhex(SRC_IP + DST_IP) + len(icmp).to_bytes(4, "big") + b"\0\0\0\x3a"
    icmp = icmp[:2] + csum(pseudo + icmp).to_bytes(2, "big") + icmp[4:]
    return (bytes.fromhex("333300000001" + SRC_MAC + "86dd" + "60000000")
            + len(icmp).to_bytes(2, "big") + bytes.fromhex("3aff" + SRC_IP + DST_IP) + icmp)


def _frame(**kw: str) -> bytes:
    c = ra_config(_opts(**kw))
    assert c is not None
    return c.frame


# ------------------------------------------------------------------ frames
def test_baseline_slaac_without_mtu() -> None:
    assert _frame() == _expected("", "00", "c0", [AEF0])


def test_mtu_and_two_prefixes() -> None:
    assert _frame(ipv6_ra_mtu="1500", ipv6_ra_prefixes="aef0::/64 fd0f::/48") == \
        _expected("000005dc", "00", "c0", [AEF0, FD0F])


@pytest.mark.parametrize("prf,flags", [("LOW", "18"), ("HIGH", "08"), ("MEDIUM", "00"),
                                       ("bogus", "00"), ("-", "00")])
def test_router_preference_in_flags(prf: str, flags: str) -> None:
    assert _frame(ipv6_ra_prf=prf) == _expected("", flags, "c0", [AEF0])


def test_all_options_in_c_order() -> None:
    f = _frame(ipv6_ra_mtu="1500", ipv6_ra_prefixes="aef0::/64 fd0f::/48", ipv6_ra_prf="HIGH",
               ipv6_ra_rdnss="aef0::11", ipv6_ra_dnssl="aa.bb.cc",
               ipv6_ra_route_info="HIGH-aef1::11/48,LOW-aef2::11/96")
    assert f == _expected("000005dc", "08", "c0", [AEF0, FD0F], DNS, DNSSL, ROUTES)


@pytest.mark.parametrize("mode,mo,la", [("dhcpv6_stateful", "88", "80"),
                                        ("dhcpv6_stateless", "48", "c0")])
def test_address_modes(mode: str, mo: str, la: str) -> None:
    f = _frame(ipv6_ra_address_mode=mode, ipv6_ra_prf="HIGH", ipv6_ra_mtu="1500",
               ipv6_ra_prefixes="aef0::/64 fd0f::/48", ipv6_ra_rdnss="aef0::11",
               ipv6_ra_dnssl="aa.bb.cc", ipv6_ra_route_info="HIGH-aef1::11/48,LOW-aef2::11/96")
    assert f == _expected("000005dc", mo, la, [AEF0, FD0F], DNS, DNSSL, ROUTES)


def test_ipv4_prefixes_are_ignored_and_parsing_stops_at_garbage() -> None:
    assert _frame(ipv6_ra_prefixes="10.0.0.0/24 aef0::/64 junk fd0f::/48") == \
        _expected("", "00", "c0", [AEF0])
    assert extract_ip_addresses("10.0.0.1") == (1, [])


def test_dnssl_over_255_bytes_is_left_out() -> None:
    long_list = ",".join(["x" * 60 + ".example"] * 4)
    assert _frame(ipv6_ra_dnssl=long_list) == _expected("", "00", "c0", [AEF0])


def test_dnssl_two_domains_padded_to_8() -> None:
    # "a.b,cd": 8 + (3+2) + (2+2) = 17 -> 24 bytes, len 3
    assert _frame(ipv6_ra_dnssl="a.b,cd") == _expected(
        "", "00", "c0", [AEF0], dnssl="01610162000263640000000000000000")


def test_route_info_partial_failure_keeps_bytes_but_not_length() -> None:
    good = "18023008ffffffffaef1000000000000"
    f = _frame(ipv6_ra_route_info="HIGH-aef1::/48,LOW-nonsense")
    base = _expected("", "00", "c0", [AEF0])
    assert f == base + bytes.fromhex(good)             # appended, plen/checksum unchanged


def test_route_info_prefix_length_zero_and_128() -> None:
    f = _frame(ipv6_ra_route_info="LOW-::/0,x-aef3::1/128")
    routes = "18010018ffffffff" + "18038000ffffffff" + "aef30000000000000000000000000001"
    assert f == _expected("", "00", "c0", [AEF0], routes=routes)


@pytest.mark.parametrize("bad", [
    {"ipv6_ra_address_mode": "-"},
    {"ipv6_ra_address_mode": "stateful"},
    {"ipv6_ra_prefixes": ""},                          # northd's value with only an LLA
    {"ipv6_ra_src_eth": "-"},
    {"ipv6_ra_src_eth": "00:00:00:00:01"},
    {"ipv6_ra_src_addr": "-"},
    {"ipv6_ra_src_addr": "fe80::zz"},
    {"ipv6_ra_rdnss": "1.2.3.4"},
])
def test_invalid_config_skips_the_port(bad: dict[str, str]) -> None:
    assert ra_config(_opts(**bad)) is None


def test_intervals_and_defaults() -> None:
    c = ra_config(_opts(ipv6_ra_max_interval="-", ipv6_ra_min_interval="-"))
    assert c is not None and (c.min_interval, c.max_interval) == (200, 600)
    c = ra_config(_opts(ipv6_ra_max_interval="8", ipv6_ra_min_interval="-"))
    assert c is not None and (c.min_interval, c.max_interval) == (6, 8)
    c = ra_config(_opts(ipv6_ra_max_interval="x", ipv6_ra_min_interval="5"))
    assert c is not None and (c.min_interval, c.max_interval) == (5, 600)
    c = ra_config(_opts(ipv6_ra_max_interval="1_000", ipv6_ra_min_interval="5 "))
    assert c is not None and (c.min_interval, c.max_interval) == (200, 600)   # C rejects both
    c = ra_config(_opts(ipv6_ra_max_interval=" +30", ipv6_ra_min_interval="-"))
    assert c is not None and (c.min_interval, c.max_interval) == (10, 30)


# ------------------------------------------------------------------ planner
def _pb(name: str, options: dict[str, str], dp_key: int = 1, key: int = 1) -> Any:
    return SimpleNamespace(logical_port=name, options=options, tunnel_key=key,
                           datapath=SimpleNamespace(tunnel_key=dp_key))


def _world() -> tuple[list[Any], dict[str, Any]]:
    lrp = _pb("ro-sw", _opts(peer="sw-ro"), dp_key=2, key=1)
    lsp = _pb("sw-ro", {"router-port": "ro-sw"}, dp_key=7, key=3)
    off = _pb("ro-off", _opts(peer="sw-ro", ipv6_ra_send_periodic="false"), 2, 2)
    nopeer = _pb("ro-nopeer", _opts(peer="missing"), 2, 3)
    bad = _pb("ro-bad", _opts(peer="sw-ro", ipv6_ra_address_mode="-"), 2, 4)
    pbs = [lrp, lsp, off, nopeer, bad]
    return pbs, {p.logical_port: p for p in pbs}


def test_inputs_inject_into_the_peer_switch_port() -> None:
    pbs, by_name = _world()
    inputs = ra_inputs(pbs, by_name.get)
    assert [(e.port, e.dp_key, e.port_key) for e in inputs.entries] == [("ro-sw", 7, 3)]
    assert inputs.entries[0].config.frame == _expected("", "00", "c0", [AEF0])


def test_send_periodic_is_case_insensitive() -> None:
    lrp = _pb("ro-sw", _opts(peer="sw-ro", ipv6_ra_send_periodic="TRUE"))
    lsp = _pb("sw-ro", {})
    assert len(ra_inputs([lrp, lsp], {"ro-sw": lrp, "sw-ro": lsp}.get).entries) == 1


# ------------------------------------------------------------------ packet-out
def _po_parts(po: bytes) -> tuple[bytes, bytes]:
    assert po[0] == 6 and po[1] == 13 and int.from_bytes(po[2:4], "big") == len(po)
    assert po[8:12] == b"\xff\xff\xff\xff"
    alen = int.from_bytes(po[12:14], "big")
    assert po[16:32] == bytes.fromhex("0001000c80000004fffffffd00000000")
    return po[32:32 + alen], po[32 + alen:]


class FakeRandom:
    def __init__(self, values: list[int]) -> None:
        self.values = values
        self.calls: list[int] = []

    def __call__(self, n: int) -> int:
        self.calls.append(n)
        v = self.values.pop(0)
        assert 0 <= v < n
        return v


def _sender(values: list[int]) -> tuple[RaSender, FakeRandom, RaInputs]:
    pbs, by_name = _world()
    rnd = FakeRandom(values)
    s = RaSender(randrange=rnd)
    return s, rnd, ra_inputs(pbs, by_name.get)


def test_packet_out_sets_peer_keys_local_only_and_resubmits_to_8() -> None:
    s, _, inputs = _sender([0, 0])
    s.update(inputs, 0)
    (po,) = s.run(3000)
    acts, data = _po_parts(po)
    assert data == inputs.entries[0].config.frame
    assert acts == bytes.fromhex(
        "0019001080000408" "0000000000000007"          # set_field:7->metadata
        "001900100001" "1c04" "0000000300000000"       # set_field:3->reg14
        "001900100001" "1508" "00000010" "00000010"   # set_field:0x10/0x10->reg10
        "ffff001000002320" "000e" "fffd" "08000000")   # resubmit(CONTROLLER,8)


@pytest.mark.skipif(not HAVE_OFCTL, reason="ovs-ofctl not installed")
def test_packet_out_as_ovs_prints_it() -> None:
    s, _, inputs = _sender([0, 0])
    s.update(inputs, 0)
    (po,) = s.run(3000)
    out = subprocess.run(["ovs-ofctl", "ofp-print", po.hex()], capture_output=True, text=True,
                         check=True).stdout
    assert ("in_port=CONTROLLER actions=set_field:0x7->metadata,set_field:0x3->reg14,"
            "set_field:0x10/0x10->reg10,resubmit(CONTROLLER,8)") in out


# ------------------------------------------------------------------ schedule
def test_first_send_after_min_plus_random_then_from_each_send() -> None:
    s, rnd, inputs = _sender([250, 999, 10])
    s.update(inputs, 10_000)
    assert rnd.calls == [1000]                        # (max - min) * 1000 ms
    assert s.next_wake_ms() == 13_250
    assert s.run(13_249) == []
    assert len(s.run(13_250)) == 1
    assert s.next_wake_ms() == 13_250 + 3000 + 999
    assert s.run(17_000) == []
    assert len(s.run(17_500)) == 1                    # late send: next counts from it
    assert s.next_wake_ms() == 17_500 + 3000 + 10


def test_unchanged_interval_keeps_schedule_changed_interval_reschedules() -> None:
    s, rnd, inputs = _sender([100, 500])
    s.update(inputs, 0)
    assert s.next_wake_ms() == 3100
    pbs, by_name = _world()
    by_name["ro-sw"].options["ipv6_ra_mtu"] = "1500"      # config change, same intervals
    s.update(ra_inputs(pbs, by_name.get), 1000)
    assert s.next_wake_ms() == 3100 and len(rnd.calls) == 1
    (po,) = s.run(3100)
    assert _po_parts(po)[1] == _expected("000005dc", "00", "c0", [AEF0])  # new frame used
    rnd.values.append(7)
    by_name["ro-sw"].options["ipv6_ra_max_interval"] = "12"
    by_name["ro-sw"].options["ipv6_ra_min_interval"] = "4"
    s.update(ra_inputs(pbs, by_name.get), 4000)
    assert rnd.calls[-1] == 8000 and s.next_wake_ms() == 4000 + 4000 + 7


def test_removed_port_stops_and_new_port_notifies() -> None:
    woken: list[int] = []
    pbs, by_name = _world()
    s = RaSender(notify=lambda: woken.append(1), randrange=lambda n: 0)
    s.update(ra_inputs(pbs, by_name.get), 0)
    assert woken == [1] and s.ports() == ["ro-sw"]
    s.update(ra_inputs(pbs, by_name.get), 0)          # same inputs: nothing
    assert woken == [1]
    s.update(RaInputs(), 1000)
    assert s.ports() == [] and s.next_wake_ms() is None and s.run(10**9) == []
    assert woken == [1]


def test_send_times_stay_within_min_max() -> None:
    pbs, by_name = _world()
    s = RaSender()                                    # the real random source
    s.update(ra_inputs(pbs, by_name.get), 0)
    now, sends = 0, []
    while len(sends) < 50:
        due = s.next_wake_ms()
        assert due is not None
        now = due
        assert len(s.run(now)) == 1
        sends.append(now)
    gaps = [b - a for a, b in zip(sends, sends[1:])]
    assert all(3000 <= g < 4000 for g in gaps)
    assert len(set(gaps)) > 1


# ------------------------------------------------------------------ the facade
def test_facade_plans_once_a_chassis_exists_and_on_port_binding_changes() -> None:
    from controller.diag.coverage import Coverage
    from controller.pinctrl.agent import Pinctrl
    from tests.pinctrl.test_core_agent import FakeService, fake_sb

    pbs, by_name = _world()
    tables: dict[str, dict] = {"MAC_Binding": {}, "FDB": {}, "Controller_Event": {},
                               "Port_Binding": {i: pb for i, pb in enumerate(pbs)}}
    index = SimpleNamespace(dp_by_key={}, pb_by_key={}, pb_by_name=by_name,
                            pbs_on_datapath=lambda u: [])
    svc = FakeService()
    p = Pinctrl(Coverage(), threaded=False, service=svc)
    assert p.ra in svc.periodic
    p.run("unix:x", fake_sb(None, tables), index, None, {})
    assert p.ra.ports() == []                          # no chassis yet: nothing to send
    chassis = SimpleNamespace(uuid=1, name="hv1")
    p.run("unix:x", fake_sb(None, tables), index, chassis, {})
    assert p.ra.ports() == ["ro-sw"]                   # the chassis appearing replans
    del tables["Port_Binding"][0]
    p.run("unix:x", fake_sb(None, tables), index, chassis, {})
    assert p.ra.ports() == ["ro-sw"]                   # no tracked change: no replan
    sb = fake_sb(None, tables)
    sb.tracker.reset = True
    p.run("unix:x", sb, index, chassis, {})
    assert p.ra.ports() == []
