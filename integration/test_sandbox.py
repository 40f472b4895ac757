"""The sandbox itself: start/stop hygiene, the C agent on rich, snapshot replay."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from pathlib import Path

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import Daemon, Sandbox, SandboxError, find_binary
from integration.topologies import build_rich, build_seed

pytestmark = pytest.mark.integration

ROLES = {"ovsdb", "vswitchd", "nb", "sb", "northd"}


def _processes_mentioning(text: str) -> list[int]:
    """pids (not zombies) whose command line contains `text`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def _sb_uuids(box: Sandbox, table: str) -> set[str]:
    return set(box.sbctl("--bare", "--columns=_uuid", "list", table).split())


def test_up_and_down_three_times_leaves_nothing_behind() -> None:
    for _ in range(3):
        box = Sandbox()
        run = box.run
        with box:
            assert set(box.daemons) == ROLES
            assert all(d.alive() for d in box.daemons.values())
            assert "Open vSwitch" in box.appctl("ovs-vswitchd", "version")
            assert box.vsctl("get", "Bridge", "br-int", "datapath_type").strip() == "dummy"
            assert box.vsctl("get", "Open_vSwitch", ".", "external_ids:ovn-remote").strip() \
                == f'"unix:{run}/ovnsb_db.sock"'
            assert "OVN_Southbound" in box.appctl("sb", "ovsdb-server/list-dbs").split()
            assert box.flow_count() == 0          # fail_mode=secure, no agent yet
            daemons = list(box.daemons.values())
            assert len({d.pid for d in daemons}) == len(ROLES)
            assert _processes_mentioning(str(run))
        assert box.daemons == {}
        assert not any(d.alive() for d in daemons)
        assert not run.exists()
        assert _processes_mentioning(str(run)) == []


def test_two_sandboxes_run_side_by_side(sandbox_factory: SandboxFactory) -> None:
    a = sandbox_factory(chassis="hv1")
    b = sandbox_factory(chassis="hv7", northd=False)
    assert a.run != b.run
    assert "northd" in a.daemons and "northd" not in b.daemons
    a.nbctl("ls-add", "only-in-a")
    assert "only-in-a" in a.nbctl("ls-list")
    assert b.nbctl("ls-list").strip() == ""
    b_pids = b.pids()
    a.stop()
    assert all(d.alive() for d in b.daemons.values())
    assert b.pids() == b_pids
    assert b.vsctl("get", "Open_vSwitch", ".", "external_ids:system-id").strip() == "hv7"


def test_stop_never_kills_a_process_it_did_not_start(tmp_path: Path) -> None:
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        with Sandbox() as box:
            real = box.daemons["northd"]
            # A record whose pid now belongs to someone else (pid reuse / stale pidfile)
            box.daemons["northd"] = Daemon(
                role="northd", name=real.name, pid=bystander.pid, exe=real.exe,
                start_time=real.start_time, pidfile=tmp_path / "x.pid", ctl=tmp_path / "x.ctl",
                log=tmp_path / "x.log")
            box.daemons["stale"] = Daemon(
                role="stale", name="ovn-northd", pid=real.pid, exe=real.exe,
                start_time=real.start_time, pidfile=real.pidfile, ctl=real.ctl, log=real.log)
        assert bystander.poll() is None, "sandbox killed a process it did not start"
        assert not real.alive()
    finally:
        bystander.kill()
        bystander.wait()


def test_c_controller_on_rich_syncs_and_installs_flows(sandbox: Sandbox) -> None:
    build_rich(sandbox)
    assert len(_sb_uuids(sandbox, "Port_Binding")) == 15
    sandbox.start_controller("c")
    waited = sandbox.wait_hv_sync(timeout=120)
    assert waited < 120
    # the recipe's numbers for rich (sandbox-recipe §4.2): build_rich is that topology
    assert sandbox.flow_count() == 1110
    assert len(_sb_uuids(sandbox, "Logical_Flow")) == 428
    assert len(sandbox.dump_groups()) == 8
    assert len(sandbox.dump_meters()) == 4
    flows = sandbox.dump_flows()
    assert len(flows) == sandbox.flow_count()
    assert any('in_port="vif-a1"' in f for f in flows)
    assert sandbox.appctl("controller", "version").startswith("ovn-controller 23.03.1")
    # the fake remote chassis made a tunnel port, the localnet port a patch port
    ports = sandbox.vsctl("list-ports", "br-int").split()
    assert "ovn-hv2-0" in ports and "patch-br-int-to-ln-pub" in ports
    assert sandbox.vsctl("get", "Interface", "vif-a1", "external_ids:ovn-installed").strip() \
        == '"true"'
    sandbox.stop_controller()
    assert not sandbox.controller_alive()


def test_backup_then_replay_without_northd_gives_the_same_sb(
        sandbox_factory: SandboxFactory, tmp_path: Path) -> None:
    box = sandbox_factory(northd=True)
    build_rich(box)
    box.start_controller("c")
    box.wait_hv_sync(timeout=120)
    tables = ("Port_Binding", "Datapath_Binding", "Logical_Flow", "Chassis")
    before = {t: _sb_uuids(box, t) for t in tables}
    files = box.backup(tmp_path / "snap")
    assert set(files) == {"nb", "sb", "conf"}
    box.stop()

    replay = sandbox_factory.snapshot(files["nb"], files["sb"], files["conf"], northd=False)
    assert "northd" not in replay.daemons
    after = {t: _sb_uuids(replay, t) for t in tables}
    assert after == before
    assert len(after["Port_Binding"]) == 15
    # the restored conf.db was re-pointed at this run directory
    assert str(replay.run) in replay.vsctl("get", "Open_vSwitch", ".", "external_ids:ovn-remote")
    assert str(replay.run) in replay.vsctl("get", "Interface", "vif-a1", "options:tx_pcap")
    # completion without northd: nb_cfg bump + Chassis_Private.nb_cfg
    cfg_before = int(replay.sbctl("get", "SB_Global", ".", "nb_cfg").strip())
    replay.start_controller("c")
    replay.wait_hv_sync(timeout=120)
    assert replay.chassis_private_nb_cfg() == cfg_before + 1
    assert replay.flow_count() > 1000
    assert {t: _sb_uuids(replay, t) for t in ("Port_Binding", "Datapath_Binding")} == \
        {t: before[t] for t in ("Port_Binding", "Datapath_Binding")}


def test_gzipped_snapshot_is_accepted(sandbox_factory: SandboxFactory, tmp_path: Path) -> None:
    import gzip
    import shutil
    box = sandbox_factory(northd=True)
    box.nbctl("ls-add", "sw0", "--", "lsp-add", "sw0", "sw0-p1")
    box.nbctl("--wait=sb", "sync")
    files = box.backup(tmp_path)
    with open(files["sb"], "rb") as fin, gzip.open(tmp_path / "sb.db.gz", "wb") as fout:
        shutil.copyfileobj(fin, fout)
    replay = sandbox_factory.snapshot(None, tmp_path / "sb.db.gz")
    assert replay.sbctl("--bare", "--columns=logical_port", "list", "Port_Binding").split() \
        == ["sw0-p1"]
    assert replay.nbctl("ls-list").strip() == ""          # no NB given: empty NB


def test_seed_topology_shape(sandbox: Sandbox) -> None:
    build_seed(sandbox, 3)
    assert sorted(sandbox.nbctl("--bare", "--columns=name", "list", "Logical_Router").split()) \
        == ["lr1", "lr2", "lr3"]
    assert len(sandbox.nbctl("--bare", "--columns=_uuid", "list", "ACL").split()) == 12
    assert "0a:02:00:00:02:01 10.0.2.11" in sandbox.nbctl("lsp-get-addresses", "ls2-p1")
    assert sandbox.vsctl("get", "Interface", "s3p2", "external_ids:iface-id").strip() \
        == "ls3-p2"
    assert len(_sb_uuids(sandbox, "Port_Binding")) == 12


def test_py_controller_start(sandbox: Sandbox) -> None:
    """Our agent starts through the drop-in CLI; without controller.daemon the CLI
    must fail cleanly (exit 1 and an error event in its log file)."""
    if importlib.util.find_spec("controller.daemon") is None:
        with pytest.raises(SandboxError) as err:
            sandbox.start_controller("py")
        assert "daemon module is not available" in str(err.value)
        assert "controller" not in sandbox.daemons
    else:
        daemon = sandbox.start_controller("py")
        assert daemon.alive()
        deadline = time.monotonic() + 30
        while not daemon.ctl.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert daemon.ctl.exists()
        sandbox.stop_controller()
        assert not daemon.alive()
        assert not daemon.pidfile.exists()


def test_restart_vswitchd_after_a_crash(sandbox: Sandbox) -> None:
    sandbox.nbctl("ls-add", "sw0", "--", "lsp-add", "sw0", "sw0-p1")
    sandbox.bind_vif("vif1", "sw0-p1")
    sandbox.start_controller("c")
    sandbox.wait_hv_sync()
    before = sandbox.flow_count()
    old = sandbox.daemons["vswitchd"]
    os.kill(old.pid, 9)                    # what a conntrack assertion abort looks like
    new = sandbox.restart_vswitchd()
    assert new.pid != old.pid and new.alive() and not old.alive()
    # the agent reconnects and reinstalls its flows
    deadline = time.monotonic() + 60
    while sandbox.flow_count() < before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sandbox.flow_count() == before
    assert "vif1" in sandbox.vsctl("list-ports", "br-int").split()


def test_binaries_present() -> None:
    for name in ("ovsdb-server", "ovs-vswitchd", "ovn-northd", "ovn-controller", "ovs-ofctl"):
        assert os.access(find_binary(name), os.X_OK)


def test_agent_env_caches_bytecode_outside_the_tree(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    """PYTHONDONTWRITEBYTECODE in the caller's environment does not reach the
    agent: it gets a pycache prefix instead, which the warm-up fills."""
    import integration.sandbox as sbx
    monkeypatch.setattr(sbx, "_bytecode_warm", False)
    env = sbx.agent_env({"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1",
                         "PYTHONPYCACHEPREFIX": str(tmp_path)})
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(sbx.REPO_ROOT)
    daemon_py = sbx.REPO_ROOT / "controller" / "daemon.py"
    cached = tmp_path / str(daemon_py.parent).lstrip("/")
    assert any(p.name.startswith("daemon.") for p in cached.glob("*.pyc"))
    # Without the variable the caller's own choice of cache stays untouched.
    env = sbx.agent_env({"PATH": os.environ["PATH"]})
    assert "PYTHONPYCACHEPREFIX" not in env
