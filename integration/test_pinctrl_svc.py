"""Load-balancer health checks (service monitors): our agent against the C agent.

Both agents run at once, each in its own sandbox with the same topology: a
switch sw0 with two VIFs bound here (vm1 10.0.0.3, vm2 10.0.0.4, tx pcaps),
a TCP load balancer 10.0.0.10:80 -> both on port 80 with a
Load_Balancer_Health_Check and ``ip_port_mappings`` (source 10.0.0.2), and
NB ``svc_monitor_mac`` set.  vm1 answers the agent's SYN with a SYN-ACK
(injected with ``netdev-dummy/receive``); vm2 stays silent.

Checked: the probe frames each agent sends (every byte but the free fields:
TCP seq, source port, TCP checksum), the RST+ACK answering the SYN-ACK
(seq = SYN-ACK's ack + 1, ack = its seq + 1) and the Service_Monitor
``status`` column: vm1 online, vm2 offline, the same under both agents.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest

from integration.pinctrl_harness import side_by_side
from integration.sandbox import Sandbox, poll_until
from integration.test_pinctrl_garp import _records

pytestmark = pytest.mark.integration

KINDS = ("c", "py")
SVC_MAC = "0a:58:0a:00:00:fe"
_NB = [
    "--", "ls-add", "sw0",
    "--", "lsp-add", "sw0", "vm1", "--", "lsp-set-addresses", "vm1",
    "50:54:00:00:00:03 10.0.0.3",
    "--", "lsp-add", "sw0", "vm2", "--", "lsp-set-addresses", "vm2",
    "50:54:00:00:00:04 10.0.0.4",
    "--", "lb-add", "lb0", "10.0.0.10:80", "10.0.0.3:80,10.0.0.4:80", "tcp",
    "--", "ls-lb-add", "sw0", "lb0",
    "--", "set", "NB_Global", ".", f"options:svc_monitor_mac={SVC_MAC}",
    "--", "--id=@hc", "create", "Load_Balancer_Health_Check", 'vip="10.0.0.10:80"',
    "options:interval=5", "options:timeout=3",
    "--", "add", "Load_Balancer", "lb0", "health_check", "@hc",
    "--", "set", "Load_Balancer", "lb0",
    'ip_port_mappings:"10.0.0.3"="vm1:10.0.0.2"',
    'ip_port_mappings:"10.0.0.4"="vm2:10.0.0.2"',
    # UDP: vm3 silent (online), vm4 answers ICMP port unreachable (offline)
    "--", "lsp-add", "sw0", "vm3", "--", "lsp-set-addresses", "vm3",
    "50:54:00:00:00:05 10.0.0.5",
    "--", "lsp-add", "sw0", "vm4", "--", "lsp-set-addresses", "vm4",
    "50:54:00:00:00:06 10.0.0.6",
    "--", "lb-add", "lbu", "10.0.0.11:53", "10.0.0.5:53,10.0.0.6:53", "udp",
    "--", "ls-lb-add", "sw0", "lbu",
    "--", "--id=@hcu", "create", "Load_Balancer_Health_Check", 'vip="10.0.0.11:53"',
    "options:interval=5", "options:timeout=3",
    "--", "add", "Load_Balancer", "lbu", "health_check", "@hcu",
    "--", "set", "Load_Balancer", "lbu",
    'ip_port_mappings:"10.0.0.5"="vm3:10.0.0.2"',
    'ip_port_mappings:"10.0.0.6"="vm4:10.0.0.2"',
    # IPv6 TCP: vm5 silent (offline)
    "--", "lsp-add", "sw0", "vm5", "--", "lsp-set-addresses", "vm5",
    "50:54:00:00:00:07 fd00::3",
    "--", "lb-add", "lb6", "[fd00::10]:80", "[fd00::3]:80", "tcp",
    "--", "ls-lb-add", "sw0", "lb6",
    "--", "--id=@hc6", "create", "Load_Balancer_Health_Check", 'vip="[fd00::10]:80"',
    "options:interval=5", "options:timeout=3",
    "--", "add", "Load_Balancer", "lb6", "health_check", "@hc6",
    "--", "set", "Load_Balancer", "lb6", 'ip_port_mappings:"[fd00::3]"="vm5:[fd00::2]"',
]
_VIFS = (("vif1", "vm1", 11), ("vif2", "vm2", 12), ("vif3", "vm3", 13), ("vif4", "vm4", 14),
         ("vif5", "vm5", 15))


def _syns(frames: list[bytes], ip: str) -> list[bytes]:
    dst = socket.inet_aton(ip)
    return [f for f in frames if len(f) >= 54 and f[12:14] == b"\x08\x00" and f[23] == 6
            and f[30:34] == dst and f[47] == 0x02]


def _rsts(frames: list[bytes]) -> list[bytes]:
    return [f for f in frames if len(f) >= 54 and f[12:14] == b"\x08\x00" and f[23] == 6
            and f[47] == 0x14]


def _normalised(frame: bytes) -> bytes:
    """The probe without its free fields (source port, seq, TCP checksum)."""
    return frame[:34] + b"\0\0" + frame[36:38] + b"\0" * 4 + frame[42:50] + b"\0\0" + frame[52:]


def _syn_ack(syn: bytes) -> bytes:
    sport, _dport, seq = struct.unpack_from("!HHI", syn, 34)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, 0, 0x4000, 64, 6, 0,
                     syn[30:34], syn[26:30])
    tcp = struct.pack("!HHIIHHHH", 80, sport, 7000, (seq + 1) & 0xFFFFFFFF, 0x5012, 1000, 0, 0)
    return syn[6:12] + syn[0:6] + b"\x08\x00" + ip + tcp    # checksums are not checked


class Agent:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.box = Sandbox(northd=True)

    def setup(self) -> None:
        self.box.start()
        self.box.nbctl("--no-wait", *_NB)
        for name, lsp, ofport in _VIFS:
            self.box.bind_vif(name, lsp, ofport=ofport, pcap=True)
        self.box.nbctl("--wait=sb", "sync")

    def tx(self, vif: str) -> list[bytes]:
        return [f for _, f in _records(self.box.run / f"{vif}-tx.pcap")]

    def status(self) -> dict[str, str]:
        out = self.box.sbctl("--format=csv", "--no-headings", "--columns=ip,status",
                             "list", "Service_Monitor")
        rows = {}
        for line in out.splitlines():
            ip, status = (f.strip('"') for f in line.split(","))
            rows[ip] = status
        return rows


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, Agent]]:
    yield from side_by_side(Agent, KINDS)




def test_probes_replies_and_status_match_c(agents: dict[str, Agent]) -> None:
    probes: dict[str, bytes] = {}
    for kind, a in agents.items():
        assert poll_until(lambda: _syns(a.tx("vif1"), "10.0.0.3")
                      and _syns(a.tx("vif2"), "10.0.0.4"), 30), kind
        syn = _syns(a.tx("vif1"), "10.0.0.3")[-1]
        probes[kind] = syn
        assert struct.unpack_from("!HH", syn, 34)[0] >= 1024
        assert struct.unpack_from("!H", syn, 48)[0] == 65160 and syn[22] == 63
    assert _normalised(probes["c"]) == _normalised(probes["py"])
    for kind, a in agents.items():
        for _attempt in range(3):           # a new probe may overtake the reply
            syn = _syns(a.tx("vif1"), "10.0.0.3")[-1]
            a.box.appctl("ovs-vswitchd", "netdev-dummy/receive", "vif1", _syn_ack(syn).hex())
            if poll_until(lambda: _rsts(a.tx("vif1")), 3):
                break
        rst = _rsts(a.tx("vif1"))[-1]
        seq = struct.unpack_from("!I", syn, 38)[0]
        assert struct.unpack_from("!IIH", rst, 38) == ((seq + 2) & 0xFFFFFFFF, 7001, 0x5014), kind
    # vm1 keeps answering every new probe, so it stays online.
    want = {"10.0.0.3": "online", "10.0.0.4": "offline"}
    answered = {kind: probes[kind] for kind in agents}
    seen: dict[str, dict[str, str]] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(seen) < len(agents):
        for kind, a in agents.items():
            syn = _syns(a.tx("vif1"), "10.0.0.3")[-1]
            if syn != answered[kind]:
                answered[kind] = syn
                a.box.appctl("ovs-vswitchd", "netdev-dummy/receive", "vif1",
                             _syn_ack(syn).hex())
            if kind not in seen and {k: a.status().get(k) for k in want} == want:
                seen[kind] = want
        time.sleep(0.2)
    assert seen == {kind: want for kind in agents}, {k: a.status() for k, a in agents.items()}


def _udps(frames: list[bytes]) -> list[bytes]:
    return [f for f in frames if len(f) >= 50 and f[12:14] == b"\x08\x00" and f[23] == 17]


def _ip6_syns(frames: list[bytes]) -> list[bytes]:
    return [f for f in frames if len(f) >= 74 and f[12:14] == b"\x86\xdd" and f[20] == 6
            and f[67] == 0x02]


def _port_unreachable(probe: bytes) -> bytes:
    quoted = probe[14:14 + 36]
    icmp = struct.pack("!BBHI", 3, 3, 0, 0) + quoted
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 0, 0, 64, 1, 0,
                     probe[30:34], probe[26:30])
    return probe[6:12] + probe[0:6] + b"\x08\x00" + ip + icmp


def test_udp_and_ipv6_monitors_match_c(agents: dict[str, Agent]) -> None:
    probes: dict[str, tuple[bytes, bytes]] = {}
    for kind, a in agents.items():
        assert poll_until(lambda: _udps(a.tx("vif3")) and _udps(a.tx("vif4"))
                      and _ip6_syns(a.tx("vif5")), 30), kind
        probes[kind] = (_udps(a.tx("vif3"))[-1], _ip6_syns(a.tx("vif5"))[-1])
    c_udp, c_v6 = probes["c"]
    py_udp, py_v6 = probes["py"]
    # UDP: all but the source port (and so the checksum, 0 over IPv4) equal.
    assert c_udp[:34] == py_udp[:34] and c_udp[36:] == py_udp[36:]
    assert c_udp[40:42] == b"\0\0" and len(py_udp) == 50
    # IPv6 SYN: all but source port, seq and checksum.
    assert c_v6[:54] == py_v6[:54] and c_v6[56:58] == py_v6[56:58]
    assert c_v6[62:70] == py_v6[62:70] and c_v6[72:] == py_v6[72:]
    want = {"10.0.0.5": "online", "10.0.0.6": "offline", "fd00::3": "offline"}
    answered = {kind: 0 for kind in agents}
    seen: dict[str, dict[str, str]] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(seen) < len(agents):
        for kind, a in agents.items():
            sent = _udps(a.tx("vif4"))
            if len(sent) != answered[kind]:
                answered[kind] = len(sent)
                a.box.appctl("ovs-vswitchd", "netdev-dummy/receive", "vif4",
                             _port_unreachable(sent[-1]).hex())
            if kind not in seen and {k: a.status().get(k) for k in want} == want:
                seen[kind] = want
        time.sleep(0.2)
    assert seen == {kind: want for kind in agents}, {k: a.status() for k, a in agents.items()}
