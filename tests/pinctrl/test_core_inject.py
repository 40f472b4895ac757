"""inject-pkt: microflow -> frame (OVS flow_compose) -> packet-out."""

from __future__ import annotations

import struct

from controller.lflow.symtab import ovn_symtab
from controller.pinctrl.inject import flow_compose, inject_message
from ofctrl import messages as m
from ofctrl.match import Match
from ofctrl.ofpacts import decode_actions, format_actions

SYMTAB = ovn_symtab()


def lookup(name: str) -> int | None:
    return {"vm1": 5}.get(name)


def _csum_ok(data: bytes) -> bool:
    if len(data) & 1:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def test_inject_message_shape_and_errors() -> None:
    flow = ('inport == "vm1" && eth.src == 50:54:00:00:00:03 && eth.dst == 50:54:00:00:00:04 '
            "&& ip4.src == 10.0.0.3 && ip4.dst == 10.0.0.4 && ip.ttl == 64 && udp && "
            "udp.src == 53 && udp.dst == 4444")
    msg, err = inject_message(flow, SYMTAB, lookup)
    assert err is None and msg is not None and msg[1] == m.OFPT_PACKET_OUT
    _, alen = struct.unpack_from("!IH", msg, 8)
    match, ofs = Match.decode_prefix(msg, 16)
    assert match.to_string() == "in_port=5"
    assert format_actions(decode_actions(msg[ofs:ofs + alen])) == "resubmit(,0)"
    frame = msg[ofs + alen:]
    assert frame[:12] == bytes.fromhex("505400000004505400000003") and frame[12:14] == b"\x08\x00"
    ip = frame[14:34]
    assert ip[0] == 0x45 and ip[8] == 64 and ip[9] == 17 and _csum_ok(ip)
    assert struct.unpack_from("!H", ip, 2)[0] == 20 + 8 + 64
    assert frame[42:] == bytes(range(64))
    pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, 72)
    assert _csum_ok(pseudo + frame[34:])
    assert inject_message('inport == "nope" && ip4', SYMTAB, lookup) == (
        None, "ingress port not found on hypervisor.")
    assert inject_message("ip4 && ip6", SYMTAB, lookup) == (
        None, "Constraints are contradictory.")
    assert inject_message("ip4 && xyzzy", SYMTAB, lookup)[1] is not None


def test_flow_compose_icmp6_nd_and_arp() -> None:
    ns = Match([("eth_type", 0x86DD, None), ("eth_src", 1, None), ("eth_dst", 2, None),
                ("ipv6_src", 1, None), ("ipv6_dst", 2, None), ("nw_proto", 58, None),
                ("nw_ttl", 255, None), ("icmpv6_type", 135, None), ("icmpv6_code", 0, None),
                ("nd_target", 2, None), ("nd_sll", 1, None)])
    f = flow_compose(ns)
    assert len(f) == 14 + 40 + 8 + 16 + 8 and f[54] == 135 and f[-8:-6] == b"\x01\x01"
    pseudo = f[22:54] + struct.pack("!IxxxB", len(f) - 54, 58)
    assert _csum_ok(pseudo + f[54:])
    arp = Match([("eth_type", 0x0806, None), ("arp_op", 1, None), ("arp_spa", 0x0A000001, None),
                 ("arp_tpa", 0x0A000002, None), ("arp_sha", 1, None)])
    f = flow_compose(arp)
    assert len(f) == 42 and f[20:22] == b"\x00\x01" and f[28:32] == bytes([10, 0, 0, 1])
    syn = Match([("eth_type", 0x0800, None), ("nw_proto", 6, None), ("tcp_flags", 2, None)])
    assert len(flow_compose(syn)) == 14 + 20 + 20          # no payload after SYN
    vlan = Match([("eth_type", 0x0800, None), ("vlan_tci", 0x1064, None), ("nw_proto", 1, None),
                  ("icmp_type", 8, None)])
    f = flow_compose(vlan)
    assert f[12:16] == bytes.fromhex("81000064") and len(f) == 18 + 20 + 8 + 64
