"""controller.cli: drop-in arguments, subcommand dispatch, --detach daemonising."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

from controller import cli, version, vlog

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _clean_vlog() -> object:
    vlog.reset()
    yield None
    vlog.reset()


def test_defaults_follow_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OVS_RUNDIR", "/r/ovs")
    monkeypatch.setenv("OVN_RUNDIR", "/r/ovn")
    monkeypatch.setenv("OVN_LOGDIR", "/r/log")
    monkeypatch.setenv("OVS_LOGDIR", "/r/ovslog")
    opts = cli.parse_args(["--pidfile", "--log-file", "--detach"])
    assert opts.ovs_remote == "unix:/r/ovs/db.sock"
    assert opts.pidfile == "/r/ovn/ovn-controller-py.pid"
    # as C: the default log file is in the OVS log directory
    assert opts.log_file == "/r/ovslog/ovn-controller-py.log"
    assert opts.detach and not opts.no_chdir
    assert opts.unixctl is None
    assert cli.default_unixctl(42) == "/r/ovn/ovn-controller-py.42.ctl"
    # a relative --pidfile is in $OVN_RUNDIR, and names the control socket
    opts = cli.parse_args(["--pidfile=ovn-controller.pid"])
    assert opts.pidfile == "/r/ovn/ovn-controller.pid"
    assert cli.default_unixctl(42, opts.pidfile) == "/r/ovn/ovn-controller.42.ctl"


def test_bare_optional_value_options_do_not_swallow_the_remote() -> None:
    opts = cli.parse_args(["--pidfile", "-v", "unix:/x/db.sock", "--log-file"])
    assert opts.ovs_remote == "unix:/x/db.sock"
    assert opts.verbose == [""]
    assert opts.pidfile is not None and opts.pidfile.endswith("ovn-controller-py.pid")


def test_explicit_values_as_the_sandbox_passes_them(tmp_path: Path) -> None:
    opts = cli.parse_args([f"unix:{tmp_path}/db.sock", f"--pidfile={tmp_path}/p.pid",
                           "-vconsole:off", f"--log-file={tmp_path}/l.log", "--detach",
                           "--no-chdir", f"--unixctl={tmp_path}/c.ctl", "--verbose=binding:dbg",
                           "-n", "hv9"])
    assert opts.ovs_remote == f"unix:{tmp_path}/db.sock"
    assert (opts.pidfile, opts.log_file, opts.unixctl) == (
        f"{tmp_path}/p.pid", f"{tmp_path}/l.log", f"{tmp_path}/c.ctl")
    assert opts.verbose == ["console:off", "binding:dbg"]
    assert opts.chassis_name == "hv9" and opts.no_chdir


def test_version_prints_c_lines_then_ours(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == ["ovn-controller 23.03.1", "Open vSwitch Library 3.1.0",
                       "OpenFlow versions 0x6:0x6", "SB DB Schema 20.27.0"]
    assert out[4:] == [f"ovn-controller-py {version.__version__}"]


@pytest.mark.parametrize("argv0, name", [
    ("/usr/bin/ovn-controller", "ovn-controller"),
    ("/usr/local/bin/ovn-controller-py", "ovn-controller-py"),
    ("/repo/controller/__main__.py", "ovn-controller-py"),
    ("-c", "ovn-controller-py"),
    ("python3", "ovn-controller-py"),
])
def test_program_name_follows_argv0(argv0: str, name: str, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OVN_RUNDIR", "/r/ovn")
    monkeypatch.setattr(version, "PROGRAM", version.PROGRAM)     # restored afterwards
    assert cli.main(["--version"], prog=argv0) == 0
    assert version.PROGRAM == name
    assert cli.parse_args(["--pidfile"]).pidfile == f"/r/ovn/{name}.pid"
    assert cli.default_unixctl(7) == f"/r/ovn/{name}.7.ctl"


def test_bad_verbose_spec_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["-vnot_a_module:dbg"]) == 2
    assert "not_a_module" in capsys.readouterr().err


def test_subcommand_dispatch(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    fake = types.ModuleType("fake_ctl")
    fake.main = lambda argv: seen.append(argv) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_ctl", fake)
    monkeypatch.setitem(cli.SUBCOMMANDS, "ctl", "fake_ctl")
    assert cli.main(["ctl", "-t", "x", "loop-stats"]) == 7
    assert seen == [["-t", "x", "loop-stats"]]


def test_missing_subcommand_module_is_a_clear_error(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(cli.SUBCOMMANDS, "lflow-compile", "controller.no_such_module_xyz")
    assert cli.main(["lflow-compile", "--help"]) == 1
    assert "'lflow-compile' is not available" in capsys.readouterr().err


def test_missing_daemon_logs_an_error_and_exits_1(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cli, "DAEMON_MODULE", "controller.no_such_daemon_xyz")
    log = tmp_path / "agent.log"
    assert cli.main(["-vconsole:off", f"--log-file={log}"]) == 1
    text = log.read_text()
    assert "|main|ERR|daemon module is not available" in text


_FAKE_DAEMON = textwrap.dedent("""
    import os, sys, time, types
    mod = types.ModuleType("controller.daemon")
    mod.SIGNALS_READY = os.environ.get("SIGNALS_READY") == "1"
    def run(opts):
        if os.environ.get("FAIL_EARLY") == "1":
            raise RuntimeError("cannot start")
        with open(os.environ["MARK"], "w") as f:
            f.write(f"{os.getpid()}|{opts.ovs_remote}|{opts.unixctl}|{os.getcwd()}")
        opts.ready()
        time.sleep(60)
        return 0
    mod.run = run
    sys.modules["controller.daemon"] = mod
    from controller.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def _start_fake(tmp_path: Path, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ, MARK=str(tmp_path / "mark"), OVN_RUNDIR=str(tmp_path),
                    PYTHONPATH=str(REPO), **env)
    return subprocess.run(
        [sys.executable, "-c", _FAKE_DAEMON, "unix:/nowhere/db.sock",
         f"--pidfile={tmp_path}/agent.pid", f"--log-file={tmp_path}/agent.log",
         "-vconsole:off", "--detach", *extra],
        env=full_env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def _wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not cli.pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("signals_ready", ["0", "1"])
def test_detach_daemonises_writes_pidfile_and_cleans_up(tmp_path: Path,
                                                        signals_ready: str) -> None:
    proc = _start_fake(tmp_path, SIGNALS_READY=signals_ready)
    assert proc.returncode == 0, proc.stderr
    pid = int((tmp_path / "agent.pid").read_text())
    assert pid != proc.returncode and cli.read_pidfile(str(tmp_path / "agent.pid")) == pid
    deadline = time.monotonic() + 10
    while not (tmp_path / "mark").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    mark_pid, remote, unixctl, cwd = (tmp_path / "mark").read_text().split("|")
    assert int(mark_pid) == pid
    assert remote == "unix:/nowhere/db.sock"
    assert unixctl == f"{tmp_path}/agent.{pid}.ctl"          # named after the pidfile
    assert cwd == "/"                                   # no --no-chdir
    # the daemon holds a POSIX lock on its pidfile (ovs-appctl -t NAME requires it)
    with open(tmp_path / "agent.pid", "r+") as f, pytest.raises(OSError):
        fcntl.lockf(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.kill(pid, signal.SIGTERM)
    assert _wait_gone(pid)
    assert not (tmp_path / "agent.pid").exists()
    text = (tmp_path / "agent.log").read_text()
    assert text.splitlines()[0].endswith(f"|vlog|INFO|opened log file {tmp_path}/agent.log")
    assert "ovn-controller-py 0.1.0 starting as ovn-controller-py" in text
    assert f"|fatal_signal|WARN|terminating with signal {int(signal.SIGTERM)} (Terminated)" in text
    assert oct((tmp_path / "agent.log").stat().st_mode & 0o777) == oct(0o640)


def test_detach_parent_fails_when_the_daemon_dies_before_ready(tmp_path: Path) -> None:
    proc = _start_fake(tmp_path, "--no-chdir", FAIL_EARLY="1", SIGNALS_READY="1")
    assert proc.returncode == 1
    assert not (tmp_path / "agent.pid").exists()
    assert "fatal error" in (tmp_path / "agent.log").read_text()


def test_refuses_to_start_over_a_live_pidfile(tmp_path: Path) -> None:
    pidfile = tmp_path / "agent.pid"
    pidfile.write_text(f"{os.getpid()}\n")                # this (live) test process
    proc = _start_fake(tmp_path)
    assert proc.returncode == 1
    assert "already running" in proc.stderr
    assert pidfile.read_text().strip() == str(os.getpid())
