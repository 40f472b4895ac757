"""``controller(...)`` action (NXAST_CONTROLLER2 / NXAST_CONTROLLER).

OVS sends NXAST_CONTROLLER2 (a property list) when there is userdata, a
pause flag or a meter, else the fixed NXAST_CONTROLLER. Dump-flows prints
``CONTROLLER:MAX_LEN`` when only max_len differs from the defaults, else
``controller(reason=..,max_len=..,id=..,userdata=xx.xx,pause,meter_id=..)``
with default-valued keys left out.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ofctrl.ofpacts.base import Action, nx_header, pad8

__all__ = ["Controller", "OFPR_ACTION", "PACKET_IN_REASONS"]

NXAST_CONTROLLER = 20
NXAST_CONTROLLER2 = 37

NXAC2PT_MAX_LEN = 0
NXAC2PT_CONTROLLER_ID = 1
NXAC2PT_REASON = 2
NXAC2PT_USERDATA = 3
NXAC2PT_PAUSE = 4
NXAC2PT_METER_ID = 5

OFPR_ACTION = 1
PACKET_IN_REASONS = {0: "no_match", 1: "action", 2: "invalid_ttl",
                     3: "action_set", 4: "group", 5: "packet_out"}


def _prop(ptype: int, payload: bytes) -> bytes:
    return pad8(struct.pack("!HH", ptype, 4 + len(payload)) + payload)


@dataclass(frozen=True, slots=True)
class Controller(Action):
    """Send the packet to the controller (see module docstring).
    ``meter_id`` 0 means no meter (NX_CTLR_NO_METER)."""

    userdata: bytes = b""
    pause: bool = False
    max_len: int = 0xFFFF
    controller_id: int = 0
    reason: int = OFPR_ACTION
    meter_id: int = 0
    controller2: bool = True

    def _encode(self) -> bytes:
        if not (self.userdata or self.pause or self.meter_id or self.controller2):
            return nx_header(NXAST_CONTROLLER, struct.pack(
                "!HHBx", self.max_len, self.controller_id, self.reason))
        props = []
        if self.max_len != 0xFFFF:
            props.append(_prop(NXAC2PT_MAX_LEN, struct.pack("!H", self.max_len)))
        if self.controller_id:
            props.append(_prop(NXAC2PT_CONTROLLER_ID, struct.pack("!H", self.controller_id)))
        if self.reason != OFPR_ACTION:
            props.append(_prop(NXAC2PT_REASON, struct.pack("!B", self.reason)))
        if self.userdata:
            props.append(_prop(NXAC2PT_USERDATA, self.userdata))
        if self.pause:
            props.append(_prop(NXAC2PT_PAUSE, b""))
        if self.meter_id:
            props.append(_prop(NXAC2PT_METER_ID, struct.pack("!I", self.meter_id)))
        return nx_header(NXAST_CONTROLLER2, b"\0" * 6 + b"".join(props))

    def format(self) -> str:
        if (self.reason == OFPR_ACTION and not self.controller_id and not self.userdata
                and not self.pause and not self.meter_id):
            return "CONTROLLER:%d" % self.max_len
        parts = []
        if self.reason != OFPR_ACTION:
            parts.append("reason=" + PACKET_IN_REASONS.get(self.reason, str(self.reason)))
        if self.max_len != 0xFFFF:
            parts.append("max_len=%d" % self.max_len)
        if self.controller_id:
            parts.append("id=%d" % self.controller_id)
        if self.userdata:
            parts.append("userdata=" + ".".join("%02x" % b for b in self.userdata))
        if self.pause:
            parts.append("pause")
        if self.meter_id:
            parts.append("meter_id=%d" % self.meter_id)
        return "controller(%s)" % ",".join(parts)
