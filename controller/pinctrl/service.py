"""The pinctrl service: its own OpenFlow connection to br-int, packet-in dispatch.

Design note
-----------
Like 23.03.1's ``ovn_pinctrl`` thread, the service owns a separate OpenFlow
1.5 connection to ``unix:$OVS_RUNDIR/<br-int>.mgmt`` (ofctrl's
:class:`~ofctrl.connection.Connection`; 5 s echo probe, 1-8 s reconnect
backoff).  On every (re)connection it sends GET_CONFIG_REQUEST and
NXT_SET_PACKET_IN_FORMAT(packet-in2); the GET_CONFIG_REPLY is answered with
SET_CONFIG(same flags, miss_send_len 0xffff), which enables asynchronous
messages on this service connection.  Nothing else is configured.

Per pass: read at most 50 messages; each NXT_PACKET_IN2 is counted
(``pinctrl_total_pin_pkts``), decoded (a malformed one is counted in
``stats``, logged rate-limited and dropped), dispatched through the
registry against the latest published :class:`LocalView`, and its outcome
applied: OpenFlow messages sent at once, SB intents queued in
:class:`~controller.pinctrl.sb_writes.PendingWork` (the main loop is woken
through a pipe it ``fd_wait``s on), frames to buffer stored, log lines
written.  Then the periodic senders run (objects with ``run(now_ms) ->
list[bytes]`` and ``next_wake_ms()``), and messages the main loop queued
(buffered-packet releases, inject-pkt) are sent.

Thread, not the main poller, decided by measurement
(``python -m benchmarks.pinctrl_latency``; 2 cores shared with 7 other
agents, so the numbers are indicative).  A switch process sends 200
packet-ins/s for 3 s while the main thread runs pure-Python work:

==============  ========  ========  ========
mode            rtt p50   rtt p99   rtt max
==============  ========  ========  ========
thread          5.4 ms    18.2 ms   21.3 ms
same poller     447 ms    977 ms    977 ms   (main "iterations" of 1 s)
==============  ========  ========  ========

From the main poller a packet-in waits for the iteration in progress: up to
1 s here, 7-12 s at today's cold start.  In a thread it waits for the GIL
(handed over every ``sys.getswitchinterval()`` = 5 ms, a few hand-overs per
packet), and the main loop pays only the handler CPU time: decode+dispatch
costs 14 µs for put_arp, 25 µs for an acl log line.  A separate process
would avoid the GIL but would need the local view and every intent
serialised across it, for handlers this cheap.  ``run()``/``wait()`` can
still be driven from the caller's poller (tests do).
"""

from __future__ import annotations

import os
import struct
import threading
from collections import deque
from typing import Callable, Protocol

import ovs.poller
import ovs.timeval

from controller.diag.coverage import COVERAGE, Coverage
from controller.pinctrl.buffered import BufferedPackets
from controller.pinctrl.outcome import BufferIntent, LogIntent, Outcome
from controller.pinctrl.packet_in import PacketInError, decode_packet_in2
from controller.pinctrl.registry import dispatch
from controller.pinctrl.sb_writes import PendingWork
from controller.pinctrl.state import EMPTY_VIEW, LocalView
from controller.vlog import DBG, ERR, INFO, WARN, RateLimiter, get_logger
from ofctrl import messages as m
from ofctrl.connection import Connection, Target

__all__ = ["PinctrlService", "PeriodicSender", "MAX_RECV_PER_PASS"]

log = get_logger("pinctrl")
_rl_decode = RateLimiter(per_minute=12, burst=1)
_rl_drop = RateLimiter(per_minute=12, burst=1)
_rl_handler = RateLimiter(per_minute=12, burst=1)

MAX_RECV_PER_PASS = 50
PROBE_INTERVAL_MS = 5000
_LEVELS = {"dbg": DBG, "debug": DBG, "info": INFO, "warn": WARN, "warning": WARN,
           "err": ERR, "error": ERR}


class PeriodicSender(Protocol):
    def run(self, now_ms: int) -> list[bytes]: ...

    def next_wake_ms(self) -> int | None: ...


def _pipe() -> tuple[int, int]:
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    return r, w


def _drain(fd: int) -> bool:
    got = False
    while True:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return got
        except OSError:
            return got
        if not data:
            return got
        got = True


class PinctrlService:
    """See module docstring."""

    def __init__(self, work: PendingWork, buffered: BufferedPackets,
                 coverage: Coverage = COVERAGE,
                 connect: Callable[[Target], Connection] | None = None) -> None:
        self.work = work
        self.buffered = buffered
        self.cov = coverage
        # Named by its target, like C's rconn: log lines read
        # "unix:.../br-int.mgmt: connected" for both connections.
        self._connect = connect or (lambda t: Connection(
            t, probe_interval_ms=PROBE_INTERVAL_MS))
        self.view: LocalView = EMPTY_VIEW
        self.conn: Connection | None = None
        self._target: Target | None = None
        self._conn_target: Target | None = None
        self._lock = threading.Lock()
        self._outbox: deque[bytes] = deque()
        self.senders: list[PeriodicSender] = []
        self._wake_r, self._wake_w = _pipe()          # main -> service
        self._notify_r, self._notify_w = _pipe()      # service -> main
        self._notified = False
        self._setup_seqno = 0
        self._thread: threading.Thread | None = None
        self._exiting = False
        self.stats: dict[str, int] = {"packet_ins": 0, "bad_packet_ins": 0, "dropped": 0,
                                      "sent": 0}

    # ------------------------------------------------------------ main thread API
    def set_target(self, target: Target) -> None:
        with self._lock:
            if target == self._target:
                return
            self._target = target
        self._wake()

    def publish(self, view: LocalView) -> None:
        """Make ``view`` the one handlers see (one reference swap)."""
        self.view = view

    def add_periodic(self, sender: PeriodicSender) -> None:
        with self._lock:
            self.senders = self.senders + [sender]
        self._wake()

    def send(self, msgs: list[bytes]) -> None:
        """Queue messages for the pinctrl connection (thread-safe)."""
        if not msgs:
            return
        with self._lock:
            self._outbox.extend(msgs)
        self._wake()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="ovn_pinctrl0", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._exiting = True
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        for fd in (self._wake_r, self._wake_w, self._notify_r, self._notify_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._wake_r = self._wake_w = self._notify_r = self._notify_w = -1

    def main_wait(self, poller: ovs.poller.Poller) -> None:
        """The main loop wakes when the service queued work for it."""
        if self._notify_r >= 0:
            poller.fd_wait(self._notify_r, ovs.poller.POLLIN)

    def main_run(self) -> bool:
        """Acknowledge the service's notifications; True if there were any."""
        with self._lock:
            self._notified = False
        return self._notify_r >= 0 and _drain(self._notify_r)

    def wake(self) -> None:
        """Make the service re-run (e.g. a periodic sender's schedule changed)."""
        self._wake()

    # ------------------------------------------------------------ service side
    def _wake(self) -> None:
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b"\0")
            except (BlockingIOError, OSError):
                pass

    def notify_main(self) -> None:
        self.cov.inc("pinctrl_notify_main_thread")
        with self._lock:
            if self._notified:
                return
            self._notified = True
        try:
            os.write(self._notify_w, b"\0")
        except (BlockingIOError, OSError):
            pass

    def _loop(self) -> None:
        while not self._exiting:
            try:
                self.run()
            except Exception:          # never let the thread die silently
                log.exception("pinctrl service iteration failed")
            if self._exiting:
                break
            poller = ovs.poller.Poller()
            self.wait(poller)
            poller.block()

    def run(self) -> None:
        """One pass of the service (see module docstring)."""
        if self._wake_r >= 0:
            _drain(self._wake_r)
        with self._lock:
            target = self._target
            outbox = list(self._outbox)
            self._outbox.clear()
            senders = self.senders
        if target is None:
            return
        conn = self.conn
        if conn is None or target != self._conn_target:
            if conn is not None:
                conn.close()
            conn = self.conn = self._connect(target)
            self._conn_target = target
            self._setup_seqno = 0
        conn.run()
        if not conn.is_connected():
            return
        if conn.seqno != self._setup_seqno:
            self._setup_seqno = conn.seqno
            conn.send(m.get_config_request(conn.next_xid()))
            conn.send(m.set_packet_in_format(conn.next_xid(), m.NXPIF_NXT_PACKET_IN2))
        for _ in range(MAX_RECV_PER_PASS):
            msg = conn.recv()
            if msg is None:
                break
            self._handle(conn, msg)
        now = ovs.timeval.msec()
        for sender in senders:
            try:
                msgs = sender.run(now)
            except Exception:
                log.exception("periodic sender %s failed" % type(sender).__name__)
                continue
            if msgs:
                self._send(conn, msgs)
        if outbox:
            self._send(conn, outbox)
        conn.run()                  # flush what was queued

    def wait(self, poller: ovs.poller.Poller) -> None:
        if self._wake_r >= 0:
            poller.fd_wait(self._wake_r, ovs.poller.POLLIN)
        if self.conn is not None:
            self.conn.wait(poller)
            if self.conn.is_connected():
                for sender in self.senders:
                    t = sender.next_wake_ms()
                    if t is not None:
                        poller.timer_wait_until(t)

    def _send(self, conn: Connection, msgs: list[bytes]) -> None:
        if conn.send_many(msgs):
            self.stats["sent"] += len(msgs)

    def _handle(self, conn: Connection, msg: bytes) -> None:
        mtype = msg[1]
        if mtype == m.OFPT_GET_CONFIG_REPLY and len(msg) >= 12:
            flags = struct.unpack_from("!H", msg, 8)[0]
            conn.send(m.set_config(conn.next_xid(), flags, 0xFFFF))
        elif mtype == m.OFPT_EXPERIMENTER and m.nx_subtype(msg) == m.NXT_PACKET_IN2:
            self.handle_packet_in(conn, msg)
        elif mtype == m.OFPT_PACKET_IN:
            self.cov.inc("pinctrl_total_pin_pkts")
            self.stats["packet_ins"] += 1
            log.warn_rl(_rl_decode, "packet-in userdata lacks action header")
        elif mtype == m.OFPT_ERROR and len(msg) >= 12:
            err = m.decode_error(msg)
            log.debug("OpenFlow error %s" % err.name)
        else:
            log.debug("OpenFlow packet ignored: type %d" % mtype)

    def handle_packet_in(self, conn: Connection | None, msg: bytes) -> Outcome | None:
        """Decode, dispatch and apply one NXT_PACKET_IN2; returns the outcome."""
        self.cov.inc("pinctrl_total_pin_pkts")
        self.stats["packet_ins"] += 1
        try:
            pin = decode_packet_in2(msg)
        except PacketInError as e:
            self.stats["bad_packet_ins"] += 1
            log.warn_rl(_rl_decode, "error decoding packet-in: %s" % e)
            return None
        out = dispatch(pin, self.view)
        self.apply(conn, out)
        return out

    def apply(self, conn: Connection | None, out: Outcome) -> None:
        if out.drop is not None:
            self.stats["dropped"] += 1
            text = out.drop
            if text.startswith("unknown opcode "):
                text = "unrecognized packet-in opcode " + text[len("unknown opcode "):]
            log.warn_rl(_rl_drop, text)
        if out.messages and conn is not None:
            self._send(conn, out.messages)
        notify = False
        for intent in out.intents:
            if isinstance(intent, LogIntent):
                level = _LEVELS.get(intent.level, INFO)
                if intent.rate_limit is None:
                    get_logger(intent.module).log(level, intent.text)
                else:
                    get_logger(intent.module).log_rl(intent.rate_limit, level, intent.text)
            elif isinstance(intent, BufferIntent):
                self.buffered.add(intent)
            else:
                try:
                    accepted = self.work.add(intent)
                except TypeError as e:
                    log.warn_rl(_rl_handler, "bad intent from handler: %s" % e)
                    continue
                notify |= accepted
        if notify:
            self.notify_main()

