"""The ``runtime_data`` engine node (C's en_runtime_data): port bindings,
local datapaths and related ports (``controller.binding.claim``).

Design note
-----------
Its data (``binding.RuntimeData``) lives in the agent state.  ``run`` is a
full binding pass; the handlers follow Port_Binding changes, postponed
claims, the SB becoming writable, Interface changes (from
``ovs_interface_shadow``) and other chassis' Chassis rows incrementally (``controller.binding.incremental``)
and report UPDATED when datapaths or local/related ports were tracked.

Sliced claims (issue 15): a full pass spends at most ``RuntimeData.slice_ms``
of CPU claiming VIFs and queues the rest (``controller.binding.claim``);
while the queue is not empty the node is pending, the engine calls
:meth:`RuntimeDataNode.resume` once per iteration (not in the one that
recomputed), which claims the next slice as tracked changes (with the SB
read-only, as any claim then: the if-status manager writes it once the SB
is writable), and the daemon installs no flows (nothing computed from a
half-claimed state reaches the switch) and wakes at once for the next slice.
Waiting for a writable SB instead was measured to hold the claims (and so
the first install) for as long as a large SB update delays the reply to
our transaction: 40 iterations at a seed-500 cold start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from controller.binding.claim import binding_run
from controller.binding.if_status import IfState
from controller.binding.incremental import (
    claim_queued,
    handle_ovs_interface_changes,
    handle_port_binding_changes,
    retry_postponed,
)
from controller.diag.coverage import COVERAGE
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


class RuntimeDataNode:
    """``runtime_data``: bindings, local datapaths, related ports (binding.c)."""

    def __init__(self, st: AgentState) -> None:
        self.st = st
        self.data: Any = st.rt
        self._recomputed = False    # run() in this engine run: no slice after it

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"sb_chassis": self._sb_chassis,
                "sb_datapath_binding": self._sb_datapath_binding,
                "sb_port_binding": self._sb_port_binding,
                "postponed_ports": self._postponed_ports,
                "sb_ro": self._sb_ro,
                "ovs_interface_shadow": self._ovs_interface}

    def clear_tracked(self) -> None:
        self.st.rt.clear_tracked()
        self._recomputed = False

    def run(self, node: Node) -> bool:
        COVERAGE.inc("binding_recompute")
        binding_run(self.st.binding_ctx(with_tunnels=True), self.st.rt)
        node.data = self.st.rt
        self._recomputed = True
        return True

    def pending(self) -> bool:
        return bool(self.st.rt.claim_queue)

    def resume(self, node: Node) -> bool:
        """Claim the next slice of queued VIFs; True when that changed the
        data (tracked, as an incremental claim)."""
        if self._recomputed:
            return False
        claim_queued(self.st.binding_ctx(), self.st.rt)
        return self._result(True) is HANDLED_UPDATED

    def _result(self, ok: bool) -> Handled:
        if not ok:
            return UNHANDLED
        rt = self.st.rt
        if rt.tracked_dps or rt.local_lports_changed or rt.related_lports_changed:
            return HANDLED_UPDATED
        return HANDLED_UNCHANGED

    def _sb_chassis(self, node: Node, inp: Node) -> Handled:
        """Other chassis appearing or changing (C: recompute on any change).

        A binding pass reads other chassis only through references (a
        port's chassis, requested or HA chassis) and their names; a new
        row cannot change how an existing reference resolves (a reference
        to a row that does not exist cannot be stored), and an update of
        another chassis (its encaps, other_config) changes nothing it
        computes.  So only a change of our own row, a deleted row (its
        references now dangle) or a BFD-derived tunnel set that moved since
        the last pass (which a full pass would pick up) recompute.  At
        scale this keeps each joining chassis from costing every agent a
        full recompute of runtime_data and, through it, of the lflows."""
        tc = _changes(inp)
        me = self.st.chassis
        if me is None or tc.deleted or me.uuid in tc.created or me.uuid in tc.updated:
            return UNHANDLED
        tunnels = self.st.binding_ctx(with_tunnels=True).active_tunnels
        if tunnels != self.st.rt.active_tunnels:
            return UNHANDLED
        return HANDLED_UNCHANGED

    def _sb_datapath_binding(self, node: Node, inp: Node) -> Handled:
        """A local datapath deleted recomputes (as C); so does one whose
        tunnel key changed (northd moves it for a requested-tnl-key), which
        23.03 does not notice: every flow of the datapath carries the key."""
        rt = self.st.rt
        tc = _changes(inp)
        for u in tc.deleted:
            if u in rt.local_datapaths:
                return UNHANDLED
        for u, tr in tc.updated.items():
            if "tunnel_key" in tr.old and u in rt.local_datapaths:
                return UNHANDLED
        return HANDLED_UNCHANGED

    def _sb_port_binding(self, node: Node, inp: Node) -> Handled:
        return self._result(handle_port_binding_changes(self.st.binding_ctx(), self.st.rt,
                                                        _changes(inp)))

    def _postponed_ports(self, node: Node, inp: Node) -> Handled:
        return self._result(retry_postponed(self.st.binding_ctx(), self.st.rt))

    def _sb_ro(self, node: Node, inp: Node) -> Handled:
        """SB became writable: write the claims that had to wait."""
        view = self.st.binding_view()
        mgr = self.st.if_mgr
        for iface_id, i in mgr.ifaces.items():
            if i.state is IfState.CLAIMED and not view.pb_chassis_is_set(iface_id,
                                                                         self.st.chassis):
                view.set_pb_chassis(iface_id, self.st.chassis, True, i.additional)
        return HANDLED_UNCHANGED

    def _ovs_interface(self, node: Node, inp: Node) -> Handled:
        return self._result(handle_ovs_interface_changes(self.st.binding_ctx(), self.st.rt,
                                                         _changes(inp)))
