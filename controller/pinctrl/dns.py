"""dns_lookup: the DNS cache and answer of 23.03.1 (``sync_dns_cache``,
``pinctrl_handle_dns_lookup``).

Design note
-----------
The cache is an immutable :class:`DnsCache` built by :func:`build_dns_cache`
from the SB DNS rows (only rows with ``external_ids:dns_id`` count, as in
C) and published whole by the main loop; the pinctrl thread only reads it.
It is indexed by datapath tunnel key: a lookup walks the DNS rows serving
that datapath (ordered by dns_id, C walks its hash table) and returns the
first record for the lowercased query name.  Parsed record values
(address lists) are memoised per value (bounded LRU): values repeat across
queries and cache versions.

Answer rules kept from C: L4 must hold the UDP and DNS headers; a response
(QR set), qdcount 0 or arcount != 0 (so any EDNS query) is not answered;
only the first question counts and it must be complete; types A, AAAA, ANY
and PTR only (class unchecked).  The record value is an address list for
A/AAAA/ANY (ANY = every A then every AAAA) and a name for PTR.  Each answer
is the question name copied uncompressed, type, class IN, TTL 3600,
rdlength, rdata.  The reply is the request with QR set, ancount, arcount 0,
everything after the DNS header copied (to the end of the frame, trailer
included) and the answers appended; UDP length grows by the answers; IPv4
gets a new total length and header checksum and UDP checksum 0, anything
else (C tests the outer Ethernet type, so a VLAN-tagged frame too) a new
IPv6 payload length and UDP checksum.
"""

from __future__ import annotations

import socket
from functools import lru_cache

from controller.pinctrl.dns_cache import (  # noqa: F401  (re-exported)
    EMPTY_DNS_CACHE,
    DnsCache,
    build_dns_cache,
    dns_cache_from_sb,
)
from controller.pinctrl.l7frame import L7Answer, ipv4_header_csum, l4_span, transport_csum6

__all__ = ["DnsCache", "EMPTY_DNS_CACHE", "build_dns_cache", "dns_cache_from_sb",
           "dns_lookup", "parse_ip_addresses"]

TYPE_A, TYPE_PTR, TYPE_AAAA, TYPE_ANY = 1, 12, 28, 255
_SUPPORTED = (TYPE_A, TYPE_AAAA, TYPE_ANY, TYPE_PTR)
_CLASS_IN_TTL = b"\x00\x01\x00\x00\x0e\x10"        # class IN, TTL 3600
_DNS_HEADER = 12


# -- record values: OVN extract_ip_addresses() ---------------------------------

def _skip_ws(s: bytes, i: int) -> int:
    while i < len(s) and s[i] in b" \t\n\v\f\r":
        i += 1
    return i


def _scan_uint(s: bytes, i: int, skip_ws: bool = True) -> tuple[int, int] | None:
    """An ovs_scan decimal conversion: whitespace, optional sign, digits."""
    if skip_ws:
        i = _skip_ws(s, i)
    neg = i < len(s) and s[i] == 0x2D
    if i < len(s) and s[i] in b"+-":
        i += 1
    j = i
    while j < len(s) and 0x30 <= s[j] <= 0x39:
        j += 1
    if j == i:
        return None
    value = int(s[i:j])
    return (-value if neg else value), j


def _scan_quad(s: bytes, i: int) -> tuple[int, int] | None:
    """IP_SCAN_FMT: four %hhu separated by literal dots."""
    value = 0
    for k in range(4):
        if k:
            if i >= len(s) or s[i] != 0x2E:
                return None
            i += 1
        got = _scan_uint(s, i)
        if got is None:
            return None
        value = (value << 8) | (got[0] & 0xFF)
        i = got[1]
    return value, i


def _is_cidr(mask: int, width: int) -> bool:
    inv = ~mask & ((1 << width) - 1)
    return inv & (inv + 1) == 0


def _scan_ipv4(s: bytes, i: int) -> tuple[int, int] | None:
    """ip_parse_cidr_len: address, optionally /mask or /plen (CIDR only)."""
    got = _scan_quad(s, i)
    if got is None:
        return None
    addr, j = got
    if j < len(s) and s[j] == 0x2F:
        mask = _scan_quad(s, j + 1)
        if mask is not None:
            return (addr, mask[1]) if _is_cidr(mask[0], 32) else None
        plen = _scan_uint(s, j + 1)
        if plen is not None:
            return (addr, plen[1]) if 0 <= plen[0] <= 32 else None
    return addr, j


_IPV6_CHARS = frozenset(b"0123456789abcdefABCDEF:.")


def _scan_ipv6_chars(s: bytes, i: int) -> int:
    """End of the IPV6_SCAN_FMT run (at most 46 address characters) at i."""
    j = i
    while j < len(s) and j - i < 46 and s[j] in _IPV6_CHARS:
        j += 1
    return j


def _inet_pton6(text: bytes) -> bytes | None:
    try:
        return socket.inet_pton(socket.AF_INET6, text.decode())
    except (OSError, ValueError):
        return None


def _scan_ipv6(s: bytes, i: int) -> tuple[bytes, int] | None:
    """ipv6_parse_cidr_len: address, optionally /plen or /mask (CIDR only)."""
    i = _skip_ws(s, i)
    j = _scan_ipv6_chars(s, i)
    addr = _inet_pton6(s[i:j]) if j > i else None
    if addr is None:
        return None
    if j < len(s) and s[j] == 0x2F:
        plen = _scan_uint(s, j + 1)
        if plen is not None:
            return (addr, plen[1]) if 0 <= plen[0] <= 128 else None
        k = _scan_ipv6_chars(s, j + 1)
        if k > j + 1:
            mask = _inet_pton6(s[j + 1:k])
            if mask is None or not _is_cidr(int.from_bytes(mask, "big"), 128):
                return None
            return addr, k
    return addr, j


def parse_ip_addresses(value: bytes) -> tuple[list[bytes], list[bytes]]:
    """(IPv4 addresses, IPv6 addresses) of a record value, each in packet
    byte order, in the order written; parsing stops at the first token that
    is neither (``parse_and_store_addresses`` without a MAC)."""
    v4: list[bytes] = []
    v6: list[bytes] = []
    i = 0
    while i < len(value) and value[i] != 0:
        got4 = _scan_ipv4(value, i)
        if got4 is not None:
            v4.append(got4[0].to_bytes(4, "big"))
            i = got4[1]
            continue
        got6 = _scan_ipv6(value, i)
        if got6 is None:
            break
        v6.append(got6[0])
        i = got6[1]
    return v4, v6


@lru_cache(maxsize=4096)
def _addresses(value: bytes) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """parse_ip_addresses, memoised: record values repeat across queries."""
    v4, v6 = parse_ip_addresses(value)
    return tuple(v4), tuple(v6)


def _ptr_rdata(value: bytes) -> bytes:
    """The PTR value in label form, as C encodes it (one length byte per
    dot-separated run, a buffer strlen + 2 long; lengths wrap at 8 bits)."""
    enc = bytearray(len(value) + 2)
    index = 0
    label = 0
    for k, ch in enumerate(value):
        if ch == 0x2E:
            enc[index] = label & 0xFF
            index = (index + label + 1) & 0xFF
            label = 0
        else:
            enc[k + 1] = ch
            label += 1
    if label:
        enc[index] = label & 0xFF
    return bytes(enc)


def dns_lookup(frame: bytes, dp_key: int, cache: DnsCache) -> L7Answer:
    """The DNS answer to ``frame`` arriving on datapath ``dp_key``."""
    span = l4_span(frame, 8 + _DNS_HEADER)
    if span is None:
        return L7Answer(None, (("warn", "truncated dns packet"),))
    h, l4, l4_end = span
    l3 = h.l3
    dns = l4 + 8
    if frame[dns + 2] & 0x80:
        return L7Answer(None)
    if frame[dns + 4:dns + 6] == b"\0\0":
        return L7Answer(None)
    if frame[dns + 10:dns + 12] != b"\0\0":
        return L7Answer(None, (("dbg", "Received DNS query with additional records, "
                                       "which is unsupported"),))
    udp_len = int.from_bytes(frame[l4 + 4:l4 + 6], "big")
    end = l4 + min(udp_len, l4_end - l4)
    qname = dns + _DNS_HEADER
    labels: list[bytes] = []
    pos = qname
    while pos < end and frame[pos]:
        size = frame[pos]
        pos += 1
        if pos + size > end:
            return L7Answer(None)
        labels.append(frame[pos:pos + size])
        pos += size
    pos += 1
    if pos + 4 > end:
        return L7Answer(None)
    qtype = int.from_bytes(frame[pos:pos + 2], "big")
    if qtype not in _SUPPORTED:
        return L7Answer(None)
    # ds_cstr: the name ends at its first NUL; SB names are lowercase.
    name = b".".join(labels).split(b"\0", 1)[0].lower()
    value = cache.lookup(dp_key, name)
    if value is None:
        return L7Answer(None)
    value = value.split(b"\0", 1)[0]
    question = frame[qname:pos]
    answers = bytearray()
    ancount = 0
    if qtype == TYPE_PTR:
        rdata = _ptr_rdata(value)
        answers += question + b"\x00\x0c" + _CLASS_IN_TTL
        answers += (len(rdata) & 0xFFFF).to_bytes(2, "big") + rdata
        ancount = 1
    else:
        v4, v6 = _addresses(value)
        if qtype in (TYPE_A, TYPE_ANY):
            for a in v4:
                answers += question + b"\x00\x01" + _CLASS_IN_TTL + b"\x00\x04" + a
                ancount += 1
        if qtype in (TYPE_AAAA, TYPE_ANY):
            for a in v6:
                answers += question + b"\x00\x1c" + _CLASS_IN_TTL + b"\x00\x10" + a
                ancount += 1
    if not ancount:
        return L7Answer(None)
    new_l4 = (udp_len + len(answers)) & 0xFFFF
    out = bytearray(frame)
    out[dns + 2] |= 0x80
    out[dns + 6:dns + 8] = (ancount & 0xFFFF).to_bytes(2, "big")
    out[dns + 10:dns + 12] = b"\0\0"
    out += answers
    out[l4 + 4:l4 + 6] = new_l4.to_bytes(2, "big")
    out[l4 + 6:l4 + 8] = b"\0\0"
    if frame[12:14] == b"\x08\x00":
        out[l3 + 2:l3 + 4] = ((l4 - l3 + new_l4) & 0xFFFF).to_bytes(2, "big")
        ipv4_header_csum(out, l3)
    else:
        out[l3 + 4:l3 + 6] = new_l4.to_bytes(2, "big")
        csum = transport_csum6(out, l3, l4, len(out))
        out[l4 + 6:l4 + 8] = (csum or 0xFFFF).to_bytes(2, "big")
    return L7Answer(bytes(out))
