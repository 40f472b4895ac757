"""IGMP / MLD messages and the snooping table (OVS lib/mcast-snooping.c as
23.03.1's pinctrl uses it).

Design note
-----------
Two pure-data parts, no OpenFlow and no threads:

* :func:`parse_igmp` / :func:`parse_mld` turn a frame (already split by
  :func:`controller.pinctrl.frames.parse`) into the membership operations
  ``pinctrl_ip_mcast_handle_igmp`` / ``_mld`` would apply, plus whether the
  frame is then forwarded as a report or as a query.  The message type is
  what ``flow_extract`` puts in ``tp_src`` (0 when the L4 payload is shorter
  than 8 bytes or the frame is a later fragment); the checksum must verify
  over the whole L4 payload (IGMP plain, MLD with the IPv6 pseudo-header),
  else :class:`McastError` -- the frame is counted, warned and dropped, never
  forwarded.  IGMPv1/v2 report -> join of the header's group, leave ->
  leave, query -> mrouter port; IGMPv3 report -> per record, INCLUDE /
  TO_INCLUDE with no source is a leave, anything else of types 1-6 a join;
  an unknown record type is skipped *without advancing* (OVS re-reads the
  same record for the remaining count).  Records past the end of the frame
  end the walk.  MLD: a query with a source other than ``::`` is an mrouter
  port, v1 report / done join / leave the address after the 8-byte header,
  v2 reports as IGMPv3 (unknown record types do advance here).  The record
  length adds ``aux_len`` in bytes, as OVS does (RFC 3376 counts words).
* :class:`Snooping` is one datapath's table: groups in LRU order (oldest
  first), each with its ports ordered by expiry (``time_now()`` seconds +
  idle time); mrouter ports expire 180 s after the last query; idle time is
  clamped to [15, 3600] and the table size to [10, 10^6]; a new group beyond
  the size evicts the least recently reported one.  A port known as mrouter
  cannot join.  :meth:`Snooping.run` ages it exactly as
  ``mcast_snooping_run``: walk groups oldest first, flush a group while the
  table is over size, else prune its expired ports (a group left without
  ports goes) and stop at the first group that lost nothing.  ``changed``
  mirrors ``need_revalidate``: set by a new port, a leave that removed one,
  a new mrouter, an expiry; cleared by ``run``, which returns it.
"""

from __future__ import annotations

import socket
import struct
from collections import OrderedDict
from dataclasses import dataclass

from controller.pinctrl import frames

__all__ = ["McastError", "McastOps", "parse_igmp", "parse_mld", "Snooping", "JOIN", "LEAVE",
           "MROUTER", "group_str", "MROUTER_IDLE_S", "normalize_idle_time",
           "normalize_max_entries"]

IPPROTO_IGMP = 2
IGMP_QUERY, IGMPV1_REPORT, IGMPV2_REPORT, IGMP_LEAVE, IGMPV3_REPORT = 0x11, 0x12, 0x16, 0x17, 0x22
MLD_QUERY, MLD_REPORT, MLD_DONE, MLD2_REPORT = 130, 131, 132, 143
IGMPV3_MODE_IS_INCLUDE, IGMPV3_CHANGE_TO_INCLUDE, IGMPV3_BLOCK_OLD = 1, 3, 6
MROUTER_IDLE_S = 180                 # MCAST_MROUTER_PORT_IDLE_TIME

JOIN, LEAVE, MROUTER = "join", "leave", "mrouter"
FWD_NONE, FWD_REPORT, FWD_QUERY = 0, 1, 2

_V4_MAPPED = b"\0" * 10 + b"\xff\xff"
_ZERO16 = bytes(16)
_U16 = struct.Struct("!H")


class McastError(ValueError):
    """A message C rejects (bad checksum, not IP): counted and dropped."""


@dataclass(frozen=True, slots=True)
class McastOps:
    """What one IGMP/MLD message does: ``ops`` are (JOIN/LEAVE/MROUTER,
    16-byte group, IPv4-mapped for IGMP; zero for MROUTER) in message order;
    ``forward`` is FWD_REPORT, FWD_QUERY or FWD_NONE."""

    ops: tuple[tuple[str, bytes], ...]
    forward: int


def group_str(addr: bytes) -> str:
    """The SB text of a group (ipv6_string_mapped): dotted IPv4 for a mapped
    address, else inet_ntop's IPv6 form."""
    if addr[:12] == _V4_MAPPED:
        return socket.inet_ntop(socket.AF_INET, addr[12:])
    return socket.inet_ntop(socket.AF_INET6, addr)


def parse_igmp(frame: bytes, h: frames.Headers) -> McastOps:
    """IGMP over IPv4 (see module note)."""
    l4 = h.l4
    if l4 is None or l4 + 8 > len(frame):
        raise McastError("multicast snooping received bad IGMP checksum")
    end = max(h.l3_end, l4)
    if frames.csum(frame[l4:end]) != 0:
        raise McastError("multicast snooping received bad IGMP checksum")
    mtype = 0
    if h.nw_proto == IPPROTO_IGMP and end - l4 >= 8 and not h.nw_frag & frames.FLOW_NW_FRAG_LATER:
        mtype = frame[l4]
    ops: list[tuple[str, bytes]] = []
    group = _V4_MAPPED + frame[l4 + 4:l4 + 8]
    if mtype in (IGMPV1_REPORT, IGMPV2_REPORT):
        ops.append((JOIN, group))
    elif mtype == IGMP_LEAVE:
        ops.append((LEAVE, group))
    elif mtype == IGMP_QUERY:
        ops.append((MROUTER, _ZERO16))
    elif mtype == IGMPV3_REPORT:
        ops += _igmpv3_records(frame, l4)
    if mtype in (IGMPV1_REPORT, IGMPV2_REPORT, IGMPV3_REPORT, IGMP_LEAVE):
        fwd = FWD_REPORT
    elif mtype == IGMP_QUERY:
        fwd = FWD_QUERY
    else:
        fwd = FWD_NONE
    return McastOps(tuple(ops), fwd)


def _igmpv3_records(frame: bytes, l4: int) -> list[tuple[str, bytes]]:
    """mcast_snooping_add_report's walk over the group records."""
    out: list[tuple[str, bytes]] = []
    n = len(frame)
    ngrp = _U16.unpack_from(frame, l4 + 6)[0]
    ofs = l4 + 8
    while ngrp > 0:
        ngrp -= 1
        if ofs + 8 > n:
            break
        rtype, aux_len, nsrcs = frame[ofs], frame[ofs + 1], _U16.unpack_from(frame, ofs + 2)[0]
        if rtype < IGMPV3_MODE_IS_INCLUDE or rtype > IGMPV3_BLOCK_OLD:
            continue                     # OVS does not advance past an unknown record
        group = _V4_MAPPED + frame[ofs + 4:ofs + 8]
        if nsrcs == 0 and rtype in (IGMPV3_MODE_IS_INCLUDE, IGMPV3_CHANGE_TO_INCLUDE):
            out.append((LEAVE, group))
        else:
            out.append((JOIN, group))
        ofs += 8 + nsrcs * 4 + aux_len
    return out


def parse_mld(frame: bytes, h: frames.Headers) -> McastOps:
    """MLD over IPv6 (see module note)."""
    l4 = h.l4
    if l4 is None or l4 + 8 > len(frame):
        raise McastError("multicast snooping received bad MLD checksum")
    end = max(h.l3_end, l4)
    body = frame[l4:end]
    src, dst = frame[h.l3 + 8:h.l3 + 24], frame[h.l3 + 24:h.l3 + 40]
    if len(src) != 16 or len(dst) != 16 or \
            frames.csum(body, frames._pseudo6(src, dst, frames.IPPROTO_ICMPV6, len(body))) != 0:
        raise McastError("multicast snooping received bad MLD checksum")
    mtype = h.tp_src if h.nw_proto == frames.IPPROTO_ICMPV6 else 0
    ops: list[tuple[str, bytes]] = []
    if mtype == MLD_QUERY:
        if h.nw_src != _ZERO16:
            ops.append((MROUTER, _ZERO16))
    elif mtype in (MLD_REPORT, MLD_DONE):
        addr = frame[l4 + 8:l4 + 24]
        if len(addr) == 16:          # (OVS would dereference NULL here)
            ops.append((JOIN if mtype == MLD_REPORT else LEAVE, addr))
    elif mtype == MLD2_REPORT:
        ops += _mld2_records(frame, l4)
    if h.nw_proto != frames.IPPROTO_ICMPV6:
        fwd = FWD_NONE
    elif mtype in (MLD_REPORT, MLD_DONE, MLD2_REPORT):
        fwd = FWD_REPORT
    elif mtype == MLD_QUERY:
        fwd = FWD_QUERY
    else:
        fwd = FWD_NONE
    return McastOps(tuple(ops), fwd)


def _mld2_records(frame: bytes, l4: int) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    n = len(frame)
    ngrp = _U16.unpack_from(frame, l4 + 6)[0]
    ofs = l4 + 8
    while ngrp > 0:
        ngrp -= 1
        if ofs + 20 > n:
            break
        rtype, aux_len, nsrcs = frame[ofs], frame[ofs + 1], _U16.unpack_from(frame, ofs + 2)[0]
        if IGMPV3_MODE_IS_INCLUDE <= rtype <= IGMPV3_BLOCK_OLD:
            addr = frame[ofs + 4:ofs + 20]
            if nsrcs == 0 and rtype in (IGMPV3_MODE_IS_INCLUDE, IGMPV3_CHANGE_TO_INCLUDE):
                out.append((LEAVE, addr))
            else:
                out.append((JOIN, addr))
        ofs += 20 + nsrcs * 16 + aux_len
    return out


# ====================================================================== table
def normalize_idle_time(idle_s: int) -> int:
    return 15 if idle_s < 15 else 3600 if idle_s > 3600 else idle_s


def normalize_max_entries(n: int) -> int:
    return 10 if n < 10 else 1_000_000 if n > 1_000_000 else n


class Snooping:
    """One datapath's groups and mrouter ports (see module note).  Ports are
    logical port keys; times are seconds.  Not thread-safe: the owner locks."""

    __slots__ = ("groups", "mrouters", "idle_time", "max_entries", "changed")

    def __init__(self) -> None:
        # group -> {port: expires}; both dicts ordered oldest first.
        self.groups: OrderedDict[bytes, OrderedDict[int, int]] = OrderedDict()
        self.mrouters: OrderedDict[int, int] = OrderedDict()
        self.idle_time = 300
        self.max_entries = 2048
        self.changed = False

    def set_idle_time(self, idle_s: int) -> None:
        idle_s = normalize_idle_time(idle_s)
        delta = idle_s - self.idle_time
        if delta:
            for ports in self.groups.values():
                for port in ports:
                    ports[port] += delta
            self.idle_time = idle_s

    def set_max_entries(self, n: int) -> None:
        self.max_entries = normalize_max_entries(n)

    def flush(self) -> None:
        if self.groups:
            self.changed = True
        self.groups.clear()
        self.mrouters.clear()

    def would_change(self, op: str, group: bytes, port: int) -> bool:
        """Whether applying (op, group) from ``port`` changes the SB-visible
        state (a refresh of a known membership does not)."""
        if op == MROUTER:
            return port not in self.mrouters
        if port in self.mrouters:
            return False
        ports = self.groups.get(group)
        if op == JOIN:
            return ports is None or port not in ports
        return ports is not None and port in ports

    def join(self, group: bytes, port: int, now_s: int) -> bool:
        """mcast_snooping_add_group: True when the group is new."""
        if port in self.mrouters:
            return False
        ports = self.groups.get(group)
        learned = False
        if ports is None:
            if len(self.groups) >= self.max_entries:
                self.groups.popitem(last=False)      # evict the LRU group
            ports = self.groups[group] = OrderedDict()
            learned = True
            self.changed = True
        else:
            self.groups.move_to_end(group)
        if port in ports:
            ports.move_to_end(port)
        else:
            self.changed = True
        ports[port] = now_s + self.idle_time
        return learned

    def leave(self, group: bytes, port: int) -> bool:
        ports = self.groups.get(group)
        if ports is not None and port in ports:
            del ports[port]
            self.changed = True
            return True
        return False

    def add_mrouter(self, port: int, now_s: int) -> bool:
        if port in self.mrouters:
            self.mrouters.move_to_end(port)
        else:
            self.changed = True
        self.mrouters[port] = now_s + MROUTER_IDLE_S
        return self.changed

    def apply(self, ops: McastOps, port: int, now_s: int) -> bool:
        """Apply every operation of one message; True if any changed the table."""
        change = False
        for op, group in ops.ops:
            if op == JOIN:
                change |= self.join(group, port, now_s)
            elif op == LEAVE:
                change |= self.leave(group, port)
            else:
                change |= self.add_mrouter(port, now_s)
        return change

    def run(self, now_s: int) -> bool:
        """mcast_snooping_run: age groups and mrouters; returns (and clears)
        ``changed``."""
        groups = self.groups
        while groups:
            group, ports = next(iter(groups.items()))
            if len(groups) > self.max_entries:
                del groups[group]
                self.changed = True
                continue
            expired = 0
            while ports:
                port, expires = next(iter(ports.items()))
                if expires > now_s:
                    break
                del ports[port]
                expired += 1
            if not ports:
                del groups[group]
                expired += 1
            if expired:
                self.changed = True
            else:
                break
        while self.mrouters:
            port, expires = next(iter(self.mrouters.items()))
            if now_s < expires:
                break
            del self.mrouters[port]
            self.changed = True
        changed, self.changed = self.changed, False
        return changed

    def next_wake_ms(self) -> int | None:
        """mcast_snooping_wait: 0 for 'now', else the next expiry in ms."""
        if self.changed or len(self.groups) > self.max_entries:
            return 0
        at: int | None = None
        if self.groups:
            ports = next(iter(self.groups.values()))
            at = next(iter(ports.values())) * 1000 if ports else 0
        if self.mrouters:
            m = next(iter(self.mrouters.values())) * 1000
            at = m if at is None else min(at, m)
        return at

    def members(self) -> dict[bytes, tuple[int, ...]]:
        """Groups with at least one port -> ports (join order of their expiry)."""
        return {g: tuple(p) for g, p in self.groups.items() if p}

    def mrouter_ports(self) -> tuple[int, ...]:
        return tuple(self.mrouters)
