import structlog

from controller.binding.claim import BindingCtx, CanBind, RuntimeData, binding_run, can_bind_here
from controller.binding.if_status import IfState, IfStatusMgr
from controller.binding.incremental import (
    handle_ovs_interface_changes,
    handle_port_binding_changes,
    retry_postponed,
)
from controller.ovsdb.indexes import SbIndexes
from controller.ovsdb.tracking import ROW_CREATE, ROW_DELETE, ROW_UPDATE, ChangeTracker
from ofctrl.seqno import SeqnoTracker
from tests.agent.fakes import FakeRow, dp, pb


def chassis(name, hostname=None):
    return FakeRow(name=name, hostname=hostname or name, encaps=[], other_config={})


class World:
    def __init__(self):
        self.me = chassis("hv1", "host1")
        self.other = chassis("hv2")
        self.ls = dp(1, external_ids={"logical-switch": "x"})
        self.lr = dp(2, external_ids={"logical-router": "x"})
        self.ls2 = dp(3, external_ids={"logical-switch": "y"})
        self.pbs = {}
        self.ifaces = []
        self.br = FakeRow(name="br-int", ports=[])
        self.seq = SeqnoTracker()
        self.mgr = IfStatusMgr(self.seq)
        self.rt = RuntimeData()
        self.idx = SbIndexes()
        self.now = 10_000

    def add_pb(self, *a, **kw):
        p = pb(*a, **kw)
        self.pbs[p.uuid] = p
        return p

    def add_vif(self, name, iface_id, ofport=1, **ext):
        e = {"iface-id": iface_id}
        e.update(ext)
        iface = FakeRow(name=name, type="", external_ids=e, ofport=[ofport])
        self.br.ports.append(FakeRow(name=name, interfaces=[iface]))
        return iface

    def ctx(self, sb_readonly=False):
        self.idx.rebuild({"Port_Binding": self.pbs})
        return BindingCtx(self.me, self.idx, self.pbs, self.br, sb_readonly, False, self.mgr,
                          {"phys": "br-ex"}, now_ms=self.now)

    def run(self, **kw):
        binding_run(self.ctx(**kw), self.rt)


def test_requested_chassis_rules():
    me = chassis("hv1", "host1")
    d = dp(1)
    assert can_bind_here(me, pb("a", d, 1)) is CanBind.MAIN
    assert can_bind_here(me, pb("a", d, 1, options={"requested-chassis": "host1"})) \
        is CanBind.MAIN
    assert can_bind_here(me, pb("a", d, 1, options={"requested-chassis": "hv9,hv1"})) \
        is CanBind.ADDITIONAL
    assert can_bind_here(me, pb("a", d, 1, options={"requested-chassis": "hv9"})) \
        is CanBind.CANNOT
    assert can_bind_here(me, pb("a", d, 1, options={"requested-chassis": "hv9"},
                                requested_chassis=[me])) is CanBind.MAIN


def test_vif_claim_via_if_status_then_up_after_ack():
    w = World()
    p1 = w.add_pb("p1", w.ls, 1)
    iface = w.add_vif("vif1", "p1")
    w.add_vif("vif-noport", "p9", ofport=-1)
    with structlog.testing.capture_logs() as logs:
        w.run()
    assert p1.chassis == [w.me]
    assert "Claiming lport p1 for this chassis." in [e["event"] for e in logs]
    assert w.rt.local_lports == {"p1"} and "p9" not in w.rt.bindings
    assert set(w.rt.local_datapaths) == {w.ls.uuid}
    assert "1_1" in w.rt.related_lport_ids
    view = _view(w)
    w.mgr.update(view, w.me, False, False)
    assert w.mgr.state_of("p1") is IfState.INSTALL_FLOWS
    # Nothing is marked up before the barrier acks the flows.
    w.mgr.run(view, w.me, False, False)
    assert "ovn-installed" not in iface.external_ids and p1.up == [False]
    w.seq.run(w.seq.get_req_cfg())
    with structlog.testing.capture_logs() as logs:
        w.mgr.run(view, w.me, False, False)
    events = [e["event"] for e in logs]
    assert "Setting lport p1 ovn-installed in OVS" in events
    assert "Setting lport p1 up in Southbound" in events
    assert iface.external_ids["ovn-installed"] == "true" and p1.up == [True]
    w.mgr.update(view, w.me, False, False)
    assert w.mgr.state_of("p1") is IfState.INSTALLED


def _view(w):
    from controller.binding.claim import Binder
    return Binder(w.ctx(), w.rt, track=False)


def test_release_when_requested_elsewhere_and_localport():
    w = World()
    p1 = w.add_pb("p1", w.ls, 1, chassis=[w.me], options={"requested-chassis": "hv2"})
    w.add_pb("lp", w.ls, 2, type="localport")
    w.add_vif("vif1", "p1")
    w.add_vif("vif2", "lp")
    w.run()
    assert p1.chassis == []
    assert "lp" in w.rt.related_lports and "lp" not in w.rt.bound_here


def test_anti_flip_flop_postpones_reclaim():
    w = World()
    p1 = w.add_pb("p1", w.ls, 1)
    w.add_vif("vif1", "p1")
    w.run()
    assert p1.chassis == [w.me]
    p1.__dict__["chassis"] = [w.other]       # another chassis took it
    w.now += 100
    w.run()
    assert p1.chassis == [w.other] and "p1" in w.rt.postponed
    w.now += 600
    assert retry_postponed(w.ctx(), w.rt)
    assert p1.chassis == [w.me] and not w.rt.postponed


def test_gateways_container_localnet_and_patch_peers():
    w = World()
    l2 = w.add_pb("l2", w.ls2, 5, type="l2gateway", options={"l2gateway-chassis": "hv1"})
    l3 = w.add_pb("l3", w.lr, 6, type="l3gateway", options={"l3gateway-chassis": "hv9"},
                  chassis=[w.me])
    parent = w.add_pb("vm", w.ls, 1)
    child = w.add_pb("ctr", w.ls, 2, parent_port=["vm"], tag=[10])
    ln = w.add_pb("ln", w.ls, 3, type="localnet", options={"network_name": "phys"})
    sw_rp = w.add_pb("ls-lr", w.ls, 4, type="patch", options={"peer": "lr-ls"})
    rp = w.add_pb("lr-ls", w.lr, 1, type="patch", options={"peer": "ls-lr"})
    w.add_vif("vif1", "vm")
    w.run()
    assert l2.chassis == [w.me] and l2.up == [True]
    assert l3.chassis == []                         # not ours any more
    assert child.chassis == [w.me]                  # container claimed directly
    assert {w.ls.uuid, w.lr.uuid, w.ls2.uuid} == set(w.rt.local_datapaths)
    ld = w.rt.local_datapaths[w.ls.uuid]
    assert ld.localnet_port is ln
    assert ld.peer_ports == [(sw_rp, rp)]
    assert {"vm", "ctr", "ln", "l2"} <= w.rt.local_lports
    assert parent.chassis == [w.me]
    dump = w.rt.dump_local_bindings()
    assert "name: [vm], OVS interface name : [vif1], num binding lports : [2]" in dump


def test_ha_chassisredirect_active_and_standby():
    w = World()
    hc_me = FakeRow(chassis=[w.me], priority=20)
    hc_other = FakeRow(chassis=[w.other], priority=10)
    grp = FakeRow(ha_chassis=[hc_me], ref_chassis=[])
    cr = w.add_pb("cr-lrp", w.lr, 3, type="chassisredirect", ha_chassis_group=[grp])
    w.run()
    assert cr.chassis == [w.me] and w.lr.uuid in w.rt.local_datapaths
    grp2 = FakeRow(ha_chassis=[hc_me, hc_other], ref_chassis=[])
    cr2 = w.add_pb("cr2", w.ls2, 3, type="chassisredirect", ha_chassis_group=[grp2])
    w.run()   # no BFD tunnels up: standby, datapath still local
    assert cr2.chassis == [] and w.ls2.uuid in w.rt.local_datapaths


def test_incremental_interface_and_port_binding_handlers():
    w = World()
    p1 = w.add_pb("p1", w.ls, 1)
    p2 = w.add_pb("p2", w.ls, 2)
    w.run()
    assert p1.chassis == [] and w.rt.local_lports == set()
    # A new VIF appears.
    iface = w.add_vif("vif1", "p1")
    t = ChangeTracker(["Interface", "Port_Binding"])
    t.record("Interface", ROW_CREATE, iface)
    assert handle_ovs_interface_changes(w.ctx(), w.rt, t["Interface"])
    assert p1.chassis == [w.me] and "p1" in w.rt.local_lports
    assert w.ls.uuid in w.rt.tracked_dps.dps
    assert w.rt.tracked_dps.dps[w.ls.uuid].type.value == "new"
    # iface-id changes from p1 to p2: p1 released, p2 claimed.
    w.rt.clear_tracked()
    t.clear()
    iface.external_ids = {"iface-id": "p2"}
    t.record("Interface", ROW_UPDATE, iface, {"external_ids": None})
    assert handle_ovs_interface_changes(w.ctx(), w.rt, t["Interface"])
    assert p1.chassis == [] and p2.chassis == [w.me]
    assert w.rt.local_lports == {"p2"}
    # requested-chassis moves p2 away: the PB handler releases it.
    t.clear()
    p2.__dict__["options"] = {"requested-chassis": "hv2"}
    t.record("Port_Binding", ROW_UPDATE, p2, {"options": None})
    assert handle_port_binding_changes(w.ctx(), w.rt, t["Port_Binding"])
    assert p2.chassis == [] and "p2" not in w.rt.bound_here
    assert "p2" in w.rt.local_lports      # the iface is still here (monitoring)
    # A type change needs a recompute.
    t.clear()
    t.record("Port_Binding", ROW_UPDATE, p1, {"type": None})
    assert not handle_port_binding_changes(w.ctx(), w.rt, t["Port_Binding"])
    # Deleting the interface.
    t.clear()
    p2.__dict__["options"] = {}
    w.run()
    assert p2.chassis == [w.me]
    w.br.ports.clear()
    t.record("Interface", ROW_DELETE, iface)
    assert handle_ovs_interface_changes(w.ctx(), w.rt, t["Interface"])
    assert p2.chassis == [] and "p2" not in w.rt.bindings


def test_sb_readonly_defers_claim():
    w = World()
    p1 = w.add_pb("p1", w.ls, 1)
    w.add_vif("vif1", "p1")
    w.run(sb_readonly=True)
    assert p1.chassis == [] and w.mgr.state_of("p1") is IfState.CLAIMED
    w.mgr.update(_view(w), w.me, False, False)   # SB writable again
    assert p1.chassis == [w.me]


def test_additional_chassis_claim_and_virtual_port():
    w = World()
    p1 = w.add_pb("p1", w.ls, 1, options={"requested-chassis": "hv2,hv1"},
                  chassis=[w.other])
    w.add_vif("vif1", "p1")
    w.run()
    assert p1.chassis == [w.other]                 # main stays on hv2
    assert p1.additional_chassis == [w.me]         # we are an additional chassis
    # Virtual port whose virtual parent is bound here gets claimed here.
    vm = w.add_pb("vm", w.ls, 3)
    w.add_vif("vif-vm", "vm")
    vip = w.add_pb("vip", w.ls, 4, type="virtual", virtual_parent=["vm"])
    w.run()
    assert vm.chassis == [w.me] and vip.chassis == [w.me]
    assert "vip" in w.rt.bindings["vm"].children
    # Parent gone: the virtual port is released.
    w.br.ports[:] = [p for p in w.br.ports if p.name != "vif-vm"]
    w.run()
    assert vip.chassis == [] and vip.virtual_parent == []


def test_external_port_follows_ha_group():
    w = World()
    grp = FakeRow(ha_chassis=[FakeRow(chassis=[w.me], priority=10)], ref_chassis=[])
    ext = w.add_pb("ext", w.ls2, 1, type="external", ha_chassis_group=[grp])
    ln = w.add_pb("ln2", w.ls2, 2, type="localnet", options={"network_name": "phys"})
    w.run()
    assert ext.chassis == [w.me] and ext.up == [True]
    ld = w.rt.local_datapaths[w.ls2.uuid]
    assert ld.external_ports == {"ext": ext} and ld.localnet_port is ln
    grp.ha_chassis = [FakeRow(chassis=[w.other], priority=10)]
    w.run()
    assert ext.chassis == [] and w.ls2.uuid not in w.rt.local_datapaths


def _two_switches(iface_type):
    """p1 on ls (vif1) and p2, p3 on ls2 (vif2, vif3), all bound here."""
    w = World()
    w.add_pb("p1", w.ls, 1)
    w.add_pb("p2", w.ls2, 1)
    w.add_pb("p3", w.ls2, 2)
    ifaces = {}
    for i, port in ((1, "p1"), (2, "p2"), (3, "p3")):
        ifaces[port] = w.add_vif(f"vif{i}", port, ofport=i)
        ifaces[port].__dict__["type"] = iface_type
    w.run()
    assert set(w.rt.local_datapaths) == {w.ls.uuid, w.ls2.uuid}
    return w, ifaces


def _delete_ifaces(w, ifaces, *ports):
    t = ChangeTracker(["Interface"])
    for port in ports:
        iface = ifaces[port]
        w.br.ports[:] = [p for p in w.br.ports if iface not in p.interfaces]
        t.record("Interface", ROW_DELETE, iface)
    w.rt.clear_tracked()
    return handle_ovs_interface_changes(w.ctx(), w.rt, t["Interface"])


def test_last_lport_of_a_datapath_released_by_a_dummy_iface_recomputes():
    # The C agent recomputes runtime_data for any change of an interface whose
    # type is not ""/"internal"; the recompute drops the orphaned datapath.
    w, ifaces = _two_switches("dummy")
    assert _delete_ifaces(w, ifaces, "p2")          # p3 still keeps ls2 local
    assert "p2" not in w.rt.bound_here and w.ls2.uuid in w.rt.local_datapaths
    assert not _delete_ifaces(w, ifaces, "p3")      # the last one: recompute
    w.run()
    assert set(w.rt.local_datapaths) == {w.ls.uuid}
    assert w.rt.local_lports == {"p1"} and w.rt.bound_here == {"p1"}


def test_all_lports_of_a_datapath_released_at_once_by_dummy_ifaces_recomputes():
    w, ifaces = _two_switches("dummy")
    assert not _delete_ifaces(w, ifaces, "p2", "p3")
    w.run()
    assert set(w.rt.local_datapaths) == {w.ls.uuid}


def test_last_lport_of_a_datapath_released_by_a_vif_iface_stays_incremental():
    # Plain VIF interfaces are handled incrementally by the C agent, which
    # never removes a local datapath incrementally: it stays until a recompute.
    w, ifaces = _two_switches("")
    assert _delete_ifaces(w, ifaces, "p2", "p3")
    assert w.rt.bound_here == {"p1"} and w.ls2.uuid in w.rt.local_datapaths
    w, ifaces = _two_switches("internal")
    assert _delete_ifaces(w, ifaces, "p2", "p3")
    assert w.ls2.uuid in w.rt.local_datapaths


def test_recompute_in_start_up_grace_frees_zones_of_users_seen_before():
    # A recompute while the start-up grace period keeps absent users' zones
    # (e.g. the one after the last dummy VIF of a datapath went away) still
    # frees the zones of a released lport and of a datapath no longer local,
    # as the C agent does; only users never seen since start are kept.
    from controller.binding.ct_zones import CtZones
    w, ifaces = _two_switches("dummy")
    ct = CtZones()
    ext = {"ct-zone-late": "40"}
    ct.recompute(w.rt.local_lports, [ld.datapath for ld in w.rt.local_datapaths.values()], ext,
                 keep_absent=True)
    assert {"p1", "p2", "p3", f"{w.ls2.uuid}_dnat", "late"} <= set(ct.current)
    assert not _delete_ifaces(w, ifaces, "p2", "p3")
    w.run()
    ct.recompute(w.rt.local_lports, [ld.datapath for ld in w.rt.local_datapaths.values()], ext,
                 keep_absent=True)
    assert set(ct.current) == {"p1", f"{w.ls.uuid}_dnat", f"{w.ls.uuid}_snat", "late"}
    assert ct.drop_absent(w.rt.local_lports,
                          [ld.datapath for ld in w.rt.local_datapaths.values()])
    assert "late" not in ct.current and ct.seen is None


def test_other_chassis_gateway_port_claim_is_handled_in_place():
    """Another chassis claiming its l3gateway port on one of our datapaths
    changes nothing here (a binding pass would leave it alone): no
    recompute; our own gateway port, an options change or a port that was
    ours still recompute."""
    w = World()
    w.add_pb("p1", w.ls, 1)
    w.add_vif("vif1", "p1")
    gw = w.add_pb("lsp-gw", w.ls, 5, type="l3gateway",
                  options={"l3gateway-chassis": "hv2", "peer": "gw-join"})
    w.add_pb("gw-join", w.lr, 1, type="l3gateway",
             options={"l3gateway-chassis": "hv2", "peer": "lsp-gw"})
    w.run()
    assert w.ls.uuid in w.rt.local_datapaths and w.lr.uuid not in w.rt.local_datapaths
    t = ChangeTracker(["Port_Binding"])
    gw.__dict__["chassis"] = [w.other]
    gw.__dict__["up"] = [True]
    t.record("Port_Binding", ROW_UPDATE, gw, {"chassis": None, "up": None})
    w.rt.clear_tracked()
    assert handle_port_binding_changes(w.ctx(), w.rt, t["Port_Binding"])
    assert not w.rt.tracked_dps.dps and gw.chassis == [w.other]
    fresh = World.__new__(World)
    fresh.__dict__.update(w.__dict__, rt=RuntimeData())
    fresh.run()
    assert set(fresh.rt.local_datapaths) == set(w.rt.local_datapaths)
    assert fresh.rt.local_lports == w.rt.local_lports

    def fails(old):
        t.clear()
        t.record("Port_Binding", ROW_UPDATE, gw, old)
        return not handle_port_binding_changes(w.ctx(), w.rt, t["Port_Binding"])
    assert fails({"chassis": [w.me.uuid]})             # it was ours
    assert fails({"options": None})                    # may have become ours
    gw.__dict__["options"] = {"l3gateway-chassis": "hv1", "peer": "gw-join"}
    assert fails({"chassis": None})                    # ours: the router gets local
