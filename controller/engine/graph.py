"""The agent's incremental-processing graph, declared as data in one place.

Design note
-----------
:data:`GRAPH` lists every node that is not an OVSDB table, with its inputs
in 23.03 order (handlers run in that order).  An input's second element is
the key of the change handler in the node implementation's ``handlers``, or
``None`` (any change of that input recomputes the node: a declared
recompute edge), or :data:`NOOP` (the change is covered by another input;
documented per edge).  OVSDB table leaves (``OVS_<table>``/``SB_<table>``,
UPDATED when a *tracked* column changed, see :data:`OVS_TRACKED_COLUMNS`)
are built here; every other node is implemented by an object following
``controller.engine.core.EngineNode`` (``data``, ``run``, ``handlers``,
``clear_tracked``): the state leaves and agent nodes of
``controller.engine.agent_nodes``, the nodes of ``controller.nodes``,
``logical_flow_output`` (``controller.nodes.logical_flow_output``),
``physical_flow_output`` (``controller.nodes.physical_flow_output``) and the root
``flow_output`` (here).  Node names and the order they sort in are the C
agent's 44 nodes (:data:`C_NODE_ORDER`), which a test checks.

:func:`build_engine` checks the graph against the implementations and raises
:class:`GraphError` for an input that is no node, a handler key the
implementation does not have, a node without implementation or an
implementation of no node, an input declared after its user, or an SB/OVS
table the trackers do not follow: nothing is silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from controller.engine.core import Engine, EngineNode, Handled, HandlerFn, Node, noop_handler
from controller.ovsdb.tracking import ChangeTracker, TableChanges

OVS_TABLE_NODES = {"OVS_open_vswitch": "Open_vSwitch", "OVS_bridge": "Bridge",
                   "OVS_qos": "QoS", "OVS_port": "Port", "OVS_interface": "Interface",
                   "OVS_flow_sample_collector_set": "Flow_Sample_Collector_Set"}
SB_TABLE_NODES = {
    "SB_sb_global": "SB_Global", "SB_chassis": "Chassis", "SB_encap": "Encap",
    "SB_address_set": "Address_Set", "SB_port_group": "Port_Group",
    "SB_multicast_group": "Multicast_Group", "SB_datapath_binding": "Datapath_Binding",
    "SB_logical_dp_group": "Logical_DP_Group", "SB_port_binding": "Port_Binding",
    "SB_mac_binding": "MAC_Binding", "SB_logical_flow": "Logical_Flow",
    "SB_dhcp_options": "DHCP_Options", "SB_dhcpv6_options": "DHCPv6_Options",
    "SB_dns": "DNS", "SB_load_balancer": "Load_Balancer", "SB_fdb": "FDB",
    "SB_meter": "Meter", "SB_static_mac_binding": "Static_MAC_Binding",
    "SB_chassis_template_var": "Chassis_Template_Var",
}
# Tables whose changes a table node reports beyond its own.  The C agent sees
# an HA_Chassis_Group change as an update of the Port_Binding rows that
# refer to it (IDL reference tracking); so do we (SbIndexes.track_references
# marks them, and the groups of an updated HA_Chassis), and the group
# changes also ride on SB_encap, whose every change recomputes
# physical_flow_output (HA bundles of other chassis' gateway ports).
SB_TABLE_ALSO: dict[str, tuple[str, ...]] = {"SB_encap": ("HA_Chassis_Group",)}
# Columns whose changes make an OVS table node UPDATED (the C agent only
# tracks these; e.g. br-int external_ids writes never trigger recomputes).
OVS_TRACKED_COLUMNS: dict[str, frozenset[str] | None] = {
    "Open_vSwitch": frozenset({"external_ids"}),
    "Bridge": frozenset({"name", "datapath_type", "fail_mode"}),
    "Port": frozenset({"name", "interfaces", "external_ids"}),
    "Interface": frozenset({"name", "external_ids", "bfd", "bfd_status", "status", "mtu",
                            "type", "options", "ofport"}),
    "Flow_Sample_Collector_Set": frozenset({"id", "bridge"}),
    "QoS": None,
}
STATE_LEAVES = ("ofctrl_is_connected", "sb_ro", "postponed_ports", "mff_ovn_geneve",
                "activated_ports")

NOOP = "noop"
Edge = tuple[str, str | None]

# node -> inputs (order matters: handlers run in this order; an input is
# declared before its users).  The nodes, their names and their inputs are
# C's (ovn-controller.c of 23.03.1), so the topological order, and with it
# ``inc-engine/show-stats``, is the same; where an edge differs from C's it
# says why.  Edges a node has beyond C's come last and only name nodes that
# an earlier input already reaches, so they never change the order.
GRAPH: dict[str, list[Edge]] = {
    **{leaf: [] for leaf in STATE_LEAVES},
    "northd_options": [("SB_sb_global", "sb_sb_global")],
    "dhcp_options": [("SB_dhcp_options", None), ("SB_dhcpv6_options", None)],
    "addr_sets": [("SB_address_set", "sb_address_set")],
    "ovs_interface_shadow": [("OVS_interface", "ovs_interface")],
    "runtime_data": [
        ("ofctrl_is_connected", None), ("OVS_open_vswitch", None), ("OVS_bridge", None),
        # C: recompute on any Chassis change; here only our own row, a
        # deleted row or moved BFD tunnels recompute (RuntimeDataNode._sb_chassis).
        ("OVS_qos", None), ("SB_chassis", "sb_chassis"),
        ("SB_datapath_binding", "sb_datapath_binding"),
        ("SB_port_binding", "sb_port_binding"),
        ("postponed_ports", "postponed_ports"),
        # sb_ro after port bindings: re-tries claims once SB is writable.
        ("sb_ro", "sb_ro"),
        # Port changes always come with the Interface changes handled below.
        ("OVS_port", NOOP),
        ("ovs_interface_shadow", "ovs_interface_shadow"),
    ],
    "port_groups": [("SB_port_group", "sb_port_group"), ("runtime_data", "runtime_data")],
    # C: SB_chassis is a recompute edge of these two; here a handler that does
    # what the (cheap, SB-read-only) recompute does, which unlike a recompute
    # is not refused while an SB transaction is in flight (an aborted run
    # forces a recompute of every node next time).
    "template_vars": [("OVS_open_vswitch", None), ("SB_chassis", "sb_chassis"),
                      ("SB_chassis_template_var", "sb_chassis_template_var")],
    "non_vif_data": [("OVS_open_vswitch", None), ("OVS_bridge", None),
                     ("SB_chassis", "sb_chassis"), ("OVS_interface", "ovs_interface")],
    "lb_data": [("SB_load_balancer", "sb_load_balancer"), ("template_vars", "template_vars"),
                ("runtime_data", "runtime_data")],
    "logical_flow_output": [
        # The one northd option (lb_hairpin_use_ct_mark) shapes LB hairpin
        # flows, which physical/ builds here: physical_flow_output reads it.
        ("northd_options", NOOP),
        ("dhcp_options", None),
        # addr_sets before runtime_data, as C (an lflow re-processed for a
        # new datapath must already see the new sets).
        ("addr_sets", "addr_sets"), ("port_groups", "port_groups"),
        ("template_vars", "template_vars"), ("runtime_data", "runtime_data"),
        # Only the chassis -> tunnel ofport map matters here (C: recompute).
        ("non_vif_data", "non_vif_data"),
        ("SB_multicast_group", "multicast_group"),
        # Only our own row appearing or going away recomputes (C: any new or
        # deleted chassis, pflow_lflow_output_sb_chassis_handler).
        ("SB_chassis", "chassis"), ("SB_port_binding", "port_binding"),
        ("OVS_open_vswitch", None), ("OVS_bridge", None),
        ("OVS_flow_sample_collector_set", None),
        # Neighbour and FDB flows are built by physical/ in this code base:
        # those tables feed physical_flow_output.
        ("SB_mac_binding", NOOP), ("SB_static_mac_binding", NOOP),
        ("SB_logical_flow", "logical_flow"),
        # An updated DP group marks the lflows using it updated (reference
        # tracking, SbIndexes.track_references): SB_logical_flow has them.
        ("SB_logical_dp_group", NOOP),
        ("SB_dns", None),
        # LB hairpin flows: physical_flow_output (see above).
        ("lb_data", NOOP),
        ("SB_fdb", NOOP),
        # Controller meters are looked up while compiling (C: a handler).
        ("SB_meter", None),
    ],
    "ct_zones": [
        ("OVS_open_vswitch", None), ("OVS_bridge", None),
        ("SB_datapath_binding", "sb_datapath_binding"),
        ("runtime_data", "runtime_data"),
    ],
    "if_status_mgr": [("OVS_interface", "ovs_interface")],
    "physical_flow_output": [
        # Patch ofport moves rebuild their ports, tunnel moves the flows of
        # the chassis whose tunnels moved (C: recompute).
        ("non_vif_data", "non_vif_data"),
        ("ct_zones", "ct_zones"),
        # Remote chassis: their flows (C: new/deleted chassis recompute).
        ("SB_chassis", "chassis"),
        ("if_status_mgr", "if_status_mgr"), ("SB_port_binding", "port_binding"),
        ("SB_multicast_group", "multicast_group"),
        # Datapath changes that matter come through runtime_data.
        ("SB_datapath_binding", NOOP),
        ("activated_ports", "activated_ports"),
        ("runtime_data", "runtime_data"),
        # SB_encap also reports HA_Chassis_Group changes (see SB_TABLE_ALSO),
        # which recompute; Encap rows rebuild the ports using them (C: recompute).
        ("SB_encap", "encap"), ("mff_ovn_geneve", None),
        ("OVS_open_vswitch", None), ("OVS_bridge", None),
        ("OVS_flow_sample_collector_set", "flow_sample_collector_set"),
        ("SB_sb_global", "sb_global"),
        # Beyond C's inputs: physical/ also builds the neighbour, FDB and LB
        # hairpin flows that lflow.c makes in the C agent, and checks bound
        # VIFs moving to another ofport.
        ("OVS_interface", "ovs_interface"), ("northd_options", "northd_options"),
        # Template variables shape only LB hairpin flows: lb_data names them.
        ("template_vars", NOOP), ("lb_data", "lb_data"),
        ("SB_mac_binding", "mac_binding"), ("SB_static_mac_binding", "static_mac_binding"),
        ("SB_fdb", "fdb"),
    ],
    # The root: ofctrl takes both desired tables once they are computed.
    "flow_output": [("logical_flow_output", "logical_flow_output"),
                    ("physical_flow_output", "physical_flow_output")],
}
FLOW_OUTPUT_NODES = ("logical_flow_output", "physical_flow_output")
ROOT = "flow_output"


# ``inc-engine/show-stats`` of ovn-controller 23.03.1: its nodes in order.
C_NODE_ORDER = (
    "SB_sb_global", "northd_options", "SB_dhcp_options", "SB_dhcpv6_options",
    "dhcp_options", "SB_address_set", "addr_sets", "SB_port_group",
    "ofctrl_is_connected", "OVS_open_vswitch", "OVS_bridge", "OVS_qos", "SB_chassis",
    "SB_datapath_binding", "SB_port_binding", "postponed_ports", "sb_ro", "OVS_port",
    "OVS_interface", "ovs_interface_shadow", "runtime_data", "port_groups",
    "SB_chassis_template_var", "template_vars", "non_vif_data", "SB_multicast_group",
    "OVS_flow_sample_collector_set", "SB_mac_binding", "SB_static_mac_binding",
    "SB_logical_flow", "SB_logical_dp_group", "SB_dns", "SB_load_balancer", "lb_data",
    "SB_fdb", "SB_meter", "logical_flow_output", "ct_zones", "if_status_mgr",
    "activated_ports", "SB_encap", "mff_ovn_geneve", "physical_flow_output", "flow_output",
)


class GraphError(ValueError):
    """The declared graph and the node implementations disagree."""


class TableNode(Node):
    """Leaf over one tracked table: UPDATED iff a tracked column changed."""

    def __init__(self, name: str, tracker: ChangeTracker, table: str,
                 columns: frozenset[str] | None, also: tuple[str, ...] = ()) -> None:
        super().__init__(name, self._run_table)
        self.tracker = tracker
        self.table = table
        self.columns = columns
        self.also = also          # tables whose any change also updates the node
        self.data: TableChanges = tracker.tables.get(table) or TableChanges(table)

    def _run_table(self, node: Node) -> bool:
        tc = self.tracker.tables.get(self.table)
        if tc is None:
            return False
        self.data = tc
        if any(self.tracker.tables.get(t) for t in self.also):
            return True
        if not tc:
            return False
        cols = self.columns
        if cols is None or tc.created or tc.deleted:
            return True
        return any(not tr.old or cols.intersection(tr.old) for tr in tc.updated.values())


class FlowOutputNode:
    """The root ``flow_output``: both flow tables computed means done."""

    data: Any = None

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"logical_flow_output": _mark_updated, "physical_flow_output": _mark_updated}

    def run(self, node: Node) -> bool:
        return True

    def clear_tracked(self) -> None:
        return None


def _mark_updated(node: Node, inp: Node) -> Handled:
    return Handled.UPDATED


@dataclass
class GraphParts:
    ovs_tracker: ChangeTracker
    sb_tracker: ChangeTracker
    nodes: Mapping[str, EngineNode]     # every GRAPH node but the root


def _table_nodes(parts: GraphParts) -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    for name, table in OVS_TABLE_NODES.items():
        if table not in parts.ovs_tracker.tables:
            raise GraphError(f"{name}: table {table} is not tracked")
        nodes[name] = TableNode(name, parts.ovs_tracker, table, OVS_TRACKED_COLUMNS.get(table))
    for name, table in SB_TABLE_NODES.items():
        also = SB_TABLE_ALSO.get(name, ())
        for t in (table, *also):
            if t not in parts.sb_tracker.tables:
                raise GraphError(f"{name}: table {t} is not tracked")
        nodes[name] = TableNode(name, parts.sb_tracker, table, None, also)
    return nodes


def _handler(node: str, inp: str, key: str | None, impl: EngineNode) -> HandlerFn | None:
    if key is None:
        return None
    if key == NOOP:
        return noop_handler
    handler = impl.handlers.get(key)
    if handler is None:
        raise GraphError(f"{node}: no handler {key!r} for input {inp}")
    return handler


def build_engine(parts: GraphParts, graph: Mapping[str, list[Edge]] | None = None) -> Engine:
    """The engine of `graph` (default :data:`GRAPH`), checked; see the design note."""
    graph = GRAPH if graph is None else graph
    impls: dict[str, EngineNode] = {ROOT: FlowOutputNode(), **parts.nodes}
    missing = [n for n in graph if n not in impls]
    unknown = [n for n in impls if n not in graph]
    if missing or unknown:
        raise GraphError(f"nodes without implementation: {missing}; "
                         f"implementations of no node: {unknown}")
    nodes = _table_nodes(parts)
    for name, edges in graph.items():
        if name in nodes:
            raise GraphError(f"{name} is a table node")
        impl = impls[name]
        node = Node(name, impl.run, data=impl.data, clear_tracked=impl.clear_tracked,
                    pending=getattr(impl, "pending", None), resume=getattr(impl, "resume", None))
        for inp, key in edges:
            source = nodes.get(inp)
            if source is None:
                where = "declared after it" if inp in graph else "no such node"
                raise GraphError(f"{name}: input {inp}: {where}")
            node.add_input(source, _handler(name, inp, key, impl))
        nodes[name] = node
    if ROOT not in nodes:
        raise GraphError(f"no root node {ROOT}")
    return Engine(nodes[ROOT])
