import uuid

from controller.knobs import Knobs, chassis_name, get_knob
from controller.ovsdb.connections import sb_monitor_conditions
from controller.ovsdb.indexes import SbIndexes
from controller.ovsdb.tracking import ROW_CREATE, ROW_DELETE, ROW_UPDATE, ChangeTracker
from tests.agent.fakes import FakeRow, dp, pb


def test_tracking_folds_events():
    t = ChangeTracker(["T"])
    a, b, c, d = (FakeRow(name=n) for n in "abcd")
    t.record("T", ROW_CREATE, a)
    t.record("T", ROW_UPDATE, a, {"name": "x"})
    t.record("T", ROW_CREATE, b)
    t.record("T", ROW_DELETE, b)
    t.record("T", ROW_UPDATE, c, {"name": "old1"})
    t.record("T", ROW_UPDATE, c, {"name": "old2", "type": "t"})
    t.record("T", ROW_UPDATE, d, {"name": "d0"})
    t.record("T", ROW_DELETE, d)
    tc = t["T"]
    assert set(tc.created) == {a.uuid}
    assert set(tc.updated) == {c.uuid}
    assert tc.updated[c.uuid].old == {"name": "old1", "type": "t"}
    assert set(tc.deleted) == {d.uuid}
    assert tc.deleted[d.uuid].old == {"name": "d0"}
    assert t.has_changes("T") and t.any_changes()
    t.clear()
    assert not t.any_changes()


def test_indexes_incremental():
    t = ChangeTracker(["Port_Binding", "Datapath_Binding"])
    idx = SbIndexes()
    d1, d2 = dp(1), dp(2)
    p1 = pb("p1", d1, 1)
    p2 = pb("p2", d1, 2)
    idx.rebuild({"Port_Binding": {p1.uuid: p1, p2.uuid: p2},
                 "Datapath_Binding": {d1.uuid: d1, d2.uuid: d2}})
    assert idx.pb_by_name.get("p1") is p1
    assert idx.pb_by_key.get((d1.uuid, 2)) is p2
    assert set(idx.pb_by_datapath.get(d1.uuid)) == {p1.uuid, p2.uuid}
    assert idx.dp_by_key.get(2) is d2
    # p2 moves to d2 with a new key and name; p1 deleted; p3 created.
    p2.__dict__.update(datapath=d2, tunnel_key=7, logical_port="p2b")
    t.record("Port_Binding", ROW_UPDATE, p2, {"datapath": None})
    t.record("Port_Binding", ROW_DELETE, p1)
    p3 = pb("p3", d2, 3)
    t.record("Port_Binding", ROW_CREATE, p3)
    idx.apply(t)
    assert idx.pb_by_name.get("p1") is None
    assert idx.pb_by_name.get("p2") is None
    assert idx.pb_by_name.get("p2b") is p2
    assert idx.pb_by_key.get((d1.uuid, 2)) is None
    assert idx.pb_by_key.get((d2.uuid, 7)) is p2
    assert d1.uuid not in idx.pb_by_datapath.by_key
    assert set(idx.pb_by_datapath.get(d2.uuid)) == {p2.uuid, p3.uuid}


def test_knobs_override_and_validation():
    ext = {"ovn-bridge": "br-a", "ovn-bridge-hv2": "br-b", "ovn-monitor-all": "maybe",
           "ovn-encap-type": "geneve,vxlan", "ovn-encap-ip": "10.0.0.1",
           "ovn-remote-probe-interval": "-3", "ct-zone-range": "10-20",
           "ovn-bridge-mappings": "phys:br-ex,p2:br2", "system-id": "hv1"}
    k1 = Knobs(ext, "hv1")
    k2 = Knobs(ext, "hv2")
    assert k1["ovn-bridge"] == "br-a"
    assert k2["ovn-bridge"] == "br-b"
    assert k1["ovn-monitor-all"] is False          # bad value -> default
    assert k1["ovn-encap-type"] == ("geneve", "vxlan")
    assert k1["ovn-remote-probe-interval"] is None  # negative rejected
    assert k1["ct-zone-range"] == (10, 20)
    assert k1["ovn-bridge-mappings"] == (("phys", "br-ex"), ("p2", "br2"))
    assert get_knob({"ovn-encap-type": "gre"}, "ovn-encap-type", None) is None
    assert get_knob({"ovn-encap-csum": "false"}, "ovn-encap-csum", None) is False
    assert chassis_name(ext, None) == "hv1"
    assert chassis_name(ext, "cli") == "cli"


def test_knob_warning_is_rate_limited(capsys):
    import structlog
    with structlog.testing.capture_logs() as logs:
        for _ in range(5):
            get_knob({"ovn-trim-timeout-ms": "soon"}, "ovn-trim-timeout-ms", None)
    assert len([e for e in logs if "ovn-trim-timeout-ms" in e["event"]]) == 1


def test_sb_monitor_conditions():
    ch = uuid.uuid4()
    d = uuid.uuid4()
    c = sb_monitor_conditions("hv1", ch, ["p1"], [d], False)
    pbc = c["Port_Binding"]
    assert ["type", "==", "patch"] in pbc
    assert ["chassis", "==", ["uuid", str(ch)]] in pbc
    assert ["logical_port", "==", "p1"] in pbc and ["parent_port", "==", "p1"] in pbc
    assert ["datapath", "==", ["uuid", str(d)]] in pbc
    assert ["logical_dp_group", "!=", ["set", []]] in c["Logical_Flow"]
    assert c["Chassis_Private"] == [["name", "==", "hv1"]]
    pre = sb_monitor_conditions(None, None, [], [], False)
    assert pre["Chassis_Private"] == [True]
    assert ["type", "==", "l3gateway"] in pre["Port_Binding"]
    assert pre["Logical_Flow"] == [False]
    allc = sb_monitor_conditions("hv1", ch, [], [], True)
    assert all(v == [True] for v in allc.values())


def _ha_rows():
    d = dp(1)
    m1, m2 = FakeRow(chassis=[], priority=20), FakeRow(chassis=[], priority=10)
    g1, g2 = FakeRow(name="g1", ha_chassis=[m1]), FakeRow(name="g2", ha_chassis=[m2])
    cr = pb("cr-lr0-pub", d, 1, "chassisredirect", ha_chassis_group=[g1])
    ext = pb("ext1", d, 2, "external", ha_chassis_group=[g2])
    plain = pb("p1", d, 3)
    return d, m1, m2, g1, g2, cr, ext, plain


def test_reference_tracking_ha_chain():
    """An HA_Chassis change alone (northd filling in its chassis once ours is
    back) makes the group holding it and the ports naming that group tracked
    updates, with no column changed, as the C IDL does; other rows stay
    untracked, deleted rows stay deleted, created rows stay created."""
    d, m1, m2, g1, g2, cr, ext, plain = _ha_rows()
    tables = {"HA_Chassis_Group": {g.uuid: g for g in (g1, g2)}}
    idx = SbIndexes()
    idx.rebuild({"Port_Binding": {p.uuid: p for p in (cr, ext, plain)}})
    t = ChangeTracker(["HA_Chassis", "HA_Chassis_Group", "Port_Binding"])
    t.record("HA_Chassis", ROW_UPDATE, m1, {"chassis": []})
    idx.track_references(t, lambda name: tables.get(name, {}))
    assert set(t["HA_Chassis_Group"].updated) == {g1.uuid}
    assert set(t["Port_Binding"].updated) == {cr.uuid}
    assert t["Port_Binding"].updated[cr.uuid].old == {}
    t.clear()
    # a group edited in place (a member added): its ports, not the others'
    t.record("HA_Chassis_Group", ROW_UPDATE, g2, {"ha_chassis": []})
    t.record("Port_Binding", ROW_DELETE, plain)
    idx.track_references(t, lambda name: tables.get(name, {}))
    assert set(t["Port_Binding"].updated) == {ext.uuid}
    assert set(t["Port_Binding"].deleted) == {plain.uuid}
    t.clear()
    # a port deleted or created in the same iteration keeps its own change
    t.record("HA_Chassis", ROW_UPDATE, m1, {"priority": 30})
    t.record("Port_Binding", ROW_DELETE, cr)
    idx.apply(t)
    idx.track_references(t, lambda name: tables.get(name, {}))
    assert not t["Port_Binding"].updated and set(t["Port_Binding"].deleted) == {cr.uuid}
    t.clear()
    cr2 = pb("cr-lr0-pub", d, 1, "chassisredirect", ha_chassis_group=[g1])
    t.record("Port_Binding", ROW_CREATE, cr2)
    t.record("HA_Chassis", ROW_UPDATE, m1, {"priority": 20})
    idx.apply(t)
    idx.track_references(t, lambda name: tables.get(name, {}))
    assert set(t["Port_Binding"].created) == {cr2.uuid} and not t["Port_Binding"].updated
    t.clear()
    # nothing of the HA chain changed: nothing marked
    t.record("Port_Binding", ROW_UPDATE, ext, {"up": [False]})
    idx.track_references(t, lambda name: tables.get(name, {}))
    assert set(t["Port_Binding"].updated) == {ext.uuid} and not t["HA_Chassis_Group"]


def test_reference_tracking_dp_group():
    """A Logical_DP_Group edited in place (a datapath joins or leaves it)
    makes the lflows and load balancers using it tracked updates; the index
    follows an lflow moving to another group."""
    d1, d2 = dp(1), dp(2)
    grp, other = FakeRow(datapaths=[d1, d2]), FakeRow(datapaths=[d1])
    lf_grouped = FakeRow(logical_datapath=[], logical_dp_group=[grp])
    lf_other = FakeRow(logical_datapath=[], logical_dp_group=[other])
    lf_single = FakeRow(logical_datapath=[d1], logical_dp_group=[])
    lb = FakeRow(name="lb", datapaths=[], datapath_group=[grp])
    lb_plain = FakeRow(name="lb2", datapaths=[d1], datapath_group=[])
    lfs = {r.uuid: r for r in (lf_grouped, lf_other, lf_single)}
    tables = {"Load_Balancer": {lb.uuid: lb, lb_plain.uuid: lb_plain}, "Logical_Flow": lfs}
    idx = SbIndexes()
    idx.rebuild({"Logical_Flow": lfs})
    t = ChangeTracker(["Logical_DP_Group", "Logical_Flow", "Load_Balancer"])
    t.record("Logical_Flow", ROW_UPDATE, lf_single, {"match": "1"})
    idx.apply(t)
    idx.track_references(t, lambda name: tables.get(name, {}))
    assert idx.lf_by_dp_group is None        # built on the first group change only
    t.clear()
    grp.__dict__["datapaths"] = [d1]
    t.record("Logical_DP_Group", ROW_UPDATE, grp, {"datapaths": []})
    idx.track_references(t, lambda name: tables.get(name, {}))
    assert set(t["Logical_Flow"].updated) == {lf_grouped.uuid}
    assert set(t["Load_Balancer"].updated) == {lb.uuid}
    t.clear()
    lf_grouped.__dict__["logical_dp_group"] = [other]
    t.record("Logical_Flow", ROW_UPDATE, lf_grouped, {"logical_dp_group": [grp]})
    idx.apply(t)
    t.clear()
    t.record("Logical_DP_Group", ROW_UPDATE, grp, {"datapaths": []})
    idx.track_references(t, lambda name: tables.get(name, {}))
    assert not t["Logical_Flow"]
    t.clear()
    t.record("Logical_DP_Group", ROW_UPDATE, other, {"datapaths": []})
    idx.track_references(t, lambda name: tables.get(name, {}))
    assert set(t["Logical_Flow"].updated) == {lf_grouped.uuid, lf_other.uuid}
    assert not t["Load_Balancer"]
    idx.rebuild({"Logical_Flow": lfs})          # a replaced replica: built again later
    assert idx.lf_by_dp_group is None
