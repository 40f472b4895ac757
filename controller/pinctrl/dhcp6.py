"""IPv6 address-configuration answers of 23.03.1: put_dhcpv6_opts
(``pinctrl_handle_put_dhcpv6_opts``, ``compose_out_dhcpv6_opts``) and
put_nd_ra_opts (``pinctrl_handle_put_nd_ra_opts``).  Pure bytes in and out.

DHCPv6 (userdata TLVs: be16 code, be16 length, value, in lflow order):

* SOLICIT -> ADVERTISE; REQUEST, CONFIRM, DECLINE, INFORMATION-REQUEST ->
  REPLY; every other type (RENEW, REBIND, RELEASE...) gets no answer;
* the client's options are walked to the end of the UDP payload (the
  smaller of UDP length and L4 size): the last CLIENT_ID is echoed
  verbatim, the last IA_NA gives the IAID; no CLIENT_ID, or no (nonzero)
  IAID outside INFORMATION-REQUEST, means no answer;
* reply = request L2/L3 (payload length rewritten), UDP header (length,
  checksum over the request's addresses), type, the request's xid, the
  CLIENT_ID, then per userdata option: server_id -> DUID-LL; ia_addr ->
  IA_NA (IAID, T1 = T2 = infinity) holding IAADDR (lifetimes infinity),
  left out without an IAID; dns_server -> option 23; domain_search ->
  option 24 holding the string as one label; any other code fails.

RA: the userdata after the result field is a complete RA body; it replaces
the Router Solicitation's ICMPv6 message, the IPv6 payload length becomes
its size and the ICMPv6 checksum is computed over the RS's addresses.
"""

from __future__ import annotations

from controller.pinctrl.frames import ETH_TYPE_IPV6, IPPROTO_ICMPV6
from controller.pinctrl.l7frame import L7Answer, byte_at, bytes_at, l4_span, transport_csum6

__all__ = ["put_dhcpv6_opts", "put_nd_ra_opts", "compose_dhcpv6_options"]

SOLICIT, ADVERTISE, REQUEST, CONFIRM, RENEW, REBIND, REPLY, RELEASE = 1, 2, 3, 4, 5, 6, 7, 8
DECLINE, INFORMATION_REQUEST = 9, 11
_REPLY_TYPE = {SOLICIT: ADVERTISE, REQUEST: REPLY, CONFIRM: REPLY, DECLINE: REPLY,
               INFORMATION_REQUEST: REPLY}
OPT_CLIENT_ID, OPT_SERVER_ID, OPT_IA_NA, OPT_IA_ADDR = 1, 2, 3, 5
OPT_DNS_SERVER, OPT_DOMAIN_SEARCH = 23, 24
_INFINITE = b"\xff\xff\xff\xff"
_DUID_LL_ETHERNET = b"\x00\x03\x00\x01"
_ND_ROUTER_SOLICIT = 133


def compose_dhcpv6_options(userdata: bytes, iaid: bytes) -> bytes | None:
    """The reply options for the userdata TLVs; None on a malformed TLV or
    an unknown code (C: "Invalid userdata")."""
    out = bytearray()
    pos, end = 0, len(userdata)
    while pos < end:
        if end - pos < 4:
            return None
        code = int.from_bytes(userdata[pos:pos + 2], "big")
        size = int.from_bytes(userdata[pos + 2:pos + 4], "big")
        pos += 4
        if end - pos < size:
            return None
        data_ofs = pos
        data = userdata[pos:pos + size]
        pos += size
        if code == OPT_SERVER_ID:
            out += OPT_SERVER_ID.to_bytes(2, "big") + ((size + 4) & 0xFFFF).to_bytes(2, "big")
            out += _DUID_LL_ETHERNET + bytes_at(userdata, data_ofs, 6)
        elif code == OPT_IA_ADDR:
            if size != 16:
                return None
            if iaid == bytes(4):
                continue       # INFORMATION-REQUEST: no IA_NA
            out += b"\x00\x03\x00\x28" + iaid + _INFINITE + _INFINITE
            out += b"\x00\x05\x00\x18" + data + _INFINITE + _INFINITE
        elif code == OPT_DNS_SERVER:
            out += b"\x00\x17" + size.to_bytes(2, "big") + data
        elif code == OPT_DOMAIN_SEARCH:
            out += b"\x00\x18" + ((size + 2) & 0xFFFF).to_bytes(2, "big")
            out += bytes((size & 0xFF,)) + data + b"\0"
        else:
            return None
    return bytes(out)


def _udp6_checksum(out: bytearray, l3: int, l4: int) -> None:
    out[l4 + 6:l4 + 8] = b"\0\0"
    csum = transport_csum6(out, l3, l4, len(out))
    out[l4 + 6:l4 + 8] = (csum or 0xFFFF).to_bytes(2, "big")


def put_dhcpv6_opts(frame: bytes, options: bytes) -> L7Answer:
    """The DHCPv6 answer to ``frame`` (see module docstring); ``options`` is
    the userdata after the result field."""
    if not options:
        return L7Answer(None, (("warn", "DHCPv6 options not present in the userdata"),))
    span = l4_span(frame, 8)
    if span is None:
        return L7Answer(None, (("warn", "truncated dhcpv6 packet"),))
    h, l4, l4_end = span
    l3 = h.l3
    payload = l4 + 8
    in_type = byte_at(frame, payload)
    out_type = _REPLY_TYPE.get(in_type)
    if out_type is None:
        return L7Answer(None)
    udp_len = int.from_bytes(frame[l4 + 4:l4 + 6], "big")
    end = l4 + min(udp_len, l4_end - l4)
    iaid = bytes(4)
    client_id = -1
    pos = payload + 4
    while pos < end:
        code = int.from_bytes(bytes_at(frame, pos, 2), "big")
        if code == OPT_IA_NA:
            iaid = bytes_at(frame, pos + 4, 4)
        elif code == OPT_CLIENT_ID:
            client_id = pos
        pos += 4 + int.from_bytes(bytes_at(frame, pos + 2, 2), "big")
    if client_id < 0:
        return L7Answer(None, (("warn", "DHCPv6 option - Client id not present in the "
                                        "DHCPv6 packet"),))
    if iaid == bytes(4) and in_type != INFORMATION_REQUEST:
        return L7Answer(None, (("warn", "DHCPv6 option - IA NA not present in the "
                                        "DHCPv6 packet"),))
    cid_len = 4 + int.from_bytes(bytes_at(frame, client_id + 2, 2), "big")
    if client_id + cid_len > len(frame):
        # C copies past the received bytes here; we do not answer.
        return L7Answer(None, (("warn", "DHCPv6 option - Client id runs past the packet"),))
    reply_opts = compose_dhcpv6_options(options, iaid)
    if reply_opts is None:
        return L7Answer(None, (("warn", "Invalid userdata"),))
    new_l4 = (8 + 4 + cid_len + len(reply_opts)) & 0xFFFF
    out = bytearray(frame[:payload + 4])
    out[payload] = out_type
    out += frame[client_id:client_id + cid_len]
    out += reply_opts
    out[l4 + 4:l4 + 6] = new_l4.to_bytes(2, "big")
    out[l3 + 4:l3 + 6] = new_l4.to_bytes(2, "big")
    _udp6_checksum(out, l3, l4)
    return L7Answer(bytes(out))


def put_nd_ra_opts(frame: bytes, body: bytes) -> L7Answer:
    """The Router Advertisement answering the Router Solicitation ``frame``;
    ``body`` is the RA the lflow encoder built (userdata after the result field)."""
    if not body:
        return L7Answer(None, (("warn", "IPv6 ND RA options not present in the userdata"),))
    span = l4_span(frame, 0)
    if (span is None or span[0].dl_type != ETH_TYPE_IPV6 or span[0].nw_proto != IPPROTO_ICMPV6
            or span[0].tp_src != _ND_ROUTER_SOLICIT or span[0].tp_dst != 0):
        return L7Answer(None, (("warn", "put_nd_ra action on invalid or unsupported packet"),))
    h, l4, _end = span
    l3 = h.l3
    out = bytearray(frame[:l4]) + body + b"\0\0\0\0"
    out[l3 + 4:l3 + 6] = (len(body) & 0xFFFF).to_bytes(2, "big")
    out[l4 + 2:l4 + 4] = b"\0\0"
    csum = transport_csum6(out, l3, l4, l4 + len(body))
    out[l4 + 2:l4 + 4] = csum.to_bytes(2, "big")
    del out[l4 + len(body):]
    return L7Answer(bytes(out))
