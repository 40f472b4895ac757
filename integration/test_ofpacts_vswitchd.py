"""Differential test of ofctrl.ofpacts against a real ovs-vswitchd (OVS 3.1).

A throw-away ovsdb-server + ovs-vswitchd (dummy datapath, private temp dir)
receives OF1.5 flow_mods whose instructions are our ``encode_instructions()``
bytes: every flow of the rich reference dump, a sample of the seed-500 dump
(with their original matches, parsed by ``ofctrl.match``) and the
hand-written cases of ``tests/ofctrl/test_ofpacts_ofprint.py``. No flow_mod
may be rejected, and ``ovs-ofctl -O OpenFlow15 dump-flows`` must print
exactly ``format_actions()`` for every flow (matched back by cookie).
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
from collections.abc import Iterator
from pathlib import Path

import pytest

from ofctrl.match import Match
from ofctrl.ofpacts import Action, encode_instructions, format_actions, parse_actions
from tests.ofctrl.test_ofpacts_corpus import REF, port_numbers
from tests.ofctrl.test_ofpacts_ofprint import FLOWS

pytestmark = pytest.mark.integration

OFP_VERSION = 6
OFPT_HELLO, OFPT_ERROR, OFPT_ECHO_REQUEST, OFPT_ECHO_REPLY = 0, 1, 2, 3
OFPT_FLOW_MOD, OFPT_BARRIER_REQUEST, OFPT_BARRIER_REPLY = 14, 20, 21


def _reference_flows(topology: str, filename: str, step: int) -> list[tuple[Match, list[Action]]]:
    import gzip
    ports = port_numbers(topology)
    path = REF / topology / filename
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    with opener(path, "rt") as fh:  # type: ignore[operator]
        for i, line in enumerate(x for x in fh if " actions=" in x):
            if i % step:
                continue
            head, acts = line.strip().split(" actions=", 1)
            match = re.sub(r"^priority=\d+,?", "", head.split(", ")[-1])
            out.append((Match.parse(match, ports), parse_actions(acts, ports)))
    return out


def _cases() -> list[tuple[Match, list[Action]]]:
    cases = _reference_flows("rich", "flows.raw.txt", 1)
    cases += _reference_flows("seed-500", "flows.raw.txt.gz", 400)
    cases += [(Match.parse(m), parse_actions(t)) for m, t in FLOWS]
    return cases


class _Daemons:
    def __init__(self, run: Path) -> None:
        self.run = run
        self.pids: list[int] = []
        self.env = dict(os.environ, OVS_RUNDIR=str(run), OVS_LOGDIR=str(run),
                        OVS_DBDIR=str(run), OVS_SYSCONFDIR=str(run))

    def sh(self, *args: str) -> str:
        return subprocess.run(args, env=self.env, capture_output=True, text=True,
                              check=True, timeout=120).stdout

    def start(self) -> None:
        r = self.run
        self.sh("ovsdb-tool", "create", f"{r}/conf.db",
                "/usr/share/openvswitch/vswitch.ovsschema")
        self.sh("ovsdb-server", "--detach", "--no-chdir", f"--pidfile={r}/ovsdb-server.pid",
                f"--unixctl={r}/ovsdb-server.ctl", "-vconsole:off",
                f"--log-file={r}/ovsdb-server.log", f"--remote=punix:{r}/db.sock",
                f"{r}/conf.db")
        self.pids.append(int((r / "ovsdb-server.pid").read_text()))
        db = f"--db=unix:{r}/db.sock"
        self.sh("ovs-vsctl", db, "--no-wait", "init")
        self.sh("ovs-vswitchd", "--detach", "--no-chdir", f"--pidfile={r}/ovs-vswitchd.pid",
                f"--unixctl={r}/ovs-vswitchd.ctl", "-vconsole:off",
                f"--log-file={r}/ovs-vswitchd.log", "--enable-dummy=override",
                "--disable-system", "--disable-system-route", f"unix:{r}/db.sock")
        self.pids.append(int((r / "ovs-vswitchd.pid").read_text()))
        self.sh("ovs-vsctl", db, "--timeout=30", "add-br", "br0", "--", "set", "bridge",
                "br0", "datapath_type=dummy", "fail_mode=secure",
                "protocols=OpenFlow15", "other-config:disable-in-band=true")
        mgmt = r / "br0.mgmt"
        deadline = time.monotonic() + 30
        while not mgmt.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("br0.mgmt never appeared")
            time.sleep(0.05)

    def ofctl(self, command: str, *args: str) -> str:
        return self.sh("ovs-ofctl", "-O", "OpenFlow15", "--no-stats", command,
                       f"unix:{self.run}/br0.mgmt", *args)

    def stop(self) -> None:
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in self.pids:
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)


@pytest.fixture(scope="module")
def vswitchd() -> Iterator[_Daemons]:
    if shutil.which("ovs-vswitchd") is None:
        pytest.fail("ovs-vswitchd is required for integration tests")
    run = Path(tempfile.mkdtemp(prefix="ofpacts-vswitchd-"))
    daemons = _Daemons(run)
    try:
        daemons.start()
        yield daemons
    finally:
        daemons.stop()
        shutil.rmtree(run, ignore_errors=True)


def _msg(mtype: int, xid: int, body: bytes = b"") -> bytes:
    return struct.pack("!BBHI", OFP_VERSION, mtype, 8 + len(body), xid) + body


def _flow_mod(xid: int, cookie: int, priority: int, match: Match, acts: list[Action]) -> bytes:
    body = struct.pack("!QQBBHHHIIIHH", cookie, 0, 0, 0, 0, 0, priority,
                       0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0)
    return _msg(OFPT_FLOW_MOD, xid, body + match.encode() + encode_instructions(acts))


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("switch closed the connection")
        buf += chunk
    return bytes(buf)


def _recv(sock: socket.socket) -> tuple[int, int, bytes]:
    hdr = _recv_exact(sock, 8)
    length = int.from_bytes(hdr[2:4], "big")
    return hdr[1], int.from_bytes(hdr[4:8], "big"), _recv_exact(sock, length - 8)


def _install(mgmt: Path, cases: list[tuple[Match, list[Action]]]) -> dict[int, bytes]:
    """Send every case as a flow_mod (cookie/priority = index + 1); errors by xid."""
    errors: dict[int, bytes] = {}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(mgmt))
        bitmap = (1 << OFP_VERSION).to_bytes(4, "big")
        sock.sendall(_msg(OFPT_HELLO, 1, b"\x00\x01\x00\x08" + bitmap))
        mtype, _, _ = _recv(sock)
        assert mtype == OFPT_HELLO
        batch = b"".join(_flow_mod(1000 + i, i + 1, i + 1, m, a)
                         for i, (m, a) in enumerate(cases))
        sock.sendall(batch + _msg(OFPT_BARRIER_REQUEST, 99))
        while True:
            mtype, xid, body = _recv(sock)
            if mtype == OFPT_ERROR:
                errors[xid] = body
            elif mtype == OFPT_ECHO_REQUEST:
                sock.sendall(_msg(OFPT_ECHO_REPLY, xid, body))
            elif mtype == OFPT_BARRIER_REPLY and xid == 99:
                return errors


def test_vswitchd_prints_our_actions(vswitchd: _Daemons) -> None:
    cases = _cases()
    assert len(cases) > 1500
    # Objects the flows refer to must exist: groups, meters, the Geneve TLV.
    text = "\n".join(format_actions(a) for _, a in cases)
    vswitchd.ofctl("add-tlv-map", "{class=0x102,type=0x80,len=4}->tun_metadata0")
    for gid in sorted({int(g) for g in re.findall(r"group:(\d+)", text)}):
        vswitchd.ofctl("add-group", f"group_id={gid},type=all")
    meters = {int(m) for m in re.findall(r"meter(?::|_id=)(\d+)", text)}
    for mid in sorted(meters):
        vswitchd.ofctl("add-meter", f"meter={mid},pktps,band=type=drop,rate=100")

    errors = _install(vswitchd.run / "br0.mgmt", cases)
    rejected = {format_actions(cases[xid - 1000][1])[:120]: body[:4].hex()
                for xid, body in errors.items()}
    assert not rejected, list(rejected.items())[:5]

    dump = vswitchd.ofctl("dump-flows")
    printed: dict[int, str] = {}
    for line in dump.splitlines():
        m = re.match(r"\s*cookie=(0x[0-9a-f]+),.* actions=(.*)$", line)
        if m:
            printed[int(m.group(1), 16)] = m.group(2)
    mismatches = []
    for i, (_, acts) in enumerate(cases):
        ours = format_actions(acts)
        theirs = printed.get(i + 1)
        if theirs != ours:
            mismatches.append((ours[:150], (theirs or "<missing>")[:150]))
    assert not mismatches, (len(mismatches), mismatches[:5])
    assert len(printed) == len(cases)
