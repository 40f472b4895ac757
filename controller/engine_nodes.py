"""Run functions and change handlers of the agent's own engine nodes.

Design note
-----------
:func:`agent_nodes` gives the implementations (``controller.engine.EngineNode``:
``data``, ``run``, ``handlers``, ``clear_tracked``) of the agent's own nodes
declared in ``controller/engine_graph.py``: the state leaves and
``if_status_mgr``, ``runtime_data``, ``ct_zones``, (from
``controller.lflow_inputs``) ``addr_sets`` and ``port_groups``, and the
nodes of ``controller.nodes`` (one module each).  They read the
per-iteration inputs from an :class:`AgentState` that the daemon refreshes
before every engine run (rows read from the IDLs, transaction availability,
...); node data (runtime data, ct zones, the if-status manager) lives in the
state and persists across iterations.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from controller.bfd import active_tunnels
from controller.binding import BindingCtx, Binder, RuntimeData, binding_run
from controller.binding_incremental import (handle_ovs_interface_changes,
                                            handle_port_binding_changes, retry_postponed)
from controller.coverage import COVERAGE
from controller.ct_zones import CtZones, requested_snat_zone, snat_key
from controller.engine import (HANDLED_UNCHANGED, HANDLED_UPDATED, UNHANDLED, EngineNode,
                               Handled, HandlerFn, Node)
from controller.if_status import IfState, IfStatusMgr
from controller.indexes import SbIndexes
from controller.lflow_inputs import AddrSetsNode, PortGroupsNode, Tables
from controller.local_data import TrackedType
from controller.nodes.dhcp_options import DhcpOptionsNode
from controller.nodes.lb_data import LbDataNode
from controller.nodes.non_vif_data import NonVifDataNode
from controller.nodes.northd_options import NorthdOptionsNode
from controller.nodes.ovs_interface_shadow import OvsInterfaceShadowNode
from controller.nodes.template_vars import TemplateVarsNode
from controller.tracking import TableChanges


class AgentState:
    """Inputs of one iteration plus the long-lived node data."""

    def __init__(self, if_mgr: IfStatusMgr, zone_range: tuple[int, int] = (1, 65535)) -> None:
        self.if_mgr = if_mgr
        self.rt = RuntimeData()
        self.ct = CtZones(zone_range)
        self.idx = SbIndexes()
        self.chassis: Any | None = None
        self.br_int: Any | None = None
        self.pb_rows: Any = {}
        self.sb_readonly = True
        self.ovs_readonly = True
        self.ofctrl_connected = False
        self.bridge_mappings: dict[str, str] = {}
        self.now_ms = 0
        self.geneve_field: str | None = None
        # (dp key, port key) of the ports pinctrl activated (RARP strategy).
        self.activated_ports: frozenset[tuple[int, int]] = frozenset()
        self.starting_up = False
        # state-leaf memory
        self._last_geneve: str | None = None
        self._last_ofctrl_connected: bool | None = None
        self._last_sb_readonly = True
        self._last_activated: frozenset[tuple[int, int]] = frozenset()

    def binding_ctx(self, with_tunnels: bool = False) -> BindingCtx:
        # BFD-derived tunnel liveness only counts while OpenFlow is up (23.03);
        # only a full binding pass reads it (as binding_run in C).
        tunnels = active_tunnels(self.br_int) if with_tunnels and self.ofctrl_connected \
            else set()
        return BindingCtx(self.chassis, self.idx, self.pb_rows, self.br_int, self.sb_readonly,
                          self.ovs_readonly, self.if_mgr, self.bridge_mappings, self.now_ms,
                          tunnels)

    def binding_view(self) -> Binder:
        return Binder(self.binding_ctx(), self.rt, track=False)

    # -- state leaves ----------------------------------------------------
    def run_ofctrl_is_connected(self, node: Node) -> bool:
        node.data = self.ofctrl_connected
        changed = self._last_ofctrl_connected is not None and \
            self._last_ofctrl_connected != self.ofctrl_connected
        self._last_ofctrl_connected = self.ofctrl_connected
        return changed

    def run_sb_ro(self, node: Node) -> bool:
        node.data = self.sb_readonly
        became_rw = self._last_sb_readonly and not self.sb_readonly
        self._last_sb_readonly = self.sb_readonly
        return became_rw

    def run_mff_ovn_geneve(self, node: Node) -> bool:
        node.data = self.geneve_field
        changed = self.geneve_field != self._last_geneve
        self._last_geneve = self.geneve_field
        return changed

    def run_activated_ports(self, node: Node) -> bool:
        """Data: the ports activated since the last run (C's en_activated_ports)."""
        new = self.activated_ports - self._last_activated
        self._last_activated = self.activated_ports
        node.data = new
        return bool(new)

    def run_postponed_ports(self, node: Node) -> bool:
        node.data = self.rt.postponed
        return bool(self.rt.postponed)


def _changes(inp: Node) -> TableChanges:
    data: TableChanges = inp.data
    return data


class StateLeaf:
    """A leaf node over one piece of agent state (no inputs, no handlers)."""

    handlers: Mapping[str, HandlerFn] = {}

    def __init__(self, run: Callable[[Node], bool]) -> None:
        self._run = run
        self.data: Any = None

    def run(self, node: Node) -> bool:
        changed = self._run(node)
        self.data = node.data
        return changed

    def clear_tracked(self) -> None:
        return None


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


class RuntimeDataNode:
    """``runtime_data``: bindings, local datapaths, related ports (binding.c)."""

    def __init__(self, st: AgentState) -> None:
        self.st = st
        self.data: Any = st.rt

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"sb_datapath_binding": self._sb_datapath_binding,
                "sb_port_binding": self._sb_port_binding,
                "postponed_ports": self._postponed_ports,
                "sb_ro": self._sb_ro,
                "ovs_interface_shadow": self._ovs_interface}

    def clear_tracked(self) -> None:
        self.st.rt.clear_tracked()

    def run(self, node: Node) -> bool:
        COVERAGE.inc("binding_recompute")
        binding_run(self.st.binding_ctx(with_tunnels=True), self.st.rt)
        node.data = self.st.rt
        return True

    def _result(self, ok: bool) -> Handled:
        if not ok:
            return UNHANDLED
        rt = self.st.rt
        if rt.tracked_dps or rt.local_lports_changed or rt.related_lports_changed:
            return HANDLED_UPDATED
        return HANDLED_UNCHANGED

    def _sb_datapath_binding(self, node: Node, inp: Node) -> Handled:
        rt = self.st.rt
        for u in _changes(inp).deleted:
            if u in rt.local_datapaths:
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


def sb_chassis_handler(node: Node, inp: Node) -> Handled:
    """Chassis input of both flow outputs: a chassis that appears or goes
    away recomputes; updates of existing rows need nothing here (what the
    flows read of them comes through runtime_data, which recomputes on any
    Chassis change)."""
    tc = _changes(inp)
    return UNHANDLED if tc.created or tc.deleted else HANDLED_UNCHANGED


def agent_nodes(st: AgentState, tables: Tables) -> dict[str, EngineNode]:
    """The agent's own nodes of the graph: state leaves and computed nodes
    (the flow output nodes live in ``controller.lflow_output``/``pflow_output``);
    `tables` gives an SB table's rows by UUID."""
    return {
        "ofctrl_is_connected": StateLeaf(st.run_ofctrl_is_connected),
        "sb_ro": StateLeaf(st.run_sb_ro),
        "postponed_ports": StateLeaf(st.run_postponed_ports),
        "mff_ovn_geneve": StateLeaf(st.run_mff_ovn_geneve),
        "activated_ports": StateLeaf(st.run_activated_ports),
        "northd_options": NorthdOptionsNode(tables),
        "dhcp_options": DhcpOptionsNode(tables),
        "ovs_interface_shadow": OvsInterfaceShadowNode(),
        "if_status_mgr": IfStatusMgrNode(st),
        "runtime_data": RuntimeDataNode(st),
        "ct_zones": CtZonesNode(st),
        "addr_sets": AddrSetsNode(tables),
        "port_groups": PortGroupsNode(st, tables),
        "template_vars": TemplateVarsNode(st, tables),
        "non_vif_data": NonVifDataNode(st),
        "lb_data": LbDataNode(st, tables),
    }
