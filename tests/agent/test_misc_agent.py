from controller.binding.local_data import LocalDatapath
from controller.chassis.features import Features, from_capabilities
from controller.chassis.patch import StartupDelay, plan_patch_ports
from controller.diag.unixctl import COMMANDS, CommandError, version_reply
from controller.ovsdb.indexes import SbIndexes
from tests.agent.fakes import FakeRow, dp, pb


def test_features_from_capabilities():
    f = from_capabilities({"ct_zero_snat": "true", "max_hash_alg": "1", "ct_flush": "true"},
                          True)
    assert f == Features(True, True, True, True)
    assert from_capabilities({"max_hash_alg": "x"}, False) == Features()


def test_patch_plan_creates_pairs_and_reports_stale():
    d = dp(1)
    ln = pb("ln", d, 1, type="localnet", options={"network_name": "phys"})
    l2 = pb("l2", d, 2, type="l2gateway", options={"network_name": "phys"}, chassis=[])
    idx = SbIndexes()
    idx.rebuild({"Port_Binding": {ln.uuid: ln, l2.uuid: l2}})
    stale = FakeRow(name="patch-br-int-to-old", external_ids={"ovn-localnet-port": "old"},
                    interfaces=[])
    br_int = FakeRow(name="br-int", ports=[stale])
    br_phys = FakeRow(name="br-phys", ports=[])
    plan = plan_patch_ports(br_int, {"br-int": br_int, "br-phys": br_phys},
                            [("phys", "br-phys")], FakeRow(name="hv1"),
                            {d.uuid: LocalDatapath(d)}, idx, set())
    names = {(s.bridge, s.name, s.peer, s.key, s.lport) for s in plan.create}
    assert names == {("br-int", "patch-br-int-to-ln", "patch-ln-to-br-int",
                      "ovn-localnet-port", "ln"),
                     ("br-phys", "patch-ln-to-br-int", "patch-br-int-to-ln",
                      "ovn-localnet-port", "ln")}
    assert plan.stale == [stale]            # l2 is not bound here: no ports for it
    # An existing pair is kept.
    p1 = FakeRow(name="patch-br-int-to-ln", external_ids={"ovn-localnet-port": "ln"},
                 interfaces=[FakeRow(type="patch", options={"peer": "patch-ln-to-br-int"})])
    p2 = FakeRow(name="patch-ln-to-br-int", external_ids={"ovn-localnet-port": "ln"},
                 interfaces=[FakeRow(type="patch", options={"peer": "patch-br-int-to-ln"})])
    br_int2 = FakeRow(name="br-int", ports=[p1])
    br_phys2 = FakeRow(name="br-phys", ports=[p2])
    plan2 = plan_patch_ports(br_int2, {"br-int": br_int2, "br-phys": br_phys2},
                             [("phys", "br-phys")], FakeRow(name="hv1"),
                             {d.uuid: LocalDatapath(d)}, idx, set())
    assert plan2.create == [] and plan2.stale == []


def test_startup_delay():
    sd = StartupDelay(0)
    assert sd.active(0)
    for _ in range(StartupDelay.SEED):
        sd.engine_updated()
    assert sd.active(5000) and not sd.active(20_000)
    sd2 = StartupDelay(0)
    sd2.ignore = True
    assert not sd2.active(0)


class FakeAgent:
    def __init__(self):
        from controller.engine.core import Engine, Node
        self.engine = Engine(Node("root", lambda n: True))
        self.paused = False
        self.exit = None
        self.recomputed = False
        from controller.diag.coverage import Coverage
        from controller.diag.loop_stats import LoopStats
        from controller.diag.stopwatch import Stopwatches
        self.loop_stats = LoopStats()
        self.stopwatches = Stopwatches(("flow-generation",))
        self.coverage = Coverage(("lflow_run",))

    def request_exit(self, restart):
        self.exit = restart

    def sb_connected(self):
        return True

    def force_recompute(self):
        self.recomputed = True

    def wake(self):
        pass


def call(agent, name, *args):
    return COMMANDS[name][3](agent, *args)


def test_unixctl_command_functions():
    a = FakeAgent()
    assert call(a, "connection-status") == "connected"
    call(a, "exit", "--restart")
    assert a.exit is True
    try:
        call(a, "exit", "--bogus")
        raise AssertionError("expected CommandError")
    except CommandError:
        pass
    call(a, "inc-engine/recompute")
    assert a.recomputed
    assert call(a, "inc-engine/show-stats").startswith("Node: root\n- recompute: ")
    assert call(a, "loop-stats", "--json").startswith("{")
    assert call(a, "debug/status") == "running"
    call(a, "debug/pause")
    assert call(a, "debug/status") == "paused"
    call(a, "debug/resume")
    assert "Statistics for 'flow-generation'" in call(a, "stopwatch/show")
    try:
        call(a, "stopwatch/show", "nope")
        raise AssertionError("expected CommandError")
    except CommandError as e:
        assert str(e) == "No such stopwatch"
    assert call(a, "coverage/read-counter", "lflow_run") == "0\n"
    assert version_reply().splitlines()[:2] == ["ovn-controller 23.03.1",
                                               "Open vSwitch Library 3.1.0"]


def test_bfd_chassis_and_config():
    from controller.chassis.bfd import bfd_chassis, bfd_config
    me, hv2, hv3, ref = (FakeRow(name=n, other_config={}) for n in ("hv1", "hv2", "hv3", "c1"))
    remote = FakeRow(name="r1", other_config={"is-remote": "true"})

    def grp(members, refs=()):
        return FakeRow(ha_chassis=[FakeRow(chassis=[m]) for m in members],
                       ref_chassis=list(refs))
    assert bfd_chassis(me, [grp([me, hv2], [ref, remote])]) == {"hv1", "hv2", "c1"}
    assert bfd_chassis(me, [grp([me])]) == set()              # single member: no BFD
    assert bfd_chassis(me, [grp([hv2, hv3], [me])]) == {"hv2", "hv3"}
    assert bfd_chassis(me, [grp([hv2, hv3], [ref])]) == set()
    sbg = FakeRow(options={"bfd-min-rx": "100", "bfd-mult": "3"})
    assert bfd_config(sbg) == {"enable": "true", "check_tnl_key": "true", "min_rx": "100",
                               "mult": "3"}


def test_patches_skip_port_scan_while_no_mapping_names_a_bridge():
    from controller.chassis.patch import Patches

    d = dp(1)
    ln = pb("ln", d, 1, type="localnet", options={"network_name": "phys"})
    idx = SbIndexes()
    idx.rebuild({"Port_Binding": {ln.uuid: ln}})
    scans = []
    real = idx.pbs_on_datapath
    idx.pbs_on_datapath = lambda u: scans.append(u) or real(u)   # type: ignore[method-assign]
    br_int = FakeRow(name="br-int", ports=[])
    tables = {"Bridge": FakeRow(rows={br_int.uuid: br_int})}
    lds = {d.uuid: LocalDatapath(d)}
    p = Patches()
    txn = FakeRow()
    for _ in range(3):
        assert not p.run(txn, tables, br_int, [("phys", "br-phys")], FakeRow(name="hv1"),
                         lds, idx)
    assert scans == [d.uuid]                 # scanned once (to log the skipped port)
    assert p.missed == {"ln;phys"}
    d2 = dp(2)
    lds[d2.uuid] = LocalDatapath(d2)          # a new local datapath: scanned again
    p.run(txn, tables, br_int, [("phys", "br-phys")], FakeRow(name="hv1"), lds, idx)
    assert len(scans) == 3
    # Once the bridge exists, every run scans (and creates the pair).
    br_phys = FakeRow(name="br-phys", ports=[])
    tables["Bridge"].rows[br_phys.uuid] = br_phys

    class Txn:
        def add_comment(self, text: str) -> None:
            pass

        def insert(self, table: object) -> FakeRow:
            return FakeRow()

    before = len(scans)
    results = [p.run(Txn(), {**tables, "Interface": None, "Port": None}, br_int,
                     [("phys", "br-phys")], FakeRow(name="hv1"), lds, idx) for _ in range(2)]
    assert results == [True, False]          # the pair is created, then found
    assert len(scans) == before + 4          # 2 runs x 2 local datapaths
