"""GARP/RARP announcements without a packet-in (pinctrl.c send_garp_rarp_*, 23.03.1).

Design note
-----------
Two halves, split along C's thread boundary:

* :func:`garp_inputs` (main loop, pure): from SB rows and local state, the
  announcements this chassis owes, as a frozen, comparable
  :class:`GarpInputs` (``send_garp_rarp_prepare``).  Two sources:

  - localnet VIFs: br-int interfaces with an ofport and an ``iface-id``
    whose Port_Binding is bound here (main chassis) on a local datapath that
    has a localnet port (one with a bridge mapping here).  The caller passes
    the iface-ids of those interfaces (the binding's local bindings: br-int
    interfaces minus the bridge's own port and tunnels, with an ofport);
    C uses the ofport only as "the interface exists in the datapath".
    Key = logical port; first parsable ``mac`` entry; its first IPv4 (GARP)
    or none (RARP).
  - gateway ports on those datapaths: ``l3gateway`` PBs bound here and every
    ``patch`` PB.  Entries come from ``nat_addresses`` (else
    ``options:nat-addresses``), each ``MAC [IP...] [is_chassis_resident("P")]``
    (northd already expanded the NB ``router`` form); an entry counts only if
    P is resident here (chassisredirect: active member of its HA group), and
    a ``patch`` PB's entry needs such a condition.  Keys ``<lport>-<ipv4>``
    per IPv4, or ``<lport>-noip`` (RARP) when the entry has none; IPv6 is
    never announced.  ``localport`` PBs are skipped.

  Entries appear in C's processing order; a key seen twice keeps its first
  occurrence (C's order between duplicate entries of one port depends on its
  hash table; northd does not write duplicate keys).

* :class:`GarpAnnouncer` (shared with the pinctrl service thread, one lock):
  keyed schedules.  :meth:`~GarpAnnouncer.update` drops keys that are gone,
  refreshes datapath/port keys of existing ones (no re-send: C neither
  re-announces nor takes the new MAC/IP of an existing key) and adds new keys
  due 1 s later; the first time a key with an IPv4 appears while the SB is
  writable it returns the MAC_Binding upserts C's ``send_garp_locally`` makes
  on the peer router ports of the same datapath (not the ingress port;
  update-only when the router's ``always_learn_from_arp_request`` is false).
  :meth:`~GarpAnnouncer.run` sends what is due: after a send the delay
  doubles from 2 s; the send after the 16 s delay is the last, so 5 sends at
  about 1, 3, 7, 15 and 31 s, then none until the key disappears and comes
  back.  Delays count from the actual send time, as in C.

Frames are 42 bytes as OVS's compose_arp/compose_rarp: GARP = ARP request to
ff:ff:ff:ff:ff:ff with sha = eth.src = MAC, spa = tpa = IP, tha = 0; RARP =
ethertype 0x8035, op 3, sha = tha = MAC, spa = tpa = 0.  They are packed with
``struct``: os-ken's ethernet serializer pads frames to 60 bytes, C does not.
Each goes out as a packet-out that loads the port's datapath into metadata
and its key into reg14 and resubmits to table 8 (PO-I, ``openflow.po_inject``).

The main-loop side (the pinctrl facade) replans when an input may have
changed and applies the upserts in the SB transaction of the iteration that
created the key, as C does; an update with unchanged inputs is a no-op.
Planning cost, measured on the shared 2-core machine: 3-6 ms for 400
announcements with 5000 ports on the localnet switch (fake rows).
"""

from __future__ import annotations

import functools
import socket
import struct
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import structlog

from controller.binding.local_data import LocalDatapath, opt_first
from controller.chassis.encaps import has_map_key
from controller.lflow.lexer import T_ID, T_LPAREN, T_RPAREN, T_STRING, Lexer
from controller.ovsdb.indexes import SbIndexes, ref_uuid
from controller.pinctrl.openflow import po_inject
from controller.vlog import RateLimiter
from physical.inputs import same_chassis
from physical.lport import lport_is_chassis_resident

log = structlog.get_logger("pinctrl")
log_util = structlog.get_logger("ovn_util")
_rl_syntax = RateLimiter(per_minute=1, burst=1)
_rl_util = RateLimiter(per_minute=1, burst=1)

INGRESS_TABLE = 8            # OFTABLE_LOG_INGRESS_PIPELINE
FIRST_DELAY_MS = 1000
LAST_BACKOFF = 16            # seconds; the send after this delay is the last
_GW_TYPES = ("l3gateway", "patch")


# ====================================================================== addresses
# extract_addresses (lib/ovn-util.c) over OVS's scanf-like ovs_scan: every
# conversion skips leading blanks, integers take any digits and wrap to their
# width, a failed conversion leaves the position where it was.

def _skip_ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t\n\v\f\r":
        i += 1
    return i


def _scan_uint(s: str, i: int, base: int, bits: int) -> tuple[int, int] | None:
    """``%hhx`` / ``%hhu`` / ``%d``: (value truncated to `bits`, new position)."""
    i = _skip_ws(s, i)
    neg = i < len(s) and s[i] == "-"
    if i < len(s) and s[i] in "+-":
        i += 1
    if base == 16 and s.startswith(("0x", "0X"), i):
        i += 2
    start, value = i, 0
    while i < len(s):
        d = int(s[i], 16) if s[i] in "0123456789abcdefABCDEF" else -1
        if d < 0 or d >= base:
            break
        value = value * base + d
        i += 1
    if i == start:
        return None
    if neg:
        value = -value
    return value & ((1 << bits) - 1), i


def _scan_lit(s: str, i: int, ch: str) -> int | None:
    return i + 1 if s.startswith(ch, i) else None


def _scan_mac(s: str, i: int) -> tuple[str, int] | None:
    octets = []
    for n in range(6):
        if n:
            j = _scan_lit(s, i, ":")
            if j is None:
                return None
            i = j
        r = _scan_uint(s, i, 16, 8)
        if r is None:
            return None
        octets.append(r[0])
        i = r[1]
    return ":".join("%02x" % o for o in octets), i


def _scan_ip(s: str, i: int) -> tuple[int, int] | None:
    value = 0
    for n in range(4):
        if n:
            j = _scan_lit(s, i, ".")
            if j is None:
                return None
            i = j
        r = _scan_uint(s, i, 10, 8)
        if r is None:
            return None
        value = (value << 8) | r[0]
        i = r[1]
    return value, i


def _is_cidr(mask: int, width: int) -> bool:
    inv = ~mask & ((1 << width) - 1)
    return inv & (inv + 1) == 0


def _parse_ipv4_cidr(s: str, i: int) -> tuple[int | None, int]:
    """ip_parse_cidr_len: (address or None on error, position reached)."""
    ip = _scan_ip(s, i)
    if ip is None:
        return None, i
    addr, j = ip
    slash = _scan_lit(s, j, "/")
    if slash is not None:
        mask = _scan_ip(s, slash)
        if mask is not None:
            return (addr if _is_cidr(mask[0], 32) else None), mask[1]
        prefix = _scan_uint(s, slash, 10, 32)
        if prefix is not None:
            plen = prefix[0] - (1 << 32) if prefix[0] >> 31 else prefix[0]
            return (addr if 0 <= plen <= 32 else None), prefix[1]
    return addr, j


_IPV6_CHARS = frozenset("0123456789abcdefABCDEF:.")


def _scan_ipv6_text(s: str, i: int) -> tuple[str, int] | None:
    i = _skip_ws(s, i)
    j = i
    while j < len(s) and j - i < 46 and s[j] in _IPV6_CHARS:
        j += 1
    return (s[i:j], j) if j > i else None


def _ipv6_value(text: str) -> int | None:
    try:
        return int.from_bytes(socket.inet_pton(socket.AF_INET6, text), "big")
    except (OSError, ValueError):
        return None


def _parse_ipv6_cidr(s: str, i: int) -> tuple[bool, int]:
    """ipv6_parse_cidr_len: (parsed, position reached)."""
    t = _scan_ipv6_text(s, i)
    if t is None or _ipv6_value(t[0]) is None:
        return False, i
    j = t[1]
    slash = _scan_lit(s, j, "/")
    if slash is None:
        return True, j
    prefix = _scan_uint(s, slash, 10, 32)
    if prefix is not None:
        plen = prefix[0] - (1 << 32) if prefix[0] >> 31 else prefix[0]
        return 0 <= plen <= 128, prefix[1]
    m = _scan_ipv6_text(s, slash) if slash < len(s) and s[slash] in _IPV6_CHARS else None
    if m is not None:
        mask = _ipv6_value(m[0])
        return mask is not None and _is_cidr(mask, 128), m[1]
    return True, j


@dataclass(frozen=True, slots=True)
class Addresses:
    """lport_addresses: a MAC, its IPv4s (dotted text) and how many IPv6s."""
    mac: str
    ipv4: tuple[str, ...]
    n_ipv6: int
    rest: str                # text after "MAC [IP...]" (from the stop position)


@functools.lru_cache(maxsize=8192)
def extract_addresses(text: str) -> Addresses | None:
    """``MAC [IP...]``: None unless a MAC is found; stops at the first
    token that is neither an IPv4 nor an IPv6 address (CIDR allowed).
    Cached: a replan parses the same Port_Binding strings again."""
    m = _scan_mac(text, 0)
    if m is None:
        return None
    mac, pos = m
    ipv4: list[str] = []
    n_ipv6 = 0
    while pos < len(text):
        addr, j = _parse_ipv4_cidr(text, pos)
        if addr is not None:
            ipv4.append(socket.inet_ntoa(addr.to_bytes(4, "big")))
            pos = j
            continue
        ok, j = _parse_ipv6_cidr(text, j)
        if not ok:
            break
        n_ipv6 += 1
        pos = j
    return Addresses(mac, tuple(ipv4), n_ipv6, text[pos:])


def extract_lsp_addresses(text: str) -> Addresses | None:
    a = extract_addresses(text)
    if a is not None and a.rest:
        log_util.info_rl(_rl_util, f"invalid syntax '{text}' in address")
    return a


def extract_addresses_with_port(text: str) -> tuple[Addresses, str | None] | None:
    """``MAC [IP...] [is_chassis_resident("PORT")]`` -> (addresses, PORT)."""
    a = extract_addresses(text)
    if a is None:
        return None
    if not a.rest:
        return a, None
    lx = Lexer(a.rest)
    lx.get()
    if lx.token.type != T_ID or not lx.match_id("is_chassis_resident"):
        log.info_rl(_rl_syntax, f"invalid syntax '{text}' in address")
        return a, None
    if not lx.match(T_LPAREN):
        log.info_rl(_rl_syntax, "Syntax error: expecting '(' after 'is_chassis_resident' "
                    f"in address '{text}'")
        return None
    if lx.token.type != T_STRING:
        log.info_rl(_rl_syntax, "Syntax error: expecting quoted string after "
                    f"'is_chassis_resident' in address '{text}'")
        return None
    port = lx.token.s or ""
    lx.get()
    if not lx.match(T_RPAREN):
        log.info_rl(_rl_syntax, "Syntax error: expecting ')' after quoted string in "
                    f"'is_chassis_resident()' in address '{text}'")
        return None
    return a, port


# ====================================================================== planner
@dataclass(frozen=True, slots=True)
class PeerPort:
    """A router port that learns a new announcement locally (send_garp_locally)."""
    dp_key: int
    port_key: int
    update_only: bool


@dataclass(frozen=True, slots=True)
class GarpEntry:
    key: str
    mac: str                  # "aa:bb:cc:dd:ee:ff"
    ipv4: str | None          # dotted; None or "0.0.0.0" (C: ip 0): RARP
    dp_key: int
    port_key: int
    peers: tuple[PeerPort, ...] = ()     # MAC_Binding upserts of `ipv4` when the key is new


@dataclass(frozen=True, slots=True)
class GarpInputs:
    entries: tuple[GarpEntry, ...] = ()


def _sorted_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return sorted(value or ())


class _Planner:
    __slots__ = ("chassis", "idx", "local_dps", "active_tunnels", "out", "seen", "_peers")

    def __init__(self, chassis: Any, idx: SbIndexes,
                 local_dps: Mapping[Any, LocalDatapath], active_tunnels: set[str]) -> None:
        self.chassis = chassis
        self.idx = idx
        self.local_dps = local_dps
        self.active_tunnels = active_tunnels
        self.out: list[GarpEntry] = []
        self.seen: set[str] = set()
        self._peers: dict[Any, list[tuple[Any, PeerPort]]] = {}

    def ld_of(self, pb: Any) -> LocalDatapath | None:
        u = ref_uuid(pb, "datapath")
        return self.local_dps.get(u) if u is not None else None

    def add(self, e: GarpEntry) -> None:
        if e.key not in self.seen:
            self.seen.add(e.key)
            self.out.append(e)

    def resident(self, port: str) -> bool:
        return lport_is_chassis_resident(port, self.chassis, self.idx.pb_by_name.get,
                                         self.active_tunnels)

    def peers(self, in_pb: Any, ld: LocalDatapath | None) -> tuple[PeerPort, ...]:
        if ld is None:
            return ()
        all_peers = self._peers.get(ld.uuid)
        if all_peers is None:
            all_peers = self._peers[ld.uuid] = []
            for local, remote in ld.peer_ports:
                if remote.datapath is None:
                    continue
                flag = remote.datapath.external_ids.get("always_learn_from_arp_request", "")
                all_peers.append((local.uuid, PeerPort(int(remote.datapath.tunnel_key),
                                                       int(remote.tunnel_key),
                                                       flag.lower() == "false")))
        return tuple(p for u, p in all_peers if u != in_pb.uuid)

    def vif(self, pb: Any) -> None:
        for text in _sorted_strings(pb.mac):
            a = extract_lsp_addresses(text)
            if a is None:
                continue
            ip = a.ipv4[0] if a.ipv4 else None
            # (C learns a VIF's address locally only when it is not 0.0.0.0.)
            peers = self.peers(pb, self.ld_of(pb)) if ip and ip != "0.0.0.0" else ()
            self.add(GarpEntry(pb.logical_port, a.mac, ip, int(pb.datapath.tunnel_key),
                               int(pb.tunnel_key), peers))
            return

    def gateway(self, pb: Any) -> None:
        texts = _sorted_strings(getattr(pb, "nat_addresses", None))
        if not texts:
            opt = pb.options.get("nat-addresses")
            texts = [opt] if opt else []
        dp_key, port_key = int(pb.datapath.tunnel_key), int(pb.tunnel_key)
        peers = self.peers(pb, self.ld_of(pb))
        # C files a port's entries in a hash table and takes them back newest first.
        for text in reversed(texts):
            r = extract_addresses_with_port(text)
            if r is None:
                continue
            a, port = r
            if port is None and pb.type == "patch":
                continue
            if port is not None and not self.resident(port):
                continue
            for ip in a.ipv4:
                self.add(GarpEntry(f"{pb.logical_port}-{ip}", a.mac, ip, dp_key, port_key,
                                   peers))
            if not a.ipv4:
                self.add(GarpEntry(f"{pb.logical_port}-noip", a.mac, None, dp_key, port_key))

    def consider(self, pb: Any) -> None:
        """send_garp_rarp_update's choice of path by port type."""
        if pb.type == "localport" or pb.datapath is None:
            return
        if pb.type in _GW_TYPES:
            self.gateway(pb)
        else:
            self.vif(pb)


def garp_inputs(chassis: Any, idx: SbIndexes, local_datapaths: Mapping[Any, LocalDatapath],
                active_tunnels: set[str], vif_iface_ids: Iterable[str]) -> GarpInputs:
    """What this chassis announces (see the module note).  `vif_iface_ids`:
    ``external_ids:iface-id`` of the br-int interfaces that have an ofport."""
    if chassis is None:
        return GarpInputs()
    p = _Planner(chassis, idx, local_datapaths, active_tunnels)
    gw_done: set[str] = set()
    for iface_id in sorted(set(vif_iface_ids)):
        pb = idx.pb_by_name.get(iface_id)
        if pb is None or not same_chassis(opt_first(pb.chassis), chassis):
            continue
        ld = p.ld_of(pb)
        if ld is None or ld.localnet_port is None:
            continue
        p.consider(pb)
        if pb.type in _GW_TYPES:
            gw_done.add(pb.logical_port)     # its entries are used up
    gw_ports: dict[str, Any] = {}
    for ld in local_datapaths.values():
        if ld.localnet_port is None:
            continue
        for pb in idx.pbs_on_datapath(ld.uuid):
            if not has_map_key(pb, "type", _GW_TYPES):
                continue
            if pb.type == "patch" or same_chassis(opt_first(pb.chassis), chassis):
                gw_ports[pb.logical_port] = pb
    for name in sorted(gw_ports):
        if name not in gw_done:
            p.consider(gw_ports[name])
    return GarpInputs(tuple(p.out))


# ====================================================================== frames
_BCAST = b"\xff" * 6


def _mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def garp_frame(mac: str, ip: str) -> bytes:
    """compose_arp(ARP request, sha=mac, tha=0, broadcast, spa=tpa=ip)."""
    m, a = _mac_bytes(mac), socket.inet_aton(ip)
    return _BCAST + m + struct.pack("!HHHBBH", 0x0806, 1, 0x0800, 6, 4, 1) \
        + m + a + b"\0" * 6 + a


def rarp_frame(mac: str) -> bytes:
    """compose_rarp(mac)."""
    m = _mac_bytes(mac)
    return _BCAST + m + struct.pack("!HHHBBH", 0x8035, 1, 0x0800, 6, 4, 3) \
        + m + b"\0" * 4 + m + b"\0" * 4


# ====================================================================== announcer
@dataclass(frozen=True, slots=True)
class LocalMacBinding:
    """A MAC_Binding upsert on a peer router port (pinctrl's
    mac_binding_add_to_sb): insert unless `update_only`, else only rewrite the
    MAC of an existing (port, ip) row."""
    dp_key: int
    port_key: int
    ip: str
    mac: str
    update_only: bool


class _Schedule:
    __slots__ = ("frame", "dp_key", "port_key", "due_ms", "backoff")

    def __init__(self, frame: bytes, dp_key: int, port_key: int, due_ms: int) -> None:
        self.frame = frame
        self.dp_key = dp_key
        self.port_key = port_key
        self.due_ms: int | None = due_ms     # None: all five sends done
        self.backoff = 1


class GarpAnnouncer:
    """Keyed GARP/RARP schedules (see the module note).  Thread-safe: the
    main loop calls :meth:`update`, the pinctrl service :meth:`run`.
    `notify` is called (outside the lock) when keys were added or removed,
    so the service can re-arm its timer."""

    def __init__(self, notify: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Schedule] = {}
        self._inputs = GarpInputs()
        self._notify = notify

    def update(self, inputs: GarpInputs, now_ms: int, sb_writable: bool) -> list[LocalMacBinding]:
        """Apply a new plan; the MAC_Binding upserts of the keys it created,
        one per (port, ip): when two new keys learn the same IP on the same
        router port, the later MAC wins, as C's second upsert rewrites the
        row its first one inserted in the same transaction."""
        intents: dict[tuple[int, int, str], LocalMacBinding] = {}
        changed = False
        with self._lock:
            if inputs == self._inputs:
                return []
            self._inputs = inputs
            keys = {e.key for e in inputs.entries}
            for key in [k for k in self._entries if k not in keys]:
                del self._entries[key]
                changed = True
            for e in inputs.entries:
                s = self._entries.get(e.key)
                if s is not None:
                    s.dp_key, s.port_key = e.dp_key, e.port_key
                    continue
                frame = garp_frame(e.mac, e.ipv4) \
                    if e.ipv4 is not None and e.ipv4 != "0.0.0.0" else rarp_frame(e.mac)
                self._entries[e.key] = _Schedule(frame, e.dp_key, e.port_key,
                                                 now_ms + FIRST_DELAY_MS)
                changed = True
                if sb_writable and e.ipv4 is not None:
                    for p in e.peers:
                        k = (p.dp_key, p.port_key, e.ipv4)
                        prev = intents.pop(k, None)
                        # (an insert-allowed upsert inserts; a later update-only one updates it)
                        update_only = p.update_only and (prev is None or prev.update_only)
                        intents[k] = LocalMacBinding(p.dp_key, p.port_key, e.ipv4, e.mac,
                                                     update_only)
        if changed and self._notify is not None:
            self._notify()
        return list(intents.values())

    def run(self, now_ms: int) -> list[bytes]:
        """Packet-outs of the announcements due at `now_ms`."""
        now_ms = int(now_ms)          # (the service's clock is ovs.timeval's float ms)
        out: list[bytes] = []
        with self._lock:
            for s in self._entries.values():
                if s.due_ms is None or now_ms < s.due_ms:
                    continue
                out.append(po_inject(s.frame, s.dp_key, s.port_key, INGRESS_TABLE))
                if s.backoff < LAST_BACKOFF:
                    s.backoff *= 2
                    s.due_ms = now_ms + s.backoff * 1000
                else:
                    s.due_ms = None
        return out

    def next_wake_ms(self) -> int | None:
        """When :meth:`run` next has something to send; None: nothing pending."""
        with self._lock:
            dues = [s.due_ms for s in self._entries.values() if s.due_ms is not None]
        return min(dues) if dues else None

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._entries)
