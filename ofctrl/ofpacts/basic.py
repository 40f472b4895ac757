"""Simple OpenFlow actions: output, resubmit, set_field, move, stack,
group, meter, dec_ttl, mod_nw_ttl, queue, VLAN, note, exit, conjunction, sample,
check_pkt_larger, fin_timeout, ct_clear, bundle.

Every class encodes to the OpenFlow 1.5 form OVS 3.1 itself emits and
formats as OVS ``ofpacts_format()`` prints the action after decoding it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field as dc_field

from ofctrl.fields import Field, Subfield, field as get_field, format_value
from ofctrl.ofpacts.base import (
    OFPP_CONTROLLER, OFPP_IN_PORT, OFPP_MAX, OFPP_NONE, Action, field_bytes,
    format_port16, legacy_header, legacy_header32, nx_header, oxm_header,
    pad8, port_to_16,
)

__all__ = [
    "Output", "OutputReg", "Resubmit", "SetField", "Move", "StackPush",
    "StackPop", "Group", "Meter", "DecTtl", "SetNwTtl", "SetQueue", "PushVlan", "PopVlan",
    "StripVlan", "Note", "Exit", "Conjunction", "Sample", "CheckPktLarger",
    "FinTimeout", "CtClear", "Bundle", "BUNDLE_FIELDS", "BUNDLE_ALGORITHMS",
]

# NXAST subtypes used here.
NXAST_RESUBMIT_TABLE = 14
NXAST_RESUBMIT_TABLE_CT = 44
NXAST_OUTPUT_REG = 15
NXAST_OUTPUT_REG2 = 32
NXAST_STACK_PUSH = 27
NXAST_STACK_POP = 28
NXAST_DEC_TTL_CNT_IDS = 21
NXAST_NOTE = 8
NXAST_EXIT = 17
NXAST_CONJUNCTION = 34
NXAST_SAMPLE = 29
NXAST_SAMPLE2 = 38
NXAST_SAMPLE3 = 41
NXAST_CHECK_PKT_LARGER = 49
NXAST_FIN_TIMEOUT = 19
NXAST_CT_CLEAR = 43
NXAST_BUNDLE = 12
NXAST_BUNDLE_LOAD = 13

# OpenFlow 1.5 action types.
OFPAT_OUTPUT = 0
OFPAT_PUSH_VLAN = 17
OFPAT_POP_VLAN = 18
OFPAT_SET_QUEUE = 21
OFPAT_SET_NW_TTL = 23
OFPAT_GROUP = 22
OFPAT_DEC_NW_TTL = 24
OFPAT_SET_FIELD = 25
OFPAT_COPY_FIELD = 28
OFPAT_METER = 29

_U32_ACTION = struct.Struct("!HHI")


def _ofs_nbits(ofs: int, n_bits: int) -> int:
    return (ofs << 6) | (n_bits - 1)


@dataclass(frozen=True, slots=True)
class Output(Action):
    """``output:PORT`` (OFPAT_OUTPUT). ``port`` is an OpenFlow 1.1+ number;
    reserved ports print by name (``IN_PORT``, ``CONTROLLER:max_len``...)."""

    port: int
    max_len: int = 0

    def _encode(self) -> bytes:
        return struct.pack("!HHIH6x", OFPAT_OUTPUT, 16, self.port, self.max_len)

    def format(self) -> str:
        if self.port < OFPP_MAX:
            return "output:%d" % self.port
        text = format_port16(self.port)
        if self.port == OFPP_CONTROLLER:
            text += ":%d" % self.max_len
        return text


@dataclass(frozen=True, slots=True)
class OutputReg(Action):
    """``output:NXM_NX_REG15[]`` (NXAST_OUTPUT_REG, or OUTPUT_REG2 when the
    field has no 32-bit header)."""

    src: Subfield
    max_len: int = 0xFFFF

    def _encode(self) -> bytes:
        sf = self.src
        hdr32 = legacy_header32(sf.field)
        if hdr32:
            return nx_header(NXAST_OUTPUT_REG, struct.pack(
                "!HIH6x", _ofs_nbits(sf.ofs, sf.n_bits), hdr32, self.max_len))
        body = struct.pack("!HH", _ofs_nbits(sf.ofs, sf.n_bits), self.max_len)
        body += legacy_header(sf.field)
        return nx_header(NXAST_OUTPUT_REG2, body.ljust(14, b"\0"))

    def format(self) -> str:
        return "output:" + self.src.format()


@dataclass(frozen=True, slots=True)
class Resubmit(Action):
    """``resubmit(,TABLE)`` / ``resubmit(PORT,TABLE[,ct])`` / ``resubmit:PORT``.
    ``table`` 255 = the current table; ``in_port`` OFPP_IN_PORT = unchanged."""

    table: int = 255
    in_port: int = OFPP_IN_PORT
    with_ct_orig: bool = False

    def _encode(self) -> bytes:
        subtype = NXAST_RESUBMIT_TABLE_CT if self.with_ct_orig else NXAST_RESUBMIT_TABLE
        return nx_header(subtype, struct.pack(
            "!HB3x", port_to_16(self.in_port), self.table))

    def format(self) -> str:
        if self.in_port != OFPP_IN_PORT and self.table == 255:
            return "resubmit:" + format_port16(self.in_port)
        port = "" if self.in_port == OFPP_IN_PORT else format_port16(self.in_port)
        table = "" if self.table == 255 else str(self.table)
        return "resubmit(%s,%s%s)" % (port, table, ",ct" if self.with_ct_orig else "")


_FULL_MASKS: dict[str, int] = {}


def _field_of(name_or_field: str | Field) -> Field:
    return name_or_field if isinstance(name_or_field, Field) else get_field(name_or_field)


@dataclass(frozen=True, slots=True)
class SetField(Action):
    """``set_field:VALUE[/MASK]->FIELD`` (OF1.5 OFPAT_SET_FIELD, masked form
    when ``mask`` is not None). ``field`` is a meta-flow name. Use
    :meth:`load` to build one from a ``load:``-style subfield write."""

    field: str
    value: int
    mask: int | None = None

    def __post_init__(self) -> None:
        # A mask covering every byte of the field is an exact write (as in OVS).
        if self.mask is not None:
            full = _FULL_MASKS.get(self.field)
            if full is None:
                full = _FULL_MASKS[self.field] = (1 << (8 * field_bytes(_field_of(self.field)))) - 1
            if self.mask == full:
                object.__setattr__(self, "mask", None)

    @classmethod
    def load(cls, dst: Subfield, value: int) -> "SetField":
        """The set_field equivalent of ``load:value->dst`` (OVS reg_load)."""
        f = dst.field
        if dst.ofs == 0 and dst.n_bits == f.n_bits:
            return cls(f.name, value, None)
        mask = ((1 << dst.n_bits) - 1) << dst.ofs
        return cls(f.name, (value << dst.ofs) & mask, mask)

    def _encode(self) -> bytes:
        f = _field_of(self.field)
        n = field_bytes(f)
        if self.mask is None:
            body = oxm_header(f) + self.value.to_bytes(n, "big")
        else:
            body = (oxm_header(f, True) + self.value.to_bytes(n, "big")
                    + self.mask.to_bytes(n, "big"))
        return pad8(struct.pack("!HH", OFPAT_SET_FIELD, pad_len(4 + len(body))) + body)

    def format(self) -> str:
        f = _field_of(self.field)
        return "set_field:%s->%s" % (format_value(f, self.value, self.mask), f.name)


def pad_len(n: int) -> int:
    return (n + 7) & ~7


@dataclass(frozen=True, slots=True)
class Move(Action):
    """``move:SRC->DST`` (OF1.5 OFPAT_COPY_FIELD)."""

    src: Subfield
    dst: Subfield

    def __post_init__(self) -> None:
        if self.src.n_bits != self.dst.n_bits:
            raise ValueError("move: source and destination widths differ")

    def _encode(self) -> bytes:
        body = oxm_header(self.src.field) + oxm_header(self.dst.field)
        head = struct.pack("!HHHHH2x", OFPAT_COPY_FIELD, pad_len(12 + len(body)),
                           self.dst.n_bits, self.src.ofs, self.dst.ofs)
        return pad8(head + body)

    def format(self) -> str:
        return "move:%s->%s" % (self.src.format(), self.dst.format())


def _stack_body(sf: Subfield) -> bytes:
    body = struct.pack("!H", sf.ofs) + legacy_header(sf.field) + struct.pack("!H", sf.n_bits)
    return body.ljust(14, b"\0")


@dataclass(frozen=True, slots=True)
class StackPush(Action):
    """``push:SUBFIELD`` (NXAST_STACK_PUSH)."""

    sub: Subfield

    def _encode(self) -> bytes:
        return nx_header(NXAST_STACK_PUSH, _stack_body(self.sub))

    def format(self) -> str:
        return "push:" + self.sub.format()


@dataclass(frozen=True, slots=True)
class StackPop(Action):
    """``pop:SUBFIELD`` (NXAST_STACK_POP)."""

    sub: Subfield

    def _encode(self) -> bytes:
        return nx_header(NXAST_STACK_POP, _stack_body(self.sub))

    def format(self) -> str:
        return "pop:" + self.sub.format()


@dataclass(frozen=True, slots=True)
class Group(Action):
    """``group:N`` (OFPAT_GROUP)."""

    group_id: int

    def _encode(self) -> bytes:
        return _U32_ACTION.pack(OFPAT_GROUP, 8, self.group_id)

    def format(self) -> str:
        return "group:%d" % self.group_id


@dataclass(frozen=True, slots=True)
class Meter(Action):
    """``meter:N`` (OF1.5 OFPAT_METER, an action in OpenFlow 1.5)."""

    meter_id: int

    def _encode(self) -> bytes:
        return _U32_ACTION.pack(OFPAT_METER, 8, self.meter_id)

    def format(self) -> str:
        return "meter:%d" % self.meter_id


@dataclass(frozen=True, slots=True)
class DecTtl(Action):
    """``dec_ttl``.

    ``cnt_ids=()`` (the default) is what ovn-controller emits: OVS encodes
    its zero-controller ofpact as NXAST_DEC_TTL_CNT_IDS and dump-flows then
    prints ``dec_ttl()``. ``cnt_ids=None`` is the plain OpenFlow
    OFPAT_DEC_NW_TTL, printed ``dec_ttl``. Otherwise ``dec_ttl(1,2)``."""

    cnt_ids: tuple[int, ...] | None = ()

    def _encode(self) -> bytes:
        if self.cnt_ids is None:
            return struct.pack("!HH4x", OFPAT_DEC_NW_TTL, 8)
        ids = b"".join(struct.pack("!H", i) for i in self.cnt_ids)
        return nx_header(NXAST_DEC_TTL_CNT_IDS,
                         struct.pack("!H4x", len(self.cnt_ids)) + pad8(ids))

    def format(self) -> str:
        if self.cnt_ids is None:
            return "dec_ttl"
        return "dec_ttl(%s)" % ",".join(str(i) for i in self.cnt_ids)


@dataclass(frozen=True, slots=True)
class SetNwTtl(Action):
    """``mod_nw_ttl:N`` (OFPAT_SET_NW_TTL): set the IPv4 TTL / IPv6 hop
    limit to ``ttl`` (0..255); OVN uses it in PMTUD replies."""

    ttl: int

    def _encode(self) -> bytes:
        return struct.pack("!HHB3x", OFPAT_SET_NW_TTL, 8, self.ttl)

    def format(self) -> str:
        return "mod_nw_ttl:%d" % self.ttl


@dataclass(frozen=True, slots=True)
class SetQueue(Action):
    """``set_queue:N`` (OFPAT_SET_QUEUE)."""

    queue_id: int

    def _encode(self) -> bytes:
        return _U32_ACTION.pack(OFPAT_SET_QUEUE, 8, self.queue_id)

    def format(self) -> str:
        return "set_queue:%d" % self.queue_id


@dataclass(frozen=True, slots=True)
class PushVlan(Action):
    """``push_vlan:0x8100`` (OFPAT_PUSH_VLAN)."""

    ethertype: int = 0x8100

    def _encode(self) -> bytes:
        return struct.pack("!HHH2x", OFPAT_PUSH_VLAN, 8, self.ethertype)

    def format(self) -> str:
        return "push_vlan:%#x" % self.ethertype


@dataclass(frozen=True, slots=True)
class PopVlan(Action):
    """``pop_vlan`` (OFPAT_POP_VLAN). OVS's ``strip_vlan`` is encoded the
    same way in OpenFlow 1.1+ and therefore dumps as ``pop_vlan``."""

    def _encode(self) -> bytes:
        return struct.pack("!HH4x", OFPAT_POP_VLAN, 8)

    def format(self) -> str:
        return "pop_vlan"


StripVlan = PopVlan


@dataclass(frozen=True, slots=True)
class Note(Action):
    """``note:XX.XX...`` (NXAST_NOTE). The data is stored padded as the switch
    returns it (the action body is padded to 8 bytes, min 6 bytes of data)."""

    data: bytes

    def __post_init__(self) -> None:
        n = len(self.data)
        total = max(16, pad_len(10 + n))
        if total - 10 != n:
            object.__setattr__(self, "data", self.data + b"\0" * (total - 10 - n))

    def _encode(self) -> bytes:
        return nx_header(NXAST_NOTE, self.data)

    def format(self) -> str:
        return "note:" + ".".join("%02x" % b for b in self.data)


@dataclass(frozen=True, slots=True)
class Exit(Action):
    """``exit`` (NXAST_EXIT)."""

    def _encode(self) -> bytes:
        return nx_header(NXAST_EXIT, b"")

    def format(self) -> str:
        return "exit"


@dataclass(frozen=True, slots=True)
class CtClear(Action):
    """``ct_clear`` (NXAST_CT_CLEAR)."""

    def _encode(self) -> bytes:
        return nx_header(NXAST_CT_CLEAR, b"")

    def format(self) -> str:
        return "ct_clear"


@dataclass(frozen=True, slots=True)
class Conjunction(Action):
    """``conjunction(ID,CLAUSE/N_CLAUSES)``; ``clause`` is 1-based as printed."""

    id: int
    clause: int
    n_clauses: int

    def _encode(self) -> bytes:
        return nx_header(NXAST_CONJUNCTION, struct.pack(
            "!BBI", self.clause - 1, self.n_clauses, self.id))

    def format(self) -> str:
        return "conjunction(%d,%d/%d)" % (self.id, self.clause, self.n_clauses)


SAMPLE_DIRECTIONS = {0: "", 1: "ingress", 2: "egress"}


@dataclass(frozen=True, slots=True)
class Sample(Action):
    """``sample(probability=..,collector_set_id=..,obs_domain_id=..,obs_point_id=..)``
    (NXAST_SAMPLE; SAMPLE2/3 when ``sampling_port``/``direction`` are set)."""

    probability: int
    collector_set_id: int = 0
    obs_domain_id: int = 0
    obs_point_id: int = 0
    sampling_port: int = OFPP_NONE
    direction: int = 0

    def _encode(self) -> bytes:
        head = struct.pack("!HIII", self.probability, self.collector_set_id,
                           self.obs_domain_id, self.obs_point_id)
        if self.direction:
            return nx_header(NXAST_SAMPLE3, head + struct.pack(
                "!HB5x", port_to_16(self.sampling_port), self.direction))
        if self.sampling_port != OFPP_NONE:
            return nx_header(NXAST_SAMPLE2, head + struct.pack(
                "!HB5x", port_to_16(self.sampling_port), 0))
        return nx_header(NXAST_SAMPLE, head)

    def format(self) -> str:
        text = ("sample(probability=%d,collector_set_id=%d,obs_domain_id=%d,"
                "obs_point_id=%d" % (self.probability, self.collector_set_id,
                                     self.obs_domain_id, self.obs_point_id))
        if self.sampling_port != OFPP_NONE:
            text += ",sampling_port=" + format_port16(self.sampling_port)
        if self.direction:
            text += "," + SAMPLE_DIRECTIONS[self.direction]
        return text + ")"


@dataclass(frozen=True, slots=True)
class CheckPktLarger(Action):
    """``check_pkt_larger(N)->DST`` (NXAST_CHECK_PKT_LARGER); ``dst`` is one bit."""

    pkt_len: int
    dst: Subfield

    def _encode(self) -> bytes:
        body = struct.pack("!HH", self.pkt_len, self.dst.ofs) + legacy_header(self.dst.field)
        return nx_header(NXAST_CHECK_PKT_LARGER, body.ljust(14, b"\0"))

    def format(self) -> str:
        return "check_pkt_larger(%d)->%s" % (self.pkt_len, self.dst.format())


@dataclass(frozen=True, slots=True)
class FinTimeout(Action):
    """``fin_timeout(idle_timeout=N,hard_timeout=M)`` (NXAST_FIN_TIMEOUT)."""

    idle_timeout: int = 0
    hard_timeout: int = 0

    def _encode(self) -> bytes:
        return nx_header(NXAST_FIN_TIMEOUT, struct.pack(
            "!HH2x", self.idle_timeout, self.hard_timeout))

    def format(self) -> str:
        parts = []
        if self.idle_timeout:
            parts.append("idle_timeout=%d" % self.idle_timeout)
        if self.hard_timeout:
            parts.append("hard_timeout=%d" % self.hard_timeout)
        return "fin_timeout(%s)" % ",".join(parts)


BUNDLE_FIELDS = {0: "eth_src", 1: "symmetric_l4", 2: "symmetric_l3l4",
                 3: "symmetric_l3l4+udp", 4: "nw_src", 5: "nw_dst",
                 6: "symmetric_l3"}
BUNDLE_ALGORITHMS = {0: "active_backup", 1: "hrw"}
_IN_PORT_NXM = 0x00000002   # NXM_OF_IN_PORT, 2 bytes


@dataclass(frozen=True, slots=True)
class Bundle(Action):
    """``bundle(FIELDS,BASIS,ALG,ofport,members:P1,P2)`` (NXAST_BUNDLE) or,
    with ``dst``, ``bundle_load(...,DST,members:...)`` (NXAST_BUNDLE_LOAD).
    ``fields``/``algorithm`` are the NX numbers (see BUNDLE_FIELDS/ALGORITHMS);
    members are port numbers below 0xff00."""

    members: tuple[int, ...]
    algorithm: int = 0
    fields: int = 0
    basis: int = 0
    dst: Subfield | None = dc_field(default=None)

    def _encode(self) -> bytes:
        n = len(self.members)
        if self.dst is not None:
            subtype = NXAST_BUNDLE_LOAD
            ofs_nbits = _ofs_nbits(self.dst.ofs, self.dst.n_bits)
            dst = legacy_header32(self.dst.field)
        else:
            subtype, ofs_nbits, dst = NXAST_BUNDLE, 0, 0
        body = struct.pack("!HHHIHHI4x", self.algorithm, self.fields, self.basis,
                           _IN_PORT_NXM, n, ofs_nbits, dst)
        members = b"".join(struct.pack("!H", port_to_16(p)) for p in self.members)
        return nx_header(subtype, body + pad8(members), pad=False)

    def format(self) -> str:
        name = "bundle_load" if self.dst is not None else "bundle"
        text = "%s(%s,%d,%s,ofport," % (
            name, BUNDLE_FIELDS.get(self.fields, "<unknown>"), self.basis,
            BUNDLE_ALGORITHMS.get(self.algorithm, "<unknown>"))
        if self.dst is not None:
            text += self.dst.format() + ","
        return text + "members:" + ",".join(format_port16(p) for p in self.members) + ")"
