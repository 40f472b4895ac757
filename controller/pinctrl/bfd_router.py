"""Router BFD over logical router ports (pinctrl.c bfd_monitor_*, OVN 23.03.1).

Not the OVS Interface BFD of tunnels (``controller/chassis/bfd.py``): these sessions
come from the SB ``BFD`` table northd fills from NB ``BFD`` rows (routes
with ``--bfd``), and pinctrl itself sends and receives the control packets.

Design note
-----------
Split along C's thread boundary, like ``svc_monitor``:

* :func:`bfd_specs` (main loop, pure): the SB BFD rows this chassis runs --
  the row's ``logical_port`` Port_Binding exists, has an ``options:peer``
  that resolves, and is an ``l3gateway`` port bound here or its
  ``cr-<port>`` is resident here.  The source is picked as C does when a
  session is created: over the port's ``mac`` entries (IDL order, i.e.
  sorted), the MAC of each parsable entry; the first entry with an IPv6
  address when ``dst_ip`` is IPv6, else the first with an IPv4 address,
  gives the source IP; without one the source is 169.254.1.1.  A port with
  no parsable ``mac`` entry (or a ``dst_ip`` that does not parse) gets no
  new session.
* :class:`BfdSessions` (shared with the service thread, one lock), keyed by
  (``dst_ip`` text, ``src_port``).  :meth:`~BfdSessions.sync` is
  ``bfd_monitor_run``: a new session starts ``admin_down`` with
  remote_min_rx 1 ms, detection time 30 s, tx due now; a later run that
  sees SB ``status`` other than ``admin_down`` moves it to ``down`` (and
  wakes the service), SB ``admin_down`` forces it back (remote disc 0);
  otherwise a session flagged by the state machine has its state written
  as ``status`` when the iteration has an SB transaction (remote disc reset
  to 0 when that state is down).  Every run re-reads dst_ip, min_tx,
  min_rx and detect_mult; rows that disappear end their session.
* :meth:`~BfdSessions.run` (a periodic sender) is ``bfd_monitor_send_msg``,
  run when some session's next_tx is past: detection timeout (no rx for
  mult x max(remote min_tx, local min_rx) while init/up => down, main loop
  woken at once), then for each due session not admin_down, not in remote
  demand mode and with a remote min_rx, one control packet, next one in
  max(min_tx, remote_min_rx) minus a random [0, interval/4) ms.
* :meth:`~BfdSessions.handle` (opcode ``handle_bfd_msg()``) checks the
  packet as C does (v1, no auth, length >= 24, mult != 0, no multipoint,
  my_disc != 0, not F+P, your_disc set once the peer is init/up), finds the
  session by (source IP text, your_disc == local disc), learns the remote
  disc / min_rx / detection time and runs RFC 5880's transitions as C
  codes them; P gets an immediate F reply; D while up enters demand mode
  (never left, as in C).  Malformed packets are counted per reason in
  :attr:`BfdSessions.malformed` and logged at debug level (C's DBG_RL).
* Batching: state changes are counted; the main loop is woken when 10
  accumulate or, with one pending, 5 s after the last flush.

Frames: eth dst broadcast, src = session MAC; IPv4 (TOS 0, id 0, DF) or
IPv6, TTL 255; UDP src = ``src_port``, dst 3784, checksum only over IPv6;
24-byte BFD v1 (diag 0, state << 6 | F, mult, length 24, discriminators,
min_tx / min_rx in microseconds, echo 0).  Sent as PO-I: metadata =
datapath, reg14 = the router port, resubmit(CONTROLLER, 8).

Deviations: C arms no timer when a pass finds nothing due, and only tests
``next_tx < now`` -- woken exactly at next_tx it sleeps until something
else wakes it (an idle C agent sent 3 packets in 30 s in
``integration/test_pinctrl_bfd.py``, and checks no detection time
meanwhile); here the wake-up is next_tx + 1 ms, the detection deadline and
the 5 s flush deadline, so sends and timeouts are not delayed.  C reads the BFD header without
checking that 24 bytes are there; here a short payload is dropped.
"""

from __future__ import annotations

import ipaddress
import random
import socket
import struct
import threading
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from controller.binding.local_data import opt_first
from controller.lflow.actions.base import OP_BFD_MSG
from controller.pinctrl import frames
from controller.pinctrl.frames import FrameError
from controller.pinctrl.garp import extract_lsp_addresses
from controller.pinctrl.openflow import po_inject
from controller.pinctrl.outcome import LogIntent, Outcome
from controller.pinctrl.packet_in import PacketIn
from controller.pinctrl.registry import handler
from controller.pinctrl.state import LocalView
from controller.vlog import RateLimiter
from physical.lport import lport_is_chassis_resident

__all__ = ["BfdSpec", "BfdMsg", "BfdDrop", "BfdSessions", "bfd_specs", "bfd_frame", "parse_bfd",
           "handle_bfd_msg", "attach", "ADMIN_DOWN", "DOWN", "INIT", "UP", "STATUS",
           "BFD_DEST_PORT", "INGRESS_TABLE"]

ADMIN_DOWN, DOWN, INIT, UP = range(4)
STATUS = ("admin_down", "down", "init", "up")
F_MULTIPOINT, F_DEMAND, F_AUTH, F_CTL, F_FINAL, F_POLL = (1 << i for i in range(6))
BFD_DEST_PORT = 3784
BFD_VERSION = 1
BFD_PACKET_LEN = 24
INGRESS_TABLE = 8                    # OFTABLE_LOG_INGRESS_PIPELINE
UPDATE_BATCH = 10                    # BFD_UPDATE_BATCH_TH
UPDATE_TIMEOUT_MS = 5000             # BFD_UPDATE_TIMEOUT
INITIAL_DETECTION_MS = 30000
_V4_MAPPED = b"\0" * 10 + b"\xff\xff"
_DEFAULT_SRC = _V4_MAPPED + bytes((169, 254, 1, 1))
_DEFAULT_DST = _V4_MAPPED + bytes((169, 254, 1, 0))
_MSG = struct.Struct("!BBBBIIIII")
_UDP = struct.Struct("!HHHH")
_BCAST = b"\xff" * 6
_U32 = 0xFFFFFFFF
_MODULE = "pinctrl"
_rl_dbg = RateLimiter(per_minute=30, burst=30)

Key = tuple[str, int]


# ====================================================================== specs
def _ip_list(text: str) -> tuple[list[bytes], list[bytes]] | None:
    """extract_ip_addresses: (IPv4s, IPv6s) as 16-byte values, or None."""
    v4: list[bytes] = []
    v6: list[bytes] = []
    for tok in text.replace(",", " ").split():
        try:
            net = ipaddress.ip_interface(tok)
        except ValueError:
            return None
        if net.version == 4:
            v4.append(_V4_MAPPED + net.ip.packed)
        else:
            v6.append(net.ip.packed)
    return (v4, v6) if v4 or v6 else None


def _dst_addr(dst_ip: str) -> bytes | None:
    """bfd_monitor_check_sb_conf: the first IPv6 of dst_ip, else its first IPv4."""
    parsed = _ip_list(dst_ip)
    if parsed is None:
        return None
    v4, v6 = parsed
    return v6[0] if v6 else v4[0]


def _ip6_values(text: str) -> list[bytes]:
    out: list[bytes] = []
    for tok in text.split()[1:]:
        if ":" not in tok:
            continue
        try:
            out.append(ipaddress.IPv6Interface(tok).ip.packed)
        except ValueError:
            continue
    return out


def _source(pb_macs: Iterable[str], dst_ip: str) -> tuple[bytes, bytes] | None:
    """(src MAC, src IP) chosen when a session is created, or None."""
    parsed = _ip_list(dst_ip)
    if parsed is None:
        return None
    dst_v6 = bool(parsed[1])
    mac: bytes | None = None
    for text in pb_macs:
        a = extract_lsp_addresses(text)
        if a is None:
            continue
        mac = bytes(int(x, 16) for x in a.mac.split(":"))
        v6 = _ip6_values(text) if a.n_ipv6 else []
        if dst_v6 and v6:
            return mac, v6[0]
        if a.ipv4:
            return mac, _V4_MAPPED + socket.inet_aton(a.ipv4[0])
    return (mac, _DEFAULT_SRC) if mac is not None else None


@dataclass(frozen=True, slots=True)
class BfdSpec:
    """One SB BFD row this chassis runs (see module note)."""

    row_uuid: uuidlib.UUID
    dst_ip: str
    src_port: int
    disc: int
    min_tx: int
    min_rx: int
    detect_mult: int
    status: str
    dp_key: int
    port_key: int
    source: tuple[bytes, bytes] | None     # (MAC, 16-byte IP) for a new session

    @property
    def key(self) -> Key:
        return (self.dst_ip, self.src_port)


def _scalar(v: Any, default: Any) -> Any:
    if isinstance(v, list):
        return v[0] if v else default
    return default if v is None else v


def bfd_specs(rows: Iterable[Any], chassis: Any, pb_by_name: Callable[[str], Any],
              active_tunnels: set[str] | frozenset[str] = frozenset()) -> list[BfdSpec]:
    """The SB BFD rows this chassis runs (bfd_monitor_run's filter)."""
    out: list[BfdSpec] = []
    if chassis is None:
        return out
    for row in rows:
        pb = pb_by_name(row.logical_port)
        if pb is None:
            continue
        peer = pb.options.get("peer")
        if not peer or pb_by_name(peer) is None:
            continue
        ch = opt_first(pb.chassis)
        here = pb.type == "l3gateway" and ch is not None and ch.uuid == chassis.uuid
        if not here and not lport_is_chassis_resident("cr-" + row.logical_port, chassis, pb_by_name,
                                      active_tunnels):
            continue
        if pb.datapath is None:
            continue
        macs = [pb.mac] if isinstance(pb.mac, str) else sorted(pb.mac)
        out.append(BfdSpec(
            row.uuid, row.dst_ip, int(row.src_port), int(row.disc), int(row.min_tx),
            int(row.min_rx), int(row.detect_mult), _scalar(row.status, ""),
            int(pb.datapath.tunnel_key), int(pb.tunnel_key), _source(macs, row.dst_ip)))
    return out


# ====================================================================== frames
@dataclass(frozen=True, slots=True)
class BfdMsg:
    """A BFD control packet's fields (RFC 5880 section 4.1)."""

    version: int
    diag: int
    state: int
    flags: int              # the low 6 bits: P F C A D M
    mult: int
    length: int
    my_disc: int
    your_disc: int
    min_tx: int             # microseconds
    min_rx: int
    min_rx_echo: int

    def pack(self) -> bytes:
        return _MSG.pack((self.version << 5) | (self.diag & 0x1F),
                         (self.state << 6) | (self.flags & 0x3F), self.mult & 0xFF,
                         self.length & 0xFF, self.my_disc & _U32, self.your_disc & _U32,
                         self.min_tx & _U32, self.min_rx & _U32, self.min_rx_echo & _U32)


def bfd_frame(src_mac: bytes, ip_src: bytes, ip_dst: bytes, src_port: int,
              msg: BfdMsg) -> bytes:
    """bfd_monitor_put_bfd_msg: the Ethernet frame of one control packet.
    Addresses are 16 bytes; an IPv4-mapped source makes an IPv4 frame."""
    body = msg.pack()
    udp_len = _UDP.size + len(body)
    if ip_src.startswith(_V4_MAPPED):
        udp = _UDP.pack(src_port & 0xFFFF, BFD_DEST_PORT, udp_len, 0) + body
        return frames._ip4(src_mac, _BCAST, ip_src[12:], ip_dst[12:], frames.IPPROTO_UDP,
                           255, udp)
    raw = _UDP.pack(src_port & 0xFFFF, BFD_DEST_PORT, udp_len, 0) + body
    ck = frames._l4_csum(ip_src, ip_dst, frames.IPPROTO_UDP, raw, True) or 0xFFFF
    return frames._ip6(src_mac, _BCAST, ip_src, ip_dst, frames.IPPROTO_UDP, 255,
                       raw[:6] + struct.pack("!H", ck) + raw[8:])


@dataclass(frozen=True, slots=True)
class BfdDrop:
    """Why a packet was dropped: ``kind`` counts it, ``text`` is C's debug line."""

    kind: str
    text: str


def parse_bfd(frame: bytes) -> tuple[str, BfdMsg] | BfdDrop:
    """pinctrl_check_bfd_msg: (source IP text, message) or why it is dropped."""
    try:
        h = frames.parse(frame)
    except FrameError as e:
        return BfdDrop("frame", "BFD action: %s" % e)
    if h.dl_type not in (frames.ETH_TYPE_IP, frames.ETH_TYPE_IPV6):
        return BfdDrop("not_ip", "BFD action on non-IP packet (%x)" % h.dl_type)
    if h.nw_proto != frames.IPPROTO_UDP:
        return BfdDrop("not_udp", "BFD action on non-UDP packet %02x" % h.nw_proto)
    if h.l4 is None or len(frame) < h.l4 + _UDP.size:
        return BfdDrop("short_udp", "BFD action: short UDP header")
    if h.tp_dst != BFD_DEST_PORT:
        return BfdDrop("wrong_port", "BFD action on wrong UDP dst port (%x)" % h.tp_dst)
    p = h.l4 + _UDP.size
    if len(frame) < p + _MSG.size:
        return BfdDrop("short_payload",
                       "BFD action: packet is too short %d" % max(0, len(frame) - p))
    vd, fl, mult, length, my, your, tx, rx, echo = _MSG.unpack_from(frame, p)
    msg = BfdMsg(vd >> 5, vd & 0x1F, fl >> 6, fl & 0x3F, mult, length, my, your, tx, rx, echo)
    if msg.version != BFD_VERSION:
        return BfdDrop("version", "BFD action: unsupported version %d" % msg.version)
    if msg.flags & F_AUTH:
        return BfdDrop("auth", "BFD action: AUTH not supported yet")
    if length < BFD_PACKET_LEN:
        return BfdDrop("length", "BFD action: packet is too short %d" % length)
    if not mult:
        return BfdDrop("mult", "BFD action: multiplier not set")
    if msg.flags & F_MULTIPOINT:
        return BfdDrop("multipoint", "BFD action: MULTIPOINT not supported yet")
    if not my:
        return BfdDrop("my_disc", "BFD action: my_disc not set")
    if msg.flags & F_FINAL and msg.flags & F_POLL:
        return BfdDrop("flags", "BFD action: wrong flags combination %08x" % msg.flags)
    if msg.state >= INIT and not your:
        return BfdDrop("your_disc", "BFD action: remote state is %s and your_disc is not set"
                       % STATUS[msg.state])
    if h.dl_type == frames.ETH_TYPE_IP:
        src = socket.inet_ntop(socket.AF_INET, h.nw_src)
    else:
        src = socket.inet_ntop(socket.AF_INET6, h.nw_src)
    return src, msg


# ====================================================================== sessions
class _Session:
    __slots__ = ("src_mac", "ip_src", "ip_dst", "udp_src", "local_disc",
                 "remote_disc", "local_min_tx", "local_min_rx", "remote_min_rx",
                 "remote_demand", "local_mult", "dp_key", "port_key", "state",
                 "change_state", "detection_timeout", "last_rx", "next_tx")

    def __init__(self, spec: BfdSpec, src_mac: bytes, ip_src: bytes, now: int) -> None:
        self.src_mac = src_mac
        self.ip_src = ip_src
        self.ip_dst = _DEFAULT_DST
        self.udp_src = spec.src_port
        self.local_disc = spec.disc & _U32
        self.remote_disc = 0
        self.remote_min_rx = 1               # RFC 5880 page 29
        self.remote_demand = False
        self.dp_key = spec.dp_key
        self.port_key = spec.port_key
        self.state = ADMIN_DOWN
        self.change_state = False
        self.detection_timeout = INITIAL_DETECTION_MS
        self.last_rx = now
        self.next_tx = now
        self.conf(spec)

    def conf(self, spec: BfdSpec) -> None:
        """bfd_monitor_check_sb_conf."""
        dst = _dst_addr(spec.dst_ip)
        if dst is not None:
            self.ip_dst = dst
        self.local_min_tx = spec.min_tx & _U32
        self.local_min_rx = spec.min_rx & _U32
        self.local_mult = spec.detect_mult & 0xFF

    def message(self, final: bool) -> bytes:
        msg = BfdMsg(BFD_VERSION, 0, self.state, F_FINAL if final else 0, self.local_mult,
                     BFD_PACKET_LEN, self.local_disc, self.remote_disc,
                     self.local_min_tx * 1000, self.local_min_rx * 1000, 0)
        frame = bfd_frame(self.src_mac, self.ip_src, self.ip_dst, self.udp_src, msg)
        return po_inject(frame, self.dp_key, self.port_key, INGRESS_TABLE)


class BfdSessions:
    """Router BFD sessions (see module note).  The main loop calls
    :meth:`sync` and :meth:`write_status`; the service thread :meth:`run`
    (a periodic sender) and :meth:`handle` (``handle_bfd_msg()``)."""

    def __init__(self, notify_service: Callable[[], None] | None = None,
                 notify_main: Callable[[], None] | None = None,
                 clock: Callable[[], int] | None = None,
                 randrange: Callable[[int], int] | None = None) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[Key, _Session] = {}
        self._notify_service = notify_service
        self._notify_main = notify_main
        self._clock = clock
        self._randrange = randrange or random.Random().randrange
        self._pending = 0
        self._last_update = self._now()
        self._next_wake: int | None = None
        self.malformed: dict[str, int] = {}      # dropped packets per BfdDrop.kind

    def _now(self, now_ms: int | None = None) -> int:
        if now_ms is not None:
            return int(now_ms)
        if self._clock is not None:
            return int(self._clock())
        import ovs.timeval
        return int(ovs.timeval.msec())

    # ------------------------------------------------------------ main loop
    def sync(self, specs: Iterable[BfdSpec], has_txn: bool,
             now_ms: int | None = None) -> tuple[list[tuple[uuidlib.UUID, str]], bool]:
        """bfd_monitor_run.  Returns the (row, status) writes to make in this
        iteration's transaction (none without ``has_txn``) and whether a
        session was created whose SB status may move it out of admin_down on
        the next run (the caller should run again soon)."""
        now = self._now(now_ms)
        writes: list[tuple[uuidlib.UUID, str]] = []
        changed = created = False
        with self._lock:
            seen: set[Key] = set()
            for spec in specs:
                key = spec.key
                s = self._sessions.get(key)
                if s is None:
                    if spec.source is None or _dst_addr(spec.dst_ip) is None:
                        continue
                    s = self._sessions[key] = _Session(spec, spec.source[0], spec.source[1],
                                                       now)
                    created |= spec.status != STATUS[ADMIN_DOWN]
                elif spec.status == STATUS[ADMIN_DOWN] and s.state != ADMIN_DOWN:
                    s.state, s.change_state, s.remote_disc = ADMIN_DOWN, False, 0
                elif spec.status != STATUS[ADMIN_DOWN] and s.state == ADMIN_DOWN:
                    s.state, s.change_state, s.remote_disc = DOWN, False, 0
                    changed = True
                elif s.change_state and has_txn:
                    if s.state == DOWN:
                        s.remote_disc = 0
                    writes.append((spec.row_uuid, STATUS[s.state]))
                    s.change_state = False
                s.conf(spec)
                seen.add(key)
            for key in [k for k in self._sessions if k not in seen]:
                del self._sessions[key]
            if changed:
                self._next_wake = 0
        if changed and self._notify_service is not None:
            self._notify_service()
        return writes, created

    @staticmethod
    def write_status(table: Mapping[uuidlib.UUID, Any],
                     writes: Iterable[tuple[uuidlib.UUID, str]]) -> int:
        """Set ``status`` of the rows (the caller holds the SB transaction)."""
        n = 0
        for row_uuid, status in writes:
            row = table.get(row_uuid)
            if row is not None and _scalar(row.status, "") != status:
                row.status = status
                n += 1
        return n

    # ------------------------------------------------------------ service
    def _need_update(self, now: int) -> bool:
        """bfd_monitor_need_update (under the lock)."""
        if self._pending == UPDATE_BATCH or (
                self._pending and self._last_update + UPDATE_TIMEOUT_MS < now):
            self._last_update = now
            self._pending = 0
            return True
        return False

    def run(self, now_ms: int | None = None) -> list[bytes]:
        """bfd_monitor_should_inject + bfd_monitor_send_msg."""
        now = self._now(now_ms)
        out: list[bytes] = []
        notify = False
        with self._lock:
            if not any(s.next_tx < now for s in self._sessions.values()):
                self._next_wake = self._wake_at()
                return out
            notify = self._need_update(now)
            for s in self._sessions.values():
                if s.state in (INIT, UP) and s.detection_timeout \
                        and now >= s.last_rx + s.detection_timeout:
                    s.state, s.change_state = DOWN, True
                    self._last_update, self._pending = now, 0
                    notify = True
                if now < s.next_tx or not s.remote_min_rx or s.state == ADMIN_DOWN \
                        or s.remote_demand:
                    continue
                out.append(s.message(False))
                interval = max(s.local_min_tx, s.remote_min_rx)
                if interval >= 4:
                    interval -= self._randrange(interval // 4)
                s.next_tx = now + interval
            self._next_wake = self._wake_at()
        if notify and self._notify_main is not None:
            self._notify_main()
        return out

    def _wake_at(self) -> int | None:
        """The next pass worth running (under the lock; see the deviations)."""
        at = [s.next_tx + 1 for s in self._sessions.values()
              if s.remote_min_rx and s.state != ADMIN_DOWN and not s.remote_demand]
        at += [s.last_rx + s.detection_timeout for s in self._sessions.values()
               if s.state in (INIT, UP) and s.detection_timeout]
        if self._pending:
            at.append(self._last_update + UPDATE_TIMEOUT_MS + 1)
        return min(at) if at else None

    def next_wake_ms(self) -> int | None:
        with self._lock:
            return self._next_wake

    def handle(self, pin: PacketIn) -> Outcome:
        """pinctrl_handle_bfd_msg for one packet-in."""
        parsed = parse_bfd(pin.packet)
        if isinstance(parsed, BfdDrop):
            with self._lock:
                self.malformed[parsed.kind] = self.malformed.get(parsed.kind, 0) + 1
            return Outcome(intents=[LogIntent(_MODULE, "dbg", parsed.text, _rl_dbg)])
        src, msg = parsed
        now = self._now()
        out = Outcome()
        notify = False
        with self._lock:
            s = next((x for k, x in self._sessions.items()
                      if k[0] == src and x.local_disc == msg.your_disc), None)
            if s is None:
                return out
            s.remote_disc = msg.my_disc
            remote_min_tx = msg.min_tx // 1000
            s.remote_min_rx = msg.min_rx // 1000
            s.detection_timeout = (msg.mult * max(remote_min_tx, s.local_min_rx)) & _U32
            peer, old = msg.state, s.state
            out.intents.append(LogIntent(
                _MODULE, "dbg", "rx BFD packets from %s, remote state %s, local state %s"
                % (src, STATUS[peer], STATUS[old]), _rl_dbg))
            changed = False
            if peer == ADMIN_DOWN and old >= INIT:
                s.state, s.last_rx, changed = DOWN, now, True
            else:
                if old == DOWN:
                    if peer == DOWN:
                        s.state = INIT
                    elif peer == INIT:
                        s.state = UP
                elif old == INIT:
                    if peer in (INIT, UP):
                        s.state = UP
                elif old == UP:
                    if peer in (ADMIN_DOWN, DOWN):
                        s.state = DOWN
                changed = s.state != old
                if old != ADMIN_DOWN:
                    s.last_rx = now
                if s.state == UP and msg.flags & F_DEMAND:
                    s.remote_demand = True
                if msg.flags & F_POLL:
                    out.messages.append(s.message(True))
            if changed:
                s.change_state = True
                self._pending += 1
            notify = self._need_update(now)
            self._next_wake = self._wake_at()
        if notify and self._notify_main is not None:
            self._notify_main()
        return out

    def snapshot(self) -> dict[Key, tuple[str, int, int, bool]]:
        """(state, remote disc, detection time, change flag) per key (tests)."""
        with self._lock:
            return {k: (STATUS[s.state], s.remote_disc, s.detection_timeout, s.change_state)
                    for k, s in self._sessions.items()}

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


# ====================================================================== handler
_ACTIVE: list[BfdSessions] = []


def attach(sessions: BfdSessions) -> None:
    """Make ``sessions`` the table ``handle_bfd_msg()`` packets are matched
    against (one per process: the agent's)."""
    _ACTIVE[:] = [sessions]


@handler(OP_BFD_MSG)
def handle_bfd_msg(pin: PacketIn, view: LocalView) -> Outcome:
    if not _ACTIVE:
        return Outcome()
    return _ACTIVE[0].handle(pin)
