"""DHCPv6 prefix delegation (LRP options prefix_delegation / prefix): our
agent against the C agent, packet by packet.

Both agents run at once, each in its own sandbox with northd and the same
topology (the shape of upstream's "IPv6 prefix delegation" system test):
gateway router R1 (``options:chassis=hv1``) with gateway port rp-public
(00:00:02:01:02:03, 1001::1/64, ``prefix_delegation=true``) on switch
public, where a VIF "srv" plays the DHCPv6 server and captures what it gets;
internal port rp-sw0 (00:00:01:01:02:03, fd11::1/64, ``prefix=true``) on
sw0.  One PD state results (key rp-sw0, DUID = rp-sw0's MAC, sent from
rp-public's address into public-rp).

The exchange, driven identically for both agents: watch five SOLICITs (gaps
below 3 s, a fresh 16-bit IAID each); answer
its IAID with an ADVERTISE injected on srv (``netdev-dummy/receive``);
capture the REQUEST; answer with a REPLY delegating 2001:db8:1::/48 with
T1 = 3 s and T2 = 7 s; wait for ``ipv6_ra_pd_list`` on rp-sw0's
Port_Binding (and northd's copy into the NB ``ipv6_prefix``); then wait for
the RENEW that T1 triggers and, nobody answering it, the REBIND that T2
triggers.  C checks T1/T2 only when its pinctrl thread wakes for another
reason, so both agents get an unrelated opcode-19 packet-in every second
meanwhile.  Frames are compared byte for byte with the IAID (random while
no prefix is known, pinctrl-anatomy §6) set to 0 and the UDP checksum
recomputed; the checksum of every captured frame is verified first.  A
SOLICIT re-sent (with a fresh IAID) between reading one and injecting the
ADVERTISE makes the exchange retry with the newest SOLICIT.

Second topology (``dgp_agents``): R1 distributed, rp-public a gateway port
on hv1 (the states live where cr-rp-public is resident) and both router
ports asking for a prefix, so two states share one gateway address and are
told apart by IAID; the test serves both until each Port_Binding has its
``ipv6_ra_pd_list``, comparing the first SOLICIT and REQUEST of each.
"""

from __future__ import annotations

import ipaddress
import struct
import time
from collections.abc import Iterator

import pytest

from integration.pinctrl_harness import read_pcap_records, side_by_side
from integration.sandbox import Sandbox

pytestmark = pytest.mark.integration

KINDS = ("c", "py")
GW_MAC, GW_IP = bytes.fromhex("000002010203"), ipaddress.IPv6Address("1001::1").packed
SRV_MAC, SRV_IP = bytes.fromhex("505400000001"), ipaddress.IPv6Address("1001::100").packed
CMAC = bytes.fromhex("000001010203")
DUID = bytes.fromhex("00010001000000aa") + SRV_MAC
PREFIX = ipaddress.IPv6Address("2001:db8:1::").packed
T1, T2 = 3, 7
N_SCHEDULE = 5                     # SOLICITs looked at before answering
PD_TIMEOUT_S, TOLERANCE_S = 3.0, 0.3

_NB = [
    "--", "lr-add", "R1", "--", "set", "Logical_Router", "R1", "options:chassis=hv1",
    "--", "ls-add", "public", "--", "ls-add", "sw0",
    "--", "lrp-add", "R1", "rp-public", "00:00:02:01:02:03", "1001::1/64",
    "--", "lrp-add", "R1", "rp-sw0", "00:00:01:01:02:03", "fd11::1/64",
    "--", "set", "Logical_Router_Port", "rp-public", "options:prefix_delegation=true",
    "--", "set", "Logical_Router_Port", "rp-sw0", "options:prefix=true",
    "--", "lsp-add", "public", "public-rp", "--", "lsp-set-type", "public-rp", "router",
    "--", "lsp-set-addresses", "public-rp", "router",
    "--", "lsp-set-options", "public-rp", "router-port=rp-public",
    "--", "lsp-add", "sw0", "sw0-rp", "--", "lsp-set-type", "sw0-rp", "router",
    "--", "lsp-set-addresses", "sw0-rp", "router",
    "--", "lsp-set-options", "sw0-rp", "router-port=rp-sw0",
    "--", "lsp-add", "public", "srv",
    "--", "lsp-set-addresses", "srv", "50:54:00:00:00:01 1001::100",
]


def _opt(code: int, body: bytes) -> bytes:
    return struct.pack("!HH", code, len(body)) + body


def _csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(w for (w,) in struct.iter_unpack("!H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _server_frame(mtype: int, options: bytes) -> bytes:
    """From srv to rp-public (547 -> 546)."""
    body = struct.pack("!I", mtype << 24 | 0x4242) + options
    u = struct.pack("!HHHH", 547, 546, 8 + len(body), 0) + body
    ck = _csum(SRV_IP + GW_IP + struct.pack("!IxxxB", len(u), 17) + u) or 0xFFFF
    u = u[:6] + struct.pack("!H", ck) + u[8:]
    return (GW_MAC + SRV_MAC + b"\x86\xdd" + struct.pack("!IHBB", 0x60000000, len(u), 17, 64)
            + SRV_IP + GW_IP + u)


def _ia_pd(aid: int, t1: int, t2: int, prefix_addr: bytes = PREFIX) -> bytes:
    prefix = _opt(26, struct.pack("!IIB", 3600, 7200, 48) + prefix_addr)
    return _opt(25, struct.pack("!III", aid, t1, t2) + prefix)


def _client_id(cmac: bytes = CMAC) -> bytes:
    return _opt(1, b"\x00\x03\x00\x01" + cmac)


def _dhcp_type(frame: bytes) -> int | None:
    """The DHCPv6 message type of an untagged IPv6/UDP 546->547 frame."""
    if len(frame) < 63 or frame[12:14] != b"\x86\xdd" or frame[20] != 17:
        return None
    if struct.unpack_from("!HH", frame, 54) != (546, 547):
        return None
    return frame[62]


def _udp_ok(frame: bytes) -> bool:
    plen = struct.unpack_from("!H", frame, 18)[0]
    return _csum(frame[22:54] + struct.pack("!IxxxB", plen, 17) + frame[54:54 + plen]) == 0


def _iaid_offset(frame: bytes) -> int:
    """Offset of the IAID of the (first) IA_PD option."""
    pos = 66
    while pos + 4 <= len(frame):
        code, length = struct.unpack_from("!HH", frame, pos)
        if code == 25:
            return pos + 4
        pos += 4 + length
    raise AssertionError("no IA_PD in " + frame.hex())


def _iaid(frame: bytes) -> int:
    return int(struct.unpack_from("!I", frame, _iaid_offset(frame))[0])


def _normalised(frame: bytes) -> bytes:
    """IAID := 0, UDP checksum recomputed."""
    assert _udp_ok(frame), frame.hex()
    ofs = _iaid_offset(frame)
    out = bytearray(frame)
    out[ofs:ofs + 4] = bytes(4)
    out[60:62] = b"\0\0"
    plen = struct.unpack_from("!H", out, 18)[0]
    ck = _csum(bytes(out[22:54]) + struct.pack("!IxxxB", plen, 17) + bytes(out[54:54 + plen]))
    out[60:62] = struct.pack("!H", ck or 0xFFFF)
    return bytes(out)


class Agent:
    def __init__(self, kind: str, nb: list[str] = _NB) -> None:
        self.kind = kind
        self.box = Sandbox(northd=True)
        self.nb = nb
        self.observed: dict[str, object] = {}

    def setup(self) -> None:
        self.box.start()
        self.box.nbctl("--no-wait", *self.nb)
        self.box.bind_vif("srv", "srv", ofport=1, pcap=True)
        self.box.nbctl("--wait=sb", "sync")

    def frames(self, mtype: int, since: int = 0, cmac: bytes | None = None) -> list[bytes]:
        recs = read_pcap_records(self.box.run / "srv-tx.pcap")[since:]
        return [f for _, f in recs if _dhcp_type(f) == mtype
                and (cmac is None or _client_id(cmac) in f)]

    def n_frames(self) -> int:
        return len(read_pcap_records(self.box.run / "srv-tx.pcap"))

    def inject(self, frame: bytes) -> None:
        self.box.appctl("ovs-vswitchd", "netdev-dummy/receive", "srv", frame.hex())

    def pd_list(self, port: str = "rp-sw0") -> str:
        out = self.box.sbctl("--bare", "--columns=options", "find", "Port_Binding",
                             f"logical_port={port}")
        for item in out.split():
            if item.startswith("ipv6_ra_pd_list="):
                return item.split("=", 1)[1].strip('"')
        return ""


def _wait_for(pred, timeout: float, period: float = 0.2):   # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(period)


def _exchange(a: Agent) -> None:
    """SOLICIT -> ADVERTISE -> REQUEST -> REPLY -> ipv6_ra_pd_list -> RENEW."""
    obs = a.observed
    # the SOLICIT schedule first: every uniform[0, 3 s), a fresh IAID each time
    _wait_for(lambda: len(a.frames(1)) >= N_SCHEDULE, 3 * N_SCHEDULE + 10)
    obs["schedule"] = [(ts, _iaid(f)) for ts, f in read_pcap_records(a.box.run / "srv-tx.pcap")
                       if _dhcp_type(f) == 1]
    for _attempt in range(8):
        solicits = _wait_for(lambda: a.frames(1), 30)
        assert solicits, f"{a.kind}: no SOLICIT"
        solicit = solicits[-1]
        aid = _iaid(solicit)
        mark = a.n_frames()
        a.inject(_server_frame(2, _client_id() + _opt(2, DUID) + _opt(7, b"\x00")
                               + _ia_pd(aid, 1800, 2880)))
        requests = _wait_for(lambda: [f for f in a.frames(3, mark) if _iaid(f) == aid], 3)
        if requests:
            break
    else:
        pytest.fail(f"{a.kind}: no REQUEST answered an ADVERTISE")
    obs["solicit"], obs["request"], obs["aid"] = solicit, requests[0], aid
    mark = a.n_frames()
    a.inject(_server_frame(7, _client_id() + _opt(2, DUID) + _ia_pd(aid, T1, T2)))
    obs["pd_list"] = _wait_for(a.pd_list, 30)
    # C looks at T1 only when its pinctrl thread wakes for another reason:
    # give both agents one (a packet-in for an IAID nobody uses) every second.
    nudge = _server_frame(2, _client_id() + _ia_pd(aid ^ 0x10000, 1800, 2880))
    for mtype, name in ((5, "renew"), (6, "rebind")):
        got: list[bytes] = []
        deadline = time.monotonic() + T2 + 20
        while not got and time.monotonic() < deadline:
            time.sleep(1)
            a.inject(nudge)
            got = _wait_for(lambda: a.frames(mtype, mark), 0.5)   # noqa: B023
        obs[name] = got[0] if got else None
    obs["nb_prefix"] = _wait_for(lambda: a.box.nbctl("--bare", "--columns=ipv6_prefix",
                                                     "list", "Logical_Router_Port",
                                                     "rp-sw0").strip(), 15)


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, Agent]]:
    for made in side_by_side(Agent, KINDS):
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(len(made)) as pool:
            list(pool.map(_exchange, made.values()))
        yield made


def _expected_solicit() -> bytes:
    from controller.pinctrl.prefix_delegation import MSG_SOLICIT, PdEntry, client_frame
    e = PdEntry("rp-sw0", GW_MAC, GW_IP, CMAC, 0, 0)
    return client_frame(MSG_SOLICIT, e, 0, bytes(16), 0, b"", bytes(16), bytes(6))


def test_solicit_matches_c(agents: dict[str, Agent]) -> None:
    got = {k: _normalised(a.observed["solicit"]) for k, a in agents.items()}  # type: ignore
    assert got["py"] == got["c"], (got["py"].hex(), got["c"].hex())
    assert got["c"] == _expected_solicit()
    for a in agents.values():
        assert all(_udp_ok(f) for f in a.frames(1))


def test_solicit_schedule_and_fresh_iaids(agents: dict[str, Agent]) -> None:
    for k, a in agents.items():
        sched: list[tuple[float, int]] = a.observed["schedule"]     # type: ignore[assignment]
        assert len(sched) >= N_SCHEDULE, (k, sched)
        gaps = [b[0] - x[0] for x, b in zip(sched, sched[1:])]
        assert all(0 <= g < PD_TIMEOUT_S + TOLERANCE_S for g in gaps), (k, gaps)
        aids = [aid for _, aid in sched]
        assert all(0 <= x <= 0xFFFF for x in aids), (k, aids)
        assert len(set(aids)) >= len(aids) - 1, (k, aids)       # redrawn every time


def test_request_built_from_the_advertise_matches_c(agents: dict[str, Agent]) -> None:
    got = {k: _normalised(a.observed["request"]) for k, a in agents.items()}  # type: ignore
    assert got["py"] == got["c"], (got["py"].hex(), got["c"].hex())
    frame = got["c"]
    assert frame[:12] == SRV_MAC + GW_MAC and frame[22:54] == GW_IP + SRV_IP
    assert frame[62:66] == b"\x03\x00\x00\x00"      # REQUEST, xid 0


def test_pd_list_written_as_c(agents: dict[str, Agent]) -> None:
    for k, a in agents.items():
        assert a.observed["pd_list"] == "%d:2001:db8:1::/48" % a.observed["aid"], k  # type: ignore
    assert agents["py"].observed["nb_prefix"] == agents["c"].observed["nb_prefix"] \
        == "2001:db8:1::/48"


def test_renew_after_t1_matches_c(agents: dict[str, Agent]) -> None:
    got = {k: a.observed["renew"] for k, a in agents.items()}
    assert got["c"] is not None and got["py"] is not None, got
    ours, theirs = _normalised(got["py"]), _normalised(got["c"])   # type: ignore[arg-type]
    assert ours == theirs, (ours.hex(), theirs.hex())
    assert theirs[:12] == SRV_MAC + GW_MAC and DUID in theirs and PREFIX in theirs
    for k, a in agents.items():
        assert _iaid(got[k]) == a.observed["aid"], k   # type: ignore[arg-type]


def test_rebind_after_t2_matches_c(agents: dict[str, Agent]) -> None:
    got = {k: a.observed["rebind"] for k, a in agents.items()}
    assert got["c"] is not None and got["py"] is not None, got
    ours, theirs = _normalised(got["py"]), _normalised(got["c"])   # type: ignore[arg-type]
    assert ours == theirs, (ours.hex(), theirs.hex())
    # the server is forgotten: multicast again, no SERVER_ID, the prefix still asked for
    assert theirs[:6] == bytes.fromhex("333300010002") and DUID not in theirs
    assert PREFIX in theirs


# ---------------------------------------------------------------- distributed router
# R1 without options:chassis, rp-public a distributed gateway port on hv1 (the
# state is kept by whoever has cr-rp-public), both router ports asking for a
# prefix: two states behind one gateway address, told apart by the IAID.
_GW_ROUTER = ["--", "set", "Logical_Router", "R1", "options:chassis=hv1"]
assert _NB[3:8] == _GW_ROUTER
_NB_DGP = _NB[:3] + _NB[8:] + ["--", "lrp-set-gateway-chassis", "rp-public", "hv1", "20",
            "--", "set", "Logical_Router_Port", "rp-public", "options:prefix=true"]
DGP_PORTS = {CMAC: ("rp-sw0", PREFIX),
             GW_MAC: ("rp-public", ipaddress.IPv6Address("2001:db8:2::").packed)}


def _serve(a: Agent, timeout: float = 90) -> None:
    """Act as the server for every state until each has its ipv6_ra_pd_list.
    With another state still soliciting, C re-sends a SOLICIT (fresh IAID)
    from REQUEST state too, so a REPLY can miss: then it starts over."""
    obs = a.observed
    replied: dict[str, set[int]] = {port: set() for port, _ in DGP_PORTS.values()}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lists = {port: a.pd_list(port) for port, _ in DGP_PORTS.values()}
        if all(lists.values()):
            break
        for cmac, (port, prefix) in DGP_PORTS.items():
            if lists[port]:
                continue
            solicits = a.frames(1, cmac=cmac)
            if not solicits:
                continue
            obs.setdefault("solicit-" + port, solicits[0])
            aid = _iaid(solicits[-1])
            mark = a.n_frames()
            a.inject(_server_frame(2, _client_id(cmac) + _opt(2, DUID)
                                   + _ia_pd(aid, 1800, 2880, prefix)))
            requests = _wait_for(lambda: [f for f in a.frames(3, mark, cmac)  # noqa: B023
                                          if _iaid(f) == aid], 1.5, 0.05)
            if requests:
                a.inject(_server_frame(7, _client_id(cmac) + _opt(2, DUID)
                                       + _ia_pd(aid, 1800, 2880, prefix)))
                obs.setdefault("request-" + port, requests[0])
                replied[port].add(aid)
        time.sleep(0.3)
    obs["lists"] = {port: a.pd_list(port) for port, _ in DGP_PORTS.values()}
    obs["replied"] = replied


@pytest.fixture(scope="module")
def dgp_agents() -> Iterator[dict[str, Agent]]:
    for made in side_by_side(lambda kind: Agent(kind, _NB_DGP), KINDS):
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(len(made)) as pool:
            list(pool.map(_serve, made.values()))
        yield made


def test_dgp_two_states_solicit_and_request_as_c(dgp_agents: dict[str, Agent]) -> None:
    for _cmac, (port, _prefix) in DGP_PORTS.items():
        for what in ("solicit-", "request-"):
            got = {k: a.observed.get(what + port) for k, a in dgp_agents.items()}
            assert got["c"] is not None and got["py"] is not None, (what + port, got)
            ours, theirs = _normalised(got["py"]), _normalised(got["c"])  # type: ignore
            assert ours == theirs, (what + port, ours.hex(), theirs.hex())


def test_dgp_pd_lists_as_c(dgp_agents: dict[str, Agent]) -> None:
    for k, a in dgp_agents.items():
        lists: dict[str, str] = a.observed["lists"]              # type: ignore[assignment]
        replied: dict[str, set[int]] = a.observed["replied"]     # type: ignore[assignment]
        for _cmac, (port, prefix) in DGP_PORTS.items():
            aid, _, rest = lists[port].partition(":")
            assert aid.isdigit() and int(aid) in replied[port], (k, port, lists[port])
            assert rest == ipaddress.IPv6Address(prefix).compressed + "/48", (k, lists[port])


def test_no_errors_logged_by_ours(agents: dict[str, Agent],
                                  dgp_agents: dict[str, Agent]) -> None:
    for made in (agents, dgp_agents):
        log = made["py"].box.run / "ovn-controller-py.log"
        bad = [line for line in log.read_text().splitlines()
               if "|ERR|" in line or "|EMER|" in line or "Traceback" in line]
        assert not bad, bad[:5]
