"""Scale-out harness: N simulated hypervisors on a clustered, relayed Southbound.

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

:func:`run_phase` measures one agent kind on the running cluster: start of
all N agents to ``ovn-nbctl --wait=hv sync``, per-agent peak RSS (VmHWM) and
CPU, SB server / relay CPU, ``--wait=hv`` latency of an ACL add and of one
VIF add+bind (both undone afterwards so the next phase sees the same NB),
logical flows in use per agent against the SB total and against the flows of
the chassis' local datapaths (the conditional monitoring bound), canonical
dumps of sampled chassis, then the faults (SB leader kill, relay kill, all
agents killed and restarted at once) with the time until ``--wait=hv`` works
again and the minimum flow count of the sampled chassis meanwhile.

Between agent kinds :meth:`ScaleCluster.reset_chassis` removes what the
stopped agents left (Chassis/Encap/Chassis_Private rows, tunnel ports,
ct-zone keys, ovn-installed marks, flows), so each kind starts from the
same state (before, the C agents found ours' chassis and claims already in
place).  Each phase also records ``inc-engine/show-stats`` summed over the
agents (printed per node) and, with ``--count-rpc``, the requests the
relays received until convergence, by method.

Everything is measured, nothing is asserted here; integration/test_scale.py
asserts on a small N.  Tables and plots: :mod:`integration.scale_report`.  ``python -m integration.scale --help``.
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from integration.differential import dump_agent
from integration.sandbox import (SB_SCHEMA, VSWITCH_SCHEMA, NB_SCHEMA, Daemon, Sandbox,
                                 SandboxError, find_binary, poll_until)
from integration.scale_report import compare_dumps, plot, table

CLK_TCK = os.sysconf("SC_CLK_TCK")
RESULTS_DIR = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
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


# ---------------------------------------------------------------- one phase

def _median(values: Iterable[float]) -> float:
    vals = list(values)
    return round(statistics.median(vals), 2) if vals else 0.0


def _timed(fn: Callable[[], object]) -> float:
    start = time.monotonic()
    fn()
    return round(time.monotonic() - start, 3)


def _northd_sb_connected_s(c: Central, since_wall: float) -> float | None:
    """Seconds from `since_wall` to northd's last SB connection after it
    (from its log: the one that found the leader), None if none."""
    d = c.daemons.get("northd")
    if d is None:
        return None
    try:
        lines = d.log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    last = None
    for line in lines:
        if not line.endswith(": connected") or "/sb" not in line:
            continue
        try:
            stamp = calendar.timegm(time.strptime(line[:19], "%Y-%m-%dT%H:%M:%S")) \
                + float("0" + line[19:23])
        except ValueError:
            continue
        if stamp >= since_wall:
            last = round(stamp - since_wall, 3)
    return last


def measure_fault(cl: ScaleCluster, name: str, fault: Callable[[], None],
                  repair: Callable[[], None], settled: dict[str, int],
                  log: Callable[[str], None]) -> dict[str, Any]:
    """Run a fault with the flow sampler on; time until --wait=hv works again."""
    with FlowSampler(cl.sampled()) as sampler:
        time.sleep(0.5)
        start, wall = time.monotonic(), time.time()
        fault()
        cl.c.wait_hv(timeout=cl.patience)
        recovered = round(time.monotonic() - start, 3)
        time.sleep(1.0)
    repair()
    ratio = min((sampler.minimum[ch] / settled[ch]) if settled[ch] else 1.0
                for ch in sampler.minimum)
    northd = _northd_sb_connected_s(cl.c, wall)
    log(f"  fault {name}: --wait=hv works again after {recovered:.2f} s, "
        f"min flows {100 * ratio:.1f}% of settled"
        + (f" (northd back on the SB after {northd:.2f} s)" if northd is not None else ""))
    return {"recovered_s": recovered, "min_flow_ratio": round(ratio, 4),
            "min_flows": sampler.minimum, "settled_flows": settled,
            "samples": sampler.samples, "northd_sb_reconnect_s": northd}


def _agent_counters(hv: Hypervisor) -> dict[str, int]:
    """Full recomputes and failed SB commits seen in the agent's log."""
    d = hv.daemons.get("controller")
    if d is None:
        return {}
    try:
        text = d.log.read_text(errors="replace")
    except OSError:
        return {}
    return {"force_recompute": text.count("force recompute"),
            "sb_commit_failed": text.count("OVNSB commit failed")}


def _engine_stats(hv: Hypervisor) -> dict[str, list[int]]:
    """``inc-engine/show-stats`` of the agent: node -> [recompute, compute, abort]."""
    try:
        out = hv.appctl("controller", "inc-engine/show-stats", timeout=30)
    except SandboxError:
        return {}
    stats: dict[str, list[int]] = {}
    node: list[int] | None = None
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Node:"):
            node = stats.setdefault(line.split(":", 1)[1].strip(), [0, 0, 0])
        elif node is not None and line.startswith("- "):
            key, _, value = line[2:].partition(":")
            idx = {"recompute": 0, "compute": 1, "abort": 2}.get(key.strip())
            if idx is not None and value.strip().isdigit():
                node[idx] = int(value)
    return stats


def fleet_engine_stats(hvs: Iterable[Hypervisor]) -> dict[str, list[int]]:
    """Per engine node, [recompute, compute, abort] summed over the agents."""
    total: dict[str, list[int]] = {}
    for hv in hvs:
        for name, vals in _engine_stats(hv).items():
            acc = total.setdefault(name, [0, 0, 0])
            for i, v in enumerate(vals):
                acc[i] += v
    return total


def run_phase(cl: ScaleCluster, kind: str, faults: bool = True,
              log: Callable[[str], None] = print) -> dict[str, Any]:
    """Start `kind` agents on every hypervisor and measure; leaves them running."""
    c = cl.c
    res: dict[str, Any] = {"agent": kind, "n": cl.n,
                           "loadavg_1min": round(os.getloadavg()[0], 1)}
    marks = c.rpc_log_on() if cl.count_rpc else None
    cpu0 = c.server_cpu()
    t0 = time.monotonic()
    cl.start_agents(kind)
    res["started_s"] = round(time.monotonic() - t0, 3)
    cl.wait_converged()
    res["converge_s"] = round(time.monotonic() - t0, 3)
    cpu1 = c.server_cpu()
    res["server_cpu_s"] = {r: round(cpu1[r] - cpu0.get(r, 0.0), 2) for r in cpu1}
    pids = [hv.agent_pid for hv in cl.hvs]
    rss = [proc_hwm_mib(p) for p in pids if p]
    cpu = [proc_cpu_s(p) for p in pids if p]
    res["agent_rss_mib"] = {"median": _median(rss), "max": round(max(rss), 1)}
    res["agent_cpu_s"] = {"median": _median(cpu), "max": round(max(cpu), 2),
                          "total": round(sum(cpu), 1)}
    res["engine_stats_converged"] = fleet_engine_stats(cl.hvs)
    if marks is not None:
        res["relay_requests_to_converge"] = c.rpc_counts(marks)
        log(f"  requests the relays received until converged: "
            f"{res['relay_requests_to_converge']}")
    log(f"[{kind} N={cl.n}] converged in {res['converge_s']:.2f} s "
        f"(agents started in {res['started_s']:.2f} s); RSS median "
        f"{res['agent_rss_mib']['median']} MiB")

    view = sb_view(c)
    per: dict[str, Any] = {}
    for hv in cl.sampled():
        used = lflows_in_use(hv, view)
        bound = view.bound(hv.chassis)
        per[hv.chassis] = {"in_use": len(used), "local_dp_lflows": len(bound),
                           "outside_bound": len(used - bound)}
    res["lflows"] = {"sb_total": view.total, "per_chassis": per}
    res["dumps"] = {hv.chassis: dump_agent(hv, kind, 0.0) for hv in cl.sampled()}
    settled = {hv.chassis: hv.flow_count() for hv in cl.sampled()}

    res["acl_add_s"] = _timed(lambda: c.nbctl(
        "--wait=hv", "--type=port-group", "acl-add", "pg_all", "to-lport", "900",
        "outport == @pg_all && udp.dst == 5353", "drop", timeout=300))
    c.nbctl("--wait=hv", "--type=port-group", "acl-del", "pg_all", "to-lport", "900",
            "outport == @pg_all && udp.dst == 5353", timeout=300)
    hv1 = cl.hvs[0]
    a, b = _net(1)

    def bind() -> None:
        c.nbctl("lsp-add", "ls-hv1", "hv1-new", "--", "lsp-set-addresses", "hv1-new",
                f"0a:05:00:00:01:01 10.{a}.{b}.200", "--", "pg-set-ports", "pg_all",
                *[lsp for i in range(1, cl.n + 1) for _, lsp in vif_names(i, cl.vifs)],
                "hv1-new")
        hv1.bind_vif("vifnew", "hv1-new")
        if not poll_until(lambda: "ovn-installed" in hv1.vsctl(
                "get", "Interface", "vifnew", "external_ids"), timeout=300, period=0.05):
            raise SandboxError("hv1-new never ovn-installed")
        c.wait_hv(timeout=300)
    res["vif_bind_s"] = _timed(bind)
    hv1.unbind_vif("vifnew")
    c.nbctl("--wait=hv", "lsp-del", "hv1-new", timeout=300)
    log(f"  --wait=hv: ACL add {res['acl_add_s']:.2f} s, VIF add+bind "
        f"{res['vif_bind_s']:.2f} s")
    res["engine_stats_settled"] = fleet_engine_stats(cl.hvs)
    res["agent_cpu_settled_s"] = round(sum(proc_cpu_s(p) for p in pids if p), 1)

    if faults:
        res["faults"] = run_faults(cl, kind, settled, log)
    res["agent_log_counts"] = _sum_counts(_agent_counters(hv) for hv in cl.hvs)
    return res


def _sum_counts(items: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for item in items:
        for k, v in item.items():
            total[k] = total.get(k, 0) + v
    return total


def run_faults(cl: ScaleCluster, kind: str, settled: dict[str, int],
               log: Callable[[str], None]) -> dict[str, Any]:
    c = cl.c
    out: dict[str, Any] = {}
    before = _sum_counts(_agent_counters(hv) for hv in cl.hvs)
    leader = c.sb_leader()
    if leader is not None:
        out["sb_leader_kill"] = measure_fault(
            cl, "SB leader kill", lambda: kill_daemon(c, f"sb{leader}"),
            lambda: _restart_sb(c, leader), settled, log)
    if cl.relays >= 2:
        out["relay_sessions_before"] = c.sessions("relay1")
        out["relay_kill"] = measure_fault(
            cl, "relay kill", lambda: kill_daemon(c, "relay1"),
            lambda: (c.start_relay(1), None)[1], settled, log)
    after = _sum_counts(_agent_counters(hv) for hv in cl.hvs)
    out["relay_and_leader_log_counts"] = {k: after.get(k, 0) - before.get(k, 0) for k in after}

    def mass_restart() -> None:
        cl.kill_agents()
        cl.start_agents(kind)
    out["restart_all_agents"] = measure_fault(cl, "restart all agents", mass_restart,
                                              lambda: None, settled, log)
    return out


def _restart_sb(c: Central, k: int) -> None:
    c.start_sb(k)
    c.cmd(["ovsdb-client", "--timeout=60", "wait", f"unix:{c.run}/sb{k}.sock",
           "OVN_Southbound", "connected"], timeout=70)


def run(n: int, agents: Sequence[str], vifs: int = 3, relays: int = 2, faults: bool = True,
        keep: bool = False, log: Callable[[str], None] = print,
        agent_args: dict[str, list[str]] | None = None,
        profile: bool = False, count_rpc: bool = False) -> dict[str, Any]:
    """Build one cluster of n chassis and run each agent kind on it in turn
    (the chassis are reset in between: each kind starts from the same state)."""
    results: list[dict[str, Any]] = []
    with ScaleCluster(n, vifs=vifs, relays=relays, keep=keep,
                      agent_args=dict(agent_args or {}), profile=profile,
                      count_rpc=count_rpc) as cl:
        log(f"cluster of {n} chassis up in {cl.root}")
        for kind in agents:
            res = run_phase(cl, kind, faults=faults, log=log)
            results.append(res)
            cl.stop_agents()
            cl.reset_chassis()
    out: dict[str, Any] = {"n": n, "results": results}
    dumps = {r["agent"]: r.pop("dumps") for r in results}
    if "py" in dumps and "c" in dumps:
        out["flow_equality"] = compare_dumps(dumps["py"], dumps["c"])
    return out


def engine_table(results: Sequence[dict[str, Any]],
                 key: str = "engine_stats_settled") -> str:
    """Markdown: recomputes / computes per engine node summed over the
    agents of each run, the nodes that recomputed or computed anywhere."""
    stats = [r.get(key) or {} for r in results]
    names: list[str] = []
    for st in stats:
        names += [n for n, v in st.items() if n not in names and (v[0] or v[1])]
    heads = [f"{r['agent']} N={r['n']}" for r in results]
    lines = [f"engine nodes, recompute / compute summed over agents ({key}):",
             "| node | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    for name in names:
        cells = ["{} / {}".format(*st[name][:2]) if name in st else "-" for st in stats]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m integration.scale", description=__doc__.split(
        "\n\n")[0])
    p.add_argument("-n", "--chassis", default=os.environ.get("SCALE_N", "5"),
                   help="number(s) of chassis, e.g. '10' or '10 30' (env SCALE_N)")
    p.add_argument("--agent", default=os.environ.get("SCALE_AGENT", "both"),
                   choices=("ours", "py", "c", "both"))
    p.add_argument("--vifs", type=int, default=3, help="bound VIFs per chassis")
    p.add_argument("--relays", type=int, default=2, choices=(0, 1, 2))
    p.add_argument("--no-faults", action="store_true")
    p.add_argument("--out", default=os.environ.get("SCALE_OUT", str(RESULTS_DIR)),
                   help="directory for scale.json (and scale.png)")
    p.add_argument("--keep", action="store_true", help="keep the run directory")
    p.add_argument("--py-args", default="", help="extra arguments of our agents "
                   "(e.g. '-vinc_proc_eng:file:dbg'), split on blanks")
    p.add_argument("--c-args", default="", help="extra arguments of the C agents")
    p.add_argument("--profile", action="store_true", help="cProfile our agents into "
                   "<hv dir>/agent.prof (up to the first install) and agent.prof.steady, "
                   "with a per-iteration timeline in agent.timeline (with --keep)")
    p.add_argument("--count-rpc", action="store_true", help="count the JSON-RPC requests "
                   "the relays receive until convergence, by method (relay jsonrpc debug log)")
    p.add_argument("--merge", nargs="+", metavar="JSON",
                   help="run nothing: one table and plot from earlier scale.json files")
    args = p.parse_args(argv)
    agents = {"ours": ["py"], "py": ["py"], "c": ["c"], "both": ["py", "c"]}[args.agent]
    ns = [int(x) for x in args.chassis.replace(",", " ").split()]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    if args.merge:
        for path in args.merge:
            runs.extend(json.loads(Path(path).read_text())["runs"])
        ns = []
    for n in ns:
        runs.append(run(n, agents, vifs=args.vifs, relays=args.relays,
                        faults=not args.no_faults, keep=args.keep,
                        agent_args={"py": args.py_args.split(), "c": args.c_args.split()},
                        profile=args.profile, count_rpc=args.count_rpc))
    results = [r for one in runs for r in one["results"]]
    if ns:
        print(f"\n{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end\n")
    print(table(results))
    for one in runs:
        for ch, d in one.get("flow_equality", {}).items():
            print(f"N={one['n']} {ch}: {d['flows']} canonical flows ours, {d['c_flows']} C; "
                  f"only ours {d['only_ours']}, only C {d['only_c']}, "
                  f"groups differing {d['groups_differ']}")
    print(engine_table(results))
    (out_dir / "scale.json").write_text(json.dumps(
        {"cpus": os.cpu_count(), "runs": runs}, indent=1, default=str))
    if plot(results, out_dir / "scale.png"):
        print(f"plot: {out_dir / 'scale.png'}")
    print(f"json: {out_dir / 'scale.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
