"""Faults of a 3-server clustered SB (issue 12, point 6), ours and the C oracle.

The rich topology runs on a RAFT SB (:mod:`integration.raft`); northd talks
to the leader, the agent to whichever server it picked.  Three faults:

* the leader killed -9 (a new one is elected; the old one comes back);
* the server the agent is connected to killed -9 (the agent moves to
  another one);
* quorum lost for 5 s: the two servers the agent is *not* on are killed, so
  its own server stays up but is cut off from the cluster (the IDL leaves a
  disconnected server and then finds every other remote dead).

Each asserts survival, the minimum br-int flow count during the fault
(polled every 50 ms: no dip), the agent's CPU share while it can only wait,
that a change made through northd once the cluster is whole again reaches
br-int, and that nothing was lost (ct-zone external_ids, ``ovn-installed``,
Chassis rows); the conftest teardown compares the tables with a forced
recompute (ours).
"""

from __future__ import annotations

import time

import pytest

from integration.conftest import SandboxFactory
from integration.raft import RaftSB, raft_sb
from integration.sandbox import Sandbox
from integration.test_agent_basic import iface_ext, wait_until
from integration.test_faults import (AGENTS, IDLE_CPU_SHARE, CpuMeter, FlowSampler, Survivors,
                                     agent, status)
from integration.topologies import RICH_VIFS, build_rich

pytestmark = pytest.mark.integration

PROBE_ACL = ("ls-a", "from-lport", "1001", "ip4.dst == 192.168.77.7", "drop")


def raft_rich(sandbox_factory: SandboxFactory, kind: str) -> tuple[Sandbox, RaftSB]:
    box = sandbox_factory(northd=False)
    cluster = raft_sb(box)
    build_rich(box)
    box.start_controller(kind)
    box.wait_hv_sync(timeout=120)
    wait_until(lambda: all(iface_ext(box, vif).get("ovn-installed") == "true"
                           for vif, lsp, _ in RICH_VIFS if lsp != "ls-a-md"),
               timeout=60, what="VIFs installed", box=box)
    return box, cluster


def agent_server(box: Sandbox, cluster: RaftSB) -> int:
    found: list[int] = []

    def on() -> bool:
        i = cluster.connected_server(agent(box).pid)
        if i is not None:
            found.append(i)
        return i is not None
    wait_until(on, timeout=30, what="the agent's SB connection", box=box)
    return found[-1]


def change_reaches_br_int(box: Sandbox) -> None:
    """An ACL added through northd shows up in br-int, and goes again."""
    box.nbctl("--no-wait", "acl-add", *PROBE_ACL)
    box.wait_hv_sync(timeout=60)
    wait_until(lambda: any("192.168.77.7" in f for f in box.dump_flows(names=False)),
               timeout=30, what="the ACL added after the fault", box=box)
    box.nbctl("--no-wait", "acl-del", *PROBE_ACL[:4])
    box.wait_hv_sync(timeout=60)


def finish(box: Sandbox, kind: str, what: str, before: list[str], kept: Survivors,
           sampler: FlowSampler, cpu: CpuMeter) -> None:
    print(f"\n[{kind}] RAFT {what} for {cpu.wall:.1f}s: agent CPU {cpu.cpu:.2f}s "
          f"({cpu.share:.1%}); min flows {sampler.minimum}/{len(before)} "
          f"({len(sampler.counts)} samples)")
    assert box.controller_alive()
    assert cpu.share < IDLE_CPU_SHARE, f"{cpu.cpu:.2f}s CPU in {cpu.wall:.1f}s (busy loop)"
    assert sampler.minimum >= len(before), f"flows dipped to {sampler.minimum}"
    wait_until(lambda: sorted(box.dump_flows(names=False)) == before, timeout=30,
               what="the flows of before", box=box)
    assert Survivors.take(box) == kept


@AGENTS
def test_raft_leader_kill(sandbox_factory: SandboxFactory, kind: str) -> None:
    box, cluster = raft_rich(sandbox_factory, kind)
    before = sorted(box.dump_flows(names=False))
    kept = Survivors.take(box)
    old = cluster.wait_healthy()
    on = agent_server(box, cluster)
    cpu = CpuMeter(agent(box).pid)
    sampler = FlowSampler(box)
    with sampler.running():
        cluster.kill9(old)
        cpu.start()
        wait_until(lambda: cluster.leader() not in (None, old), timeout=30,
                   what="a new leader", box=box)
        time.sleep(max(0.0, 5.0 - (time.monotonic() - cpu.wall0)))
        cpu.stop()
        wait_until(lambda: status(box) == "connected", timeout=30, what="connected", box=box)
        change_reaches_br_int(box)
        cluster.start(old)
        cluster.wait_healthy()
        box.wait_hv_sync(timeout=60)
    print(f"\n[{kind}] leader was sb{old}, agent on sb{on}, new leader sb{cluster.leader()}")
    finish(box, kind, "leader kill", before, kept, sampler, cpu)


@AGENTS
def test_raft_kill_agents_server(sandbox_factory: SandboxFactory, kind: str) -> None:
    box, cluster = raft_rich(sandbox_factory, kind)
    before = sorted(box.dump_flows(names=False))
    kept = Survivors.take(box)
    leader = cluster.wait_healthy()
    on = agent_server(box, cluster)
    cpu = CpuMeter(agent(box).pid)
    sampler = FlowSampler(box)
    moved: list[int] = []
    with sampler.running():
        cluster.kill9(on)
        cpu.start()

        def elsewhere() -> bool:
            i = cluster.connected_server(agent(box).pid)
            if i is not None and i != on and status(box) == "connected":
                moved.append(i)
                return True
            return False
        wait_until(elsewhere, timeout=30, what="the agent on another server", box=box)
        time.sleep(max(0.0, 5.0 - (time.monotonic() - cpu.wall0)))
        cpu.stop()
        cluster.wait_healthy()
        change_reaches_br_int(box)
        cluster.start(on)
        cluster.wait_healthy()
        box.wait_hv_sync(timeout=60)
    print(f"\n[{kind}] agent was on sb{on} (leader sb{leader}), moved to sb{moved[-1]}")
    finish(box, kind, "kill of the agent's server", before, kept, sampler, cpu)


@AGENTS
def test_raft_quorum_loss_5s(sandbox_factory: SandboxFactory, kind: str) -> None:
    box, cluster = raft_rich(sandbox_factory, kind)
    before = sorted(box.dump_flows(names=False))
    kept = Survivors.take(box)
    cluster.wait_healthy()
    on = agent_server(box, cluster)
    others = [i for i in range(1, cluster.n + 1) if i != on]
    cpu = CpuMeter(agent(box).pid)
    sampler = FlowSampler(box)
    with sampler.running():
        for i in others:
            cluster.kill9(i)
        cpu.start()
        leaderless = []                 # the survivor admits it has no quorum
        while time.monotonic() - cpu.wall0 < 5.0:
            leaderless.append(cluster.leader() is None)
            time.sleep(0.2)
        cpu.stop()
        assert box.controller_alive()
        assert any(leaderless), f"sb{on} still led a cluster of one"
        for i in others:
            cluster.start(i)
        cluster.wait_healthy()
        wait_until(lambda: status(box) == "connected", timeout=60, what="connected again",
                   box=box)
        box.wait_hv_sync(timeout=60)
        change_reaches_br_int(box)
    print(f"\n[{kind}] agent on sb{on}; killed sb{others}")
    finish(box, kind, "quorum loss", before, kept, sampler, cpu)
