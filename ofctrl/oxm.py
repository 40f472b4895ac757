"""OXM TLV encoding for OpenFlow 1.5 (match fields, set_field, copy_field).

An OXM TLV is a 32-bit header ``class(16) | field(7) | hasmask(1) | length(8)``,
followed, for the experimenter class 0xffff, by a 32-bit experimenter id, then
the value and (when hasmask) the mask, each ``n_bytes`` long.  ``length``
counts everything after the 32-bit header.  Headers are precomputed per
(field, masked, width) and cached: this code runs for every flow.

``encode_match_items()`` turns ``ofctrl.match.Match`` items into the TLV
sequence OVS's own encoder (nx_put_raw) produces for OpenFlow 1.5.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Iterator

from ofctrl.fields import FIELDS, Field, field_by_header, port_to_ofp11

__all__ = [
    "header_bytes",
    "header_int",
    "encode_oxm",
    "decode_header",
    "decode_oxms",
    "encode_match_items",
    "encode_ofp_match",
    "OxmError",
]


class OxmError(ValueError):
    """Malformed or unknown OXM TLV."""


@lru_cache(maxsize=None)
def header_bytes(f: Field, masked: bool = False, n_bytes: int | None = None) -> bytes:
    """Header (with experimenter id when needed) for ``f``; ``n_bytes``
    overrides the value width (variable-length fields: tun_metadata)."""
    if f.oxm_class is None or f.oxm_field is None:
        raise OxmError("field %s has no OXM/NXM encoding" % f.name)
    width = f.n_bytes if n_bytes is None else n_bytes
    length = width * (2 if masked else 1)
    exp = f.experimenter
    if exp is not None:
        length += 4
    hdr = (f.oxm_class << 16) | (f.oxm_field << 9) | (int(masked) << 8) | length
    out = hdr.to_bytes(4, "big")
    if exp is not None:
        out += exp.to_bytes(4, "big")
    return out


def header_int(f: Field, masked: bool = False, n_bytes: int | None = None) -> int:
    """The 32-bit header word of ``f`` (without the experimenter id)."""
    return int.from_bytes(header_bytes(f, masked, n_bytes)[:4], "big")


def encode_oxm(f: Field, value: int, mask: int | None = None,
               n_bytes: int | None = None) -> bytes:
    """One OXM TLV: header, value and (if ``mask`` is not None) mask."""
    width = f.n_bytes if n_bytes is None else n_bytes
    if mask is None:
        return header_bytes(f, False, n_bytes) + value.to_bytes(width, "big")
    return (header_bytes(f, True, n_bytes) + (value & mask).to_bytes(width, "big")
            + mask.to_bytes(width, "big"))


def decode_header(data: bytes, ofs: int = 0) -> tuple[Field, bool, int, int]:
    """Parse the header at ``data[ofs:]``; returns (field, masked, width of
    the value in bytes, header length in bytes (4 or 8))."""
    if len(data) < ofs + 4:
        raise OxmError("truncated OXM header")
    hdr = int.from_bytes(data[ofs:ofs + 4], "big")
    oxm_class = hdr >> 16
    oxm_field = (hdr >> 9) & 0x7f
    masked = bool(hdr & 0x100)
    length = hdr & 0xff
    hdr_len = 4
    exp: int | None = None
    if oxm_class == 0xffff:
        if len(data) < ofs + 8:
            raise OxmError("truncated experimenter OXM header")
        exp = int.from_bytes(data[ofs + 4:ofs + 8], "big")
        hdr_len = 8
        length -= 4
    f = field_by_header(oxm_class, oxm_field, exp)
    if f is None:
        raise OxmError("unknown OXM header %#010x" % hdr)
    width = length // 2 if masked else length
    if width * (2 if masked else 1) != length or length <= 0:
        raise OxmError("bad OXM length %d for %s" % (length, f.name))
    if not f.variable and width != f.n_bytes:
        raise OxmError("bad OXM width %d for %s" % (width, f.name))
    return f, masked, width, hdr_len


def decode_oxms(data: bytes) -> Iterator[tuple[Field, int, int | None]]:
    """Iterate the OXM TLVs filling ``data`` exactly: (field, value, mask)."""
    ofs = 0
    end = len(data)
    while ofs < end:
        f, masked, width, hdr_len = decode_header(data, ofs)
        ofs += hdr_len
        if ofs + width * (2 if masked else 1) > end:
            raise OxmError("truncated OXM payload for %s" % f.name)
        value = int.from_bytes(data[ofs:ofs + width], "big")
        ofs += width
        mask: int | None = None
        if masked:
            mask = int.from_bytes(data[ofs:ofs + width], "big")
            ofs += width
        yield f, value, mask


_TUN_METADATA_WIDTH = 4        # bytes: OVN maps its Geneve option to 4 bytes


# ----------------------------------------------------------------------------
# Match items -> OXM TLVs, as OVS nx_put_raw() emits them for OpenFlow 1.5.
# Items are (meta-flow name, value, mask|None) in ofctrl.match's canonical
# order (which is nx_put_raw()'s order), with OVS's storage conventions:
# registers as reg0..reg15 (sent as OF1.5 packet registers xreg0..7),
# VLAN as vlan_tci (sent as vlan_vid/vlan_pcp), in_port as a 16-bit OVS port
# (sent as a 32-bit OF1.1+ port), DSCP as nw_tos (sent as ip_dscp).

_K_PLAIN, _K_REG, _K_VLAN, _K_IN_PORT, _K_TOS, _K_NARROW, _K_TUN_MD = range(7)
_NARROW_MASK = {"ct_state": 0xFF, "tun_flags": 0x1}
_ENC: dict[str, tuple[int, bytes, bytes, int]] = {}


def _build_encoders() -> None:
    for name, f in FIELDS.items():
        if f.oxm_class is None:
            continue
        kind = _K_PLAIN
        if name.startswith("reg") and name[3:].isdigit():
            kind = _K_REG
        elif name == "vlan_tci":
            kind = _K_VLAN
        elif name == "in_port":
            kind = _K_IN_PORT
        elif name == "nw_tos":
            kind = _K_TOS
        elif name in _NARROW_MASK:
            kind = _K_NARROW
        elif f.variable:
            _ENC[name] = (_K_TUN_MD, b"", b"", 0)
            continue
        exact = header_bytes(f, False)
        masked = header_bytes(f, True) if f.maskable else b""
        _ENC[name] = (kind, exact, masked, f.n_bytes)


_build_encoders()
_XREG_HDR = [header_bytes(FIELDS["xreg%d" % i], False) for i in range(8)]
_XREG_HDR_W = [header_bytes(FIELDS["xreg%d" % i], True) for i in range(8)]
_IN_PORT_HDR = header_bytes(FIELDS["in_port_oxm"], False)
_VLAN_VID_HDR = header_bytes(FIELDS["vlan_vid"], False)
_VLAN_VID_HDR_W = header_bytes(FIELDS["vlan_vid"], True)
_VLAN_PCP_HDR = header_bytes(FIELDS["vlan_pcp"], False)
_DSCP_HDR = header_bytes(FIELDS["ip_dscp"], False)


# Encoded bytes of single items (every kind but registers) and of xreg
# register pairs, keyed by the item tuples themselves: flows repeat the same
# items (metadata, eth_type, reg14...) over and over, and one dict lookup is
# cheaper than re-encoding.  Bounded: emptied when full.
_ITEM_CACHE: dict[tuple[str, int, int | None], bytes] = {}
_XREG_CACHE: dict[tuple[int, object, object], bytes] = {}
_CACHE_LIMIT = 1 << 15


def _encode_item(name: str, value: int, mask: int | None) -> bytes:
    """One non-register item's TLV(s) (see the module notes above)."""
    spec = _ENC.get(name)
    if spec is None:
        raise OxmError("field %s has no OpenFlow 1.5 encoding" % name)
    kind = spec[0]
    if kind == _K_PLAIN:
        width = spec[3]
        if mask is None:
            return spec[1] + value.to_bytes(width, "big")
        return spec[2] + value.to_bytes(width, "big") + mask.to_bytes(width, "big")
    if kind == _K_IN_PORT:
        return _IN_PORT_HDR + port_to_ofp11(value).to_bytes(4, "big")
    if kind == _K_VLAN:
        out = b""
        tmask = 0xFFFF if mask is None else mask
        vid, vmask = value & 0x1FFF, tmask & 0x1FFF
        if vmask == 0x1FFF:
            out = _VLAN_VID_HDR + vid.to_bytes(2, "big")
        elif vmask:
            out = _VLAN_VID_HDR_W + vid.to_bytes(2, "big") + vmask.to_bytes(2, "big")
        if vid and tmask & 0xE000:
            out += _VLAN_PCP_HDR + bytes((value >> 13,))
        return out
    if kind == _K_TOS:
        return _DSCP_HDR + bytes(((value & 0xFC) >> 2,))
    if kind == _K_NARROW:
        # OVS keeps fewer bits than the OXM carries, so even an exact
        # match goes out masked with just those bits.
        width = spec[3]
        m = _NARROW_MASK[name] if mask is None else mask
        return spec[2] + value.to_bytes(width, "big") + m.to_bytes(width, "big")
    # tunnel metadata: width of OVN's TLV mapping
    f = FIELDS[name]
    width = max(_TUN_METADATA_WIDTH, (max(value, mask or 0).bit_length() + 7) // 8)
    if mask is None:
        return header_bytes(f, False, width) + value.to_bytes(width, "big")
    return (header_bytes(f, True, width) + value.to_bytes(width, "big")
            + mask.to_bytes(width, "big"))


def _flush_xregs(out: list[bytes], regs: dict[int, tuple[str, int, int | None]]) -> None:
    """The xreg TLVs of the 32-bit register items collected in ``regs``
    (register number -> item), in xreg order; empties ``regs``."""
    cache = _XREG_CACHE
    for x in sorted({r >> 1 for r in regs}):
        hi = regs.get(2 * x)
        lo = regs.get(2 * x + 1)
        key = (x, hi, lo)
        b = cache.get(key)
        if b is None:
            b = _encode_xreg(x, hi, lo)
            if len(cache) >= _CACHE_LIMIT:
                cache.clear()
            cache[key] = b
        out.append(b)
    regs.clear()


def _encode_xreg(x: int, hi: tuple[str, int, int | None] | None,
                 lo: tuple[str, int, int | None] | None) -> bytes:
    value = mask = 0
    if hi is not None:
        value |= hi[1] << 32
        mask |= (0xFFFFFFFF if hi[2] is None else hi[2]) << 32
    if lo is not None:
        value |= lo[1]
        mask |= 0xFFFFFFFF if lo[2] is None else lo[2]
    if mask == 0xFFFFFFFFFFFFFFFF:
        return _XREG_HDR[x] + value.to_bytes(8, "big")
    return _XREG_HDR_W[x] + value.to_bytes(8, "big") + mask.to_bytes(8, "big")


_REG_NUMBER = {"reg%d" % i: i for i in range(16)}


def encode_match_items(items: Iterable[tuple[str, int, int | None]]) -> bytes:
    """OXM TLVs (no ofp_match header) for already-normalised match items."""
    out: list[bytes] = []
    regs: dict[int, tuple[str, int, int | None]] | None = None
    cache = _ITEM_CACHE
    get = cache.get
    for item in items:
        b = get(item)
        if b is None:
            r = _REG_NUMBER.get(item[0])
            if r is not None:
                if regs is None:
                    regs = {}
                regs[r] = item
                continue
            b = _encode_item(*item)
            if len(cache) >= _CACHE_LIMIT:
                cache.clear()
            cache[item] = b
        if regs:
            _flush_xregs(out, regs)
        out.append(b)
    if regs:
        _flush_xregs(out, regs)
    return b"".join(out)


# ofp_match header (type OXM, length) and zero padding, by TLV bytes length.
_OFP_MATCH_FRAME: list[tuple[bytes, bytes]] = [
    (b"\x00\x01" + (4 + n).to_bytes(2, "big"), b"\x00" * ((-(4 + n)) & 7))
    for n in range(1024)]


def encode_ofp_match(items: Iterable[tuple[str, int, int | None]]) -> bytes:
    """OF1.5 ``ofp_match`` for already-normalised match items: type OXM (1),
    length, the OXM TLVs, zero padding to a multiple of 8."""
    body = encode_match_items(items)
    n = len(body)
    if n < 1024:
        hdr, pad = _OFP_MATCH_FRAME[n]
    else:
        hdr, pad = b"\x00\x01" + (4 + n).to_bytes(2, "big"), b"\x00" * ((-(4 + n)) & 7)
    return hdr + body + pad


# Warm the cache for the common fields.
for _f in FIELDS.values():
    if _f.oxm_class is not None and not _f.variable:
        header_bytes(_f, False)
        if _f.maskable:
            header_bytes(_f, True)
