"""OXM TLV encoding for OpenFlow 1.5 (match fields, set_field, copy_field).

An OXM TLV is a 32-bit header ``class(16) | field(7) | hasmask(1) | length(8)``,
followed, for the experimenter class 0xffff, by a 32-bit experimenter id, then
the value and (when hasmask) the mask, each ``n_bytes`` long.  ``length``
counts everything after the 32-bit header.  Headers are precomputed per
(field, masked, width) and cached: this code runs for every flow.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterator

from ofctrl.fields import FIELDS, Field, field_by_header

__all__ = [
    "header_bytes",
    "header_int",
    "encode_oxm",
    "decode_header",
    "decode_oxms",
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


# Warm the cache for the common fields.
for _f in FIELDS.values():
    if _f.oxm_class is not None and not _f.variable:
        header_bytes(_f, False)
        if _f.maskable:
            header_bytes(_f, True)
