"""The ``port_groups`` engine node (C's en_port_groups): one constant set
per Port_Group row, of its member ports related to this chassis.

Design note
-----------
See ``controller.nodes.addr_sets`` (the data, ``NamedSets``, and how the
sets follow their rows and ``runtime_data``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from controller.engine.core import (
    HANDLED_UNCHANGED,
    HANDLED_UPDATED,
    UNHANDLED,
    Handled,
    HandlerFn,
    Node,
)
from controller.lflow.expr.nodes import const_set_from_strings
from controller.nodes.addr_sets import NamedSets, Tables, _names
from controller.ovsdb.tracking import TableChanges

if TYPE_CHECKING:
    from controller.engine.agent_nodes import AgentState


class PortGroupsNode:
    def __init__(self, st: "AgentState", tables: Tables) -> None:
        self.st = st
        self.tables = tables
        self.data = NamedSets()
        self._members: dict[str, tuple[str, ...]] = {}   # local members by group

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"sb_port_group": self._sb_port_group, "runtime_data": self._runtime_data}

    def clear_tracked(self) -> None:
        self.data.changed.clear()

    def _set(self, name: str, ports: Any, related: set[str]) -> None:
        members = tuple(p for p in ports if p in related)
        self._members[name] = members
        self.data.sets[name] = const_set_from_strings(list(members))

    def _forget(self, name: str) -> None:
        self.data.sets.pop(name, None)
        self._members.pop(name, None)

    def run(self, node: Node) -> bool:
        self.data.sets = {}
        self._members = {}
        related = set(self.st.rt.related_lports)
        for pg in self.tables("Port_Group").values():
            self._set(pg.name, pg.ports, related)
        return True

    def _sb_port_group(self, node: Node, inp: Node) -> Handled:
        tc: TableChanges = inp.data
        changed = self.data.changed
        related = set(self.st.rt.related_lports)
        for tr in tc.deleted.values():
            self._forget(tr.row.name)
            changed.add(tr.row.name)
        for tr in tc.new_or_updated():
            for name in _names(tr):
                self._forget(name)
                changed.add(name)
        for tr in tc.new_or_updated():
            self._set(tr.row.name, tr.row.ports, related)
        return HANDLED_UPDATED if changed else HANDLED_UNCHANGED

    def _runtime_data(self, node: Node, inp: Node) -> Handled:
        rt = self.st.rt
        if not rt.tracked:
            return UNHANDLED
        names: set[str] = set()
        for tdp in rt.tracked_dps.dps.values():
            names.update(tdp.lports)
        related = set(rt.related_lports)
        changed: set[str] = set()
        for pg in self.tables("Port_Group").values():
            ports = pg.ports
            if tuple(p for p in ports if p in related) != self._members.get(pg.name) or \
                    (names and names.intersection(ports)):
                self._set(pg.name, ports, related)
                changed.add(pg.name)
        if not changed:
            return HANDLED_UNCHANGED
        self.data.changed |= changed
        return HANDLED_UPDATED
