"""DHCPv6 prefix delegation client (pinctrl.c ``ipv6_prefixd_*``,
``prepare_ipv6_prefixd``, ``fill_ipv6_prefix_state``,
``pinctrl_handle_dhcp6_server``, OVN 23.03.1).

Design note
-----------
Three parts, split along C's thread boundary (as ``svc_monitor``):

* :func:`pd_inputs` (main loop, pure): for every Port_Binding with
  ``options:ipv6_prefix_delegation=true`` on a local datapath whose
  ``options:peer`` exists and which is bound here (``l3gateway`` with this
  chassis, or its ``cr-`` port resident), the gateway address (MAC of the
  last parsed ``mac`` entry up to the first one with an IPv6 address, that
  IPv6 address, else the EUI-64 link-local of the MAC); then one
  :class:`PdEntry` per peer port of that datapath with
  ``options:ipv6_prefix=true`` (the requesting router port: its MAC is the
  DUID, its existing ``ipv6_ra_pd_list`` seeds IAID and prefix), injected
  through the gateway port's peer.  Peer ports without ``ipv6_prefix`` are
  listed in ``drop`` (their state is deleted at once, as C does).
* :class:`PrefixDelegation` (shared with the service thread, one lock): per
  requesting port the RFC 8415 client of C.  States SOLICIT, REQUEST,
  PENDING, DONE, RENEW, REBIND.  :meth:`~PrefixDelegation.update` (main
  loop, every iteration) creates states (first send after uniform[0, 3 s)),
  keeps ``last_used`` fresh, forgets states unused for 180 s and, with an
  SB transaction, turns PENDING into DONE and returns the
  ``ipv6_ra_pd_list`` values to write (``"<aid>:<prefix>/<plen>"``).
  :meth:`~PrefixDelegation.run` (periodic sender) makes C's timed
  transitions (DONE -> RENEW after T1, RENEW -> REBIND after T2, which
  forgets the server, REBIND -> SOLICIT after the valid lifetime, all
  counted from the DONE time) and sends, for each state whose send time has
  come and which is not DONE, a SOLICIT (also in REQUEST and PENDING), RENEW
  or REBIND, then re-arms it uniform[0, 3 s) later.
* :func:`handle_dhcpv6_reply` (opcode 19, ``handle_dhcpv6_reply;``): only
  IPv6/UDP; ADVERTISE (2) and REPLY (7), anything else ignored.  The state
  is found by (ip6.dst, eth.dst, IAID of the last IA_PD).  ADVERTISE
  (checked: T1 <= T2 unless T2 = 0, preferred <= valid, no nonzero status
  in the IA_PD) -> REQUEST, answered at once with a REQUEST: addresses
  swapped, hop limit 255, xid 0, the IA_PD header with only its IA_PREFIX
  sub-options (length recomputed), SERVER_ID and CLIENT_ID copied in
  packet order, the VLAN tag copied; PO-F: metadata, reg15 = reg14 of the
  packet-in, resubmit(CONTROLLER, 37).  REPLY with a prefix and no nonzero
  status -> PENDING with server address/MAC/DUID (<= 130 bytes), prefix,
  T1/T2/lifetimes in ms (32-bit, so "infinite" wraps as in C), and the
  main loop is woken.  What C ignores silently (a rejected ADVERTISE, a
  REPLY without a usable prefix, no matching state) is ignored here too,
  but counted in :attr:`PrefixDelegation.stats`.

Client messages (PO-I into the gateway's peer, table 8): UDP 546 -> 547,
hop limit 255, xid 0; to ff02::1:2 / 33:33:00:01:00:02, or unicast to the
server once its DUID is known; CLIENT_ID (DUID-LL of the requesting port's
MAC), SERVER_ID (when known), IA_PD (T1 = T2 = infinite; a fresh random
16-bit IAID on every message while no prefix is known) with an IA_PREFIX
(lifetimes infinite) when a prefix is known.

Sends happen only in a pass where some state solicits, a timed transition
just happened, or ``also_inject()`` says another periodic service has work
(C's ``may_inject_pkts``: the agent wires the RA and GARP tables); then, as
in C, a state in REQUEST or PENDING whose send time has passed re-sends a
SOLICIT (with a fresh IAID while no prefix is known).

Timing deviation: C checks the DONE/RENEW/REBIND deadlines only when its
pinctrl thread wakes for another reason (a packet-in, another service's
timer, a main-loop notification; over the unix management socket no echo
probe wakes it: with nothing else going on, 23.03.1 did not renew within
25 s past T1 in ``integration/test_pinctrl_pd.py``).  Here the sender also
arms a timer at the next deadline, so a renewal goes out at T1.
"""

from __future__ import annotations

import random
import re
import socket
import struct
import threading
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from controller.binding.local_data import opt_first
from controller.lflow.actions.base import OP_DHCP6_SERVER
from controller.ovsdb.indexes import ref_uuid
from controller.pinctrl.frames import (
    ETH_TYPE_IPV6,
    IPPROTO_UDP,
    FrameError,
    Headers,
    _with_vlan,
    csum,
    parse,
)
from controller.pinctrl.garp import _scan_mac, extract_lsp_addresses
from controller.pinctrl.l7frame import byte_at, bytes_at
from controller.pinctrl.openflow import packet_out, po_inject, resubmit_controller, set_field
from controller.pinctrl.outcome import Intent, LogIntent, Outcome
from controller.pinctrl.packet_in import PacketIn
from controller.pinctrl.ra import extract_ip_addresses
from controller.pinctrl.registry import handler
from controller.pinctrl.state import LocalView
from controller.vlog import RateLimiter, get_logger
from physical.inputs import same_chassis
from physical.lport import lport_is_chassis_resident

__all__ = ["PdEntry", "PdInputs", "PrefixDelegation", "pd_inputs", "client_frame",
           "parse_advertise", "parse_reply", "request_frame", "handle_dhcpv6_reply", "attach",
           "SOLICIT", "REQUEST", "PENDING", "DONE", "RENEW", "REBIND"]

log = get_logger("pinctrl")
_rl_dbg = RateLimiter(per_minute=20, burst=40)

SOLICIT, REQUEST, PENDING, DONE, RENEW, REBIND = range(6)
STATE_NAMES = ("SOLICIT", "REQUEST", "PENDING", "DONE", "RENEW", "REBIND")
MSG_SOLICIT, MSG_ADVERTISE, MSG_REQUEST, MSG_RENEW, MSG_REBIND, MSG_REPLY = 1, 2, 3, 5, 6, 7
OPT_CLIENT_ID, OPT_SERVER_ID, OPT_STATUS, OPT_IA_PD, OPT_IA_PREFIX = 1, 2, 13, 25, 26
TIMEOUT_MS = 3000                 # IPV6_PREFIXD_TIMEOUT
STALE_MS = 180_000                # IPV6_PREFIXD_STALE_TIMEOUT
MAX_DUID = 130                    # DHCPV6_MAX_DUID_LEN
INGRESS_TABLE = 8                 # OFTABLE_LOG_INGRESS_PIPELINE
OUTPUT_TABLE = 37                 # OFTABLE_OUTPUT_INIT
CLIENT_PORT, SERVER_PORT = 546, 547
_ALL_DHCP_MAC = bytes.fromhex("333300010002")
_ALL_DHCP_IP = socket.inet_pton(socket.AF_INET6, "ff02::1:2")
_ANY6 = bytes(16)
_INFINITE = 0xFFFFFFFF
_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")
_IP6 = struct.Struct("!IHBB")
_PD_LIST = re.compile(r"\s*\+?([0-9]+):([0-9a-fA-F:.]{1,46})/\s*([+-]?[0-9]+)")


def _u32(data: bytes | bytearray, ofs: int) -> int:
    return int.from_bytes(bytes_at(data, ofs, 4), "big")


def _u16(data: bytes | bytearray, ofs: int) -> int:
    return int.from_bytes(bytes_at(data, ofs, 2), "big")


def _c_int(v: int) -> int:
    """A 32-bit value printed with %d."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def _lla(mac: bytes) -> bytes:
    """in6_generate_lla: fe80::/64 with the EUI-64 of ``mac``."""
    return (b"\xfe\x80" + bytes(6) + bytes((mac[0] ^ 0x02,)) + mac[1:3] + b"\xff\xfe"
            + mac[3:6])


def _udp6_frame(eth_dst: bytes, eth_src: bytes, ip_src: bytes, ip_dst: bytes,
                dhcp: bytes) -> bytes:
    """Ethernet + IPv6 (hop limit 255) + UDP 546 -> 547 around ``dhcp``,
    checksum set (0 becomes 0xffff)."""
    ulen = 8 + len(dhcp)
    udp = struct.pack("!HHHH", CLIENT_PORT, SERVER_PORT, ulen & 0xFFFF, 0) + dhcp
    ck = csum(ip_src + ip_dst + struct.pack("!IxxxB", ulen, IPPROTO_UDP) + udp) or 0xFFFF
    return (eth_dst + eth_src + b"\x86\xdd" + _IP6.pack(0x60000000, ulen & 0xFFFF,
                                                        IPPROTO_UDP, 255)
            + ip_src + ip_dst + udp[:6] + _U16.pack(ck) + udp[8:])


# ====================================================================== planner
@dataclass(frozen=True, slots=True)
class PdEntry:
    """One requesting router port (the key) behind one gateway port."""

    port: str                     # requesting router port's logical_port (state key)
    ea: bytes                     # gateway port MAC
    ipv6: bytes                   # gateway port address (16 bytes)
    cmac: bytes                   # requesting port's MAC (DUID-LL)
    dp_key: int                   # gateway peer's datapath
    port_key: int                 # gateway peer's tunnel key
    pd_list: str | None = None    # options:ipv6_ra_pd_list as read


@dataclass(frozen=True, slots=True)
class PdInputs:
    entries: tuple[PdEntry, ...] = ()
    drop: frozenset[str] = field(default_factory=frozenset)


def _sorted_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return sorted(value or ())


def _true(options: Mapping[str, str], key: str) -> bool:
    return str(options.get(key, "")).lower() == "true"


def _first_ipv6(text: str) -> bytes | None:
    m = _scan_mac(text, 0)
    if m is None:
        return None
    parsed = extract_ip_addresses(text[m[1]:])
    return parsed[1][0][0] if parsed is not None and parsed[1] else None


def _gateway_address(pb: Any) -> tuple[bytes, bytes] | None:
    """(MAC, IPv6) of the gateway port as prepare_ipv6_prefixd picks them."""
    ea: bytes | None = None
    for text in _sorted_strings(pb.mac):
        a = extract_lsp_addresses(text)
        if a is None:
            continue
        ea = _mac_bytes(a.mac)
        if a.n_ipv6:
            ip6 = _first_ipv6(text)
            if ip6 is not None:
                return ea, ip6
    if ea is None or ea == bytes(6):
        return None
    return ea, _lla(ea)


def _client_mac(pb: Any) -> bytes:
    for text in _sorted_strings(pb.mac):
        a = extract_lsp_addresses(text)
        if a is not None:
            return _mac_bytes(a.mac)
    return bytes(6)


def pd_inputs(port_bindings: Iterable[Any], chassis: Any,
              pb_by_name: Callable[[str], Any | None],
              local_datapaths: Mapping[uuidlib.UUID, Any],
              active_tunnels: set[str] | frozenset[str] = frozenset()) -> PdInputs:
    """prepare_ipv6_prefixd's choice of states (see the module note)."""
    if chassis is None:
        return PdInputs()
    out: dict[str, PdEntry] = {}
    drop: set[str] = set()
    for pb in port_bindings:
        options = pb.options
        flag = options.get("ipv6_prefix_delegation")    # absent on nearly every port
        if flag is None or flag.lower() != "true":
            continue
        dp_uuid = ref_uuid(pb, "datapath")
        ld = local_datapaths.get(dp_uuid) if dp_uuid is not None else None
        if ld is None:
            continue
        peer_name = options.get("peer")
        peer = pb_by_name(peer_name) if peer_name else None
        if peer is None or peer.datapath is None:
            continue
        resident = lport_is_chassis_resident("cr-" + pb.logical_port, chassis, pb_by_name, active_tunnels)
        if (pb.type != "l3gateway" or not same_chassis(opt_first(pb.chassis), chassis)) \
                and not resident:
            continue
        addr = _gateway_address(pb)
        if addr is None:
            continue
        ea, ip6 = addr
        for local, _remote in ld.peer_ports:
            if not _true(local.options, "ipv6_prefix"):
                drop.add(local.logical_port)
                continue
            if local.logical_port in out:
                continue
            out[local.logical_port] = PdEntry(
                local.logical_port, ea, ip6, _client_mac(local), int(peer.datapath.tunnel_key),
                int(peer.tunnel_key), local.options.get("ipv6_ra_pd_list"))
    return PdInputs(tuple(out[k] for k in sorted(out)), frozenset(drop - set(out)))


def seed(pd_list: str | None) -> tuple[int, bytes, int] | None:
    """(aid, prefix, plen) of an ``ipv6_ra_pd_list`` value, or None."""
    if not pd_list:
        return None
    m = _PD_LIST.match(pd_list)
    if m is None:
        return None
    try:
        prefix = socket.inet_pton(socket.AF_INET6, m.group(2))
    except (OSError, ValueError):
        return None
    plen = int(m.group(3))
    if not -2**31 <= plen < 2**31:
        return None
    return int(m.group(1)) & 0xFFFFFFFF, prefix, plen


# ====================================================================== messages
def client_frame(msg_type: int, entry: PdEntry, aid: int, prefix: bytes, plen: int,
                 server_duid: bytes, server_ip: bytes, server_mac: bytes) -> bytes:
    """compose_prefixd_packet: SOLICIT / RENEW / REBIND of one state."""
    if server_duid:
        eth_dst, ip_dst = server_mac, server_ip
    else:
        eth_dst, ip_dst = _ALL_DHCP_MAC, _ALL_DHCP_IP
    body = bytearray((msg_type, 0, 0, 0))
    body += b"\x00\x01\x00\x0a\x00\x03\x00\x01" + entry.cmac
    if server_duid:
        body += _U16.pack(OPT_SERVER_ID) + _U16.pack(len(server_duid)) + server_duid
    has_prefix = prefix != _ANY6
    body += struct.pack("!HHIII", OPT_IA_PD, 12 + (29 if has_prefix else 0), aid & _INFINITE,
                        _INFINITE, _INFINITE)
    if has_prefix:
        body += struct.pack("!HHIIB", OPT_IA_PREFIX, 25, _INFINITE, _INFINITE, plen & 0xFF)
        body += prefix
    return _udp6_frame(eth_dst, entry.ea, entry.ipv6, ip_dst, bytes(body))


def _span(frame: bytes, h: Headers) -> tuple[int, int, int]:
    """(UDP offset, DHCPv6 options start, end) as C bounds the walk."""
    l4 = h.l4 if h.l4 is not None else h.l3_end
    dlen = min(_u16(frame, l4 + 4), h.l3_end - l4)
    return l4, l4 + 12, l4 + dlen


def parse_advertise(frame: bytes, h: Headers) -> tuple[int, bytes] | None:
    """pinctrl_parse_dhcpv6_advt: (IAID, options of the REQUEST) or None
    when C would send nothing."""
    l4, pos, end = _span(frame, h)
    dlen = end - l4
    data = bytearray()
    aid = 0
    while pos < end:
        code, olen = _u16(frame, pos), _u16(frame, pos + 2)
        opt_len = 4 + olen
        if dlen < opt_len + len(data):
            return None
        if code == OPT_IA_PD:
            t1, t2 = _u32(frame, pos + 8), _u32(frame, pos + 12)
            if t1 > t2 > 0:
                return None
            aid = _u32(frame, pos + 4)
            orig = len(data)
            data += bytes_at(frame, pos, 16)
            size, hdr_len = 16, 0
            while size < opt_len:
                sub = pos + size
                flen = 4 + _u16(frame, sub + 2)
                if dlen < flen + len(data):
                    return None
                sub_code = _u16(frame, sub)
                if sub_code == OPT_IA_PREFIX:
                    if _u32(frame, sub + 4) > _u32(frame, sub + 8):
                        return None
                    if sub + flen > len(frame):
                        return None        # C would copy past the packet
                    data += frame[sub:sub + flen]
                    hdr_len += flen
                if sub_code == OPT_STATUS and _u16(frame, sub + 4):
                    return None
                size += flen
            data[orig + 2:orig + 4] = _U16.pack((hdr_len + 12) & 0xFFFF)
        elif code in (OPT_SERVER_ID, OPT_CLIENT_ID):
            if pos + opt_len > len(frame):
                return None
            data += frame[pos:pos + opt_len]
        pos += opt_len
    return aid, bytes(data)


def request_frame(frame: bytes, h: Headers, options: bytes) -> bytes:
    """The REQUEST answering ADVERTISE ``frame`` (addresses swapped)."""
    out = _udp6_frame(h.dl_src, h.dl_dst, h.nw_dst, h.nw_src,
                      bytes((MSG_REQUEST, 0, 0, 0)) + options)
    return _with_vlan(out, h) if h.vlan_tci else out


@dataclass(frozen=True, slots=True)
class Reply:
    aid: int
    prefix: bytes
    plen: int                      # C's (signed char) prefix length
    t1: int
    t2: int
    plife: int
    vlife: int
    server_duid: bytes


def parse_reply(frame: bytes, h: Headers) -> Reply | None:
    """pinctrl_parse_dhcpv6_reply: the delegated prefix, or None without one."""
    l4, pos, end = _span(frame, h)
    t1 = t2 = plife = vlife = plen = aid = 0
    duid = b""
    prefix = _ANY6
    status = False
    while pos < end:
        code, olen = _u16(frame, pos), _u16(frame, pos + 2)
        opt_len = 4 + olen
        if pos + opt_len > end:
            break
        if code == OPT_IA_PD:
            aid, t1, t2 = _u32(frame, pos + 4), _u32(frame, pos + 8), _u32(frame, pos + 12)
            if not t1 > t2 > 0:
                size = 16
                while size < opt_len:
                    sub = pos + size
                    sub_code = _u16(frame, sub)
                    if sub_code == OPT_IA_PREFIX:
                        plife, vlife = _u32(frame, sub + 4), _u32(frame, sub + 8)
                        if plife > vlife:
                            break
                        plen = byte_at(frame, sub + 12)
                        prefix = bytes_at(frame, sub + 13, 16)
                        status = True
                    if sub_code == OPT_STATUS and _u16(frame, sub + 4):
                        status = False
                    size += 4 + _u16(frame, sub + 2)
        elif code == OPT_SERVER_ID:
            duid = frame[pos + 4:pos + 4 + min(olen, MAX_DUID)]
        pos += opt_len
    if not status:
        return None
    return Reply(aid, prefix, plen - 256 if plen > 127 else plen, t1, t2, plife, vlife, duid)


# ====================================================================== state
class _State:
    __slots__ = ("entry", "state", "next_announce", "last_complete", "last_used",
                 "server_ip", "server_mac", "duid", "prefix", "plen", "aid", "t1", "t2",
                 "plife", "vlife")

    def __init__(self, entry: PdEntry, now: int, due: int) -> None:
        self.entry = entry
        self.state = SOLICIT
        self.next_announce = due
        self.last_complete = 0
        self.last_used = now
        self.server_ip = _ANY6
        self.server_mac = bytes(6)
        self.duid = b""
        self.prefix, self.plen, self.aid = _ANY6, 0, 0
        self.t1 = self.t2 = self.plife = self.vlife = 0
        seeded = seed(entry.pd_list)
        if seeded is not None:
            self.aid, self.prefix, self.plen = seeded


@dataclass(frozen=True, slots=True)
class PdWrite:
    """Set ``options:ipv6_ra_pd_list`` of Port_Binding ``port`` to ``value``."""

    port: str
    value: str


class PrefixDelegation:
    """The PD client states (see the module note).  Thread-safe: the main
    loop calls :meth:`update`, the service :meth:`run` and :meth:`handle`.
    `randrange(n)` draws uniformly from [0, n) (C's random_range);
    `rand16()` draws the IAID (C's random_uint16); `also_inject()` tells
    whether another periodic service injects packets (see the module note)."""

    def __init__(self, notify_service: Callable[[], None] | None = None,
                 notify_main: Callable[[], None] | None = None,
                 randrange: Callable[[int], int] = random.randrange,
                 rand16: Callable[[], int] = lambda: random.getrandbits(16),
                 also_inject: Callable[[], bool] = lambda: False) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, _State] = {}
        self._notify_service = notify_service
        self._notify_main = notify_main
        self._randrange = randrange
        self._rand16 = rand16
        self._also_inject = also_inject
        # Messages C ignores silently: counted here, not logged.
        self.stats = {"advertise_rejected": 0, "reply_rejected": 0, "no_state": 0}

    # ------------------------------------------------------------ main loop
    def update(self, inputs: PdInputs, now_ms: int, have_txn: bool) -> list[PdWrite]:
        """fill_ipv6_prefix_state + the stale sweep; the writes to make in
        this iteration's SB transaction (only when ``have_txn``)."""
        now = int(now_ms)
        writes: list[PdWrite] = []
        added = False
        with self._lock:
            for name in inputs.drop:
                self._states.pop(name, None)
            for e in inputs.entries:
                s = self._states.get(e.port)
                if s is None:
                    s = self._states[e.port] = _State(e, now, now + self._randrange(TIMEOUT_MS))
                    added = True
                elif s.state == PENDING and have_txn:
                    text = socket.inet_ntop(socket.AF_INET6, s.prefix)
                    s.state = DONE
                    s.last_complete = now
                    s.next_announce = now + s.t1
                    value = "%d:%s/%d" % (_c_int(s.aid), text, _c_int(s.plen))
                    writes.append(PdWrite(e.port, value))
                    log.dbg_rl(_rl_dbg, "updating port_binding for %s with prefix %s/%d"
                                 " aid %d" % (e.port, text, _c_int(s.plen), _c_int(s.aid)))
                s.last_used = now
            for name in [n for n, s in self._states.items() if s.last_used + STALE_MS < now]:
                del self._states[name]
        if (added or writes) and self._notify_service is not None:
            self._notify_service()
        return writes

    # ------------------------------------------------------------ service
    def _should_inject(self, now: int) -> bool:
        """ipv6_prefixd_should_inject: a state solicits, or one of the timed
        transitions (one step per state and pass) happened."""
        inject = False
        for s in self._states.values():
            if s.state == SOLICIT:
                inject = True
            elif s.state == DONE and now > s.last_complete + s.t1:
                s.state = RENEW
                inject = True
            elif s.state == RENEW and now > s.last_complete + s.t2:
                s.state = REBIND
                s.duid = b""
                inject = True
            elif s.state == REBIND and now > s.last_complete + s.vlife:
                s.state = SOLICIT
                inject = True
        return inject

    def run(self, now_ms: int) -> list[bytes]:
        """ipv6_prefixd_send for every state: the packet-outs due now."""
        now = int(now_ms)
        out: list[bytes] = []
        with self._lock:
            if not self._should_inject(now) and not self._also_inject():
                return out
            for s in self._states.values():
                if now < s.next_announce:
                    continue
                if s.state != DONE:
                    if s.prefix == _ANY6:
                        s.aid = self._rand16() & 0xFFFF
                    mtype = {RENEW: MSG_RENEW, REBIND: MSG_REBIND}.get(s.state, MSG_SOLICIT)
                    e = s.entry
                    frame = client_frame(mtype, e, s.aid, s.prefix, s.plen, s.duid,
                                         s.server_ip, s.server_mac)
                    out.append(po_inject(frame, e.dp_key, e.port_key, INGRESS_TABLE))
                s.next_announce = now + self._randrange(TIMEOUT_MS)
        return out

    def next_wake_ms(self) -> int | None:
        """The SOLICIT schedule while any state solicits (C arms its timer
        only then), and the next DONE/RENEW/REBIND deadline."""
        with self._lock:
            wake: list[int] = []
            soliciting = any(s.state == SOLICIT for s in self._states.values())
            for s in self._states.values():
                if soliciting:
                    wake.append(s.next_announce)
                if s.state == DONE:
                    wake.append(s.last_complete + s.t1 + 1)
                elif s.state == RENEW:
                    wake.append(s.last_complete + s.t2 + 1)
                elif s.state == REBIND:
                    wake.append(s.last_complete + s.vlife + 1)
            return min(wake, default=None)

    def _find(self, h: Headers, aid: int) -> _State | None:
        for s in self._states.values():
            if s.entry.ipv6 == h.nw_dst and s.entry.ea == h.dl_dst and s.aid == aid:
                return s
        return None

    def handle(self, pin: PacketIn) -> Outcome:
        """Opcode 19 (see the module note)."""
        frame = pin.packet
        try:
            h = parse(frame)
        except FrameError:
            return Outcome()
        if h.dl_type != ETH_TYPE_IPV6 or h.nw_proto != IPPROTO_UDP or h.l4 is None:
            return Outcome()
        mtype = byte_at(frame, h.l4 + 8)
        if mtype == MSG_ADVERTISE:
            return self._advertise(pin, frame, h)
        if mtype == MSG_REPLY:
            return self._reply(frame, h)
        return Outcome()

    def _advertise(self, pin: PacketIn, frame: bytes, h: Headers) -> Outcome:
        parsed = parse_advertise(frame, h)
        if parsed is None:
            self.stats["advertise_rejected"] += 1
            return Outcome()
        aid, options = parsed
        with self._lock:
            s = self._find(h, aid)
            if s is None:
                self.stats["no_state"] += 1
                return Outcome()
            s.state = REQUEST
        values = pin.values
        acts = (set_field("metadata", values.get("metadata", 0))
                + set_field("reg15", values.get("reg14", 0))
                + resubmit_controller(OUTPUT_TABLE))
        text = "Received DHCPv6 advt from %s with aid %d sending DHCPv6 request" % (
            socket.inet_ntop(socket.AF_INET6, h.nw_src), _c_int(aid))
        intents: list[Intent] = [LogIntent("pinctrl", "dbg", text, _rl_dbg)]
        return Outcome(messages=[packet_out(request_frame(frame, h, options), acts)],
                       intents=intents)

    def _reply(self, frame: bytes, h: Headers) -> Outcome:
        r = parse_reply(frame, h)
        if r is None:
            self.stats["reply_rejected"] += 1
            return Outcome()
        text = "Received DHCPv6 reply from %s with prefix %s/%d aid %d" % (
            socket.inet_ntop(socket.AF_INET6, h.nw_src),
            socket.inet_ntop(socket.AF_INET6, r.prefix), r.plen, _c_int(r.aid))
        with self._lock:
            s = self._find(h, r.aid)
            if s is not None:
                s.state = PENDING
                s.server_ip = bytes_at(frame, h.l3 + 8, 16)
                s.server_mac = h.dl_src
                s.duid = r.server_duid
                s.plife = (r.plife * 1000) & _INFINITE
                s.vlife = (r.vlife * 1000) & _INFINITE
                s.plen = r.plen
                s.prefix = r.prefix
                s.t1 = (r.t1 * 1000) & _INFINITE
                s.t2 = (r.t2 * 1000) & _INFINITE
            else:
                self.stats["no_state"] += 1
        if s is not None and self._notify_main is not None:
            self._notify_main()
        return Outcome(intents=[LogIntent("pinctrl", "dbg", text, _rl_dbg)])

    # ------------------------------------------------------------ introspection
    def snapshot(self) -> dict[str, tuple[str, int, str]]:
        """port -> (state name, IAID, prefix/plen) (tests, debugging)."""
        with self._lock:
            return {n: (STATE_NAMES[s.state], s.aid,
                        "%s/%d" % (socket.inet_ntop(socket.AF_INET6, s.prefix), s.plen))
                    for n, s in self._states.items()}


def write_pd_lists(writes: Iterable[PdWrite], pb_by_name: Callable[[str], Any | None]) -> int:
    """Apply ``writes`` in the caller's SB transaction: the whole options map
    rewritten with the new ``ipv6_ra_pd_list`` (C clones and edits it)."""
    n = 0
    for w in writes:
        pb = pb_by_name(w.port)
        if pb is None or pb.options.get("ipv6_ra_pd_list") == w.value:
            continue        # (C writes it anyway; its IDL drops the no-op)
        options = dict(pb.options)
        options["ipv6_ra_pd_list"] = w.value
        pb.options = options
        n += 1
    return n


# ====================================================================== handler
_ACTIVE: list[PrefixDelegation] = []


def attach(pd: PrefixDelegation) -> None:
    """Make ``pd`` the client states opcode 19 answers against (the agent's)."""
    _ACTIVE[:] = [pd]


@handler(OP_DHCP6_SERVER)
def handle_dhcpv6_reply(pin: PacketIn, view: LocalView) -> Outcome:
    if not _ACTIVE:
        return Outcome()
    return _ACTIVE[0].handle(pin)
