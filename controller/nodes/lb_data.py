"""The ``lb_data`` engine node: which Load_Balancer rows need new flows.

Design note
-----------
The LB hairpin flows are built by ``physical/`` (``physical_flow_output``),
one set per Load_Balancer row.  This node (C's en_lb_data) tells that node
which rows to rebuild in this iteration: ``changed`` maps a row UUID to the
row, or to None for a deleted row.  Its handlers add

* the Load_Balancer rows created, updated or deleted;
* the templated rows (``options:template=true``) when a template variable
  of this chassis changed;
* the rows on a datapath that became local (``runtime_data``'s new tracked
  datapaths).

``recomputed`` says the node was rebuilt from scratch (any row may need new
flows): a dependant then recomputes.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import TYPE_CHECKING, Any, Callable, Mapping

from controller.binding.local_data import TrackedType, opt_first
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

Tables = Callable[[str], Mapping[Any, Any]]


class LbData:
    __slots__ = ("changed", "recomputed")

    def __init__(self) -> None:
        self.changed: dict[uuidlib.UUID, Any | None] = {}
        self.recomputed = False


def _is_template(lb: Any) -> bool:
    return str(lb.options.get("template", "false")).lower() == "true"


def _on_datapaths(lb: Any, dps: set[uuidlib.UUID]) -> bool:
    rows = list(lb.datapaths)
    grp = opt_first(lb.datapath_group)
    if grp is not None:
        rows += list(grp.datapaths)
    return any(dp.uuid in dps for dp in rows)


class LbDataNode:
    def __init__(self, st: "AgentState", tables: Tables) -> None:
        self.st = st
        self.tables = tables
        self.data = LbData()

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"sb_load_balancer": self._sb_load_balancer,
                "template_vars": self._template_vars,
                "runtime_data": self._runtime_data}

    def clear_tracked(self) -> None:
        self.data.changed.clear()
        self.data.recomputed = False

    def run(self, node: Node) -> bool:
        self.data.recomputed = True
        return True

    def _result(self, before: int) -> Handled:
        return HANDLED_UPDATED if len(self.data.changed) != before else HANDLED_UNCHANGED

    def _sb_load_balancer(self, node: Node, inp: Node) -> Handled:
        tc: TableChanges = inp.data
        for u in tc.deleted:
            self.data.changed[u] = None
        for tr in tc.new_or_updated():
            self.data.changed[tr.row.uuid] = tr.row
        return HANDLED_UPDATED if tc else HANDLED_UNCHANGED

    def _template_vars(self, node: Node, inp: Node) -> Handled:
        if not inp.data.changed:
            return HANDLED_UNCHANGED
        before = len(self.data.changed)
        for u, lb in self.tables("Load_Balancer").items():
            if _is_template(lb):
                self.data.changed.setdefault(u, lb)
        return self._result(before)

    def _runtime_data(self, node: Node, inp: Node) -> Handled:
        rt = self.st.rt
        if not rt.tracked:
            return UNHANDLED
        new_dps = {tdp.datapath.uuid for tdp in rt.tracked_dps.dps.values()
                   if tdp.type is TrackedType.NEW}
        if not new_dps:
            return HANDLED_UNCHANGED
        before = len(self.data.changed)
        for u, lb in self.tables("Load_Balancer").items():
            if _on_datapaths(lb, new_dps):
                self.data.changed.setdefault(u, lb)
        return self._result(before)
