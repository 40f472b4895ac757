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

from ofctrl import ofpacts as ofp
from ofctrl.fields import Subfield, field
from ofctrl.flow import Flow
from ofctrl.match import Match

from physical import ofbuild as pb


def _sub(name: str, ofs: int, n_bits: int) -> Subfield:
    return Subfield(field(name), ofs, n_bits)


def _whole(name: str) -> Subfield:
    return Subfield.whole(field(name))


def to_ofctrl_actions(actions: tuple[pb.Action, ...]) -> list[ofp.Action]:
    out: list[ofp.Action] = []
    for a in actions:
        if isinstance(a, pb.SetField):
            out.append(ofp.SetField(a.field, a.value, a.mask))
        elif isinstance(a, pb.Resubmit):
            out.append(ofp.Resubmit(a.table))
        elif isinstance(a, pb.Output):
            out.append(ofp.Output(a.port))
        elif isinstance(a, pb.Move):
            out.append(ofp.Move(_sub(a.src, a.src_ofs, a.n_bits), _sub(a.dst, a.dst_ofs, a.n_bits)))
        elif isinstance(a, pb.StackPush):
            out.append(ofp.StackPush(_whole(a.field)))
        elif isinstance(a, pb.StackPop):
            out.append(ofp.StackPop(_whole(a.field)))
        elif isinstance(a, pb.PopVlan):
            out.append(ofp.PopVlan())
        elif isinstance(a, pb.PushVlan):
            out.append(ofp.PushVlan(a.ethertype))
        elif isinstance(a, pb.CtClear):
            out.append(ofp.CtClear())
        elif isinstance(a, pb.Conjunction):
            out.append(ofp.Conjunction(a.id, a.clause + 1, a.n_clauses))
        elif isinstance(a, pb.Clone):
            out.append(ofp.Clone(tuple(to_ofctrl_actions(a.actions))))
        else:
            out.extend(ofp.parse_actions(a.format()))
    return out


def to_ofctrl_match(m: pb.PMatch) -> Match:
    return Match(m.items)


def to_ofctrl_flow(pf: pb.PhysFlow) -> Flow:
    return Flow(pf.table, pf.priority, to_ofctrl_match(pf.match),
                to_ofctrl_actions(pf.actions), pf.cookie)
