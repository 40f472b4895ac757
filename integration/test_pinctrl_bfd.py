"""Router BFD (SB BFD table, ``handle_bfd_msg()``): our agent against the C agent.

Both agents run at once, each in its own sandbox with the same topology: a
gateway router lr0 pinned here (``options:chassis``, so lrp0 is an
``l3gateway`` port bound here) with lrp0 00:00:00:00:ff:01 10.0.0.1/24
2001:db8::1/64 on switch sw0, and a VIF vm1 (10.0.0.2, 2001:db8::2, tx
pcap) as the BFD peer: two static routes with ``--bfd`` via 10.0.0.2 and
2001:db8::2 make northd create the NB/SB BFD rows (defaults: min_tx =
min_rx = 1000 ms, detect_mult 3) and flip their status to ``down``.

The peer is played by the test: it reads the agent's control packets from
vm1's tx pcap and answers with ``netdev-dummy/receive`` on vm1.

C quirk the test works around: 23.03.1's pinctrl arms no BFD timer on a pass
that finds nothing due and tests ``next_tx < now`` strictly, so once it is
woken exactly at a next_tx it stops transmitting (and stops checking the
detection time) until something else wakes its thread -- measured here: 3
control packets in 30 s from an idle C agent with two sessions.  Real peers
wake it with their own packets; the test does the same by sending, while it
waits, BFD packets whose your_disc (0) matches no session and so change
nothing.  Our agent does not stall (see ``controller/pinctrl/bfd_router.py``).

Checked, for IPv4 and IPv6 sessions, under both agents:
* the control packets the agent sends in down, init and up and the F reply
  to a P packet, every byte but the free ones: the local discriminator
  (``disc``, drawn at random by each sandbox's northd; checked to be the SB
  row's ``disc``) and, over IPv6, the UDP checksum that covers it;
* SB ``status``: down -> init (peer down) -> up (peer up), and back to down
  once the peer goes silent for the detection time;
* tx intervals: both agents' gaps lie in C's window (interval minus up to a
  quarter of jitter, plus loop latency); the measured medians are printed,
  nothing is asserted tighter than the window;
* a session on a distributed gateway port (cr- port resident here), and
  demand mode (D from the peer: transmission stops for good, as C);
* malformed packets (each with one defect C rejects) change nothing;
* admin_down (route no longer references the BFD row) stops transmission,
  a new reference resumes it in down, deleting the route ends the session.
"""

from __future__ import annotations

import ipaddress
import statistics
import struct
import time
from collections.abc import Iterator
from typing import Callable

import pytest

from integration.pinctrl_harness import side_by_side
from integration.sandbox import Sandbox, poll_until
from integration.test_pinctrl_garp import _records

pytestmark = pytest.mark.integration

KINDS = ("c", "py")
LRP_MAC = bytes.fromhex("00000000ff01")
VM_MAC = bytes.fromhex("505400000002")
PEER_DISC = 0x0A0B0C0D
DOWN, INIT, UP = 1, 2, 3
_NB = [
    "--", "lr-add", "lr0", "--", "set", "Logical_Router", "lr0", "options:chassis=hv1",
    "--", "lrp-add", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.1/24", "2001:db8::1/64",
    "--", "ls-add", "sw0",
    "--", "lsp-add", "sw0", "sw0-lr0", "--", "lsp-set-type", "sw0-lr0", "router",
    "--", "lsp-set-addresses", "sw0-lr0", "router",
    "--", "lsp-set-options", "sw0-lr0", "router-port=lrp0",
    "--", "lsp-add", "sw0", "vm1", "--", "lsp-set-addresses", "vm1",
    "50:54:00:00:00:02 10.0.0.2 2001:db8::2",
    # A distributed router whose gateway port lrp1 has its cr-lrp1 on hv1.
    "--", "lr-add", "lr1",
    "--", "lrp-add", "lr1", "lrp1", "00:00:00:00:ff:11", "172.16.0.1/24",
    "--", "lrp-set-gateway-chassis", "lrp1", "hv1", "10",
    "--", "ls-add", "ext",
    "--", "lsp-add", "ext", "ext-lr1", "--", "lsp-set-type", "ext-lr1", "router",
    "--", "lsp-set-addresses", "ext-lr1", "router",
    "--", "lsp-set-options", "ext-lr1", "router-port=lrp1",
    "--", "lsp-add", "ext", "vm2", "--", "lsp-set-addresses", "vm2",
    "50:54:00:00:00:02 172.16.0.2",
]
DGP = ("172.16.0.2", "172.16.0.1")
DGP_MAC = bytes.fromhex("00000000ff11")
V4 = ("10.0.0.2", "10.0.0.1")
V6 = ("2001:db8::2", "2001:db8::1")


def _is_bfd(f: bytes, v6: bool) -> bool:
    if v6:
        return len(f) >= 86 and f[12:14] == b"\x86\xdd" and f[20] == 17 \
            and f[56:58] == b"\x0e\xc8"
    return len(f) >= 66 and f[12:14] == b"\x08\x00" and f[23] == 17 and f[36:38] == b"\x0e\xc8"


def _body(f: bytes) -> bytes:
    return f[62:86] if f[12:14] == b"\x86\xdd" else f[42:66]


def _state(f: bytes) -> int:
    return _body(f)[1] >> 6


def _normalised(f: bytes) -> bytes:
    """The frame without the discriminator drawn by northd (and the IPv6
    UDP checksum covering it)."""
    if f[12:14] == b"\x86\xdd":
        return f[:60] + b"\0\0" + f[62:66] + b"\0" * 4 + f[70:]
    return f[:46] + b"\0" * 4 + f[50:]


def _disc(agent_frame: bytes) -> int:
    return int(struct.unpack_from("!I", _body(agent_frame), 4)[0])


def _peer(v6: bool, state: int, your: int, flags: int = 0,
          v4: tuple[str, str] = ("10.0.0.2", "10.0.0.1"), lrp_mac: bytes = LRP_MAC,
          mult: int = 3, length: int = 24, my: int = PEER_DISC, version: int = 1) -> bytes:
    """The peer's control packet (``your`` = the agent's discriminator; 0
    matches no session: such a packet only wakes the agent's pinctrl)."""
    msg = struct.pack("!BBBBIIIII", version << 5, (state << 6) | flags, mult, length, my,
                      your, 1_000_000, 1_000_000, 0)
    if v6:
        return _udp6(msg)
    return _udp4(msg, v4, lrp_mac)


def _sum16(data: bytes) -> int:
    data += b"\0" * (len(data) % 2)
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def _udp6(payload: bytes) -> bytes:
    udp = struct.pack("!HHHH", 49999, 3784, 8 + len(payload), 0) + payload
    src, dst = (ipaddress.IPv6Address(a).packed for a in V6)
    ip = struct.pack("!IHBB", 0x60000000, len(udp), 17, 255) + src + dst
    ck = (~_sum16(src + dst + struct.pack("!IxxxB", len(udp), 17) + udp) & 0xFFFF) or 0xFFFF
    return LRP_MAC + VM_MAC + b"\x86\xdd" + ip + udp[:6] + struct.pack("!H", ck) + udp[8:]


def _udp4(payload: bytes, v4: tuple[str, str] = V4, lrp_mac: bytes = LRP_MAC) -> bytes:
    """An IPv4/UDP frame to port 3784 (UDP checksum 0: none)."""
    udp = struct.pack("!HHHH", 49999, 3784, 8 + len(payload), 0) + payload
    src4, dst4 = (ipaddress.IPv4Address(a).packed for a in v4)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 255, 17, 0,
                      src4, dst4)
    hdr = hdr[:10] + struct.pack("!H", ~_sum16(hdr) & 0xFFFF) + hdr[12:]
    return lrp_mac + VM_MAC + b"\x08\x00" + hdr + udp


class Agent:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.box = Sandbox(northd=True)

    def setup(self) -> None:
        self.box.start()
        self.box.nbctl("--no-wait", *_NB)
        self.box.nbctl("--no-wait", "--bfd", "lr-route-add", "lr0", "192.168.0.0/24",
                       "10.0.0.2", "lrp0")
        self.box.nbctl("--no-wait", "--bfd", "lr-route-add", "lr0", "2001:db9::/64",
                       "2001:db8::2", "lrp0")
        self.box.nbctl("--no-wait", "--bfd", "lr-route-add", "lr1", "0.0.0.0/0",
                       "172.16.0.2", "lrp1")
        self.box.bind_vif("vif1", "vm1", ofport=11, pcap=True)
        self.box.bind_vif("vif2", "vm2", ofport=12, pcap=True)
        self.box.nbctl("--wait=sb", "sync")

    def records(self, v6: bool, vif: str = "vif1") -> list[tuple[float, bytes]]:
        return [(t, f) for t, f in _records(self.box.run / f"{vif}-tx.pcap") if _is_bfd(f, v6)]

    def frames(self, v6: bool, vif: str = "vif1") -> list[bytes]:
        return [f for _, f in self.records(v6, vif)]

    def rows(self) -> dict[str, tuple[str, int]]:
        out = self.box.sbctl("--format=csv", "--no-headings", "--columns=dst_ip,status,disc",
                             "list", "BFD")
        rows = {}
        for line in out.splitlines():
            ip, status, disc = (f.strip('"') for f in line.split(","))
            rows[ip] = (status, int(disc))
        return rows

    def status(self, ip: str) -> str:
        return self.rows().get(ip, ("", 0))[0]

    def receive(self, frame: bytes, vif: str = "vif1") -> None:
        self.box.appctl("ovs-vswitchd", "netdev-dummy/receive", vif, frame.hex())


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, Agent]]:
    yield from side_by_side(Agent, KINDS)


def _wait_state(a: Agent, v6: bool, state: int, feed: bytes, timeout: float = 20.0,
                vif: str = "vif1") -> bytes | None:
    """The first frame sent in ``state`` after now, the peer sending ``feed``
    every 0.25 s meanwhile (C's pinctrl transmits only on a pass something
    else wakes; see the module note)."""
    n = len(a.frames(v6, vif))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = [f for f in a.frames(v6, vif)[n:] if _state(f) == state]
        if new:
            return new[0]
        a.receive(feed, vif)
        time.sleep(0.25)
    return None


def _feed_until(a: Agent, feed: bytes, done: Callable[[], bool], timeout: float = 30.0,
                vif: str = "vif1") -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return True
        a.receive(feed, vif)
        time.sleep(0.25)
    return done()


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_session_to_up_and_detection_down_match_c(agents: dict[str, Agent], v6: bool) -> None:
    ip = (V6 if v6 else V4)[0]
    wake = _peer(v6, DOWN, 0)
    seen: dict[str, dict[str, bytes]] = {}
    statuses: dict[str, list[str]] = {}
    for kind, a in agents.items():
        got: dict[str, bytes] = {}
        assert poll_until(lambda: a.status(ip) == "down", 30), (kind, a.rows())
        down = _wait_state(a, v6, DOWN, wake)
        assert down is not None, (kind, a.box.log_tail())
        disc = _disc(down)
        assert disc == a.rows()[ip][1], kind           # my_disc is the SB row's disc
        got["down"] = down
        hist = ["down"]
        init = _wait_state(a, v6, INIT, _peer(v6, DOWN, disc))
        assert init is not None, kind
        got["init"] = init
        if _feed_until(a, _peer(v6, DOWN, disc), lambda: a.status(ip) == "init", 15):
            hist.append("init")
        up = _wait_state(a, v6, UP, _peer(v6, UP, disc))
        assert up is not None, kind
        got["up"] = up
        _feed_until(a, _peer(v6, UP, disc), lambda: a.status(ip) == "up", 15)
        hist.append(a.status(ip))
        # A poll gets an F reply at once.
        n = len(a.frames(v6))
        a.receive(_peer(v6, UP, disc, flags=0x20))
        assert poll_until(lambda: any(_body(f)[1] & 0x10 for f in a.frames(v6)[n:]), 5), kind
        got["final"] = next(f for f in a.frames(v6)[n:] if _body(f)[1] & 0x10)
        # Peer silent (only packets matching no session arrive): detection
        # time 3 x max(1000, 1000) ms, then the status write.
        if _feed_until(a, wake, lambda: a.status(ip) == "down", 30):
            hist.append("down")
        seen[kind] = got
        statuses[kind] = hist
    assert statuses["c"] == statuses["py"] == ["down", "init", "up", "down"], statuses
    for name in ("down", "init", "up", "final"):
        c, py = seen["c"][name], seen["py"][name]
        assert _normalised(c) == _normalised(py), (name, c.hex(), py.hex())
    # What the normalisation hides is what it should: the discriminators differ.
    assert _disc(seen["c"]["up"]) != _disc(seen["py"]["up"])
    assert _body(seen["py"]["up"])[8:12] == struct.pack("!I", PEER_DISC)


def test_tx_intervals_within_c_window(agents: dict[str, Agent]) -> None:
    """Down sessions send every max(min_tx, remote min_rx) - [0, 25 %) ms
    (C: on the first pass after that; the test wakes it every 0.25 s)."""
    medians: dict[str, float] = {}
    wake = _peer(False, DOWN, 0)
    for kind, a in agents.items():
        assert poll_until(lambda: a.status("10.0.0.2") == "down", 30), kind
        mark = len(a.records(False))
        assert _feed_until(a, wake, lambda: len(a.records(False)) >= mark + 10, 40), kind
        times = [t for t, _ in a.records(False)[mark:]]
        gaps = [b - t for t, b in zip(times, times[1:])]
        medians[kind] = statistics.median(gaps)
        # C's window is [0.75, 1.0] s; allow loop latency on a loaded machine.
        assert 0.6 <= medians[kind] <= 1.5, (kind, gaps)
        assert all(0.5 <= g <= 2.5 for g in gaps), (kind, gaps)
    print("BFD tx median gap (s): " + ", ".join("%s %.3f" % kv for kv in medians.items()))


def test_distributed_gateway_port_session_matches_c(agents: dict[str, Agent]) -> None:
    """A session on a distributed gateway port runs where its cr- port is
    resident: same frames, and driven up, the same status; then demand mode."""
    kw = {"v4": DGP, "lrp_mac": DGP_MAC}
    wake = _peer(False, DOWN, 0, **kw)
    seen: dict[str, tuple[bytes, bytes]] = {}
    for kind, a in agents.items():
        assert poll_until(lambda: a.status("172.16.0.2") == "down", 30), (kind, a.rows())
        down = _wait_state(a, False, DOWN, wake, vif="vif2")
        assert down is not None, kind
        disc = _disc(down)
        up = _wait_state(a, False, UP, _peer(False, INIT, disc, **kw), vif="vif2")
        assert up is not None, kind
        assert _feed_until(a, _peer(False, UP, disc, **kw),
                           lambda: a.status("172.16.0.2") == "up", 20, "vif2"), (kind, a.rows())
        seen[kind] = (down, up)
        # The peer asks for demand mode: transmission stops, and (C never
        # leaves demand mode) stays stopped once detection brings it down.
        a.receive(_peer(False, UP, disc, flags=0x02, **kw), "vif2")
        _feed_until(a, wake, lambda: False, 1.5, "vif2")
        n = len(a.frames(False, "vif2"))
        assert _feed_until(a, wake, lambda: a.status("172.16.0.2") == "down", 30, "vif2"), kind
        _feed_until(a, wake, lambda: False, 3.0, "vif2")
        assert len(a.frames(False, "vif2")) == n, kind
    assert _normalised(seen["c"][0]) == _normalised(seen["py"][0])
    assert _normalised(seen["c"][1]) == _normalised(seen["py"][1])
    assert seen["py"][0][6:12] == DGP_MAC and seen["py"][0][26:30] == bytes((172, 16, 0, 1))

def test_malformed_packets_change_nothing(agents: dict[str, Agent]) -> None:
    """Packets that would move a down session to init but for one defect C
    checks for: dropped by both agents, the session stays down.  Packets too
    short to hold a BFD header go to our agent only (C reads past them)."""
    for kind, a in agents.items():
        assert poll_until(lambda: a.status("10.0.0.2") == "down", 30), kind
        down = _wait_state(a, False, DOWN, _peer(False, DOWN, 0))
        assert down is not None, kind
        disc = _disc(down)
        bad = [_peer(False, DOWN, disc, mult=0), _peer(False, DOWN, disc, version=0),
               _peer(False, DOWN, disc, flags=0x04), _peer(False, DOWN, disc, flags=0x01),
               _peer(False, DOWN, disc, my=0), _peer(False, DOWN, disc, flags=0x30),
               _peer(False, INIT, 0), _peer(False, DOWN, disc, length=23),
               _peer(False, DOWN, disc + 1)]
        if kind == "py":
            good = _peer(False, DOWN, disc)
            bad += [_udp4(good[42:42 + n]) for n in range(24)]
        n = len(a.frames(False))
        for _round in range(4):
            for frame in bad:
                a.receive(frame)
            time.sleep(0.5)
        assert a.box.controller_alive(), kind
        assert [_state(f) for f in a.frames(False)[n:]] == [DOWN] * len(a.frames(False)[n:])
        assert len(a.frames(False)) > n, kind            # still transmitting
        assert a.status("10.0.0.2") == "down", kind


def _silent(a: Agent, v6: bool, wake: bytes, seconds: float) -> int:
    """Control packets of the family sent while the test wakes the agent."""
    n = len(a.frames(v6))
    _feed_until(a, wake, lambda: False, seconds)
    return len(a.frames(v6)) - n


def test_admin_down_stops_tx_and_row_removal_ends_session(agents: dict[str, Agent]) -> None:
    """Unreferencing the BFD row makes northd set admin_down (tx stops);
    referencing it again brings it back to down (tx resumes); deleting the
    route deletes the row and ends the session.  Runs last: it changes the
    IPv4 session."""
    wake = _peer(False, DOWN, 0)
    resumed: dict[str, bytes] = {}
    for kind, a in agents.items():
        route = a.box.nbctl("--bare", "--columns=_uuid", "find",
                            "Logical_Router_Static_Route", "nexthop=10.0.0.2").strip()
        bfd = a.box.nbctl("--bare", "--columns=_uuid", "find", "BFD",
                          "dst_ip=10.0.0.2").strip()
        a.box.nbctl("clear", "Logical_Router_Static_Route", route, "bfd")
        assert poll_until(lambda: a.status("10.0.0.2") == "admin_down", 30), (kind, a.rows())
        _feed_until(a, wake, lambda: False, 1.5)        # a packet may be in flight
        assert _silent(a, False, wake, 4.0) == 0, kind
        assert a.frames(True), kind                      # the IPv6 session carries on
        a.box.nbctl("set", "Logical_Router_Static_Route", route, f"bfd={bfd}")
        assert poll_until(lambda: a.status("10.0.0.2") == "down", 30), (kind, a.rows())
        frame = _wait_state(a, False, DOWN, wake)
        assert frame is not None, kind
        resumed[kind] = frame
        a.box.nbctl("lr-route-del", "lr0", "192.168.0.0/24")
        assert poll_until(lambda: "10.0.0.2" not in a.rows(), 30), (kind, a.rows())
        _feed_until(a, wake, lambda: False, 1.5)
        assert _silent(a, False, wake, 4.0) == 0, kind
    assert _normalised(resumed["c"]) == _normalised(resumed["py"])
    assert _body(resumed["py"])[8:12] == bytes(4)        # remote disc forgotten
