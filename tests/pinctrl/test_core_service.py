"""The pinctrl service against an in-test OpenFlow switch over a socketpair."""

from __future__ import annotations

import select
import socket
import struct
import time

import ovs.poller

from controller.diag.coverage import Coverage
from controller.lflow.actions import base as ab
from controller.pinctrl import registry
from controller.pinctrl.buffered import BufferedPackets
from controller.pinctrl.outcome import Outcome
from controller.pinctrl.packet_in import PacketIn, encode_packet_in2
from controller.pinctrl.sb_writes import PendingWork
from controller.pinctrl.service import PinctrlService
from ofctrl import messages as m
from ofctrl.connection import Connection

ARP_REPLY = (bytes.fromhex("00000000ff01505400000003" "0806" "0001080006040002" "505400000003")
             + bytes([10, 0, 0, 3]) + bytes.fromhex("00000000ff01") + bytes([10, 0, 0, 1]))


class Switch:
    """Switch side of the pinctrl connection: just enough of OVS."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.rx = b""
        self.got: list[bytes] = []

    def connect(self) -> socket.socket:
        ours, theirs = socket.socketpair()
        self.sock, self.rx, self.got = theirs, b"", []
        self.connects = getattr(self, "connects", 0) + 1
        theirs.sendall(m.hello(1))
        return ours

    def pump(self, until: int = 0, timeout: float = 2.0) -> list[bytes]:
        """Read messages; answer features and get_config like OVS."""
        deadline = time.monotonic() + timeout
        while self.sock is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.sock is not None
        while time.monotonic() < deadline and len(self.got) < until:
            r, _, _ = select.select([self.sock], [], [], 0.02)
            if not r:
                continue
            data = self.sock.recv(65536)
            if not data:
                break
            self.rx += data
            while len(self.rx) >= 8:
                n = struct.unpack_from("!H", self.rx, 2)[0]
                if len(self.rx) < n:
                    break
                msg, self.rx = self.rx[:n], self.rx[n:]
                self.got.append(msg)
                xid = struct.unpack_from("!I", msg, 4)[0]
                if msg[1] == m.OFPT_FEATURES_REQUEST:
                    self.sock.sendall(m.header(m.OFPT_FEATURES_REPLY, 32, xid)
                                      + struct.pack("!QIBB2xII", 1, 0, 0, 0, 0, 0))
                elif msg[1] == m.OFPT_GET_CONFIG_REQUEST:
                    self.sock.sendall(m.simple(m.OFPT_GET_CONFIG_REPLY, xid,
                                               struct.pack("!HH", 1, 128)))
        return self.got

    def send(self, msg: bytes) -> None:
        assert self.sock is not None
        self.sock.sendall(msg)


def make_service(threaded: bool) -> tuple[PinctrlService, Switch, PendingWork, Coverage]:
    cov = Coverage()
    work = PendingWork(cov)
    sw = Switch()
    svc = PinctrlService(work, BufferedPackets(cov), cov,
                         connect=lambda t: Connection(sw.connect, name="pinctrl"))
    svc.set_target("unix:/nonexistent/br-int.mgmt")
    if threaded:
        svc.start()
    return svc, sw, work, cov


def spin(svc: PinctrlService, sw: Switch, n: int, rounds: int = 40) -> list[bytes]:
    for _ in range(rounds):
        svc.run()
        if sw.sock is not None and len(sw.pump(until=n, timeout=0.02)) >= n:
            break
    return sw.got


def types(msgs: list[bytes]) -> list[object]:
    return [("nx", m.nx_subtype(x)) if x[1] == m.OFPT_EXPERIMENTER else x[1] for x in msgs]


def test_connection_setup_as_c() -> None:
    svc, sw, _, _ = make_service(threaded=False)
    try:
        got = spin(svc, sw, 5)
        assert types(got)[:5] == [m.OFPT_HELLO, m.OFPT_FEATURES_REQUEST,
                                  m.OFPT_GET_CONFIG_REQUEST, ("nx", m.NXT_SET_PACKET_IN_FORMAT),
                                  m.OFPT_SET_CONFIG]
        assert struct.unpack_from("!I", got[3], 16)[0] == m.NXPIF_NXT_PACKET_IN2
        assert struct.unpack_from("!HH", got[4], 8) == (1, 0xFFFF)   # flags kept, miss 0xffff
    finally:
        svc.close()


def test_packet_ins_dispatched_counted_and_bad_ones_dropped() -> None:
    svc, sw, work, cov = make_service(threaded=False)
    sent: list[bytes] = []

    @registry.handler(210)
    def reply(pin: PacketIn, view: object) -> Outcome:
        sent.append(pin.packet)
        return Outcome(messages=[m.echo_request(77)])

    try:
        spin(svc, sw, 5)
        md = [("metadata", 3, None), ("reg14", 2, None), ("reg0", 0x0A000003, None)]
        sw.send(encode_packet_in2(ARP_REPLY, struct.pack("!I4x", ab.OP_PUT_ARP), md))
        sw.send(encode_packet_in2(ARP_REPLY, struct.pack("!I4x", 210), md))
        sw.send(struct.pack("!BBHIII", 6, 4, 20, 0, 0x2320, 30) + b"\0\0\0\x09")  # bad
        sw.send(encode_packet_in2(ARP_REPLY, struct.pack("!I4x", 211), md))        # unknown
        got = spin(svc, sw, 6)
        assert types(got)[5] == m.OFPT_ECHO_REQUEST and sent == [ARP_REPLY]
        assert cov.read("pinctrl_total_pin_pkts") == 4
        assert svc.stats["bad_packet_ins"] == 1 and svc.stats["dropped"] == 1
        assert len(work) == 1
        assert svc.main_run() is True and svc.main_run() is False
        assert cov.read("pinctrl_notify_main_thread") == 1
    finally:
        registry.unregister(210)
        svc.close()


def test_thread_answers_while_main_thread_is_busy() -> None:
    svc, sw, work, cov = make_service(threaded=True)

    @registry.handler(212)
    def reply(pin: PacketIn, view: object) -> Outcome:
        return Outcome(messages=[m.echo_request(5)])

    try:
        sw.pump(until=5)
        md = [("metadata", 3, None)]
        sw.send(encode_packet_in2(ARP_REPLY, struct.pack("!I4x", 212), md))
        # The main thread is busy in pure Python; the service still answers.
        t0 = time.monotonic()
        x = 0
        while time.monotonic() - t0 < 0.3:
            x += sum(range(1000))
        got = sw.pump(until=6, timeout=2.0)
        assert m.OFPT_ECHO_REQUEST in types(got)[5:]
        # And the main poller wakes for intents.
        sw.send(encode_packet_in2(ARP_REPLY, struct.pack("!I4x", ab.OP_PUT_ARP),
                                  md + [("reg14", 2, None)]))
        poller = ovs.poller.Poller()
        svc.main_wait(poller)
        poller.timer_wait(2000)
        poller.block()
        assert svc.main_run() and len(work) == 1
    finally:
        registry.unregister(212)
        svc.close()


def test_reconnect_redoes_setup() -> None:
    svc, sw, _, _ = make_service(threaded=False)
    try:
        spin(svc, sw, 5)
        assert sw.sock is not None
        sw.sock.close()
        deadline = time.monotonic() + 5
        while sw.connects < 2 and time.monotonic() < deadline:
            svc.run()
            time.sleep(0.05)
        got = spin(svc, sw, 5)
        assert sw.connects == 2
        assert types(got)[:5] == [m.OFPT_HELLO, m.OFPT_FEATURES_REQUEST,
                                  m.OFPT_GET_CONFIG_REQUEST, ("nx", m.NXT_SET_PACKET_IN_FORMAT),
                                  m.OFPT_SET_CONFIG]
    finally:
        svc.close()
