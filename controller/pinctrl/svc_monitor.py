"""Load-balancer health checks (pinctrl.c service monitors, OVN 23.03.1).

Design note
-----------
Three parts, split along C's thread boundary:

* :func:`monitor_specs` (main loop, pure): the SB Service_Monitor rows this
  chassis probes -- the row's ``logical_port`` Port_Binding is bound to this
  chassis (``chassis`` column, as C compares it), ``ip`` parses as IPv4 or
  IPv6, and a backend MAC is found: the first ``mac`` entry that lists that
  IP, else the first entry without any IP.  Key = (datapath key, port key,
  IP as 16 bytes, IPv4-mapped for IPv4, L4 port, protocol); the protocol is
  UDP only when the column says ``udp``.
* :class:`SvcMonitors` (shared with the service thread, one lock): per key
  the state machine of ``svc_monitors_run``.  INIT sends a probe and WAITs
  ``timeout`` s (option, default 3); a WAITING monitor past its deadline
  counts a failure (TCP) or a success (UDP: silence means up) and probes
  again ``interval`` s later (default 5).  In ONLINE / OFFLINE, once the
  success (``success_count``, 1) or failure (``failure_count``, 1) counter
  reaches its threshold the status becomes online / offline and the counter
  restarts.  A status change wakes the main loop, which writes ``status``
  of every known monitor in each iteration that has an SB transaction
  (:meth:`SvcMonitors.write_status`; the IDL drops unchanged writes).
  Options are re-read when the row's options change; state is kept.
* :func:`handle_svc_check` (opcode 18, ``handle_svc_check(inport)``): the
  reply is matched by (metadata, reg14, IP source, port).  TCP: destination
  port must be the probe's source port and ack = probe seq + 1; SYN+ACK is
  a success (and a RST+ACK goes back with seq = their ack + 1 -- one more
  than RFC 793 asks, as C -- and ack = their seq + 1), RST a failure.
  ICMPv4 3/3 or ICMPv6 1/4 quoting the probe (IPv4: quoted total length
  must be 36; IPv6: a wrong payload length is only warned about) whose
  quoted UDP source port is the monitor's is a UDP failure.  Replies count
  in any state.

Probes are 23.03.1's frames: eth src = row ``src_mac``, dst = backend MAC,
IP src = row ``src_ip``, TTL / hop limit 63, IPv4 TOS 0, id 0, DF.  TCP:
SYN, 20-byte header, window 65160, fresh random seq and source port >= 1024
per probe.  UDP: 8 zero payload bytes, a source port >= 1024 drawn once per
monitor, checksum 0 over IPv4.  Each goes out as PO-I: metadata = datapath,
reg15 = backend port, ``set_field:0x10000/0x10000->reg10`` (C passes the
MLF_LOCAL_ONLY mask as a bit offset) and resubmit(CONTROLLER, 40).
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

from controller.lflow.actions.base import OP_HANDLE_SVC_CHECK
from controller.pinctrl import frames
from controller.pinctrl.frames import FrameError
from controller.pinctrl.garp import extract_lsp_addresses
from controller.pinctrl.openflow import po_inject
from controller.pinctrl.outcome import Intent, LogIntent, Outcome
from controller.pinctrl.packet_in import PacketIn
from controller.pinctrl.registry import handler
from controller.pinctrl.state import LocalView
from controller.vlog import RateLimiter

__all__ = ["MonitorSpec", "SvcMonitors", "monitor_specs", "tcp_probe", "udp_probe",
           "handle_svc_check", "attach", "LOCAL_OUTPUT_TABLE"]

LOCAL_OUTPUT_TABLE = 40          # OFTABLE_LOCAL_OUTPUT
LOCAL_ONLY_AS_OFFSET = 16        # MLF_LOCAL_ONLY's mask value, used by C as a bit offset
TCP_WINDOW = 65160
PROBE_TTL = 63
TCP_FIN, TCP_SYN, TCP_RST, TCP_ACK = 0x01, 0x02, 0x04, 0x10
PROTO_TCP, PROTO_UDP = "tcp", "udp"
ST_UNKNOWN, ST_OFFLINE, ST_ONLINE = "", "offline", "online"
S_INIT, S_WAITING, S_ONLINE, S_OFFLINE = range(4)

_IPPROTO_ICMP, _IPPROTO_TCP, _IPPROTO_UDP, _IPPROTO_ICMPV6 = 1, 6, 17, 58
_V4_MAPPED = b"\0" * 10 + b"\xff\xff"
_TCP = struct.Struct("!HHIIHHHH")
_UDP = struct.Struct("!HHHH")
_MODULE = "pinctrl"
_rl_warn = RateLimiter(per_minute=1, burst=5)

Key = tuple[int, int, bytes, int, str]


# ====================================================================== specs
@dataclass(frozen=True, slots=True)
class MonitorSpec:
    """One Service_Monitor row this chassis probes (see module note)."""

    row_uuid: uuidlib.UUID
    dp_key: int
    port_key: int
    ip: bytes                 # 16 bytes, IPv4-mapped for IPv4
    port: int
    protocol: str             # PROTO_TCP / PROTO_UDP
    backend_mac: bytes
    src_mac: str
    src_ip: str
    options: tuple[tuple[str, str], ...]

    @property
    def key(self) -> Key:
        return (self.dp_key, self.port_key, self.ip, self.port, self.protocol)

    @property
    def is_ip6(self) -> bool:
        return not self.ip.startswith(_V4_MAPPED)


def _parse_ip(text: str) -> tuple[bytes, bool] | None:
    """(16-byte address, is IPv4) or None."""
    try:
        return _V4_MAPPED + socket.inet_pton(socket.AF_INET, text), True
    except (OSError, ValueError):
        pass
    try:
        return socket.inet_pton(socket.AF_INET6, text), False
    except (OSError, ValueError):
        return None


def _mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def _ip6_of(text: str) -> bytes | None:
    try:
        return ipaddress.IPv6Address(text.split("/")[0]).packed
    except ValueError:
        return None


def _backend_mac(pb_macs: Iterable[str], ip: bytes, is_ip4: bool) -> bytes | None:
    for text in pb_macs:
        a = extract_lsp_addresses(text)
        if a is None:
            continue
        if is_ip4:
            if any(_V4_MAPPED + socket.inet_aton(v) == ip for v in a.ipv4):
                return _mac_bytes(a.mac)
        else:
            if any(_ip6_of(t) == ip for t in text.split()[1:] if ":" in t):
                return _mac_bytes(a.mac)
        if not a.ipv4 and not a.n_ipv6:
            return _mac_bytes(a.mac)
    return None


def _int(options: Mapping[str, str], name: str, default: int) -> int:
    """smap_get_int: the default when absent or not a decimal integer."""
    try:
        return int(options.get(name, default))
    except (TypeError, ValueError):
        return default


def monitor_specs(rows: Iterable[Any], chassis: Any,
                  pb_by_name: Callable[[str], Any]) -> list[MonitorSpec]:
    """The Service_Monitor rows bound to ``chassis`` (sync_svc_monitors' filter)."""
    out: list[MonitorSpec] = []
    if chassis is None:
        return out
    for row in rows:
        pb = pb_by_name(row.logical_port)
        if pb is None:
            continue
        ch = pb.chassis[0] if isinstance(pb.chassis, list) and pb.chassis else pb.chassis
        if ch is None or isinstance(ch, list) or ch.uuid != chassis.uuid:
            continue
        parsed = _parse_ip(row.ip)
        if parsed is None:
            continue
        ip, is_ip4 = parsed
        mac = _backend_mac(sorted(pb.mac) if not isinstance(pb.mac, str) else [pb.mac],
                           ip, is_ip4)
        if mac is None:
            continue
        proto = row.protocol[0] if isinstance(row.protocol, list) and row.protocol \
            else row.protocol
        out.append(MonitorSpec(
            row.uuid, int(pb.datapath.tunnel_key), int(pb.tunnel_key), ip, int(row.port),
            PROTO_UDP if proto == "udp" else PROTO_TCP, mac, row.src_mac, row.src_ip,
            tuple(sorted(dict(row.options).items()))))
    return out


# ====================================================================== frames
def _l3(spec: MonitorSpec, proto: int, l4: bytes) -> bytes:
    src_mac = _mac_bytes(spec.src_mac)
    if spec.is_ip6:
        src6 = _ip6_of(spec.src_ip) or bytes(16)
        return frames._ip6(src_mac, spec.backend_mac, src6, spec.ip, proto, PROBE_TTL, l4)
    src4 = ipaddress.IPv4Address(spec.src_ip).packed
    return frames._ip4(src_mac, spec.backend_mac, src4, spec.ip[12:], proto, PROBE_TTL, l4)


def _src_dst(spec: MonitorSpec) -> tuple[bytes, bytes]:
    if spec.is_ip6:
        return _ip6_of(spec.src_ip) or bytes(16), spec.ip
    return ipaddress.IPv4Address(spec.src_ip).packed, spec.ip[12:]


def tcp_probe(spec: MonitorSpec, flags: int, seq: int, ack: int, src_port: int) -> bytes:
    """A 20-byte-header TCP segment to the backend (SYN probe or RST+ACK)."""
    raw = _TCP.pack(src_port, spec.port, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                    (5 << 12) | flags, TCP_WINDOW, 0, 0)
    src, dst = _src_dst(spec)
    ck = frames._l4_csum(src, dst, _IPPROTO_TCP, raw, spec.is_ip6)
    return _l3(spec, _IPPROTO_TCP, raw[:16] + struct.pack("!H", ck) + raw[18:])


def udp_probe(spec: MonitorSpec, src_port: int) -> bytes:
    """UDP header + 8 zero bytes; checksum only over IPv6 (0 -> 0xffff)."""
    payload = bytes(8)
    ck = 0
    if spec.is_ip6:
        src, dst = _src_dst(spec)
        ck = frames._l4_csum(src, dst, _IPPROTO_UDP,
                             _UDP.pack(src_port, spec.port, 16, 0) + payload, True) or 0xFFFF
    return _l3(spec, _IPPROTO_UDP, _UDP.pack(src_port, spec.port, 16, ck) + payload)


def _inject(spec: MonitorSpec, frame: bytes) -> bytes:
    return po_inject(frame, spec.dp_key, spec.port_key, LOCAL_OUTPUT_TABLE, reg="reg15",
                     flag_bit=LOCAL_ONLY_AS_OFFSET)


def random_src_port(rng: random.Random) -> int:
    port = 0
    while port < 1024:
        port = rng.getrandbits(16)
    return port


# ====================================================================== state
class _Monitor:
    __slots__ = ("spec", "interval", "timeout", "success_count", "failure_count",
                 "n_success", "n_failures", "state", "status", "wait_time",
                 "next_send_time", "seq_no", "tp_src")

    def __init__(self, spec: MonitorSpec) -> None:
        self.spec = spec
        self.n_success = 0
        self.n_failures = 0
        self.state = S_INIT
        self.status = ST_UNKNOWN
        self.wait_time = 0
        self.next_send_time = 0
        self.seq_no = 0
        self.tp_src = 0
        self.set_options(spec.options)

    def set_options(self, options: tuple[tuple[str, str], ...]) -> None:
        o = dict(options)
        self.interval = _int(o, "interval", 5) * 1000
        self.timeout = _int(o, "timeout", 3) * 1000
        self.success_count = _int(o, "success_count", 1)
        self.failure_count = _int(o, "failure_count", 1)


class SvcMonitors:
    """Monitors and their state machines (see module note).  The main loop
    calls :meth:`update` and :meth:`write_status`; the service thread calls
    :meth:`run` (a periodic sender) and :meth:`handle` (opcode 18)."""

    def __init__(self, notify_service: Callable[[], None] | None = None,
                 notify_main: Callable[[], None] | None = None,
                 clock: Callable[[], int] | None = None,
                 rng: random.Random | None = None) -> None:
        self._lock = threading.Lock()
        self._mons: dict[Key, _Monitor] = {}
        self._notify_service = notify_service
        self._notify_main = notify_main
        self._clock = clock
        self._rng = rng or random.Random()
        self._next_run: int | None = None

    def _now(self, now_ms: int | None = None) -> int:
        if now_ms is not None:
            return int(now_ms)
        if self._clock is not None:
            return int(self._clock())
        import ovs.timeval
        return int(ovs.timeval.msec())

    # ------------------------------------------------------------ main loop
    def update(self, specs: Iterable[MonitorSpec]) -> bool:
        """Follow the current rows; True when a monitor was added, removed or
        got new options (the service is then woken)."""
        changed = False
        with self._lock:
            seen: set[Key] = set()
            for spec in specs:
                key = spec.key
                seen.add(key)
                mon = self._mons.get(key)
                if mon is None:
                    self._mons[key] = _Monitor(spec)
                    changed = True
                    continue
                if mon.spec.options != spec.options:
                    mon.set_options(spec.options)
                    changed = True
                mon.spec = spec
            for key in [k for k in self._mons if k not in seen]:
                del self._mons[key]
                changed = True
            if changed:
                self._next_run = 0
        if changed and self._notify_service is not None:
            self._notify_service()
        return changed

    def statuses(self) -> list[tuple[uuidlib.UUID, str]]:
        with self._lock:
            return [(m.spec.row_uuid, m.status) for m in self._mons.values()
                    if m.status != ST_UNKNOWN]

    def write_status(self, table: Mapping[uuidlib.UUID, Any]) -> int:
        """Set ``status`` of every monitor whose status is known (the caller
        holds this iteration's SB transaction); returns the rows written."""
        n = 0
        for row_uuid, status in self.statuses():
            row = table.get(row_uuid)
            if row is None:
                continue
            if row.status != [status]:
                row.status = [status]
                n += 1
        return n

    # ------------------------------------------------------------ service
    def _probe(self, mon: _Monitor, now: int) -> bytes:
        spec = mon.spec
        if spec.protocol == PROTO_TCP:
            mon.seq_no = self._rng.getrandbits(32)
            mon.tp_src = random_src_port(self._rng)
            frame = tcp_probe(spec, TCP_SYN, mon.seq_no, 0, mon.tp_src)
        else:
            if not mon.tp_src:
                mon.tp_src = random_src_port(self._rng)
            frame = udp_probe(spec, mon.tp_src)
        mon.wait_time = now + mon.timeout
        mon.state = S_WAITING
        return _inject(spec, frame)

    def run(self, now_ms: int | None = None) -> list[bytes]:
        """svc_monitors_run: probes due now; re-arms :meth:`next_wake_ms`."""
        now = self._now(now_ms)
        out: list[bytes] = []
        changed = False
        with self._lock:
            next_run: int | None = None
            for mon in self._mons.values():
                old = mon.status
                if mon.state == S_INIT:
                    out.append(self._probe(mon, now))
                    at = mon.wait_time
                elif mon.state == S_WAITING:
                    if now > mon.wait_time:
                        if mon.spec.protocol == PROTO_TCP:
                            mon.n_failures += 1
                            mon.state = S_OFFLINE
                        else:
                            mon.n_success += 1
                            mon.state = S_ONLINE
                        mon.next_send_time = now + mon.interval
                        at = mon.next_send_time
                    else:
                        at = mon.wait_time
                else:
                    if mon.state == S_ONLINE and mon.n_success >= mon.success_count:
                        mon.status = ST_ONLINE
                        mon.n_success = 0
                    elif mon.state == S_OFFLINE and mon.n_failures >= mon.failure_count:
                        mon.status = ST_OFFLINE
                        mon.n_failures = 0
                    if now >= mon.next_send_time:
                        out.append(self._probe(mon, now))
                        at = mon.wait_time
                    else:
                        at = mon.next_send_time
                next_run = at if next_run is None else min(next_run, at)
                changed |= old != mon.status
            self._next_run = next_run
        if changed and self._notify_main is not None:
            self._notify_main()
        return out

    def next_wake_ms(self) -> int | None:
        with self._lock:
            if not self._mons:
                return None
            # Replies move a monitor on without a run: C re-runs on every pass.
            return self._next_run if self._next_run is not None else 0

    def handle(self, pin: PacketIn) -> Outcome:
        """pinctrl_handle_svc_check for one packet-in."""
        try:
            h = frames.parse(pin.packet)
        except FrameError as e:
            return _warn("handle service check: %s" % e)
        dp_key, port_key = pin.reg("metadata") & 0xFFFFFFFF, pin.reg("reg14")
        frame = pin.packet
        if h.dl_type == frames.ETH_TYPE_IP:
            if len(frame) < h.l3 + 4 or struct.unpack_from("!H", frame, h.l3 + 2)[0] < 20:
                return _warn("IP packet with invalid length (%d)"
                             % (struct.unpack_from("!H", frame, h.l3 + 2)[0]
                                if len(frame) >= h.l3 + 4 else 0))
            ip = _V4_MAPPED + h.nw_src
        elif h.dl_type == frames.ETH_TYPE_IPV6:
            ip = h.nw_src
        else:
            return Outcome(drop="handle service check: not IP")
        proto = h.nw_proto
        if proto not in (_IPPROTO_TCP, _IPPROTO_ICMP, _IPPROTO_ICMPV6):
            return _warn("handle service check: Unsupported protocol - [%x]" % proto)
        if proto == _IPPROTO_TCP:
            return self._tcp_reply(h, frame, (dp_key, port_key, ip, h.tp_src, PROTO_TCP))
        return self._icmp_reply(h, frame, dp_key, port_key, ip)

    def _tcp_reply(self, h: frames.Headers, frame: bytes, key: Key) -> Outcome:
        if h.l4 is None or len(frame) < h.l4 + 20:
            return Outcome(drop="handle service check: short TCP header")
        seq, ack = struct.unpack_from("!II", frame, h.l4 + 4)
        flags = struct.unpack_from("!H", frame, h.l4 + 12)[0] & 0x0FFF
        now = self._now()
        with self._lock:
            mon = self._mons.get(key)
            if mon is None:
                return _warn("handle service check: Service monitor not found")
            if h.tp_dst != mon.tp_src or ack != (mon.seq_no + 1) & 0xFFFFFFFF:
                return Outcome()
            if flags & (TCP_SYN | TCP_ACK) == TCP_SYN | TCP_ACK:
                mon.n_success += 1
                mon.state = S_ONLINE
                rst = tcp_probe(mon.spec, TCP_RST | TCP_ACK, ack + 1, seq + 1, h.tp_dst)
                mon.next_send_time = now + mon.interval
                self._next_run = 0
                return Outcome(messages=[_inject(mon.spec, rst)])
            if flags & TCP_RST:
                mon.n_failures += 1
                mon.state = S_OFFLINE
                mon.next_send_time = now + mon.interval
                self._next_run = 0
        return Outcome()

    def _icmp_reply(self, h: frames.Headers, frame: bytes, dp_key: int, port_key: int,
                    ip: bytes) -> Outcome:
        if h.l4 is None:
            return _warn("ICMP packet with invalid header")
        inner = h.l4 + 8
        end = h.l3_end
        if inner >= end:
            return _warn("Original IP datagram not present in ICMP packet")
        intents: list[Intent] = []
        typ, code = frame[h.l4], frame[h.l4 + 1]
        if h.dl_type == frames.ETH_TYPE_IP:
            if typ != 3 or code != 3:
                return Outcome()
            if inner + 4 > end or struct.unpack_from("!H", frame, inner + 2)[0] != 36:
                return _warn("Invalid original IP datagram length present in ICMP packet")
            udp = inner + 20
        else:
            if typ != 1 or code != 4:
                return Outcome()
            if inner + 6 > end or struct.unpack_from("!H", frame, inner + 4)[0] != 16:
                intents.append(LogIntent(_MODULE, "warn", "Invalid original IP datagram "
                                         "length present in ICMP packet", _rl_warn))
            udp = inner + 40
        if udp + 4 > end:
            return _warn("Invalid UDP header in the original IP datagram", intents)
        udp_src, udp_dst = struct.unpack_from("!HH", frame, udp)
        now = self._now()
        with self._lock:
            mon = self._mons.get((dp_key, port_key, ip, udp_dst, PROTO_UDP))
            if mon is None:
                return _warn("handle service check: Service monitor not found for ICMP "
                             "packet", intents)
            if udp_src != mon.tp_src:
                return _warn("handle service check: UDP src port doesn't match in the "
                             "Original IP datagram of ICMP packet", intents)
            mon.n_failures += 1
            mon.state = S_OFFLINE
            mon.next_send_time = now + mon.interval
            self._next_run = 0
        return Outcome(intents=intents)

    def snapshot(self) -> dict[Key, tuple[int, str, int, int]]:
        """(state, status, n_success, n_failures) per key (tests, debugging)."""
        with self._lock:
            return {k: (m.state, m.status, m.n_success, m.n_failures)
                    for k, m in self._mons.items()}

    def probe_ports(self, key: Key) -> tuple[int, int]:
        """(seq, source port) of the last probe of ``key`` (tests)."""
        with self._lock:
            m = self._mons[key]
            return m.seq_no, m.tp_src


def _warn(text: str, intents: list[Intent] | None = None) -> Outcome:
    return Outcome(intents=(intents or []) + [LogIntent(_MODULE, "warn", text, _rl_warn)])


# ====================================================================== handler
_ACTIVE: list[SvcMonitors] = []


def attach(monitors: SvcMonitors) -> None:
    """Make ``monitors`` the table opcode 18 replies are matched against
    (one per process: the agent's)."""
    _ACTIVE[:] = [monitors]


@handler(OP_HANDLE_SVC_CHECK)
def handle_svc_check(pin: PacketIn, view: LocalView) -> Outcome:
    if not _ACTIVE:
        return _warn("handle service check: Service monitor not found")
    return _ACTIVE[0].handle(pin)
