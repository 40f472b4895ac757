"""controller.cli process control helpers (--monitor, --user, fatal signals) and
controller.ovsdb.stream_ssl's configuration checks."""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from controller import cli, vlog
from controller.ovsdb import stream_ssl

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _clean_vlog() -> object:
    vlog.reset()
    yield None
    vlog.reset()


def _status(code: int = 0, sig: int | None = None) -> int:
    """A real wait() status: a child that exits with `code` or dies of `sig`."""
    pid = os.fork()
    if pid == 0:
        if sig is not None:
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        os._exit(code)
    return os.waitpid(pid, 0)[1]


def test_describe_status_and_should_restart() -> None:
    assert cli.describe_status(_status(code=3)) == "exit status 3"
    assert cli.describe_status(_status(sig=signal.SIGTERM)) == "killed (Terminated)"
    assert cli.should_restart(_status(sig=signal.SIGSEGV))
    assert cli.should_restart(_status(code=cli.CRASH_STATUS))
    assert not cli.should_restart(_status(sig=signal.SIGTERM))
    assert not cli.should_restart(_status(code=0))
    assert not cli.should_restart(_status(code=1))


def test_parse_user() -> None:
    uid, gid, name = cli.parse_user("root:root")
    assert (uid, gid, name) == (0, 0, "root")
    with pytest.raises(ValueError, match="no_such_user_x: invalid user"):
        cli.parse_user("no_such_user_x")
    with pytest.raises(ValueError, match="no_such_group_x: invalid group"):
        cli.parse_user("root:no_such_group_x")


_USER_DAEMON = textwrap.dedent("""
    import os, sys, time, types
    mod = types.ModuleType("controller.daemon")
    mod.SIGNALS_READY = True
    def run(opts):
        with open(os.environ["MARK"], "w") as f:
            f.write(f"{os.getuid()}:{os.getgid()}")
        opts.ready()
        time.sleep(60)
        return 0
    mod.run = run
    sys.modules["controller.daemon"] = mod
    from controller.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to change user")
def test_user_drops_root_after_opening_the_log() -> None:
    import pwd
    import shutil
    import tempfile
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")
    tmp_path = Path(tempfile.mkdtemp(prefix="ovnpy-user-"))     # reachable by nobody
    tmp_path.chmod(0o777)
    env = dict(os.environ, MARK=str(tmp_path / "mark"), OVN_RUNDIR=str(tmp_path),
               PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", _USER_DAEMON, "unix:/nowhere/db.sock", "--detach", "--no-chdir",
         f"--pidfile={tmp_path}/agent.pid", f"--log-file={tmp_path}/agent.log",
         "-vconsole:off", "--user=nobody"],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    pid = int((tmp_path / "agent.pid").read_text())
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "mark").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "mark").read_text() == f"{nobody.pw_uid}:{nobody.pw_gid}"
        st = (tmp_path / "agent.log").stat()
        assert (st.st_uid, st.st_gid) == (nobody.pw_uid, nobody.pw_gid)
        assert (tmp_path / "agent.pid").stat().st_uid == nobody.pw_uid
    finally:
        os.kill(pid, signal.SIGTERM)
        shutil.rmtree(tmp_path, ignore_errors=True)


def test_ssl_context_errors_name_what_is_missing(tmp_path: Path) -> None:
    cfg = stream_ssl.SslConfig()
    with pytest.raises(ValueError, match="Private key must be configured to use SSL"):
        stream_ssl.make_context(cfg)
    cfg.private_key = str(tmp_path / "key.pem")
    with pytest.raises(ValueError, match="Certificate must be configured to use SSL"):
        stream_ssl.make_context(cfg)
    cfg.certificate = str(tmp_path / "cert.pem")
    with pytest.raises(ValueError, match="CA certificate must be configured to use SSL"):
        stream_ssl.make_context(cfg)
    cfg.ca_cert = str(tmp_path / "ca.pem")
    with pytest.raises(ValueError, match="could not load CA certificate"):
        stream_ssl.make_context(cfg)
    cfg.bootstrap_ca_cert = True
    with pytest.raises(ValueError, match="bootstrap .* is not supported"):
        stream_ssl.make_context(cfg)


def test_ssl_protocols() -> None:
    assert stream_ssl.parse_protocols("TLSv1.2,TLSv1.3") == (ssl.TLSVersion.TLSv1_2,
                                                             ssl.TLSVersion.TLSv1_3)
    with pytest.raises(ValueError, match="SSLv3: SSL protocol not recognized"):
        stream_ssl.parse_protocols("SSLv3")
    assert cli.main(["--ssl-protocols=bogus", "unix:/x"]) == 2


def test_ssl_remote_without_options_fails_cleanly() -> None:
    import errno

    import ovs.stream
    stream_ssl.configure()
    err, stream = ovs.stream.Stream.open("ssl:127.0.0.1:1")
    assert (err, stream) == (errno.ENOPROTOOPT, None)
