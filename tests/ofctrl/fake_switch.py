"""An in-memory OpenFlow 1.5 switch for unit tests of the ofctrl session.

It speaks over socketpairs (`FakeSwitch.connect` is a connection factory
for `ofctrl.connection.Connection`), so the real session code runs against
it: hello, features, echo, barrier, Nicira TLV table request/mod, ct zone
flush, flow_mod (add / modify_strict / delete_strict / delete all), group
mods (add, insert bucket, delete, delete all), meter mods, and atomic
bundles (a failing message rolls the whole bundle back and the commit gets
OFPBFC_MSG_FAILED, like OVS).

The flow table is keyed by (table, priority, raw ofp_match bytes) with
(cookie, raw instruction bytes) as value, which is exactly what the session
sends, so tests compare it with the desired table's encodings.

Also here: `OxmMatch`, a tiny stand-in for `ofctrl.match.Match` used by the
tests (raw OXM TLVs, hashable, `encode()`, `to_string()`).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from typing import Callable

from ofctrl import messages as m

FlowKey = tuple[int, int, bytes]


class OxmMatch:
    """Stand-in Match: items are (name, oxm_class, field, n_bytes, value)."""

    _FIELDS = {
        "reg0": (0x0001, 0, 4), "reg1": (0x0001, 1, 4), "reg14": (0x0001, 14, 4),
        "reg15": (0x0001, 15, 4), "metadata": (0x8000, 2, 8), "in_port": (0x8000, 0, 4),
    }

    __slots__ = ("items", "_hash")

    def __init__(self, **fields: int) -> None:
        self.items = tuple(sorted(fields.items(), key=lambda kv: (kv[0] != "in_port", kv[0])))
        self._hash = hash(self.items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OxmMatch) and self.items == other.items

    def encode(self) -> bytes:
        body = b""
        for name, value in self.items:
            cls, fld, n = self._FIELDS[name]
            body += struct.pack("!HBB", cls, fld << 1, n) + value.to_bytes(n, "big")
        n = 4 + len(body)
        return struct.pack("!HH", 1, n) + body + b"\0" * ((-n) % 8)

    def to_string(self) -> str:
        return ",".join("%s=%#x" % (k, v) for k, v in self.items)

    def __repr__(self) -> str:
        return "OxmMatch(%s)" % self.to_string()


@dataclass
class SwitchFlow:
    cookie: int
    instructions: bytes


@dataclass
class _Peer:
    sock: socket.socket
    rx: bytearray = field(default_factory=bytearray)
    hello_done: bool = False
    bundles: dict[int, list[bytes]] = field(default_factory=dict)


class FakeSwitch:
    def __init__(self, n_tlv_slots: int = 64) -> None:
        self.flows: dict[FlowKey, SwitchFlow] = {}
        self.groups: dict[int, tuple[int, list[bytes]]] = {}  # id -> (type, encoded buckets)
        self.meters: dict[int, bytes] = {}
        self.tlv_maps: list[m.TlvMap] = []
        self.n_tlv_slots = n_tlv_slots
        self.ct_flushed: list[int] = []
        self.received: list[int] = []  # message types received (bundle-added inner types included as 1000+type)
        self.peers: list[_Peer] = []
        # Flow mods whose instructions contain one of these byte strings fail (OFPBAC_BAD_OUT_GROUP).
        self.poison: list[bytes] = []
        self.tlv_race = 0  # answer the next N TLV mods with NXTTMFC_ALREADY_MAPPED
        self.max_flow_count_seen = 0
        self.min_flow_count_after_first_commit: int | None = None
        self.n_commits = 0
        self.refuse_connections = False
        self.on_commit: Callable[["FakeSwitch"], None] | None = None
        self.max_meter = 1 << 16  # OFPMP_METER_FEATURES answer; None: refuse the request

    # ------------------------------------------------------------ transport
    def connect(self) -> socket.socket:
        if self.refuse_connections:
            raise ConnectionRefusedError(111, "refused")
        a, b = socket.socketpair()
        b.setblocking(False)
        self.peers.append(_Peer(b))
        b.sendall(m.hello(0))
        return a

    def drop_connections(self) -> None:
        for p in self.peers:
            p.sock.close()
        self.peers = []

    def run(self) -> None:
        for p in list(self.peers):
            while True:
                try:
                    data = p.sock.recv(1 << 20)
                except BlockingIOError:
                    break
                except OSError:
                    data = b""
                if not data:
                    p.sock.close()
                    self.peers.remove(p)
                    break
                p.rx += data
            off = 0
            while len(p.rx) - off >= 8:
                length = struct.unpack_from("!H", p.rx, off + 2)[0]
                if len(p.rx) - off < length:
                    break
                msg = bytes(p.rx[off:off + length])
                off += length
                self._handle(p, msg)
            del p.rx[:off]

    def _send(self, p: _Peer, msg: bytes) -> None:
        p.sock.setblocking(True)
        try:
            p.sock.sendall(msg)
        except OSError:
            pass
        p.sock.setblocking(False)

    def _error(self, p: _Peer, xid: int, etype: int, code: int, data: bytes, exp: int | None = None) -> None:
        if exp is None:
            body = struct.pack("!HH", etype, code) + data[:64]
        else:
            body = struct.pack("!HHI", m.OFPET_EXPERIMENTER, code, exp) + data[:64]
        self._send(p, m.simple(m.OFPT_ERROR, xid, body))

    # ------------------------------------------------------------ messages
    def _handle(self, p: _Peer, msg: bytes) -> None:
        _, mtype, _, xid = m.HEADER.unpack_from(msg)
        self.received.append(mtype)
        if mtype == m.OFPT_HELLO:
            p.hello_done = True
        elif mtype == m.OFPT_ECHO_REQUEST:
            self._send(p, m.simple(m.OFPT_ECHO_REPLY, xid, msg[8:]))
        elif mtype == m.OFPT_FEATURES_REQUEST:
            self._send(p, m.simple(m.OFPT_FEATURES_REPLY, xid, struct.pack("!QIBB2xII", 0xABC, 0, 254, 0, 0, 0)))
        elif mtype == m.OFPT_BARRIER_REQUEST:
            self._send(p, m.simple(m.OFPT_BARRIER_REPLY, xid))
        elif mtype == m.OFPT_MULTIPART_REQUEST and \
                struct.unpack_from("!H", msg, 8)[0] == m.OFPMP_METER_FEATURES:
            if self.max_meter is None:
                self._error(p, xid, 1, 2, msg)  # OFPET_BAD_REQUEST, OFPBRC_BAD_MULTIPART
            else:
                self._send(p, m.simple(m.OFPT_MULTIPART_REPLY, xid, struct.pack(
                    "!HH4xIIIBB2x", m.OFPMP_METER_FEATURES, 0, self.max_meter, 0xF, 0x3, 1, 0)))
        elif mtype == m.OFPT_EXPERIMENTER:
            self._nx(p, msg, xid)
        elif mtype == m.OFPT_BUNDLE_CONTROL:
            self._bundle_ctrl(p, msg, xid)
        elif mtype == m.OFPT_BUNDLE_ADD_MESSAGE:
            bid = struct.unpack_from("!I", msg, 8)[0]
            inner = msg[16:]
            self.received.append(1000 + inner[1])
            if m.HEADER.unpack_from(inner)[3] != xid:
                self._error(p, xid, 17, 9, msg)  # OFPBFC_MSG_BAD_XID
                return
            p.bundles.setdefault(bid, []).append(inner)
        elif mtype == m.OFPT_FLOW_MOD or mtype == m.OFPT_GROUP_MOD:
            err = self._apply([msg])
            if err is not None:
                self._error(p, *err)
            self._note_counts()
        elif mtype == m.OFPT_METER_MOD:
            cmd, flags, mid = struct.unpack_from("!HHI", msg, 8)
            if cmd == m.OFPMC_DELETE:
                if mid == m.OFPM_ALL:
                    self.meters.clear()
                else:
                    self.meters.pop(mid, None)
            elif cmd == m.OFPMC_ADD and mid in self.meters:
                self._error(p, xid, 12, 1, msg)  # OFPMMFC_METER_EXISTS
            else:
                self.meters[mid] = msg[8:]

    def _nx(self, p: _Peer, msg: bytes, xid: int) -> None:
        sub = m.nx_subtype(msg)
        if sub == m.NXT_TLV_TABLE_REQUEST:
            body = struct.pack("!IH10x", 256, 64) + b"".join(
                struct.pack("!HBBH2x", t.option_class, t.option_type, t.option_len, t.index) for t in self.tlv_maps
            )
            self._send(p, m.nx_message(m.NXT_TLV_TABLE_REPLY, xid, body))
        elif sub == m.NXT_TLV_TABLE_MOD:
            (cmd,) = struct.unpack_from("!H", msg, 16)
            new = []
            for off in range(24, len(msg), 8):
                c, t, ln, idx = struct.unpack_from("!HBBH", msg, off)
                new.append(m.TlvMap(c, t, ln, idx))
            if self.tlv_race:
                self.tlv_race -= 1
                # Someone else mapped the slot meanwhile.
                self.tlv_maps.append(m.TlvMap(0x999, 1, 4, new[0].index))
                self._error(p, xid, 0, m.NXTTMFC_ALREADY_MAPPED, msg, m.NX_VENDOR_ID)
                return
            if cmd == m.NXTTMC_ADD:
                used = {t.index for t in self.tlv_maps}
                for t in new:
                    if t.index in used or t.index >= self.n_tlv_slots:
                        self._error(p, xid, 0, m.NXTTMFC_ALREADY_MAPPED, msg, m.NX_VENDOR_ID)
                        return
                self.tlv_maps.extend(new)
        elif sub == m.NXT_CT_FLUSH_ZONE:
            self.ct_flushed.append(struct.unpack_from("!H", msg, 22)[0])

    def _bundle_ctrl(self, p: _Peer, msg: bytes, xid: int) -> None:
        bid, ctype, flags = m.decode_bundle_ctrl(msg)
        if ctype == m.OFPBCT_OPEN_REQUEST:
            p.bundles[bid] = []
            self._send(p, m.bundle_ctrl(xid, bid, m.OFPBCT_OPEN_REPLY, flags))
        elif ctype == m.OFPBCT_DISCARD_REQUEST:
            p.bundles.pop(bid, None)
            self._send(p, m.bundle_ctrl(xid, bid, m.OFPBCT_DISCARD_REQUEST + 1, flags))
        elif ctype == m.OFPBCT_COMMIT_REQUEST:
            msgs = p.bundles.pop(bid, [])
            saved = (dict(self.flows), dict(self.groups))
            err = self._apply(msgs)
            if err is not None:
                self.flows, self.groups = saved
                self._error(p, *err)
                self._error(p, xid, 17, 13, msg)  # OFPBFC_MSG_FAILED
                return
            self.n_commits += 1
            self._note_counts()
            if self.on_commit is not None:
                self.on_commit(self)
            self._send(p, m.bundle_ctrl(xid, bid, m.OFPBCT_COMMIT_REPLY, flags))

    def _note_counts(self) -> None:
        n = len(self.flows)
        self.max_flow_count_seen = max(self.max_flow_count_seen, n)
        if self.n_commits:
            if self.min_flow_count_after_first_commit is None or n < self.min_flow_count_after_first_commit:
                self.min_flow_count_after_first_commit = n

    def _apply(self, msgs: list[bytes]) -> tuple[int, int, int, bytes] | None:
        for msg in msgs:
            mtype = msg[1]
            xid = m.HEADER.unpack_from(msg)[3]
            if mtype == m.OFPT_FLOW_MOD:
                err = self._flow_mod(msg, xid)
            elif mtype == m.OFPT_GROUP_MOD:
                err = self._group_mod(msg, xid)
            else:
                err = (xid, 1, 1, msg)  # OFPBRC_BAD_TYPE
            if err is not None:
                return err
        return None

    def _flow_mod(self, msg: bytes, xid: int) -> tuple[int, int, int, bytes] | None:
        cookie, _mask, table, cmd, _i, _h, prio = struct.unpack_from("!QQBBHHH", msg, 8)
        mlen = struct.unpack_from("!H", msg, 50)[0]
        mend = 48 + (mlen + 7) // 8 * 8
        match = msg[48:mend]
        instr = msg[mend:]
        if cmd == m.OFPFC_DELETE:
            if table == m.OFPTT_ALL and mlen == 4:
                self.flows.clear()
            else:
                for k in [k for k in self.flows if k[0] == table or table == m.OFPTT_ALL]:
                    del self.flows[k]
            return None
        key = (table, prio, match)
        if cmd == m.OFPFC_DELETE_STRICT:
            self.flows.pop(key, None)
            return None
        for bad in self.poison:
            if bad in instr:
                return (xid, 2, 9, msg)  # OFPET_BAD_ACTION / OFPBAC_BAD_OUT_GROUP
        if cmd == m.OFPFC_ADD:
            self.flows[key] = SwitchFlow(cookie, instr)
        elif cmd == m.OFPFC_MODIFY_STRICT:
            old = self.flows.get(key)
            if old is not None:
                self.flows[key] = SwitchFlow(old.cookie, instr)
        return None

    def _group_mod(self, msg: bytes, xid: int) -> tuple[int, int, int, bytes] | None:
        cmd, gtype, gid, blen, _cb = struct.unpack_from("!HBxIH2xI", msg, 8)
        buckets = msg[24:24 + blen]
        if cmd == m.OFPGC15_DELETE:
            if gid == m.OFPG_ALL:
                self.groups.clear()
            else:
                self.groups.pop(gid, None)
        elif cmd == m.OFPGC15_ADD:
            if gid in self.groups:
                return (xid, 6, 0, msg)  # OFPGMFC_GROUP_EXISTS
            self.groups[gid] = (gtype, [buckets])
        elif cmd == m.OFPGC15_INSERT_BUCKET:
            if gid not in self.groups:
                return (xid, 6, 8, msg)  # OFPGMFC_UNKNOWN_GROUP
            self.groups[gid][1].append(buckets)
        return None

    # ------------------------------------------------------------ views
    def flow_set(self) -> set[tuple[int, int, bytes, int, bytes]]:
        return {(k[0], k[1], k[2], v.cookie, v.instructions) for k, v in self.flows.items()}
