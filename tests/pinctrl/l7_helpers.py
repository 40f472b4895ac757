"""Shared builders for the L7 continuation tests: userdata produced by our
own lflow encoder from northd-style action text, and request frames built
with os_ken's packet library (independent of the code under test)."""

from __future__ import annotations

import struct

from os_ken.lib.packet import ethernet, ipv4, ipv6, packet, udp, vlan

from controller.lflow.actions import EncodeParams, ParseParams, encode_ovnacts, parse_actions
from controller.lflow.symtab import ovn_symtab
from ofctrl.ofpacts import Controller

CLIENT_MAC = "50:54:00:00:00:01"
SERVER_MAC = "50:54:00:00:00:fe"


def controller_userdata(action: str) -> bytes:
    """The userdata (action header included) our encoder emits for ``action``."""
    parsed = parse_actions(action, ParseParams(symtab=ovn_symtab(), cur_ltable=5))
    assert not isinstance(parsed, str), parsed
    acts = encode_ovnacts(parsed.actions, EncodeParams(lookup_port=lambda _n: None))
    ctl = [a for a in acts if isinstance(a, Controller)]
    assert len(ctl) == 1, acts
    return bytes(ctl[0].userdata)


def after_result_field(userdata: bytes) -> bytes:
    """The userdata past the 8-byte action header, 4-byte OXM header and bit offset."""
    return userdata[8 + 4 + 4:]


def frame_of(*protocols: object) -> bytes:
    p = packet.Packet()
    for proto in protocols:
        p.add_protocol(proto)
    p.serialize()
    return bytes(p.data)


def udp4_frame(payload: bytes, src: str, dst: str, sport: int, dport: int,
               vlan_id: int | None = None, eth_dst: str = "ff:ff:ff:ff:ff:ff",
               eth_src: str = CLIENT_MAC) -> bytes:
    layers: list[object] = []
    if vlan_id is None:
        layers.append(ethernet.ethernet(dst=eth_dst, src=eth_src, ethertype=0x0800))
    else:
        layers.append(ethernet.ethernet(dst=eth_dst, src=eth_src, ethertype=0x8100))
        layers.append(vlan.vlan(vid=vlan_id, ethertype=0x0800))
    layers += [ipv4.ipv4(src=src, dst=dst, proto=17, ttl=64),
               udp.udp(src_port=sport, dst_port=dport), payload]
    return frame_of(*layers)


def udp6_frame(payload: bytes, src: str, dst: str, sport: int, dport: int,
               eth_dst: str = "33:33:00:01:00:02") -> bytes:
    return frame_of(ethernet.ethernet(dst=eth_dst, src=CLIENT_MAC, ethertype=0x86DD),
                    ipv6.ipv6(src=src, dst=dst, nxt=17, hop_limit=255),
                    udp.udp(src_port=sport, dst_port=dport), payload)


def inet_csum(data: bytes) -> int:
    """Reference RFC 1071 checksum, word by word (kept naive on purpose)."""
    if len(data) % 2:
        data += b"\0"
    total = 0
    for (word,) in struct.iter_unpack("!H", data):
        total += word
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF
