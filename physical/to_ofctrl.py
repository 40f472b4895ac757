"""Conversion of physical flows to the shared ``ofctrl`` objects.

``to_ofctrl_flow(pf)`` turns a :class:`physical.ofbuild.PhysFlow` into an
``ofctrl.flow.Flow`` whose match is an ``ofctrl.match.Match`` and whose actions
are ``ofctrl.ofpacts`` objects.  Frequent actions are mapped one to one;
the rarer composite ones (learn, ct/nat, bundle, sample, controller,
check_pkt_larger) go through ``ofctrl.ofpacts.parse_actions`` on their OVS
text, which both sides print identically.  The owner UUID stays with the
caller (``pf.owner``), since ``Flow`` has no owner slot.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from typing import Iterable

from ofctrl import ofpacts as ofp
from ofctrl.desired import DesiredFlowTable
from ofctrl.ofpacts.base import Action as _OfAction
from ofctrl.fields import Subfield, field
from ofctrl.flow import Flow
from ofctrl.match import Match

from physical import ofbuild as pb


@dataclass(frozen=True, slots=True)
class SetNwTtl(_OfAction):
    """``mod_nw_ttl:N`` (OpenFlow 1.1+ OFPAT_SET_NW_TTL); not (yet) in
    ofctrl.ofpacts, needed inside the PMTUD controller userdata."""
    ttl: int

    def _encode(self) -> bytes:
        return struct.pack("!HHB3x", 23, 8, self.ttl)

    def format(self) -> str:
        return f"mod_nw_ttl:{self.ttl}"


def _sub(name: str, ofs: int, n_bits: int) -> Subfield:
    return Subfield(field(name), ofs, n_bits)


def _whole(name: str) -> Subfield:
    return Subfield.whole(field(name))


_CACHE: dict[pb.Action, tuple[ofp.Action, ...]] = {}
_CACHE_MAX = 200_000


def to_ofctrl_actions(actions: tuple[pb.Action, ...]) -> list[ofp.Action]:
    """ofctrl actions for ``actions``; conversions are memoised per action value
    (most physical actions repeat: zone loads, resubmits, register clears)."""
    out: list[ofp.Action] = []
    cache = _CACHE
    for a in actions:
        conv = cache.get(a)
        if conv is None:
            if len(cache) >= _CACHE_MAX:
                cache.clear()
            conv = cache[a] = tuple(_convert(a))
        out.extend(conv)
    return out


def _convert(a: pb.Action) -> list[ofp.Action]:
    if isinstance(a, pb.SetField):
        return [ofp.SetField(a.field, a.value, a.mask)]
    if isinstance(a, pb.Resubmit):
        return [ofp.Resubmit(a.table)]
    if isinstance(a, pb.Output):
        return [ofp.Output(a.port)]
    if isinstance(a, pb.Move):
        return [ofp.Move(_sub(a.src, a.src_ofs, a.n_bits), _sub(a.dst, a.dst_ofs, a.n_bits))]
    if isinstance(a, pb.StackPush):
        return [ofp.StackPush(_whole(a.field))]
    if isinstance(a, pb.StackPop):
        return [ofp.StackPop(_whole(a.field))]
    if isinstance(a, pb.PopVlan):
        return [ofp.PopVlan()]
    if isinstance(a, pb.PushVlan):
        return [ofp.PushVlan(a.ethertype)]
    if isinstance(a, pb.CtClear):
        return [ofp.CtClear()]
    if isinstance(a, pb.Conjunction):
        return [ofp.Conjunction(a.id, a.clause + 1, a.n_clauses)]
    if isinstance(a, pb.SetIpTtl):
        return [SetNwTtl(a.ttl)]
    if isinstance(a, pb.Clone):
        return [ofp.Clone(tuple(to_ofctrl_actions(a.actions)))]
    # learn, ct/nat, bundle, sample, controller, check_pkt_larger: via OVS text.
    return ofp.parse_actions(a.format())


def to_ofctrl_match(m: pb.PMatch) -> Match:
    return Match(m.items)


def to_ofctrl_flow(pf: pb.PhysFlow) -> Flow:
    return Flow(pf.table, pf.priority, to_ofctrl_match(pf.match),
                to_ofctrl_actions(pf.actions), pf.cookie)


GENERIC_OWNER = "physical-generic"   # owner of flows with PhysFlow.owner None (C: hc_uuid)


def add_to_desired(table: DesiredFlowTable, flows: Iterable[pb.PhysFlow],
                   generic_owner: object = GENERIC_OWNER) -> None:
    """Add physical flows to an ofctrl desired table, each under its owner UUID."""
    for pf in flows:
        table.add(to_ofctrl_flow(pf), pf.owner if pf.owner is not None else generic_owner)
