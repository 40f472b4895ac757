"""Service monitors: probe bytes, the state machine on a fake clock, reply parsing."""

from __future__ import annotations

import ipaddress
import random
import struct
import uuid
from types import SimpleNamespace
from typing import Any

from controller.lflow.actions.base import OP_HANDLE_SVC_CHECK
from controller.pinctrl import registry
from controller.pinctrl import svc_monitor as S
from controller.pinctrl.outcome import LogIntent
from controller.pinctrl.packet_in import PacketIn
from tests.pinctrl.l7_helpers import inet_csum
from tests.pinctrl.test_handlers_l3 import split_packet_out

ROW = uuid.UUID(int=7)
BACKEND_MAC = bytes.fromhex("50540000000a")
SVC_MAC = bytes.fromhex("0a580a000001")
ACTIONS = ("set_field:0x5->metadata,set_field:0x3->reg15,"
           "set_field:0x10000/0x10000->reg10,resubmit(CONTROLLER,40)")


def spec(ip: str = "10.0.0.3", src_ip: str = "10.0.0.254", proto: str = "tcp",
         options: dict[str, str] | None = None) -> S.MonitorSpec:
    a = ipaddress.ip_address(ip)
    packed = (b"\0" * 10 + b"\xff\xff" + a.packed) if a.version == 4 else a.packed
    return S.MonitorSpec(ROW, 5, 3, packed, 80, proto, BACKEND_MAC, "0a:58:0a:00:00:01",
                         src_ip, tuple(sorted((options or {}).items())))


def ip4_header(src: str, dst: str, proto: int, l4_len: int) -> bytes:
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + l4_len, 0, 0x4000, 63, proto, 0,
                    ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
    return h[:10] + struct.pack("!H", inet_csum(h)) + h[12:]


def pseudo(src: str, dst: str, proto: int, length: int) -> bytes:
    s, d = ipaddress.ip_address(src).packed, ipaddress.ip_address(dst).packed
    if len(s) == 4:
        return s + d + struct.pack("!BBH", 0, proto, length)
    return s + d + struct.pack("!IxxxB", length, proto)


def eth(ethertype: int) -> bytes:
    return BACKEND_MAC + SVC_MAC + struct.pack("!H", ethertype)


# ---------------------------------------------------------------- frames
def test_tcp_syn_ipv4_bytes() -> None:
    frame = S.tcp_probe(spec(), S.TCP_SYN, 0x01020304, 0, 40000)
    tcp = struct.pack("!HHIIHHHH", 40000, 80, 0x01020304, 0, 0x5002, 65160, 0, 0)
    ck = inet_csum(pseudo("10.0.0.254", "10.0.0.3", 6, 20) + tcp)
    tcp = tcp[:16] + struct.pack("!H", ck) + tcp[18:]
    assert frame == eth(0x0800) + ip4_header("10.0.0.254", "10.0.0.3", 6, 20) + tcp
    assert len(frame) == 54


def test_tcp_syn_ipv6_bytes() -> None:
    s = spec("fd00::3", "fd00::fe")
    frame = S.tcp_probe(s, S.TCP_SYN, 99, 0, 2048)
    tcp = struct.pack("!HHIIHHHH", 2048, 80, 99, 0, 0x5002, 65160, 0, 0)
    ck = inet_csum(pseudo("fd00::fe", "fd00::3", 6, 20) + tcp)
    tcp = tcp[:16] + struct.pack("!H", ck) + tcp[18:]
    ip6 = struct.pack("!IHBB", 0x60000000, 20, 6, 63) + ipaddress.IPv6Address(
        "fd00::fe").packed + ipaddress.IPv6Address("fd00::3").packed
    assert frame == eth(0x86DD) + ip6 + tcp


def test_udp_probe_ipv4_has_no_checksum_and_8_zero_bytes() -> None:
    frame = S.udp_probe(spec(proto="udp"), 5000)
    udp = struct.pack("!HHHH", 5000, 80, 16, 0) + bytes(8)
    assert frame == eth(0x0800) + ip4_header("10.0.0.254", "10.0.0.3", 17, 16) + udp


def test_udp_probe_ipv6_checksum() -> None:
    frame = S.udp_probe(spec("fd00::3", "fd00::fe", "udp"), 5000)
    udp = struct.pack("!HHHH", 5000, 80, 16, 0) + bytes(8)
    ck = inet_csum(pseudo("fd00::fe", "fd00::3", 17, 16) + udp) or 0xFFFF
    assert frame[54:] == udp[:6] + struct.pack("!H", ck) + udp[8:]
    assert frame[14:22] == struct.pack("!IHBB", 0x60000000, 16, 17, 63)


# ---------------------------------------------------------------- state machine
class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def monitors(*specs: S.MonitorSpec) -> tuple[S.SvcMonitors, Clock, list[str]]:
    clock, calls = Clock(), []
    m = S.SvcMonitors(notify_service=lambda: calls.append("svc"),
                      notify_main=lambda: calls.append("main"), clock=clock,
                      rng=random.Random(1))
    m.update(list(specs))
    return m, clock, calls


def state(m: S.SvcMonitors, s: S.MonitorSpec) -> tuple[int, str, int, int]:
    return m.snapshot()[s.key]


def test_tcp_silence_goes_offline_after_failure_count() -> None:
    s = spec(options={"interval": "10", "timeout": "2", "failure_count": "2"})
    m, clock, calls = monitors(s)
    assert calls == ["svc"] and m.next_wake_ms() == 0
    msgs = m.run(0)
    assert len(msgs) == 1 and split_packet_out(msgs[0])[0] == ACTIONS
    assert m.next_wake_ms() == 2000 and state(m, s)[0] == S.S_WAITING
    assert m.run(2000) == []                          # deadline not yet passed
    assert m.run(2001) == [] and state(m, s) == (S.S_OFFLINE, "", 0, 1)
    assert m.next_wake_ms() == 12001
    assert m.run(5000) == [] and state(m, s)[1] == ""      # 1 of 2 failures
    assert len(m.run(12001)) == 1 and m.next_wake_ms() == 14001
    m.run(14002)
    assert state(m, s) == (S.S_OFFLINE, "", 0, 2)
    m.run(14003)
    assert state(m, s) == (S.S_OFFLINE, "offline", 0, 0) and calls[-1] == "main"
    assert m.statuses() == [(ROW, "offline")]


def test_udp_silence_means_online() -> None:
    s = spec(proto="udp")
    m, clock, calls = monitors(s)
    m.run(0)
    port = m.probe_ports(s.key)[1]
    m.run(3001)
    m.run(3002)
    assert state(m, s) == (S.S_ONLINE, "online", 0, 0) and "main" in calls
    m.run(8001)                                        # next probe, same source port
    assert m.probe_ports(s.key)[1] == port and port >= 1024


def test_tcp_probes_use_fresh_seq_and_port_and_options_are_reread() -> None:
    s = spec()
    m, clock, calls = monitors(s)
    m.run(0)
    first = m.probe_ports(s.key)
    m.run(3001)
    m.run(8001)
    assert m.probe_ports(s.key) != first and m.probe_ports(s.key)[1] >= 1024
    s2 = spec(options={"interval": "1"})
    assert m.update([s2]) and state(m, s2)[0] == S.S_WAITING   # state kept
    assert not m.update([s2])
    assert m.update([]) and m.snapshot() == {} and m.next_wake_ms() is None


# ---------------------------------------------------------------- replies
def pin(frame: bytes, dp: int = 5, port: int = 3) -> PacketIn:
    return PacketIn(packet=frame, table_id=10, cookie=0, reason=1,
                    metadata=(("metadata", dp, None), ("reg14", port, None)),
                    userdata=struct.pack("!I4x", OP_HANDLE_SVC_CHECK),
                    continuation=None, properties=b"")


def tcp_reply(flags: int, seq: int, ack: int, dport: int, sport: int = 80,
              src: str = "10.0.0.3") -> bytes:
    tcp = struct.pack("!HHIIHHHH", sport, dport, seq, ack, 0x5000 | flags, 1000, 0, 0)
    return SVC_MAC + BACKEND_MAC + b"\x08\x00" + ip4_header(src, "10.0.0.254", 6, 20) + tcp


def test_syn_ack_is_success_and_answered_with_rst_ack_seq_off_by_one() -> None:
    s = spec()
    m, clock, _ = monitors(s)
    m.run(0)
    seq, port = m.probe_ports(s.key)
    clock.now = 100
    out = m.handle(pin(tcp_reply(S.TCP_SYN | S.TCP_ACK, 5000, seq + 1, port)))
    assert state(m, s) == (S.S_ONLINE, "", 1, 0)
    (msg,) = out.messages
    actions, frame = split_packet_out(msg)
    assert actions == ACTIONS
    assert frame == S.tcp_probe(s, S.TCP_RST | S.TCP_ACK, seq + 2, 5001, port)
    assert struct.unpack_from("!HHIIH", frame, 34) == (port, 80, seq + 2, 5001, 0x5014)
    m.run(101)
    assert state(m, s)[1] == "online" and m.next_wake_ms() == 5100


def test_tcp_replies_that_do_not_match_are_ignored() -> None:
    s = spec()
    m, clock, _ = monitors(s)
    m.run(0)
    seq, port = m.probe_ports(s.key)
    for frame in (tcp_reply(0x12, 1, seq, port),          # wrong ack
                  tcp_reply(0x12, 1, seq + 1, port + 1),  # wrong port
                  tcp_reply(0x10, 1, seq + 1, port)):     # plain ACK
        assert m.handle(pin(frame)).messages == []
    assert state(m, s) == (S.S_WAITING, "", 0, 0)
    out = m.handle(pin(tcp_reply(0x12, 1, seq + 1, port, sport=81)))
    assert isinstance(out.intents[0], LogIntent) and "not found" in out.intents[0].text
    out = m.handle(pin(tcp_reply(0x12, 1, seq + 1, port, src="10.0.0.4")))
    assert "not found" in out.intents[0].text


def test_rst_is_failure() -> None:
    s = spec()
    m, clock, _ = monitors(s)
    m.run(0)
    seq, port = m.probe_ports(s.key)
    clock.now = 50
    assert m.handle(pin(tcp_reply(S.TCP_RST | S.TCP_ACK, 0, seq + 1, port))).messages == []
    m.run(51)
    assert state(m, s) == (S.S_OFFLINE, "offline", 0, 0) and m.next_wake_ms() == 5050


def icmp4_unreach(quoted_len: int, sport: int, code: int = 3) -> bytes:
    quoted = ip4_header("10.0.0.254", "10.0.0.3", 17, quoted_len - 20) \
        + struct.pack("!HHHH", sport, 80, 16, 0) + bytes(8)
    icmp = struct.pack("!BBHI", 3, code, 0, 0) + quoted
    return (SVC_MAC + BACKEND_MAC + b"\x08\x00"
            + ip4_header("10.0.0.3", "10.0.0.254", 1, len(icmp)) + icmp)


def icmp6_unreach(sport: int, plen: int = 16) -> bytes:
    a, b = ipaddress.IPv6Address("fd00::3").packed, ipaddress.IPv6Address("fd00::fe").packed
    quoted = struct.pack("!IHBB", 0x60000000, plen, 17, 63) + b + a \
        + struct.pack("!HHHH", sport, 80, 16, 0) + bytes(8)
    icmp = struct.pack("!BBHI", 1, 4, 0, 0) + quoted
    return (SVC_MAC + BACKEND_MAC + b"\x86\xdd"
            + struct.pack("!IHBB", 0x60000000, len(icmp), 58, 64) + a + b + icmp)


def test_icmp_port_unreachable_fails_udp_monitor() -> None:
    s = spec(proto="udp")
    m, clock, _ = monitors(s)
    m.run(0)
    port = m.probe_ports(s.key)[1]
    assert "length" in m.handle(pin(icmp4_unreach(40, port))).intents[0].text
    assert m.handle(pin(icmp4_unreach(36, port, code=1))).intents == []
    assert "src port" in m.handle(pin(icmp4_unreach(36, port + 1))).intents[0].text
    assert state(m, s) == (S.S_WAITING, "", 0, 0)
    assert m.handle(pin(icmp4_unreach(36, port))).intents == []
    m.run(1)
    assert state(m, s) == (S.S_OFFLINE, "offline", 0, 0)


def test_icmp6_port_unreachable_and_length_only_warned() -> None:
    s = spec("fd00::3", "fd00::fe", "udp")
    m, clock, _ = monitors(s)
    m.run(0)
    port = m.probe_ports(s.key)[1]
    out = m.handle(pin(icmp6_unreach(port, plen=20)))
    assert [i.text for i in out.intents if isinstance(i, LogIntent)] == [
        "Invalid original IP datagram length present in ICMP packet"]
    assert state(m, s)[3] == 1


def test_unsupported_protocol_and_garbage_do_not_raise() -> None:
    m, _, _ = monitors(spec())
    udp = SVC_MAC + BACKEND_MAC + b"\x08\x00" + ip4_header("10.0.0.3", "1.1.1.1", 17, 8) \
        + bytes(8)
    assert "Unsupported protocol - [11]" in m.handle(pin(udp)).intents[0].text
    for junk in (b"", b"\x00" * 13, SVC_MAC + BACKEND_MAC + b"\x08\x00\x45"):
        out = m.handle(pin(junk))
        assert out.messages == []


def test_opcode_18_dispatches_to_the_attached_table() -> None:
    s = spec()
    m, _, _ = monitors(s)
    S.attach(m)
    m.run(0)
    seq, port = m.probe_ports(s.key)
    out = registry.dispatch(pin(tcp_reply(0x12, 9, seq + 1, port)), None)  # type: ignore[arg-type]
    assert len(out.messages) == 1 and state(m, s)[0] == S.S_ONLINE
    assert registry.REGISTRY[OP_HANDLE_SVC_CHECK] is S.handle_svc_check


# ---------------------------------------------------------------- SB side
def test_monitor_specs_selects_local_rows_and_backend_mac() -> None:
    me, other = SimpleNamespace(uuid=1), SimpleNamespace(uuid=2)
    dp = SimpleNamespace(tunnel_key=5)
    pbs = {
        "vm1": SimpleNamespace(chassis=[me], datapath=dp, tunnel_key=3,
                               mac=["50:54:00:00:00:0b 10.0.0.9",
                                    "50:54:00:00:00:0a 10.0.0.3 fd00::3"]),
        "vm2": SimpleNamespace(chassis=[other], datapath=dp, tunnel_key=4,
                               mac=["50:54:00:00:00:0c 10.0.0.4"]),
        "vm3": SimpleNamespace(chassis=[me], datapath=dp, tunnel_key=6,
                               mac=["50:54:00:00:00:0d"]),
    }

    def row(lport: str, ip: str, proto: Any = "tcp") -> Any:
        return SimpleNamespace(uuid=uuid.uuid4(), logical_port=lport, ip=ip, port=80,
                               protocol=proto, src_mac="0a:58:0a:00:00:01",
                               src_ip="10.0.0.254", options={"interval": "7"})

    rows = [row("vm1", "10.0.0.3"), row("vm1", "fd00::3", ["udp"]), row("vm2", "10.0.0.4"),
            row("vm3", "10.0.0.5", []), row("nope", "10.0.0.6"), row("vm1", "bogus")]
    out = S.monitor_specs(rows, me, pbs.get)
    assert [(o.port_key, o.protocol, o.backend_mac.hex(), o.is_ip6) for o in out] == [
        (3, "tcp", "50540000000a", False), (3, "udp", "50540000000a", True),
        (6, "tcp", "50540000000d", False)]
    assert out[0].options == (("interval", "7"),)


def test_write_status_only_known_and_changed() -> None:
    s = spec(proto="udp")
    m, _, _ = monitors(s)
    sb_row = SimpleNamespace(status=[])
    assert m.write_status({ROW: sb_row}) == 0          # status unknown: nothing written
    m.run(0)
    m.run(3001)
    m.run(3002)
    assert m.write_status({ROW: sb_row}) == 1 and sb_row.status == ["online"]
    assert m.write_status({ROW: sb_row}) == 0
    assert m.write_status({}) == 0


def test_ipv6_syn_ack_is_success() -> None:
    s = spec("fd00::3", "fd00::fe")
    m, clock, _ = monitors(s)
    m.run(0)
    seq, port = m.probe_ports(s.key)
    a, b = ipaddress.IPv6Address("fd00::3").packed, ipaddress.IPv6Address("fd00::fe").packed
    tcp = struct.pack("!HHIIHHHH", 80, port, 1, seq + 1, 0x5012, 1000, 0, 0)
    frame = (SVC_MAC + BACKEND_MAC + b"\x86\xdd"
             + struct.pack("!IHBB", 0x60000000, 20, 6, 64) + a + b + tcp)
    (msg,) = m.handle(pin(frame)).messages
    rst = split_packet_out(msg)[1]
    assert rst == S.tcp_probe(s, S.TCP_RST | S.TCP_ACK, seq + 2, 2, port)
    assert rst[12:14] == b"\x86\xdd" and state(m, s)[0] == S.S_ONLINE
