"""The ``addr_sets`` engine node (C's en_addr_sets) and the data both it and
``port_groups`` (``controller.nodes.port_groups``) keep: the constant sets
the logical-flow compiler expands ``$name`` and ``@name`` into, kept up to
date incrementally.

Design note
-----------
Each node's data holds the sets by name and, for the current iteration, the
names whose set changed (``changed``, forgotten by ``clear_tracked``);
``logical_flow_output`` re-processes the logical flows that used those names.

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

from typing import Any, Callable, Mapping

from controller.engine.core import HANDLED_UNCHANGED, HANDLED_UPDATED, Handled, HandlerFn, Node
from controller.lflow.expr.nodes import ConstantSet, const_set_from_integers
from controller.ovsdb.tracking import TableChanges

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
