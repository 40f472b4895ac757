"""The scale-out cluster of integration/scale.py: topology, processes, the
Central and Hypervisor sandboxes, ScaleCluster, the flow sampler and the
logical-flow bound.

Design note
-----------
One run directory holds a ``central/`` sandbox and one ``hv<i>/`` directory
per simulated hypervisor; every socket is a unix socket in there.

* :class:`Central` (a :class:`~integration.sandbox.Sandbox` whose ``start``
  is replaced): a 3-server RAFT Southbound (``ovsdb-tool create-cluster`` /
  ``join-cluster``, raft links on ``sb<k>.raft``, clients on ``sb<k>.sock``),
  a standalone NB, ovn-northd on both, and ``relays`` ovsdb relays
  (``relay:OVN_Southbound:<the three members>``, clients on ``relay<j>.sock``).
* :class:`Hypervisor` (a Sandbox that starts only its ``ovsdb-server`` and
  ``ovs-vswitchd --enable-dummy=override``): its own system-id ``hv<i>``,
  encap IP ``127.1.X.Y``, ``ovn-remote`` = the relays (comma-separated; the
  OVSDB client picks one at random), ``ovn-monitor-all=false``.  Its agent is
  started with the inherited :meth:`Sandbox.start_controller`.

Topology (ovn-heater density style, see :func:`topology_commands`): a
distributed cluster router, one switch per chassis with ``vifs`` bound VIFs,
a join switch and one gateway router per chassis (``options:chassis``) with
SNAT of the node subnet; four ACLs on one port group holding every VIF, two
address sets plus the port group's ``$pg_all_ip4``.

Between agent kinds :meth:`ScaleCluster.reset_chassis` removes what the
stopped agents left (Chassis/Encap/Chassis_Private rows, tunnel ports,
ct-zone keys, ovn-installed marks, flows), so each kind starts from the
same state (before, the C agents found ours' chassis and claims already in
place).
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from integration.sandbox import (SB_SCHEMA, VSWITCH_SCHEMA, NB_SCHEMA, Daemon, Sandbox,
                                 SandboxError, find_binary, poll_until)

CLK_TCK = os.sysconf("SC_CLK_TCK")
SB_MEMBERS = 3

# ---------------------------------------------------------------- topology

def _net(i: int) -> tuple[int, int]:
    return 1 + i // 256, i % 256


def vif_names(i: int, vifs: int) -> list[tuple[str, str]]:
    """(OVS interface, logical port) of the VIFs of chassis i."""
    return [(f"vif{k}", f"hv{i}-p{k}") for k in range(1, vifs + 1)]


def topology_commands(n: int, vifs: int) -> list[str]:
    """ovn-nbctl arguments (one transaction) of the density topology."""
    c: list[str] = []

    def nb(*args: str) -> None:
        c.extend(["--", *args])

    def router_port(ls: str, lsp: str, lrp: str) -> None:
        nb("lsp-add", ls, lsp)
        nb("lsp-set-type", lsp, "router")
        nb("lsp-set-addresses", lsp, "router")
        nb("lsp-set-options", lsp, f"router-port={lrp}")

    nb("lr-add", "lr-cluster")
    nb("ls-add", "ls-join")
    nb("lrp-add", "lr-cluster", "lrp-cluster-join", "0a:00:64:00:00:01", "100.64.0.1/16")
    router_port("ls-join", "lsp-join-cluster", "lrp-cluster-join")
    nb("create", "Address_Set", "name=as_allowed",
       'addresses="192.168.10.0/24","172.31.0.5"')
    nb("create", "Address_Set", "name=as_blocked", 'addresses="10.250.0.1","10.250.0.2"')
    members: list[str] = []
    for i in range(1, n + 1):
        a, b = _net(i)
        hh, ll = i // 256, i % 256
        mac = f"{hh:02x}:{ll:02x}"
        ls, gw = f"ls-hv{i}", f"gw-hv{i}"
        nb("ls-add", ls)
        nb("lrp-add", "lr-cluster", f"lrp-hv{i}", f"0a:01:00:{mac}:01", f"10.{a}.{b}.1/24")
        router_port(ls, f"lsp-hv{i}-lr", f"lrp-hv{i}")
        for k, (_, lsp) in enumerate(vif_names(i, vifs), start=1):
            nb("lsp-add", ls, lsp)
            nb("lsp-set-addresses", lsp, f"0a:02:{mac}:00:{k:02x} 10.{a}.{b}.{10 + k}")
            members.append(lsp)
        nb("lr-add", gw)
        nb("set", "Logical_Router", gw, f"options:chassis=hv{i}")
        join_ip = f"100.64.{a}.{b}"
        nb("lrp-add", gw, f"{gw}-join", f"0a:03:00:{mac}:01", f"{join_ip}/16")
        router_port("ls-join", f"lsp-join-gw{i}", f"{gw}-join")
        ext_ip = f"172.{16 + i // 256}.{i % 256}.1"
        nb("lrp-add", gw, f"{gw}-ext", f"0a:04:00:{mac}:01", f"{ext_ip}/24")
        nb("lr-nat-add", gw, "snat", ext_ip, f"10.{a}.{b}.0/24")
        nb("lr-route-add", gw, "10.0.0.0/8", "100.64.0.1")
        nb("--policy=src-ip", "lr-route-add", "lr-cluster", f"10.{a}.{b}.0/24", join_ip)
    nb("pg-add", "pg_all", *members)
    for direction, prio, match, action in (
            ("from-lport", "1001", "inport == @pg_all && ip4.dst == $as_blocked", "drop"),
            ("to-lport", "1002", "outport == @pg_all && ip4.src == $as_allowed && "
                                 "tcp.dst == {80, 443}", "allow-related"),
            ("to-lport", "1001", "outport == @pg_all && ip4.src == $pg_all_ip4",
             "allow-related"),
            ("to-lport", "1000", "outport == @pg_all && ip4", "drop")):
        nb("--type=port-group", "acl-add", "pg_all", direction, prio, match, action)
    return c


# ---------------------------------------------------------------- processes

def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process, seconds (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_hwm_mib(pid: int) -> float:
    """Peak RSS (VmHWM) of a process, MiB."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def kill_daemon(box: Sandbox, role: str) -> None:
    """SIGKILL one daemon of `box` (a crash: no cleanup), only if still ours."""
    daemon = box.daemons.pop(role, None)
    if daemon is None:
        return
    if daemon.alive():
        try:
            os.kill(daemon.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        poll_until(lambda: not daemon.alive(), timeout=10, period=0.02)
    for path in (daemon.ctl, daemon.pidfile):
        try:
            path.unlink()
        except OSError:
            pass
    if role == "controller":
        box.controller_kind = None


class Central(Sandbox):
    """NB, a 3-member RAFT SB, relays and ovn-northd (no OVS, no agent)."""

    def __init__(self, run_dir: Path, relays: int = 2) -> None:
        super().__init__(run_dir=run_dir, chassis="central")
        self.n_relays = relays
        self.env["OVN_SB_DB"] = self.sb_cluster
        self.env["OVN_NB_DB"] = self.nb_sock

    @property
    def sb_cluster(self) -> str:
        return ",".join(f"unix:{self.run}/sb{k}.sock" for k in range(1, SB_MEMBERS + 1))

    @property
    def relay_remotes(self) -> list[str]:
        return [f"unix:{self.run}/relay{j}.sock" for j in range(1, self.n_relays + 1)]

    @property
    def sb_remotes(self) -> str:
        """What agents connect to: the relays, or the cluster without relays."""
        return ",".join(self.relay_remotes) if self.n_relays else self.sb_cluster

    def start(self) -> Central:
        if self._started:
            return self
        self._started = True
        run, tool = self.run, find_binary("ovsdb-tool")
        nb = run / "ovnnb_db.db"
        self.cmd([tool, "create", str(nb), NB_SCHEMA])
        self._ovs_daemon("nb", "ovsdb-server", [f"--remote=punix:{run}/ovnnb_db.sock", str(nb)],
                         base="ovnnb_db", unixctl=True)
        self.cmd(["ovn-nbctl", "--no-wait", "init"])
        self.cmd([tool, "create-cluster", str(run / "sb1.db"), SB_SCHEMA, f"unix:{run}/sb1.raft"])
        for k in range(2, SB_MEMBERS + 1):
            self.cmd([tool, "join-cluster", str(run / f"sb{k}.db"), "OVN_Southbound",
                      f"unix:{run}/sb{k}.raft", f"unix:{run}/sb1.raft"])
        for k in range(1, SB_MEMBERS + 1):
            self.start_sb(k)
        for k in range(1, SB_MEMBERS + 1):
            self.cmd(["ovsdb-client", "--timeout=60", "wait", f"unix:{run}/sb{k}.sock",
                      "OVN_Southbound", "connected"], timeout=70)
        self.cmd(["ovn-sbctl", "--timeout=60", "init"], timeout=70)
        for j in range(1, self.n_relays + 1):
            self.start_relay(j)
        self.start_northd()
        return self

    def start_sb(self, k: int) -> Daemon:
        run = self.run
        return self._ovs_daemon(f"sb{k}", "ovsdb-server", [
            f"--remote=punix:{run}/sb{k}.sock", str(run / f"sb{k}.db")],
            base=f"sb{k}", unixctl=True)

    def start_relay(self, j: int) -> Daemon:
        return self._ovs_daemon(f"relay{j}", "ovsdb-server", [
            f"--remote=punix:{self.run}/relay{j}.sock",
            f"relay:OVN_Southbound:{self.sb_cluster}"], base=f"relay{j}", unixctl=True)

    def start_northd(self) -> Daemon:
        daemon = self._ovs_daemon("northd", "ovn-northd", [
            f"--ovnnb-db={self.nb_sock}", f"--ovnsb-db={self.sb_cluster}"], base="ovn-northd")
        self.northd_enabled = True
        return daemon

    def sb_leader(self) -> int | None:
        for k in range(1, SB_MEMBERS + 1):
            if f"sb{k}" not in self.daemons:
                continue
            try:
                out = self.appctl(f"sb{k}", "cluster/status", "OVN_Southbound", timeout=10)
            except SandboxError:
                continue
            if "Role: leader" in out:
                return k
        return None

    def sessions(self, role: str) -> int | None:
        """Client sessions of an ovsdb-server (from memory/show)."""
        try:
            out = self.appctl(role, "memory/show", timeout=10)
        except SandboxError:
            return None
        for word in out.split():
            if word.startswith("sessions:"):
                return int(word.split(":", 1)[1])
        return None

    def rpc_log_on(self) -> dict[str, int]:
        """Log every JSON-RPC message on the relays (``jsonrpc:file:dbg``);
        returns the current size of their logs (where counting starts)."""
        marks: dict[str, int] = {}
        for role, d in self.daemons.items():
            if role.startswith("relay"):
                self.appctl(role, "vlog/set", "jsonrpc:file:dbg", timeout=10)
                marks[role] = d.log.stat().st_size if d.log.exists() else 0
        return marks

    def rpc_counts(self, marks: dict[str, int]) -> dict[str, int]:
        """Requests the relays received since `marks`, by method."""
        counts: dict[str, int] = {}
        for role, start in marks.items():
            d = self.daemons.get(role)
            if d is None or not d.log.exists():
                continue
            with open(d.log, "rb") as f:
                f.seek(start)
                for raw in f:
                    i = raw.find(b'received request, method="')
                    if i < 0:
                        continue
                    j = i + len(b'received request, method="')
                    method = raw[j:raw.find(b'"', j)].decode(errors="replace")
                    counts[method] = counts.get(method, 0) + 1
        return counts

    def server_cpu(self) -> dict[str, float]:
        return {role: proc_cpu_s(d.pid) for role, d in self.daemons.items()
                if role.startswith(("sb", "relay")) or role == "northd"}

    def wait_hv(self, timeout: float = 600.0) -> float:
        start = time.monotonic()
        self.nbctl("--wait=hv", "sync", timeout=timeout)
        return time.monotonic() - start


class Hypervisor(Sandbox):
    """One simulated chassis: its own Open_vSwitch db and dummy-datapath vswitchd."""

    def __init__(self, run_dir: Path, index: int, central: Central, vifs: int) -> None:
        super().__init__(run_dir=run_dir, chassis=f"hv{index}")
        self.index = index
        self.vifs = vifs
        self.central = central
        a, b = divmod(index, 250)
        self.encap_ip = f"127.1.{a}.{b + 1}"
        self.env["OVN_NB_DB"] = central.nb_sock
        self.env["OVN_SB_DB"] = central.sb_cluster

    def start(self) -> Hypervisor:
        if self._started:
            return self
        self._started = True
        run = self.run
        conf = run / "conf.db"
        self.cmd([find_binary("ovsdb-tool"), "create", str(conf), VSWITCH_SCHEMA])
        self._ovs_daemon("ovsdb", "ovsdb-server", [
            f"--remote=punix:{run}/db.sock", str(conf)], base="ovsdb-server")
        self.vsctl("--no-wait", "init")
        self.start_vswitchd()
        self.vsctl(
            "--", "set", "Open_vSwitch", ".",
            f"external_ids:system-id={self.chassis}", f"external_ids:hostname={self.chassis}",
            f"external_ids:ovn-remote={self.central.sb_remotes}",
            "external_ids:ovn-encap-type=geneve", f"external_ids:ovn-encap-ip={self.encap_ip}",
            "external_ids:ovn-bridge=br-int", "external_ids:ovn-monitor-all=false",
            "--", "--may-exist", "add-br", "br-int",
            "--", "set", "Bridge", "br-int", "datapath_type=dummy", "fail-mode=secure",
            "other-config:disable-in-band=true")
        self.bind_vifs(vif_names(self.index, self.vifs))
        return self

    @property
    def agent_pid(self) -> int | None:
        d = self.daemons.get("controller")
        return d.pid if d is not None else None


# ---------------------------------------------------------------- the cluster

@dataclass
class ScaleCluster:
    n: int
    vifs: int = 3
    relays: int = 2
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ovnpy-scale-")))
    keep: bool = False
    central: Central | None = None
    hvs: list[Hypervisor] = field(default_factory=list)
    # extra command-line arguments per agent kind (e.g. log levels)
    agent_args: dict[str, list[str]] = field(default_factory=dict)
    # cProfile our agents (OVN_CONTROLLER_PY_PROFILE=<hv dir>/agent.prof)
    profile: bool = False
    # count the JSON-RPC requests the relays receive (their jsonrpc debug log)
    count_rpc: bool = False

    def start(self) -> ScaleCluster:
        self.central = Central(self.root / "central", self.relays).start()
        self.central.nbctl("--no-wait", *topology_commands(self.n, self.vifs), timeout=600)
        self.central.nbctl("--wait=sb", "sync", timeout=600)
        self.hvs = [Hypervisor(self.root / f"hv{i}", i, self.central, self.vifs)
                    for i in range(1, self.n + 1)]
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda hv: hv.start(), self.hvs))
        return self

    def stop(self) -> None:
        for hv in self.hvs:
            hv.stop_controller()
        for hv in self.hvs:
            hv.stop()
        if self.central is not None:
            self.central.stop()
        if not self.keep:
            import shutil
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ScaleCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def c(self) -> Central:
        assert self.central is not None
        return self.central

    # -- agents -------------------------------------------------------
    def start_agents(self, kind: str, hvs: Sequence[Hypervisor] | None = None) -> None:
        """Start the agents of all (or the given) hypervisors at once."""
        targets = list(self.hvs if hvs is None else hvs)
        for hv in targets:
            if self.profile and kind == "py":
                hv.env["OVN_CONTROLLER_PY_PROFILE"] = str(hv.run / "agent.prof")
                hv.env["OVN_CONTROLLER_PY_TIMELINE"] = str(hv.run / "agent.timeline")
            else:
                hv.env.pop("OVN_CONTROLLER_PY_PROFILE", None)
                hv.env.pop("OVN_CONTROLLER_PY_TIMELINE", None)
        with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
            list(pool.map(lambda hv: hv.start_controller(
                kind, extra_args=self.agent_args.get(kind, ()), timeout=self.patience),
                targets))

    def stop_agents(self) -> None:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda hv: hv.stop_controller(), self.hvs))

    def reset_chassis(self) -> None:
        """Undo what the stopped agents left behind, so the next agent kind
        starts from the same state as the first: no Chassis, Chassis_Private
        or Encap rows of ours in the SB (the bindings' chassis references go
        with them), no tunnel ports, ct-zone keys or ovn-installed marks in
        OVS, no flows or groups on br-int."""
        args: list[str] = []
        for hv in self.hvs:
            args += ["--", "--if-exists", "chassis-del", hv.chassis]
        self.c.sbctl(*args, timeout=300)

        def one(hv: Hypervisor) -> None:
            rows = json.loads(hv.vsctl("--format=json", "--columns=name,external_ids",
                                       "list", "Port"))["data"]
            ports = [name for name, ext in rows if "ovn-chassis-id" in dict(ext[1])]
            cmd: list[str] = []
            for port in ports:
                cmd += ["--", "--if-exists", "del-port", "br-int", port]
            cmd += ["--", "clear", "Bridge", "br-int", "external_ids"]
            for iface, _ in vif_names(hv.index, hv.vifs):
                cmd += ["--", "remove", "Interface", iface, "external_ids", "ovn-installed",
                        "--", "remove", "Interface", iface, "external_ids", "ovn-installed-ts"]
            hv.vsctl(*cmd)
            hv.ofctl("del-flows", "br-int")
            hv.ofctl("del-groups", "br-int")
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(one, self.hvs))
        self.c.nbctl("--wait=sb", "sync", timeout=300)

    def kill_agents(self) -> None:
        for hv in self.hvs:
            kill_daemon(hv, "controller")

    @property
    def patience(self) -> float:
        """Timeout of one whole-fleet step: generous, the machine may be shared."""
        return max(300.0, 15.0 * self.n)

    def wait_converged(self, timeout: float | None = None) -> None:
        """All Chassis_Private rows exist, then --wait=hv sync, then flows everywhere."""
        timeout = self.patience if timeout is None else timeout
        deadline = time.monotonic() + timeout
        names = {hv.chassis for hv in self.hvs}

        def rows() -> bool:
            out = self.c.sbctl("--no-leader-only", "--bare", "--columns=name", "list",
                               "Chassis_Private", timeout=60)
            return names <= set(out.split())
        if not poll_until(rows, timeout=timeout, period=0.5):
            raise SandboxError("not every chassis registered its Chassis_Private row")
        self.c.wait_hv(timeout=max(5.0, deadline - time.monotonic()))
        for hv in self.hvs:
            if not poll_until(lambda: hv.flow_count() > 0, timeout=60, period=0.2):
                raise SandboxError(f"{hv.chassis}: no flows after --wait=hv")
        dead = [hv.chassis for hv in self.hvs if not hv.controller_alive()]
        if dead:
            raise SandboxError(f"agents died: {dead}")

    def sampled(self, count: int = 3) -> list[Hypervisor]:
        """Chassis 1, the middle one and the last one."""
        picks = sorted({0, len(self.hvs) // 2, len(self.hvs) - 1})[:count]
        return [self.hvs[p] for p in picks]


class FlowSampler:
    """Polls the flow count of some chassis in a thread; keeps the minimum."""

    def __init__(self, hvs: Sequence[Hypervisor], period: float = 0.2) -> None:
        self.hvs = list(hvs)
        self.period = period
        self.minimum = {hv.chassis: -1 for hv in self.hvs}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for hv in self.hvs:
                try:
                    count = hv.flow_count()
                except SandboxError:
                    continue
                old = self.minimum[hv.chassis]
                self.minimum[hv.chassis] = count if old < 0 else min(old, count)
            self.samples += 1
            self._stop.wait(self.period)

    def __enter__(self) -> FlowSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


# ---------------------------------------------------------------- lflow bound

def _sb_rows(c: Central, table: str, columns: str) -> list[list[Any]]:
    out = c.sbctl("--no-leader-only", "--format=json", f"--columns={columns}", "list", table,
                  timeout=120)
    return list(json.loads(out)["data"])


def _atoms(value: Any) -> list[Any]:
    if isinstance(value, list) and value and value[0] == "set":
        return list(value[1])
    if isinstance(value, list) and value and value[0] == "uuid":
        return [value]
    return [] if value == ["set", []] else [value]


@dataclass
class SbView:
    """What the conditional monitoring bound is computed from."""

    lflow_dps: dict[str, set[str]]        # lflow uuid -> datapaths it applies to
    local_dps: dict[str, set[str]]        # chassis name -> its local datapaths

    @property
    def total(self) -> int:
        return len(self.lflow_dps)

    def bound(self, chassis: str) -> set[str]:
        dps = self.local_dps.get(chassis, set())
        return {u for u, on in self.lflow_dps.items() if on & dps}


def sb_view(c: Central) -> SbView:
    """Logical flows with their datapaths, and each chassis' local datapaths
    (datapaths of its bound ports, closed over patch ports; l3gateway ports
    are not followed, like the agent's local datapath walk)."""
    groups = {g[0][1]: {d[1] for d in _atoms(g[1])}
              for g in _sb_rows(c, "Logical_DP_Group", "_uuid,datapaths")}
    lflow_dps: dict[str, set[str]] = {}
    for uuid, dp, grp in _sb_rows(c, "Logical_Flow", "_uuid,logical_datapath,logical_dp_group"):
        on = {a[1] for a in _atoms(dp)}
        for g in _atoms(grp):
            on |= groups.get(g[1], set())
        lflow_dps[uuid[1]] = on
    chassis_names = {r[0][1]: r[1] for r in _sb_rows(c, "Chassis", "_uuid,name")}
    pbs = _sb_rows(c, "Port_Binding", "logical_port,type,datapath,chassis,options")
    by_name = {pb[0]: pb for pb in pbs}
    neighbours: dict[str, set[str]] = {}
    for name, typ, dp, _, opts in pbs:
        if typ == "patch":
            peer = dict(opts[1]).get("peer")
            if peer in by_name:
                neighbours.setdefault(dp[1], set()).add(by_name[peer][2][1])
    local: dict[str, set[str]] = {}
    for _, _, dp, ch, _ in pbs:
        for atom in _atoms(ch):
            name = chassis_names.get(atom[1])
            if name is None:
                continue
            todo, seen = [dp[1]], local.setdefault(name, set())
            while todo:
                d = todo.pop()
                if d not in seen:
                    seen.add(d)
                    todo.extend(neighbours.get(d, ()))
    return SbView(lflow_dps, local)


def lflows_in_use(hv: Hypervisor, view: SbView) -> set[str]:
    """SB logical flows behind the flows on br-int (cookie = uuid prefix)."""
    by_prefix: dict[int, list[str]] = {}
    for u in view.lflow_dps:
        by_prefix.setdefault(int(u[:8], 16), []).append(u)
    used: set[str] = set()
    for line in hv.ofctl("dump-flows", "br-int").splitlines():
        line = line.strip()
        if line.startswith("cookie="):
            cookie = int(line.split(",", 1)[0].split("=", 1)[1], 16)
            used.update(by_prefix.get(cookie, ()))
    return used
