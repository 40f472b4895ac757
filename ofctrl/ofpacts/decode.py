"""Decoder of OpenFlow 1.5 action lists into action objects.

Supports every action this package encodes, plus the variants OVS may
send back (NXAST_CONTROLLER, OUTPUT_REG2, SAMPLE2/3, LEARN2). Raises
:class:`DecodeError` on anything malformed or unknown.
"""

from __future__ import annotations

import struct

from ofctrl.fields import Subfield
from ofctrl.ofpacts.base import (
    NX_VENDOR_ID, OFPAT_EXPERIMENTER, Action, DecodeError, field_from_header,
    port_from_16, pull_header,
)
from ofctrl.ofpacts import basic as B
from ofctrl.ofpacts import controller as C
from ofctrl.ofpacts import ct as T
from ofctrl.ofpacts import learn as L

__all__ = ["decode_actions", "decode_instructions"]


def _nxm32(hdr: int) -> tuple[int, int]:
    return hdr >> 16, (hdr >> 9) & 0x7F


def _sub32(hdr: int, ofs_nbits: int) -> Subfield:
    cls, fld = _nxm32(hdr)
    f = field_from_header(cls, fld)
    return Subfield(f, ofs_nbits >> 6, (ofs_nbits & 0x3F) + 1)


def _sub_at(hdr: int, ofs: int, n_bits: int) -> Subfield:
    cls, fld = _nxm32(hdr)
    return Subfield(field_from_header(cls, fld), ofs, n_bits)


def _value(data: bytes | memoryview, ofs: int, n: int) -> int:
    return int.from_bytes(data[ofs:ofs + n], "big")


def decode_actions(data: bytes | memoryview) -> list[Action]:
    """Decode a complete OpenFlow 1.5 action list."""
    out: list[Action] = []
    ofs = 0
    end = len(data)
    while ofs < end:
        if ofs + 4 > end:
            raise DecodeError("truncated action header")
        atype, alen = struct.unpack_from("!HH", data, ofs)
        if alen < 8 or alen & 7 or ofs + alen > end:
            raise DecodeError("bad action length %d" % alen)
        try:
            out.append(_decode_one(memoryview(data)[ofs:ofs + alen], atype, alen))
        except DecodeError:
            raise
        except (struct.error, IndexError, ValueError, TypeError, AssertionError) as exc:
            raise DecodeError("malformed action at offset %d: %s" % (ofs, exc)) from exc
        ofs += alen
    return out


def decode_instructions(data: bytes | memoryview) -> list[Action]:
    """Decode OpenFlow 1.5 instructions holding one APPLY_ACTIONS (or none)."""
    out: list[Action] = []
    ofs = 0
    while ofs < len(data):
        itype, ilen = struct.unpack_from("!HH", data, ofs)
        if ilen < 8 or ofs + ilen > len(data):
            raise DecodeError("bad instruction length")
        if itype != 4:
            raise DecodeError("unsupported instruction type %d" % itype)
        out.extend(decode_actions(data[ofs + 8:ofs + ilen]))
        ofs += ilen
    return out


def _decode_one(a: memoryview, atype: int, alen: int) -> Action:
    if atype == OFPAT_EXPERIMENTER:
        vendor, subtype = struct.unpack_from("!IH", a, 4)
        if vendor != NX_VENDOR_ID:
            raise DecodeError("unknown experimenter %#x" % vendor)
        fn = _NX_DECODERS.get(subtype)
        if fn is None:
            raise DecodeError("unsupported Nicira action subtype %d" % subtype)
        return fn(a)
    if atype == B.OFPAT_OUTPUT:
        port, max_len = struct.unpack_from("!IH", a, 4)
        return B.Output(port, max_len)
    if atype == B.OFPAT_SET_FIELD:
        f, masked, length, p = pull_header(a, 4)
        n = length // 2 if masked else length
        value = _value(a, p, n)
        mask = _value(a, p + n, n) if masked else None
        return B.SetField(f.name, value, mask)
    if atype == B.OFPAT_COPY_FIELD:
        n_bits, src_ofs, dst_ofs = struct.unpack_from("!HHH", a, 4)
        src, _, _, p = pull_header(a, 12)
        dst, _, _, _ = pull_header(a, p)
        return B.Move(Subfield(src, src_ofs, n_bits), Subfield(dst, dst_ofs, n_bits))
    if atype == B.OFPAT_GROUP:
        return B.Group(struct.unpack_from("!I", a, 4)[0])
    if atype == B.OFPAT_METER:
        return B.Meter(struct.unpack_from("!I", a, 4)[0])
    if atype == B.OFPAT_SET_QUEUE:
        return B.SetQueue(struct.unpack_from("!I", a, 4)[0])
    if atype == B.OFPAT_DEC_NW_TTL:
        return B.DecTtl(None)
    if atype == B.OFPAT_SET_NW_TTL:
        return B.SetNwTtl(a[4])
    if atype == B.OFPAT_PUSH_VLAN:
        return B.PushVlan(struct.unpack_from("!H", a, 4)[0])
    if atype == B.OFPAT_POP_VLAN:
        return B.PopVlan()
    raise DecodeError("unsupported action type %d" % atype)


def _resubmit(a: memoryview) -> Action:
    port, table = struct.unpack_from("!HB", a, 10)
    return B.Resubmit(table, port_from_16(port), a[9] == B.NXAST_RESUBMIT_TABLE_CT)


def _output_reg(a: memoryview) -> Action:
    ofs_nbits, hdr, max_len = struct.unpack_from("!HIH", a, 10)
    return B.OutputReg(_sub32(hdr, ofs_nbits), max_len)


def _output_reg2(a: memoryview) -> Action:
    ofs_nbits, max_len = struct.unpack_from("!HH", a, 10)
    f, _, _, _ = pull_header(a, 14)
    return B.OutputReg(Subfield(f, ofs_nbits >> 6, (ofs_nbits & 0x3F) + 1), max_len)


def _stack(a: memoryview) -> Subfield:
    (offset,) = struct.unpack_from("!H", a, 10)
    f, _, _, p = pull_header(a, 12)
    (n_bits,) = struct.unpack_from("!H", a, p)
    return Subfield(f, offset, n_bits)


def _dec_ttl(a: memoryview) -> Action:
    (n,) = struct.unpack_from("!H", a, 10)
    ids = struct.unpack_from("!%dH" % n, a, 16)
    return B.DecTtl(tuple(ids))


def _sample(a: memoryview) -> Action:
    prob, cset, dom, point = struct.unpack_from("!HIII", a, 10)
    subtype = a[9]
    if subtype == B.NXAST_SAMPLE:
        return B.Sample(prob, cset, dom, point)
    port, direction = struct.unpack_from("!HB", a, 24)
    if subtype == B.NXAST_SAMPLE2:
        direction = 0
    return B.Sample(prob, cset, dom, point, port_from_16(port), direction)


def _check_pkt_larger(a: memoryview) -> Action:
    pkt_len, offset = struct.unpack_from("!HH", a, 10)
    f, _, _, _ = pull_header(a, 14)
    return B.CheckPktLarger(pkt_len, Subfield(f, offset, 1))


def _bundle(a: memoryview) -> Action:
    alg, fields, basis, _mtype, n, ofs_nbits, dst = struct.unpack_from("!HHHIHHI", a, 10)
    members = tuple(port_from_16(p) for p in struct.unpack_from("!%dH" % n, a, 32))
    sub = _sub32(dst, ofs_nbits) if a[9] == B.NXAST_BUNDLE_LOAD else None
    return B.Bundle(members, alg, fields, basis, sub)


def _controller(a: memoryview) -> Action:
    max_len, cid, reason = struct.unpack_from("!HHB", a, 10)
    return C.Controller(max_len=max_len, controller_id=cid, reason=reason,
                        controller2=False)


def _controller2(a: memoryview) -> Action:
    userdata = b""
    pause = False
    max_len, cid, reason, meter = 0xFFFF, 0, C.OFPR_ACTION, 0
    p = 16
    while p < len(a):
        ptype, plen = struct.unpack_from("!HH", a, p)
        if plen < 4 or p + plen > len(a):
            if ptype == 0 and plen == 0:
                break
            raise DecodeError("bad controller2 property")
        payload = bytes(a[p + 4:p + plen])
        if ptype == C.NXAC2PT_MAX_LEN:
            (max_len,) = struct.unpack("!H", payload[:2])
        elif ptype == C.NXAC2PT_CONTROLLER_ID:
            (cid,) = struct.unpack("!H", payload[:2])
        elif ptype == C.NXAC2PT_REASON:
            reason = payload[0]
        elif ptype == C.NXAC2PT_USERDATA:
            userdata = payload
        elif ptype == C.NXAC2PT_PAUSE:
            pause = True
        elif ptype == C.NXAC2PT_METER_ID:
            (meter,) = struct.unpack("!I", payload[:4])
        else:
            raise DecodeError("unknown controller2 property %d" % ptype)
        p += (plen + 7) & ~7
    return C.Controller(userdata, pause, max_len, cid, reason, meter, True)


def _ct(a: memoryview) -> Action:
    flags, zone_src, zone, table, alg = struct.unpack_from("!HIHB3xH", a, 10)
    nested = tuple(decode_actions(a[24:]))
    if zone_src:
        sub: Subfield | None = _sub32(zone_src, zone)
        imm = 0
    else:
        sub, imm = None, zone
    return T.Ct(bool(flags & T.NX_CT_F_COMMIT), bool(flags & T.NX_CT_F_FORCE),
                table, sub, imm, alg, nested)


def _nat(a: memoryview) -> Action:
    flags, present = struct.unpack_from("!HH", a, 12)
    p = 16
    addr_min = addr_max = None
    ipv6 = False
    port_min = port_max = 0
    if present & T.NX_NAT_RANGE_IPV4_MIN:
        addr_min = _value(a, p, 4)
        p += 4
        if present & T.NX_NAT_RANGE_IPV4_MAX:
            addr_max = _value(a, p, 4)
            p += 4
    elif present & T.NX_NAT_RANGE_IPV6_MIN:
        ipv6 = True
        addr_min = _value(a, p, 16)
        p += 16
        if present & T.NX_NAT_RANGE_IPV6_MAX:
            addr_max = _value(a, p, 16)
            p += 16
    if present & T.NX_NAT_RANGE_PROTO_MIN:
        port_min = _value(a, p, 2)
        p += 2
        if present & T.NX_NAT_RANGE_PROTO_MAX:
            port_max = _value(a, p, 2)
    return T.Nat(flags, addr_min, addr_max, ipv6, port_min, port_max)


def _learn(a: memoryview) -> Action:
    (idle, hard, prio, cookie, flags, table, fin_idle,
     fin_hard) = struct.unpack_from("!HHHQHBxHH", a, 10)
    p = 32
    limit = 0
    result_dst = None
    if a[9] == L.NXAST_LEARN2:
        limit, rofs = struct.unpack_from("!IH", a, 32)
        p = 40
        if flags & L.NX_LEARN_F_WRITE_RESULT:
            f, _, _, p = pull_header(a, p)
            result_dst = Subfield(f, rofs, 1)
    flags &= ~L.NX_LEARN_F_WRITE_RESULT
    specs: list[L.LearnSpec] = []
    while p + 2 <= len(a):
        (header,) = struct.unpack_from("!H", a, p)
        if not header:
            break
        p += 2
        n_bits = header & 0x3FF
        src_imm = header & L.NX_LEARN_SRC_IMMEDIATE
        dst_type = header & (3 << 11)
        src: Subfield | None = None
        imm = 0
        if src_imm:
            nb = 2 * ((n_bits + 15) // 16)
            imm = _value(a, p, nb)
            p += nb
        else:
            hdr, sofs = struct.unpack_from("!IH", a, p)
            p += 6
            src = _sub_at(hdr, sofs, n_bits)
        if dst_type == L.NX_LEARN_DST_OUTPUT:
            assert src is not None
            specs.append(L.LearnOutput(src))
            continue
        hdr, dofs = struct.unpack_from("!IH", a, p)
        p += 6
        dst = _sub_at(hdr, dofs, n_bits)
        if dst_type == L.NX_LEARN_DST_MATCH:
            specs.append(L.LearnMatchImm(dst, imm) if src is None
                         else L.LearnMatchField(dst, src))
        elif dst_type == L.NX_LEARN_DST_LOAD:
            specs.append(L.LearnLoadImm(dst, imm) if src is None
                         else L.LearnLoadField(dst, src))
        else:
            raise DecodeError("bad learn spec destination type")
    return L.Learn(table, tuple(specs), idle, hard, prio, cookie, flags,
                   fin_idle, fin_hard, limit, result_dst)


def _note(a: memoryview) -> Action:
    return B.Note(bytes(a[10:]))


def _conjunction(a: memoryview) -> Action:
    clause, n_clauses, cid = struct.unpack_from("!BBI", a, 10)
    return B.Conjunction(cid, clause + 1, n_clauses)


def _fin_timeout(a: memoryview) -> Action:
    idle, hard = struct.unpack_from("!HH", a, 10)
    return B.FinTimeout(idle, hard)


def _clone(a: memoryview) -> Action:
    return T.Clone(tuple(decode_actions(a[16:])))


_NX_DECODERS = {
    B.NXAST_RESUBMIT_TABLE: _resubmit,
    B.NXAST_RESUBMIT_TABLE_CT: _resubmit,
    B.NXAST_OUTPUT_REG: _output_reg,
    B.NXAST_OUTPUT_REG2: _output_reg2,
    B.NXAST_STACK_PUSH: lambda a: B.StackPush(_stack(a)),
    B.NXAST_STACK_POP: lambda a: B.StackPop(_stack(a)),
    B.NXAST_DEC_TTL_CNT_IDS: _dec_ttl,
    B.NXAST_NOTE: _note,
    B.NXAST_EXIT: lambda a: B.Exit(),
    B.NXAST_CT_CLEAR: lambda a: B.CtClear(),
    B.NXAST_CONJUNCTION: _conjunction,
    B.NXAST_SAMPLE: _sample,
    B.NXAST_SAMPLE2: _sample,
    B.NXAST_SAMPLE3: _sample,
    B.NXAST_CHECK_PKT_LARGER: _check_pkt_larger,
    B.NXAST_FIN_TIMEOUT: _fin_timeout,
    B.NXAST_BUNDLE: _bundle,
    B.NXAST_BUNDLE_LOAD: _bundle,
    C.NXAST_CONTROLLER: _controller,
    C.NXAST_CONTROLLER2: _controller2,
    T.NXAST_CT: _ct,
    T.NXAST_NAT: _nat,
    T.NXAST_CLONE: _clone,
    L.NXAST_LEARN: _learn,
    L.NXAST_LEARN2: _learn,
}
