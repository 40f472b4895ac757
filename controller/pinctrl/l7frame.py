"""Frame layout and checksums shared by the continuation (L7) answer builders.

The DHCPv4, DHCPv6, DNS and RA builders of 23.03.1 work on a packet whose
layer offsets were set by OVS ``flow_extract``: they copy "everything before
L4" verbatim, measure the L4 size without the Ethernet trailer, and write
into the L3 header at fixed offsets whatever the L3 protocol turned out to
be.  :func:`layout` computes those offsets the same way (VLAN tags up to
OVS's default limit of two, LLC/SNAP, IPv4/IPv6 sanity checks, IPv6
extension headers, later fragments); the builders then only slice bytes.

Where C reads a byte past the end of its buffer (a few malformed-input
paths), the builders read zero: :func:`byte_at` / :func:`bytes_at`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Layout", "L7Answer", "layout", "byte_at", "bytes_at", "csum16",
           "ipv4_header_csum", "pseudo6", "ETH_TYPE_IP", "ETH_TYPE_IPV6"]

ETH_TYPE_IP = 0x0800
ETH_TYPE_IPV6 = 0x86DD
_ETH_TYPE_VLAN = (0x8100, 0x88A8)
_ETH_TYPE_MIN = 0x600
_VLAN_LIMIT = 2                       # OVS flow_vlan_limit default
_LLC_SNAP = b"\xaa\xaa\x03\x00\x00\x00"
_IP6_EXT = (0, 43, 60)                # hop-by-hop, routing, destination options
_IP6_AH = 51
_IP6_FRAGMENT = 44


@dataclass(frozen=True, slots=True)
class Layout:
    """Offsets of one frame as ``flow_extract`` leaves them."""

    eth_type: int
    l3: int
    l4: int             # -1 when OVS sets no L4 offset
    l4_end: int         # end of the L3 payload (the frame minus its Ethernet trailer)
    nw_proto: int       # after IPv6 extension headers; -1 when not IP
    later_frag: bool

    @property
    def l4_size(self) -> int:
        """``dp_packet_l4_size``: 0 without L4."""
        return self.l4_end - self.l4 if self.l4 >= 0 else 0


@dataclass(frozen=True, slots=True)
class L7Answer:
    """What a continuation builder decided: the new packet to resume with
    (None: resume with the original packet and result bit 0) and the log
    lines C writes for this packet as (level, text)."""

    frame: bytes | None
    logs: tuple[tuple[str, str], ...] = ()


def layout(frame: bytes) -> Layout | None:
    """Layer offsets of an Ethernet frame; None when it has no full Ethernet header."""
    n = len(frame)
    if n < 14:
        return None
    pos = 12
    size = n - 12
    eth_type = int.from_bytes(frame[12:14], "big")
    vlans = 0
    while eth_type in _ETH_TYPE_VLAN and vlans < _VLAN_LIMIT and size >= 6:
        pos += 4
        size -= 4
        eth_type = int.from_bytes(frame[pos:pos + 2], "big")
        vlans += 1
    pos += 2
    size -= 2
    if eth_type < _ETH_TYPE_MIN:
        if size >= 8 and frame[pos:pos + 6] == _LLC_SNAP:
            snap = int.from_bytes(frame[pos + 6:pos + 8], "big")
            pos += 8
            eth_type = snap if snap >= _ETH_TYPE_MIN else 0x5FF
        else:
            eth_type = 0x5FF
    l3 = pos
    if eth_type == ETH_TYPE_IP:
        return _ipv4(frame, l3)
    if eth_type == ETH_TYPE_IPV6:
        return _ipv6(frame, l3)
    return Layout(eth_type, l3, -1, n, -1, False)


def _ipv4(frame: bytes, l3: int) -> Layout:
    n = len(frame)
    size = n - l3
    none = Layout(ETH_TYPE_IP, l3, -1, n, -1, False)
    if size < 20:
        return none
    ihl = (frame[l3] & 0x0F) * 4
    if ihl < 20 or size < ihl:
        return none
    tot_len = int.from_bytes(frame[l3 + 2:l3 + 4], "big")
    if tot_len > size or ihl > tot_len:
        return none
    frag = int.from_bytes(frame[l3 + 6:l3 + 8], "big")
    return Layout(ETH_TYPE_IP, l3, l3 + ihl, l3 + tot_len, frame[l3 + 9],
                  bool(frag & 0x1FFF))


def _ipv6(frame: bytes, l3: int) -> Layout:
    n = len(frame)
    none = Layout(ETH_TYPE_IPV6, l3, -1, n, -1, False)
    if n - l3 < 40:
        return none
    plen = int.from_bytes(frame[l3 + 4:l3 + 6], "big")
    end = l3 + 40 + plen
    if end > n:
        return none
    proto = frame[l3 + 6]
    pos = l3 + 40
    while True:
        if proto not in _IP6_EXT and proto != _IP6_AH and proto != _IP6_FRAGMENT:
            return Layout(ETH_TYPE_IPV6, l3, pos, end, proto, False)
        if end - pos < 8:
            return none
        nxt = frame[pos]
        if proto == _IP6_FRAGMENT:
            offlg = int.from_bytes(frame[pos + 2:pos + 4], "big")
            pos += 8
            if offlg & 0xFFF8:
                return Layout(ETH_TYPE_IPV6, l3, pos, end, _IP6_FRAGMENT, True)
        else:
            step = (frame[pos + 1] + 2) * 4 if proto == _IP6_AH else (frame[pos + 1] + 1) * 8
            if end - pos < step:
                return none
            pos += step
        proto = nxt


def byte_at(data: bytes | bytearray, ofs: int) -> int:
    """data[ofs], or 0 past the end."""
    return data[ofs] if 0 <= ofs < len(data) else 0


def bytes_at(data: bytes | bytearray, ofs: int, n: int) -> bytes:
    """n bytes at ofs, zero-filled past the end."""
    chunk = bytes(data[ofs:ofs + n])
    return chunk + bytes(n - len(chunk))


def csum16(data: bytes | bytearray) -> int:
    """Internet checksum (RFC 1071) of ``data``: the complement of the folded
    one's-complement sum of its big-endian 16-bit words."""
    if len(data) & 1:
        data = bytes(data) + b"\0"
    # 2**16 == 1 (mod 0xffff): the number the words spell is congruent to their sum.
    folded = int.from_bytes(data, "big") % 0xFFFF
    if folded == 0 and any(data):
        folded = 0xFFFF
    return ~folded & 0xFFFF


def ipv4_header_csum(out: bytearray, l3: int) -> None:
    """Recompute the checksum of the 20-byte IPv4 header at ``l3`` (OVS
    ``csum(ip, sizeof *ip)``: options, if any, are not covered)."""
    out[l3 + 10:l3 + 12] = b"\0\0"
    out[l3 + 10:l3 + 12] = csum16(bytes_at(out, l3, 20)).to_bytes(2, "big")


def pseudo6(out: bytes | bytearray, l3: int) -> bytes:
    """The words ``packet_csum_pseudoheader6`` sums, read from whatever is at
    ``l3``: source, destination, next header, payload length."""
    return (bytes_at(out, l3 + 8, 32) + b"\0" + bytes((byte_at(out, l3 + 6),))
            + bytes_at(out, l3 + 4, 2))
