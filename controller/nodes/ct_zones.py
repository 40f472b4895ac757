"""The ``ct_zones`` engine node (C's en_ct_zones): the conntrack zone of
every local port and datapath (``controller.binding.ct_zones.CtZones``).

Design note
-----------
The zones live in the agent state (ofctrl and the main loop also read and
commit them).  ``recomputed`` says the last run assigned them from scratch
(any zone may have moved), which physical_flow_output cannot follow
incrementally; the handlers add or free the zones of tracked ports and give
up on a new or deleted local datapath or a moved requested SNAT zone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from controller.binding.ct_zones import requested_snat_zone, snat_key
from controller.binding.local_data import TrackedType
from controller.engine.core import (
    HANDLED_UNCHANGED,
    HANDLED_UPDATED,
    UNHANDLED,
    Handled,
    HandlerFn,
    Node,
)
from controller.ovsdb.tracking import TableChanges

if TYPE_CHECKING:
    from controller.engine.agent_nodes import AgentState


def _changes(inp: Node) -> TableChanges:
    data: TableChanges = inp.data
    return data


class CtZonesNode:
    """``ct_zones``: conntrack zone of every local port and datapath."""

    def __init__(self, st: AgentState) -> None:
        self.st = st
        self.data: Any = st.ct

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"sb_datapath_binding": self._sb_datapath_binding,
                "runtime_data": self._runtime_data}

    def clear_tracked(self) -> None:
        self.st.ct.recomputed = False

    def run(self, node: Node) -> bool:
        st = self.st
        ext = st.br_int.external_ids if st.br_int is not None else None
        st.ct.recompute(st.rt.local_lports,
                        [ld.datapath for ld in st.rt.local_datapaths.values()], ext,
                        keep_absent=st.starting_up)
        node.data = st.ct
        return True

    def _sb_datapath_binding(self, node: Node, inp: Node) -> Handled:
        st = self.st
        tc = _changes(inp)
        for tr in tc.all():
            dp = tr.row
            if dp.uuid not in st.rt.local_datapaths:
                continue
            if tc.is_new(dp.uuid) or tc.is_deleted(dp.uuid):
                return UNHANDLED
            req = requested_snat_zone(dp)
            if req < 0:
                continue
            if st.ct.current.get(snat_key(dp.uuid)) != req:
                return UNHANDLED
        return HANDLED_UNCHANGED

    def _runtime_data(self, node: Node, inp: Node) -> Handled:
        rt = self.st.rt
        if not rt.tracked:
            return UNHANDLED
        ct = self.st.ct
        updated = False
        added: list[str] = []
        new_dps: list[Any] = []
        for tdp in rt.tracked_dps.dps.values():
            if tdp.type is TrackedType.NEW and tdp.datapath.uuid in rt.local_datapaths:
                new_dps.append(tdp.datapath)
            for name, (pb, ttype) in tdp.lports.items():
                if pb.type not in ("", "localport", "localnet"):
                    continue
                if ttype in (TrackedType.NEW, TrackedType.UPDATED):
                    if name in rt.local_lports:
                        added.append(name)
                elif ttype is TrackedType.REMOVED:
                    if ct.lport_removed(name):
                        updated = True
        if added or new_dps:
            res = ct.users_added(added, new_dps)
            if res is None:
                return UNHANDLED
            updated = res or updated
        return HANDLED_UPDATED if updated else HANDLED_UNCHANGED
