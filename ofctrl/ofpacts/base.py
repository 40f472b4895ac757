"""Shared machinery of the OpenFlow action classes.

Design note
-----------
Every action is a small frozen dataclass (``slots=True``) deriving from
:class:`Action`. Equality and hashing come from the dataclass fields; the
encoded OpenFlow 1.5 bytes are computed on first use and cached in the
``_wire`` slot that :class:`Action` adds (it is not a dataclass field, so it
does not take part in ``==``/``hash``).

Field headers: OVS uses two headers for a field.

* the OpenFlow 1.5 header (``Field.oxm_class``/``oxm_field``/``experimenter``
  from the registry) in ``set_field`` and ``copy_field`` (``move``);
* the "legacy" header (``nx_put_mff_header(..., version 0)``), i.e. the NXM
  header when one exists, in Nicira actions: stack push/pop, learn specs,
  ``output_reg``, ``ct`` zone, ``check_pkt_larger``, ``bundle_load``.
  Its name is ``Field.nxm_name``; its number comes from ``_nxm_numbers``.

``tun_metadataN`` fields are variable length in OVS; OVN always maps the
Geneve option with 4 bytes, so headers for them carry length
:data:`TUN_METADATA_LEN`.
"""

from __future__ import annotations

import struct
from typing import Iterable, Sequence

from ofctrl.fields import FIELDS, Field, Subfield
from ofctrl.ofpacts._nxm_numbers import NXM_FIELD_NUMBERS

__all__ = [
    "Action", "NX_VENDOR_ID", "OFPAT_EXPERIMENTER", "TUN_METADATA_LEN",
    "OFPP_MAX", "OFPP_IN_PORT", "OFPP_TABLE", "OFPP_NORMAL", "OFPP_FLOOD",
    "OFPP_ALL", "OFPP_CONTROLLER", "OFPP_LOCAL", "OFPP_ANY", "OFPP_NONE",
    "nx_header", "pad8", "field_bytes", "oxm_header", "legacy_header",
    "legacy_header32", "field_from_header", "pull_header", "format_port16",
    "port_to_16", "port_from_16", "DecodeError",
]

NX_VENDOR_ID = 0x00002320
ONF_VENDOR_ID = 0x4F4E4600
OFPAT_EXPERIMENTER = 0xFFFF
TUN_METADATA_LEN = 4

# Port numbers are OpenFlow 1.1+ 32-bit numbers everywhere in this package.
OFPP_MAX = 0xFFFFFF00
OFPP_IN_PORT = 0xFFFFFFF8
OFPP_TABLE = 0xFFFFFFF9
OFPP_NORMAL = 0xFFFFFFFA
OFPP_FLOOD = 0xFFFFFFFB
OFPP_ALL = 0xFFFFFFFC
OFPP_CONTROLLER = 0xFFFFFFFD
OFPP_LOCAL = 0xFFFFFFFE
OFPP_ANY = 0xFFFFFFFF
OFPP_NONE = OFPP_ANY

_RESERVED_PORT_NAMES = {
    0xFFFFFFF7: "UNSET", OFPP_IN_PORT: "IN_PORT", OFPP_TABLE: "TABLE",
    OFPP_NORMAL: "NORMAL", OFPP_FLOOD: "FLOOD", OFPP_ALL: "ALL",
    OFPP_CONTROLLER: "CONTROLLER", OFPP_LOCAL: "LOCAL", OFPP_ANY: "ANY",
}
PORT_NUMBERS_BY_NAME = {v: k for k, v in _RESERVED_PORT_NAMES.items()}
PORT_NUMBERS_BY_NAME["NONE"] = OFPP_ANY

_NX_HDR = struct.Struct("!HHIH")


class DecodeError(ValueError):
    """Malformed or unsupported OpenFlow action bytes."""


class Action:
    """Base of every action class: lazy cache of the encoded bytes."""

    __slots__ = ("_wire",)

    def encode(self) -> bytes:
        """OpenFlow 1.5 wire bytes of this action (cached)."""
        try:
            return self._wire  # type: ignore[attr-defined,no-any-return]
        except AttributeError:
            wire = self._encode()
            object.__setattr__(self, "_wire", wire)
            return wire

    def _encode(self) -> bytes:
        raise NotImplementedError

    def format(self) -> str:
        """The action as OVS 3.1 ``ofpacts_format()`` prints it."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.format()


def pad8(data: bytes) -> bytes:
    """``data`` zero-padded to a multiple of 8 bytes."""
    rem = len(data) & 7
    return data + b"\0" * (8 - rem) if rem else data


def nx_header(subtype: int, body: bytes, pad: bool = True) -> bytes:
    """A Nicira action: experimenter header + ``body``, padded to 8 bytes."""
    length = 10 + len(body)
    if pad and length & 7:
        body += b"\0" * (8 - (length & 7))
        length = 10 + len(body)
    return _NX_HDR.pack(OFPAT_EXPERIMENTER, length, NX_VENDOR_ID, subtype) + body


def field_bytes(f: Field) -> int:
    """Number of value bytes OVS uses on the wire for ``f``."""
    return TUN_METADATA_LEN if f.variable else f.n_bytes


def header_class(name: str) -> tuple[int, int | None]:
    """(OXM class, experimenter id or None) of a header name."""
    if name.startswith("NXM_OF_"):
        return 0x0000, None
    if name.startswith("NXM_NX_"):
        return 0x0001, None
    if name.startswith("OXM_OF_PKT_REG"):
        return 0x8001, None
    if name.startswith("OXM_OF_"):
        return 0x8000, None
    if name.startswith("NXOXM_"):
        return 0xFFFF, NX_VENDOR_ID
    if name.startswith("ONFOXM_"):
        return 0xFFFF, ONF_VENDOR_ID
    raise KeyError(name)


def _make_header(cls: int, fld: int, exp: int | None, n_bytes: int,
                 masked: bool) -> bytes:
    length = n_bytes * 2 if masked else n_bytes
    if exp is not None:
        length += 4
    hdr = (cls << 16) | (fld << 9) | (0x100 if masked else 0) | length
    if exp is not None:
        return struct.pack("!II", hdr, exp)
    return struct.pack("!I", hdr)


_OXM_CACHE: dict[tuple[str, bool], bytes] = {}
_LEGACY_CACHE: dict[str, bytes] = {}


def oxm_header(f: Field, masked: bool = False) -> bytes:
    """The OpenFlow 1.5 OXM/NXM header of ``f`` (4 or 8 bytes)."""
    key = (f.name, masked)
    hdr = _OXM_CACHE.get(key)
    if hdr is None:
        if f.oxm_class is None or f.oxm_field is None:
            raise ValueError("field %s has no OpenFlow header" % f.name)
        hdr = _make_header(f.oxm_class, f.oxm_field, f.experimenter,
                           field_bytes(f), masked)
        _OXM_CACHE[key] = hdr
    return hdr


def legacy_header(f: Field) -> bytes:
    """The header OVS puts in Nicira actions for ``f`` (NXM when it has one)."""
    hdr = _LEGACY_CACHE.get(f.name)
    if hdr is None:
        number = NXM_FIELD_NUMBERS.get(f.nxm_name)
        if number is None:
            hdr = oxm_header(f)
        else:
            cls, exp = header_class(f.nxm_name)
            hdr = _make_header(cls, number, exp, field_bytes(f), False)
        _LEGACY_CACHE[f.name] = hdr
    return hdr


def legacy_header32(f: Field) -> int:
    """32-bit legacy header of ``f``; 0 for experimenter fields (as OVS)."""
    hdr = legacy_header(f)
    if len(hdr) != 4:
        return 0
    return int.from_bytes(hdr, "big")


def _build_reverse() -> dict[tuple[int, int, int | None], Field]:
    rev: dict[tuple[int, int, int | None], Field] = {}
    for f in FIELDS.values():
        names = (f.nxm_name,) + tuple(f.other_names)
        for name in names:
            number = NXM_FIELD_NUMBERS.get(name)
            if number is None:
                continue
            try:
                cls, exp = header_class(name)
            except KeyError:
                continue
            rev.setdefault((cls, number, exp), f)
    for f in FIELDS.values():
        if f.oxm_class is not None and f.oxm_field is not None:
            rev.setdefault((f.oxm_class, f.oxm_field, f.experimenter), f)
    return rev


_REVERSE = _build_reverse()


def field_from_header(cls: int, fld: int, exp: int | None = None) -> Field:
    """The field of an OXM/NXM header. DecodeError when unknown."""
    f = _REVERSE.get((cls, fld, exp))
    if f is None:
        raise DecodeError("unknown field header class %#x field %d" % (cls, fld))
    return f


def pull_header(data: bytes | memoryview, ofs: int) -> tuple[Field, bool, int, int]:
    """Parse a header at ``ofs``: (field, masked, payload length, new offset)."""
    if ofs + 4 > len(data):
        raise DecodeError("truncated field header")
    hdr = int.from_bytes(data[ofs:ofs + 4], "big")
    cls = hdr >> 16
    fld = (hdr >> 9) & 0x7F
    masked = bool(hdr & 0x100)
    length = hdr & 0xFF
    ofs += 4
    exp = None
    if cls == 0xFFFF:
        if ofs + 4 > len(data):
            raise DecodeError("truncated experimenter header")
        exp = int.from_bytes(data[ofs:ofs + 4], "big")
        ofs += 4
        length -= 4
    return field_from_header(cls, fld, exp), masked, length, ofs


def port_to_16(port: int) -> int:
    """OpenFlow 1.1+ port number to the 16-bit form used in NX actions."""
    return port - 0xFFFF0000 if port >= OFPP_MAX else port


def port_from_16(port: int) -> int:
    """16-bit NX port number to the OpenFlow 1.1+ 32-bit form."""
    return port + 0xFFFF0000 if port >= 0xFF00 else port


def format_port16(port: int) -> str:
    """ofputil_format_port() for a 32-bit port number (no port names)."""
    name = _RESERVED_PORT_NAMES.get(port)
    return name if name is not None else str(port)


def subfield_check(sf: Subfield) -> None:
    if sf.ofs < 0 or sf.n_bits <= 0 or sf.ofs + sf.n_bits > sf.field.n_bits:
        raise ValueError("bad subfield %s" % sf.format())


def join_actions(acts: Iterable[Action]) -> str:
    return ",".join([a.format() for a in acts])


def encode_list(acts: Sequence[Action]) -> bytes:
    return b"".join([a.encode() for a in acts])
