"""Sliced VIF claims (issue 15): a binding pass or handler that ran out of
its CPU budget queues the remaining claims; claiming them slice by slice
must end in the state one unbudgeted pass reaches."""

from __future__ import annotations

from typing import Any

import structlog

from controller.binding.if_status import IfStatusMgr
from controller.binding.incremental import (
    claim_queued,
    handle_ovs_interface_changes,
    handle_port_binding_changes,
)
from controller.engine.agent_nodes import AgentState
from controller.engine.core import Engine, Handled, Node, State
from controller.nodes.runtime_data import RuntimeDataNode
from controller.ovsdb.tracking import (
    ROW_CREATE,
    ROW_DELETE,
    ROW_UPDATE,
    ChangeTracker,
    TableChanges,
)
from ofctrl.seqno import SeqnoTracker
from tests.agent.fakes import dp, pb
from tests.agent.test_binding import World

N_SWITCHES = 6
VIFS_PER_SWITCH = 3


def build(w: World, *, with_pbs: bool = True, plain: bool = False) -> list[Any]:
    """Switches behind one router (patch pairs), VIFs with MACs, a container
    behind the first VIF, a localport and a localnet: the rows created
    (`plain`: no patch or localnet ports, which a Port_Binding handler
    leaves to a recompute once their datapath is local)."""
    lr = w.lr
    rows: list[Any] = []
    for s in range(N_SWITCHES):
        ls = dp(10 + s, external_ids={"logical-switch": f"ls{s}"})
        if not plain:
            rows.append(pb(f"ls{s}-lr", ls, 100, type="patch", options={"peer": f"lr-ls{s}"}))
            rows.append(pb(f"lr-ls{s}", lr, 100 + s, type="patch",
                           options={"peer": f"ls{s}-lr"}))
        for p in range(VIFS_PER_SWITCH):
            name = f"s{s}p{p}"
            rows.append(pb(name, ls, p + 1, mac=[f"00:00:00:00:{s:02x}:{p:02x} 10.0.{s}.{p}"]))
            w.add_vif(f"vif-{name}", name, ofport=100 * s + p + 1)
        if s == 0:
            rows.append(pb("ctr", ls, 50, parent_port=["s0p0"], tag=[7]))
            rows.append(pb("lp", ls, 51, type="localport"))
            w.add_vif("vif-lp", "lp", ofport=999)
            if not plain:
                rows.append(pb("ln", ls, 52, type="localnet",
                               options={"network_name": "phys"}))
    if with_pbs:
        for r in rows:
            w.pbs[r.uuid] = r
    return rows


def summary(w: World) -> dict[str, Any]:
    """What a binding pass decides, by names (the two worlds' UUIDs differ)."""
    rt = w.rt
    by_uuid = {r.uuid: r for r in w.pbs.values()}

    def name(row: Any) -> str:
        return str(by_uuid[row.uuid].logical_port)

    return {
        "chassis": {p.logical_port: [c.name for c in p.chassis] for p in w.pbs.values()},
        "up": {p.logical_port: p.up for p in w.pbs.values()},
        "bound_here": set(rt.bound_here), "local_lports": set(rt.local_lports),
        "related": set(rt.related_lports), "related_ids": set(rt.related_lport_ids),
        "local_dps": {ld.key: (sorted((name(a), name(b)) for a, b in ld.peer_ports),
                               ld.localnet_port.logical_port if ld.localnet_port else None)
                      for ld in rt.local_datapaths.values()},
        "bindings": {k: (lb.pb.logical_port if lb.pb is not None else None,
                         sorted(lb.children)) for k, lb in rt.bindings.items()},
        "if_status": w.mgr.dump(),
        "queue": list(rt.claim_queue),
    }


def claim_logs(logs: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in logs if "Claiming" in e["event"]]


def drain(w: World) -> int:
    """Claim the queue slice by slice, as the engine's resume calls would;
    the number of slices."""
    slices = 0
    while w.rt.claim_queue:
        w.rt.clear_tracked()
        before = set(w.rt.bound_here)
        claim_queued(w.ctx(), w.rt)
        slices += 1
        new = w.rt.bound_here - before
        assert len(new) == 1            # budget 0: one claim per slice, always progress
        tracked = {n for t in w.rt.tracked_dps.dps.values() for n in t.lports}
        assert new <= tracked and w.rt.tracked
        assert slices <= 100
    return slices


def test_sliced_full_pass_ends_where_one_pass_does() -> None:
    one, sliced = World(), World()
    one.rt.slice_ms = None
    sliced.rt.slice_ms = 0.0
    build(one)
    build(sliced)
    with structlog.testing.capture_logs() as logs_one:
        one.run()
    with structlog.testing.capture_logs() as logs_sliced:
        sliced.run()
        vifs = [f"s{s}p{p}" for s in range(N_SWITCHES) for p in range(VIFS_PER_SWITCH)]
        # Budget spent at once: every VIF claim queued in table order; the
        # rest of the pass is complete (datapaths, related and local ports).
        # (the container follows its parent)
        assert list(sliced.rt.claim_queue) == vifs[:VIFS_PER_SWITCH] + ["ctr"] + \
            vifs[VIFS_PER_SWITCH:]
        assert not set(vifs) & sliced.rt.bound_here
        assert all(sliced.pbs[u].chassis == [] for u in sliced.pbs
                   if sliced.pbs[u].logical_port in vifs)
        partial = summary(sliced)
        full = summary(one)
        for key in ("local_lports", "related", "related_ids", "local_dps", "bindings"):
            assert partial[key] == full[key], key
        assert drain(sliced) == len(vifs) + 1
    assert summary(sliced) == summary(one)
    assert claim_logs(logs_sliced) == claim_logs(logs_one)
    assert len(claim_logs(logs_one)) == 2 * len(vifs) + 1     # lport + MAC, and ctr


def test_sliced_handler_claims_end_where_one_handler_does() -> None:
    """Cold start: the Port_Bindings arrive as one tracked SB update."""
    results = []
    for slice_ms in (None, 0.0):
        w = World()
        w.rt.slice_ms = slice_ms
        rows = build(w, with_pbs=False, plain=True)
        w.run()                         # bindings from br-int, no Port_Binding yet
        t = ChangeTracker(["Port_Binding"])
        for r in rows:
            w.pbs[r.uuid] = r
            t.record("Port_Binding", ROW_CREATE, r)
        w.rt.clear_tracked()
        assert handle_port_binding_changes(w.ctx(), w.rt, t["Port_Binding"])
        if slice_ms is not None:
            # The budget starts with the first claim: that one is made (and
            # its container's); the other VIFs wait.
            assert len(w.rt.claim_queue) == N_SWITCHES * VIFS_PER_SWITCH - 1
            assert "ctr" in w.rt.bound_here
            drain(w)
        results.append(summary(w))
    assert results[0] == results[1]


def test_queued_claim_taken_by_a_handler_or_gone_with_its_interface() -> None:
    w = World()
    w.rt.slice_ms = 0.0
    build(w)
    w.run()
    assert "s1p1" in w.rt.claim_queue and "s2p0" in w.rt.claim_queue
    # s1p1's interface goes away before its slice: nothing to claim.
    iface = next(i for p in w.br.ports for i in p.interfaces if i.name == "vif-s1p1")
    w.br.ports[:] = [p for p in w.br.ports if iface not in p.interfaces]
    t = ChangeTracker(["Interface"])
    t.record("Interface", ROW_DELETE, iface)
    w.rt.clear_tracked()
    assert handle_ovs_interface_changes(w.ctx(), w.rt, t["Interface"])
    # A handler with budget left claims a queued VIF at once: it leaves the queue.
    w.rt.slice_ms = 50.0
    w.rt.clear_tracked()
    s2p0 = w.idx.pb_by_name.get("s2p0")
    t = ChangeTracker(["Port_Binding"])
    t.record("Port_Binding", ROW_UPDATE, s2p0, {"external_ids": {}})
    assert handle_port_binding_changes(w.ctx(), w.rt, t["Port_Binding"])
    assert "s2p0" in w.rt.bound_here and "s2p0" not in w.rt.claim_queue
    w.rt.slice_ms = 0.0
    drain_all = 0
    while w.rt.claim_queue:
        w.rt.clear_tracked()
        claim_queued(w.ctx(), w.rt)
        drain_all += 1
    s1p1 = w.idx.pb_by_name.get("s1p1")
    assert s1p1.chassis == [] and "s1p1" not in w.rt.bound_here
    assert w.mgr.state_of("s1p1") is None
    assert all(w.idx.pb_by_name.get(n).chassis == [w.me] for n in w.rt.bound_here)


def test_engine_holds_runtime_data_pending_and_resumes_once_per_run() -> None:
    """The node is pending (not valid) while claims are queued; no slice
    runs in the recompute's own engine run; each later run claims one
    slice and hands it on as tracked changes."""
    w = World()
    build(w)
    st = AgentState(IfStatusMgr(SeqnoTracker()))
    st.if_mgr = w.mgr
    st.rt = w.rt
    st.rt.slice_ms = 0.0
    st.chassis, st.br_int, st.pb_rows, st.idx = w.me, w.br, w.pbs, w.idx
    st.idx.rebuild({"Port_Binding": w.pbs})
    st.sb_readonly = st.ovs_readonly = False
    impl = RuntimeDataNode(st)
    pb_changes = TableChanges("Port_Binding")
    leaf = Node("SB_port_binding", lambda n: False, data=pb_changes)
    node = Node("runtime_data", impl.run, data=impl.data, clear_tracked=impl.clear_tracked,
                pending=impl.pending, resume=impl.resume)
    node.add_input(leaf, impl.handlers["sb_port_binding"])
    seen: list[tuple[bool, frozenset[str]]] = []

    def downstream(n: Node, inp: Node) -> Handled:
        rt = inp.data
        seen.append((rt.tracked, frozenset(x for t in rt.tracked_dps.dps.values()
                                           for x in t.lports)))
        return Handled.UPDATED

    root = Node("probe", lambda n: True)
    root.add_input(node, downstream)
    engine = Engine(root)
    engine.set_force_recompute()
    engine.init_run()
    engine.run()
    engine.clear_force()
    n_vifs = N_SWITCHES * VIFS_PER_SWITCH
    assert node.pending() and not node.is_valid()
    assert len(st.rt.claim_queue) == n_vifs + 1 and root.stats.recompute == 1   # and ctr
    runs = 0
    while node.pending():
        engine.init_run()
        engine.run()
        runs += 1
        assert node.state is State.UPDATED
        tracked, names = seen[-1]
        assert tracked and len(names & st.rt.bound_here) >= 1
    assert runs == n_vifs + 1 and node.is_valid()         # the VIFs and the container
    engine.init_run()
    engine.run()
    assert node.is_valid() and node.state is State.UNCHANGED
    assert all(w.idx.pb_by_name.get(f"s{s}p{p}").chassis == [w.me]
               for s in range(N_SWITCHES) for p in range(VIFS_PER_SWITCH))
