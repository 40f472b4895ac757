"""Real OVS/OVN daemons in a private directory, for integration tests and demos.

Design note
-----------
A :class:`Sandbox` owns one fresh temporary directory (``self.run``) that holds
every database, socket, pidfile and log of its daemons, so several sandboxes
can run side by side. It starts, in order:

1. ovsdb-server for ``Open_vSwitch`` (``$RUN/db.sock``),
2. ovs-vswitchd on the dummy datapath (``--enable-dummy=override
   --disable-system --disable-system-route``), then creates ``br-int``
   (``datapath_type=dummy``, ``fail_mode=secure``, in-band off) and writes the
   chassis identity into ``Open_vSwitch.external_ids``,
3. the NB and SB ovsdb-servers (each with its own ``--unixctl``),
4. ovn-northd, unless ``northd=False`` (snapshot replay: the SB then stays
   exactly as restored).

The agent under test is started later with :meth:`start_controller` (``"c"``
for the real ovn-controller, ``"py"`` for ours through ``python -m controller``
with the same drop-in arguments).

Every tool runs with ``OVS_RUNDIR``/``OVN_RUNDIR``/... pointing at ``$RUN``, so
``ovs-vsctl``, ``ovs-ofctl``, ``ovn-nbctl``, ``ovn-sbctl`` and ``ovs-appctl -t
<name>`` reach this sandbox only.

Stopping kills only the processes this object started: by the pid read from
their pidfile right after start, after checking that ``/proc/PID/exe`` is
still the binary that was started and that the process start time did not
change (no pid reuse); SIGTERM first, SIGKILL after a grace period.

Completion is detected with the nb_cfg handshake (see :meth:`wait_hv_sync`),
never with a stable flow count.
"""

from __future__ import annotations

import atexit
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

REPO_ROOT = Path(__file__).resolve().parents[1]
VSWITCH_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
NB_SCHEMA = "/usr/share/ovn/ovn-nb.ovsschema"
SB_SCHEMA = "/usr/share/ovn/ovn-sb.ovsschema"
_EXTRA_PATH = ("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin")

# Stop order: the agent first, the OVS database last.
_STOP_ORDER = ("controller", "northd", "sb", "nb", "vswitchd", "ovsdb")


class SandboxError(RuntimeError):
    """A daemon or tool of the sandbox failed."""


def find_binary(name: str) -> str:
    path = os.pathsep.join([os.environ.get("PATH", ""), *_EXTRA_PATH])
    found = shutil.which(name, path=path)
    if not found:
        raise SandboxError(f"{name} not found: install the OVS/OVN Debian packages "
                           "(`make setup`)")
    return found


def agent_python() -> str:
    """The interpreter that runs our agent: the repo's .venv if present."""
    venv = REPO_ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


# The agent under test runs from cached bytecode, as an installed package
# does.  With PYTHONDONTWRITEBYTECODE in the caller's environment every agent
# start would compile its ~150 modules from source again (measured: ~0.25 s
# CPU and ~2 MiB of peak RSS per start, a third of a small agent's CPU); the
# cache goes under a prefix in the temp dir instead, so no tree gets
# __pycache__ directories, and is warmed once per test process.
PYCACHE_PREFIX = Path(tempfile.gettempdir()) / f"ovnpy-pycache-{os.getuid()}"
_bytecode_warm = False


def agent_env(base: dict[str, str]) -> dict[str, str]:
    """The environment of our agent: `base`, its repo first on PYTHONPATH,
    bytecode cached (see PYCACHE_PREFIX); the first call warms the cache."""
    global _bytecode_warm
    env = dict(base)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    if env.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        env.setdefault("PYTHONPYCACHEPREFIX", str(PYCACHE_PREFIX))
    if not _bytecode_warm:
        _bytecode_warm = True
        subprocess.run([agent_python(), "-c", "import controller.daemon, controller.pinctrl"],
                       env=env, cwd=REPO_ROOT, capture_output=True, timeout=120, check=False)
    return env


def _proc_start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):        # zombie: as good as dead
        return None
    return int(fields[19])             # field 22 of stat: starttime


def _proc_exe(pid: int) -> str | None:
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
    return exe.removesuffix(" (deleted)")


def poll_until(pred: Callable[[], object], timeout: float = 30.0, period: float = 0.1) -> bool:
    """Call ``pred`` every ``period`` seconds until it is true (True) or
    ``timeout`` seconds have passed (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(period)
    return False


def copy_db(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Copy an ovsdb file, decompressing it if it is gzipped."""
    with open(src, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        with gzip.open(src, "rb") as fin, open(dst, "wb") as fout:
            shutil.copyfileobj(fin, fout)
    else:
        shutil.copyfile(src, dst)


@dataclass
class Daemon:
    """One process started by a sandbox."""

    role: str           # "ovsdb", "vswitchd", "nb", "sb", "northd", "controller"
    name: str           # program name, e.g. "ovn-controller"
    pid: int
    exe: str            # resolved path the process must still be running
    start_time: int     # from /proc/PID/stat, guards against pid reuse
    pidfile: Path
    ctl: Path           # its unixctl socket
    log: Path

    def alive(self) -> bool:
        return (_proc_start_time(self.pid) == self.start_time
                and _proc_exe(self.pid) == self.exe)


class Sandbox:
    """A private OVS + OVN control plane. Use as a context manager."""

    def __init__(self, *, northd: bool = True, chassis: str = "hv1",
                 run_dir: str | os.PathLike[str] | None = None, keep: bool | None = None,
                 northd_threads: int | None = None) -> None:
        self.northd_enabled = northd
        self.chassis = chassis
        self.northd_threads = northd_threads
        if run_dir is None:
            self.run = Path(tempfile.mkdtemp(prefix="ovnpy-sbx-"))
            self._owns_dir = True
        else:
            self.run = Path(run_dir).resolve()
            self.run.mkdir(parents=True, exist_ok=True)
            self._owns_dir = False
        self.keep = bool(os.environ.get("OVNPY_KEEP_SANDBOX")) if keep is None else keep
        self.daemons: dict[str, Daemon] = {}
        self.controller_kind: str | None = None
        self._snapshot: dict[str, Path] = {}
        self._started = False
        self._atexit_registered = False
        self.env = self._make_env()

    # ------------------------------------------------------------------ setup

    def _make_env(self) -> dict[str, str]:
        run = str(self.run)
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([env.get("PATH", ""), *_EXTRA_PATH])
        env.update({
            "OVS_RUNDIR": run, "OVS_DBDIR": run, "OVS_LOGDIR": run, "OVS_SYSCONFDIR": run,
            "OVS_PKGDATADIR": "/usr/share/openvswitch",
            "OVN_RUNDIR": run, "OVN_DBDIR": run, "OVN_LOGDIR": run, "OVN_SYSCONFDIR": run,
            "OVN_PKGDATADIR": "/usr/share/ovn",
            "OVN_NB_DB": f"unix:{run}/ovnnb_db.sock", "OVN_SB_DB": f"unix:{run}/ovnsb_db.sock",
        })
        return env

    @property
    def db_sock(self) -> str:
        return f"unix:{self.run}/db.sock"

    @property
    def nb_sock(self) -> str:
        return f"unix:{self.run}/ovnnb_db.sock"

    @property
    def sb_sock(self) -> str:
        return f"unix:{self.run}/ovnsb_db.sock"

    @classmethod
    def from_snapshot(cls, nb: str | os.PathLike[str] | None, sb: str | os.PathLike[str],
                      conf: str | os.PathLike[str] | None = None, northd: bool = False,
                      **kwargs: object) -> Sandbox:
        """A started sandbox whose databases are copies of saved ones (gzip ok).

        Without northd the SB stays byte-for-byte the snapshot. A restored
        conf.db keeps its bridges, ports and persisted ct zones; its
        ovn-remote and pcap paths are rewritten for this run directory."""
        box = cls(northd=northd, **kwargs)  # type: ignore[arg-type]
        if nb is not None:
            box._snapshot["nb"] = Path(nb)
        box._snapshot["sb"] = Path(sb)
        if conf is not None:
            box._snapshot["conf"] = Path(conf)
        try:
            box.start()
        except BaseException:
            box.stop()
            raise
        return box

    def __enter__(self) -> Sandbox:
        if not self._started:
            try:
                self.start()
            except BaseException:
                self.stop()
                raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ------------------------------------------------------------------ commands

    def cmd(self, args: Sequence[str], *, timeout: float = 120.0, check: bool = True,
            input: str | None = None) -> str:
        """Run a tool in this sandbox's environment; stdout, or SandboxError."""
        try:
            proc = subprocess.run(
                list(args), env=self.env, cwd=self.run, capture_output=True, text=True,
                timeout=timeout, input=input,
                stdin=subprocess.DEVNULL if input is None else None)
        except subprocess.TimeoutExpired as exc:
            raise SandboxError(f"timed out after {timeout:.0f}s: {_short(args)}") from exc
        if check and proc.returncode != 0:
            raise SandboxError(f"exit {proc.returncode}: {_short(args)}\n{proc.stderr.strip()}")
        return proc.stdout

    def nbctl(self, *args: str, timeout: float = 120.0) -> str:
        return self.cmd(["ovn-nbctl", f"--timeout={int(timeout)}", *args], timeout=timeout + 5)

    def sbctl(self, *args: str, timeout: float = 120.0) -> str:
        return self.cmd(["ovn-sbctl", f"--timeout={int(timeout)}", *args], timeout=timeout + 5)

    def vsctl(self, *args: str, timeout: float = 120.0) -> str:
        return self.cmd(["ovs-vsctl", f"--timeout={int(timeout)}", *args], timeout=timeout + 5)

    def ofctl(self, *args: str, timeout: float = 120.0) -> str:
        return self.cmd(["ovs-ofctl", "-O", "OpenFlow15", *args], timeout=timeout)

    def ctl_path(self, target: str) -> str:
        """unixctl target for `ovs-appctl -t`: a role or program name, or a path."""
        if target.startswith("/"):
            return target
        aliases = {"ovsdb-server": "ovsdb", "ovs-vswitchd": "vswitchd", "ovnnb_db": "nb",
                   "ovnsb_db": "sb", "ovn-northd": "northd", "ovn-controller": "controller",
                   "ovn-controller-py": "controller"}
        daemon = self.daemons.get(aliases.get(target, target))
        return str(daemon.ctl) if daemon is not None else target

    def appctl(self, target: str, *args: str, timeout: float = 60.0) -> str:
        """`ovs-appctl -t TARGET ARGS...`; TARGET: "ovs-vswitchd", "nb", "sb",
        "ovn-northd", "controller" (whichever agent runs), or a socket path."""
        return self.cmd(["ovs-appctl", f"--timeout={int(timeout)}", "-t",
                         self.ctl_path(target), *args], timeout=timeout + 5)

    # ------------------------------------------------------------------ daemons

    def _start_daemon(self, role: str, argv: Sequence[str], *, pidfile: Path, ctl: Path | None,
                      log: Path, exe: str, cwd: Path | None = None,
                      env: dict[str, str] | None = None, timeout: float = 60.0) -> Daemon:
        """Run a `--detach` command and record the daemon it leaves behind."""
        real_exe = os.path.realpath(exe)
        try:
            proc = subprocess.run(list(argv), env=env or self.env, cwd=cwd or self.run,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            _kill_orphan(pidfile, real_exe)
            raise SandboxError(f"{role}: no detach within {timeout:.0f}s: {_short(argv)}"
                               f"\n{_tail(log)}") from exc
        if proc.returncode != 0:
            _kill_orphan(pidfile, real_exe)
            raise SandboxError(f"{role} failed to start (exit {proc.returncode}): "
                               f"{_short(argv)}\n{proc.stderr.strip()}\n{_tail(log)}")
        try:
            pid = int(pidfile.read_text().strip())
        except (OSError, ValueError) as exc:
            raise SandboxError(f"{role}: no pidfile {pidfile}") from exc
        start_time = _proc_start_time(pid)
        if start_time is None or _proc_exe(pid) != real_exe:
            raise SandboxError(f"{role}: pid {pid} from {pidfile} is not {real_exe}"
                               f"\n{_tail(log)}")
        name = Path(exe).name
        daemon = Daemon(role=role, name=name, pid=pid, exe=real_exe, start_time=start_time,
                        pidfile=pidfile, ctl=ctl or self.run / f"{pidfile.stem}.{pid}.ctl",
                        log=log)
        self.daemons[role] = daemon
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        return daemon

    def _ovs_daemon(self, role: str, program: str, args: Sequence[str], *, base: str,
                    unixctl: bool = False) -> Daemon:
        exe = find_binary(program)
        pidfile = self.run / f"{base}.pid"
        log = self.run / f"{base}.log"
        ctl = self.run / f"{base}.ctl" if unixctl else None
        argv = [exe, "--detach", "--no-chdir", f"--pidfile={pidfile}",
                "-vconsole:off", f"--log-file={log}"]      # console:off before --log-file
        if ctl is not None:
            argv.append(f"--unixctl={ctl}")
        argv.extend(args)
        return self._start_daemon(role, argv, pidfile=pidfile, ctl=ctl, log=log, exe=exe)

    def start(self) -> Sandbox:
        """Bring up everything but the agent. Idempotent."""
        if self._started:
            return self
        self._started = True
        run = self.run
        tool = find_binary("ovsdb-tool")

        conf = run / "conf.db"
        if "conf" in self._snapshot:
            copy_db(self._snapshot["conf"], conf)
        else:
            self.cmd([tool, "create", str(conf), VSWITCH_SCHEMA])
        self._ovs_daemon("ovsdb", "ovsdb-server", [
            f"--remote=punix:{run}/db.sock",
            "--remote=db:Open_vSwitch,Open_vSwitch,manager_options", str(conf)],
            base="ovsdb-server")
        if "conf" in self._snapshot:
            self._fix_restored_conf()
        else:
            self.vsctl("--no-wait", "init")

        self.start_vswitchd()
        self.vsctl(
            "--", "set", "Open_vSwitch", ".",
            f"external_ids:system-id={self.chassis}",
            f"external_ids:hostname={self.chassis}",
            f"external_ids:ovn-remote={self.sb_sock}",
            "external_ids:ovn-encap-type=geneve",
            "external_ids:ovn-encap-ip=127.0.0.1",
            "external_ids:ovn-bridge=br-int",
            "--", "--may-exist", "add-br", "br-int",
            "--", "set", "Bridge", "br-int", "datapath_type=dummy", "fail-mode=secure",
            "other-config:disable-in-band=true")

        for role, db, schema in (("nb", "ovnnb_db", NB_SCHEMA), ("sb", "ovnsb_db", SB_SCHEMA)):
            path = run / f"{db}.db"
            if role in self._snapshot:
                copy_db(self._snapshot[role], path)
            else:
                self.cmd([tool, "create", str(path), schema])
            self._ovs_daemon(role, "ovsdb-server", [
                f"--remote=punix:{run}/{db}.sock", str(path)], base=db, unixctl=True)
            # a restored SB must stay exactly the snapshot
            if role not in self._snapshot:
                if role == "nb":
                    self.cmd(["ovn-nbctl", "--no-wait", "init"])
                else:
                    self.cmd(["ovn-sbctl", "init"])

        if self.northd_enabled:
            self.start_northd()
        return self

    def start_vswitchd(self) -> Daemon:
        return self._ovs_daemon("vswitchd", "ovs-vswitchd", [
            "--enable-dummy=override", "--disable-system", "--disable-system-route",
            self.db_sock], base="ovs-vswitchd")

    def restart_vswitchd(self) -> Daemon:
        """Start ovs-vswitchd again (ovs-vswitchd 3.1.0's userspace conntrack can
        abort; see recipe pitfall 3). Stops it first if it still runs."""
        self.stop_daemon("vswitchd")
        daemon = self.start_vswitchd()
        self.vsctl("--", "--may-exist", "add-br", "br-int")     # waits for reconfiguration
        return daemon

    def start_northd(self) -> Daemon:
        args = [f"--ovnnb-db={self.nb_sock}", f"--ovnsb-db={self.sb_sock}"]
        if self.northd_threads:
            args.append(f"--n-threads={self.northd_threads}")
        daemon = self._ovs_daemon("northd", "ovn-northd", args, base="ovn-northd")
        self.northd_enabled = True
        return daemon

    def _fix_restored_conf(self) -> None:
        """A restored conf.db carries the old run directory in pcap options."""
        out = self.vsctl("--no-wait", "--format=json", "--columns=name,options",
                         "list", "Interface")
        rows = json.loads(out)["data"]
        cmds: list[str] = []
        for name, options in rows:
            keys = {k for k, _ in options[1]}
            for key, suffix in (("tx_pcap", "tx"), ("rxq_pcap", "rx")):
                if key in keys:
                    cmds += ["--", "set", "Interface", name,
                             f"options:{key}={self.run}/{name}-{suffix}.pcap"]
        if cmds:
            self.vsctl("--no-wait", *cmds)

    def stop_daemon(self, role: str, grace: float = 5.0) -> None:
        """Stop one daemon we started (never anything else)."""
        daemon = self.daemons.pop(role, None)
        if daemon is None:
            return
        if daemon.alive():
            _terminate(daemon, grace)
        for path in (daemon.ctl, daemon.pidfile):
            try:
                if path.exists() and (path.is_socket() or path == daemon.pidfile):
                    path.unlink()
            except OSError:
                pass

    def stop(self) -> None:
        """Stop every daemon this sandbox started and remove its directory."""
        for role in _STOP_ORDER:
            self.stop_daemon(role)
        for role in list(self.daemons):
            self.stop_daemon(role)
        self.controller_kind = None
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False
        if self._owns_dir and not self.keep:
            shutil.rmtree(self.run, ignore_errors=True)
        elif self.run.exists():
            for pattern in ("*.sock", "*.ctl", "*.mgmt", "*.snoop"):
                for sock in self.run.glob(pattern):
                    try:
                        sock.unlink()
                    except OSError:
                        pass
        self._started = False

    def pids(self) -> dict[str, int]:
        return {role: d.pid for role, d in self.daemons.items()}

    # ------------------------------------------------------------------ agent

    def start_controller(self, kind: str = "c", extra_args: Sequence[str] = (),
                         timeout: float = 60.0) -> Daemon:
        """Start the agent under test: "c" = ovn-controller, "py" = ours."""
        if "controller" in self.daemons:
            raise SandboxError("a controller is already running in this sandbox")
        run = self.run
        if kind == "c":
            exe = find_binary("ovn-controller")
            pidfile, log = run / "ovn-controller.pid", run / "ovn-controller.log"
            argv = [exe, "--detach", "--no-chdir", f"--pidfile={pidfile}", "-vconsole:off",
                    f"--log-file={log}", *extra_args, self.db_sock]
            daemon = self._start_daemon("controller", argv, pidfile=pidfile, ctl=None, log=log,
                                        exe=exe, timeout=timeout)
        elif kind == "py":
            exe = agent_python()
            pidfile, log = run / "ovn-controller-py.pid", run / "ovn-controller-py.log"
            ctl = run / "ovn-controller-py.ctl"
            argv = [exe, "-m", "controller", self.db_sock, f"--pidfile={pidfile}",
                    "-vconsole:off", f"--log-file={log}", "--detach", "--no-chdir",
                    f"--unixctl={ctl}", *extra_args]
            env = agent_env(self.env)
            daemon = self._start_daemon("controller", argv, pidfile=pidfile, ctl=ctl, log=log,
                                        exe=exe, cwd=REPO_ROOT, env=env, timeout=timeout)
            daemon.name = "ovn-controller-py"
            # --detach may return before the control socket exists; wait for it.
            deadline = time.monotonic() + timeout
            while not ctl.exists():
                if not daemon.alive():
                    self.daemons.pop("controller", None)
                    raise SandboxError(f"ovn-controller-py exited after start\n{_tail(log)}")
                if time.monotonic() > deadline:
                    raise SandboxError(f"ovn-controller-py: no control socket {ctl} after "
                                       f"{timeout:.0f}s\n{_tail(log)}")
                time.sleep(0.05)
        else:
            raise ValueError(f"unknown controller kind {kind!r} (use 'c' or 'py')")
        self.controller_kind = kind
        return daemon

    def stop_controller(self) -> None:
        self.stop_daemon("controller")
        self.controller_kind = None

    def controller_alive(self) -> bool:
        daemon = self.daemons.get("controller")
        return daemon is not None and daemon.alive()

    def log_tail(self, role: str = "controller", lines: int = 30) -> str:
        daemon = self.daemons.get(role)
        return _tail(daemon.log, lines) if daemon else ""

    # ------------------------------------------------------------------ VIFs

    def bind_vif(self, name: str, iface_id: str, ofport: int | None = None,
                 pcap: bool = False) -> None:
        """Add a dummy interface on br-int whose iface-id names a logical port."""
        self.vsctl(*self._vif_args(name, iface_id, ofport, pcap))

    def bind_vifs(self, vifs: Iterable[tuple[str, str]], batch: int = 2000,
                  timeout: float = 600.0) -> None:
        """Many (name, iface_id) VIFs, `batch` per ovs-vsctl call."""
        args: list[str] = []
        count = 0
        for name, iface_id in vifs:
            args += self._vif_args(name, iface_id, None, False)
            count += 1
            if count == batch:
                self.vsctl(*args, timeout=timeout)
                args, count = [], 0
        if args:
            self.vsctl(*args, timeout=timeout)

    def _vif_args(self, name: str, iface_id: str, ofport: int | None, pcap: bool) -> list[str]:
        args = ["--", "--may-exist", "add-port", "br-int", name,
                "--", "set", "Interface", name, "type=dummy",
                f"external_ids:iface-id={iface_id}"]
        if pcap:
            args += [f"options:tx_pcap={self.run}/{name}-tx.pcap",
                     f"options:rxq_pcap={self.run}/{name}-rx.pcap"]
        if ofport is not None:
            args.append(f"ofport_request={ofport}")
        return args

    def unbind_vif(self, name: str) -> None:
        self.vsctl("--if-exists", "del-port", "br-int", name)

    # ------------------------------------------------------------------ snapshots

    def backup(self, directory: str | os.PathLike[str]) -> dict[str, Path]:
        """`ovsdb-client backup` of NB, SB and conf into `directory`."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        client = find_binary("ovsdb-client")
        files: dict[str, Path] = {}
        for key, remote, db in (("nb", self.nb_sock, "OVN_Northbound"),
                                ("sb", self.sb_sock, "OVN_Southbound"),
                                ("conf", self.db_sock, "Open_vSwitch")):
            path = out / f"{key}.db"
            with open(path, "wb") as f:
                proc = subprocess.run([client, "backup", remote, db], env=self.env,
                                      stdout=f, stderr=subprocess.PIPE,
                                      stdin=subprocess.DEVNULL, timeout=120)
            if proc.returncode != 0:
                raise SandboxError(f"backup of {db} failed: {proc.stderr.decode().strip()}")
            files[key] = path
        return files

    # ------------------------------------------------------------------ completion

    def chassis_private_nb_cfg(self) -> int | None:
        """nb_cfg of our Chassis_Private row, None while the row does not exist."""
        out = self.sbctl("--bare", "--columns=nb_cfg", "find", "Chassis_Private",
                         f"name={self.chassis}").strip()
        return int(out) if out else None

    def wait_hv_sync(self, timeout: float = 120.0, min_flows: int = 1,
                     poll: float = 0.1) -> float:
        """Wait until the agent has installed the flows for the current SB.

        With northd: once our Chassis_Private row exists, `ovn-nbctl --wait=hv
        sync` (issued earlier it would return at once). Without northd: play
        northd's part, bump SB_Global.nb_cfg and poll Chassis_Private.nb_cfg.
        Then also require `min_flows` flows on br-int. Returns seconds waited."""
        start = time.monotonic()
        deadline = start + timeout

        def remaining() -> float:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SandboxError(f"wait_hv_sync: timed out after {timeout:.0f}s\n"
                                   f"{self.log_tail()}")
            return left

        while self.chassis_private_nb_cfg() is None:
            self._check_controller()
            remaining()
            time.sleep(poll)
        if self.northd_enabled:
            try:
                self.nbctl("--wait=hv", "sync", timeout=max(1.0, remaining()))
            except SandboxError as exc:
                raise SandboxError(f"wait_hv_sync: {exc}\n{self.log_tail()}") from exc
        else:
            cfg = int(self.sbctl("get", "SB_Global", ".", "nb_cfg").strip() or "0") + 1
            self.sbctl("set", "SB_Global", ".", f"nb_cfg={cfg}")
            while (self.chassis_private_nb_cfg() or 0) < cfg:
                self._check_controller()
                remaining()
                time.sleep(poll)
        while self.flow_count() < min_flows:
            self._check_controller()
            remaining()
            time.sleep(poll)
        return time.monotonic() - start

    def _check_controller(self) -> None:
        if "controller" in self.daemons and not self.controller_alive():
            raise SandboxError(f"the {self.controller_kind} controller died\n"
                               f"{self.log_tail()}")

    # ------------------------------------------------------------------ flows

    def dump_flows(self, bridge: str = "br-int", names: bool = True) -> list[str]:
        """Flow lines of `ovs-ofctl dump-flows --no-stats` (header dropped)."""
        args = ["--no-stats"] + (["--names"] if names else []) + ["dump-flows", bridge]
        return [line.strip() for line in self.ofctl(*args).splitlines()
                if line.strip() and not line.startswith(("OFPST_", "NXST_"))]

    def dump_groups(self, bridge: str = "br-int") -> list[str]:
        """Group lines of `ovs-ofctl dump-groups` (header dropped)."""
        return [line.strip() for line in self.ofctl("dump-groups", bridge).splitlines()
                if line.strip().startswith("group_id=")]

    def dump_meters(self, bridge: str = "br-int") -> list[str]:
        """Meter entries of `ovs-ofctl dump-meters`, one string per meter."""
        meters: list[str] = []
        for line in self.ofctl("dump-meters", bridge).splitlines():
            text = line.strip()
            if text.startswith("meter="):
                meters.append(text)
            elif meters and text and not text.startswith("OFPST_"):
                meters[-1] += " " + text
        return meters

    def flow_count(self, bridge: str = "br-int") -> int:
        out = self.ofctl("dump-aggregate", bridge)
        for word in out.split():
            if word.startswith("flow_count="):
                return int(word.split("=", 1)[1])
        raise SandboxError(f"unexpected dump-aggregate output: {out!r}")


def _terminate(daemon: Daemon, grace: float) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; only while it is still ours."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if not daemon.alive():
            return
        try:
            os.kill(daemon.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not daemon.alive():
                return
            time.sleep(0.02)


def _kill_orphan(pidfile: Path, exe: str) -> None:
    """A daemon whose `--detach` parent failed or was killed may still run:
    stop it if its pidfile names a live process running `exe`."""
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return
    start_time = _proc_start_time(pid)
    if start_time is None or _proc_exe(pid) != exe or pid == os.getpid():
        return
    _terminate(Daemon(role="orphan", name=Path(exe).name, pid=pid, exe=exe,
                      start_time=start_time, pidfile=pidfile, ctl=pidfile, log=pidfile), 5.0)


def _short(args: Sequence[str], limit: int = 300) -> str:
    text = " ".join(str(a) for a in args)
    return text if len(text) <= limit else text[:limit] + " ..."


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join([f"--- last lines of {path.name}:"] + text[-lines:])
