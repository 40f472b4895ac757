"""Packet-level differential harness for pinctrl: the C agent vs ours.

Design note
-----------
Topology (:func:`build_pinctrl_topology`, NB through ovn-nbctl, one chassis
hv1)::

    ls1 10.1.0.0/24 fd01::/64          ls2 10.2.0.0/24 fd02::/64      ls-pub 172.16.0.0/24 fd10::/64
      ls1-p1  vif1 (.11, ::11)           ls2-p4 vif4  "unknown" (FDB)   ln-pub localnet physnet1 -> br-phys
      ls1-p2  vif2 (.12, ::12)           lb-empty 10.2.0.200:80,        ls-pub-p5 vif5 (.55), ls-pub-p6 vif6 (MAC only)
      ls1-vip virtual .50 (p1, p2)           [fd02::200]:80, no backends
      reject ACL tcp/udp/sctp 7777 -> p2
      logged+metered drop udp 5555 -> p2
           \\                              |                              /
          lr1-ls1 ------------- lr1 (distributed router) ------------ lr1-pub (gateway port on hv1,
                                                                        gateway_mtu 1400, SNAT/DNAT)

The topology is built once with northd and saved (:func:`build_pinctrl_snapshot`);
each agent then runs in its own sandbox restored from that snapshot with
northd off (:class:`AgentBox`), so both see byte-identical SB contents: same
tunnel keys, hence the same bytes in every generated frame.

A case injects raw frames (hex, built here: :mod:`integration.pinctrl_frames`)
with ``ovs-appctl netdev-dummy/receive IFACE HEX`` through a persistent
unixctl connection to ovs-vswitchd, reads what every capturing port sent from
its ``tx_pcap`` (the pcap reader of :mod:`integration.packets`), and
snapshots the SB rows the agent writes (:func:`learnt_state`). Frames are
compared byte for byte and shown field by field on a difference
(:func:`dissect`); only the values a correct agent may choose freely are
normalised (SB row UUIDs, MAC_Binding timestamps, Controller_Event seq_num,
log line prefixes). IP ids are *not* free for pinctrl's own frames: 23.03.1
writes 0 (pinctrl-anatomy §3, §6), so they are compared too.
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import ovs.unixctl.client

from integration.differential import Snapshot, build_snapshot
from integration.packets import read_pcap
from integration.pinctrl_frames import dissect, field_diff
from integration.sandbox import Sandbox, SandboxError

LOCAL_CHASSIS = "hv1"

# ---------------------------------------------------------------- addresses

P1_MAC, P1_IP, P1_IP6 = "0a:00:00:01:00:11", "10.1.0.11", "fd01::11"
P2_MAC, P2_IP, P2_IP6 = "0a:00:00:01:00:12", "10.1.0.12", "fd01::12"
VIP_MAC, VIP_IP = "0a:00:00:01:00:50", "10.1.0.50"
P4_NAME = "ls2-p4"
P5_MAC, P5_IP = "0a:00:00:00:10:55", "172.16.0.55"     # ls-pub (localnet) VIF
P6_MAC = "0a:00:00:00:10:66"                         # ls-pub VIF without an IP
P7_MAC, P7_IP = "0a:00:00:01:00:17", "10.1.0.17"     # multichassis, activation-strategy=rarp
REMOTE_CHASSIS = "hv2"                               # in the SB only
LR_LS1_MAC, LR_LS1_IP, LR_LS1_IP6 = "0a:00:00:00:01:01", "10.1.0.1", "fd01::1"
LR_LS2_MAC, LR_LS2_IP, LR_LS2_IP6 = "0a:00:00:00:02:01", "10.2.0.1", "fd02::1"
LR_PUB_MAC, LR_PUB_IP, LR_PUB_IP6 = "0a:00:00:00:10:01", "172.16.0.1", "fd10::1"
LR2_MAC, LR2_IP, LR2_IP6 = "0a:00:00:00:03:01", "10.1.0.3", "fd01::3"    # lr2, no gateway
GW_IP, GW_IP6 = "172.16.0.254", "fd10::fe"
SNAT_IP, FIP_IP, SNAT_IP6 = "172.16.0.100", "172.16.0.110", "fd10::100"
GATEWAY_MTU = 1400
EMPTY_LB_VIP, EMPTY_LB_VIP6, EMPTY_LB_PORT = "10.2.0.200", "fd02::200", 80
REJECT_PORT, LOG_PORT = 7777, 5555
ACL_METER_PKTPS = 10      # the logged ACL's meter: a burst gets this many log lines

# (OVS interface, logical port, ofport) bound on hv1, all capturing tx.
VIFS = (("vif1", "ls1-p1", 1), ("vif2", "ls1-p2", 2), ("vif4", P4_NAME, 4),
        ("vif5", "ls-pub-p5", 5), ("vif6", "ls-pub-p6", 6), ("vif7", "ls1-p7", 7))
CAPTURE_PORTS = ("vif1", "vif2", "vif4", "vif7", "br-phys")

_NB: list[str] = [
    "--", "set", "NB_Global", ".", "options:controller_event=true",
    "--", "ls-add", "ls1", "--", "ls-add", "ls2", "--", "ls-add", "ls-pub",
    "--", "lr-add", "lr1",
    "--", "lrp-add", "lr1", "lr1-ls1", LR_LS1_MAC, "10.1.0.1/24", "fd01::1/64",
    "--", "lrp-add", "lr1", "lr1-ls2", LR_LS2_MAC, "10.2.0.1/24", "fd02::1/64",
    "--", "lrp-add", "lr1", "lr1-pub", LR_PUB_MAC, "172.16.0.1/24", "fd10::1/64",
    "--", "lrp-set-gateway-chassis", "lr1-pub", LOCAL_CHASSIS, "20",
    "--", "set", "Logical_Router_Port", "lr1-pub", f"options:gateway_mtu={GATEWAY_MTU}",
    "--", "lr-route-add", "lr1", "0.0.0.0/0", GW_IP,
    "--", "lr-route-add", "lr1", "::/0", GW_IP6,
    "--", "lr-nat-add", "lr1", "snat", SNAT_IP, "10.1.0.0/24",
    "--", "lr-nat-add", "lr1", "dnat_and_snat", FIP_IP, P2_IP,
    "--", "lr-nat-add", "lr1", "snat", SNAT_IP6, "fd01::/64",
    "--", "lsp-add", "ls1", "ls1-lr1", "--", "lsp-set-type", "ls1-lr1", "router",
    "--", "lsp-set-addresses", "ls1-lr1", "router",
    "--", "lsp-set-options", "ls1-lr1", "router-port=lr1-ls1",
    "--", "lsp-add", "ls2", "ls2-lr1", "--", "lsp-set-type", "ls2-lr1", "router",
    "--", "lsp-set-addresses", "ls2-lr1", "router",
    "--", "lsp-set-options", "ls2-lr1", "router-port=lr1-ls2",
    "--", "lsp-add", "ls-pub", "ls-pub-lr1", "--", "lsp-set-type", "ls-pub-lr1", "router",
    "--", "lsp-set-addresses", "ls-pub-lr1", "router",
    "--", "lsp-set-options", "ls-pub-lr1", "router-port=lr1-pub", "nat-addresses=router",
    "--", "lsp-add", "ls-pub", "ln-pub", "--", "lsp-set-type", "ln-pub", "localnet",
    "--", "lsp-set-addresses", "ln-pub", "unknown",
    "--", "lsp-set-options", "ln-pub", "network_name=physnet1",
    "--", "lsp-add", "ls1", "ls1-p1",
    "--", "lsp-set-addresses", "ls1-p1", f"{P1_MAC} {P1_IP} {P1_IP6}",
    "--", "lsp-add", "ls1", "ls1-p2",
    "--", "lsp-set-addresses", "ls1-p2", f"{P2_MAC} {P2_IP} {P2_IP6}",
    "--", "lsp-add", "ls1", "ls1-vip", "--", "lsp-set-type", "ls1-vip", "virtual",
    "--", "lsp-set-addresses", "ls1-vip", f"{VIP_MAC} {VIP_IP}",
    "--", "lsp-set-options", "ls1-vip", f"virtual-ip={VIP_IP}",
    "virtual-parents=ls1-p1,ls1-p2",
    "--", "lsp-add", "ls2", P4_NAME, "--", "lsp-set-addresses", P4_NAME, "unknown",
    # VIFs on the localnet switch: GARP (with an IPv4) and RARP (MAC only)
    "--", "lsp-add", "ls-pub", "ls-pub-p5",
    "--", "lsp-set-addresses", "ls-pub-p5", f"{P5_MAC} {P5_IP}",
    "--", "lsp-add", "ls-pub", "ls-pub-p6", "--", "lsp-set-addresses", "ls-pub-p6", P6_MAC,
    # multichassis port (main chassis: the SB-only hv2, additional: us), RARP activation
    "--", "lsp-add", "ls1", "ls1-p7", "--", "lsp-set-addresses", "ls1-p7", f"{P7_MAC} {P7_IP}",
    "--", "lsp-set-options", "ls1-p7", f"requested-chassis={REMOTE_CHASSIS},{LOCAL_CHASSIS}",
    "activation-strategy=rarp",
    "--", "meter-add", "acl-meter", "drop", str(ACL_METER_PKTPS), "pktps",
    "--", "acl-add", "ls1", "to-lport", "1010",
    f'outport == "ls1-p2" && ((tcp && tcp.dst == {REJECT_PORT}) || '
    f"(udp && udp.dst == {REJECT_PORT}) || (sctp && sctp.dst == {REJECT_PORT}))",
    "reject",
    "--", "--log", "--meter=acl-meter", "--severity=info", "--name=log-drop", "acl-add",
    "ls1", "to-lport", "1000", f'outport == "ls1-p2" && udp && udp.dst == {LOG_PORT}', "drop",
    "--", "lb-add", "lb-empty", f"{EMPTY_LB_VIP}:{EMPTY_LB_PORT}", "", "tcp",
    "--", "lb-add", "lb-empty", f"[{EMPTY_LB_VIP6}]:{EMPTY_LB_PORT}", "", "tcp",
    "--", "ls-lb-add", "ls2", "lb-empty",
    # a plain router (no gateway port): answers TCP/UDP/SCTP to its own IPs
    "--", "lr-add", "lr2",
    "--", "lrp-add", "lr2", "lr2-ls1", LR2_MAC, f"{LR2_IP}/24", f"{LR2_IP6}/64",
    "--", "lsp-add", "ls1", "ls1-lr2", "--", "lsp-set-type", "ls1-lr2", "router",
    "--", "lsp-set-addresses", "ls1-lr2", "router",
    "--", "lsp-set-options", "ls1-lr2", "router-port=lr2-ls1",
]


def build_pinctrl_topology(box: Sandbox) -> None:
    """The topology above in a sandbox with northd (chassis hv1)."""
    if box.chassis != LOCAL_CHASSIS:
        raise SandboxError(f"the pinctrl topology names chassis {LOCAL_CHASSIS}")
    box.vsctl("--may-exist", "add-br", "br-phys",
              "--", "set", "Bridge", "br-phys", "datapath_type=dummy", "fail-mode=standalone",
              "--", "set", "Interface", "br-phys",
              f"options:tx_pcap={box.run}/br-phys-tx.pcap",
              "--", "set", "Open_vSwitch", ".",
              "external_ids:ovn-bridge-mappings=physnet1:br-phys")
    box.sbctl("--may-exist", "chassis-add", REMOTE_CHASSIS, "geneve", "127.0.0.2")
    box.nbctl("--no-wait", *_NB)
    for name, lsp, ofport in VIFS:
        box.bind_vif(name, lsp, ofport=ofport, pcap=True)
    box.nbctl("--wait=sb", "sync")


def read_pcap_records(path: Path) -> list[tuple[float, bytes]]:
    """(wall-clock timestamp, frame) of each complete record of a classic
    pcap file written by ovs-vswitchd (microsecond, native byte order)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    if len(data) < 24:
        return []
    order = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">"}.get(data[:4])
    if order is None:
        raise SandboxError(f"{path}: not a microsecond pcap ({data[:4].hex()})")
    record = struct.Struct(order + "IIII")
    out: list[tuple[float, bytes]] = []
    offset = 24
    while offset + record.size <= len(data):
        sec, usec, incl, _orig = record.unpack_from(data, offset)
        start = offset + record.size
        if start + incl > len(data):
            break
        out.append((sec + usec / 1e6, data[start:start + incl]))
        offset = start + incl
    return out


def build_pinctrl_snapshot(directory: str | Path) -> Snapshot:
    """Build the topology with northd once and save NB/SB/conf.db."""
    return build_snapshot("pinctrl", build_pinctrl_topology, directory)


# ---------------------------------------------------------------- one agent


@dataclass(frozen=True)
class Mark:
    """Where a case starts: frames already captured per port, log size."""

    frames: dict[str, int]
    log_offset: int
    at: float


FramePredicate = Callable[[str, bytes], bool]      # (capturing port, frame)


class AgentBox:
    """One agent ("c" or "py") in its own sandbox restored from the snapshot."""

    def __init__(self, snapshot: Snapshot, kind: str, timeout: float = 120.0) -> None:
        self.kind = kind
        self.box = Sandbox.from_snapshot(snapshot.nb, snapshot.sb, snapshot.conf,
                                         northd=False, chassis=LOCAL_CHASSIS)
        self._client: ovs.unixctl.client.UnixctlClient | None = None
        self._log_start = 0
        try:
            self.box.start_controller(kind)
            self.started = time.monotonic()
            self.box.wait_hv_sync(timeout=timeout)
        except BaseException:
            self.box.stop()
            raise

    def restart_if_dead(self, timeout: float = 120.0) -> str | None:
        """If the agent (or ovs-vswitchd: its 3.1 userspace conntrack can abort,
        sandbox-recipe pitfall 3) has exited: restart it (same sandbox, state
        kept) and say what died, with the agent's last errors; else None."""
        vswitchd = self.box.daemons.get("vswitchd")
        if vswitchd is None or not vswitchd.alive():
            if self._client is not None:
                self._client.close()
                self._client = None
            self.box.restart_vswitchd()
            self.box.wait_hv_sync(timeout=timeout)
            return "ovs-vswitchd exited (restarted)"
        if self.box.controller_alive():
            return None
        log = self.log_path()
        crash = _last_errors(log, self._log_start)
        self.box.stop_controller()
        self._log_start = _size(log)
        self.box.start_controller(self.kind)
        self.box.wait_hv_sync(timeout=timeout)
        return crash

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        self.box.stop()

    # -------------------------------------------------------------- injection

    def _vswitchd(self) -> ovs.unixctl.client.UnixctlClient:
        if self._client is None:
            ctl = str(self.box.daemons["vswitchd"].ctl)
            error, client = ovs.unixctl.client.UnixctlClient.create(ctl)
            if error or client is None:
                raise SandboxError(f"cannot connect to {ctl}: error {error}")
            self._client = client
        return self._client

    def appctl_vswitchd(self, command: str, *args: str) -> str:
        """One unixctl command over a kept connection (no process per call)."""
        error, err_text, result = self._vswitchd().transact(command, list(args))
        if error:
            self._client = None
            raise SandboxError(f"{command}: connection error {error}")
        if err_text is not None:
            raise SandboxError(f"{command} {' '.join(args)[:200]}: {err_text}")
        return result or ""

    def inject(self, iface: str, *frames: bytes) -> None:
        """``netdev-dummy/receive IFACE HEX...``: the frames arrive on ``iface``."""
        self.appctl_vswitchd("netdev-dummy/receive", iface, *(f.hex() for f in frames))

    # -------------------------------------------------------------- capture

    def pcap_path(self, port: str) -> Path:
        return self.box.run / f"{port}-tx.pcap"

    def log_path(self) -> Path:
        return self.box.daemons["controller"].log

    def mark(self) -> Mark:
        offset = _size(self.log_path())
        return Mark({p: len(read_pcap(self.pcap_path(p))) for p in CAPTURE_PORTS},
                    offset, time.monotonic())

    def frames_since(self, mark: Mark, relevant: FramePredicate | None = None
                     ) -> dict[str, list[bytes]]:
        out: dict[str, list[bytes]] = {}
        for port in CAPTURE_PORTS:
            frames = read_pcap(self.pcap_path(port))
            seen = mark.frames.get(port, 0)
            frames = frames[seen:] if len(frames) >= seen else frames   # re-created file
            out[port] = [f for f in frames if relevant is None or relevant(port, f)]
        return out

    def wait_frames(self, mark: Mark, want: FramePredicate, count: int, timeout: float,
                    poll: float = 0.02) -> list[tuple[str, bytes]]:
        """Wait until ``count`` frames since ``mark`` satisfy ``want``."""
        deadline = time.monotonic() + timeout
        while True:
            got = [(p, f) for p, frames in self.frames_since(mark).items()
                   for f in frames if want(p, f)]
            if len(got) >= count or time.monotonic() >= deadline:
                return got
            time.sleep(poll)

    def log_since(self, mark: Mark, module: str) -> list[str]:
        """Log lines of ``module`` written since ``mark``, without the
        timestamp and sequence-number prefix (free): ``LEVEL|text``."""
        try:
            with open(self.log_path(), "rb") as f:
                f.seek(mark.log_offset)
                text = f.read().decode(errors="replace")
        except OSError:
            return []
        lines = []
        for line in text.splitlines():
            parts = line.split("|", 4)
            if len(parts) == 5 and parts[2].split("(", 1)[0] == module:
                lines.append(f"{parts[3]}|{parts[4]}")
        return lines

    # -------------------------------------------------------------- SB state

    def sb_state(self) -> list[str]:
        return learnt_state(self.box)

    def wait_sb(self, want: Callable[[list[str]], list[str]], timeout: float,
                poll: float = 0.05) -> list[str]:
        """Poll the learnt SB rows until ``want(rows)`` is non-empty."""
        deadline = time.monotonic() + timeout
        while True:
            rows = want(self.sb_state())
            if rows or time.monotonic() >= deadline:
                return rows
            time.sleep(poll)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _last_errors(log: Path, offset: int, limit: int = 3) -> str:
    """The last ERR/EMER lines of a log after ``offset`` (a crash's traceback
    is one line)."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    bad = [ln for ln in lines if "|ERR|" in ln or "|EMER|" in ln]
    return "\n".join((bad or lines)[-limit:]).replace("\\n", "\n")


def _sb_rows(box: Sandbox, table: str, columns: str) -> list[dict[str, Any]]:
    out = json.loads(box.sbctl("--format=json", f"--columns={columns}", "list", table))
    names = out["headings"]
    return [dict(zip(names, (_value(v) for v in row), strict=True)) for row in out["data"]]


def _value(cell: Any) -> Any:
    if isinstance(cell, list) and len(cell) == 2 and cell[0] in ("uuid", "set", "map"):
        if cell[0] == "uuid":
            return cell[1]
        if cell[0] == "set":
            return [_value(x) for x in cell[1]]
        return {k: _value(v) for k, v in cell[1]}
    return cell


def learnt_state(box: Sandbox) -> list[str]:
    """The SB rows agents write from packets, one normalised line each, sorted.

    Free values are dropped or reduced (pinctrl-anatomy §6): row UUIDs
    (references become names), MAC_Binding ``timestamp`` (only "set"/"unset"
    is kept), Controller_Event ``seq_num``."""
    datapaths = {r["_uuid"]: (r["external_ids"].get("name") or str(r["tunnel_key"]))
                 for r in _sb_rows(box, "Datapath_Binding", "_uuid,external_ids,tunnel_key")}
    chassis = {r["_uuid"]: r["name"] for r in _sb_rows(box, "Chassis", "_uuid,name")}

    def chassis_name(ref: Any) -> str:
        if isinstance(ref, list):
            return ",".join(sorted(chassis.get(x, "?") for x in ref)) or "-"
        return chassis.get(ref, "?")

    rows: list[str] = []
    for r in _sb_rows(box, "MAC_Binding", "logical_port,ip,mac,datapath,timestamp"):
        rows.append(f"MAC_Binding {r['logical_port']} {r['ip']} {r['mac']} "
                    f"dp={datapaths.get(r['datapath'], '?')} "
                    f"timestamp={'set' if r['timestamp'] else 'unset'}")
    for r in _sb_rows(box, "FDB", "mac,dp_key,port_key"):
        rows.append(f"FDB {r['mac']} dp_key={r['dp_key']} port_key={r['port_key']}")
    for r in _sb_rows(box, "Controller_Event", "event_type,event_info,chassis"):
        info = ",".join(f"{k}={v}" for k, v in sorted(r["event_info"].items()))
        rows.append(f"Controller_Event {r['event_type']} {info} "
                    f"chassis={chassis_name(r['chassis'])}")
    for r in _sb_rows(box, "Port_Binding",
                      "logical_port,type,chassis,virtual_parent,additional_chassis,options"):
        activated = r["options"].get("additional-chassis-activated")
        if activated is not None:
            rows.append(f"Port_Binding {r['logical_port']} additional_chassis="
                        f"{chassis_name(r['additional_chassis'])} "
                        f"additional-chassis-activated={activated}")
        if r["type"] == "virtual":
            parent = r["virtual_parent"] if r["virtual_parent"] else "-"
            rows.append(f"Port_Binding {r['logical_port']} virtual "
                        f"chassis={chassis_name(r['chassis'])} virtual_parent={parent}")
    return sorted(rows)


def mac_binding_timestamps(box: Sandbox, ip: str) -> list[int]:
    """MAC_Binding.timestamp of the rows for ``ip`` (values are free, changes are not)."""
    return [r["timestamp"] for r in _sb_rows(box, "MAC_Binding", "ip,timestamp")
            if r["ip"] == ip]


def rows_matching(*needles: str) -> Callable[[list[str]], list[str]]:
    """A filter for :meth:`AgentBox.wait_sb`: rows containing every needle."""
    def pick(rows: list[str]) -> list[str]:
        return [r for r in rows if all(n in r for n in needles)]
    return pick


# ---------------------------------------------------------------- comparing


@dataclass
class Observation:
    """What one agent did in one case (free values already normalised)."""

    frames: dict[str, list[str]] = field(default_factory=dict)   # port -> hex frames
    sb: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    answered: bool = False          # the service visibly ran (checked for C)
    crashed: str | None = None      # the agent exited during the case: its last errors
    notes: list[str] = field(default_factory=list)

    def comparable(self) -> tuple[object, ...]:
        return (self.frames, self.sb, self.log)


def frames_hex(frames: dict[str, list[bytes]]) -> dict[str, list[str]]:
    return {port: [f.hex() for f in fs] for port, fs in frames.items() if fs}


def compare(ours: Observation, theirs: Observation) -> list[str]:
    """Differences between our observation and C's, field by field; [] if equal."""
    problems: list[str] = []
    if ours.crashed:
        problems.append(f"our agent exited during this case (restarted):\n{ours.crashed}")
    for port in sorted(set(ours.frames) | set(theirs.frames)):
        a, b = ours.frames.get(port, []), theirs.frames.get(port, [])
        if len(a) != len(b):
            problems.append(f"{port}: ours sent {len(a)} frame(s), C {len(b)}")
        for i, (fa, fb) in enumerate(zip(a, b, strict=False)):
            if fa != fb:
                problems.append(f"{port} frame {i} differs:")
                problems += ["    " + d for d in field_diff(bytes.fromhex(fa), bytes.fromhex(fb))]
        for label, extra in (("ours", a[len(b):]), ("C", b[len(a):])):
            for fx in extra:
                problems.append(f"{port} only {label}: {describe_hex(fx)}")
    for label, rows in (("ours", sorted(set(ours.sb) - set(theirs.sb))),
                        ("C", sorted(set(theirs.sb) - set(ours.sb)))):
        problems += [f"SB row only {label}: {r}" for r in rows]
    if ours.log != theirs.log:
        problems.append(f"log lines differ:\n  ours: {ours.log}\n  C:    {theirs.log}")
    return problems


def describe_hex(frame_hex: str) -> str:
    return " ".join(f"{k}={v}" for k, v in dissect(bytes.fromhex(frame_hex)))


def run_pair(agents: Sequence[AgentBox], scenario: Callable[[AgentBox], Observation]
             ) -> dict[str, Observation]:
    """Run ``scenario`` on every agent at the same time (one thread each)."""
    with ThreadPoolExecutor(max_workers=len(agents)) as pool:
        futures = {a.kind: pool.submit(scenario, a) for a in agents}
        return {kind: fut.result() for kind, fut in futures.items()}



def start_agents(snapshot: Snapshot, kinds: Sequence[str]) -> list[AgentBox]:
    """One AgentBox per kind, started concurrently; all or none."""
    with ThreadPoolExecutor(max_workers=len(kinds)) as pool:
        futures = [pool.submit(AgentBox, snapshot, kind) for kind in kinds]
        started: list[AgentBox] = []
        errors: list[BaseException] = []
        for fut in futures:
            try:
                started.append(fut.result())
            except BaseException as exc:       # noqa: BLE001 - re-raised below
                errors.append(exc)
    if errors:
        for agent in started:
            agent.close()
        raise errors[0]
    return started


class SideBySide(Protocol):
    """An agent under test in its own sandbox (``kind`` "c" or "py")."""
    kind: str
    box: Sandbox

    def setup(self) -> None: ...


AgentT = TypeVar("AgentT", bound=SideBySide)


def side_by_side(make: Callable[[str], AgentT],
                 kinds: Sequence[str] = ("c", "py")) -> Iterator[dict[str, AgentT]]:
    """The body of a module fixture: one agent of each kind, set up and
    started together, synced, and stopped afterwards."""
    made = {kind: make(kind) for kind in kinds}
    try:
        for a in made.values():
            a.setup()
        for a in made.values():
            a.box.start_controller(a.kind)
        for a in made.values():
            a.box.wait_hv_sync(timeout=120)
        yield made
    finally:
        for a in made.values():
            a.box.stop()
