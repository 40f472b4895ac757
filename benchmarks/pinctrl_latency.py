"""pinctrl: per-packet-in cost, and service thread vs main-poller latency.

``python -m benchmarks.pinctrl_latency`` prints:

* decode+dispatch cost of a put_arp and of an acl log packet-in (µs);
* packet-in round trip (switch -> service -> packet-out back at the switch)
  while the main thread is busy in pure Python (a stand-in for the cold-start
  engine iterations of 7-12 s), with the service in its own thread;
* the same with the service run from the main poller between "iterations"
  of BUSY_S seconds (what a same-poller design would give);
* how much slower the busy main thread runs while packet-ins arrive at RATE/s.

The switch side runs in a forked child process over a socketpair (as
vswitchd is another process), so only the agent's own threads share the GIL.
"""

from __future__ import annotations

import multiprocessing
import select
import socket
import struct
import time

from controller.diag.coverage import Coverage
from controller.lflow.actions import base as ab
from controller.pinctrl import registry
from controller.pinctrl.buffered import BufferedPackets
from controller.pinctrl.outcome import Outcome
from controller.pinctrl.packet_in import PacketIn, decode_packet_in2, encode_packet_in2
from controller.pinctrl.sb_writes import PendingWork
from controller.pinctrl.service import PinctrlService
from controller.pinctrl.state import EMPTY_VIEW
from ofctrl import messages as m
from ofctrl.connection import Connection

BUSY_S = 1.0
RATE = 200
ECHO_OP = 250
ARP = (bytes.fromhex("00000000ff01505400000003" "0806" "0001080006040002" "505400000003")
       + bytes([10, 0, 0, 3]) + bytes.fromhex("00000000ff01") + bytes([10, 0, 0, 1]))
TCP = bytes.fromhex("505400000002505400000001" "0800" "450000280000400040060000"
                    "c0a80102c0a80103" "1e6111080000000000000000" "5002000000000000")


def cost_us(msg: bytes, n: int = 20000) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        registry.dispatch(decode_packet_in2(msg), EMPTY_VIEW)
    return (time.perf_counter() - t0) / n * 1e6


class Switch:
    """Sends a timestamped packet-in every 1/RATE s; records round trips."""

    def __init__(self, seconds: float) -> None:
        self.ours, self.sock = socket.socketpair()
        self.sock.sendall(m.hello(1))
        self.rtts: list[float] = []
        self.sent: dict[int, float] = {}
        self.seconds = seconds
        self.results: multiprocessing.Queue[list[float]] = multiprocessing.Queue()
        self.proc = multiprocessing.get_context("fork").Process(target=self._child, daemon=True)

    def start(self) -> None:
        self.proc.start()

    def join(self) -> list[float]:
        rtts = self.results.get(timeout=30)
        self.proc.join(5)
        return rtts

    def _child(self) -> None:
        self.run()
        self.results.put(self.rtts)

    def run(self) -> None:
        rx = b""
        seq = 0
        next_send = time.monotonic() + 0.2
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_send:
                seq += 1
                self.sent[seq] = now
                self.sock.sendall(encode_packet_in2(
                    ARP, struct.pack("!I4x", ECHO_OP) + struct.pack("!I", seq)))
                next_send += 1.0 / RATE
            r, _, _ = select.select([self.sock], [], [], max(0.0, next_send - time.monotonic()))
            if not r:
                continue
            rx += self.sock.recv(1 << 20)
            while len(rx) >= 8 and len(rx) >= struct.unpack_from("!H", rx, 2)[0]:
                n = struct.unpack_from("!H", rx, 2)[0]
                msg, rx = rx[:n], rx[n:]
                xid = struct.unpack_from("!I", msg, 4)[0]
                if msg[1] == m.OFPT_FEATURES_REQUEST:
                    self.sock.sendall(m.header(m.OFPT_FEATURES_REPLY, 32, xid) + bytes(24))
                elif msg[1] == m.OFPT_ECHO_REQUEST and xid in self.sent:
                    self.rtts.append(time.monotonic() - self.sent.pop(xid))


def busy(seconds: float) -> int:
    """Pure-Python work for `seconds`; returns loop count (throughput)."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        sum(range(2000))
        n += 1
    return n


def run_mode(threaded: bool, seconds: float = 3.0) -> tuple[list[float], int]:
    sw = Switch(seconds)
    svc = PinctrlService(PendingWork(Coverage()), BufferedPackets(Coverage()), Coverage(),
                         connect=lambda t: Connection(lambda: sw.ours, name="bench"))
    svc.set_target("bench")
    sw.start()
    work = 0
    if threaded:
        svc.start()
        work = busy(seconds)
    else:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            work += busy(BUSY_S)          # one "main loop iteration"
            for _ in range(20):           # then the poller serves what queued up
                svc.run()
    rtts = sw.join()
    svc.close()
    return rtts, work


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")


def main() -> None:
    @registry.handler(ECHO_OP)
    def echo(pin: PacketIn, view: object) -> Outcome:
        return Outcome(messages=[m.echo_request(int.from_bytes(pin.payload[:4], "big"))])

    put_arp = encode_packet_in2(ARP, struct.pack("!I4x", ab.OP_PUT_ARP),
                                [("metadata", 3, None), ("reg14", 1, None),
                                 ("reg0", 0x0A000003, None)])
    log = encode_packet_in2(TCP, struct.pack("!I4x", ab.OP_LOG) + b"\x00\x06name",
                            [("metadata", 3, None)], table_id=44)
    print("decode+dispatch: put_arp %.1f us, log %.1f us" % (cost_us(put_arp), cost_us(log)))
    base = busy(3.0)
    for threaded in (True, False):
        rtts, work = run_mode(threaded)
        print("%-12s packet-ins answered %5d  rtt p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  "
              "main-thread throughput %.0f%% of idle"
              % ("thread" if threaded else "same-poller", len(rtts), pct(rtts, 0.5),
                 pct(rtts, 0.99), pct(rtts, 1.0), 100.0 * work / base))


if __name__ == "__main__":
    import controller.pinctrl  # noqa: F401
    main()
