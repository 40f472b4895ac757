"""The agent state the engine nodes read, its state leaves, and the map of
node implementations.

Design note
-----------
:func:`agent_nodes` gives the implementations (``controller.engine.core.EngineNode``:
``data``, ``run``, ``handlers``, ``clear_tracked``) of the agent's own nodes
declared in ``controller/engine/graph.py``: the state leaves (here:
``ofctrl_is_connected``, ``sb_ro``, ``postponed_ports``, ``mff_ovn_geneve``,
``activated_ports``) and the computed nodes of ``controller.nodes`` (one
module each; the flow outputs are ``controller.nodes.logical_flow_output`` and
``controller.nodes.physical_flow_output``).  They read the
per-iteration inputs from an :class:`AgentState` that the daemon refreshes
before every engine run (rows read from the IDLs, transaction availability,
...); node data (runtime data, ct zones, the if-status manager) lives in the
state and persists across iterations.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from controller.binding.claim import Binder, BindingCtx, RuntimeData
from controller.binding.ct_zones import CtZones
from controller.binding.if_status import IfStatusMgr
from controller.chassis.bfd import active_tunnels
from controller.engine.core import (
    HANDLED_UNCHANGED,
    UNHANDLED,
    EngineNode,
    Handled,
    HandlerFn,
    Node,
)
from controller.nodes.addr_sets import AddrSetsNode, Tables
from controller.nodes.ct_zones import CtZonesNode
from controller.nodes.dhcp_options import DhcpOptionsNode
from controller.nodes.if_status_mgr import IfStatusMgrNode
from controller.nodes.lb_data import LbDataNode
from controller.nodes.non_vif_data import NonVifDataNode
from controller.nodes.northd_options import NorthdOptionsNode
from controller.nodes.ovs_interface_shadow import OvsInterfaceShadowNode
from controller.nodes.port_groups import PortGroupsNode
from controller.nodes.runtime_data import RuntimeDataNode
from controller.nodes.template_vars import TemplateVarsNode
from controller.ovsdb.indexes import SbIndexes
from controller.ovsdb.tracking import TableChanges


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


def lflow_chassis_handler(st: AgentState) -> HandlerFn:
    """Chassis input of logical_flow_output: only our own row appearing or
    going away recomputes.  No logical flow reads another chassis' row (what
    they ask of remote chassis: where a port is bound, a reference of its
    Port_Binding; a chassis' tunnel ofport, non_vif_data), so other chassis
    joining or leaving change nothing here.  (C recomputes on any chassis
    appearing or going away, pflow_lflow_output_sb_chassis_handler: at
    scale, every agent recomputed its lflows for each chassis joining.)"""
    def handler(node: Node, inp: Node) -> Handled:
        tc = _changes(inp)
        me = st.chassis
        for u, tr in (*tc.created.items(), *tc.deleted.items()):
            if me is None or u == me.uuid or getattr(tr.row, "name", None) == me.name:
                return UNHANDLED
        return HANDLED_UNCHANGED
    return handler


def agent_nodes(st: AgentState, tables: Tables) -> dict[str, EngineNode]:
    """The agent's own nodes of the graph: state leaves and computed nodes
    (the flow output nodes live in ``controller.nodes.logical_flow_output``/``pflow_output``);
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
