"""Drop-in, names, version and process control (issue 11, points 2, 3 and 6),
side by side with the C ovn-controller 23.03.1.

Our agent is run as ``ovn-controller`` through a two-line launcher named
``ovn-controller`` (what the ``ovn-controller`` console-script entry point of
pyproject.toml installs with ``make setup``), so argv[0] and /proc/PID/comm
are what an installed drop-in gives.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import poll_until, REPO_ROOT, Sandbox, agent_python, find_binary

pytestmark = pytest.mark.integration

OVN_CTL = "/usr/share/ovn/scripts/ovn-ctl"


def _launcher(directory: Path) -> Path:
    """An `ovn-controller` executable running our agent, like the entry point."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "ovn-controller"
    path.write_text(f"#!{agent_python()}\n"
                    "import sys\n"
                    f"sys.path.insert(0, {str(REPO_ROOT)!r})\n"
                    "from controller.cli import main\n"
                    "sys.exit(main())\n")
    path.chmod(0o755)
    return path


def _binary(kind: str, box: Sandbox) -> str:
    return str(_launcher(box.run / "bin")) if kind == "py" else find_binary("ovn-controller")


def _env(kind: str, box: Sandbox) -> dict[str, str]:
    env = dict(box.env)
    if kind == "py":
        env["PATH"] = f"{box.run / 'bin'}{os.pathsep}{env['PATH']}"
        _launcher(box.run / "bin")
    return env




def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _kill_leftover(pidfile: Path) -> None:
    try:
        pid = int(pidfile.read_text())
    except (OSError, ValueError):
        return
    if _comm(pid) == "ovn-controller":
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("kind", ["c", "py"])
def test_version_lines(sandbox_factory: SandboxFactory, kind: str) -> None:
    box = sandbox_factory(northd=False)
    out = subprocess.run([_binary(kind, box), "--version"], capture_output=True, text=True,
                         env=_env(kind, box), timeout=60, check=True).stdout.splitlines()
    c_lines = subprocess.run([find_binary("ovn-controller"), "--version"], capture_output=True,
                             text=True, timeout=60, check=True).stdout.splitlines()
    assert out[:len(c_lines)] == c_lines
    if kind == "py":
        assert len(out) == len(c_lines) + 1 and out[-1].startswith("ovn-controller-py ")


@pytest.mark.parametrize("kind", ["c", "py"])
def test_started_the_ovn_ctl_way(sandbox_factory: SandboxFactory, kind: str) -> None:
    """`ovn-ctl start_controller` (the Debian ovn-controller.service command):
    pidfile $OVN_RUNDIR/ovn-controller.pid, no --unixctl; then `ovn-appctl -t
    ovn-controller`, `ovn-ctl status_controller` and `ovn-ctl stop_controller`."""
    box = sandbox_factory()
    env = _env(kind, box)
    run = box.run
    pidfile = run / "ovn-controller.pid"
    ctl_args = ["--ovn-manage-ovsdb=no", "--no-monitor"]
    try:
        subprocess.run([OVN_CTL, "start_controller", *ctl_args], env=env, check=True,
                       capture_output=True, text=True, timeout=120)
        pid = int(pidfile.read_text())
        ctl = run / f"ovn-controller.{pid}.ctl"
        assert poll_until(ctl.exists)
        assert _comm(pid) == "ovn-controller"
        appctl = subprocess.run(["ovn-appctl", "-t", "ovn-controller", "version"], env=env,
                                capture_output=True, text=True, timeout=60, check=True)
        assert appctl.stdout.splitlines()[:2] == ["ovn-controller 23.03.1",
                                                  "Open vSwitch Library 3.1.0"]
        assert poll_until(lambda: subprocess.run(
            ["ovn-appctl", "-t", "ovn-controller", "connection-status"], env=env,
            capture_output=True, text=True).stdout.strip() == "connected")
        status = subprocess.run([OVN_CTL, "status_controller", *ctl_args], env=env,
                                capture_output=True, text=True, timeout=60)
        assert status.returncode == 0 and status.stdout.strip() == f"ovn-controller is running with pid {pid}"
        # file names and modes as C's
        log = run / "ovn-controller.log"
        assert stat.S_IMODE(log.stat().st_mode) == 0o640
        assert stat.S_IMODE(pidfile.stat().st_mode) == 0o644
        assert stat.S_IMODE(ctl.stat().st_mode) == 0o750
        assert log.read_text().splitlines()[0].endswith(f"|vlog|INFO|opened log file {log}")
        stop = subprocess.run([OVN_CTL, "stop_controller", *ctl_args], env=env,
                              capture_output=True, text=True, timeout=120)
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert "Exiting ovn-controller" in stop.stdout      # via `ovs-appctl exit`
        assert poll_until(lambda: not Path(f"/proc/{pid}").exists())
        assert not pidfile.exists() and not ctl.exists()
    finally:
        _kill_leftover(pidfile)


def _foreground(kind: str, box: Sandbox, name: str) -> tuple[subprocess.Popen[str], Path, Path]:
    pidfile, log = box.run / f"{name}.pid", box.run / f"{name}.log"
    proc = subprocess.Popen([_binary(kind, box), "--no-chdir", f"--pidfile={pidfile}",
                             "-vconsole:off", f"--log-file={log}", box.db_sock],
                            env=_env(kind, box), cwd=box.run, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    return proc, pidfile, log


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_fatal_signals_as_c(sandbox_factory: SandboxFactory, signum: signal.Signals) -> None:
    box = sandbox_factory()
    seen = {}
    for kind in ("c", "py"):
        proc, pidfile, log = _foreground(kind, box, f"sig-{kind}")
        try:
            ctl = box.run / f"sig-{kind}.{proc.pid}.ctl" if kind == "py" \
                else box.run / f"ovn-controller.{proc.pid}.ctl"
            assert poll_until(ctl.exists), log.read_text()
            assert poll_until(lambda: pidfile.exists())
            proc.send_signal(signum)
            rc = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        tail = [re.sub(r"^(\w+)\([^)]*\)", r"\1", line.split("|", 2)[2])
                for line in log.read_text().splitlines()[-3:]]  # C may log from a thread: "(urcu1)"
        # The last line of the main thread; a connection thread may still log
        # "connected" just after the signal when it raced the start-up.
        last = [t for t in tail if not t.startswith("rconn|")][-1]
        seen[kind] = (rc, last, pidfile.exists(), ctl.exists())
    assert seen["py"] == seen["c"]
    rc, last, _, _ = seen["c"]
    assert rc == -signum
    assert last == f"fatal_signal|WARN|terminating with signal {int(signum)} " \
                   f"({signal.strsignal(signum)})"


def test_console_off_after_detach(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory()
    box.start_controller("py")
    rows = {line.split()[0]: line.split()[1:] for line in
            box.appctl("controller", "vlog/list").splitlines()[2:]}
    assert rows["binding"][0] == "OFF" and rows["binding"][2] == "INFO"


def test_monitor_restarts_after_a_crash(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory()
    env = _env("py", box)
    pidfile, log = box.run / "ovn-controller.pid", box.run / "ovn-controller.log"
    subprocess.run([_binary("py", box), "--detach", "--monitor", "--no-chdir",
                    f"--pidfile={pidfile}", "-vconsole:off", f"--log-file={log}",
                    box.db_sock], env=env, check=True, timeout=60, cwd=box.run,
                   capture_output=True)
    try:
        first = int(pidfile.read_text())
        assert poll_until(lambda: (box.run / f"ovn-controller.{first}.ctl").exists())
        os.kill(first, signal.SIGSEGV)
        def restarted() -> bool:
            try:
                pid = int(pidfile.read_text())
            except (OSError, ValueError):
                return False
            return pid != first and (box.run / f"ovn-controller.{pid}.ctl").exists()
        assert poll_until(restarted, 30), log.read_text()
        assert f"1 crashes: pid {first} died, killed (Segmentation fault)" in log.read_text()
        second = int(pidfile.read_text())
        # a stop request is not a crash: the monitor goes too
        os.kill(second, signal.SIGTERM)
        assert poll_until(lambda: not Path(f"/proc/{second}").exists())
        assert poll_until(lambda: "died, killed (Terminated), exiting" in log.read_text())
    finally:
        _kill_leftover(pidfile)
