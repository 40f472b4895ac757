"""Handlers of PUT_ARP, PUT_ND, PUT_FDB, BIND_VPORT, EVENT, LOG, ACTIVATION_STRATEGY_RARP."""

from __future__ import annotations

import struct

from hypothesis import given, settings, strategies as st

import controller.pinctrl  # noqa: F401  (registers the handlers)
from controller.lflow.actions import base as ab
from controller.pinctrl import registry
from controller.pinctrl.handlers_state import flow_format, ipv6_format_mapped
from controller.pinctrl.outcome import (
    ActivationIntent, EventIntent, FdbIntent, LogIntent, MacBindingIntent, Outcome, VportIntent)
from controller.pinctrl.packet_in import PacketIn, decode_packet_in2, encode_packet_in2
from controller.pinctrl.state import EMPTY_VIEW

MAC_VM = bytes.fromhex("505400000003")
MAC_RTR = bytes.fromhex("00000000ff01")


def arp_reply(dst: bytes = MAC_RTR) -> bytes:
    return (dst + MAC_VM + b"\x08\x06" + bytes.fromhex("0001080006040002") + MAC_VM
            + bytes([10, 0, 0, 3]) + MAC_RTR + bytes([10, 0, 0, 1]))


def pin(opcode: int, frame: bytes, payload: bytes = b"", table: int = 10, **regs: int) -> PacketIn:
    md = [("metadata", regs.pop("metadata", 3), None)] + [(k, v, None) for k, v in regs.items()]
    return decode_packet_in2(encode_packet_in2(
        frame, struct.pack("!I4x", opcode) + payload, md, table_id=table))


def run(p: PacketIn) -> Outcome:
    return registry.dispatch(p, EMPTY_VIEW)


def test_all_opcodes_registered_once() -> None:
    for op in (ab.OP_PUT_ARP, ab.OP_PUT_ND, ab.OP_PUT_FDB, ab.OP_BIND_VPORT, ab.OP_EVENT,
               ab.OP_LOG, ab.OP_ACTIVATION_STRATEGY_RARP):
        assert op in registry.REGISTRY


def test_put_arp_unicast_and_multicast() -> None:
    out = run(pin(ab.OP_PUT_ARP, arp_reply(), reg14=2, reg0=0x0A000003))
    assert out.intents == [MacBindingIntent(3, 2, "10.0.0.3", "50:54:00:00:00:03", 0)]
    out = run(pin(ab.OP_PUT_ARP, arp_reply(b"\xff" * 6), reg14=2, reg0=0x0A000003))
    (mb,) = out.intents
    assert isinstance(mb, MacBindingIntent) and 1 <= mb.delay_ms <= 50
    out = run(pin(ab.OP_PUT_ARP, b"\0" * 10, reg14=2))
    assert out.drop is not None and not out.intents


def test_put_nd_formats_like_ovs() -> None:
    ip6 = 0xFD000000000000000000000000000003
    regs = {"reg%d" % i: (ip6 >> (96 - 32 * i)) & 0xFFFFFFFF for i in range(4)}
    out = run(pin(ab.OP_PUT_ND, arp_reply(), reg14=2, **regs))
    assert out.intents == [MacBindingIntent(3, 2, "fd00::3", "50:54:00:00:00:03", 0)]
    assert ipv6_format_mapped(0xFFFF0A000001) == "10.0.0.1"
    assert ipv6_format_mapped(0x20010DB8000000010000000000000001) == "2001:db8:0:1::1"
    assert ipv6_format_mapped(0x00010000000200000000000000000000) == "1:0:2::"


def test_put_fdb_bind_vport_activation() -> None:
    assert run(pin(ab.OP_PUT_FDB, arp_reply(), reg14=5)).intents == [
        FdbIntent(3, 5, "50:54:00:00:00:03")]
    assert run(pin(ab.OP_BIND_VPORT, arp_reply(), struct.pack("!I", 9), reg14=5)).intents == [
        VportIntent(3, 9, 5)]
    out = run(pin(ab.OP_BIND_VPORT, arp_reply(), b"\0", reg14=5))
    assert out.intents == [] and out.drop is None
    assert run(pin(ab.OP_ACTIVATION_STRATEGY_RARP, arp_reply(), reg14=7)).intents == [
        ActivationIntent(3, 7)]


def _event(*opts: tuple[int, bytes], etype: int = 0) -> bytes:
    return struct.pack("!I", etype) + b"".join(
        struct.pack("!HH", c, len(v)) + v for c, v in opts)


def test_trigger_event() -> None:
    payload = _event((1, b"10.0.0.10:80"), (2, b"tcp"), (3, b"d4f1e2c7-0000-4000-8000-000000000001"))
    out = run(pin(ab.OP_EVENT, arp_reply(), payload))
    assert out.intents == [EventIntent("empty_lb_backends", (
        ("vip", "10.0.0.10:80"), ("protocol", "tcp"),
        ("load_balancer", "d4f1e2c7-0000-4000-8000-000000000001")))]
    assert run(pin(ab.OP_EVENT, arp_reply(), b"")).drop == "event not present in the userdata"
    assert run(pin(ab.OP_EVENT, arp_reply(), _event((1, b"x")))).drop == \
        "missing lb parameters in userdata"
    assert run(pin(ab.OP_EVENT, arp_reply(), _event((9, b"x")))).drop == "unknown event option 9"
    assert run(pin(ab.OP_EVENT, arp_reply(), _event((1, b"xyz"))[:-1])).drop is not None
    assert run(pin(ab.OP_EVENT, arp_reply(), _event(etype=5))).intents == []


TCP_SYN = bytes.fromhex(
    "505400000002" "505400000001" "0800"
    "450000280000400040060000" "c0a80102" "c0a80103"
    "1e6111080000000000000000" "50020000" "00000000")


def test_acl_log_line() -> None:
    out = run(pin(ab.OP_LOG, TCP_SYN, bytes([1, 1]) + b"drop-flow", table=44))
    (li,) = out.intents
    assert li == LogIntent("acl_log", "info",
                           'name="drop-flow", verdict=drop, severity=alert, direction=to-lport: '
                           "tcp,vlan_tci=0x0000,dl_src=50:54:00:00:00:01,dl_dst=50:54:00:00:00:02,"
                           "nw_src=192.168.1.2,nw_dst=192.168.1.3,nw_tos=0,nw_ecn=0,nw_ttl=64,"
                           "nw_frag=no,tp_src=7777,tp_dst=4360,tcp_flags=syn")
    out = run(pin(ab.OP_LOG, TCP_SYN, bytes([0, 6]), table=12))
    assert isinstance(out.intents[0], LogIntent)
    assert out.intents[0].text.startswith(
        'name="<unnamed>", verdict=allow, severity=info, direction=from-lport: tcp,')
    out = run(pin(ab.OP_LOG, TCP_SYN, bytes([9, 9]) + 'a"b\\c'.encode(), table=12))
    assert isinstance(out.intents[0], LogIntent)
    assert out.intents[0].text.startswith(
        'name="a\\"b\\\\c", verdict=<unknown>, severity=<unknown>,')
    assert run(pin(ab.OP_LOG, TCP_SYN, b"\x01")).intents == [
        LogIntent("acl_log", "warn", "log data missing")]


def test_flow_format_common_cases() -> None:
    icmp = bytes.fromhex("505400000002505400000001" "0800" "450000540001000040010000"
                         "0a000001" "0a000002" "0800000000010001")
    assert flow_format(icmp) == (
        "icmp,vlan_tci=0x0000,dl_src=50:54:00:00:00:01,dl_dst=50:54:00:00:00:02,nw_src=10.0.0.1,"
        "nw_dst=10.0.0.2,nw_tos=0,nw_ecn=0,nw_ttl=64,nw_frag=no,icmp_type=8,icmp_code=0")
    udp6 = bytes.fromhex("505400000002505400000001" "86dd" "6000000000081140"
                         "fd000000000000000000000000000001" "fd000000000000000000000000000002"
                         "0035115c00080000")
    assert flow_format(udp6) == (
        "udp6,vlan_tci=0x0000,dl_src=50:54:00:00:00:01,dl_dst=50:54:00:00:00:02,"
        "ipv6_src=fd00::1,ipv6_dst=fd00::2,ipv6_label=0x00000,nw_tos=0,nw_ecn=0,nw_ttl=64,"
        "nw_frag=no,tp_src=53,tp_dst=4444")
    tagged = TCP_SYN[:12] + bytes.fromhex("81000064") + TCP_SYN[12:]
    assert ",dl_vlan=100,dl_vlan_pcp=0," in flow_format(tagged)
    frag = TCP_SYN[:20] + b"\x00\x10" + TCP_SYN[22:]
    assert ",nw_frag=later" in flow_format(frag) and "tp_src" not in flow_format(frag)


@settings(max_examples=300, deadline=None)
@given(op=st.sampled_from([ab.OP_PUT_ARP, ab.OP_PUT_ND, ab.OP_PUT_FDB, ab.OP_BIND_VPORT,
                           ab.OP_EVENT, ab.OP_LOG, ab.OP_ACTIVATION_STRATEGY_RARP]),
       frame=st.binary(max_size=120), payload=st.binary(max_size=60),
       table=st.integers(0, 255))
def test_fuzz_state_handlers_never_raise(op: int, frame: bytes, payload: bytes,
                                         table: int) -> None:
    out = run(pin(op, frame, payload, table=table, reg14=1, reg0=2))
    assert isinstance(out, Outcome)
    if out.drop is not None:
        assert "handler error" not in out.drop


def test_acl_log_skipped_below_info() -> None:
    from controller import vlog
    before = vlog.get_levels("acl_log")
    try:
        vlog.set_level("acl_log", "warn")
        assert run(pin(ab.OP_LOG, TCP_SYN, bytes([1, 1]) + b"x", table=44)).intents == []
    finally:
        for dest, level in before.items():
            vlog.set_level("acl_log", level, dest)
    assert run(pin(ab.OP_LOG, TCP_SYN, bytes([1, 1]) + b"x", table=44)).intents
