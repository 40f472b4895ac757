"""The ``addr_sets`` and ``port_groups`` engine nodes (C's en_addr_sets and
en_port_groups): the constant sets the logical-flow compiler expands
``$name`` and ``@name`` into, kept up to date incrementally.

Design note
-----------
Each node's data holds the sets by name and, for the current iteration, the
names whose set changed (``changed``, forgotten by ``clear_tracked``);
``lflow_output`` re-processes the logical flows that used those names.

* ``addr_sets``: one integer set per Address_Set row; a tracked row change
  rebuilds only that set (a renamed row changes its old and new name).
* ``port_groups``: one string set per Port_Group row, holding only the
  member ports related to this chassis (``runtime_data``'s related ports, as
  the C agent filters them).  A Port_Group row change rebuilds that group; a
  handled ``runtime_data`` change rebuilds every group's local set (as cheap
  as the per-run rebuild it replaces) and reports the groups whose local set
  changed or that list a port whose binding changed; a runtime_data
  recompute recomputes the node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from controller.engine import (HANDLED_UNCHANGED, HANDLED_UPDATED, UNHANDLED, Handled,
                               HandlerFn, Node)
from controller.lflow.expr_nodes import (ConstantSet, const_set_from_integers,
                                         const_set_from_strings)
from controller.tracking import TableChanges

if TYPE_CHECKING:
    from controller.engine_nodes import AgentState

Tables = Callable[[str], Mapping[Any, Any]]


class NamedSets:
    """Sets by name, and the names changed in this iteration."""

    __slots__ = ("sets", "changed")

    def __init__(self) -> None:
        self.sets: dict[str, ConstantSet] = {}
        self.changed: set[str] = set()


def _names(tr: Any) -> list[str]:
    """The row's name, and its former name if it was renamed."""
    names = [tr.row.name]
    if "name" in tr.old:
        old = tr.old_value("name")
        if isinstance(old, str) and old != tr.row.name:
            names.append(old)
    return names


class AddrSetsNode:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.data = NamedSets()

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"sb_address_set": self._sb_address_set}

    def clear_tracked(self) -> None:
        self.data.changed.clear()

    def run(self, node: Node) -> bool:
        self.data.sets = {a.name: const_set_from_integers(list(a.addresses))
                          for a in self.tables("Address_Set").values()}
        return True

    def _sb_address_set(self, node: Node, inp: Node) -> Handled:
        tc: TableChanges = inp.data
        sets, changed = self.data.sets, self.data.changed
        for tr in tc.deleted.values():
            sets.pop(tr.row.name, None)
            changed.add(tr.row.name)
        for tr in tc.new_or_updated():
            for name in _names(tr):
                sets.pop(name, None)
                changed.add(name)
        for tr in tc.new_or_updated():
            sets[tr.row.name] = const_set_from_integers(list(tr.row.addresses))
        return HANDLED_UPDATED if changed else HANDLED_UNCHANGED


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
