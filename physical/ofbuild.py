"""Small helpers that build ``ofctrl`` objects for the physical flows.

Design note
-----------
The builders of this package create the shared ``ofctrl`` value objects
directly: ``ofctrl.match.Match`` for matches, ``ofctrl.ofpacts`` actions and
``ofctrl.flow.Flow``.  This module only adds what is specific to the way OVN
writes physical flows:

* :func:`load` - OVN's ``put_load()`` (write ``n_bits`` of a value at bit
  ``ofs``) as a masked ``SetField``; :func:`move`, :func:`push`, :func:`pop`
  name fields by meta-flow name instead of :class:`ofctrl.fields.Subfield`.
  These are memoised: physical flows repeat the same few actions (zone loads,
  register clears, tunnel metadata) thousands of times, and sharing one
  action object also shares its cached wire encoding.
* :func:`controller_op` - ``controller(userdata=<OVN opcode>...)`` with
  nested actions encoded into the userdata.
* :class:`OwnedFlows` - the flows one SB row (or :data:`GENERIC_OWNER`) owns,
  and :func:`add_to_desired` which loads them into an
  ``ofctrl.desired.DesiredFlowTable``.
* :func:`flow_to_string` - a flow as ``ovs-ofctl dump-flows --no-stats
  --names`` prints it (no cookie), used by tests and diagnostics.
"""

from __future__ import annotations

import functools
from typing import Hashable, Iterable, NamedTuple, Sequence

from ofctrl import ofpacts as ofp
from ofctrl.desired import DesiredFlowTable
from ofctrl.fields import Subfield, field, format_port
from ofctrl.flow import Flow

__all__ = ["GENERIC_OWNER", "Owner", "OwnedFlows", "add_to_desired", "controller_op",
           "flow_to_string", "format_actions_named", "load", "move", "pop", "push", "sub"]

Owner = Hashable

GENERIC_OWNER = "physical-generic"   # owner of flows not tied to one SB row (C: hc_uuid)

# OVN maps its Geneve option with 4 bytes: tun_metadataN is 32 bits wide here.
_TUN_METADATA_BITS = 32


def _width(name: str) -> int:
    return _TUN_METADATA_BITS if name.startswith("tun_metadata") else field(name).n_bits


@functools.lru_cache(maxsize=4096)
def sub(name: str, ofs: int = 0, n_bits: int | None = None) -> Subfield:
    """Bits ``ofs .. ofs+n_bits-1`` of field ``name`` (whole field by default)."""
    f = field(name)
    return Subfield(f, ofs, f.n_bits - ofs if n_bits is None else n_bits)


@functools.lru_cache(maxsize=65536)
def load(name: str, value: int, ofs: int = 0, n_bits: int | None = None) -> ofp.SetField:
    """``set_field`` writing ``n_bits`` of ``value`` at bit ``ofs`` of ``name``
    (OVN's put_load); exact when it covers the whole field."""
    width = _width(name)
    if n_bits is None:
        n_bits = width - ofs
    mask = ((1 << n_bits) - 1) << ofs
    full = (1 << width) - 1
    return ofp.SetField(name, (value << ofs) & mask, None if mask == full else mask)


@functools.lru_cache(maxsize=4096)
def move(src: str, src_ofs: int, dst: str, dst_ofs: int, n_bits: int) -> ofp.Move:
    """``move:SRC[src_ofs..]->DST[dst_ofs..]`` of ``n_bits`` bits."""
    return ofp.Move(sub(src, src_ofs, n_bits), sub(dst, dst_ofs, n_bits))


@functools.lru_cache(maxsize=256)
def push(name: str) -> ofp.StackPush:
    """``push:`` of the whole field ``name``."""
    return ofp.StackPush(sub(name))


@functools.lru_cache(maxsize=256)
def pop(name: str) -> ofp.StackPop:
    """``pop:`` of the whole field ``name``."""
    return ofp.StackPop(sub(name))


def controller_op(opcode: int, pause: bool = False, nested: Sequence[ofp.Action] = (),
                  payload: bytes = b"") -> ofp.Controller:
    """``controller(userdata=OPCODE 00000000 ACTIONS PAYLOAD[,pause])``: an OVN
    controller action whose userdata carries the 32-bit opcode, 4 bytes of
    padding, the OpenFlow 1.5 encoding of ``nested`` and ``payload``."""
    userdata = opcode.to_bytes(4, "big") + b"\x00" * 4 + ofp.encode_actions(nested) + payload
    return ofp.Controller(userdata, pause=pause)


# ----------------------------------------------------------------------
# Ownership
# ----------------------------------------------------------------------

class OwnedFlows(NamedTuple):
    """The flows one owner (an SB row UUID, or :data:`GENERIC_OWNER`) owns."""

    owner: Owner
    flows: list[Flow]


def add_to_desired(table: DesiredFlowTable, groups: Iterable[OwnedFlows]) -> None:
    """Add every group's flows to ``table`` under the group's owner (a flow
    with the key of one its owner already has is dropped, as in ofctrl)."""
    add = table.add
    for owner, flows in groups:
        for f in flows:
            add(f, owner)


# ----------------------------------------------------------------------
# Text (tests, diagnostics)
# ----------------------------------------------------------------------

def _format_action(a: ofp.Action, port_names: dict[int, str]) -> str:
    if type(a) is ofp.Output and a.port < ofp.OFPP_MAX:
        return "output:" + format_port(a.port, port_names)
    if type(a) is ofp.Bundle and a.dst is None:
        text = a.format()
        head = text[:text.index("members:") + len("members:")]
        return head + ",".join(format_port(p, port_names) for p in a.members) + ")"
    if type(a) is ofp.Clone:
        return "clone(%s)" % format_actions_named(a.actions, port_names)
    return a.format()


def format_actions_named(actions: Sequence[ofp.Action],
                         port_names: dict[int, str] | None = None) -> str:
    """``format_actions`` with output ports printed by name as ``--names`` does."""
    if not port_names:
        return ofp.format_actions(actions)
    if not actions:
        return "drop"
    return ",".join([_format_action(a, port_names) for a in actions])


def flow_to_string(flow: Flow, port_names: dict[int, str] | None = None,
                   cookie: bool = False) -> str:
    """``flow`` as ``ovs-ofctl dump-flows --no-stats [--names]`` prints it
    (table 0 and, unless ``cookie``, the cookie omitted)."""
    parts = []
    if cookie and flow.cookie:
        parts.append(f"cookie={flow.cookie:#x}, ")
    if flow.table:
        parts.append(f"table={flow.table}, ")
    m = flow.match.to_string(port_names)
    parts.append(f"priority={flow.priority}" + (f",{m}" if m else ""))
    parts.append(" actions=" + format_actions_named(flow.actions, port_names))
    return "".join(parts)
