"""The intermediate engine nodes of controller/nodes/ (C's en_template_vars,
en_lb_data, en_dhcp_options, en_northd_options, en_non_vif_data,
en_ovs_interface_shadow) and the activated_ports leaf."""

from types import SimpleNamespace

from controller.binding.if_status import IfStatusMgr
from controller.binding.local_data import TrackedType
from controller.engine.agent_nodes import AgentState
from controller.engine.core import HANDLED_UNCHANGED, HANDLED_UPDATED, UNHANDLED
from controller.lflow.actions.dhcp_opts import DHCPV4_OPTIONS, DHCPV6_OPTIONS
from controller.nodes.dhcp_options import DhcpOptionsNode
from controller.nodes.lb_data import LbDataNode
from controller.nodes.non_vif_data import NonVifDataNode, scan_br_int
from controller.nodes.northd_options import NorthdOptionsNode
from controller.nodes.ovs_interface_shadow import OvsInterfaceShadowNode
from controller.nodes.template_vars import TemplateVarsNode
from controller.ovsdb.tracking import ROW_CREATE, ROW_DELETE, ROW_UPDATE, TableChanges
from ofctrl.seqno import SeqnoTracker
from physical import TunnelType
from tests.agent.fakes import FakeRow

NODE = SimpleNamespace()


def state(**kw):
    st = AgentState(IfStatusMgr(SeqnoTracker()))
    for k, v in kw.items():
        setattr(st, k, v)
    return st


def changes(table, *events):
    tc = TableChanges(table)
    for ev, row in events:
        tc.record(ev, row, {} if ev == ROW_UPDATE else None)
    return tc


def test_template_vars_tracks_changed_names_of_this_chassis_only():
    me = FakeRow(name="hv1")
    rows = {}
    mine = FakeRow(chassis="hv1", variables={"vip": "10.0.0.1", "port": "80"})
    other = FakeRow(chassis="hv2", variables={"vip": "10.0.0.9"})
    rows[mine.uuid], rows[other.uuid] = mine, other
    node = TemplateVarsNode(state(chassis=me), lambda t: rows)
    assert node.run(NODE) is True
    assert node.data.vars == {"vip": "10.0.0.1", "port": "80"}
    assert node.data.changed == {"vip", "port"}
    node.clear_tracked()
    assert node.run(NODE) is False and not node.data.changed     # nothing moved
    mine.__dict__["variables"] = {"vip": "10.0.0.2", "port": "80", "new": "x"}
    h = node.handlers["sb_chassis_template_var"]
    assert h(NODE, NODE) is HANDLED_UPDATED
    assert node.data.changed == {"vip", "new"}
    node.clear_tracked()
    other.__dict__["variables"] = {"vip": "10.0.0.10"}
    assert h(NODE, NODE) is HANDLED_UNCHANGED


def test_lb_data_names_rows_to_rebuild():
    dp_new, dp_old = FakeRow(), FakeRow()
    plain = FakeRow(options={}, datapaths=[dp_old], datapath_group=[])
    tmpl = FakeRow(options={"template": "true"}, datapaths=[dp_old], datapath_group=[])
    on_new = FakeRow(options={}, datapaths=[], datapath_group=[FakeRow(datapaths=[dp_new])])
    rows = {r.uuid: r for r in (plain, tmpl, on_new)}
    rt_tracked = SimpleNamespace(dps={dp_new.uuid: SimpleNamespace(
        type=TrackedType.NEW, datapath=dp_new, lports={})})
    st = state()
    st.rt = SimpleNamespace(tracked=True, tracked_dps=rt_tracked, local_datapaths={})
    node = LbDataNode(st, lambda t: rows)
    assert node.run(NODE) is True and node.data.recomputed
    node.clear_tracked()
    assert not node.data.recomputed and not node.data.changed

    tc = changes("Load_Balancer", (ROW_UPDATE, plain), (ROW_DELETE, FakeRow()))
    assert node.handlers["sb_load_balancer"](NODE, SimpleNamespace(data=tc)) \
        is HANDLED_UPDATED
    assert node.data.changed[plain.uuid] is plain
    assert sorted(v is None for v in node.data.changed.values()) == [False, True]
    node.clear_tracked()

    tv = SimpleNamespace(data=SimpleNamespace(changed=set()))
    assert node.handlers["template_vars"](NODE, tv) is HANDLED_UNCHANGED
    tv.data.changed.add("vip")
    assert node.handlers["template_vars"](NODE, tv) is HANDLED_UPDATED
    assert set(node.data.changed) == {tmpl.uuid}
    node.clear_tracked()

    assert node.handlers["runtime_data"](NODE, NODE) is HANDLED_UPDATED
    assert set(node.data.changed) == {on_new.uuid}
    st.rt.tracked = False
    assert node.handlers["runtime_data"](NODE, NODE) is UNHANDLED


def test_dhcp_options_defaults_and_change():
    rows = {}
    node = DhcpOptionsNode(lambda t: rows if t == "DHCP_Options" else {})
    assert node.run(NODE) is False          # empty tables: the well-known ones
    assert node.data.v4 is DHCPV4_OPTIONS and node.data.v6 is DHCPV6_OPTIONS
    r = FakeRow(name="router", code=3, type="ipv4")
    rows[r.uuid] = r
    assert node.run(NODE) is True
    assert set(node.data.v4) == {"router"} and node.data.v6 is DHCPV6_OPTIONS
    assert node.run(NODE) is False


def test_northd_options_reports_only_a_moved_value():
    sbg = FakeRow(options={})
    node = NorthdOptionsNode(lambda t: {sbg.uuid: sbg})
    h = node.handlers["sb_sb_global"]
    assert h(NODE, NODE) is HANDLED_UNCHANGED and node.data.lb_hairpin_use_ct_mark
    sbg.__dict__["options"] = {"lb_hairpin_use_ct_mark": "false", "other": "x"}
    assert h(NODE, NODE) is HANDLED_UPDATED and not node.data.lb_hairpin_use_ct_mark
    sbg.__dict__["options"] = {"lb_hairpin_use_ct_mark": "false"}
    assert h(NODE, NODE) is HANDLED_UNCHANGED


def _port(ext, iface_type, ofport):
    return FakeRow(external_ids=ext, interfaces=[FakeRow(type=iface_type, ofport=[ofport])])


def test_non_vif_data_scans_tunnels_and_patches():
    br = FakeRow(ports=[
        _port({"iface-id": "vm1"}, "", 1),
        _port({"ovn-chassis-id": "hv2@192.0.2.2"}, "geneve", 5),
        _port({"ovn-chassis-id": "hv3@"}, "geneve", 6),          # no encap ip
        _port({"ovn-chassis-id": "hv4@192.0.2.4"}, "geneve", -1),  # no ofport yet
        _port({"ovn-localnet-port": "ln0"}, "patch", 7),
    ])
    nv = scan_br_int(br)
    assert [(t.chassis_name, t.ofport, t.type) for t in nv.tunnels] == \
        [("hv2", 5, TunnelType.GENEVE)]
    assert nv.tunnel_ofports == {"hv2": 5}
    assert nv.patch_ofports == {"ln0": 7}

    node = NonVifDataNode(state(br_int=br))
    assert node.run(NODE) is True
    assert node.data.patches_changed == {"ln0"}
    assert node.data.tunnels_changed and node.data.tunnel_ofports_changed
    node.clear_tracked()
    assert node.run(NODE) is False          # nothing moved
    assert not node.data.tunnels_changed and not node.data.patches_changed
    br.ports[4].interfaces[0].__dict__["ofport"] = [8]
    assert node.run(NODE) is True and node.data.patches_changed == {"ln0"}
    assert not node.data.tunnels_changed
    vif = changes("Interface", (ROW_UPDATE, FakeRow(type="", external_ids={})))
    tun = changes("Interface", (ROW_CREATE, FakeRow(type="geneve", external_ids={})))
    h = node.handlers["ovs_interface"]
    assert h(NODE, SimpleNamespace(data=vif)) is HANDLED_UNCHANGED
    # A tunnel interface rescans br-int, as the recompute would: nothing
    # moved yet, then a tunnel to hv4 got its ofport.
    node.clear_tracked()
    assert h(NODE, SimpleNamespace(data=tun)) is HANDLED_UNCHANGED
    br.ports[3].interfaces[0].__dict__["ofport"] = [9]
    assert h(NODE, SimpleNamespace(data=tun)) is HANDLED_UPDATED
    assert node.data.tunnels_changed and node.data.tunnel_chassis_changed == {"hv4"}
    assert node.data.tunnel_ofports == {"hv2": 5, "hv4": 9}
    # SB_chassis: the same rescan (nothing moved since)
    node.clear_tracked()
    assert node.handlers["sb_chassis"](NODE, SimpleNamespace(data=None)) is HANDLED_UNCHANGED
    assert not node.data.tunnels_changed and not node.data.tunnel_chassis_changed


def test_ovs_interface_shadow_passes_the_changes_through():
    node = OvsInterfaceShadowNode()
    tc = changes("Interface")
    engine_node = SimpleNamespace(input_data=lambda name: tc, data=None)
    h = node.handlers["ovs_interface"]
    assert h(engine_node, None) is HANDLED_UNCHANGED
    tc.record(ROW_CREATE, FakeRow(type=""), None)
    assert h(engine_node, None) is HANDLED_UPDATED
    assert engine_node.data is tc


def test_activated_ports_leaf_reports_new_activations_once():
    st = state()
    n = SimpleNamespace(data=None)
    assert st.run_activated_ports(n) is False
    st.activated_ports = frozenset({(1, 2)})
    assert st.run_activated_ports(n) is True and n.data == {(1, 2)}
    assert st.run_activated_ports(n) is False and n.data == frozenset()


def _drain(out):
    """What the engine does after the node's run or handlers: compile the queue."""
    out.slice_ms = None
    out.resume(SimpleNamespace(inputs=[]))
    assert not out.pending()


def test_lflow_output_template_change_reprocesses_only_its_users():
    from controller.lflow.compile import CompiledLflow, LflowRefs
    from controller.nodes.logical_flow_output import LflowOutput
    from controller.nodes.non_vif_data import NonVifData
    from ofctrl.flow import Flow

    from controller.lflow.compile import TUNNEL_REF
    a = FakeRow(name="A", t=frozenset({"vip"}), n=1, p=frozenset())
    b = FakeRow(name="B", t=frozenset({"port"}), n=2, p=frozenset({TUNNEL_REF}))
    rows = {a.uuid: a, b.uuid: b}
    compiled = []

    class Compiler:
        def forget_lflow(self, lflow_uuid):
            pass

        def compile_lflow_local(self, row):
            compiled.append(row.name)
            return [CompiledLflow(row.uuid, 1, [], [Flow(10, 100, f"reg0={row.n}", ())], None,
                                  LflowRefs(templates=row.t, ports=row.p))]

    out = LflowOutput(SimpleNamespace(chassis=object()),
                      lambda name: rows if name == "Logical_Flow" else {}, lambda: 1, dict)
    out.views.lflow = lambda row: row
    comp = Compiler()
    out._compiler = lambda node: comp
    out.run(SimpleNamespace())
    _drain(out)
    assert sorted(compiled) == ["A", "B"]
    compiled.clear()
    tv = SimpleNamespace(data=SimpleNamespace(changed={"vip"}))
    assert out.handlers["template_vars"](None, tv) is HANDLED_UPDATED
    _drain(out)
    assert compiled == ["A"]
    tv.data.changed = {"unused"}
    assert out.handlers["template_vars"](None, tv) is HANDLED_UNCHANGED
    # a tunnel port moving re-processes the lflows that looked a tunnel up;
    # a patch port alone changes nothing here
    nv = NonVifData()
    nv.patches_changed = {"ln0"}
    compiled.clear()
    assert out.handlers["non_vif_data"](None, SimpleNamespace(data=nv)) is HANDLED_UNCHANGED
    nv.tunnel_ofports_changed = True
    assert out.handlers["non_vif_data"](None, SimpleNamespace(data=nv)) is HANDLED_UPDATED
    _drain(out)
    assert compiled == ["B"]


def test_runtime_data_recomputes_only_for_chassis_changes_that_matter():
    """Other chassis joining or changing leave runtime_data as it is; our own
    row, a deleted row, or a moved BFD tunnel set recompute."""
    from controller.nodes.runtime_data import RuntimeDataNode
    me, other = FakeRow(name="hv1"), FakeRow(name="hv2")
    node = RuntimeDataNode(state(chassis=me, br_int=None))
    h = node.handlers["sb_chassis"]

    def inp(*events):
        return SimpleNamespace(data=changes("Chassis", *events))
    assert h(NODE, inp((ROW_CREATE, other))) is HANDLED_UNCHANGED
    assert h(NODE, inp((ROW_UPDATE, other))) is HANDLED_UNCHANGED
    assert h(NODE, inp((ROW_CREATE, other), (ROW_UPDATE, me))) is UNHANDLED
    assert h(NODE, inp((ROW_CREATE, me))) is UNHANDLED
    assert h(NODE, inp((ROW_DELETE, FakeRow(name="hv3")))) is UNHANDLED
    # BFD says a tunnel came up since the last full pass: that pass is due.
    node.st.rt.active_tunnels = {"hv2"}
    assert h(NODE, inp((ROW_CREATE, other))) is UNHANDLED
    assert RuntimeDataNode(state(chassis=None)).handlers["sb_chassis"](
        NODE, inp((ROW_CREATE, other))) is UNHANDLED
