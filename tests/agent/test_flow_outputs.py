import uuid

from controller.lflow.compile import RefIndex
from controller.nodes.logical_flow_output import ExtendBridge
from tests.agent.fakes import FakeRow


class Refs:
    def __init__(self, **kw):
        for k in RefIndex.KINDS:
            setattr(self, k, kw.get(k, ()))


def test_ref_index_users_and_removal():
    idx = RefIndex()
    a, b = uuid.uuid4(), uuid.uuid4()
    idx.add(a, Refs(ports={"p1", "p2"}, addr_sets={"as1": 2}))
    idx.add(b, Refs(ports={"p2"}, port_groups={"1_pg"}))
    assert idx.users("ports", ["p2"]) == {a, b}
    assert idx.users("addr_sets", ["as1"]) == {a}
    assert idx.users("port_groups", ["1_pg", "x"]) == {b}
    idx.remove(a)
    assert idx.users("ports", ["p1", "p2"]) == {b}
    assert "p1" not in idx.by_res["ports"]
    idx.clear()
    assert idx.users("ports", ["p2"]) == set()


class FakeExtend:
    def __init__(self):
        self.calls = []

    def assign_id(self, name, owner, spec=None):
        self.calls.append((name, owner, spec))
        return 7

    def remove_desired(self, owner):
        self.calls.append(("remove", owner))

    def clear_desired(self):
        self.calls.append(("clear",))

    existing = {"x": FakeRow(name="x", table_id=1)}


def test_extend_bridge_parses_group_specs_once():
    parsed = []

    def parse(text):
        parsed.append(text)
        return ("spec", text)

    t = FakeExtend()
    br = ExtendBridge(t, parse)
    u = uuid.uuid4()
    assert br.assign_id("type=select,bucket=x", u) == 7
    assert br.assign_id("type=select,bucket=x", u) == 7
    assert parsed == ["type=select,bucket=x"]
    assert t.calls[0] == ("type=select,bucket=x", u, ("spec", "type=select,bucket=x"))
    br.remove_desired(u)
    br.clear_desired()
    assert t.calls[-2:] == [("remove", u), ("clear",)]
    assert br.existing["x"].table_id == 1          # other attributes delegate
    meters = ExtendBridge(FakeExtend())
    meters.assign_id("acl-meter", u)
    assert meters.table.calls[0] == ("acl-meter", u, None)


def test_pflow_if_status_mgr_handler_rebuilds_only_multichassis_mtu_changes():
    from types import SimpleNamespace

    from controller.engine.core import HANDLED_UNCHANGED, HANDLED_UPDATED, UNHANDLED
    from controller.nodes.physical_flow_output import PflowOutput

    dp1, dp2 = FakeRow(tunnel_key=1), FakeRow(tunnel_key=2)
    pbs = {"vm1": FakeRow(logical_port="vm1", datapath=dp1, additional_chassis=[]),
           "vm2": FakeRow(logical_port="vm2", datapath=dp2, additional_chassis=[]),
           "vm3": FakeRow(logical_port="vm3", datapath=dp2, additional_chassis=[]),
           "far": FakeRow(logical_port="far", datapath=FakeRow(tunnel_key=3),
                          additional_chassis=["hv9"])}
    lds = {dp1.uuid: SimpleNamespace(multichassis_ports={}),
           dp2.uuid: SimpleNamespace(multichassis_ports={"vm2": pbs["vm2"]})}
    by_dp = {dp1.uuid: [pbs["vm1"]], dp2.uuid: [pbs["vm2"], pbs["vm3"]]}
    mgr = SimpleNamespace(mtu_changed=set())
    st = SimpleNamespace(if_mgr=mgr, rt=SimpleNamespace(local_datapaths=lds),
                         idx=SimpleNamespace(pb_by_name=pbs, pbs_on_datapath=by_dp.__getitem__))
    pf = PflowOutput(st, lambda name: {}, lambda: None)   # type: ignore[arg-type]
    calls = []
    pf._ctx = lambda node: "ctx"   # type: ignore[method-assign]
    pf._rebuild_lports = lambda ctx, ch: calls.append(ch) or HANDLED_UPDATED  # type: ignore

    assert pf.handlers["if_status_mgr"](None, None) is HANDLED_UNCHANGED
    # Plain VIFs (and ports of non-local datapaths): their MTU is in no flow.
    mgr.mtu_changed = {"vm1", "vm3", "far", "gone"}
    assert pf.handlers["if_status_mgr"](None, None) is HANDLED_UNCHANGED
    assert calls == []
    # A multichassis port: every port of its datapath carries its PMTUD flows.
    mgr.mtu_changed = {"vm1", "vm2", "gone"}
    assert pf.handlers["if_status_mgr"](None, None) is HANDLED_UPDATED
    assert calls == [[(pbs["vm2"], False), (pbs["vm3"], False)]]
    mgr.mtu_changed = None          # the manager node was recomputed
    assert pf.handlers["if_status_mgr"](None, None) is UNHANDLED


def test_if_status_mgr_node_tracks_mtu_changes():
    from types import SimpleNamespace

    from controller.binding.if_status import IfStatusMgr
    from controller.nodes.if_status_mgr import IfStatusMgrNode
    from ofctrl.seqno import SeqnoTracker

    mgr = IfStatusMgr(SeqnoTracker())
    impl = IfStatusMgrNode(SimpleNamespace(if_mgr=mgr))   # type: ignore[arg-type]
    node = SimpleNamespace(data=None)
    assert impl.run(node) is True      # type: ignore[arg-type]
    assert mgr.mtu_changed is None
    impl.clear_tracked()
    assert mgr.mtu_changed == set()


# -- flood removal of flows shared between lflows (conjunctive clauses) ------

def _shared_clause_output():
    """An LflowOutput with a fake compiler: lflows A and B each make two
    conjunctive clause flows, one of which (tp_dst=8080) they share, as ACLs
    on two port groups with the same member and overlapping tcp.dst sets."""
    from types import SimpleNamespace

    from controller.lflow.compile import CompiledLflow, LflowRefs
    from controller.nodes.logical_flow_output import LflowOutput
    from ofctrl.flow import Flow
    from ofctrl.ofpacts.basic import Conjunction

    a = FakeRow(name="A", pg="pga", conj=1, ports=(80, 8080))
    b = FakeRow(name="B", pg="pgb", conj=2, ports=(8080, 9090))
    rows = {a.uuid: a, b.uuid: b}
    compiled: list[str] = []

    class Compiler:
        def forget_lflow(self, lflow_uuid):
            pass

        def compile_lflow_local(self, row):
            compiled.append(row.name)
            flows = [Flow(44, 2003, f"tp_dst={p}", (Conjunction(row.conj, 2, 2),))
                     for p in row.ports]
            return [CompiledLflow(row.uuid, 1, [], flows, None,
                                  LflowRefs(port_groups=frozenset({row.pg})))]

    tables = {"Logical_Flow": rows}
    out = LflowOutput(SimpleNamespace(chassis=object()), lambda name: tables.get(name, {}),
                      lambda: 1, dict)
    out.views.lflow = lambda row: row  # the fake compiler reads the fake rows
    comp = Compiler()
    out._compiler = lambda node: comp  # type: ignore[method-assign]
    out.run(SimpleNamespace())
    _drain(out)
    return out, a, b, rows, compiled


def _drain(out):
    """What the engine does after the node's run or handlers: compile the queue."""
    from types import SimpleNamespace

    out.slice_ms = None
    out.resume(SimpleNamespace(inputs=[]))
    assert not out.pending()


def _conjunctions(out, match):
    flows = [d.flow for d in out.data.flow_table if d.flow.match == match]
    assert len(flows) == 1, flows
    return sorted((c.id, c.clause) for c in flows[0].actions)


def test_reprocessing_one_lflow_rebuilds_a_shared_clause_flow_once():
    from types import SimpleNamespace

    from controller.engine.core import HANDLED_UPDATED
    from controller.nodes.addr_sets import NamedSets

    out, a, b, rows, compiled = _shared_clause_output()
    assert _conjunctions(out, "tp_dst=8080") == [(1, 2), (2, 2)]
    compiled.clear()
    pgs = NamedSets()
    pgs.changed.add("pga")
    for _ in range(3):
        assert out._port_groups(None, SimpleNamespace(data=pgs)) is HANDLED_UPDATED
        _drain(out)
        # the shared flow is rebuilt from both owners, without repetitions
        assert _conjunctions(out, "tp_dst=8080") == [(1, 2), (2, 2)]
    assert _conjunctions(out, "tp_dst=80") == [(1, 2)]
    assert _conjunctions(out, "tp_dst=9090") == [(2, 2)]
    assert len(out.data.flow_table) == 3
    # B was flood-removed with A and processed again, each time
    assert sorted(compiled) == ["A"] * 3 + ["B"] * 3
    assert sorted(out.data.flow_table.owners_of(
        next(d.flow for d in out.data.flow_table if d.flow.match == "tp_dst=8080"))) \
        == sorted([a.uuid, b.uuid])


def test_deleting_one_lflow_keeps_the_other_owner_of_a_shared_clause_flow():
    from types import SimpleNamespace

    from controller.ovsdb.tracking import ROW_DELETE, TableChanges

    out, a, b, rows, compiled = _shared_clause_output()
    del rows[a.uuid]
    tc = TableChanges("Logical_Flow")
    tc.record(ROW_DELETE, a)
    out._logical_flow(None, SimpleNamespace(data=tc))
    _drain(out)
    assert _conjunctions(out, "tp_dst=8080") == [(2, 2)]
    assert _conjunctions(out, "tp_dst=9090") == [(2, 2)]
    assert not [d for d in out.data.flow_table if d.flow.match == "tp_dst=80"]
    assert a.uuid not in out.refs.by_lflow and b.uuid in out.refs.by_lflow


def test_vif_ofports_lazy_mapping_matches_eager_rules() -> None:
    from types import SimpleNamespace

    from controller.nodes.physical_flow_output import VifOfports

    def lb(ofport: int | None, children: tuple[str, ...] = (),
           bound: bool = True) -> SimpleNamespace:
        iface = SimpleNamespace(ofport=[ofport]) if ofport is not None else None
        return SimpleNamespace(iface=iface, children=list(children),
                               pb=SimpleNamespace() if bound else None)

    bindings = {"vm1": lb(5, ("c1", "vm3")), "vm2": lb(7, ("c1", "c2")), "vm3": lb(9),
                "gone": lb(None, ("c9",)), "skipped": lb(11, bound=False)}
    m = VifOfports(bindings)
    assert m.get("vm1") == 5 and m["vm3"] == 9          # own binding beats a parent's
    assert m.get("c1") == 5 and m.get("c2") == 7        # first parent wins
    assert m.get("gone") is None and m.get("c9") is None and "nope" not in m
    # An interface whose Port_Binding was skipped (unknown type) has no port.
    assert m.get("skipped") is None
    assert dict(m) == {"vm1": 5, "vm2": 7, "vm3": 9, "c1": 5, "c2": 7}


def test_port_up_alone_reprocesses_no_lflow():
    from types import SimpleNamespace

    from controller.engine.core import HANDLED_UNCHANGED, HANDLED_UPDATED
    from controller.ovsdb.tracking import ROW_UPDATE, TableChanges

    out, a, b, rows, compiled = _shared_clause_output()
    out.refs.add(a.uuid, Refs(ports={"vm1"}))
    compiled.clear()
    pb = FakeRow(logical_port="vm1")
    up = TableChanges("Port_Binding")
    up.record(ROW_UPDATE, pb, {"up": [False]})
    assert out._port_binding(None, SimpleNamespace(data=up)) is HANDLED_UNCHANGED
    moved = TableChanges("Port_Binding")
    moved.record(ROW_UPDATE, pb, {"up": [False], "chassis": []})
    assert out._port_binding(None, SimpleNamespace(data=moved)) is HANDLED_UPDATED
    _drain(out)
    assert "A" in compiled
