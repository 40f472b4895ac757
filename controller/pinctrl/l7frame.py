"""Helpers shared by the continuation (L7) answer builders.

The DHCPv4, DHCPv6, DNS and RA builders of 23.03.1 work on a packet whose
layer offsets ``flow_extract`` set (:func:`controller.pinctrl.frames.parse`
computes them the same way): they copy "everything before L4" verbatim,
measure L4 without the Ethernet trailer, and write into the L3 header at
fixed offsets whatever the L3 protocol turned out to be.  This module adds
what those builders need on top: the L4 span of a frame, the answer type,
zero-filled reads (where C reads past its buffer on malformed input the
builders read zero) and the two checksum shapes C uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.pinctrl.frames import FrameError, Headers, csum, parse

__all__ = ["L7Answer", "l4_span", "byte_at", "bytes_at", "ipv4_header_csum", "pseudo6",
           "transport_csum6"]


@dataclass(frozen=True, slots=True)
class L7Answer:
    """What a continuation builder decided: the new packet to resume with
    (None: resume with the original packet and result bit 0) and the log
    lines C writes for this packet as (level, text)."""

    frame: bytes | None
    logs: tuple[tuple[str, str], ...] = ()


def l4_span(frame: bytes, min_size: int) -> tuple[Headers, int, int] | None:
    """(headers, L4 offset, L4 end) when ``flow_extract`` sets an L4 offset
    and ``dp_packet_l4_size`` is at least ``min_size``; else None."""
    try:
        h = parse(frame)
    except FrameError:
        return None
    if h.l4 is None or h.l3_end - h.l4 < min_size:
        return None
    return h, h.l4, h.l3_end


def byte_at(data: bytes | bytearray, ofs: int) -> int:
    """data[ofs], or 0 past the end."""
    return data[ofs] if 0 <= ofs < len(data) else 0


def bytes_at(data: bytes | bytearray, ofs: int, n: int) -> bytes:
    """n bytes at ofs, zero-filled past the end."""
    chunk = bytes(data[ofs:ofs + n])
    return chunk + bytes(n - len(chunk))


def ipv4_header_csum(out: bytearray, l3: int) -> None:
    """Recompute the checksum of the 20-byte IPv4 header at ``l3`` (OVS
    ``csum(ip, sizeof *ip)``: options, if any, are not covered)."""
    out[l3 + 10:l3 + 12] = b"\0\0"
    out[l3 + 10:l3 + 12] = csum(bytes_at(out, l3, 20)).to_bytes(2, "big")


def pseudo6(out: bytes | bytearray, l3: int) -> bytes:
    """The words ``packet_csum_pseudoheader6`` sums, read from whatever is at
    ``l3``: source, destination, next header, payload length."""
    return (bytes_at(out, l3 + 8, 32) + b"\0" + bytes((byte_at(out, l3 + 6),))
            + bytes_at(out, l3 + 4, 2))


def transport_csum6(out: bytes | bytearray, l3: int, start: int, end: int) -> int:
    """Checksum of ``out[start:end]`` (its checksum field zeroed by the
    caller) with the IPv6 pseudo-header read at ``l3``."""
    return csum(pseudo6(out, l3) + bytes(out[start:end]))
