"""put_dhcp_opts: the DHCPv4 answer of 23.03.1 (``pinctrl_handle_put_dhcp_opts``).

Pure: the request frame, the offer IP and the option TLVs the lflow encoder
wrote (``controller.lflow.actions.controller_ops.dhcpv4_payload``: u8 code,
u8 length, value; bootfile_name 67, bootfile_name_alt 254 and next_server
253 first) in, an :class:`~controller.pinctrl.l7frame.L7Answer` out.

Rules kept from C:

* the request needs a 236-byte BOOTP header inside L4, op 1 and the magic
  cookie; client options are scanned to END for 53 (message type), 50
  (requested IP, default ciaddr) and 175 (iPXE);
* DISCOVER -> OFFER; REQUEST -> ACK, or NAK (no options, yiaddr = siaddr =
  0) when the requested IP is not the offer; INFORM -> ACK without options
  1, 51, 58, 59, yiaddr 0, siaddr untouched; RELEASE, DECLINE and anything
  else: no answer;
* bootfile rewrite: 67 directly followed by 254 keeps 67's value for iPXE
  clients and 254's value (renamed 67) for the others; a lone 254 becomes
  67.  C does this in place on the option buffer while scanning it, so the
  rewrite is replayed on a byte buffer with C's cursor arithmetic
  (:func:`_boot_rewrite`); option 253 sets siaddr and stays in the reply;
* reply = request L2/L3 and UDP header, the BOOTP header with op 2,
  cookie, option 53, the options, 4 zero bytes, END, 4 zero bytes; IP
  destination = offer IP or 255.255.255.255 for the broadcast flag, IP
  total length and header checksum, UDP length, UDP checksum 0.
"""

from __future__ import annotations

import ipaddress

from controller.pinctrl.l7frame import L7Answer, bytes_at, ipv4_header_csum, l4_span

__all__ = ["put_dhcp_opts", "DHCP_MAGIC_COOKIE"]

DHCP_MAGIC_COOKIE = b"\x63\x82\x53\x63"
_BOOTP_LEN = 236
_UDP_LEN = 8
OPT_PAD, OPT_END = 0, 255
OPT_MSG_TYPE, OPT_REQ_IP, OPT_ETHERBOOT = 53, 50, 175
OPT_BOOTFILE, OPT_BOOTFILE_ALT, OPT_NEXT_SERVER = 67, 254, 253
_INFORM_DROPPED = frozenset((1, 51, 58, 59))    # netmask, lease time, T1, T2

DISCOVER, OFFER, REQUEST, DECLINE, ACK, NAK, RELEASE, INFORM = 1, 2, 3, 4, 5, 6, 7, 8
_NAMES = {OFFER: "OFFER", ACK: "ACK", NAK: "NAK"}
_SLACK = bytes(264)   # what C's over-reads past the option buffer see


def _ip(raw: bytes) -> str:
    return str(ipaddress.IPv4Address(raw))


def _mac(raw: bytes | bytearray) -> str:
    return ":".join("%02x" % b for b in raw)


def _scan_client_options(frame: bytes, pos: int, end: int, ciaddr: bytes
                         ) -> tuple[int | None, bytes, bool]:
    """(message type, requested IP, iPXE) from the client's options."""
    msg_type: int | None = None
    request_ip = ciaddr
    ipxe = False
    while pos < end:
        code = frame[pos]
        if code == OPT_END:
            break
        if code == OPT_PAD:
            pos += 1
            continue
        pos += 2
        if pos > end:
            break
        length = frame[pos - 1]
        value = pos
        pos += length
        if pos > end:
            break
        if code == OPT_MSG_TYPE:
            if length == 1:
                msg_type = frame[value]
        elif code == OPT_REQ_IP:
            if length == 4:
                request_ip = frame[value:value + 4]
        elif code == OPT_ETHERBOOT:
            ipxe = True
    return msg_type, request_ip, ipxe


def _inform_options(options: bytes) -> bytes:
    """The userdata options minus the address and lease-time ones."""
    mem = options + _SLACK
    out = bytearray()
    pos, end = 0, len(options)
    while pos < end:
        code, length = mem[pos], mem[pos + 1]
        if code not in _INFORM_DROPPED:
            out += mem[pos:pos + 2 + length]
        pos += 2
        if pos > end:
            break
        pos += length
    return bytes(out)


def _boot_rewrite(options: bytes, ipxe: bool, siaddr: bytes) -> tuple[bytes, bytes] | None:
    """Replay C's in-place scan of the reply options: (options, next server).
    None where C would trip an assertion (a pull past the buffer)."""
    mem = bytearray(options + _SLACK)
    start, pos, end = 0, 0, len(options)
    next_server = siaddr
    bootfile_set = False
    while pos < end:
        code = mem[pos]
        if code == OPT_NEXT_SERVER:
            next_server = bytes(mem[pos + 2:pos + 6])
        elif code == OPT_BOOTFILE:
            size = 2 + mem[pos + 1]
            nxt = pos + size
            if mem[nxt] == OPT_BOOTFILE_ALT:
                if not ipxe:
                    if start + size > end:
                        return None
                    start += size
                    mem[nxt] = OPT_BOOTFILE
                else:
                    saved = bytes(mem[pos:pos + size])
                    alt_size = 2 + mem[nxt + 1]
                    if start + alt_size > end:
                        return None
                    start += alt_size
                    mem[start:start + size] = saved
            bootfile_set = True
        elif code == OPT_BOOTFILE_ALT:
            if not bootfile_set:
                mem[pos] = OPT_BOOTFILE
        pos += 2
        if pos > end:
            break
        pos += mem[pos - 1]
    return bytes(mem[start:end]), next_server


def put_dhcp_opts(frame: bytes, offer_ip: bytes, options: bytes) -> L7Answer:
    """The DHCPv4 answer to ``frame`` (see module docstring).  ``offer_ip``
    is 4 bytes; ``options`` the userdata after the offer IP."""
    if not options:
        return L7Answer(None, (("warn", "DHCP options not present in the userdata"),))
    span = l4_span(frame, _UDP_LEN)
    if span is None:
        return L7Answer(None, (("warn", "Invalid or incomplete DHCP packet received"),))
    h, l4, end = span
    l3 = h.l3
    bootp = l4 + _UDP_LEN
    if bootp + _BOOTP_LEN > end:
        return L7Answer(None, (("warn", "Invalid or incomplete DHCP packet received, "
                                        "bad data length"),))
    if frame[bootp] != 1:
        return L7Answer(None, (("warn", "Invalid opcode in the DHCP packet: %d" % frame[bootp]),))
    cookie = bootp + _BOOTP_LEN
    if cookie + 4 > end or frame[cookie:cookie + 4] != DHCP_MAGIC_COOKIE:
        return L7Answer(None, (("warn", "DHCP magic cookie not present in the DHCP packet"),))
    ciaddr = frame[bootp + 12:bootp + 16]
    msg_type, request_ip, ipxe = _scan_client_options(frame, cookie + 4, end, ciaddr)
    if msg_type is None:
        return L7Answer(None, (("warn", "Missing DHCP message type"),))

    logs: list[tuple[str, str]] = []
    reply_opts = options
    if msg_type == DISCOVER:
        out_type = OFFER
    elif msg_type == REQUEST:
        out_type = ACK
        if request_ip != offer_ip:
            logs.append(("warn", "DHCPREQUEST requested IP %s does not match offer %s"
                         % (_ip(request_ip), _ip(offer_ip))))
            out_type = NAK
    elif msg_type == RELEASE:
        return L7Answer(None, (("info", "DHCPRELEASE %s %s" % (_mac(frame[6:12]), _ip(ciaddr))),))
    elif msg_type == INFORM:
        out_type = ACK
        reply_opts = _inform_options(options)
        logs.append(("info", "DHCPINFORM from %s %s"
                     % (_mac(frame[6:12]), _ip(bytes_at(frame, l3 + 12, 4)))))
    elif msg_type == DECLINE:
        if request_ip == offer_ip:
            return L7Answer(None, (("info", "DHCPDECLINE from %s, %s duplicated"
                                    % (_mac(frame[6:12]), _ip(offer_ip))),))
        return L7Answer(None)
    else:
        return L7Answer(None, (("warn", "Invalid DHCP message type: %d" % msg_type),))

    rewritten = _boot_rewrite(reply_opts, ipxe, frame[bootp + 20:bootp + 24])
    if rewritten is None:
        return L7Answer(None, tuple(logs) + (("warn", "malformed DHCP options in the userdata"),))
    reply_opts, next_server = rewritten
    if out_type == NAK:
        reply_opts = b""

    new_l4 = (_UDP_LEN + _BOOTP_LEN + 16 + len(reply_opts)) & 0xFFFF
    out = bytearray(frame[:cookie])
    out[bootp] = 2
    if msg_type != INFORM:
        nak = out_type == NAK
        out[bootp + 16:bootp + 20] = bytes(4) if nak else offer_ip
        out[bootp + 20:bootp + 24] = bytes(4) if nak else next_server
    else:
        out[bootp + 16:bootp + 20] = bytes(4)
    out += DHCP_MAGIC_COOKIE
    out += bytes((OPT_MSG_TYPE, 1, out_type))
    out += reply_opts
    out += b"\0\0\0\0\xff\0\0\0\0"
    out[l4 + 4:l4 + 6] = new_l4.to_bytes(2, "big")
    out[l4 + 6:l4 + 8] = b"\0\0"
    broadcast = out[bootp + 10] & 0x80
    out[l3 + 16:l3 + 20] = b"\xff\xff\xff\xff" if broadcast else offer_ip
    out[l3 + 2:l3 + 4] = ((l4 - l3 + new_l4) & 0xFFFF).to_bytes(2, "big")
    ipv4_header_csum(out, l3)
    logs.append(("info", "DHCP%s %s %s" % (_NAMES[out_type], _mac(out[6:12]), _ip(offer_ip))))
    return L7Answer(bytes(out), tuple(logs))
