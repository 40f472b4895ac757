"""Unit tests of integration/packets.py (no daemons)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from integration.packets import (Packet, PcapCursor, PcapError, decode_frame, icmp4, matches,
                                 output_port_numbers, parse_dpif_show, parse_flow_fields,
                                 parse_hex_frames, parse_pcap, parse_trace, read_pcap,
                                 split_actions, tcp4, trace, udp4)

# ---------------------------------------------------------------- building


def test_icmp_packet_odp_and_ofp() -> None:
    p = icmp4("0a:00:00:00:01:02", "0a:00:00:00:01:01", "10.0.1.2", "10.0.2.2")
    assert p.odp() == (
        "eth(src=0a:00:00:00:01:02,dst=0a:00:00:00:01:01),eth_type(0x0800),"
        "ipv4(src=10.0.1.2,dst=10.0.2.2,proto=1,tos=0,ttl=64,frag=no),icmp(type=8,code=0)")
    assert p.ofp("vif-a1") == (
        "in_port=vif-a1,icmp,dl_src=0a:00:00:00:01:02,dl_dst=0a:00:00:00:01:01,"
        "nw_src=10.0.1.2,nw_dst=10.0.2.2,nw_tos=0,nw_ttl=64,icmp_type=8,icmp_code=0")


def test_tcp_and_udp_packets() -> None:
    t = tcp4("0a:00:00:00:00:01", "0a:00:00:00:00:02", "1.1.1.1", "2.2.2.2", 1000, 80,
             flags=("syn", "ack"), ttl=5, tos=0x30)
    assert t.odp().endswith("ipv4(src=1.1.1.1,dst=2.2.2.2,proto=6,tos=48,ttl=5,frag=no),"
                            "tcp(src=1000,dst=80),tcp_flags(syn|ack)")
    assert "tcp_src=1000,tcp_dst=80,tcp_flags=syn|ack" in t.ofp("p")
    assert "nw_tos=48" in t.ofp("p")
    u = udp4("0a:00:00:00:00:01", "0a:00:00:00:00:02", "1.1.1.1", "2.2.2.2", 53, 5353)
    assert u.odp().endswith("proto=17,tos=0,ttl=64,frag=no),udp(src=53,dst=5353)")
    assert "tcp_flags" not in u.odp() and "tcp_flags" not in u.ofp("p")
    assert u.ofp("p").endswith(",udp_src=53,udp_dst=5353")


def test_packet_validation() -> None:
    with pytest.raises(ValueError):
        Packet("a", "b", "10.0.0.1", "10.0.0.2", proto="sctp")
    with pytest.raises(ValueError):
        Packet("a", "b", "10.0.0.1", "10.0.0.300")
    with pytest.raises(ValueError):
        tcp4("a", "b", "10.0.0.1", "10.0.0.2", 1, 2, flags=("bogus",))


def test_reply_swaps_and_overrides() -> None:
    req = tcp4("0a:00:00:00:00:01", "0a:00:00:00:00:02", "1.1.1.1", "2.2.2.2", 1000, 80)
    rep = req.reply(eth_dst="0a:00:00:00:00:09")
    assert (rep.eth_src, rep.eth_dst) == ("0a:00:00:00:00:02", "0a:00:00:00:00:09")
    assert (rep.ip_src, rep.ip_dst, rep.sport, rep.dport) == ("2.2.2.2", "1.1.1.1", 80, 1000)
    assert rep.tcp_flags == ("syn", "ack")
    echo = icmp4("0a:00:00:00:00:01", "0a:00:00:00:00:02", "1.1.1.1", "2.2.2.2").reply()
    assert echo.icmp_type == 0


# ---------------------------------------------------------------- pcap

# An ICMP echo request as vswitchd wrote it to vif-b1's tx pcap (via ovs-pcap),
# after lr0 routed it: router MAC, TTL 63, DSCP 12.
ROUTED_PING_HEX = (
    "0a00000002020a000000020108004530005c000000003f01646e0a0001020a000202080013fc000000000001"
    "02030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d"
    "2e2f303132333435363738393a3b3c3d3e3f")
# A TCP SYN 10.0.1.3:40000 -> 10.0.1.2:8080 (load balancer backend).
LB_SYN_HEX = ("0a00000001020a0000000101080045000028000000003f0665cc0a0001030a0001029c401f90"
              "000000000000000050020000de0d0000")


def pcap_bytes(frames: list[bytes], order: str = "<", nano: bool = False) -> bytes:
    magic = 0xa1b23c4d if nano else 0xa1b2c3d4
    out = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1)
    for i, frame in enumerate(frames):
        out += struct.pack(order + "IIII", 100 + i, 5, len(frame), len(frame)) + frame
    return out


def test_decode_real_routed_ping() -> None:
    f = decode_frame(bytes.fromhex(ROUTED_PING_HEX))
    assert (f.eth_dst, f.eth_src, f.eth_type) == ("0a:00:00:00:02:02", "0a:00:00:00:02:01",
                                                  0x0800)
    assert (f.ip_src, f.ip_dst, f.ttl, f.tos, f.proto_name) == (
        "10.0.1.2", "10.0.2.2", 63, 0x30, "icmp")
    assert (f.icmp_type, f.icmp_code, f.sport, f.tcp_flags) == (8, 0, None, None)
    assert matches(f, ttl=63, ip_dst="10.0.2.2") and not matches(f, ttl=64)


def test_decode_tcp_syn() -> None:
    f = decode_frame(bytes.fromhex(LB_SYN_HEX))
    assert (f.ip_src, f.ip_dst, f.sport, f.dport) == ("10.0.1.3", "10.0.1.2", 40000, 8080)
    assert f.has_tcp_flags("syn") and not f.has_tcp_flags("ack")
    assert "ports=40000>8080" in f.summary()


def test_decode_vlan_ipv6_udp() -> None:
    eth = bytes.fromhex("333300000001" "0a0000000001") + struct.pack("!HHH", 0x8100, 0x2005,
                                                                      0x86dd)
    ip6 = struct.pack("!IHBB", (6 << 28) | (0x30 << 20), 8, 17, 255)
    ip6 += bytes.fromhex("fd00000a000000000000000000000001" "ff020000000000000000000000000001")
    udp = struct.pack("!HHHH", 547, 546, 8, 0)
    f = decode_frame(eth + ip6 + udp)
    assert (f.vlan, f.eth_type, f.ip_src, f.ip_dst) == (5, 0x86dd, "fd00:a::1", "ff02::1")
    assert (f.proto_name, f.ttl, f.tos, f.sport, f.dport) == ("udp", 255, 0x30, 547, 546)


def test_decode_arp_and_short_frames() -> None:
    arp = decode_frame(bytes(6) + bytes.fromhex("0a0000000001") + b"\x08\x06" + bytes(28))
    assert arp.eth_type == 0x0806 and arp.ip_src is None
    with pytest.raises(ValueError):
        decode_frame(b"\x00" * 10)


@pytest.mark.parametrize("order,nano", [("<", False), (">", False), ("<", True), (">", True)])
def test_parse_pcap_byte_orders(order: str, nano: bool) -> None:
    frames = [bytes.fromhex(ROUTED_PING_HEX), bytes.fromhex(LB_SYN_HEX)]
    assert parse_pcap(pcap_bytes(frames, order, nano)) == frames


def test_parse_pcap_partial_and_bad() -> None:
    data = pcap_bytes([b"\x01" * 20, b"\x02" * 30])
    assert parse_pcap(data[:-5]) == [b"\x01" * 20]          # last record still being written
    assert parse_pcap(data[:10]) == []                      # header not complete yet
    with pytest.raises(PcapError):
        parse_pcap(b"\x00" * 24)


def test_parse_hex_frames() -> None:
    text = f"{ROUTED_PING_HEX}\n\n{LB_SYN_HEX}\n"
    assert parse_hex_frames(text) == [bytes.fromhex(ROUTED_PING_HEX), bytes.fromhex(LB_SYN_HEX)]


def test_cursor_sees_only_new_frames(tmp_path: Path) -> None:
    path = tmp_path / "p-tx.pcap"
    assert read_pcap(path) == []
    ping, syn = bytes.fromhex(ROUTED_PING_HEX), bytes.fromhex(LB_SYN_HEX)
    path.write_bytes(pcap_bytes([ping]))
    cursor = PcapCursor(path)
    assert cursor.new_frames() == []
    path.write_bytes(pcap_bytes([ping, syn]))
    frame, seen = cursor.wait_for(lambda f: f.dport == 8080, timeout=0.5)
    assert frame is not None and frame.ip_src == "10.0.1.3" and len(seen) == 1
    assert cursor.new_frames() == []
    frame, seen = cursor.wait_for(lambda f: True, timeout=0.1)
    assert frame is None and seen == []
    path.write_bytes(pcap_bytes([syn]))                     # file re-created: all new
    assert [f.dport for f in cursor.new_frames()] == [8080]


def test_cursor_skips_background_frames(tmp_path: Path) -> None:
    path = tmp_path / "p-tx.pcap"
    path.write_bytes(pcap_bytes([]))
    cursor = PcapCursor(path)
    path.write_bytes(pcap_bytes([bytes.fromhex(LB_SYN_HEX), bytes.fromhex(ROUTED_PING_HEX)]))
    frame, seen = cursor.wait_for(lambda f: f.icmp_type == 8, timeout=0.5)
    assert frame is not None and frame.ip_dst == "10.0.2.2" and len(seen) == 2


# ---------------------------------------------------------------- trace

# Shaped like ovs-vswitchd 3.1's ofproto/trace output (abridged table lines).
TRACE_TEXT = """\
Flow: icmp,in_port=11,vlan_tci=0x0000,dl_src=0a:00:00:00:01:02,dl_dst=0a:00:00:00:01:01,\
nw_src=10.0.1.2,nw_dst=10.0.2.2,nw_tos=0,nw_ecn=0,nw_ttl=64,nw_frag=no,icmp_type=8,icmp_code=0

bridge("br-int")
----------------
 0. in_port=11, priority 100
    ct(table=15,zone=NXM_NX_REG13[0..15],nat)

Final flow: icmp,reg13=0x2,metadata=0x3,in_port=11,dl_src=0a:00:00:00:01:02,\
dl_dst=0a:00:00:00:01:01,nw_src=10.0.1.2,nw_dst=10.0.2.2,nw_ttl=64
Megaflow: recirc_id=0,eth,icmp,in_port=11,nw_frag=no
Datapath actions: ct(zone=2,nat),recirc(0x1)

===============================================================================
recirc(0x1) - resume conntrack with default ct_state=trk|new (use --ct-next to customize)
===============================================================================

Flow: recirc_id=0x1,ct_state=new|trk,eth,icmp,in_port=11,dl_src=0a:00:00:00:01:02,\
nw_ttl=64

Final flow: unchanged
Megaflow: recirc_id=0x1,eth,icmp
Datapath actions: set(eth(src=0a:00:00:00:02:01,dst=0a:00:00:00:02:02)),\
set(ipv4(ttl=63)),ct(zone=4,nat),recirc(0x2)

===============================================================================
recirc(0x2) - resume conntrack with default ct_state=trk|new (use --ct-next to customize)
===============================================================================

Flow: recirc_id=0x2,eth,icmp,dl_src=0a:00:00:00:02:01,nw_ttl=63

Final flow: recirc_id=0x2,eth,icmp,reg15=0x1,dl_src=0a:00:00:00:02:01,\
dl_dst=0a:00:00:00:02:02,nw_ttl=63
Megaflow: recirc_id=0x2,eth,icmp
Datapath actions: ct(commit,zone=4,label=0/0x1,nat(src)),5
"""

DPIF_SHOW = """\
dummy@ovs-dummy: hit:0 missed:0
  br-int:
    br-int 65534/1: (dummy-internal)
    ovn-hv2-0 1/7: (geneve)
    patch-br-int-to-ln-pub 2/none: (patch: peer=patch-ln-pub-to-br-int)
    vif-a1 11/3: (dummy)
    vif-b1 21/5: (dummy)
  br-phys:
    br-phys 65534/2: (dummy-internal)
"""


def test_parse_dpif_show() -> None:
    assert parse_dpif_show(DPIF_SHOW) == {1: "br-int", 7: "ovn-hv2-0", 3: "vif-a1",
                                         5: "vif-b1", 2: "br-phys"}


def test_split_actions_and_outputs() -> None:
    acts = "ct(commit,zone=4,nat(src)),set(eth(src=0a:00:00:00:02:01)),5,clone(tnl_push(x),7),2"
    assert split_actions(acts) == ["ct(commit,zone=4,nat(src))",
                                   "set(eth(src=0a:00:00:00:02:01))", "5",
                                   "clone(tnl_push(x),7)", "2"]
    assert output_port_numbers(acts) == [5, 7, 2]
    assert output_port_numbers("drop") == []
    assert output_port_numbers("sample(sample=100.0%,actions(meter(0),userspace(pid=0)))") == []


def test_parse_flow_fields() -> None:
    assert parse_flow_fields("icmp,in_port=11,nw_ttl=63") == {
        "icmp": "", "in_port": "11", "nw_ttl": "63"}


def test_parse_trace_stages_and_outputs() -> None:
    t = parse_trace(TRACE_TEXT, parse_dpif_show(DPIF_SHOW))
    assert len(t.stages) == 3
    assert t.stages[0].actions == "ct(zone=2,nat),recirc(0x1)"
    assert t.stages[0].final_flow["reg13"] == "0x2"
    assert t.stages[1].final_flow["nw_ttl"] == "64"           # "unchanged": the input flow
    assert t.final_flow["dl_src"] == "0a:00:00:00:02:01" and t.final_flow["nw_ttl"] == "63"
    assert t.outputs == ("vif-b1",) and not t.dropped
    assert t.has_action("nat(src)") and not t.has_action("nat(dst")
    unnamed = parse_trace(TRACE_TEXT)
    assert unnamed.outputs == ("5",)


def test_parse_trace_drop() -> None:
    text = "Flow: icmp,in_port=12\n\nFinal flow: unchanged\nDatapath actions: drop\n"
    t = parse_trace(text)
    assert t.dropped and t.actions == ("drop",) and t.final_flow == {"icmp": "", "in_port": "12"}


class FakeSwitch:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def appctl(self, target: str, *args: str, timeout: float = 60.0) -> str:
        self.calls.append((target, *args))
        return TRACE_TEXT if args[0] == "ofproto/trace" else DPIF_SHOW


def test_trace_command_line() -> None:
    fake = FakeSwitch()
    t = trace(fake, "br-int", "in_port=vif-a1,icmp", ct_next=("trk,est", "trk,est,rpl"))
    assert fake.calls[0] == ("ovs-vswitchd", "ofproto/trace", "br-int", "in_port=vif-a1,icmp",
                             "--ct-next", "trk,est", "--ct-next", "trk,est,rpl")
    assert fake.calls[1] == ("ovs-vswitchd", "dpif/show")
    assert t.outputs == ("vif-b1",)
