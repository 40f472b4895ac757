"""The ``ovs_interface_shadow`` engine node: the Interface changes that
``runtime_data`` handles.

Design note
-----------
C's en_ovs_interface_shadow keeps a copy of each interface's previous
``external_ids`` so runtime_data can tell what an interface was bound to
before a change.  Our change tracker already keeps the old values of every
changed column (``TrackedRow.old``), so this node's data is the tracked
Interface changes of the iteration, passed through: its handler reports
UPDATED exactly when OVS_interface did.
"""

from __future__ import annotations

from typing import Mapping

from controller.engine.core import HANDLED_UNCHANGED, HANDLED_UPDATED, Handled, HandlerFn, Node
from controller.ovsdb.tracking import TableChanges


class OvsInterfaceShadowNode:
    def __init__(self) -> None:
        self.data = TableChanges("Interface")

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"ovs_interface": self._ovs_interface}

    def clear_tracked(self) -> None:
        return None

    def _take(self, node: Node) -> bool:
        tc: TableChanges = node.input_data("OVS_interface")
        self.data = tc
        node.data = tc
        return bool(tc)

    def run(self, node: Node) -> bool:
        self._take(node)
        return True

    def _ovs_interface(self, node: Node, inp: Node) -> Handled:
        return HANDLED_UPDATED if self._take(node) else HANDLED_UNCHANGED
