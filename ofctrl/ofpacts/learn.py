"""``learn(...)`` action (NXAST_LEARN / NXAST_LEARN2) and its flow specs.

Spec kinds (OVS ``learn_format()`` text in brackets):

* :class:`LearnMatchField` -- match ``dst`` on the value of ``src`` in the
  packet (``NXM_OF_IP_SRC[]`` or ``DST[]=SRC[]``);
* :class:`LearnMatchImm` -- match ``dst`` on a constant (``eth_type=0x800``
  for a whole field, ``NXM_NX_REG0[0..3]=0x5`` otherwise);
* :class:`LearnLoadImm` -- load a constant (``load:0x1->NXM_NX_REG10[14]``);
* :class:`LearnLoadField` -- load from a field (``load:SRC[]->DST[]``);
* :class:`LearnOutput` -- output to the port in a field (``output:SRC[]``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Union

from ofctrl.fields import Subfield, format_value
from ofctrl.ofpacts.base import Action, legacy_header, legacy_header32, nx_header

__all__ = ["Learn", "LearnMatchField", "LearnMatchImm", "LearnLoadImm",
           "LearnLoadField", "LearnOutput", "LearnSpec",
           "NX_LEARN_F_SEND_FLOW_REM", "NX_LEARN_F_DELETE_LEARNED",
           "NX_LEARN_F_WRITE_RESULT"]

NXAST_LEARN = 16
NXAST_LEARN2 = 45

NX_LEARN_F_SEND_FLOW_REM = 1 << 0
NX_LEARN_F_DELETE_LEARNED = 1 << 1
NX_LEARN_F_WRITE_RESULT = 1 << 2

NX_LEARN_SRC_FIELD = 0 << 13
NX_LEARN_SRC_IMMEDIATE = 1 << 13
NX_LEARN_DST_MATCH = 0 << 11
NX_LEARN_DST_LOAD = 1 << 11
NX_LEARN_DST_OUTPUT = 2 << 11

OFP_DEFAULT_PRIORITY = 0x8000


def _sf_wire(sf: Subfield) -> bytes:
    return struct.pack("!IH", legacy_header32(sf.field), sf.ofs)


def _imm_wire(value: int, n_bits: int) -> bytes:
    return value.to_bytes(2 * ((n_bits + 15) // 16), "big")


def _imm_hex(value: int) -> str:
    # OVS ds_put_hex(): "0x" + hex digits without leading zero bytes, "0" if zero.
    return "0x%x" % value if value else "0"


@dataclass(frozen=True, slots=True)
class LearnMatchField:
    dst: Subfield
    src: Subfield

    def encode(self) -> bytes:
        n = self.dst.n_bits
        return struct.pack("!H", n | NX_LEARN_SRC_FIELD | NX_LEARN_DST_MATCH) + \
            _sf_wire(self.src) + _sf_wire(self.dst)

    def format(self) -> str:
        if self.src.field is self.dst.field and self.src.ofs == self.dst.ofs:
            return self.dst.format()
        return "%s=%s" % (self.dst.format(), self.src.format())


@dataclass(frozen=True, slots=True)
class LearnMatchImm:
    dst: Subfield
    value: int

    def encode(self) -> bytes:
        n = self.dst.n_bits
        return struct.pack("!H", n | NX_LEARN_SRC_IMMEDIATE | NX_LEARN_DST_MATCH) + \
            _imm_wire(self.value, n) + _sf_wire(self.dst)

    def format(self) -> str:
        f = self.dst.field
        if self.dst.ofs == 0 and self.dst.n_bits == f.n_bits:
            return "%s=%s" % (f.name, format_value(f, self.value))
        return "%s=%s" % (self.dst.format(), _imm_hex(self.value))


@dataclass(frozen=True, slots=True)
class LearnLoadImm:
    dst: Subfield
    value: int

    def encode(self) -> bytes:
        n = self.dst.n_bits
        return struct.pack("!H", n | NX_LEARN_SRC_IMMEDIATE | NX_LEARN_DST_LOAD) + \
            _imm_wire(self.value, n) + _sf_wire(self.dst)

    def format(self) -> str:
        return "load:%s->%s" % (_imm_hex(self.value), self.dst.format())


@dataclass(frozen=True, slots=True)
class LearnLoadField:
    dst: Subfield
    src: Subfield

    def encode(self) -> bytes:
        n = self.dst.n_bits
        return struct.pack("!H", n | NX_LEARN_SRC_FIELD | NX_LEARN_DST_LOAD) + \
            _sf_wire(self.src) + _sf_wire(self.dst)

    def format(self) -> str:
        return "load:%s->%s" % (self.src.format(), self.dst.format())


@dataclass(frozen=True, slots=True)
class LearnOutput:
    src: Subfield

    def encode(self) -> bytes:
        n = self.src.n_bits
        return struct.pack("!H", n | NX_LEARN_SRC_FIELD | NX_LEARN_DST_OUTPUT) + \
            _sf_wire(self.src)

    def format(self) -> str:
        return "output:" + self.src.format()


LearnSpec = Union[LearnMatchField, LearnMatchImm, LearnLoadImm, LearnLoadField, LearnOutput]


@dataclass(frozen=True, slots=True)
class Learn(Action):
    """``learn(table=N,...,SPECS)``. ``flags`` are NX_LEARN_F_* bits;
    ``limit``/``result_dst`` select the NXAST_LEARN2 form."""

    table: int
    specs: tuple[LearnSpec, ...] = ()
    idle_timeout: int = 0
    hard_timeout: int = 0
    priority: int = OFP_DEFAULT_PRIORITY
    cookie: int = 0
    flags: int = 0
    fin_idle_timeout: int = 0
    fin_hard_timeout: int = 0
    limit: int = 0
    result_dst: Subfield | None = None

    def _encode(self) -> bytes:
        flags = self.flags
        if self.result_dst is not None:
            flags |= NX_LEARN_F_WRITE_RESULT
        head = struct.pack("!HHHQHBxHH", self.idle_timeout, self.hard_timeout,
                           self.priority, self.cookie, flags, self.table,
                           self.fin_idle_timeout, self.fin_hard_timeout)
        specs = b"".join([s.encode() for s in self.specs])
        if self.limit or self.result_dst is not None:
            ofs = self.result_dst.ofs if self.result_dst is not None else 0
            head += struct.pack("!IH2x", self.limit, ofs)
            if self.result_dst is not None:
                head += legacy_header(self.result_dst.field)
            return nx_header(NXAST_LEARN2, head + specs)
        return nx_header(NXAST_LEARN, head + specs)

    def format(self) -> str:
        parts = ["table=%d" % self.table]
        if self.idle_timeout:
            parts.append("idle_timeout=%d" % self.idle_timeout)
        if self.hard_timeout:
            parts.append("hard_timeout=%d" % self.hard_timeout)
        if self.fin_idle_timeout:
            parts.append("fin_idle_timeout=%d" % self.fin_idle_timeout)
        if self.fin_hard_timeout:
            parts.append("fin_hard_timeout=%d" % self.fin_hard_timeout)
        if self.priority != OFP_DEFAULT_PRIORITY:
            parts.append("priority=%d" % self.priority)
        if self.flags & NX_LEARN_F_SEND_FLOW_REM:
            parts.append("send_flow_rem")
        if self.flags & NX_LEARN_F_DELETE_LEARNED:
            parts.append("delete_learned")
        if self.cookie:
            parts.append("cookie=%#x" % self.cookie)
        if self.limit:
            parts.append("limit=%d" % self.limit)
        if self.result_dst is not None:
            parts.append("result_dst=" + self.result_dst.format())
        parts.extend(s.format() for s in self.specs)
        return "learn(%s)" % ",".join(parts)
