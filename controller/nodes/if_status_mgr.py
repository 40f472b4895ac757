"""The ``if_status_mgr`` engine node (C's en_if_status_mgr): the interface
state manager of the claimed VIFs, whose MTUs the node follows.

Design note
-----------
The manager (``controller.binding.if_status.IfStatusMgr``) lives in the agent state
and outlives recomputes; this node's Interface handler records the VIFs
whose MTU moved (``mtu_changed``, None after a recompute: any may have).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from controller.engine.core import HANDLED_UNCHANGED, HANDLED_UPDATED, Handled, HandlerFn, Node
from controller.ovsdb.tracking import TableChanges

if TYPE_CHECKING:
    from controller.engine.agent_nodes import AgentState


def _changes(inp: Node) -> TableChanges:
    data: TableChanges = inp.data
    return data


class IfStatusMgrNode:
    """``if_status_mgr``: interface MTUs of the claimed VIFs."""

    def __init__(self, st: AgentState) -> None:
        self.st = st
        self.data: Any = st.if_mgr

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"ovs_interface": self._ovs_interface}

    def run(self, node: Node) -> bool:
        node.data = self.st.if_mgr
        self.st.if_mgr.mtu_changed = None
        return True

    def clear_tracked(self) -> None:
        self.st.if_mgr.mtu_changed = set()

    def _ovs_interface(self, node: Node, inp: Node) -> Handled:
        mgr = self.st.if_mgr
        updated = False
        for tr in _changes(inp).new_or_updated():
            iface_id = tr.row.external_ids.get("iface-id")
            i = mgr.ifaces.get(iface_id) if iface_id else None
            if i is None:
                continue
            mtu = tr.row.mtu
            mtu_v = int(mtu[0]) if isinstance(mtu, list) and mtu else 0
            if i.mtu != mtu_v:
                i.mtu = mtu_v
                if mgr.mtu_changed is not None:
                    mgr.mtu_changed.add(i.id)
                updated = True
        return HANDLED_UPDATED if updated else HANDLED_UNCHANGED
