"""A throw-away OpenFlow switch for differential tests and benchmarks.

Design note
-----------
``Vswitchd`` starts an ovsdb-server and an ``ovs-vswitchd
--enable-dummy=override`` (no kernel datapath) in a private temp dir, with
one bridge (dummy datapath, ``fail_mode=secure``, OpenFlow 1.5 only, no
in-band flows) reachable at ``target`` (``unix:<dir>/<bridge>.mgmt``).  The
daemons run with ``OVS_RUNDIR`` & co. pointing at that dir, so ``ovs-ofctl
<bridge>`` given through ``ofctl()`` talks to this switch only.  ``stop()``
ends exactly the processes it started (by pid) and removes the dir;
``kill_vswitchd()``/``start_vswitchd()`` simulate a crash and restart.

``RawOpenFlow`` is a minimal OF1.5 client over the bridge's management
socket (hello, then raw messages; echo requests answered while receiving),
built by hand so that it does not share framing code with ``ofctrl``, the
code under test.  ``flow_mod()`` packs an OFPFC_ADD flow_mod from encoded
match and instruction bytes; ``send_flow_mods()`` sends a batch followed by
a barrier and returns the OFPT_ERROR bodies by xid.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Iterable

VSWITCH_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"

OFP_VERSION = 6  # OpenFlow 1.5
OFPT_HELLO, OFPT_ERROR, OFPT_ECHO_REQUEST, OFPT_ECHO_REPLY = 0, 1, 2, 3
OFPT_FLOW_MOD = 14
OFPT_MULTIPART_REQUEST, OFPT_MULTIPART_REPLY = 18, 19
OFPT_BARRIER_REQUEST, OFPT_BARRIER_REPLY = 20, 21
OFPMP_FLOW_DESC = 1
_NO_BUFFER = 0xFFFFFFFF  # also OFPP_ANY / OFPG_ANY


class Vswitchd:
    """ovsdb-server + dummy ovs-vswitchd with one bridge (module docstring)."""

    def __init__(self, bridge: str = "br-int", prefix: str = "ofswitch-",
                 timeout: float = 120) -> None:
        self.bridge = bridge
        self.timeout = timeout
        self.run_dir = Path(tempfile.mkdtemp(prefix=prefix))
        self.mgmt = self.run_dir / f"{bridge}.mgmt"
        self.target = f"unix:{self.mgmt}"
        r = str(self.run_dir)
        self.env = dict(os.environ, OVS_RUNDIR=r, OVS_DBDIR=r, OVS_LOGDIR=r, OVS_SYSCONFDIR=r)
        self.pids: dict[str, int] = {}
        self._bridge_added = False
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        r = self.run_dir
        self.sh("ovsdb-tool", "create", f"{r}/conf.db", VSWITCH_SCHEMA)
        self.sh("ovsdb-server", "--detach", "--no-chdir", f"--pidfile={r}/ovsdb-server.pid",
                f"--unixctl={r}/ovsdb-server.ctl", "-vconsole:off",
                f"--log-file={r}/ovsdb-server.log", f"--remote=punix:{r}/db.sock",
                f"{r}/conf.db")
        self.pids["ovsdb-server"] = self._pid("ovsdb-server")
        self.sh("ovs-vsctl", "--no-wait", "init")
        self.start_vswitchd()
        self.sh("ovs-vsctl", "--timeout=30", "add-br", self.bridge, "--", "set", "bridge",
                self.bridge, "datapath_type=dummy", "fail_mode=secure",
                "protocols=OpenFlow15", "other-config:disable-in-band=true")
        self._bridge_added = True
        self._wait_for_mgmt()

    def __enter__(self) -> Vswitchd:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- commands ------------------------------------------------------
    def sh(self, *args: str) -> str:
        """Run an OVS command against this switch; its stdout."""
        return subprocess.run(args, env=self.env, capture_output=True, text=True,
                              check=True, timeout=self.timeout).stdout

    def ofctl(self, *args: str) -> str:
        """``ovs-ofctl -O OpenFlow15 <args>`` (name the bridge or ``target``)."""
        return self.sh("ovs-ofctl", "-O", "OpenFlow15", *args)

    def dump(self) -> set[str]:
        """The bridge's flows as ``dump-flows --no-stats`` prints them."""
        out = set()
        for line in self.ofctl("dump-flows", self.bridge, "--no-stats").splitlines():
            line = line.strip()
            if line and not line.startswith(("OFPST", "NXST")):
                out.add(line)
        return out

    def flow_count(self) -> int:
        """``flow_count`` of ``dump-aggregate`` (-1 if it cannot be read)."""
        m = re.search(r"flow_count=(\d+)", self.ofctl("dump-aggregate", self.bridge))
        return int(m.group(1)) if m else -1

    # -- vswitchd life cycle ------------------------------------------
    def _pid(self, name: str) -> int:
        return int((self.run_dir / f"{name}.pid").read_text().strip())

    def _wait_for_mgmt(self) -> None:
        deadline = time.monotonic() + 30
        while not self.mgmt.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.mgmt.name} never appeared")
            time.sleep(0.05)

    def start_vswitchd(self) -> None:
        """Start ovs-vswitchd (again); waits for the bridge if it exists."""
        r = self.run_dir
        self.sh("ovs-vswitchd", "--detach", "--no-chdir", f"--pidfile={r}/ovs-vswitchd.pid",
                f"--unixctl={r}/ovs-vswitchd.ctl", "-vconsole:off",
                f"--log-file={r}/ovs-vswitchd.log", "--enable-dummy=override",
                "--disable-system", "--disable-system-route", f"unix:{r}/db.sock")
        self.pids["ovs-vswitchd"] = self._pid("ovs-vswitchd")
        if self._bridge_added:
            self._wait_for_mgmt()

    def kill_vswitchd(self) -> None:
        """SIGKILL ovs-vswitchd (a crash) and wait until it is gone."""
        pid = self.pids.pop("ovs-vswitchd")
        os.kill(pid, signal.SIGKILL)
        _wait_gone(pid)
        self.mgmt.unlink(missing_ok=True)

    def stop(self) -> None:
        """Terminate the daemons this object started and remove its dir."""
        for name in ("ovs-vswitchd", "ovsdb-server"):
            pid = self.pids.pop(name, None)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            _wait_gone(pid)
        shutil.rmtree(self.run_dir, ignore_errors=True)


def _wait_gone(pid: int, seconds: float = 5.0) -> None:
    """Until `pid` has exited.  A detached daemon's parent is init, which may
    reap late: a zombie counts as gone (it would pass os.kill(pid, 0))."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except (OSError, IndexError):
            return
        time.sleep(0.02)


# ---------------------------------------------------------------------------
# Raw OpenFlow 1.5 client.

def of_msg(mtype: int, xid: int, body: bytes = b"") -> bytes:
    """An OF1.5 message: header + body."""
    return struct.pack("!BBHI", OFP_VERSION, mtype, 8 + len(body), xid) + body


def flow_mod(xid: int, cookie: int, priority: int, match: bytes,
             instructions: bytes = b"", table: int = 0) -> bytes:
    """OFPFC_ADD flow_mod of encoded ``match`` (ofp_match, padded) and
    ``instructions``; no timeouts, flags or importance."""
    body = struct.pack("!QQBBHHHIIIHH", cookie, 0, table, 0, 0, 0, priority,
                       _NO_BUFFER, _NO_BUFFER, _NO_BUFFER, 0, 0)
    return of_msg(OFPT_FLOW_MOD, xid, body + match + instructions)


class RawOpenFlow:
    """An OF1.5 connection to a management socket (hello exchanged)."""

    def __init__(self, mgmt: Path | str, timeout: float = 60) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(str(mgmt))
            bitmap = (1 << OFP_VERSION).to_bytes(4, "big")
            self.sock.sendall(of_msg(OFPT_HELLO, 1, b"\x00\x01\x00\x08" + bitmap))
            mtype, _, _ = self.recv()
            if mtype != OFPT_HELLO:
                raise ConnectionError(f"expected HELLO, got message type {mtype}")
        except BaseException:
            self.sock.close()
            raise

    def __enter__(self) -> RawOpenFlow:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("switch closed the connection")
            buf += chunk
        return bytes(buf)

    def recv(self) -> tuple[int, int, bytes]:
        """The next message other than an echo request: (type, xid, body)."""
        while True:
            hdr = self._recv_exact(8)
            length = int.from_bytes(hdr[2:4], "big")
            mtype, xid = hdr[1], int.from_bytes(hdr[4:8], "big")
            body = self._recv_exact(length - 8)
            if mtype == OFPT_ECHO_REQUEST:
                self.send(of_msg(OFPT_ECHO_REPLY, xid, body))
                continue
            return mtype, xid, body


def send_flow_mods(mgmt: Path | str, messages: Iterable[bytes],
                   barrier_xid: int = 99) -> dict[int, bytes]:
    """Send ``messages`` and a barrier on a fresh connection; the OFPT_ERROR
    bodies received before the barrier reply, by xid."""
    errors: dict[int, bytes] = {}
    with RawOpenFlow(mgmt) as conn:
        conn.send(b"".join(messages) + of_msg(OFPT_BARRIER_REQUEST, barrier_xid))
        while True:
            mtype, xid, body = conn.recv()
            if mtype == OFPT_ERROR:
                errors[xid] = body
            elif mtype == OFPT_BARRIER_REPLY and xid == barrier_xid:
                return errors
