"""Differential flow parity: ours vs the C ovn-controller 23.03.1 (issue 7).

Each topology is built once with northd and saved; the snapshot is replayed
into two sandboxes with northd off, one running the C agent and one ours
(concurrently); br-int flows, groups and meters are normalised
(integration/normalise.py) and compared per table. Any difference fails,
with the report (first 20 differing flows per side and the SB row behind
each) in the assertion message.

``test_shared_conjunctive_clause`` covers logical flows sharing a
conjunctive clause flow (re-processing one flood-removes and rebuilds both).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from integration.differential import (
    DifferentialResult, Snapshot, build_snapshot, run_differential)
from integration.random_topology import build_random, plan_topology
from integration.sandbox import Sandbox
from integration.topologies import build_rich, build_seed
from physical.constants import table_is_declared

pytestmark = pytest.mark.integration

RANDOM_SEEDS = range(20)


class SnapshotCache:
    """Builds each topology's snapshot once per test session."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made: dict[str, Snapshot] = {}

    def get(self, name: str, builder: Callable[[Sandbox], object]) -> Snapshot:
        if name not in self.made:
            self.made[name] = build_snapshot(name, builder, self.root / name)
        return self.made[name]


@pytest.fixture(scope="session")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SnapshotCache]:
    yield SnapshotCache(tmp_path_factory.mktemp("differential-snapshots"))


def _check(result: DifferentialResult) -> None:
    print(result.report())
    assert result.identical > 0
    # Tables as data: every table either agent writes is a declared one.
    assert all(table_is_declared(t) for t in result.tables), sorted(result.tables)
    assert result.ok, result.report()


def test_rich(snapshots: SnapshotCache) -> None:
    result = run_differential(snapshots.get("rich", build_rich))
    assert result.identical > 1000
    assert len(result.theirs.canonical.groups) >= 8 and len(result.theirs.canonical.meters) >= 4
    _check(result)


def test_seed_50(snapshots: SnapshotCache) -> None:
    result = run_differential(snapshots.get("seed-50", lambda box: build_seed(box, 50)))
    assert result.identical > 15000
    _check(result)


@pytest.mark.slow
def test_seed_500(snapshots: SnapshotCache) -> None:
    result = run_differential(snapshots.get("seed-500", lambda box: build_seed(box, 500)),
                              timeout=900)
    assert result.identical > 160000
    _check(result)


@pytest.mark.parametrize("seed", RANDOM_SEEDS, ids=[f"seed-{s}" for s in RANDOM_SEEDS])
def test_random_topology(snapshots: SnapshotCache, seed: int) -> None:
    print(plan_topology(seed).describe())
    result = run_differential(snapshots.get(f"random-{seed}",
                                            lambda box: build_random(box, seed)))
    _check(result)


@pytest.mark.parametrize("seed", RANDOM_SEEDS, ids=[f"seed-{s}" for s in RANDOM_SEEDS])
def test_random_topology_after_vif_churn(snapshots: SnapshotCache, seed: int) -> None:
    """Incremental processing: after both agents settled, one local VIF is
    unbound and bound again and another is unbound for good."""
    plan = plan_topology(seed)
    here = [v for v in plan.vifs if v.where == "here"]
    if not here:
        pytest.skip("this plan binds no VIF here")     # not the case for the CI seeds

    def churn(box: Sandbox) -> None:
        box.unbind_vif(here[0].iface)
        box.wait_hv_sync()
        box.bind_vif(here[0].iface, here[0].name)
        if len(here) > 1:
            box.unbind_vif(here[1].iface)

    result = run_differential(snapshots.get(f"random-{seed}",
                                            lambda box: build_random(box, seed)),
                              after_settle=churn)
    _check(result)


@pytest.mark.parametrize("seed", RANDOM_SEEDS, ids=[f"seed-{s}" for s in RANDOM_SEEDS])
def test_random_topology_after_sb_churn(snapshots: SnapshotCache, seed: int) -> None:
    """Incremental processing of SB changes (northd is off, so the SB is
    edited directly): a remote port moves to another chassis, then the last
    remote chassis is deleted."""
    plan = plan_topology(seed)
    remote = [v for v in plan.vifs if v.where.startswith("remote:")]

    def churn(box: Sandbox) -> None:
        if remote:
            now = remote[0].where.split(":", 1)[1]
            box.sbctl("lsp-unbind", remote[0].name)
            other = [c[0] for c in plan.remote_chassis if c[0] != now]
            if other:
                box.sbctl("lsp-bind", remote[0].name, other[0])
            box.wait_hv_sync()
        box.sbctl("chassis-del", plan.remote_chassis[-1][0])

    result = run_differential(snapshots.get(f"random-{seed}",
                                            lambda box: build_random(box, seed)),
                              after_settle=churn)
    _check(result)


def test_rich_after_vif_churn(snapshots: SnapshotCache) -> None:
    """rich, then vif-a2 unbound and bound again and vif-b1 unbound."""
    def churn(box: Sandbox) -> None:
        box.unbind_vif("vif-a2")
        box.wait_hv_sync()
        box.bind_vif("vif-a2", "ls-a-p2")
        box.wait_hv_sync()
        box.unbind_vif("vif-b1")

    result = run_differential(snapshots.get("rich", build_rich), after_settle=churn)
    assert result.identical > 1000
    _check(result)


def _shared_clause_topology(box: Sandbox) -> None:
    """Two port groups with the same member and conjunctive ACLs whose
    ``tcp.dst`` sets overlap (8080): both lflows own one clause flow."""
    box.nbctl("--no-wait", "--", "ls-add", "ls0", "--", "lsp-add", "ls0", "p1",
              "--", "lsp-set-addresses", "p1", "0a:00:00:00:00:01 10.0.0.11",
              "--", "pg-add", "pga", "p1", "--", "pg-add", "pgb", "p1",
              "--", "acl-add", "pga", "to-lport", "1003",
              "outport == @pga && ip4.src == {10.0.0.1, 10.0.0.2} && tcp.dst == {80, 8080}",
              "allow",
              "--", "acl-add", "pgb", "to-lport", "1003",
              "outport == @pgb && ip4.src == {10.0.0.3, 10.0.0.4} && tcp.dst == {8080, 9090}",
              "allow")
    box.bind_vif("vif1", "p1")


def _rebind_vif(box: Sandbox) -> None:
    box.unbind_vif("vif1")
    box.wait_hv_sync()
    box.bind_vif("vif1", "p1")


def test_shared_conjunctive_clause(snapshots: SnapshotCache) -> None:
    """Minimal reproduction: after unbinding and rebinding the VIF, ours
    carries the shared clause flow's conjunction actions several times."""
    result = run_differential(snapshots.get("shared-clause", _shared_clause_topology),
                              after_settle=_rebind_vif)
    print(result.report())
    assert result.ok, result.report()


def test_random_plans_reproducible_and_cover_the_features() -> None:
    """The 20 CI seeds, together, exercise every element the generator offers."""
    plans = [plan_topology(s) for s in RANDOM_SEEDS]
    assert [p.nb_args for p in plans] == [plan_topology(s).nb_args for s in RANDOM_SEEDS]
    text = [" ".join(p.nb_args) for p in plans]
    assert any(c[1] == "vxlan" for p in plans for c in p.remote_chassis)
    assert any(p.bridge_mappings for p in plans)
    assert all(any(v.where == "here" for v in p.vifs) for p in plans)
    assert any(v.where.startswith("remote:") for p in plans for v in p.vifs)
    for needle in ("lrp-set-gateway-chassis", " snat ", " dnat ", "dnat_and_snat", "ls-lb-add",
                   "lr-lb-add", "dhcpv4_options=", "@pg", "$as", "--meter=", "reject",
                   "--name=reject-", "--name=drop-",
                   "tag_request=", "lsp-set-port-security"):
        assert any(needle in t for t in text), needle


def _two_switches(box: Sandbox) -> None:
    box.nbctl("--no-wait", "--", "ls-add", "ls0", "--", "lsp-add", "ls0", "p1",
              "--", "lsp-set-addresses", "p1", "0a:00:00:00:00:01 10.0.0.11",
              "--", "ls-add", "ls1", "--", "lsp-add", "ls1", "p2",
              "--", "lsp-set-addresses", "p2", "0a:00:00:00:00:02 10.0.1.11")
    box.bind_vif("vif1", "p1")
    box.bind_vif("vif2", "p2")


def test_last_local_vif_of_a_datapath_unbound(snapshots: SnapshotCache) -> None:
    """ls0/p1 and ls1/p2 bound here; unbinding vif2 (a dummy interface: the
    C agent recomputes runtime_data) removes ls1 from the local datapaths,
    with its flows and ct zones. Seed 16's VIF churn does the same."""
    result = run_differential(snapshots.get("two-switches", _two_switches),
                              after_settle=lambda box: box.unbind_vif("vif2"))
    print(result.report())
    assert result.ok, result.report()


def _logged_reject_topology(box: Sandbox) -> None:
    """Issue 10 point 7: a logged, metered reject (and drop) ACL on a port
    group of a switch with allow-related ACLs; northd writes the reg0[10]
    flows as ``log(...); ct_commit { ... }; ...``, whose ct_commit 23.03.1
    does not install."""
    box.nbctl("--no-wait", "--", "ls-add", "ls0",
              "--", "lsp-add", "ls0", "p1", "--", "lsp-set-addresses", "p1",
              "0a:00:00:00:00:01 10.0.0.11",
              "--", "lsp-add", "ls0", "p2", "--", "lsp-set-addresses", "p2",
              "0a:00:00:00:00:02 10.0.0.12",
              "--", "pg-add", "pg0", "p1", "--", "pg-add", "pg1", "p2",
              "--", "meter-add", "mt0", "drop", "10", "pktps",
              "--", "acl-add", "pg0", "from-lport", "1001", "inport == @pg0 && ip4",
              "allow-related",
              "--", "--log", "--meter=mt0", "--severity=info", "--name=rej-pg0", "acl-add",
              "pg0", "to-lport", "900", "outport == @pg0 && ip", "reject",
              "--", "--log", "--severity=alert", "--name=drop-pg1", "acl-add",
              "pg1", "to-lport", "900", "outport == @pg1 && ip", "drop")
    box.bind_vif("vif1", "p1")
    box.bind_vif("vif2", "p2")


def test_logged_reject_acl_with_stateful_acls(snapshots: SnapshotCache) -> None:
    result = run_differential(snapshots.get("logged-reject", _logged_reject_topology))
    assert any("verdict=reject" in o and "ct_commit" in o
               for origins in result.theirs.origins.values() for o in origins)
    _check(result)
