"""The agent's incremental-processing graph, declared as data in one place.

Design note
-----------
:data:`GRAPH` lists every computed node with its inputs in 23.03 order; an
input's second element names the change handler (a method of the node
implementation) or is ``None`` ("any change recomputes this node") or
``"noop"`` (the change is covered by another input: documented per edge).
Leaf nodes are OVSDB tables (``OVS_<table>``/``SB_<table>``, UPDATED when a
*tracked* column changed, see :data:`OVS_TRACKED_COLUMNS`) plus a few state
leaves (``ofctrl_is_connected``, ``sb_ro``, ``postponed_ports``).

``lflow_output`` and ``pflow_output`` are declared here with their full
23.03 input lists but are only instantiated when a provider is passed to
:func:`build_engine` (see :class:`FlowOutputProvider`); until then they are
absent, and the root ``flow_output`` takes the agent nodes directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

from controller.engine import Engine, Handled, HandlerFn, Node, noop_handler
from controller.tracking import ChangeTracker, TableChanges

OVS_TABLE_NODES = {"OVS_open_vswitch": "Open_vSwitch", "OVS_bridge": "Bridge",
                   "OVS_port": "Port", "OVS_interface": "Interface",
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
    "SB_ha_chassis_group": "HA_Chassis_Group",
}
# Columns whose changes make an OVS table node UPDATED (the C agent only
# tracks these; e.g. br-int external_ids writes never trigger recomputes).
OVS_TRACKED_COLUMNS: dict[str, frozenset[str] | None] = {
    "Open_vSwitch": frozenset({"external_ids"}),
    "Bridge": frozenset({"name", "datapath_type", "fail_mode"}),
    "Port": frozenset({"name", "interfaces", "external_ids"}),
    "Interface": frozenset({"name", "external_ids", "bfd", "bfd_status", "status", "mtu",
                            "type", "options", "ofport"}),
    "Flow_Sample_Collector_Set": frozenset({"id", "bridge"}),
}
STATE_LEAVES = ("ofctrl_is_connected", "sb_ro", "postponed_ports", "mff_ovn_geneve")

Edge = tuple[str, str | None]

# node -> inputs (order matters: handlers run in this order).
GRAPH: dict[str, list[Edge]] = {
    "if_status_mgr": [("OVS_interface", "if_status_mgr_ovs_interface_handler")],
    "runtime_data": [
        ("ofctrl_is_connected", None), ("OVS_open_vswitch", None), ("OVS_bridge", None),
        ("SB_chassis", None),
        ("SB_datapath_binding", "runtime_data_sb_datapath_binding_handler"),
        ("SB_port_binding", "runtime_data_sb_port_binding_handler"),
        ("postponed_ports", "runtime_data_postponed_ports_handler"),
        # sb_ro after port bindings: re-tries claims once SB is writable.
        ("sb_ro", "runtime_data_sb_ro_handler"),
        # Port changes always come with the Interface changes handled below.
        ("OVS_port", "noop"),
        ("OVS_interface", "runtime_data_ovs_interface_handler"),
    ],
    "ct_zones": [
        ("OVS_open_vswitch", None), ("OVS_bridge", None),
        ("SB_datapath_binding", "ct_zones_datapath_binding_handler"),
        ("runtime_data", "ct_zones_runtime_data_handler"),
    ],
    # Declared for the flow providers (23.03 inputs); instantiated only with one.
    "lflow_output": [
        ("runtime_data", "runtime_data"), ("SB_multicast_group", "multicast_group"),
        ("SB_chassis", None), ("SB_port_binding", "port_binding"),
        ("OVS_open_vswitch", None), ("OVS_bridge", None),
        ("OVS_flow_sample_collector_set", None),
        ("SB_logical_flow", "logical_flow"),
        # DP groups change only together with the logical flows using them.
        ("SB_logical_dp_group", "noop"),
        ("SB_dns", None), ("SB_address_set", "address_set"), ("SB_port_group", "port_group"),
        ("SB_sb_global", "sb_global"), ("SB_dhcp_options", None), ("SB_dhcpv6_options", None),
        ("SB_chassis_template_var", None), ("SB_meter", None),
        # MAC_Binding/Static_MAC_Binding/FDB/Load_Balancer flows are built by
        # physical/ in this code base, so those tables feed pflow_output.
    ],
    "pflow_output": [
        ("ct_zones", "ct_zones"), ("SB_chassis", "chassis"),
        ("if_status_mgr", "if_status_mgr"), ("SB_port_binding", "port_binding"),
        ("SB_multicast_group", "multicast_group"),
        # Datapath changes that matter come through runtime_data.
        ("SB_datapath_binding", "noop"),
        ("runtime_data", "runtime_data"), ("SB_encap", None), ("OVS_open_vswitch", None),
        ("OVS_bridge", None), ("OVS_interface", "ovs_interface"),
        ("OVS_flow_sample_collector_set", "flow_sample_collector_set"),
        ("SB_sb_global", "sb_global"), ("SB_ha_chassis_group", None),
        ("mff_ovn_geneve", None),
        # physical/ also builds the neighbour, FDB and LB hairpin flows that
        # lflow.c makes in the C agent, so those tables feed this node.
        ("SB_mac_binding", "mac_binding"), ("SB_static_mac_binding", "static_mac_binding"),
        ("SB_fdb", "fdb"), ("SB_load_balancer", "load_balancer"),
        ("SB_chassis_template_var", None),
    ],
}
FLOW_OUTPUT_NODES = ("lflow_output", "pflow_output")
ROOT = "flow_output"
# Root inputs while the flow providers are absent.
ROOT_FALLBACK_INPUTS = ("runtime_data", "ct_zones", "if_status_mgr")


class FlowOutputProvider(Protocol):
    """What lflow_output / pflow_output providers implement.

    ``run(node) -> bool`` recomputes everything; ``handlers`` maps the handler
    keys of :data:`GRAPH` to ``(node, input_node) -> Handled``; ``data`` must
    expose ``flow_table`` (an ``ofctrl.desired.DesiredFlowTable``).
    """

    data: Any

    def run(self, node: Node) -> bool: ...

    @property
    def handlers(self) -> Mapping[str, HandlerFn]: ...


class TableNode(Node):
    """Leaf over one tracked table: UPDATED iff a tracked column changed."""

    def __init__(self, name: str, tracker: ChangeTracker, table: str,
                 columns: frozenset[str] | None) -> None:
        super().__init__(name, self._run_table)
        self.tracker = tracker
        self.table = table
        self.columns = columns
        self.data: TableChanges = tracker.tables.get(table) or TableChanges(table)

    def _run_table(self, node: Node) -> bool:
        tc = self.tracker.tables.get(self.table)
        if tc is None:
            return False
        self.data = tc
        if not tc:
            return False
        cols = self.columns
        if cols is None or tc.created or tc.deleted:
            return True
        return any(not tr.old or cols.intersection(tr.old) for tr in tc.updated.values())


@dataclass
class GraphParts:
    impl: Any                                  # object with run_<node> / handler methods
    ovs_tracker: ChangeTracker
    sb_tracker: ChangeTracker
    state_runs: dict[str, Callable[[Node], bool]]
    node_data: dict[str, Any] = field(default_factory=dict)
    providers: dict[str, FlowOutputProvider] = field(default_factory=dict)


def _handler(impl: Any, name: str | None, provider: FlowOutputProvider | None) -> HandlerFn | None:
    if name is None:
        return None
    if name == "noop":
        return noop_handler
    if provider is not None:
        h = provider.handlers.get(name)
        if h is None:
            return None          # provider cannot handle it: recompute
        return h
    fn: HandlerFn = getattr(impl, name)
    return fn


def build_engine(parts: GraphParts) -> Engine:
    nodes: dict[str, Node] = {}
    for name, table in OVS_TABLE_NODES.items():
        nodes[name] = TableNode(name, parts.ovs_tracker, table, OVS_TRACKED_COLUMNS.get(table))
    for name, table in SB_TABLE_NODES.items():
        if table in parts.sb_tracker.tables:
            nodes[name] = TableNode(name, parts.sb_tracker, table, None)
    for name in STATE_LEAVES:
        nodes[name] = Node(name, parts.state_runs[name])
    for name, edges in GRAPH.items():
        provider = parts.providers.get(name)
        if name in FLOW_OUTPUT_NODES:
            if provider is None:
                continue
            node = Node(name, provider.run, data=provider.data)
        else:
            node = Node(name, getattr(parts.impl, f"run_{name}"),
                        data=parts.node_data.get(name),
                        clear_tracked=getattr(parts.impl, f"clear_{name}", None))
        nodes[name] = node
    for name, edges in GRAPH.items():
        target = nodes.get(name)
        if target is None:
            continue
        provider = parts.providers.get(name)
        for inp, hname in edges:
            if inp in nodes:
                target.add_input(nodes[inp], _handler(parts.impl, hname, provider))
    root = Node(ROOT, lambda n: True)
    present = [n for n in FLOW_OUTPUT_NODES if n in nodes]
    for name in present or list(ROOT_FALLBACK_INPUTS):
        root.add_input(nodes[name], _mark_updated)
    return Engine(root)


def _mark_updated(node: Node, inp: Node) -> Handled:
    return Handled.UPDATED
