"""CI-sized scale-out run (integration/scale.py): 3 chassis on a 3-member RAFT
SB behind two relays.

* all agents converge (``--wait=hv``), each holds flows;
* conditional monitoring: the logical flows behind each chassis' OpenFlow
  flows are all on its local datapaths and fewer than the SB holds;
* both relays drop every client (``ovsdb-server/reconnect``): the agents
  resume their monitors and run no full recompute;
* the SB loses quorum while a VIF is bound on hv1: the claim's commit fails,
  is retried without a full recompute and lands once quorum is back; a forced
  recompute then changes nothing on br-int;
* the canonical flow dumps of every chassis under ours equal those under the
  C agent on the same cluster, started (as the harness does) from the state
  ours started from (``ScaleCluster.reset_chassis``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from integration.conftest import forced_recompute_diff
from integration.differential import dump_agent
from integration.scale import Hypervisor, ScaleCluster, kill_daemon, lflows_in_use, sb_view
from integration.sandbox import poll_until

N = 3


@pytest.fixture(scope="module")
def cluster() -> Iterator[ScaleCluster]:
    with ScaleCluster(N, vifs=2, relays=2) as cl:
        cl.start_agents("py")
        cl.wait_converged(timeout=300)
        yield cl


def _log_lines(hv: Hypervisor) -> list[str]:
    return hv.daemons["controller"].log.read_text(errors="replace").splitlines()


def _recomputes(lines: list[str]) -> list[str]:
    return [ln for ln in lines if "force recompute" in ln]


def test_converged_and_monitoring_bound(cluster: ScaleCluster) -> None:
    view = sb_view(cluster.c)
    for hv in cluster.hvs:
        assert hv.flow_count() > 0
        used = lflows_in_use(hv, view)
        bound = view.bound(hv.chassis)
        assert used, hv.chassis
        assert not used - bound, f"{hv.chassis}: flows of non-local datapaths"
        assert len(bound) < view.total, "every chassis would see every lflow"


def _lflow_recomputes(hv: Hypervisor) -> int:
    return int(hv.appctl("controller", "inc-engine/show-stats", "logical_flow_output",
                         "recompute").strip())


def test_relay_reconnect_resumes_without_recompute(cluster: ScaleCluster) -> None:
    before = {hv.chassis: len(_log_lines(hv)) for hv in cluster.hvs}
    lflow_recomputes = {hv.chassis: _lflow_recomputes(hv) for hv in cluster.hvs}
    for j in (1, 2):
        cluster.c.appctl(f"relay{j}", "ovsdb-server/reconnect")
    for hv in cluster.hvs:
        assert poll_until(lambda: any("connected" in ln.split("|")[-1] and "relay" in ln
                                      for ln in _log_lines(hv)[before[hv.chassis]:]),
                          timeout=30), f"{hv.chassis} did not reconnect"
    cluster.c.wait_hv(timeout=60)
    for hv in cluster.hvs:
        new = _log_lines(hv)[before[hv.chassis]:]
        assert not _recomputes(new), (hv.chassis, _recomputes(new))
        assert _lflow_recomputes(hv) == lflow_recomputes[hv.chassis], hv.chassis


def test_failed_commit_retried_without_recompute(cluster: ScaleCluster) -> None:
    c, hv = cluster.c, cluster.hvs[0]
    c.nbctl("--wait=sb", "lsp-add", "ls-hv1", "hv1-q", "--", "lsp-set-addresses", "hv1-q",
            "0a:09:00:00:00:01 10.1.1.99")
    start = len(_log_lines(hv))
    leader = c.sb_leader()
    assert leader is not None
    lost = [k for k in (1, 2, 3) if k != leader]
    for k in lost:
        kill_daemon(c, f"sb{k}")
    try:
        hv.bind_vif("vifq", "hv1-q")
        failed = poll_until(lambda: any("OVNSB commit failed" in ln
                                        for ln in _log_lines(hv)[start:]), timeout=30)
    finally:
        for k in lost:
            c.start_sb(k)
    assert failed, "no SB commit failed while the SB had no quorum"
    c.wait_hv(timeout=120)
    chassis = c.sbctl("--bare", "--columns=_uuid", "find", "Chassis", "name=hv1").strip()
    assert poll_until(lambda: c.sbctl("--bare", "--columns=chassis", "find", "Port_Binding",
                                      "logical_port=hv1-q").strip() == chassis, timeout=30)
    new = _log_lines(hv)[start:]
    assert not _recomputes(new), _recomputes(new)
    assert forced_recompute_diff(hv) == []
    hv.unbind_vif("vifq")
    c.nbctl("--wait=hv", "lsp-del", "hv1-q")


def test_flows_equal_c_agent(cluster: ScaleCluster) -> None:
    cluster.c.wait_hv(timeout=60)
    time.sleep(1.0)
    ours = {hv.chassis: dump_agent(hv, "py", 0.0) for hv in cluster.hvs}
    cluster.stop_agents()
    cluster.reset_chassis()     # C starts from the state ours started from
    assert not cluster.c.sbctl("--bare", "--columns=name", "list", "Chassis").split()
    cluster.start_agents("c")
    cluster.wait_converged(timeout=300)
    time.sleep(1.0)
    for hv in cluster.hvs:
        theirs = dump_agent(hv, "c", 0.0)
        mine = ours[hv.chassis].canonical
        assert mine.flows == theirs.canonical.flows, hv.chassis
        assert mine.groups == theirs.canonical.groups, hv.chassis
        assert mine.meters == theirs.canonical.meters, hv.chassis
