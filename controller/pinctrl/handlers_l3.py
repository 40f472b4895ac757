"""pinctrl handlers that answer a packet with a generated packet (OVN 23.03.1).

Opcodes: 0 ARP, 3 ND_NA, 9 ND_NS, 10 ICMP, 11 TCP_RESET, 12 ND_NA_ROUTER,
13/21 PUT_ICMP4/6_FRAG_MTU, 14 ICMP4_ERROR, 20 ICMP6_ERROR, 22 REJECT,
24 SCTP_ABORT.  Each handler is a pure function of the packet-in: it builds
the frame with :mod:`controller.pinctrl.frames` and returns it in a PO-N
packet-out (the packet-in's registers restored, then the userdata's nested
actions), except the frag-MTU opcodes, which pause the pipeline and are
answered with an NXT_RESUME carrying the patched packet (or the original one
when there is nothing to patch, as C does).  ARP and ND_NS also ask for the
original packet to be buffered (``buffered.buffer_intent``: datapath,
outport = reg15, next hop = reg0 / xxreg0) until its MAC_Binding appears.
What C drops (with a rate-limited warning) becomes ``Outcome.drop`` with C's
warning text; what C ignores silently (reject of a RST or an ICMP error)
is an empty outcome.
"""

from __future__ import annotations

from collections.abc import Callable

from controller.lflow.actions.base import (
    OP_ARP, OP_ICMP, OP_ICMP4_ERROR, OP_ICMP6_ERROR, OP_ND_NA, OP_ND_NA_ROUTER, OP_ND_NS,
    OP_PUT_ICMP4_FRAG_MTU, OP_PUT_ICMP6_FRAG_MTU, OP_REJECT, OP_SCTP_ABORT, OP_TCP_RESET)
from controller.pinctrl import frames
from controller.pinctrl.buffered import buffer_intent
from controller.pinctrl.frames import FrameError, Headers
from controller.pinctrl.openflow import po_nested, resume
from controller.pinctrl.outcome import DROP, Outcome
from controller.pinctrl.packet_in import PacketIn
from controller.pinctrl.registry import handler
from controller.pinctrl.state import LocalView

__all__ = ["handle_arp", "handle_nd_ns", "handle_nd_na", "handle_icmp", "handle_icmp_error",
           "handle_tcp_reset", "handle_sctp_abort", "handle_reject", "handle_icmp_frag_mtu"]


def _nested_error(actions: bytes) -> str | None:
    """Why OVS would refuse ``actions`` as an OpenFlow 1.5 action list on its
    framing (``ofpacts_pull_openflow_actions``), None when the framing holds."""
    if len(actions) % 8:
        return "OFPBRC_BAD_LEN"
    ofs = 0
    while ofs < len(actions):
        alen = (actions[ofs + 2] << 8) | actions[ofs + 3]
        if alen < 8 or alen % 8 or ofs + alen > len(actions):
            return "OFPBAC_BAD_LEN"
        ofs += alen
    return None


def _packet_out(pin: PacketIn, frame: bytes) -> Outcome:
    """PO-N of ``frame``; nothing is sent when the nested actions are unusable."""
    error = _nested_error(pin.payload)
    if error is not None:
        return DROP("failed to parse actions from userdata (%s)" % error)
    return Outcome(messages=[po_nested(pin, frame, pin.payload)])


def _reply(pin: PacketIn, build: Callable[[bytes, Headers], bytes | None]) -> Outcome:
    """PO-N of what ``build`` makes of the packet-in's frame."""
    try:
        frame = build(pin.packet, frames.parse(pin.packet))
    except FrameError as e:
        return DROP(str(e))
    if frame is None:
        return Outcome()
    return _packet_out(pin, frame)


@handler(OP_ARP)
def handle_arp(pin: PacketIn, view: LocalView) -> Outcome:
    """``arp { A }``: buffer the IPv4 packet for its next hop (reg0), send an
    ARP request through A (buffered even when A turns out unusable, as in C)."""
    try:
        frame = frames.arp_request(pin.packet)
    except FrameError as e:
        return DROP(str(e))
    out = _packet_out(pin, frame)
    out.intents.append(buffer_intent(pin, is_arp=True))
    return out


@handler(OP_ND_NS)
def handle_nd_ns(pin: PacketIn, view: LocalView) -> Outcome:
    """``nd_ns { A }``: buffer the IPv6 packet for its next hop (xxreg0), send a
    neighbour solicitation through A (buffered even when A is unusable)."""
    try:
        frame = frames.nd_ns(pin.packet)
    except FrameError as e:
        return DROP(str(e))
    out = _packet_out(pin, frame)
    out.intents.append(buffer_intent(pin, is_arp=False))
    return out


@handler(OP_ND_NA, OP_ND_NA_ROUTER)
def handle_nd_na(pin: PacketIn, view: LocalView) -> Outcome:
    """``nd_na { A }`` / ``nd_na_router { A }``: answer an NS with an NA."""
    router = pin.opcode == OP_ND_NA_ROUTER
    return _reply(pin, lambda f, h: frames.nd_na(f, router, h))


@handler(OP_ICMP)
def handle_icmp(pin: PacketIn, view: LocalView) -> Outcome:
    """``icmp4 { A }`` / ``icmp6 { A }``: destination unreachable, port
    unreachable for UDP."""
    return _reply(pin, lambda f, h: frames.icmp_error(f, True, False, h))


@handler(OP_ICMP4_ERROR, OP_ICMP6_ERROR)
def handle_icmp_error(pin: PacketIn, view: LocalView) -> Outcome:
    """``icmp4_error { A }`` / ``icmp6_error { A }``: an ICMP error of the
    frame's own family (A sets the type and code)."""
    return _reply(pin, lambda f, h: frames.icmp_error(f, False, False, h))


@handler(OP_TCP_RESET)
def handle_tcp_reset(pin: PacketIn, view: LocalView) -> Outcome:
    """``tcp_reset { A }``."""
    return _reply(pin, lambda f, h: frames.tcp_reset(f, False, h))


@handler(OP_SCTP_ABORT)
def handle_sctp_abort(pin: PacketIn, view: LocalView) -> Outcome:
    """``sctp_abort { A }``."""
    return _reply(pin, lambda f, h: frames.sctp_abort(f, False, h))


@handler(OP_REJECT)
def handle_reject(pin: PacketIn, view: LocalView) -> Outcome:
    """``reject { A }``: RST, ABORT or ICMP unreachable, addresses swapped."""
    return _reply(pin, lambda f, h: frames.reject(f, h))


@handler(OP_PUT_ICMP4_FRAG_MTU, OP_PUT_ICMP6_FRAG_MTU)
def handle_icmp_frag_mtu(pin: PacketIn, view: LocalView) -> Outcome:
    """``icmp4.frag_mtu = N`` / ``icmp6.frag_mtu = N`` inside an ICMP error's
    nested actions: patch the MTU into the ICMP packet and resume.  As in C
    the frame's family, not the opcode, decides whether a be16 or a be32 MTU
    is read from the userdata; anything else resumes the packet unchanged
    (reported as a drop reason when C warns: the frame is not ICMP)."""
    payload = pin.payload
    try:
        h = frames.parse(pin.packet)
        if h.dl_type == frames.ETH_TYPE_IP and h.nw_proto == frames.IPPROTO_ICMP:
            if len(payload) < 2:
                return Outcome(messages=[resume(pin)])
            frame = frames.set_icmp4_frag_mtu(pin.packet, int.from_bytes(payload[:2], "big"), h)
        elif h.dl_type == frames.ETH_TYPE_IPV6 and h.nw_proto == frames.IPPROTO_ICMPV6:
            if len(payload) < 4:
                return Outcome(messages=[resume(pin)])
            frame = frames.set_icmp6_frag_mtu(pin.packet, int.from_bytes(payload[:4], "big"), h)
        else:
            raise FrameError("put_icmp(4/6)_frag_mtu action on non-ICMPv4/v6 packet")
    except FrameError as e:
        # the action failed (counted, warned rate-limited) but the pipeline resumes
        return Outcome(messages=[resume(pin)], drop=str(e))
    return Outcome(messages=[resume(pin, frame)])
