"""Continuation handlers: put_dhcp_opts (2), put_dhcpv6_opts (5), dns_lookup
(6) and put_nd_ra_opts (8).

Each pauses the pipeline; the handler reads the result field from the
userdata (an OF1.5 OXM/NXM header and a be32 bit offset), asks the pure
builder of its service for an answer and always resumes (NXT_RESUME) with
the answer or the original packet.  The result bit is written 1 when there
is an answer and 0 otherwise, except when the header or the bit failed
validation (then no bit is written), as in 23.03.1.  The header may name a
wide register (northd's ``reg0[3]`` is encoded as ``xxreg0[99]``); packet-in
metadata carries 32-bit registers, so the bit is mapped to its ``regN``.
The builders' log lines become :class:`LogIntent` entries of module
``pinctrl``, rate-limited as C's VLOG_*_RL: per service one limiter for
warnings and debug lines (1/min, burst 5; C has one per function for
DHCPv6, DNS and RA and one per call site for DHCPv4, so DHCPv4 warnings of
different kinds share here), and for the DHCPv4 INFO lines one per kind
(OFFER/ACK/NAK replies, RELEASE, INFORM: 20/min, burst 40; DECLINE is not
limited).  Module state: those limiters and a memo of parsed result-field
headers, both used only from the pinctrl service thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from controller.lflow.actions.base import (
    OP_DNS_LOOKUP, OP_PUT_DHCP_OPTS, OP_PUT_DHCPV6_OPTS, OP_PUT_ND_RA_OPTS)
from controller.pinctrl.dhcp import put_dhcp_opts
from controller.pinctrl.dhcp6 import put_dhcpv6_opts, put_nd_ra_opts
from controller.pinctrl.dns import dns_lookup
from controller.pinctrl.l7frame import L7Answer
from controller.pinctrl.openflow import resume
from controller.pinctrl.outcome import Intent, LogIntent, Outcome
from controller.pinctrl.packet_in import PacketIn
from controller.pinctrl.registry import handler
from controller.pinctrl.state import LocalView
from controller.vlog import RateLimiter
from ofctrl.oxm import OxmError, decode_header

__all__ = ["ResultField", "parse_result_field"]

_MODULE = "pinctrl"
_DHCP4_INFO_KINDS = {"DHCPOFFER": "reply", "DHCPACK": "reply", "DHCPNAK": "reply",
                     "DHCPRELEASE": "release", "DHCPINFORM": "inform"}
_LIMITERS: dict[tuple[str, str], RateLimiter] = {}


def _limiter(service: str, level: str, text: str) -> RateLimiter | None:
    """The rate limiter of one log line of ``service`` (None: not limited)."""
    if level == "info":
        kind = _DHCP4_INFO_KINDS.get(text.split(" ", 1)[0])
        if kind is None:
            return None
        key, rate, burst = (service, kind), 20, 40
    else:
        key, rate, burst = (service, "warn"), 1, 5
    rl = _LIMITERS.get(key)
    if rl is None:
        rl = _LIMITERS[key] = RateLimiter(per_minute=rate, burst=burst)
    return rl


@dataclass(frozen=True, slots=True)
class ResultField:
    """Where the answer's success bit goes: bit ``ofs`` of metadata field ``name``."""

    name: str
    ofs: int


def _metadata_bit(name: str, ofs: int) -> tuple[str, int]:
    """The 32-bit register holding bit ``ofs`` of a wide register."""
    for prefix, n_regs in (("xxreg", 4), ("xreg", 2)):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            base = int(name[len(prefix):]) * n_regs
            return "reg%d" % (base + n_regs - 1 - ofs // 32), ofs % 32
    return name, ofs


def parse_result_field(payload: bytes, offer_ip: bool = False
                       ) -> tuple[ResultField | None, int, str | None]:
    """(result field, bytes consumed, warning) from the start of ``payload``;
    with ``offer_ip`` the 4-byte offer IP of put_dhcp_opts must follow the
    offset (and is not consumed).  The field is None when C would write no
    bit (bad header, missing offset, unwritable field or bit out of range)."""
    result, hdr_len, warning = _result_header(payload[:_HEAD_MAX])
    if hdr_len and offer_ip and len(payload) < hdr_len + 8:
        return None, len(payload), "offset or offer_ip not present in the userdata"
    if warning is not None:
        return None, len(payload), warning
    return result, hdr_len + 4, None


_HEAD_MAX = 12      # an experimenter OXM header (8 bytes) and the bit offset


@lru_cache(maxsize=256)
def _result_header(head: bytes) -> tuple[ResultField | None, int, str | None]:
    """(field, OXM header length or 0 when unparsable, warning) of the first
    bytes of a payload; memoised, the flows of a chassis use a handful."""
    try:
        f, masked, _width, hdr_len = decode_header(head)
    except OxmError as e:
        why = "OFPBMC_BAD_LEN" if "truncated" in str(e) else "OFPBMC_BAD_FIELD"
        return None, 0, "bad result OXM (%s)" % why
    if masked:
        return None, 0, "bad result OXM (OFPBMC_BAD_MASK)"
    if len(head) < hdr_len + 4:
        return None, hdr_len, "offset not present in the userdata"
    ofs = int.from_bytes(head[hdr_len:hdr_len + 4], "big")
    if ofs >= f.n_bits:
        return None, hdr_len, "bad result bit (OFPBAC_BAD_SET_LEN)"
    if not f.writable:
        return None, hdr_len, "bad result bit (OFPBAC_BAD_SET_ARGUMENT)"
    name, bit = _metadata_bit(f.name, ofs)
    return ResultField(name, bit), hdr_len, None


def _resume(service: str, pin: PacketIn, result: ResultField | None, answer: L7Answer,
            logs: tuple[tuple[str, str], ...] = ()) -> Outcome:
    bit = None if result is None else (result.name, result.ofs, 1 if answer.frame else 0)
    intents: list[Intent] = [LogIntent(_MODULE, level, text, _limiter(service, level, text))
                             for level, text in logs + answer.logs]
    return Outcome(messages=[resume(pin, answer.frame, bit)], intents=intents)


def _prologue(pin: PacketIn, offer_ip: bool = False
              ) -> tuple[ResultField | None, bytes | None, tuple[tuple[str, str], ...]]:
    """Result field and the userdata after it (None when C gives up early)."""
    result, used, warning = parse_result_field(pin.payload, offer_ip)
    if warning is not None:
        return result, None, (("warn", warning),)
    return result, pin.payload[used:], ()


@handler(OP_PUT_DHCP_OPTS)
def handle_put_dhcp_opts(pin: PacketIn, view: LocalView) -> Outcome:
    result, rest, logs = _prologue(pin, offer_ip=True)
    if rest is None:
        return _resume("dhcp4", pin, result, L7Answer(None), logs)
    return _resume("dhcp4", pin, result, put_dhcp_opts(pin.packet, rest[:4], rest[4:]))


@handler(OP_PUT_DHCPV6_OPTS)
def handle_put_dhcpv6_opts(pin: PacketIn, view: LocalView) -> Outcome:
    result, rest, logs = _prologue(pin)
    if rest is None:
        return _resume("dhcp6", pin, result, L7Answer(None), logs)
    return _resume("dhcp6", pin, result, put_dhcpv6_opts(pin.packet, rest))


@handler(OP_DNS_LOOKUP)
def handle_dns_lookup(pin: PacketIn, view: LocalView) -> Outcome:
    result, rest, logs = _prologue(pin)
    if rest is None:
        return _resume("dns", pin, result, L7Answer(None), logs)
    return _resume("dns", pin, result, dns_lookup(pin.packet, pin.reg("metadata"), view.dns))


@handler(OP_PUT_ND_RA_OPTS)
def handle_put_nd_ra_opts(pin: PacketIn, view: LocalView) -> Outcome:
    result, rest, logs = _prologue(pin)
    if rest is None:
        return _resume("nd_ra", pin, result, L7Answer(None), logs)
    return _resume("nd_ra", pin, result, put_nd_ra_opts(pin.packet, rest))
