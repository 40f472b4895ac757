"""OpenFlow 1.5 session messages: a small `struct` encoder/decoder.

Hot path: flow_mods wrapped in bundle_add messages.  One precompiled
`struct.Struct` packs the outer OFPT_BUNDLE_ADD_MESSAGE header, the bundle
fields, the inner OFPT_FLOW_MOD header and the fixed flow_mod fields in one
call; the flow's cached `wire()` bytes (ofp_match + instructions) follow.
The bundle_add xid equals the inner message's xid (OVS requires it).

Everything else (hello, features, echo, barrier, set_config, bundle control,
group_mod with insert-bucket splitting, meter_mod, Nicira TLV table, ct zone
flush, packet-in format, resume) is built with plain `struct.pack`; these are
rare.  Decoders cover what the session receives: headers, errors (with names
like `OFPBAC_BAD_OUT_GROUP`), TLV table replies, features replies.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable, Sequence

OFP15_VERSION = 6

# Message types (OpenFlow 1.5).
OFPT_HELLO = 0
OFPT_ERROR = 1
OFPT_ECHO_REQUEST = 2
OFPT_ECHO_REPLY = 3
OFPT_EXPERIMENTER = 4
OFPT_FEATURES_REQUEST = 5
OFPT_FEATURES_REPLY = 6
OFPT_GET_CONFIG_REQUEST = 7
OFPT_GET_CONFIG_REPLY = 8
OFPT_SET_CONFIG = 9
OFPT_PACKET_IN = 10
OFPT_PORT_STATUS = 12
OFPT_PACKET_OUT = 13
OFPT_FLOW_MOD = 14
OFPT_GROUP_MOD = 15
OFPT_MULTIPART_REQUEST = 18
OFPT_MULTIPART_REPLY = 19
OFPT_BARRIER_REQUEST = 20
OFPT_BARRIER_REPLY = 21
OFPT_METER_MOD = 29
OFPT_BUNDLE_CONTROL = 33
OFPT_BUNDLE_ADD_MESSAGE = 34

# Flow mod commands.
OFPFC_ADD = 0
OFPFC_MODIFY = 1
OFPFC_MODIFY_STRICT = 2
OFPFC_DELETE = 3
OFPFC_DELETE_STRICT = 4

OFPTT_ALL = 0xFF
OFP_NO_BUFFER = 0xFFFFFFFF
OFPP_ANY = 0xFFFFFFFF
OFPG_ANY = 0xFFFFFFFF
OFPG_ALL = 0xFFFFFFFC

# Group mod.
OFPGC15_ADD = 0
OFPGC15_MODIFY = 1
OFPGC15_DELETE = 2
OFPGC15_INSERT_BUCKET = 3
OFPGC15_REMOVE_BUCKET = 4
OFPGT_ALL = 0
OFPGT_SELECT = 1
OFPGT_INDIRECT = 2
OFPGT_FF = 3
GROUP_TYPES = {"all": OFPGT_ALL, "select": OFPGT_SELECT, "indirect": OFPGT_INDIRECT, "ff": OFPGT_FF, "fast_failover": OFPGT_FF}
OFPG15_BUCKET_FIRST = 0xFFFFFFFD
OFPG15_BUCKET_LAST = 0xFFFFFFFE
OFPG15_BUCKET_ALL = 0xFFFFFFFF
OFPGBPT15_WEIGHT = 0
OFPGPT15_EXPERIMENTER = 0xFFFF
NTR_VENDOR_ID = 0x0000154D
NTRT_SELECTION_METHOD = 1

# Meter mod.
OFPMC_ADD = 0
OFPMC_MODIFY = 1
OFPMC_DELETE = 2
OFPMF_KBPS = 1
OFPMF_PKTPS = 2
OFPMF_BURST = 4
OFPMF_STATS = 8
OFPMBT_DROP = 1
OFPM_ALL = 0xFFFFFFFF

# Bundles.
OFPBCT_OPEN_REQUEST = 0
OFPBCT_OPEN_REPLY = 1
OFPBCT_CLOSE_REQUEST = 2
OFPBCT_CLOSE_REPLY = 3
OFPBCT_COMMIT_REQUEST = 4
OFPBCT_COMMIT_REPLY = 5
OFPBCT_DISCARD_REQUEST = 6
OFPBF_ATOMIC = 1
OFPBF_ORDERED = 2

# Nicira extensions.
NX_VENDOR_ID = 0x00002320
NXT_SET_PACKET_IN_FORMAT = 16
NXT_TLV_TABLE_MOD = 24
NXT_TLV_TABLE_REQUEST = 25
NXT_TLV_TABLE_REPLY = 26
NXT_RESUME = 28
NXT_CT_FLUSH_ZONE = 29
NXT_PACKET_IN2 = 30
NXT_CT_FLUSH = 32
NXTTMC_ADD = 0
NXTTMC_DELETE = 1
NXTTMC_CLEAR = 2
NXPIF_STANDARD = 0
NXPIF_NXT_PACKET_IN = 1
NXPIF_NXT_PACKET_IN2 = 2

OVN_GENEVE_CLASS = 0x0102
OVN_GENEVE_TYPE = 0x80
OVN_GENEVE_LEN = 4

OFPET_EXPERIMENTER = 0xFFFF
MAX_MSG_LEN = 0xFFFF

HEADER = struct.Struct("!BBHI")
HEADER_LEN = 8
_NX_HEADER = struct.Struct("!BBHIII")

# flow_mod fixed part after the header (OF1.5, 40 bytes): cookie, cookie_mask,
# table_id, command, idle_timeout, hard_timeout, priority, buffer_id,
# out_port, out_group, flags, importance.
_FLOW_MOD = struct.Struct("!BBHIQQBBHHHIIIHH")
# bundle_add header + bundle fields + flow_mod (header and fixed part).
_BUNDLE_FLOW_MOD = struct.Struct("!BBHIIxxHBBHIQQBBHHHIIIHH")
FLOW_MOD_FIXED_LEN = _FLOW_MOD.size  # 48 including the header
BUNDLE_ADD_OVERHEAD = 16


# --------------------------------------------------------------------- basic
def header(msg_type: int, length: int, xid: int) -> bytes:
    return HEADER.pack(OFP15_VERSION, msg_type, length, xid)


def simple(msg_type: int, xid: int, body: bytes = b"") -> bytes:
    return HEADER.pack(OFP15_VERSION, msg_type, HEADER_LEN + len(body), xid) + body


def hello(xid: int = 0) -> bytes:
    """OFPT_HELLO with a version bitmap element announcing OpenFlow 1.5 only."""
    return simple(OFPT_HELLO, xid, struct.pack("!HHI", 1, 8, 1 << OFP15_VERSION))


def features_request(xid: int) -> bytes:
    return simple(OFPT_FEATURES_REQUEST, xid)


def echo_request(xid: int, payload: bytes = b"") -> bytes:
    return simple(OFPT_ECHO_REQUEST, xid, payload)


def echo_reply_for(request: bytes) -> bytes:
    """The echo reply to `request` (same xid, same payload)."""
    xid = HEADER.unpack_from(request)[3]
    return simple(OFPT_ECHO_REPLY, xid, request[HEADER_LEN:])


def barrier_request(xid: int) -> bytes:
    return simple(OFPT_BARRIER_REQUEST, xid)


OFPMP_METER_FEATURES = 11


def meter_features_request(xid: int) -> bytes:
    """OFPMP_METER_FEATURES multipart request (no body)."""
    return simple(OFPT_MULTIPART_REQUEST, xid, struct.pack("!HH4x", OFPMP_METER_FEATURES, 0))


def decode_meter_features_max_meter(msg: bytes) -> int | None:
    """``max_meter`` of an OFPMP_METER_FEATURES reply; None for anything else."""
    body = msg[HEADER_LEN:]
    if msg[1] != OFPT_MULTIPART_REPLY or len(body) < 12:
        return None
    mp_type, = struct.unpack_from("!H", body, 0)
    if mp_type != OFPMP_METER_FEATURES:
        return None
    max_meter: int = struct.unpack_from("!I", body, 8)[0]
    return max_meter


def get_config_request(xid: int) -> bytes:
    return simple(OFPT_GET_CONFIG_REQUEST, xid)


def set_config(xid: int, flags: int = 0, miss_send_len: int = 0xFFFF) -> bytes:
    """OFPT_SET_CONFIG; needed before a service connection gets packet-ins."""
    return simple(OFPT_SET_CONFIG, xid, struct.pack("!HH", flags, miss_send_len))


def nx_message(subtype: int, xid: int, body: bytes = b"") -> bytes:
    return _NX_HEADER.pack(OFP15_VERSION, OFPT_EXPERIMENTER, 16 + len(body), xid, NX_VENDOR_ID, subtype) + body


def set_packet_in_format(xid: int, fmt: int = NXPIF_NXT_PACKET_IN2) -> bytes:
    return nx_message(NXT_SET_PACKET_IN_FORMAT, xid, struct.pack("!I", fmt))


def tlv_table_request(xid: int) -> bytes:
    return nx_message(NXT_TLV_TABLE_REQUEST, xid)


@dataclass(frozen=True, slots=True)
class TlvMap:
    option_class: int
    option_type: int
    option_len: int
    index: int


def tlv_table_mod(xid: int, command: int, maps: Sequence[TlvMap]) -> bytes:
    body = struct.pack("!H6x", command) + b"".join(
        struct.pack("!HBBH2x", m.option_class, m.option_type, m.option_len, m.index) for m in maps
    )
    return nx_message(NXT_TLV_TABLE_MOD, xid, body)


def decode_tlv_table_reply(msg: bytes) -> tuple[int, int, list[TlvMap]]:
    """(max_option_space, max_fields, mappings) of an NXT_TLV_TABLE_REPLY."""
    max_space, max_fields = struct.unpack_from("!IH", msg, 16)
    maps = []
    for off in range(32, len(msg) - 7, 8):
        cls, typ, ln, idx = struct.unpack_from("!HBBH", msg, off)
        maps.append(TlvMap(cls, typ, ln, idx))
    return max_space, max_fields, maps


def ct_flush_zone(xid: int, zone: int) -> bytes:
    return nx_message(NXT_CT_FLUSH_ZONE, xid, struct.pack("!6xH", zone))


def _prop(ptype: int, value: bytes) -> bytes:
    n = 4 + len(value)
    return struct.pack("!HH", ptype, n) + value + b"\0" * ((-n) % 8)


@dataclass(frozen=True, slots=True)
class CtTuple:
    """One direction of a conntrack entry to flush; addresses are 128-bit
    ints (IPv4 as ::ffff:a.b.c.d), 0 = any."""

    src: int = 0
    dst: int = 0
    src_port: int = 0
    dst_port: int = 0
    icmp_id: int = 0
    icmp_type: int = 0
    icmp_code: int = 0

    def encode(self, ip_proto: int) -> bytes:
        out = b""
        if self.src:
            out += _prop(0, self.src.to_bytes(16, "big"))
        if self.dst:
            out += _prop(1, self.dst.to_bytes(16, "big"))
        if ip_proto in (1, 58):
            out += _prop(4, struct.pack("!H2x", self.icmp_id))
            out += _prop(5, bytes([self.icmp_type]))
            out += _prop(6, bytes([self.icmp_code]))
        else:
            if self.src_port:
                out += _prop(2, struct.pack("!H2x", self.src_port))
            if self.dst_port:
                out += _prop(3, struct.pack("!H2x", self.dst_port))
        return out


def ipv4_mapped(addr: int) -> int:
    """::ffff:a.b.c.d for an IPv4 address int."""
    return 0xFFFF00000000 | addr


def ct_flush(xid: int, ip_proto: int, orig: CtTuple = CtTuple(), reply: CtTuple = CtTuple(),
             zone: int | None = None) -> bytes:
    """NXT_CT_FLUSH (OVS 3.1+): flush conntrack entries matching the tuples."""
    body = struct.pack("!B7x", ip_proto)
    for ptype, tup in ((0, orig), (1, reply)):
        nested = tup.encode(ip_proto)
        if nested:
            n = 8 + len(nested)
            body += struct.pack("!HH4x", ptype, n) + nested
    if zone is not None:
        body += _prop(2, struct.pack("!H2x", zone))
    return nx_message(NXT_CT_FLUSH, xid, body)


def ct_flush_lb_backend(xid: int, ip_proto: int, vip: int, vip_port: int, backend: int, backend_port: int) -> bytes:
    """Flush the connections of one load-balancer backend, as ovn-controller
    does when a backend is removed (addresses already IPv6/IPv4-mapped)."""
    return ct_flush(xid, ip_proto, CtTuple(dst=vip, dst_port=vip_port), CtTuple(src=backend, src_port=backend_port))


def resume(xid: int, packet_in2_properties: bytes) -> bytes:
    """NXT_RESUME carrying the properties of a received NXT_PACKET_IN2."""
    return nx_message(NXT_RESUME, xid, packet_in2_properties)


def decode_features_reply(msg: bytes) -> int:
    """Datapath id of an OFPT_FEATURES_REPLY."""
    return int(struct.unpack_from("!Q", msg, 8)[0])


def nx_subtype(msg: bytes) -> int | None:
    """Nicira subtype of an OFPT_EXPERIMENTER message, else None."""
    if len(msg) >= 16 and msg[1] == OFPT_EXPERIMENTER:
        vendor, subtype = struct.unpack_from("!II", msg, 8)
        if vendor == NX_VENDOR_ID:
            return int(subtype)
    return None


# ------------------------------------------------------------------- bundles
def bundle_ctrl(xid: int, bundle_id: int, ctrl_type: int, flags: int = OFPBF_ATOMIC | OFPBF_ORDERED) -> bytes:
    return simple(OFPT_BUNDLE_CONTROL, xid, struct.pack("!IHH", bundle_id, ctrl_type, flags))


def bundle_add(bundle_id: int, inner: bytes, flags: int = OFPBF_ATOMIC | OFPBF_ORDERED) -> bytes:
    """Wrap a complete message; the bundle_add takes the inner message's xid."""
    xid = HEADER.unpack_from(inner)[3]
    return HEADER.pack(OFP15_VERSION, OFPT_BUNDLE_ADD_MESSAGE, 16 + len(inner), xid) + struct.pack(
        "!IxxH", bundle_id, flags
    ) + inner


def decode_bundle_ctrl(msg: bytes) -> tuple[int, int, int]:
    """(bundle_id, type, flags) of a bundle control message."""
    a, b, c = struct.unpack_from("!IHH", msg, 8)
    return int(a), int(b), int(c)


# ----------------------------------------------------------------- flow mods
_EMPTY_MATCH = struct.pack("!HH4x", 1, 4)  # OFPMT_OXM with no fields


def flow_mod(
    xid: int,
    command: int,
    table: int,
    priority: int,
    body: bytes,
    cookie: int = 0,
    cookie_mask: int = 0,
    out_port: int = OFPP_ANY,
    out_group: int = OFPG_ANY,
    flags: int = 0,
) -> bytes:
    """OFPT_FLOW_MOD; `body` is ofp_match (+ instructions for add/modify)."""
    return (
        _FLOW_MOD.pack(
            OFP15_VERSION, OFPT_FLOW_MOD, FLOW_MOD_FIXED_LEN + len(body), xid,
            cookie, cookie_mask, table, command, 0, 0, priority,
            OFP_NO_BUFFER, out_port, out_group, flags, 0,
        )
        + body
    )


def bundle_flow_mod(
    xid: int, bundle_id: int, bundle_flags: int, command: int, table: int, priority: int, cookie: int, body: bytes
) -> bytes:
    """bundle_add(flow_mod) in a single pack: the hot path of a put."""
    n = FLOW_MOD_FIXED_LEN + len(body)
    return (
        _BUNDLE_FLOW_MOD.pack(
            OFP15_VERSION, OFPT_BUNDLE_ADD_MESSAGE, 16 + n, xid, bundle_id, bundle_flags,
            OFP15_VERSION, OFPT_FLOW_MOD, n, xid,
            cookie, 0, table, command, 0, 0, priority,
            OFP_NO_BUFFER, OFPP_ANY, OFPG_ANY, 0, 0,
        )
        + body
    )


def delete_all_flows(xid: int) -> bytes:
    return flow_mod(xid, OFPFC_DELETE, OFPTT_ALL, 0, _EMPTY_MATCH)


# ---------------------------------------------------------------- group mods
@dataclass(frozen=True, slots=True)
class GroupBucket:
    bucket_id: int
    actions: bytes  # encoded OF1.5 actions
    weight: int | None = None  # None: 1 for select groups, absent otherwise


_GROUP_MOD = struct.Struct("!HBxIH2xI")
_BUCKET = struct.Struct("!HHI")


def _encode_bucket(b: GroupBucket, group_type: int) -> bytes:
    props = b""
    weight = b.weight if b.weight is not None else (1 if group_type == OFPGT_SELECT else 0)
    if group_type == OFPGT_SELECT or weight:
        props = struct.pack("!HHH2x", OFPGBPT15_WEIGHT, 8, weight)
    return _BUCKET.pack(8 + len(b.actions) + len(props), len(b.actions), b.bucket_id) + b.actions + props


def _selection_method_prop(method: str, param: int, fields: bytes) -> bytes:
    raw = method.encode()
    if len(raw) > 15:
        raise ValueError("selection method name too long: %r" % method)
    n = 40 + len(fields)
    body = struct.pack("!HHII4x16sQ", OFPGPT15_EXPERIMENTER, n, NTR_VENDOR_ID, NTRT_SELECTION_METHOD, raw, param)
    pad = (-n) % 8
    return body + fields + b"\0" * pad


def _group_mod_raw(
    xid: int, command: int, group_type: int, group_id: int, bucket_bytes: bytes, command_bucket_id: int, props: bytes
) -> bytes:
    body = _GROUP_MOD.pack(command, group_type, group_id, len(bucket_bytes), command_bucket_id) + bucket_bytes + props
    return HEADER.pack(OFP15_VERSION, OFPT_GROUP_MOD, HEADER_LEN + len(body), xid) + body


def group_mod(
    xid: int,
    command: int,
    group_type: int,
    group_id: int,
    buckets: Sequence[GroupBucket] = (),
    command_bucket_id: int = OFPG15_BUCKET_ALL,
    selection_method: str | None = None,
    selection_method_param: int = 0,
    fields: bytes = b"",
) -> bytes:
    """One OF1.5 OFPT_GROUP_MOD (must fit in 64 kB: see `group_mods`)."""
    bucket_bytes = b"".join(_encode_bucket(b, group_type) for b in buckets)
    props = _selection_method_prop(selection_method, selection_method_param, fields) if selection_method else b""
    return _group_mod_raw(xid, command, group_type, group_id, bucket_bytes, command_bucket_id, props)


def group_mods(
    next_xid: "Iterable[int]",
    command: int,
    group_type: int,
    group_id: int,
    buckets: Sequence[GroupBucket],
    selection_method: str | None = None,
    selection_method_param: int = 0,
    fields: bytes = b"",
    limit: int = MAX_MSG_LEN - BUNDLE_ADD_OVERHEAD,
) -> list[bytes]:
    """Group mods for one group, split so each fits (inside a bundle_add).

    The first message carries `command` with as many buckets as fit; the rest
    follow as OFPGC15_INSERT_BUCKET (or REMOVE_BUCKET for deletes) at
    OFPG15_BUCKET_LAST.  `next_xid` supplies one xid per message.
    """
    xids = iter(next_xid)
    props = _selection_method_prop(selection_method, selection_method_param, fields) if selection_method else b""
    room = limit - HEADER_LEN - _GROUP_MOD.size - len(props)
    encoded = [_encode_bucket(b, group_type) for b in buckets]
    chunks: list[list[bytes]] = [[]]
    used = 0
    for e in encoded:
        if len(e) > room:
            raise ValueError("group %d: one bucket does not fit in a message" % group_id)
        if used + len(e) > room:
            chunks.append([])
            used = 0
        chunks[-1].append(e)
        used += len(e)
    out = [_group_mod_raw(next(xids), command, group_type, group_id, b"".join(chunks[0]), OFPG15_BUCKET_ALL, props)]
    follow = OFPGC15_REMOVE_BUCKET if command in (OFPGC15_DELETE, OFPGC15_REMOVE_BUCKET) else OFPGC15_INSERT_BUCKET
    for chunk in chunks[1:]:
        out.append(_group_mod_raw(next(xids), follow, group_type, group_id, b"".join(chunk), OFPG15_BUCKET_LAST, b""))
    return out


def delete_all_groups(xid: int) -> bytes:
    return group_mod(xid, OFPGC15_DELETE, OFPGT_ALL, OFPG_ALL)


def delete_group(xid: int, group_id: int) -> bytes:
    return group_mod(xid, OFPGC15_DELETE, OFPGT_ALL, group_id)


# ---------------------------------------------------------------- meter mods
@dataclass(frozen=True, slots=True)
class MeterBand:
    rate: int
    burst_size: int = 0
    type: int = OFPMBT_DROP


def meter_mod(xid: int, command: int, meter_id: int, flags: int = 0, bands: Sequence[MeterBand] = ()) -> bytes:
    body = struct.pack("!HHI", command, flags, meter_id) + b"".join(
        struct.pack("!HHII4x", b.type, 16, b.rate, b.burst_size) for b in bands
    )
    return simple(OFPT_METER_MOD, xid, body)


# -------------------------------------------------------------------- errors
@dataclass(frozen=True, slots=True)
class OFError:
    type: int
    code: int
    experimenter: int | None
    data: bytes  # (the start of) the offending message

    @property
    def name(self) -> str:
        return error_name(self.type, self.code, self.experimenter)

    def offending_xid(self) -> int | None:
        if len(self.data) >= HEADER_LEN:
            return int(HEADER.unpack_from(self.data)[3])
        return None

    def offending_type(self) -> int | None:
        return self.data[1] if len(self.data) >= 2 else None


def decode_error(msg: bytes) -> OFError:
    etype, code = struct.unpack_from("!HH", msg, 8)
    if etype == OFPET_EXPERIMENTER:
        (exp,) = struct.unpack_from("!I", msg, 12)
        return OFError(etype, code, exp, bytes(msg[16:]))
    return OFError(etype, code, None, bytes(msg[12:]))


_TYPE_PREFIX = {
    "HELLO_FAILED": "OFPHFC_", "BAD_REQUEST": "OFPBRC_", "BAD_ACTION": "OFPBAC_",
    "BAD_INSTRUCTION": "OFPBIC_", "BAD_MATCH": "OFPBMC_", "FLOW_MOD_FAILED": "OFPFMFC_",
    "GROUP_MOD_FAILED": "OFPGMFC_", "PORT_MOD_FAILED": "OFPPMFC_", "TABLE_MOD_FAILED": "OFPTMFC_",
    "QUEUE_OP_FAILED": "OFPQOFC_", "SWITCH_CONFIG_FAILED": "OFPSCFC_",
    "ROLE_REQUEST_FAILED": "OFPRRFC_", "METER_MOD_FAILED": "OFPMMFC_",
    "TABLE_FEATURES_FAILED": "OFPTFFC_", "BAD_PROPERTY": "OFPBPC_",
    "ASYNC_CONFIG_FAILED": "OFPACFC_", "FLOW_MONITOR_FAILED": "OFPMOFC_", "BUNDLE_FAILED": "OFPBFC_",
}

# Nicira "NX1.2+" experimenter error codes (experimenter 0x2320).
NX_ERRORS = {
    2: "NXBRC_NXM_INVALID", 3: "NXBRC_NXM_BAD_TYPE", 4: "NXBRC_MUST_BE_ZERO",
    11: "NXBAC_MUST_BE_ZERO", 12: "NXFMFC_HARDWARE", 13: "NXFMFC_BAD_TABLE_ID",
    15: "NXBAC_BAD_CONJUNCTION", 16: "NXTTMFC_BAD_COMMAND", 17: "NXTTMFC_BAD_OPT_LEN",
    18: "NXTTMFC_BAD_FIELD_IDX", 19: "NXTTMFC_TABLE_FULL", 20: "NXTTMFC_ALREADY_MAPPED",
    21: "NXTTMFC_DUP_ENTRY", 34: "NXR_NOT_SUPPORTED", 35: "NXR_STALE",
    37: "NXFMFC_INVALID_TLV_FIELD", 38: "NXTTMFC_INVALID_TLV_DEL",
    42: "NXBAC_CT_DATAPATH_SUPPORT", 43: "NXBMC_CT_DATAPATH_SUPPORT",
}
NXTTMFC_ALREADY_MAPPED = 20
NXTTMFC_DUP_ENTRY = 21

_error_names: dict[tuple[int, int], str] | None = None
_type_names: dict[int, str] = {}


def _load_error_names() -> dict[tuple[int, int], str]:
    global _error_names
    if _error_names is None:
        names: dict[tuple[int, int], str] = {}
        try:
            from os_ken.ofproto import ofproto_v1_5 as o
        except ImportError:  # pragma: no cover - os-ken is installed in the venv
            _error_names = names
            return names
        consts = vars(o)
        for tname, prefix in _TYPE_PREFIX.items():
            tval = consts.get("OFPET_" + tname)
            if tval is None:
                continue
            _type_names[tval] = "OFPET_" + tname
            for k, v in consts.items():
                if k.startswith(prefix) and isinstance(v, int):
                    names.setdefault((tval, v), k)
        _error_names = names
    return _error_names


def error_name(etype: int, code: int, experimenter: int | None = None) -> str:
    """OVS-like name of an OpenFlow error, e.g. "OFPBAC_BAD_OUT_GROUP"."""
    if etype == OFPET_EXPERIMENTER:
        if experimenter == NX_VENDOR_ID and code in NX_ERRORS:
            return NX_ERRORS[code]
        return "experimenter error 0x%x/%d" % (experimenter or 0, code)
    names = _load_error_names()
    n = names.get((etype, code))
    if n:
        return n
    return "%s(code=%d)" % (_type_names.get(etype, "type %d" % etype), code)
