"""DHCPv6 prefix delegation: client frames, ADVERTISE/REPLY parsing, the
state machine on a fake clock, the planner and the opcode-19 handler."""

from __future__ import annotations

import ipaddress
import struct
import uuid
from types import SimpleNamespace
from typing import Any

from os_ken.lib.packet import dhcp6, ethernet, ipv6, packet, udp

from controller.lflow.actions.base import OP_DHCP6_SERVER
from controller.pinctrl import prefix_delegation as PD
from controller.pinctrl import registry
from controller.pinctrl.frames import parse
from controller.pinctrl.packet_in import PacketIn
from controller.pinctrl.state import EMPTY_VIEW
from tests.pinctrl.l7_helpers import inet_csum
from tests.pinctrl.test_handlers_l3 import split_packet_out

GW_MAC = bytes.fromhex("000002010203")
GW_IP = ipaddress.IPv6Address("1001::1").packed
CMAC = bytes.fromhex("000001010203")
SRV_MAC = bytes.fromhex("505400000001")
SRV_IP = ipaddress.IPv6Address("1001::100").packed
DUID = bytes.fromhex("0001000100000001") + SRV_MAC
PREFIX = ipaddress.IPv6Address("2001:db8:1::").packed
ENTRY = PD.PdEntry("rp-sw0", GW_MAC, GW_IP, CMAC, dp_key=3, port_key=2)
INJECT = "set_field:0x3->metadata,set_field:0x2->reg14,resubmit(CONTROLLER,8)"


def opt(code: int, body: bytes) -> bytes:
    return struct.pack("!HH", code, len(body)) + body


def ia_prefix(prefix: bytes = PREFIX, plen: int = 48, plife: int = 3600,
              vlife: int = 7200) -> bytes:
    return opt(PD.OPT_IA_PREFIX, struct.pack("!IIB", plife, vlife, plen) + prefix)


def ia_pd(aid: int, subs: bytes = b"", t1: int = 1800, t2: int = 2880) -> bytes:
    return opt(PD.OPT_IA_PD, struct.pack("!III", aid, t1, t2) + subs)


def client_id(mac: bytes = CMAC) -> bytes:
    return opt(PD.OPT_CLIENT_ID, b"\x00\x03\x00\x01" + mac)


def server_frame(mtype: int, options: bytes, dst_mac: bytes = GW_MAC,
                 dst_ip: bytes = GW_IP, xid: int = 0x123456) -> bytes:
    """What a DHCPv6 server sends the gateway port (547 -> 546)."""
    body = struct.pack("!I", mtype << 24 | xid) + options
    u = struct.pack("!HHHH", 547, 546, 8 + len(body), 0) + body
    ck = inet_csum(SRV_IP + dst_ip + struct.pack("!IxxxB", len(u), 17) + u)
    u = u[:6] + struct.pack("!H", ck) + u[8:]
    return (dst_mac + SRV_MAC + b"\x86\xdd" + struct.pack("!IHBB", 0x60000000, len(u), 17, 64)
            + SRV_IP + dst_ip + u)


def check_udp6(frame: bytes) -> None:
    l3 = 14 if frame[12:14] == b"\x86\xdd" else 18
    plen = struct.unpack_from("!H", frame, l3 + 4)[0]
    u = frame[l3 + 40:]
    assert len(u) == plen == struct.unpack_from("!H", u, 4)[0]
    pseudo = frame[l3 + 8:l3 + 40] + struct.pack("!IxxxB", plen, 17)
    assert inet_csum(pseudo + u) == 0


def pin(frame: bytes, dp: int = 4, port: int = 1) -> PacketIn:
    return PacketIn(packet=frame, table_id=12, cookie=0, reason=1,
                    metadata=(("metadata", dp, None), ("reg14", port, None)),
                    userdata=struct.pack("!I4x", OP_DHCP6_SERVER), continuation=None,
                    properties=b"")


class Clock:
    def __init__(self) -> None:
        self.draws: list[int] = []
        self.aids = iter(range(0x1111, 0x10000, 0x1111))

    def randrange(self, n: int) -> int:
        assert n == 3000
        self.draws.append(n)
        return 1000

    def rand16(self) -> int:
        return next(self.aids)


def machine() -> tuple[PD.PrefixDelegation, Clock, list[str]]:
    c = Clock()
    woken: list[str] = []
    pd = PD.PrefixDelegation(notify_service=lambda: woken.append("service"),
                             notify_main=lambda: woken.append("main"),
                             randrange=c.randrange, rand16=c.rand16)
    return pd, c, woken


# ---------------------------------------------------------------- frames
def test_solicit_bytes() -> None:
    frame = PD.client_frame(PD.MSG_SOLICIT, ENTRY, 0xBEEF, bytes(16), 0, b"", bytes(16),
                            bytes(6))
    dhcp = (b"\x01\x00\x00\x00" + client_id()
            + struct.pack("!HHIII", 25, 12, 0xBEEF, 0xFFFFFFFF, 0xFFFFFFFF))
    all_dhcp = ipaddress.IPv6Address("ff02::1:2").packed
    assert frame[:14] == bytes.fromhex("333300010002") + GW_MAC + b"\x86\xdd"
    assert frame[14:22] == struct.pack("!IHBB", 0x60000000, 8 + len(dhcp), 17, 255)
    assert frame[22:54] == GW_IP + all_dhcp
    assert frame[54:60] == struct.pack("!HHH", 546, 547, 8 + len(dhcp))
    assert frame[62:] == dhcp
    check_udp6(frame)
    # an independent decoder reads the same message
    pkt = packet.Packet(frame)
    d = pkt.get_protocol(dhcp6.dhcp6)
    assert pkt.get_protocol(udp.udp).dst_port == 547
    assert d.msg_type == 1 and d.transaction_id == 0
    codes = [o.code for o in d.options.option_list]
    assert codes == [1, 25]


def test_renew_is_unicast_with_server_id_and_prefix() -> None:
    frame = PD.client_frame(PD.MSG_RENEW, ENTRY, 7, PREFIX, 48, DUID, SRV_IP, SRV_MAC)
    dhcp = (b"\x05\x00\x00\x00" + client_id() + opt(2, DUID)
            + struct.pack("!HHIII", 25, 41, 7, 0xFFFFFFFF, 0xFFFFFFFF)
            + struct.pack("!HHIIB", 26, 25, 0xFFFFFFFF, 0xFFFFFFFF, 48) + PREFIX)
    assert frame[:12] == SRV_MAC + GW_MAC
    assert frame[22:54] == GW_IP + SRV_IP
    assert frame[62:] == dhcp
    check_udp6(frame)
    pkt = packet.Packet(frame)
    assert pkt.get_protocol(ethernet.ethernet).dst == "50:54:00:00:00:01"
    assert pkt.get_protocol(ipv6.ipv6).hop_limit == 255


def test_advertise_becomes_request_options() -> None:
    status_ok = opt(PD.OPT_STATUS, b"\x00\x00success")
    pref = opt(7, b"\xff")
    subs = status_ok + ia_prefix() + ia_prefix(plen=56)
    adv = server_frame(PD.MSG_ADVERTISE, client_id() + opt(2, DUID) + pref + ia_pd(9, subs))
    got = PD.parse_advertise(adv, parse(adv))
    assert got is not None
    aid, options = got
    assert aid == 9
    kept = ia_prefix() + ia_prefix(plen=56)
    assert options == (client_id() + opt(2, DUID)
                       + struct.pack("!HHIII", 25, 12 + len(kept), 9, 1800, 2880) + kept)
    req = PD.request_frame(adv, parse(adv), options)
    assert req[:12] == SRV_MAC + GW_MAC
    assert req[22:54] == GW_IP + SRV_IP
    assert req[54:58] == struct.pack("!HH", 546, 547)
    assert req[62:66] == b"\x03\x00\x00\x00" and req[66:] == options
    check_udp6(req)


def test_advertise_rejections() -> None:
    def adv(*opts: bytes) -> bytes:
        return server_frame(PD.MSG_ADVERTISE, client_id() + b"".join(opts))
    for frame in (adv(ia_pd(1, ia_prefix(), t1=10, t2=5)),
                  adv(ia_pd(1, ia_prefix(plife=10, vlife=5))),
                  adv(ia_pd(1, ia_prefix() + opt(13, b"\x00\x06no prefix")))):
        assert PD.parse_advertise(frame, parse(frame)) is None
    # T2 = 0 allows any T1; a top-level status is not looked at
    ok = adv(ia_pd(1, ia_prefix(), t1=10, t2=0), opt(13, b"\x00\x02"))
    assert PD.parse_advertise(ok, parse(ok)) is not None


def test_request_copies_the_vlan_tag() -> None:
    adv = server_frame(PD.MSG_ADVERTISE, client_id() + ia_pd(3, ia_prefix()))
    tagged = adv[:12] + struct.pack("!HH", 0x8100, 0x1000 | 42) + adv[12:]
    h = parse(tagged)
    got = PD.parse_advertise(tagged, h)
    assert got is not None
    req = PD.request_frame(tagged, h, got[1])
    assert req[12:16] == struct.pack("!HH", 0x8100, 42)
    check_udp6(req)


def test_reply_parsing() -> None:
    rep = server_frame(PD.MSG_REPLY, client_id() + opt(2, DUID) + ia_pd(5, ia_prefix()))
    r = PD.parse_reply(rep, parse(rep))
    assert r == PD.Reply(5, PREFIX, 48, 1800, 2880, 3600, 7200, DUID)
    big = server_frame(PD.MSG_REPLY, ia_pd(5, ia_prefix(plen=200)))
    r2 = PD.parse_reply(big, parse(big))
    assert r2 is not None and r2.plen == 200 - 256          # C keeps it in a signed char
    for bad in (ia_pd(5, ia_prefix() + opt(13, b"\x00\x06")),       # NoPrefixAvail
                ia_pd(5, ia_prefix(), t1=9, t2=3),                   # sub-options skipped
                ia_pd(5, ia_prefix(plife=9, vlife=3)),
                ia_pd(5)):
        f = server_frame(PD.MSG_REPLY, client_id() + bad)
        assert PD.parse_reply(f, parse(f)) is None, bad.hex()
    long_duid = b"\x00\x02" + bytes(200)
    f = server_frame(PD.MSG_REPLY, opt(2, long_duid) + ia_pd(5, ia_prefix()))
    r3 = PD.parse_reply(f, parse(f))
    assert r3 is not None and r3.server_duid == long_duid[:130]


# ---------------------------------------------------------------- state machine
def test_full_exchange_on_a_fake_clock() -> None:
    pd, clock, woken = machine()
    inputs = PD.PdInputs((ENTRY,))
    assert pd.update(inputs, 10_000, True) == []
    assert woken == ["service"]
    assert pd.next_wake_ms() == 11_000
    assert pd.run(10_999) == []
    [msg] = pd.run(11_000)
    actions, solicit = split_packet_out(msg)
    assert actions == INJECT
    assert solicit == PD.client_frame(PD.MSG_SOLICIT, ENTRY, 0x1111, bytes(16), 0, b"",
                                      bytes(16), bytes(6))
    assert pd.next_wake_ms() == 12_000
    # the re-sent SOLICIT draws a fresh IAID; an ADVERTISE for the old one is ignored
    [msg2] = pd.run(12_000)
    assert struct.unpack_from("!I", split_packet_out(msg2)[1], 62 + 18 + 4)[0] == 0x2222
    stale = server_frame(PD.MSG_ADVERTISE, client_id() + opt(2, DUID) + ia_pd(0x1111,
                                                                              ia_prefix()))
    assert pd.handle(pin(stale)).messages == []
    assert pd.stats["no_state"] == 1
    adv = server_frame(PD.MSG_ADVERTISE, client_id() + opt(2, DUID) + ia_pd(0x2222,
                                                                            ia_prefix()))
    out = pd.handle(pin(adv))
    [req] = out.messages
    actions, frame = split_packet_out(req)
    assert actions == "set_field:0x4->metadata,set_field:0x1->reg15,resubmit(CONTROLLER,37)"
    assert frame[62] == PD.MSG_REQUEST
    assert pd.snapshot()["rp-sw0"][0] == "REQUEST"
    # REQUEST alone arms nothing and sends nothing (C: should_inject is false)
    assert pd.next_wake_ms() is None and pd.run(20_000) == []
    rep = server_frame(PD.MSG_REPLY, client_id() + opt(2, DUID)
                       + ia_pd(0x2222, ia_prefix(), t1=10, t2=20))
    pd.handle(pin(rep))
    assert pd.snapshot()["rp-sw0"] == ("PENDING", 0x2222, "2001:db8:1::/48")
    assert woken[-1] == "main"
    assert pd.update(inputs, 21_000, False) == []           # no transaction: stays PENDING
    assert pd.update(inputs, 21_000, True) == [PD.PdWrite("rp-sw0", "8738:2001:db8:1::/48")]
    assert pd.update(inputs, 21_001, True) == []
    assert pd.snapshot()["rp-sw0"][0] == "DONE"
    assert pd.next_wake_ms() == 21_000 + 10_000 + 1
    assert pd.run(31_000) == []                              # not past T1 yet
    [renew] = pd.run(31_001)
    frame = split_packet_out(renew)[1]
    assert frame == PD.client_frame(PD.MSG_RENEW, ENTRY, 0x2222, PREFIX, 48, DUID, SRV_IP,
                                    SRV_MAC)
    assert pd.snapshot()["rp-sw0"][0] == "RENEW"
    [rebind] = pd.run(41_001)                                # past T2: server forgotten
    frame = split_packet_out(rebind)[1]
    assert frame == PD.client_frame(PD.MSG_REBIND, ENTRY, 0x2222, PREFIX, 48, b"", SRV_IP,
                                    SRV_MAC)
    assert frame[:6] == bytes.fromhex("333300010002")
    [again] = pd.run(21_000 + 7_200_000 + 1)                 # past the valid lifetime
    frame = split_packet_out(again)[1]
    assert frame[62] == PD.MSG_SOLICIT and PREFIX in frame   # the prefix is still asked for


def test_infinite_lifetimes_wrap_as_in_c() -> None:
    pd, _c, _w = machine()
    pd.update(PD.PdInputs((ENTRY,)), 0, True)
    pd.run(1000)
    adv = server_frame(PD.MSG_ADVERTISE, client_id() + ia_pd(0x1111, ia_prefix()))
    pd.handle(pin(adv))
    rep = server_frame(PD.MSG_REPLY, ia_pd(0x1111, ia_prefix(plife=0xFFFFFFFF,
                                                             vlife=0xFFFFFFFF),
                                           t1=0xFFFFFFFF, t2=0xFFFFFFFF))
    pd.handle(pin(rep))
    pd.update(PD.PdInputs((ENTRY,)), 5000, True)
    assert pd.next_wake_ms() == 5000 + (0xFFFFFFFF * 1000 & 0xFFFFFFFF) + 1


def test_seeded_state_keeps_iaid_and_prefix() -> None:
    pd, _c, _w = machine()
    e = PD.PdEntry("rp-sw0", GW_MAC, GW_IP, CMAC, 3, 2, pd_list="77:2001:db8:1::/48")
    pd.update(PD.PdInputs((e,)), 0, True)
    [msg] = pd.run(1000)
    assert split_packet_out(msg)[1] == PD.client_frame(PD.MSG_SOLICIT, e, 77, PREFIX, 48, b"",
                                                       bytes(16), bytes(6))
    assert PD.seed("junk") is None and PD.seed("1:zz::/3") is None
    assert PD.seed("1: fd00::/3") is None          # %[ does not skip blanks
    assert PD.seed(" 1:fd00::/ 3") is not None     # %u and %d do
    assert PD.seed("5:fd00::/-1") == (5, ipaddress.IPv6Address("fd00::").packed, -1)


def test_drop_and_stale_sweep() -> None:
    pd, _c, _w = machine()
    pd.update(PD.PdInputs((ENTRY,)), 0, True)
    pd.update(PD.PdInputs(drop=frozenset({"rp-sw0"})), 10, True)
    assert pd.snapshot() == {}
    pd.update(PD.PdInputs((ENTRY,)), 0, True)
    pd.update(PD.PdInputs(), 180_000, True)
    assert "rp-sw0" in pd.snapshot()
    pd.update(PD.PdInputs(), 180_001, True)
    assert pd.snapshot() == {}


# ---------------------------------------------------------------- planner
def _dp(key: int) -> SimpleNamespace:
    return SimpleNamespace(uuid=uuid.UUID(int=key), tunnel_key=key)


CH = SimpleNamespace(uuid=uuid.UUID(int=100), name="hv1")
OTHER = SimpleNamespace(uuid=uuid.UUID(int=101), name="hv2")


def _pb(name: str, dp: Any, key: int, mac: list[str], options: dict[str, str],
        type_: str = "patch", chassis: Any = None) -> SimpleNamespace:
    return SimpleNamespace(logical_port=name, datapath=dp, tunnel_key=key, mac=mac,
                           options=options, type=type_, chassis=[chassis] if chassis else [],
                           ha_chassis_group=[], uuid=uuid.uuid4())


def _world(gw_type: str = "l3gateway", gw_chassis: Any = CH,
           gw_mac: str = "00:00:02:01:02:03 1001::1/64",
           sw0_options: dict[str, str] | None = None) -> tuple[list[Any], Any, dict[Any, Any]]:
    rdp, pdp = _dp(1), _dp(2)
    gw = _pb("rp-public", rdp, 1, [gw_mac],
             {"peer": "public-rp", "ipv6_prefix_delegation": "true", "ipv6_prefix": "true"},
             gw_type, gw_chassis)
    sw0 = _pb("rp-sw0", rdp, 2, ["00:00:01:01:02:03 fd11::1/64"],
              sw0_options if sw0_options is not None else
              {"peer": "sw0-rp", "ipv6_prefix": "true", "ipv6_ra_pd_list": "3:fd99::/60"})
    peer = _pb("public-rp", pdp, 7, [], {"peer": "rp-public"})
    pbs = [gw, sw0, peer]
    ld = SimpleNamespace(uuid=rdp.uuid, peer_ports=[(gw, peer), (sw0, object())])
    return pbs, {p.logical_port: p for p in pbs}.get, {rdp.uuid: ld}


def test_planner_l3gateway_bound_here() -> None:
    pbs, by_name, lds = _world()
    got = PD.pd_inputs(pbs, CH, by_name, lds)
    assert [e.port for e in got.entries] == ["rp-public", "rp-sw0"]
    e = got.entries[1]
    assert (e.ea, e.ipv6, e.cmac, e.dp_key, e.port_key, e.pd_list) == (
        GW_MAC, GW_IP, CMAC, 2, 7, "3:fd99::/60")
    assert PD.pd_inputs(pbs, OTHER, by_name, lds).entries == ()
    assert PD.pd_inputs(pbs, None, by_name, lds).entries == ()
    assert PD.pd_inputs(pbs, CH, by_name, {}).entries == ()


def test_planner_chassisredirect_and_lla_fallback() -> None:
    pbs, by_name, lds = _world(gw_type="patch", gw_chassis=None, gw_mac="00:00:02:01:02:03")
    assert PD.pd_inputs(pbs, CH, by_name, lds).entries == ()
    cr = _pb("cr-rp-public", pbs[0].datapath, 9, [], {}, "chassisredirect", CH)
    cr.ha_chassis_group = []
    names = {p.logical_port: p for p in pbs + [cr]}
    # a chassisredirect port without an HA group is not active anywhere
    assert PD.pd_inputs(pbs, CH, names.get, lds).entries == ()
    cr.type = "l3gateway"          # bound here, not a chassisredirect: resident
    got = PD.pd_inputs(pbs, CH, names.get, lds)
    assert got.entries and got.entries[0].ipv6 == ipaddress.IPv6Address(
        "fe80::200:2ff:fe01:203").packed


def test_planner_lists_ports_without_the_option_for_removal() -> None:
    pbs, by_name, lds = _world(sw0_options={"peer": "sw0-rp"})
    got = PD.pd_inputs(pbs, CH, by_name, lds)
    assert [e.port for e in got.entries] == ["rp-public"] and got.drop == {"rp-sw0"}


def test_write_pd_lists_rewrites_the_options_map() -> None:
    pbs, by_name, _ = _world()
    n = PD.write_pd_lists([PD.PdWrite("rp-sw0", "1:fd00::/60"), PD.PdWrite("gone", "x")],
                          by_name)
    assert n == 1
    assert pbs[1].options == {"peer": "sw0-rp", "ipv6_prefix": "true",
                              "ipv6_ra_pd_list": "1:fd00::/60"}


# ---------------------------------------------------------------- handler
def test_opcode_19_dispatch() -> None:
    pd, _c, _w = machine()
    PD.attach(pd)
    pd.update(PD.PdInputs((ENTRY,)), 0, True)
    pd.run(1000)
    adv = server_frame(PD.MSG_ADVERTISE, client_id() + ia_pd(0x1111, ia_prefix()))
    out = registry.dispatch(pin(adv), EMPTY_VIEW)
    assert out.drop is None and len(out.messages) == 1
    # other message types, other protocols, another address: nothing, no drop
    for frame in (server_frame(PD.MSG_SOLICIT, b""), adv[:20] + b"\x3a" + adv[21:],
                  server_frame(PD.MSG_ADVERTISE, ia_pd(0x1111, ia_prefix()),
                               dst_mac=SRV_MAC)):
        o = registry.dispatch(pin(frame), EMPTY_VIEW)
        assert o.drop is None and o.messages == [] and not o.intents
    bad = server_frame(PD.MSG_ADVERTISE, ia_pd(0x1111, ia_prefix(plife=2, vlife=1)))
    registry.dispatch(pin(bad), EMPTY_VIEW)
    registry.dispatch(pin(server_frame(PD.MSG_REPLY, ia_pd(0x1111))), EMPTY_VIEW)
    assert pd.stats == {"advertise_rejected": 1, "reply_rejected": 1, "no_state": 1}


def test_another_injecting_service_makes_request_state_resolicit() -> None:
    busy = [False]
    c = Clock()
    pd = PD.PrefixDelegation(randrange=c.randrange, rand16=c.rand16,
                             also_inject=lambda: busy[0])
    pd.update(PD.PdInputs((ENTRY,)), 0, True)
    pd.run(1000)
    adv = server_frame(PD.MSG_ADVERTISE, client_id() + ia_pd(0x1111, ia_prefix()))
    pd.handle(pin(adv))
    assert pd.run(5000) == []                  # REQUEST alone: nothing
    busy[0] = True                             # e.g. a periodic RA is configured
    [msg] = pd.run(5000)                       # C's may_inject_pkts: a SOLICIT again
    frame = split_packet_out(msg)[1]
    assert frame[62] == PD.MSG_SOLICIT and _iaid_of(frame) == 0x2222
    assert pd.snapshot()["rp-sw0"][0] == "REQUEST"


def _iaid_of(frame: bytes) -> int:
    return int(struct.unpack_from("!I", frame, 62 + 4 + 14 + 4)[0])


def test_write_pd_lists_skips_an_unchanged_value() -> None:
    pbs, by_name, _ = _world()
    assert PD.write_pd_lists([PD.PdWrite("rp-sw0", "3:fd99::/60")], by_name) == 0
