"""Periodic IPv6 Router Advertisements (pinctrl.c prepare_ipv6_ras,
ipv6_ra_update_config, ipv6_ra_send, 23.03.1).

Design note
-----------
Two halves, split along C's thread boundary, as ``garp``:

* :func:`ra_inputs` (main loop, pure): every Port_Binding this agent sees
  whose ``options:ipv6_ra_send_periodic`` is true (C's
  ``local_active_ports_ras`` is filled from the whole Port_Binding table, no
  residency check: every chassis that sees the router port sends, and the
  packet is flagged local-only) and whose ``options:peer`` names an existing
  Port_Binding.  Its ``ipv6_ra_*`` options (written by northd) become an
  :class:`RaConfig`; an invalid config drops the port with a warning.  The RA
  is injected into the *peer* (the switch port), so the entry carries the
  peer's datapath and port keys.

  Quirks kept from C: ``ipv6_ra_prefixes`` must hold at least one address
  (northd writes an empty string for a router port with only a link-local
  network, and C then refuses the port); ``ipv6_ra_prf`` other than
  HIGH/LOW is MEDIUM (a missing one crashes C; here it is MEDIUM too).

* :class:`RaSender` (shared with the pinctrl service thread, one lock):
  per-port schedules.  :meth:`~RaSender.update` adds new ports (first send
  after min + uniform[0, max - min) seconds), replaces the config of known
  ones (rescheduled only if min or max changed) and drops the rest.
  :meth:`~RaSender.run` sends the due ones and reschedules each from the
  send time with a fresh random delay.

Frame (pure, :func:`ra_frame`; OVS compose_nd_ra + OVN's packet_put_ra_*):
Ethernet 33:33:00:00:00:01 from ``ipv6_ra_src_eth``; IPv6 from
``ipv6_ra_src_addr`` to ff02::1, hop limit 255; ICMPv6 134 with cur hop
limit 255, flags = M/O per address mode | router preference, router lifetime
0xffff, reachable 0, retrans 0; then SLLA, MTU (only if nonzero), one prefix
option per IPv6 prefix (L, plus A unless stateful; lifetimes all-ones; the
address as written), RDNSS (one server), DNSSL (skipped when the encoding
exceeds 255 bytes) and route information options (lifetime all-ones).  A
route-info list that fails to parse part-way keeps the options already
appended but not their length in the IPv6 payload length or the checksum,
as C does.  Packet-out: PO-I with metadata/reg14 of the peer, reg10 bit 4
(MLF_LOCAL_ONLY) set, resubmit to table 8.
"""

from __future__ import annotations

import random
import re
import socket
import struct
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from controller.pinctrl.frames import csum
from controller.pinctrl.garp import (
    _ipv6_value, _parse_ipv4_cidr, _scan_ipv6_text, _scan_lit, _scan_mac, _scan_uint)
from controller.pinctrl.openflow import po_inject
from controller.vlog import RateLimiter, get_logger

__all__ = ["RaConfig", "RaEntry", "RaInputs", "RaSender", "ra_config", "ra_frame",
           "ra_inputs", "MLF_LOCAL_ONLY_BIT", "INGRESS_TABLE"]

log = get_logger("pinctrl")
_rl_config = RateLimiter(per_minute=5, burst=5)

INGRESS_TABLE = 8                 # OFTABLE_LOG_INGRESS_PIPELINE
MLF_LOCAL_ONLY_BIT = 4
MAX_INTERVAL_DEFAULT = 600        # seconds
_ALL_NODES_MAC = b"\x33\x33\x00\x00\x00\x01"
_ALL_NODES_IP = socket.inet_pton(socket.AF_INET6, "ff02::1")
_FLAG_MANAGED, _FLAG_OTHER = 0x80, 0x40
_PREFIX_ON_LINK, _PREFIX_AUTONOMOUS = 0x80, 0x40
_PRF = {"HIGH": 0x08, "LOW": 0x18}
_ROUTER_LIFETIME = 0xFFFF
_ALL_ONES = 0xFFFFFFFF
_IP6 = struct.Struct("!IHBB")
_U32 = struct.Struct("!I")
_C_INT = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+")


# ====================================================================== options
def _get_int(options: Any, key: str, default: int) -> int:
    """smap_get_int: a whole base-10 int (leading blanks allowed), else `default`."""
    text = options.get(key)
    if text is None or not _C_INT.fullmatch(text):
        return default
    value = int(text)
    return value if -2**31 <= value < 2**31 else default


def _get_bool(options: Any, key: str) -> bool:
    return str(options.get(key, "")).lower() == "true"


def min_interval_default(max_interval: int) -> int:
    return max_interval // 3 if max_interval >= 9 else max_interval * 3 // 4


def _ipv6_cidr(s: str, i: int) -> tuple[bytes, int, int] | None:
    """ipv6_parse_cidr_len: (address, prefix length, position) or None."""
    t = _scan_ipv6_text(s, i)
    if t is None:
        return None
    value = _ipv6_value(t[0])
    if value is None:
        return None
    addr, j = value.to_bytes(16, "big"), t[1]
    slash = _scan_lit(s, j, "/")
    if slash is None:
        return addr, 128, j
    prefix = _scan_uint(s, slash, 10, 32)
    if prefix is not None:
        plen = prefix[0] - (1 << 32) if prefix[0] >> 31 else prefix[0]
        return (addr, plen, prefix[1]) if 0 <= plen <= 128 else None
    m = _scan_ipv6_text(s, slash)
    mask = _ipv6_value(m[0]) if m is not None else None
    if m is None or mask is None:
        return addr, 128, j
    inv = ~mask & ((1 << 128) - 1)
    if inv & (inv + 1):
        return None
    return addr, 128 - inv.bit_length(), m[1]


def extract_ip_addresses(text: str) -> tuple[int, list[tuple[bytes, int]]] | None:
    """OVN's extract_ip_addresses: (number of IPv4s, [(IPv6, plen)]), parsing
    until the first token that is no address; None when none was found."""
    n_ipv4, ipv6 = 0, []
    pos = 0
    while pos < len(text):
        addr4, j = _parse_ipv4_cidr(text, pos)
        if addr4 is not None:
            n_ipv4 += 1
            pos = j
            continue
        r = _ipv6_cidr(text, pos)
        if r is None:
            break
        ipv6.append((r[0], r[1]))
        pos = r[2]
    return (n_ipv4, ipv6) if n_ipv4 or ipv6 else None


def _mac(text: str) -> bytes | None:
    """eth_addr_from_string (an ovs_scan of six ':'-separated hex octets)."""
    m = _scan_mac(text, 0)
    return bytes(int(x, 16) for x in m[0].split(":")) if m is not None else None


def _ipv6(text: str) -> bytes | None:
    try:
        return socket.inet_pton(socket.AF_INET6, text)
    except (OSError, ValueError):
        return None


# ====================================================================== config
@dataclass(frozen=True, slots=True)
class RaConfig:
    min_interval: int             # seconds
    max_interval: int
    frame: bytes


def _warn(text: str) -> None:
    log.warn_rl(_rl_config, text)


def ra_config(options: Any) -> RaConfig | None:
    """ipv6_ra_update_config: the RA a router port's options describe, or None
    (with C's warning) when they are invalid."""
    max_interval = _get_int(options, "ipv6_ra_max_interval", MAX_INTERVAL_DEFAULT)
    min_interval = _get_int(options, "ipv6_ra_min_interval",
                            min_interval_default(max_interval))
    mtu = _get_int(options, "ipv6_ra_mtu", 0)
    mode = options.get("ipv6_ra_address_mode")
    la_flags, mo_flags = _PREFIX_ON_LINK, 0
    if mode is None:
        _warn("No address mode specified")
        return None
    if mode == "dhcpv6_stateless":
        mo_flags |= _FLAG_OTHER
        la_flags |= _PREFIX_AUTONOMOUS
    elif mode == "dhcpv6_stateful":
        mo_flags |= _FLAG_MANAGED
    elif mode == "slaac":
        la_flags |= _PREFIX_AUTONOMOUS
    else:
        _warn(f"Invalid address mode {mode}")
        return None
    mo_flags |= _PRF.get(options.get("ipv6_ra_prf", ""), 0)
    prefixes: list[tuple[bytes, int]] = []
    prefix_text = options.get("ipv6_ra_prefixes")
    if prefix_text is not None:
        parsed = extract_ip_addresses(prefix_text)
        if parsed is None:
            _warn(f"Invalid IPv6 prefixes: {prefix_text}")
            return None
        prefixes = parsed[1]
    eth_text = options.get("ipv6_ra_src_eth")
    eth_src = _mac(eth_text) if eth_text is not None else None
    if eth_src is None:
        _warn(f"Invalid ethernet source {eth_text if eth_text is not None else '(null)'}")
        return None
    ip_text = options.get("ipv6_ra_src_addr")
    ip_src = _ipv6(ip_text) if ip_text is not None else None
    if ip_src is None:
        _warn(f"Invalid IP source {ip_text if ip_text is not None else '(null)'}")
        return None
    rdnss_text = options.get("ipv6_ra_rdnss")
    rdnss = _ipv6(rdnss_text) if rdnss_text is not None else None
    if rdnss_text is not None and rdnss is None:
        _warn(f"Invalid RDNSS source {rdnss_text}")
        return None
    frame = ra_frame(eth_src, ip_src, mo_flags, la_flags, mtu, prefixes, rdnss,
                     options.get("ipv6_ra_dnssl", ""), options.get("ipv6_ra_route_info", ""))
    return RaConfig(min_interval, max_interval, frame)


# ====================================================================== frame
def _dnssl_option(text: str) -> bytes | None:
    """encode_ra_dnssl_opt + the DNSSL header; None when over 255 bytes."""
    size = 8
    names = bytearray()
    for domain in (d for d in text.split(",") if d):
        size += len(domain.encode()) + 2
        if size > 255:
            return None
        for label in (lb for lb in domain.encode().split(b".") if lb):
            label = label[:255]
            names.append(len(label))
            names += label
        names.append(0)
    size = (size + 7) // 8 * 8
    return bytes((31, size // 8, 0, 0)) + _U32.pack(_ALL_ONES) \
        + bytes(names).ljust(size - 8, b"\0")


def _route_info_options(text: str) -> tuple[bytes, bool]:
    """packet_put_ra_route_info_opt: (options appended, whether the whole
    list parsed; on a failure C keeps the bytes but not their length)."""
    out = bytearray()
    for route in (r for r in text.split(",") if r):
        flags = 0
        for index, token in enumerate(t for t in route.split("-") if t):
            if index == 0:
                flags = _PRF.get(token, 0)
                continue
            parsed = extract_ip_addresses(token)
            if parsed is None or not parsed[1]:
                return bytes(out), False
            addr, plen = parsed[1][0]
            mask = ((1 << 128) - 1) ^ ((1 << (128 - plen)) - 1)
            network = (int.from_bytes(addr, "big") & mask).to_bytes(16, "big")
            words = (plen + 63) // 64
            out += bytes((24, 1 + words, plen & 0xFF, flags)) + _U32.pack(_ALL_ONES) \
                + network[:words * 8]
    return bytes(out), True


def ra_frame(eth_src: bytes, ip_src: bytes, mo_flags: int, la_flags: int, mtu: int,
             prefixes: Iterable[tuple[bytes, int]], rdnss: bytes | None, dnssl: str,
             route_info: str) -> bytes:
    """The periodic RA as 23.03.1 composes it (see the module note)."""
    body = bytearray(bytes((134, 0, 0, 0, 255, mo_flags))
                     + struct.pack("!HII", _ROUTER_LIFETIME, 0, 0))
    body += bytes((1, 1)) + eth_src
    if mtu:
        body += bytes((5, 1, 0, 0)) + _U32.pack(mtu & _ALL_ONES)
    for addr, plen in prefixes:
        body += bytes((3, 4, plen, la_flags)) + _U32.pack(_ALL_ONES) * 2 + bytes(4) + addr
    if rdnss is not None:
        body += bytes((25, 3, 0, 0)) + _U32.pack(_ALL_ONES) + rdnss
    if dnssl:
        opt = _dnssl_option(dnssl)
        if opt is not None:
            body += opt
    counted = len(body)
    if route_info:
        routes, complete = _route_info_options(route_info)
        body += routes
        if complete:
            counted = len(body)
    pseudo = ip_src + _ALL_NODES_IP + struct.pack("!IxxxB", counted, 58)
    ck = csum(pseudo + bytes(body[:counted]))
    body[2:4] = struct.pack("!H", ck)
    return (_ALL_NODES_MAC + eth_src + b"\x86\xdd"
            + _IP6.pack(0x60000000, counted, 58, 255) + ip_src + _ALL_NODES_IP + bytes(body))


# ====================================================================== planner
@dataclass(frozen=True, slots=True)
class RaEntry:
    port: str                     # the router port's logical_port
    dp_key: int                   # the peer's datapath
    port_key: int                 # the peer's tunnel key
    config: RaConfig


@dataclass(frozen=True, slots=True)
class RaInputs:
    entries: tuple[RaEntry, ...] = ()


def ra_inputs(port_bindings: Iterable[Any],
              pb_by_name: Callable[[str], Any | None]) -> RaInputs:
    """prepare_ipv6_ras over the Port_Bindings this agent sees."""
    out: dict[str, RaEntry] = {}
    for pb in port_bindings:
        options = pb.options
        if not _get_bool(options, "ipv6_ra_send_periodic"):
            continue
        peer_name = options.get("peer")
        peer = pb_by_name(peer_name) if peer_name else None
        if peer is None or peer.datapath is None:
            continue
        config = ra_config(options)
        if config is None:
            continue
        out[pb.logical_port] = RaEntry(pb.logical_port, int(peer.datapath.tunnel_key),
                                       int(peer.tunnel_key), config)
    return RaInputs(tuple(out[k] for k in sorted(out)))


# ====================================================================== sender
class _Schedule:
    __slots__ = ("entry", "due_ms")

    def __init__(self, entry: RaEntry, due_ms: int) -> None:
        self.entry = entry
        self.due_ms = due_ms


class RaSender:
    """Per-port periodic RA schedules (see the module note).  Thread-safe: the
    main loop calls :meth:`update`, the pinctrl service :meth:`run`.
    `randrange(n)` draws uniformly from [0, n) (C's random_range)."""

    def __init__(self, notify: Callable[[], None] | None = None,
                 randrange: Callable[[int], int] = random.randrange) -> None:
        self._lock = threading.Lock()
        self._ports: dict[str, _Schedule] = {}
        self._inputs = RaInputs()
        self._notify = notify
        self._randrange = randrange

    def _next(self, config: RaConfig, now_ms: int) -> int:
        span = (config.max_interval - config.min_interval) * 1000
        return now_ms + config.min_interval * 1000 + (self._randrange(span) if span > 0 else 0)

    def update(self, inputs: RaInputs, now_ms: int) -> None:
        added = False
        with self._lock:
            if inputs == self._inputs:
                return
            self._inputs = inputs
            wanted = {e.port for e in inputs.entries}
            for port in [p for p in self._ports if p not in wanted]:
                del self._ports[port]
            for e in inputs.entries:
                s = self._ports.get(e.port)
                if s is None:
                    self._ports[e.port] = _Schedule(e, self._next(e.config, now_ms))
                    added = True
                    continue
                old = s.entry.config
                if (old.min_interval, old.max_interval) != \
                        (e.config.min_interval, e.config.max_interval):
                    s.due_ms = self._next(e.config, now_ms)
                s.entry = e
        if added and self._notify is not None:
            self._notify()

    def run(self, now_ms: int) -> list[bytes]:
        """Packet-outs of the RAs due at `now_ms`."""
        now_ms = int(now_ms)
        out: list[bytes] = []
        with self._lock:
            for s in self._ports.values():
                if now_ms < s.due_ms:
                    continue
                e = s.entry
                out.append(po_inject(e.config.frame, e.dp_key, e.port_key, INGRESS_TABLE,
                                     flag_bit=MLF_LOCAL_ONLY_BIT))
                s.due_ms = self._next(e.config, now_ms)
        return out

    def next_wake_ms(self) -> int | None:
        with self._lock:
            return min((s.due_ms for s in self._ports.values()), default=None)

    def ports(self) -> list[str]:
        with self._lock:
            return list(self._ports)
