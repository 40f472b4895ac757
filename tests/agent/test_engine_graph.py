from pathlib import Path

import pytest

from controller.engine.core import HANDLED_UPDATED, State
from controller.engine.graph import (
    C_NODE_ORDER,
    GRAPH,
    NOOP,
    ROOT,
    GraphError,
    GraphParts,
    TableNode,
    build_engine,
)
from controller.ovsdb.connections import SB_TABLES
from controller.ovsdb.tracking import ROW_CREATE, ROW_UPDATE, ChangeTracker
from tests.agent.fakes import FakeRow

OVS_TABLES = ["Open_vSwitch", "Bridge", "QoS", "Port", "Interface", "Flow_Sample_Collector_Set"]


class Impl:
    """A node implementation recording its runs and handler calls; it has a
    handler for every key the graph names for it."""

    def __init__(self, name, calls, keys, leaf=False):
        self.name = name
        self.leaf = leaf
        self.calls = calls
        self.data = None
        self.handlers = {k: self._handler(k) for k in keys}

    def _handler(self, key):
        def handler(node, inp):
            self.calls.append(f"{self.name}.{key}")
            return HANDLED_UPDATED
        return handler

    def run(self, node):
        if self.leaf:
            return False          # state leaves: unchanged
        self.calls.append(f"run {self.name}")
        return True

    def clear_tracked(self):
        pass


def impls(calls, graph=GRAPH):
    return {name: Impl(name, calls, [k for _, k in edges if k not in (None, NOOP)],
                       leaf=not edges)
            for name, edges in graph.items() if name != ROOT}


def parts(calls=None, nodes=None):
    ovs = ChangeTracker(OVS_TABLES)
    sb = ChangeTracker(SB_TABLES)
    calls = [] if calls is None else calls
    return ovs, sb, GraphParts(ovs, sb, impls(calls) if nodes is None else nodes)


def test_graph_order_and_root():
    ovs, sb, p = parts()
    eng = build_engine(p)
    names = [n.name for n in eng.nodes]
    assert names[-1] == "flow_output"
    assert names.index("runtime_data") < names.index("ct_zones") < \
        names.index("physical_flow_output")
    assert [n.name for n, _ in eng.root.inputs] == ["logical_flow_output",
                                                    "physical_flow_output"]
    # inputs in the declared 23.03 order
    for name in ("runtime_data", "logical_flow_output", "physical_flow_output"):
        assert [n.name for n, _ in eng.node(name).inputs] == [e[0] for e in GRAPH[name]]


def test_untracked_bridge_columns_do_not_trigger_recompute():
    calls: list[str] = []
    ovs, sb, p = parts(calls)
    eng = build_engine(p)
    br = FakeRow(name="br-int")
    ovs.record("Bridge", ROW_UPDATE, br, {"external_ids": None})
    eng.init_run()
    eng.run(True)
    assert eng.node("OVS_bridge").state is State.UNCHANGED
    assert "run runtime_data" not in calls
    ovs.clear()
    ovs.record("Bridge", ROW_UPDATE, br, {"datapath_type": None})
    eng.init_run()
    eng.run(True)
    assert isinstance(eng.node("OVS_bridge"), TableNode)
    assert eng.node("OVS_bridge").state is State.UPDATED
    assert "run runtime_data" in calls and "run ct_zones" in calls


def test_port_binding_change_goes_through_handlers():
    calls: list[str] = []
    ovs, sb, p = parts(calls)
    eng = build_engine(p)
    sb.record("Port_Binding", ROW_UPDATE, FakeRow(logical_port="x"), {"chassis": None})
    eng.init_run()
    eng.run(True)
    # depth first from the root: logical_flow_output's inputs, it, then
    # physical_flow_output's; handlers of a node in its inputs' order
    assert calls == ["runtime_data.sb_port_binding", "port_groups.runtime_data",
                     "lb_data.runtime_data",
                     "logical_flow_output.port_groups", "logical_flow_output.runtime_data",
                     "logical_flow_output.port_binding", "ct_zones.runtime_data",
                     "physical_flow_output.ct_zones", "physical_flow_output.port_binding",
                     "physical_flow_output.runtime_data", "physical_flow_output.lb_data"]


def test_chassis_change_has_a_handler_in_the_flow_outputs():
    """("SB_chassis", "chassis") used to be dropped silently for pflow_output."""
    calls: list[str] = []
    ovs, sb, p = parts(calls)
    eng = build_engine(p)
    handlers = {n.name: h for n, h in eng.node("physical_flow_output").inputs}
    assert handlers["SB_chassis"] is not None
    sb.record("Chassis", ROW_CREATE, FakeRow(name="hv9"), None)
    eng.init_run()
    eng.run(True)
    assert "runtime_data.sb_chassis" in calls   # runtime_data's own handler decides
    assert "physical_flow_output.chassis" in calls and "logical_flow_output.chassis" in calls


def test_unknown_handler_raises():
    calls: list[str] = []
    nodes = impls(calls)
    del nodes["physical_flow_output"].handlers["chassis"]
    with pytest.raises(GraphError,
                       match="physical_flow_output: no handler 'chassis' for input"):
        build_engine(GraphParts(ChangeTracker(OVS_TABLES), ChangeTracker(SB_TABLES), nodes))


def test_unknown_input_node_raises():
    graph = {**GRAPH, "ct_zones": [*GRAPH["ct_zones"], ("SB_no_such_table", None)]}
    with pytest.raises(GraphError, match="ct_zones: input SB_no_such_table: no such node"):
        build_engine(GraphParts(ChangeTracker(OVS_TABLES), ChangeTracker(SB_TABLES),
                                impls([], graph)), graph)


def test_input_declared_after_its_user_raises():
    graph = {**GRAPH, "northd_options": [("ct_zones", None)]}
    with pytest.raises(GraphError, match="northd_options: input ct_zones: declared after it"):
        build_engine(GraphParts(ChangeTracker(OVS_TABLES), ChangeTracker(SB_TABLES),
                                impls([], graph)), graph)


def test_missing_or_extra_implementation_raises():
    nodes = impls([])
    del nodes["logical_flow_output"]
    with pytest.raises(GraphError, match=r"without implementation: \['logical_flow_output'\]"):
        build_engine(GraphParts(ChangeTracker(OVS_TABLES), ChangeTracker(SB_TABLES), nodes))
    nodes = {**impls([]), "vif_plug": Impl("vif_plug", [], [])}
    with pytest.raises(GraphError, match=r"of no node: \['vif_plug'\]"):
        build_engine(GraphParts(ChangeTracker(OVS_TABLES), ChangeTracker(SB_TABLES), nodes))


def test_untracked_table_raises():
    sb = ChangeTracker([t for t in SB_TABLES if t != "FDB"])
    with pytest.raises(GraphError, match="SB_fdb: table FDB is not tracked"):
        build_engine(GraphParts(ChangeTracker(OVS_TABLES), sb, impls([])))


def real_engine():
    """The engine with the implementations the daemon plugs in."""
    from controller.binding.if_status import IfStatusMgr
    from controller.engine.agent_nodes import AgentState, agent_nodes
    from controller.nodes.logical_flow_output import LflowOutput
    from controller.nodes.physical_flow_output import PflowOutput
    from ofctrl.seqno import SeqnoTracker

    st = AgentState(IfStatusMgr(SeqnoTracker()))
    nodes = {**agent_nodes(st, lambda t: {}),
             "logical_flow_output": LflowOutput(st, lambda t: {}, lambda: 0, lambda: {}),
             "physical_flow_output": PflowOutput(st, lambda t: {}, lambda: None)}
    return build_engine(GraphParts(ChangeTracker(OVS_TABLES), ChangeTracker(SB_TABLES), nodes))


def test_the_agent_builds_its_real_graph():
    """The implementations the daemon plugs in satisfy the graph."""
    eng = real_engine()
    assert {n.name for n in eng.nodes} >= set(GRAPH)


def test_nodes_are_the_c_agents_in_its_order():
    """inc-engine/show-stats lists ovn-controller 23.03.1's 44 nodes, in its
    order (integration/test_dropin_commands.py compares with the binary)."""
    eng = real_engine()
    assert len(C_NODE_ORDER) == 44
    assert tuple(n.name for n in eng.nodes) == C_NODE_ORDER
    shown = [line[len("Node: "):] for line in eng.show_stats().splitlines()
             if line.startswith("Node: ")]
    assert tuple(shown) == C_NODE_ORDER


def test_ha_chassis_group_changes_reach_physical_flows():
    """C sees them as Port_Binding updates (IDL reference tracking); here
    they ride on SB_encap, whose handler in physical_flow_output recomputes
    on them (tests/agent/test_flow_outputs.py)."""
    calls: list[str] = []
    ovs, sb, p = parts(calls)
    eng = build_engine(p)
    sb.record("HA_Chassis_Group", ROW_UPDATE, FakeRow(name="g"), {"ha_chassis": None})
    eng.init_run()
    eng.run(True)
    assert eng.node("SB_encap").state is State.UPDATED
    assert "physical_flow_output.encap" in calls
    assert "run logical_flow_output" not in calls


DESIGN = Path(__file__).resolve().parents[2] / "docs" / "DESIGN.md"
BEGIN, END = "<!-- engine-graph:begin -->\n```dot\n", "```\n<!-- engine-graph:end -->"


def test_design_doc_graph_is_current():
    """docs/DESIGN.md shows Engine.dump_graph() of the real graph; regenerate
    it with ``python -m tests.agent.test_engine_graph``."""
    text = DESIGN.read_text()
    assert BEGIN in text and END in text
    shown = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
    assert shown == real_engine().dump_graph()


if __name__ == "__main__":
    doc = DESIGN.read_text()
    head, rest = doc.split(BEGIN)
    DESIGN.write_text(head + BEGIN + real_engine().dump_graph() + END + rest.split(END)[1])
