"""A 3-server clustered (RAFT) OVN_Southbound for one sandbox.

Design note
-----------
:func:`raft_sb` turns a started :class:`~integration.sandbox.Sandbox` made
with ``northd=False`` into one whose SB is a cluster: the standalone SB
server is stopped, ``ovsdb-tool create-cluster`` makes server 1's file and
``join-cluster`` the others' (RAFT traffic on ``tcp:127.0.0.1:<free port>``),
each server gets its own client socket ``$RUN/sbN.sock`` and unixctl
``$RUN/sbN.ctl``.  The sandbox's tools are re-pointed at the cluster
(``OVN_SB_DB`` is the comma-separated list of the three sockets), so is the
chassis' ``external_ids:ovn-remote``, and ovn-northd is started on the
cluster (it transacts with the leader only, as by default).

The servers are recorded in ``box.daemons`` as roles ``sb1``..``sb3``, so
``Sandbox.stop()`` stops them with the rest (only the pids it started).
:class:`RaftSB` kills and restarts single servers and answers who leads and
which server a given process is connected to (from ``ss -xp``: the peer inode
of the process' unix stream sockets against each server's listening path).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from integration.sandbox import SB_SCHEMA, Sandbox, SandboxError, find_binary, poll_until

SB_DB = "OVN_Southbound"


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class RaftSB:
    """The cluster's servers (1-based indexes) inside one sandbox."""

    box: Sandbox
    n: int = 3
    raft_ports: list[int] = field(default_factory=list)

    def role(self, i: int) -> str:
        return f"sb{i}"

    def sock(self, i: int) -> Path:
        return self.box.run / f"sb{i}.sock"

    def ctl(self, i: int) -> Path:
        return self.box.run / f"sb{i}.ctl"

    def db(self, i: int) -> Path:
        return self.box.run / f"sb{i}.db"

    def raft_addr(self, i: int) -> str:
        return f"tcp:127.0.0.1:{self.raft_ports[i - 1]}"

    @property
    def remote(self) -> str:
        """What clients connect to: every server's socket."""
        return ",".join(f"unix:{self.sock(i)}" for i in range(1, self.n + 1))

    # ------------------------------------------------------------------ life

    def create(self) -> None:
        tool = find_binary("ovsdb-tool")
        self.raft_ports = [free_tcp_port() for _ in range(self.n)]
        self.box.cmd([tool, "create-cluster", str(self.db(1)), SB_SCHEMA, self.raft_addr(1)])
        for i in range(2, self.n + 1):
            self.box.cmd([tool, "join-cluster", str(self.db(i)), SB_DB, self.raft_addr(i),
                          self.raft_addr(1)])
        for i in range(1, self.n + 1):
            self.start(i)
        self.wait_healthy()

    def start(self, i: int) -> None:
        """Start server i (again) on its file."""
        self.box._ovs_daemon(self.role(i), "ovsdb-server",
                             [f"--remote=punix:{self.sock(i)}", str(self.db(i))],
                             base=f"sb{i}", unixctl=True)

    def alive(self, i: int) -> bool:
        d = self.box.daemons.get(self.role(i))
        return d is not None and d.alive()

    def kill9(self, i: int) -> None:
        """SIGKILL server i (the pid this sandbox started)."""
        daemon = self.box.daemons.pop(self.role(i))
        if daemon.alive():
            os.kill(daemon.pid, signal.SIGKILL)
        if not poll_until(lambda: not daemon.alive(), timeout=10, period=0.02):
            raise SandboxError(f"sb{i} did not die")
        for path in (daemon.ctl, daemon.pidfile, self.sock(i)):
            try:
                path.unlink()
            except OSError:
                pass

    # ------------------------------------------------------------------ status

    def status(self, i: int) -> str:
        return self.box.cmd(["ovs-appctl", "--timeout=5", "-t", str(self.ctl(i)),
                             "cluster/status", SB_DB], timeout=10)

    def leader(self) -> int | None:
        """Index of the server that says it leads, if any."""
        for i in range(1, self.n + 1):
            if not self.alive(i):
                continue
            try:
                if re.search(r"^Role: leader$", self.status(i), re.M):
                    return i
            except SandboxError:
                continue
        return None

    def wait_healthy(self, timeout: float = 60.0) -> int:
        """Every live server a cluster member and one of them the leader."""
        def ok() -> bool:
            for i in range(1, self.n + 1):
                if not self.alive(i):
                    continue
                try:
                    if "Status: cluster member" not in self.status(i):
                        return False
                except SandboxError:
                    return False
            return self.leader() is not None
        if not poll_until(ok, timeout=timeout, period=0.1):
            raise SandboxError("RAFT SB cluster not healthy:\n" + "\n".join(
                self.status(i) for i in range(1, self.n + 1) if self.alive(i)))
        leader = self.leader()
        assert leader is not None
        return leader

    def connected_server(self, pid: int) -> int | None:
        """The server process `pid` has a unix connection to (first found)."""
        out = subprocess.run(["ss", "-xpn"], capture_output=True, text=True,
                             timeout=10).stdout
        # ss -x columns: Netid State Recv-Q Send-Q Local Address:Port Peer Address:Port
        ours: set[str] = set()
        listening: dict[str, int] = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) < 8:
                continue
            local, local_ino, peer_ino = parts[4], parts[5], parts[7]
            if f"pid={pid}," in line:
                ours.add(peer_ino)
            for i in range(1, self.n + 1):
                if local == str(self.sock(i)):
                    listening[local_ino] = i
        for ino in ours:
            if ino in listening:
                return listening[ino]
        return None


def raft_sb(box: Sandbox, n: int = 3) -> RaftSB:
    """Replace the sandbox's standalone SB by an n-server cluster (see the
    design note); the box must have been started with northd=False."""
    if "northd" in box.daemons:
        raise SandboxError("raft_sb: make the sandbox with northd=False")
    box.stop_daemon("sb")
    cluster = RaftSB(box, n)
    cluster.create()
    box.env["OVN_SB_DB"] = cluster.remote
    box.cmd(["ovn-sbctl", "--timeout=30", "init"], timeout=35)
    box.vsctl("set", "Open_vSwitch", ".", f"external_ids:ovn-remote={cluster.remote}")
    box._ovs_daemon("northd", "ovn-northd", [f"--ovnnb-db={box.nb_sock}",
                                             f"--ovnsb-db={cluster.remote}"],
                    base="ovn-northd")
    box.northd_enabled = True
    return cluster

