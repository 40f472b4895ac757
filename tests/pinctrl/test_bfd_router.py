"""Router BFD: frame bytes, packet checks, the session table on a fake clock."""

from __future__ import annotations

import ipaddress
import struct
import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from controller.lflow.actions.base import OP_BFD_MSG
from controller.pinctrl import bfd_router as B
from controller.pinctrl import registry
from controller.pinctrl.outcome import LogIntent
from controller.pinctrl.packet_in import PacketIn
from tests.pinctrl.l7_helpers import inet_csum
from tests.pinctrl.test_handlers_l3 import split_packet_out

ROW = uuid.UUID(int=9)
LRP_MAC = bytes.fromhex("00000000ff01")
PEER_MAC = bytes.fromhex("505400000002")
DISC = 0x11223344
PEER_DISC = 0x0A0B0C0D
ACTIONS = "set_field:0x5->metadata,set_field:0x3->reg14,resubmit(CONTROLLER,8)"


def spec(dst_ip: str = "10.0.0.2", status: str = "down", min_tx: int = 1000,
         min_rx: int = 1000, mult: int = 3, src_ip: str = "10.0.0.1",
         disc: int = DISC, src_port: int = 49152) -> B.BfdSpec:
    a = ipaddress.ip_address(src_ip)
    src = (b"\0" * 10 + b"\xff\xff" + a.packed) if a.version == 4 else a.packed
    return B.BfdSpec(ROW, dst_ip, src_port, disc, min_tx, min_rx, mult, status, 5, 3,
                     (LRP_MAC, src))


class Clock:
    def __init__(self) -> None:
        self.t = 100_000

    def __call__(self) -> int:
        return self.t


def sessions(clock: Clock | None = None, jitter: int = 0) -> tuple[B.BfdSessions, list[str]]:
    calls: list[str] = []
    s = B.BfdSessions(notify_service=lambda: calls.append("service"),
                      notify_main=lambda: calls.append("main"),
                      clock=clock or Clock(), randrange=lambda n: min(jitter, n - 1))
    return s, calls


def up_session(sp: B.BfdSpec | None = None, clock: Clock | None = None
               ) -> tuple[B.BfdSessions, list[str], Clock]:
    """A session taken out of admin_down (two sync runs, as C needs)."""
    clock = clock or Clock()
    s, calls = sessions(clock)
    sp = sp or spec()
    assert s.sync([sp], True) == ([], True)
    assert s.snapshot()[sp.key][0] == "admin_down"
    assert s.sync([sp], True) == ([], False)
    assert s.snapshot()[sp.key][0] == "down"
    return s, calls, clock


def bfd_body(state: int, flags: int = 0, my: int = PEER_DISC, your: int = DISC,
             mult: int = 3, length: int = 24, min_tx: int = 300_000, min_rx: int = 300_000,
             version: int = 1) -> bytes:
    return struct.pack("!BBBBIIIII", version << 5, (state << 6) | flags, mult, length, my,
                       your, min_tx, min_rx, 0)


def peer_frame(body: bytes, src: str = "10.0.0.2", dst: str = "10.0.0.1",
               dport: int = 3784, proto: int = 17) -> bytes:
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    udp = struct.pack("!HHHH", 49153, dport, 8 + len(body), 0) + body
    if a.version == 4:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 255, proto, 0,
                         a.packed, b.packed)
        return LRP_MAC + PEER_MAC + b"\x08\x00" + ip + udp
    ip6 = struct.pack("!IHBB", 0x60000000, len(udp), proto, 255) + a.packed + b.packed
    return LRP_MAC + PEER_MAC + b"\x86\xdd" + ip6 + udp


def pin(frame: bytes) -> PacketIn:
    return PacketIn(packet=frame, table_id=10, cookie=0, reason=1,
                    metadata=(("metadata", 5, None), ("reg14", 3, None)),
                    userdata=struct.pack("!I4x", OP_BFD_MSG), continuation=None,
                    properties=b"")


def sent_body(msg: bytes) -> tuple[str, bytes, bytes]:
    actions, frame = split_packet_out(msg)
    if frame[12:14] == b"\x08\x00":
        return actions, frame, frame[42:]
    return actions, frame, frame[62:]


# ---------------------------------------------------------------- frames
def test_ipv4_control_packet_bytes() -> None:
    msg = B.BfdMsg(1, 0, B.DOWN, 0, 3, 24, DISC, 0, 1_000_000, 500_000, 0)
    src = b"\0" * 10 + b"\xff\xff" + bytes((10, 0, 0, 1))
    dst = b"\0" * 10 + b"\xff\xff" + bytes((10, 0, 0, 2))
    frame = B.bfd_frame(LRP_MAC, src, dst, 49152, msg)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 52, 0, 0x4000, 255, 17, 0,
                     bytes((10, 0, 0, 1)), bytes((10, 0, 0, 2)))
    ip = ip[:10] + struct.pack("!H", inet_csum(ip)) + ip[12:]
    body = bytes.fromhex("20" "40" "03" "18") + struct.pack("!IIIII", DISC, 0, 1_000_000,
                                                            500_000, 0)
    udp = struct.pack("!HHHH", 49152, 3784, 32, 0)
    assert frame == b"\xff" * 6 + LRP_MAC + b"\x08\x00" + ip + udp + body
    assert len(frame) == 66


def test_ipv6_control_packet_has_udp_checksum() -> None:
    msg = B.BfdMsg(1, 0, B.UP, B.F_FINAL, 5, 24, DISC, PEER_DISC, 1000, 1000, 0)
    src = ipaddress.IPv6Address("2001:db8::1").packed
    dst = ipaddress.IPv6Address("2001:db8::2").packed
    frame = B.bfd_frame(LRP_MAC, src, dst, 50000, msg)
    assert frame[:14] == b"\xff" * 6 + LRP_MAC + b"\x86\xdd"
    assert struct.unpack_from("!IHBB", frame, 14) == (0x60000000, 32, 17, 255)
    assert frame[22:38] == src and frame[38:54] == dst
    udp = frame[54:]
    assert struct.unpack_from("!HHH", udp) == (50000, 3784, 32)
    pseudo = src + dst + struct.pack("!IxxxB", 32, 17)
    assert inet_csum(pseudo + udp) in (0, 0xFFFF)
    assert udp[8] == 0x20 and udp[9] == (B.UP << 6) | B.F_FINAL


def test_parse_accepts_and_names_source() -> None:
    got = B.parse_bfd(peer_frame(bfd_body(B.DOWN, your=0)))
    assert isinstance(got, tuple)
    src, msg = got
    assert src == "10.0.0.2"
    assert (msg.version, msg.state, msg.my_disc, msg.your_disc) == (1, B.DOWN, PEER_DISC, 0)
    got6 = B.parse_bfd(peer_frame(bfd_body(B.DOWN), "2001:DB8:0:0::2", "2001:db8::1"))
    assert isinstance(got6, tuple) and got6[0] == "2001:db8::2"


@pytest.mark.parametrize("frame,kind", [
    (peer_frame(bfd_body(B.DOWN), proto=6), "not_udp"),
    (peer_frame(bfd_body(B.DOWN), dport=3785), "wrong_port"),
    (peer_frame(bfd_body(B.DOWN)[:20]), "short_payload"),
    (peer_frame(bfd_body(B.DOWN, version=0)), "version"),
    (peer_frame(bfd_body(B.DOWN, flags=B.F_AUTH)), "auth"),
    (peer_frame(bfd_body(B.DOWN, length=23)), "length"),
    (peer_frame(bfd_body(B.DOWN, mult=0)), "mult"),
    (peer_frame(bfd_body(B.DOWN, flags=B.F_MULTIPOINT)), "multipoint"),
    (peer_frame(bfd_body(B.DOWN, my=0)), "my_disc"),
    (peer_frame(bfd_body(B.DOWN, flags=B.F_POLL | B.F_FINAL)), "flags"),
    (peer_frame(bfd_body(B.INIT, your=0)), "your_disc"),
    (peer_frame(bfd_body(B.UP, your=0)), "your_disc"),
    (LRP_MAC + PEER_MAC + b"\x08\x06" + bytes(28), "not_ip"),
    (b"\x01\x02", "frame"),
])
def test_parse_rejects_as_c(frame: bytes, kind: str) -> None:
    got = B.parse_bfd(frame)
    assert isinstance(got, B.BfdDrop) and got.kind == kind


def test_malformed_is_counted_and_logged_at_debug() -> None:
    s, calls, _ = up_session()
    out = s.handle(pin(peer_frame(bfd_body(B.DOWN, mult=0))))
    assert out.messages == [] and out.drop is None
    assert [i.level for i in out.intents if isinstance(i, LogIntent)] == ["dbg"]
    assert s.malformed == {"mult": 1}
    assert s.snapshot()[("10.0.0.2", 49152)][0] == "down"


# ---------------------------------------------------------------- specs
def _pb(name: str, typ: str, chassis: Any, mac: list[str], options: dict[str, str],
        **kw: Any) -> Any:
    return SimpleNamespace(logical_port=name, type=typ, chassis=[chassis] if chassis else [],
                           mac=mac, options=options, tunnel_key=3,
                           datapath=SimpleNamespace(tunnel_key=5), **kw)


def _row(lport: str = "lrp0", dst_ip: str = "10.0.0.2", status: str = "down") -> Any:
    return SimpleNamespace(uuid=ROW, logical_port=lport, dst_ip=dst_ip, src_port=49152,
                           disc=DISC, min_tx=1000, min_rx=1000, detect_mult=3,
                           status=status)


def test_specs_filter_and_source_choice() -> None:
    me = SimpleNamespace(uuid=uuid.UUID(int=1), name="hv1")
    other = SimpleNamespace(uuid=uuid.UUID(int=2), name="hv2")
    pbs = {
        "lrp0": _pb("lrp0", "l3gateway", me,
                    ["00:00:00:00:ff:01 10.0.0.1/24 2001:db8::1/64"], {"peer": "ls-lrp0"}),
        "ls-lrp0": _pb("ls-lrp0", "l3gateway", me, [], {}),
        "lrp1": _pb("lrp1", "l3gateway", other, ["00:00:00:00:ff:02 10.1.0.1/24"],
                    {"peer": "ls-lrp0"}),
        "lrp2": _pb("lrp2", "l3gateway", me, ["00:00:00:00:ff:03 10.2.0.1/24"], {}),
    }
    rows = [_row(), _row("lrp0", "2001:db8::2"), _row("lrp1"), _row("lrp2"),
            _row("nope"), _row("lrp0", "not-an-ip")]
    specs = B.bfd_specs(rows, me, pbs.get)
    assert [(s.dst_ip, s.source) for s in specs[:2]] == [
        ("10.0.0.2", (bytes.fromhex("00000000ff01"),
                      b"\0" * 10 + b"\xff\xff" + bytes((10, 0, 0, 1)))),
        ("2001:db8::2", (bytes.fromhex("00000000ff01"),
                         ipaddress.IPv6Address("2001:db8::1").packed))]
    assert len(specs) == 3 and specs[2].source is None       # dst_ip does not parse
    assert B.bfd_specs(rows, None, pbs.get) == []


def test_specs_distributed_gateway_port_follows_cr_residency() -> None:
    me = SimpleNamespace(uuid=uuid.UUID(int=1), name="hv1")
    pbs = {
        "lrp0": _pb("lrp0", "patch", None, ["00:00:00:00:ff:01 172.16.0.1/24"],
                    {"peer": "ls-lrp0"}),
        "ls-lrp0": _pb("ls-lrp0", "patch", None, [], {}),
        "cr-lrp0": _pb("cr-lrp0", "chassisredirect", me, [], {}, ha_chassis_group=[]),
    }
    assert B.bfd_specs([_row(dst_ip="172.16.0.2")], me, pbs.get) == []
    pbs["cr-lrp0"] = _pb("cr-lrp0", "patch", me, [], {})          # bound here
    assert len(B.bfd_specs([_row(dst_ip="172.16.0.2")], me, pbs.get)) == 1


def test_no_family_match_uses_link_local_default_source() -> None:
    assert B._source(["00:00:00:00:ff:01"], "10.0.0.2") == (
        LRP_MAC, b"\0" * 10 + b"\xff\xff" + bytes((169, 254, 1, 1)))
    assert B._source(["garbage"], "10.0.0.2") is None


# ---------------------------------------------------------------- state machine
def test_new_session_is_silent_until_sb_leaves_admin_down() -> None:
    clock = Clock()
    s, calls = sessions(clock)
    sp = spec()
    s.sync([sp], True)
    clock.t += 10
    assert s.run() == []                   # admin_down: nothing sent
    s.sync([sp], True)
    assert calls == ["service"]
    clock.t += 1
    out = s.run()
    assert len(out) == 1
    actions, frame, body = sent_body(out[0])
    assert actions == ACTIONS and frame[:6] == b"\xff" * 6
    assert body == bfd_body(B.DOWN, my=DISC, your=0, min_tx=1_000_000, min_rx=1_000_000)


def test_sb_admin_down_row_never_starts() -> None:
    clock = Clock()
    s, _ = sessions(clock)
    sp = spec(status="admin_down")
    assert s.sync([sp], True) == ([], False)
    s.sync([sp], True)
    clock.t += 5000
    assert s.run() == [] and s.next_wake_ms() is None


def test_three_way_handshake_to_up_and_status_writes() -> None:
    s, calls, clock = up_session()
    key = ("10.0.0.2", 49152)
    clock.t += 5001
    # The peer's first packet names our discriminator (it learnt it from ours).
    out = s.handle(pin(peer_frame(bfd_body(B.DOWN))))
    assert out.messages == []
    assert s.snapshot()[key] == ("init", PEER_DISC, 3000, True)
    assert calls[-1] == "main"                 # first change > 5 s after the last flush
    assert s.sync([spec()], False) == ([], False)  # no txn: kept
    assert s.sync([spec()], True) == ([(ROW, "init")], False)
    assert s.sync([spec(status="init")], True) == ([], False)
    s.handle(pin(peer_frame(bfd_body(B.UP))))
    assert s.snapshot()[key][0] == "up"
    assert s.sync([spec(status="init")], True) == ([(ROW, "up")], False)
    clock.t += 2
    _a, _f, body = sent_body(s.run()[0])
    assert body == bfd_body(B.UP, my=DISC, your=PEER_DISC, min_tx=1_000_000,
                            min_rx=1_000_000)


def test_down_plus_peer_init_goes_straight_up() -> None:
    s, _, _ = up_session()
    s.handle(pin(peer_frame(bfd_body(B.INIT))))
    assert s.snapshot()[("10.0.0.2", 49152)][0] == "up"


@pytest.mark.parametrize("local_path,peer,want", [
    ((B.DOWN,), B.UP, "down"),
    ((B.DOWN,), B.ADMIN_DOWN, "down"),
    ((B.DOWN, B.DOWN), B.ADMIN_DOWN, "down"),           # init + admin_down
    ((B.DOWN, B.DOWN), B.DOWN, "init"),                 # init + down: stays
    ((B.DOWN, B.INIT), B.DOWN, "down"),                 # up + down
    ((B.DOWN, B.INIT), B.ADMIN_DOWN, "down"),           # up + admin_down
    ((B.DOWN, B.INIT), B.INIT, "up"),
])
def test_transitions(local_path: tuple[int, ...], peer: int, want: str) -> None:
    s, _, _ = up_session()
    for p in local_path[1:]:
        s.handle(pin(peer_frame(bfd_body(p))))
    s.handle(pin(peer_frame(bfd_body(peer, your=DISC))))
    assert s.snapshot()[("10.0.0.2", 49152)][0] == want


def test_unknown_discriminator_or_source_is_ignored() -> None:
    s, _, _ = up_session()
    s.handle(pin(peer_frame(bfd_body(B.DOWN, your=DISC + 1))))
    s.handle(pin(peer_frame(bfd_body(B.DOWN), src="10.0.0.9")))
    s.handle(pin(peer_frame(bfd_body(B.DOWN, your=0))))   # C matches on your_disc only
    assert s.snapshot()[("10.0.0.2", 49152)] == ("down", 0, 30000, False)


def test_poll_gets_final_reply_at_once() -> None:
    s, _, _ = up_session()
    out = s.handle(pin(peer_frame(bfd_body(B.DOWN, flags=B.F_POLL))))
    assert len(out.messages) == 1
    _a, _f, body = sent_body(out.messages[0])
    assert body == bfd_body(B.INIT, flags=B.F_FINAL, my=DISC, your=PEER_DISC,
                            min_tx=1_000_000, min_rx=1_000_000)


def test_demand_mode_stops_transmission() -> None:
    s, _, clock = up_session()
    s.handle(pin(peer_frame(bfd_body(B.INIT))))
    clock.t += 1
    assert len(s.run()) == 1
    s.handle(pin(peer_frame(bfd_body(B.UP, flags=B.F_DEMAND))))
    clock.t += 2000
    assert s.run() == []


def test_detection_timeout_brings_session_down_and_wakes_main() -> None:
    s, calls, clock = up_session(spec(min_rx=200))
    s.handle(pin(peer_frame(bfd_body(B.INIT, min_tx=300_000))))   # up; detect 3*300
    key = ("10.0.0.2", 49152)
    assert s.snapshot()[key][:3] == ("up", PEER_DISC, 900)
    s.sync([spec(min_rx=200)], True)
    clock.t += 899
    s.run()
    assert s.snapshot()[key][0] == "up"
    calls.clear()
    clock.t += 1200
    s.run()
    assert s.snapshot()[key][0] == "down" and calls == ["main"]
    assert s.sync([spec(min_rx=200)], True) == ([(ROW, "down")], False)
    assert s.snapshot()[key][1] == 0           # remote disc reset with the down write


def test_tx_interval_uses_remote_min_rx_and_jitter() -> None:
    clock = Clock()
    s, _ = sessions(clock, jitter=50)
    sp = spec(min_tx=400)
    s.sync([sp], True)
    s.sync([sp], True)
    clock.t += 1
    assert len(s.run()) == 1
    assert s.next_wake_ms() == clock.t + 400 - 50 + 1
    s.handle(pin(peer_frame(bfd_body(B.DOWN, min_rx=2_000_000))))   # remote wants 2 s
    clock.t += 351
    assert len(s.run()) == 1
    assert s.next_wake_ms() == clock.t + 2000 - 50 + 1
    clock.t += 1000
    assert s.run() == []


def test_batching_flushes_at_ten_or_after_five_seconds() -> None:
    clock = Clock()
    s, calls = sessions(clock)
    specs = [spec(dst_ip="10.0.0.%d" % i, disc=DISC + i) for i in range(2, 14)]
    s.sync(specs, True)
    s.sync(specs, True)
    clock.t += 5001
    s.run()
    calls.clear()

    def peer_down(i: int) -> None:
        s.handle(pin(peer_frame(bfd_body(B.DOWN, your=DISC + i, min_tx=2_000_000),
                                src="10.0.0.%d" % i)))

    peer_down(2)
    assert calls == ["main"]                   # > 5 s since the batch clock started
    calls.clear()
    for i in range(3, 12):
        peer_down(i)
    assert calls == []                         # 9 pending
    peer_down(12)
    assert calls == ["main"]                   # the 10th
    calls.clear()
    peer_down(13)
    clock.t += 5001
    s.run()
    assert calls == ["main"]
    writes, _ = s.sync(specs, True)
    assert len(writes) == 12 and {w[1] for w in writes} == {"init"}


def test_sb_admin_down_forces_local_admin_down_and_back() -> None:
    s, calls, clock = up_session()
    key = ("10.0.0.2", 49152)
    s.handle(pin(peer_frame(bfd_body(B.DOWN))))
    s.sync([spec(status="admin_down")], True)
    assert s.snapshot()[key] == ("admin_down", 0, 3000, False)
    clock.t += 2000
    assert s.run() == []
    calls.clear()
    s.sync([spec(status="down")], True)
    assert s.snapshot()[key][0] == "down" and calls == ["service"]


def test_conf_reread_and_rows_gone() -> None:
    s, _, clock = up_session()
    s.sync([spec(min_tx=250, min_rx=150, mult=7)], True)
    clock.t += 1
    _a, _f, body = sent_body(s.run()[0])
    assert body[2] == 7 and struct.unpack_from("!II", body, 12) == (250_000, 150_000)
    s.sync([], True)
    assert len(s) == 0 and s.run() == []


def test_ipv6_session_end_to_end() -> None:
    sp = spec(dst_ip="2001:db8::2", src_ip="2001:db8::1")
    s, _, clock = up_session(sp)
    clock.t += 1
    _a, frame, body = sent_body(s.run()[0])
    assert frame[12:14] == b"\x86\xdd" and frame[38:54] == ipaddress.IPv6Address(
        "2001:db8::2").packed
    s.handle(pin(peer_frame(bfd_body(B.INIT), "2001:db8::2", "2001:db8::1")))
    assert s.snapshot()[sp.key][0] == "up"


def test_registered_for_the_opcode() -> None:
    assert registry.REGISTRY[OP_BFD_MSG] is B.handle_bfd_msg
    s, _, _ = up_session()
    B.attach(s)
    out = registry.dispatch(pin(peer_frame(bfd_body(B.DOWN))), None)  # type: ignore[arg-type]
    assert out.drop is None
    assert s.snapshot()[("10.0.0.2", 49152)][0] == "init"


def test_write_status_only_changes_differing_rows() -> None:
    a = SimpleNamespace(status="down")
    b = SimpleNamespace(status="up")
    table = {uuid.UUID(int=1): a, uuid.UUID(int=2): b}
    n = B.BfdSessions.write_status(table, [(uuid.UUID(int=1), "up"), (uuid.UUID(int=2), "up"),
                                           (uuid.UUID(int=3), "up")])
    assert n == 1 and a.status == "up"


# ---------------------------------------------------------------- agent wiring
def test_agent_runs_sessions_and_writes_status() -> None:
    from controller.diag.coverage import Coverage
    from controller.pinctrl.agent import Pinctrl
    from tests.pinctrl.test_core_agent import FakeService, Poller, fake_sb

    me = SimpleNamespace(uuid=uuid.UUID(int=1), name="hv1")
    pbs = {"lrp0": _pb("lrp0", "l3gateway", me, ["00:00:00:00:ff:01 10.0.0.1/24"],
                       {"peer": "ls-lrp0"}),
           "ls-lrp0": _pb("ls-lrp0", "l3gateway", me, [], {})}
    row = _row()
    tables: dict[str, dict] = {"MAC_Binding": {}, "FDB": {}, "Controller_Event": {},
                               "BFD": {ROW: row}}
    svc = FakeService()
    p = Pinctrl(Coverage(), threaded=False, service=svc)
    assert p.bfd in svc.periodic
    ix = SimpleNamespace(dp_by_key={}, pb_by_key={}, pb_by_name=pbs,
                         pbs_on_datapath=lambda u: [])
    sb = fake_sb(txn=object(), tables=tables)
    p.run("unix:x", sb, ix, me, {})
    poller = Poller()
    p.wait(poller)
    assert "now" in poller.calls               # leaves admin_down on the next run
    p.run("unix:x", sb, ix, me, {})
    key = ("10.0.0.2", 49152)
    assert p.bfd.snapshot()[key][0] == "down"
    B.attach(p.bfd)
    p.bfd.handle(pin(peer_frame(bfd_body(B.DOWN))))
    p.run("unix:x", sb, ix, me, {})
    assert row.status == "init"
    p.run("unix:x", sb, ix, None, {})          # no chassis: sessions are kept, as in C
    assert key in p.bfd.snapshot()


def test_wake_covers_the_detection_deadline() -> None:
    s, _, clock = up_session(spec(min_tx=5000, min_rx=200))
    clock.t += 1
    s.run()
    s.handle(pin(peer_frame(bfd_body(B.DOWN, min_tx=300_000))))   # init, detect 900 ms
    assert s.next_wake_ms() == clock.t + 900
