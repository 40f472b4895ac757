"""Command line of ovn-controller-py: a drop-in for `ovn-controller`'s arguments.

Design note
-----------
``ovn-controller [OVS_DB_REMOTE] [--pidfile[=F]] [--log-file[=F]] [--detach]
[--monitor] [--user=U[:G]] [--no-chdir] [--unixctl=PATH] [-vSPEC ...] [-p/-c/-C
...]`` parses the same options as the C daemon, configures logging, syslog and
SSL (``controller.ovsdb.stream_ssl``), then hands an :class:`Options` to
``controller.daemon.run(options)``, the agent's main loop.  The program name
(``controller.version.PROGRAM``) is argv[0]'s: ``ovn-controller`` when run
through that entry point, else ``ovn-controller-py``.

Two subcommands are dispatched before option parsing, each to its own module
(imported lazily, so a missing one only breaks itself):

* ``ovn-controller-py lflow-compile ...`` -> ``controller.lflow.cli.main(argv)``
* ``ovn-controller-py ctl ...``           -> ``controller.diag.ctl.main(argv)``

Defaults follow the OVS/OVN environment variables as C does: the OVS
database is ``unix:$OVS_RUNDIR/db.sock``, the pidfile
``$OVN_RUNDIR/PROGRAM.pid`` (a relative ``--pidfile=F`` is in $OVN_RUNDIR too),
the log file ``$OVS_LOGDIR/PROGRAM.log`` (created 0640) and the control socket
``$OVN_RUNDIR/NAME.<pid>.ctl`` where NAME is the pidfile's name (so
``--pidfile=$OVN_RUNDIR/ovn-controller.pid``, the ovn-ctl way, gives what
``ovn-appctl -t ovn-controller`` looks for), else the program name.

``--detach`` daemonises like OVS: fork, setsid, fork again, stdio to
/dev/null, chdir to / unless ``--no-chdir``, write the pidfile; the original
process exits 0 only once the daemon says it is ready and 1 if the daemon dies
first. "Ready" is ``options.ready()``. By default the CLI calls it right
before ``run()``; a daemon module that sets ``SIGNALS_READY = True`` calls
``options.ready()`` itself once its control socket is up (OVS's
``daemonize_complete()``), so ``--detach`` returns only after that.

SIGTERM, SIGINT, SIGHUP and SIGALRM are fatal as in OVS: a ``fatal_signal``
WARN line, pidfile and control socket removed, then the process dies of that
signal.  After ``--detach`` the console destination is off.  ``--monitor``
keeps a parent that restarts the daemon after a crash (a crash signal, or an
unhandled exception: exit status ``CRASH_STATUS``), at most every 10 s, and
forwards stop signals to it.  ``--user`` hands the log file to USER:GROUP and
drops root before the pidfile is written.
"""

from __future__ import annotations

import argparse
import fcntl
import grp
import importlib
import os
import pwd
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

# First: defers what the libraries below import but a running agent rarely
# uses (ssl, asyncio, pickle, datetime...: controller.lazy_modules.AGENT_DEFERRED)
# before ovs.vlog, ovs.stream and structlog import them.
import controller.lazy_modules  # noqa: F401
import ovs.fatal_signal
import ovs.util

from controller import dataclass_cache
from controller import version, vlog
from controller.ovsdb import stream_ssl
from controller.version import version_text

SUBCOMMANDS = {
    "lflow-compile": "controller.lflow.cli",
    "ctl": "controller.diag.ctl",
}
DAEMON_MODULE = "controller.daemon"

# Options that take an optional value and, as with getopt, only in the
# "--opt=VALUE" form: a bare "--pidfile" must not swallow the next argument.
_OPTIONAL_VALUE = ("--pidfile", "--log-file", "--verbose", "-v")


def _noop() -> None:
    return None


@dataclass
class Options:
    """What the daemon gets. Paths are absolute."""

    ovs_remote: str
    pidfile: str | None = None
    overwrite_pidfile: bool = False
    log_file: str | None = None
    detach: bool = False
    no_chdir: bool = False
    monitor: bool = False
    user: str | None = None
    unixctl: str | None = None
    verbose: list[str] = field(default_factory=list)
    syslog_method: str | None = None
    syslog_target: str | None = None
    chassis_name: str | None = None
    private_key: str | None = None
    certificate: str | None = None
    ca_cert: str | None = None
    bootstrap_ca_cert: str | None = None
    ssl_protocols: str | None = None
    ssl_ciphers: str | None = None
    # Call once initialised (control socket up); `--detach`'s parent exits then.
    ready: Callable[[], None] = field(default=_noop, repr=False, compare=False)


def ovs_rundir() -> str:
    return os.environ.get("OVS_RUNDIR", "/var/run/openvswitch")


def ovn_rundir() -> str:
    return os.environ.get("OVN_RUNDIR", "/var/run/ovn")


def ovn_logdir() -> str:
    return os.environ.get("OVN_LOGDIR", "/var/log/ovn")


def ovs_logdir() -> str:
    return os.environ.get("OVS_LOGDIR", "/var/log/openvswitch")


def default_pidfile() -> str:
    return os.path.join(ovn_rundir(), f"{version.PROGRAM}.pid")


def pidfile_path(value: str) -> str:
    """--pidfile[=FILE]: the default name, or FILE relative to $OVN_RUNDIR (as C)."""
    return os.path.join(ovn_rundir(), value) if value else default_pidfile()


def default_log_file() -> str:
    """C's default: the OVS log directory (ovn-ctl passes --log-file=FILE itself)."""
    return os.path.join(ovs_logdir(), f"{version.PROGRAM}.log")


def default_ovs_remote() -> str:
    return f"unix:{os.path.join(ovs_rundir(), 'db.sock')}"


def default_unixctl(pid: int, pidfile: str | None = None) -> str:
    """``<name>.<pid>.ctl`` in $OVN_RUNDIR, where <name> is the pidfile's name
    without ``.pid`` when there is a pidfile, else the program name.  (C uses
    the program name; following the pidfile makes ``ovn-appctl -t NAME``, which
    reads NAME.pid and then NAME.<pid>.ctl, find us whatever we are called.)"""
    name = version.PROGRAM
    if pidfile:
        base = os.path.basename(pidfile)
        name = base[:-len(".pid")] if base.endswith(".pid") and len(base) > 4 else base
    return os.path.join(ovn_rundir(), f"{name}.{pid}.ctl")


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=version.PROGRAM,
        description="OVN controller (Python reimplementation of ovn-controller 23.03.1)",
        epilog=("subcommands (first argument): lflow-compile ...  compile logical flows; "
                "ctl ...  talk to a running agent. OVS-DATABASE defaults to "
                "unix:$OVS_RUNDIR/db.sock."),
    )
    p.add_argument("ovs_remote", nargs="?", metavar="OVS-DATABASE",
                   help="OVS database remote, e.g. unix:/var/run/openvswitch/db.sock")
    d = p.add_argument_group("daemon options")
    d.add_argument("--detach", action="store_true", help="run in background as daemon")
    d.add_argument("--no-chdir", action="store_true", help="do not chdir to '/'")
    d.add_argument("--pidfile", metavar="[=FILE]",
                   help="create pidfile (default: $OVN_RUNDIR/PROGRAM.pid)")
    d.add_argument("--overwrite-pidfile", action="store_true",
                   help="with --pidfile, start even if already running")
    d.add_argument("--monitor", action="store_true",
                   help="creates a process to monitor this daemon (restart after a crash)")
    d.add_argument("--user", metavar="USER[:GROUP]",
                   help="changes the effective daemon user:group")
    d.add_argument("--unixctl", metavar="PATH",
                   help="control socket (default: $OVN_RUNDIR/PIDFILE-NAME.<pid>.ctl)")
    lg = p.add_argument_group("logging options")
    lg.add_argument("-v", "--verbose", action="append", default=[], metavar="SPEC",
                    help="-vSPEC / --verbose=SPEC set logging levels; -v alone: debug all")
    lg.add_argument("--log-file", metavar="[=FILE]",
                    help="log to FILE (default: $OVS_LOGDIR/PROGRAM.log)")
    lg.add_argument("--syslog-method", metavar="(libc|unix:file|udp:ip:port)",
                    help="specify how to send messages to syslog daemon")
    lg.add_argument("--syslog-target", metavar="HOST:PORT",
                    help="also send syslog msgs to HOST:PORT via UDP")
    s = p.add_argument_group("PKI / SSL options (passed to the daemon)")
    s.add_argument("-p", "--private-key", metavar="FILE")
    s.add_argument("-c", "--certificate", metavar="FILE")
    s.add_argument("-C", "--ca-cert", metavar="FILE")
    s.add_argument("--bootstrap-ca-cert", metavar="FILE")
    s.add_argument("--ssl-protocols", metavar="PROTOS")
    s.add_argument("--ssl-ciphers", metavar="CIPHERS")
    o = p.add_argument_group("other options")
    o.add_argument("-n", dest="chassis_name", metavar="NAME", help="custom chassis name")
    o.add_argument("-V", "--version", action="store_true", help="display version information")
    return p


def _normalise_optional_values(argv: Sequence[str]) -> list[str]:
    """'--pidfile' -> '--pidfile=' (empty = default), '-v' -> '--verbose='."""
    out = []
    for arg in argv:
        if arg in _OPTIONAL_VALUE:
            out.append("--verbose=" if arg == "-v" else arg + "=")
        else:
            out.append(arg)
    return out


def parse_args(argv: Sequence[str]) -> Options:
    """Parse daemon arguments into Options (exits with usage on errors, like argparse)."""
    ns = _build_parser().parse_args(_normalise_optional_values(argv))
    if ns.version:
        sys.stdout.write(version_text())
        raise SystemExit(0)
    pidfile = None
    if ns.pidfile is not None:
        pidfile = os.path.abspath(pidfile_path(ns.pidfile))
    log_file = None
    if ns.log_file is not None:
        log_file = os.path.abspath(ns.log_file or default_log_file())
    unixctl = os.path.join(ovn_rundir(), ns.unixctl) if ns.unixctl else None
    remote = ns.ovs_remote or default_ovs_remote()
    if remote.startswith("unix:"):
        remote = "unix:" + os.path.abspath(remote[len("unix:"):])
    return Options(
        ovs_remote=remote, pidfile=pidfile, overwrite_pidfile=ns.overwrite_pidfile,
        log_file=log_file, detach=ns.detach, no_chdir=ns.no_chdir, monitor=ns.monitor, user=ns.user,
        unixctl=unixctl, verbose=list(ns.verbose), chassis_name=ns.chassis_name,
        syslog_method=ns.syslog_method, syslog_target=ns.syslog_target,
        private_key=ns.private_key, certificate=ns.certificate, ca_cert=ns.ca_cert,
        bootstrap_ca_cert=ns.bootstrap_ca_cert, ssl_protocols=ns.ssl_protocols,
        ssl_ciphers=ns.ssl_ciphers,
    )


# --------------------------------------------------------------------------- pidfile


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def read_pidfile(path: str) -> int | None:
    """The pid in `path` if that process is alive, else None."""
    try:
        with open(path, encoding="ascii") as f:
            pid = int(f.read().strip() or "0")
    except (OSError, ValueError):
        return None
    return pid if pid > 0 and pid_alive(pid) else None


def check_pidfile(path: str, overwrite: bool) -> None:
    other = read_pidfile(path)
    if other is not None and other != os.getpid() and not overwrite:
        raise RuntimeError(f"{path}: already running as pid {other}, aborting")


_PIDFILE_FD: list[int] = []      # kept open (and locked) for the life of the process


def write_pidfile(path: str) -> None:
    """Write our pid to `path`, holding a POSIX write lock on it as OVS daemons do:
    `ovs-appctl -t NAME` treats an unlocked pidfile as stale."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        os.fsync(fd)
        os.replace(tmp, path)
    except OSError:
        os.close(fd)
        raise
    for old in _PIDFILE_FD:
        os.close(old)
    _PIDFILE_FD[:] = [fd]


def remove_pidfile(path: str) -> None:
    try:
        with open(path, encoding="ascii") as f:
            if f.read().strip() != str(os.getpid()):
                return
        os.unlink(path)
    except OSError:
        pass


# --------------------------------------------------------------------------- daemonising


class _ReadyPipe:
    """Write end of the pipe the --detach parent waits on."""

    __slots__ = ("fd",)

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def ready(self) -> None:
        if self.fd is None:
            return
        try:
            os.write(self.fd, b"R")
            os.close(self.fd)
        except OSError:
            pass
        self.fd = None

    def fail(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None


def detach(no_chdir: bool) -> _ReadyPipe:
    """Double fork. Returns in the daemon; the original process exits when the
    daemon calls ready() (status 0) or dies/closes the pipe first (status 1)."""
    sys.stdout.flush()
    sys.stderr.flush()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid > 0:
        os.close(wfd)
        data = b""
        try:
            data = os.read(rfd, 1)
        except OSError:
            pass
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
        os._exit(0 if data == b"R" else 1)
    os.close(rfd)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    if not no_chdir:
        os.chdir("/")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    if devnull > 2:
        os.close(devnull)
    return _ReadyPipe(wfd)


# --------------------------------------------------------------------------- signals

# OVS's fatal signals: each logs, removes the pidfile and control socket, then
# kills the process with the same signal (so the exit status says which).
FATAL_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM)
_FATAL_PIDFILE: list[str] = []


def _on_fatal_signal(signum: int, frame: Any) -> None:
    vlog.get_logger("fatal_signal").warning(
        f"terminating with signal {signum} ({signal.strsignal(signum) or signum})")
    for path in _FATAL_PIDFILE:
        remove_pidfile(path)
    # Unlinks the files the ovs library registered (our control socket), then
    # re-raises `signum` with the default action.
    ovs.fatal_signal._signal_handler(signum, frame)
    os._exit(128 + signum)          # not reached unless the signal is ignored


def install_fatal_signal_handlers(pidfile: str | None) -> None:
    _FATAL_PIDFILE[:] = [pidfile] if pidfile else []
    for signum in FATAL_SIGNALS:
        signal.signal(signum, _on_fatal_signal)


# --------------------------------------------------------------------------- --monitor

# Exit statuses of a crashed child that --monitor restarts: killed by one of
# these signals (OVS's list), or an unhandled Python exception (CRASH_STATUS).
CRASH_STATUS = 70
_RESTART_SIGNALS = frozenset({signal.SIGABRT, signal.SIGALRM, signal.SIGBUS, signal.SIGFPE,
                              signal.SIGILL, signal.SIGPIPE, signal.SIGSEGV, signal.SIGXCPU,
                              signal.SIGXFSZ, signal.SIGKILL})
MONITOR_MIN_RESTART_S = 10.0


def describe_status(status: int) -> str:
    """Like OVS's process_status_msg(): "exit status 1", "killed (Terminated)"."""
    if os.WIFEXITED(status):
        return f"exit status {os.WEXITSTATUS(status)}"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        text = f"killed ({signal.strsignal(sig) or sig})"
        return text + (", core dumped" if os.WCOREDUMP(status) else "")
    return f"status {status}"


def should_restart(status: int) -> bool:
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status) in _RESTART_SIGNALS
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == CRASH_STATUS


_MONITORED: list[int] = []


def _forward_to_child(signum: int, frame: Any) -> None:
    for pid in _MONITORED:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def monitor(ready: _ReadyPipe) -> None:
    """Fork the daemon and restart it after a crash (OVS --monitor). Returns
    in each daemon child; the monitor process itself never returns."""
    log = vlog.get_logger("daemon_unix")
    last_start: float | None = None
    crashes = 0
    while True:
        if last_start is not None:
            wait = MONITOR_MIN_RESTART_S - (time.monotonic() - last_start)
            if wait > 0:
                time.sleep(wait)
        last_start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            for signum in FATAL_SIGNALS:
                signal.signal(signum, signal.SIG_DFL)
            return
        ready.fail()          # only the first child signals readiness
        _MONITORED[:] = [pid]
        for signum in FATAL_SIGNALS:       # the monitor forwards stop requests
            signal.signal(signum, _forward_to_child)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except ChildProcessError:
                os._exit(1)
            except InterruptedError:
                continue
        if not should_restart(status):
            log.info(f"pid {pid} died, {describe_status(status)}, exiting")
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1
            if os.WIFSIGNALED(status):
                signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
                os.kill(os.getpid(), os.WTERMSIG(status))
            os._exit(code)
        crashes += 1
        log.error(f"{crashes} crashes: pid {pid} died, {describe_status(status)}, restarting")


# --------------------------------------------------------------------------- --user


def parse_user(spec: str) -> tuple[int, int, str]:
    """USER[:GROUP] -> (uid, gid, user name); gid defaults to the user's group."""
    user, _, group = spec.partition(":")
    try:
        pw = pwd.getpwnam(user) if user else pwd.getpwuid(os.getuid())
    except KeyError:
        raise ValueError(f"{user}: invalid user") from None
    gid = pw.pw_gid
    if group:
        try:
            gid = grp.getgrnam(group).gr_gid
        except KeyError:
            raise ValueError(f"{group}: invalid group") from None
    return pw.pw_uid, gid, pw.pw_name


def become_user(spec: str, owned_files: Sequence[str]) -> None:
    """Drop root for `spec`: hand over the files opened so far (log file),
    then set groups, gid and uid, as OVS's daemon_become_new_user()."""
    uid, gid, name = parse_user(spec)
    for path in owned_files:
        os.chown(path, uid, gid)
    if os.getuid() == uid and os.getgid() == gid:
        return
    os.initgroups(name, gid)
    os.setgid(gid)
    os.setuid(uid)


# --------------------------------------------------------------------------- dispatch


def _import_optional(modname: str) -> ModuleType | None:
    """Import `modname`; None if that module (or a parent package) does not exist.
    Errors inside an existing module propagate."""
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == modname or modname.startswith(exc.name + ".")):
            return None
        raise


def run_subcommand(name: str, argv: list[str]) -> int:
    modname = SUBCOMMANDS[name]
    mod = _import_optional(modname)
    if mod is None or not hasattr(mod, "main"):
        sys.stderr.write(f"{version.PROGRAM}: subcommand '{name}' is not available in this build "
                         f"({modname}.main is missing)\n")
        return 1
    return int(mod.main(argv) or 0)


def run_daemon(options: Options) -> int:
    log = vlog.get_logger("main")
    controller.lazy_modules.block(*controller.lazy_modules.AGENT_BLOCKED)
    daemon = _import_optional(DAEMON_MODULE)
    dataclass_cache.finish()
    if daemon is None or not hasattr(daemon, "run"):
        vlog.setup(options.log_file, options.verbose)
        log.error("daemon module is not available, cannot run the agent",
                  module_missing=f"{DAEMON_MODULE}.run")
        return 1
    if options.pidfile:
        try:
            check_pidfile(options.pidfile, options.overwrite_pidfile)
        except RuntimeError as exc:
            sys.stderr.write(f"{version.PROGRAM}: {exc}\n")
            return 1
    if options.user:
        try:
            parse_user(options.user)
        except ValueError as exc:
            sys.stderr.write(f"{version.PROGRAM}: {exc}\n")
            return 1

    vlog.setup(options.log_file, options.verbose)
    pipe = detach(options.no_chdir) if options.detach else _ReadyPipe(None)
    if options.detach:
        vlog.set_level("any", vlog.OFF, "console")      # stderr is /dev/null now
    if options.monitor:
        monitor(pipe)
    options.ready = pipe.ready
    try:
        if options.user:
            become_user(options.user, [p for p in (options.log_file,) if p])
        if options.unixctl is None:
            options.unixctl = default_unixctl(os.getpid(), options.pidfile)
        if options.pidfile:
            write_pidfile(options.pidfile)
        install_fatal_signal_handlers(options.pidfile)
        if hasattr(daemon, "INTERNAL_VERSION"):
            log.info(f"OVN internal version is : [{daemon.INTERNAL_VERSION}]")
        log.info(f"{version.PACKAGE} {version.__version__} starting as {version.PROGRAM}",
                 pid=os.getpid())
        if not getattr(daemon, "SIGNALS_READY", False):
            pipe.ready()
        rc = daemon.run(options)
        return int(rc or 0)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except Exception:
        log.exception("fatal error")
        return CRASH_STATUS if options.monitor else 1
    finally:
        if options.pidfile:      # before the --detach parent hears of the failure
            remove_pidfile(options.pidfile)
        pipe.fail()


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Entry point; the program name comes from `prog` or sys.argv[0]."""
    name = version.program_from_argv0(prog if prog is not None else sys.argv[0])
    version.set_program(name)
    ovs.util.PROGRAM_NAME = name
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        return run_subcommand(args[0], args[1:])
    try:
        options = parse_args(args)
    except SystemExit as exc:       # --help, --version, usage errors
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    try:
        for spec in options.verbose:     # reject bad -v specs before detaching
            vlog.apply_spec(spec)
        vlog.set_syslog_method(options.syslog_method)
        if options.syslog_target:
            vlog.add_syslog_target(options.syslog_target)
        stream_ssl.configure(options.private_key, options.certificate, options.ca_cert,
                             options.bootstrap_ca_cert, options.ssl_protocols,
                             options.ssl_ciphers)
    except ValueError as exc:
        sys.stderr.write(f"{version.PROGRAM}: {exc}\n")
        return 2
    return run_daemon(options)


if __name__ == "__main__":
    raise SystemExit(main())
