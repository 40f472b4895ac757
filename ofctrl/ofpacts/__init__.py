"""OpenFlow actions (OVS ofpacts) as immutable value objects.

One frozen, hashable, slotted class per OVS action kind ovn-controller
emits. Each has ``encode()`` (OpenFlow 1.5 bytes as OVS 3.1 itself sends
them, cached) and ``format()`` (the text ``ovs-ofctl dump-flows`` prints).

Module functions:

* :func:`encode_actions` -- concatenated action bytes;
* :func:`encode_instructions` -- the OF1.5 instruction list of a flow_mod
  (one APPLY_ACTIONS instruction, nothing for a drop);
* :func:`format_actions` -- ``"drop"`` for an empty list, else comma-joined;
* :func:`decode_actions` / :func:`decode_instructions` -- bytes back to objects;
* :func:`parse_actions` -- OVS action text (as dump-flows prints it) to objects.

Port numbers are OpenFlow 1.1+ 32-bit values (``OFPP_IN_PORT`` = 0xfffffff8).
Fields are named by meta-flow name (``SetField("reg15", 5)``); subfield
references are :class:`ofctrl.fields.Subfield`.
"""

from __future__ import annotations

import struct
from typing import Sequence

from ofctrl.ofpacts.base import (
    OFPP_ALL, OFPP_ANY, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL,
    OFPP_MAX, OFPP_NONE, OFPP_NORMAL, OFPP_TABLE, TUN_METADATA_LEN, Action,
    DecodeError,
)
from ofctrl.ofpacts.basic import (
    Bundle, CheckPktLarger, Conjunction, CtClear, DecTtl, Exit, FinTimeout,
    Group, Meter, Move, Note, Output, OutputReg, PopVlan, PushVlan, Resubmit,
    Sample, SetField, SetNwTtl, SetQueue, StackPop, StackPush, StripVlan,
)
from ofctrl.ofpacts.controller import Controller
from ofctrl.ofpacts.ct import (
    NX_NAT_F_DST, NX_NAT_F_PERSISTENT, NX_NAT_F_PROTO_HASH,
    NX_NAT_F_PROTO_RANDOM, NX_NAT_F_SRC, Clone, Ct, Nat,
)
from ofctrl.ofpacts.decode import decode_actions, decode_instructions
from ofctrl.ofpacts.learn import (
    NX_LEARN_F_DELETE_LEARNED, NX_LEARN_F_SEND_FLOW_REM, Learn,
    LearnLoadField, LearnLoadImm, LearnMatchField, LearnMatchImm, LearnOutput,
    LearnSpec,
)
from ofctrl.ofpacts.parse import ParseError, parse_actions

__all__ = [
    "Action", "DecodeError", "ParseError",
    "Output", "OutputReg", "Resubmit", "SetField", "Move", "StackPush",
    "StackPop", "Group", "Meter", "DecTtl", "SetNwTtl", "SetQueue", "PushVlan", "PopVlan",
    "StripVlan", "Note", "Exit", "CtClear", "Conjunction", "Sample",
    "CheckPktLarger", "FinTimeout", "Bundle", "Controller", "Ct", "Nat",
    "Clone", "Learn", "LearnMatchField", "LearnMatchImm", "LearnLoadImm",
    "LearnLoadField", "LearnOutput", "LearnSpec",
    "NX_NAT_F_SRC", "NX_NAT_F_DST", "NX_NAT_F_PERSISTENT",
    "NX_NAT_F_PROTO_HASH", "NX_NAT_F_PROTO_RANDOM",
    "NX_LEARN_F_SEND_FLOW_REM", "NX_LEARN_F_DELETE_LEARNED",
    "OFPP_MAX", "OFPP_IN_PORT", "OFPP_TABLE", "OFPP_NORMAL", "OFPP_FLOOD",
    "OFPP_ALL", "OFPP_CONTROLLER", "OFPP_LOCAL", "OFPP_ANY", "OFPP_NONE",
    "TUN_METADATA_LEN",
    "encode_actions", "encode_instructions", "format_actions",
    "decode_actions", "decode_instructions", "parse_actions",
]

OFPIT_APPLY_ACTIONS = 4


def encode_actions(acts: Sequence[Action]) -> bytes:
    """OpenFlow 1.5 bytes of an action list (each action's bytes are cached)."""
    return b"".join([a.encode() for a in acts])


def encode_instructions(acts: Sequence[Action]) -> bytes:
    """OF1.5 flow_mod instructions: one APPLY_ACTIONS, or nothing for drop."""
    if not acts:
        return b""
    body = b"".join([a.encode() for a in acts])
    return struct.pack("!HH4x", OFPIT_APPLY_ACTIONS, 8 + len(body)) + body


def format_actions(acts: Sequence[Action]) -> str:
    """As ``ovs-ofctl dump-flows`` prints ``actions=``: "drop" when empty."""
    if not acts:
        return "drop"
    return ",".join([a.format() for a in acts])
