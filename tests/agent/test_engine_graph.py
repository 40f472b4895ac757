from controller.engine import HANDLED_UPDATED, State
from controller.engine_graph import GRAPH, GraphParts, TableNode, build_engine
from controller.tracking import ROW_UPDATE, ChangeTracker
from tests.agent.fakes import FakeRow


class Impl:
    """Minimal node implementation recording calls."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        if name.startswith("run_"):
            def run(node, _n=name):
                self.calls.append(_n)
                return True
            return run
        if name.startswith("clear_"):
            raise AttributeError(name)

        def handler(node, inp, _n=name):
            self.calls.append(_n)
            return HANDLED_UPDATED
        return handler


def parts(providers=None):
    ovs = ChangeTracker(["Open_vSwitch", "Bridge", "Port", "Interface",
                         "Flow_Sample_Collector_Set"])
    sb = ChangeTracker(["Port_Binding", "Chassis", "Datapath_Binding", "Encap", "SB_Global",
                        "Multicast_Group", "HA_Chassis_Group", "MAC_Binding", "FDB",
                        "Static_MAC_Binding", "Load_Balancer", "Chassis_Template_Var"])
    leaves = {n: (lambda node: False) for n in ("ofctrl_is_connected", "sb_ro",
                                                "postponed_ports", "mff_ovn_geneve")}
    impl = Impl()
    return impl, ovs, sb, GraphParts(impl, ovs, sb, leaves, providers=providers or {})


def test_graph_without_flow_providers_has_no_output_nodes():
    impl, ovs, sb, p = parts()
    eng = build_engine(p)
    names = [n.name for n in eng.nodes]
    assert "lflow_output" not in names and "pflow_output" not in names
    assert names[-1] == "flow_output"
    assert names.index("runtime_data") < names.index("ct_zones")
    root_inputs = [n.name for n, _ in eng.root.inputs]
    assert root_inputs == ["runtime_data", "ct_zones", "if_status_mgr"]
    # runtime_data inputs in the declared 23.03 order
    rt = eng.node("runtime_data")
    assert [n.name for n, _ in rt.inputs] == [e[0] for e in GRAPH["runtime_data"]]


def test_untracked_bridge_columns_do_not_trigger_recompute():
    impl, ovs, sb, p = parts()
    eng = build_engine(p)
    br = FakeRow(name="br-int")
    ovs.record("Bridge", ROW_UPDATE, br, {"external_ids": None})
    eng.init_run()
    eng.run(True)
    assert eng.node("OVS_bridge").state is State.UNCHANGED
    assert "run_runtime_data" not in impl.calls
    ovs.clear()
    ovs.record("Bridge", ROW_UPDATE, br, {"datapath_type": None})
    eng.init_run()
    eng.run(True)
    assert isinstance(eng.node("OVS_bridge"), TableNode)
    assert eng.node("OVS_bridge").state is State.UPDATED
    assert "run_runtime_data" in impl.calls and "run_ct_zones" in impl.calls


def test_port_binding_change_goes_through_handlers():
    impl, ovs, sb, p = parts()
    eng = build_engine(p)
    sb.record("Port_Binding", ROW_UPDATE, FakeRow(logical_port="x"), {"chassis": None})
    eng.init_run()
    eng.run(True)
    assert impl.calls == ["runtime_data_sb_port_binding_handler",
                          "ct_zones_runtime_data_handler"]


class Provider:
    def __init__(self, handlers=None):
        self.data = type("D", (), {"flow_table": []})()
        self.ran = 0
        self._handlers = handlers or {}

    @property
    def handlers(self):
        return self._handlers

    def run(self, node):
        self.ran += 1
        return True


def test_flow_provider_plugs_in_and_missing_handlers_mean_recompute():
    prov = Provider()
    impl, ovs, sb, p = parts({"pflow_output": prov})
    eng = build_engine(p)
    assert [n.name for n, _ in eng.root.inputs] == ["pflow_output"]
    pf = eng.node("pflow_output")
    assert [n.name for n, _ in pf.inputs][:3] == ["ct_zones", "SB_chassis", "if_status_mgr"]
    sb.record("Port_Binding", ROW_UPDATE, FakeRow(logical_port="x"), {"up": None})
    eng.init_run()
    eng.run(True)
    assert prov.ran == 1 and pf.stats.recompute == 1
