"""Active OpenFlow 1.5 client connection with reconnect and backoff.

Design: an OVS-style object driven by the agent's `ovs.poller.Poller`
loop — call `run()` each iteration, then `wait(poller)` before blocking.
The connection FSM (backoff, probes, idle detection) is `ovs.reconnect`;
the socket is our own non-blocking socket (`unix:PATH`, `tcp:HOST:PORT`,
or a factory returning a connected socket, used by tests).

* On connect we send HELLO (version bitmap: OF1.5 only) and wait for the
  peer's HELLO; the connection counts as up (and `seqno` increments) only
  once a HELLO that allows OF1.5 arrives.  A FEATURES_REQUEST follows; its
  reply sets `datapath_id`.
* Received messages are framed from a byte buffer and queued; `recv()`
  pops one.  ECHO_REQUESTs are answered here; an ECHO_REPLY or any other
  message counts as activity for the probe logic (when enabled, `PROBE`
  sends our own ECHO_REQUEST).
* Sending appends to a tx queue flushed as far as the socket accepts.  The
  queue is bounded in bytes: overflowing it is treated as a broken
  connection (everything is resynced after a reconnect anyway).
  `has_backlog()` says whether anything is still unsent (or we are down).
"""

from __future__ import annotations

import errno
import os
import socket
from collections import deque
from typing import Callable

import ovs.poller
import ovs.reconnect
import ovs.timeval
import structlog

from ofctrl import messages as m

log = structlog.get_logger("ofctrl.conn")
# Connection state changes, worded as the C agent's rconn module logs them.
rconn_log = structlog.get_logger("rconn")

Target = str | Callable[[], socket.socket]

# Totals under the OVS library's coverage counter names, for every
# connection of the process (the agent folds them into coverage/show).
COUNTS: dict[str, int] = dict.fromkeys(
    ("rconn_overflow", "rconn_queued", "rconn_sent", "stream_open", "vconn_open",
     "vconn_received", "vconn_sent"), 0)

_RECV_CHUNK = 1 << 20
_SEND_CHUNK = 4 << 20
_MAX_RECV_PER_RUN = 16 << 20


class RateLimit:
    """At most `burst` events per `interval_ms` (then counted as suppressed)."""

    __slots__ = ("burst", "interval_ms", "_window_start", "_n", "suppressed")

    def __init__(self, burst: int = 5, interval_ms: int = 5000) -> None:
        self.burst = burst
        self.interval_ms = interval_ms
        self._window_start = 0
        self._n = 0
        self.suppressed = 0

    def allow(self) -> bool:
        now = ovs.timeval.msec()
        if now - self._window_start >= self.interval_ms:
            self._window_start = now
            self._n = 0
        self._n += 1
        if self._n <= self.burst:
            return True
        self.suppressed += 1
        return False


def mgmt_target(bridge: str, rundir: str | None = None) -> str:
    """`unix:$OVS_RUNDIR/<bridge>.mgmt`, the bridge's management socket."""
    if rundir is None:
        rundir = os.environ.get("OVS_RUNDIR")
    if rundir is None:
        try:
            import ovs.dirs

            rundir = ovs.dirs.RUNDIR
        except ImportError:  # pragma: no cover
            rundir = "/var/run/openvswitch"
    return "unix:%s/%s.mgmt" % (rundir, bridge)


def open_target(target: str, timeout: float = 2.0) -> socket.socket:
    """Connect to `unix:PATH` or `tcp:HOST:PORT` (blocking, short timeout)."""
    if target.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        addr: object = target[5:]
    elif target.startswith("tcp:"):
        host, _, port = target[4:].rpartition(":")
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        addr = (host.strip("[]"), int(port))
    else:
        raise ValueError("unsupported OpenFlow target %r" % target)
    sock.settimeout(timeout)
    try:
        sock.connect(addr)  # type: ignore[arg-type]
    except OSError:
        sock.close()
        raise
    return sock


class Connection:
    def __init__(
        self,
        target: Target,
        *,
        name: str | None = None,
        min_backoff_ms: int = 1000,
        max_backoff_ms: int = 8000,
        probe_interval_ms: int = 0,
        max_tx_bytes: int = 1 << 30,
    ) -> None:
        now = ovs.timeval.msec()
        self.target = target
        self.name = name or (target if isinstance(target, str) else "openflow")
        self.fsm = ovs.reconnect.Reconnect(now)
        self.fsm.set_name(self.name)
        self.fsm.set_quiet(True)
        self.fsm.set_backoff(min_backoff_ms, max_backoff_ms)
        self.fsm.set_probe_interval(probe_interval_ms)
        self.fsm.enable(now)
        self.max_tx_bytes = max_tx_bytes
        self.sock: socket.socket | None = None
        self.seqno = 0  # increments on every established (hello'd) connection
        self.version: int | None = None  # negotiated version, None while down
        self.datapath_id: int | None = None  # from the FEATURES_REPLY of this connection
        self._rx = bytearray()
        self._inbox: deque[bytes] = deque()
        self._tx: deque[bytes] = deque()
        self._tx_bytes = 0
        self._xid = 0
        self._features_xid = -1
        self.n_sent = 0
        self.n_received = 0

    # ----------------------------------------------------------- xids
    def next_xid(self) -> int:
        x = (self._xid + 1) & 0xFFFFFFFF
        if x == 0:
            x = 1
        self._xid = x
        return x

    # ------------------------------------------------------- state
    def is_connected(self) -> bool:
        return self.version is not None

    def has_backlog(self) -> bool:
        return self.version is None or self._tx_bytes > 0

    def tx_backlog_bytes(self) -> int:
        return self._tx_bytes

    def set_target(self, target: Target) -> None:
        if target != self.target:
            self.target = target
            self.force_reconnect()

    def set_probe_interval(self, ms: int) -> None:
        self.fsm.set_probe_interval(ms)

    def force_reconnect(self) -> None:
        if self.sock is not None:
            self._disconnect(0)
        self.fsm.force_reconnect(ovs.timeval.msec())

    def close(self) -> None:
        self._close_socket()
        self.fsm.disable(ovs.timeval.msec())

    # --------------------------------------------------------- running
    def run(self) -> None:
        now = ovs.timeval.msec()
        action = self.fsm.run(now)
        if action == ovs.reconnect.CONNECT:
            self._connect(now)
        elif action == ovs.reconnect.DISCONNECT:
            rconn_log.error(f"{self.name}: no response to inactivity probe after "
                            f"{self.fsm.get_probe_interval() // 1000} seconds, disconnecting")
            self._disconnect(errno.ETIMEDOUT)
        elif action == ovs.reconnect.PROBE and self.version is not None:
            self.send(m.echo_request(self.next_xid()))
        if self.sock is not None:
            self._flush()
        if self.sock is not None:
            self._read(now)

    def wait(self, poller: ovs.poller.Poller) -> None:
        now = ovs.timeval.msec()
        self.fsm.wait(poller, now)
        if self.sock is not None:
            events = ovs.poller.POLLIN
            if self._tx:
                events |= ovs.poller.POLLOUT
            poller.fd_wait(self.sock, events)
        if self._inbox:
            poller.immediate_wake()

    def _connect(self, now: int) -> None:
        self.fsm.connecting(now)
        rconn_log.info(f"{self.name}: connecting...")
        COUNTS["stream_open"] += 1; COUNTS["vconn_open"] += 1  # noqa: E702
        try:
            if isinstance(self.target, str):
                sock = open_target(self.target)
            else:
                sock = self.target()
        except OSError as exc:
            error = exc.errno or errno.ECONNREFUSED
            rconn_log.warning(f"{self.name}: connection failed ({os.strerror(error)})")
            self.fsm.connect_failed(now, 0)
            rconn_log.info(f"{self.name}: waiting {self.fsm.backoff // 1000} seconds "
                           "before reconnect")
            return
        sock.setblocking(False)
        self.sock = sock
        self._rx = bytearray()
        self._inbox.clear()
        self._tx.clear()
        self._tx_bytes = 0
        self.version = None
        self.fsm.connected(now)
        self._queue(m.hello(self.next_xid()))
        self._flush()

    def _close_socket(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:  # pragma: no cover
                pass
        self.sock = None
        self.version = None
        self._tx.clear()
        self._tx_bytes = 0

    def _disconnect(self, error: int) -> None:
        was_up = self.version is not None
        self._close_socket()
        # The reason was logged (rconn_log); the quiet FSM only needs the event.
        self.fsm.disconnected(ovs.timeval.msec(), 0)
        if was_up:
            log.debug("disconnected", target=self.name, error=error)

    # ------------------------------------------------------------ tx
    def _queue(self, msg: bytes) -> None:
        self._tx.append(msg)
        self._tx_bytes += len(msg)
        COUNTS["rconn_queued"] += 1

    def send(self, msg: bytes) -> bool:
        """Queue one message; False (and the connection is reset) if down or
        over the tx bound."""
        if self.version is None or self.sock is None:
            return False
        if self._tx_bytes + len(msg) > self.max_tx_bytes:
            log.error("tx queue overflow, reconnecting", target=self.name, queued=self._tx_bytes)
            COUNTS["rconn_overflow"] += 1
            self.force_reconnect()
            return False
        self._queue(msg)
        return True

    def send_many(self, msgs: list[bytes]) -> bool:
        if self.version is None or self.sock is None:
            return False
        total = sum(map(len, msgs))
        if self._tx_bytes + total > self.max_tx_bytes:
            log.error("tx queue overflow, reconnecting", target=self.name, queued=self._tx_bytes, adding=total)
            COUNTS["rconn_overflow"] += 1
            self.force_reconnect()
            return False
        self._tx.extend(msgs)
        self._tx_bytes += total
        COUNTS["rconn_queued"] += len(msgs)
        self.n_sent += len(msgs)
        self._flush()
        return True

    def _flush(self) -> None:
        tx = self._tx
        sock = self.sock
        assert sock is not None
        while tx:
            if len(tx[0]) >= _SEND_CHUNK or len(tx) == 1:
                chunk = tx.popleft()
                parts = [chunk]
            else:
                parts = []
                size = 0
                while tx and size < _SEND_CHUNK:
                    p = tx.popleft()
                    parts.append(p)
                    size += len(p)
                chunk = b"".join(parts)
            try:
                n = sock.send(chunk)
            except (BlockingIOError, InterruptedError):
                tx.appendleft(chunk)
                return
            except OSError as exc:
                log.info("send failed", target=self.name, error=str(exc))
                self._disconnect(exc.errno or errno.EPIPE)
                return
            self._tx_bytes -= n
            # A remainder put back counts as one message once it is written.
            sent = len(parts) - (n < len(chunk))
            COUNTS["rconn_sent"] += sent; COUNTS["vconn_sent"] += sent  # noqa: E702
            if n < len(chunk):
                tx.appendleft(chunk[n:])
                return

    # ------------------------------------------------------------ rx
    def _read(self, now: int) -> None:
        sock = self.sock
        assert sock is not None
        self.fsm.receive_attempted(now)
        got = 0
        while got < _MAX_RECV_PER_RUN:
            try:
                data = sock.recv(_RECV_CHUNK)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                error = exc.errno or errno.ECONNRESET
                rconn_log.warning(f"{self.name}: connection dropped ({os.strerror(error)})")
                self._disconnect(error)
                return
            if not data:
                rconn_log.info(f"{self.name}: connection closed by peer")
                self._disconnect(errno.ECONNRESET)
                return
            got += len(data)
            self._rx += data
            if len(data) < _RECV_CHUNK:
                break
        if got:
            self.fsm.activity(now)
            self._frame()

    def _frame(self) -> None:
        rx = self._rx
        off = 0
        n = len(rx)
        unpack = m.HEADER.unpack_from
        while n - off >= 8:
            version, mtype, length, xid = unpack(rx, off)
            if length < 8:
                log.error("bad OpenFlow message length", length=length)
                self._disconnect(errno.EPROTO)
                return
            if n - off < length:
                break
            msg = bytes(rx[off:off + length])
            off += length
            self._handle(msg, version, mtype)
            if self.sock is None:
                return
        if off:
            del rx[:off]

    def _handle(self, msg: bytes, version: int, mtype: int) -> None:
        COUNTS["vconn_received"] += 1
        if self.version is None:
            if mtype != m.OFPT_HELLO:
                log.error("expected hello", got_type=mtype)
                self._disconnect(errno.EPROTO)
                return
            if not self._hello_allows_of15(msg, version):
                log.error("peer does not allow OpenFlow 1.5", peer_version=version)
                self._disconnect(errno.EPROTO)
                return
            self.version = m.OFP15_VERSION
            self.seqno += 1
            self.datapath_id = None
            rconn_log.info(f"{self.name}: connected")
            self._features_xid = self.next_xid()
            self._queue(m.features_request(self._features_xid))
            return
        self.n_received += 1
        if mtype == m.OFPT_ECHO_REQUEST:
            self.send(m.echo_reply_for(msg))
            return
        if mtype == m.OFPT_ECHO_REPLY:
            return
        if mtype == m.OFPT_FEATURES_REPLY and m.HEADER.unpack_from(msg)[3] == self._features_xid:
            self.datapath_id = m.decode_features_reply(msg)
            return
        self._inbox.append(msg)

    @staticmethod
    def _hello_allows_of15(msg: bytes, version: int) -> bool:
        off = 8
        while off + 4 <= len(msg):
            etype, elen = int.from_bytes(msg[off:off + 2], "big"), int.from_bytes(msg[off + 2:off + 4], "big")
            if elen < 4:
                break
            if etype == 1 and elen >= 8:  # version bitmap
                bitmap = int.from_bytes(msg[off + 4:off + 8], "big")
                return bool(bitmap & (1 << m.OFP15_VERSION))
            off += (elen + 7) // 8 * 8
        return version >= m.OFP15_VERSION

    def recv(self) -> bytes | None:
        """Next received message (echo handled already), or None."""
        if self._inbox:
            return self._inbox.popleft()
        return None
