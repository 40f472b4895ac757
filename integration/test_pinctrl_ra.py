"""Periodic IPv6 RAs (ipv6_ra_configs send_periodic=true): our agent against
the C agent.

Both agents run at once, each in its own sandbox with northd and the same
topology (the upstream "IPv6 periodic RA" shape): router ro with port ro-sw
(00:00:00:00:00:01, aef0::1/64 and fd0f::1/48) on switch sw, one VIF sw-p1
bound here capturing what it receives.  The RA is injected into sw-ro (the
router port's peer), flagged local-only, and flooded to sw-p1.

Checked: the RA frames each agent sends, byte for byte (checksum included),
against each other and against the frame the options imply; the gaps between
sends stay in [min, max] = [3, 4] s (plus a small scheduling tolerance); an NB
change of the RA options (address mode) changes the frame of both agents alike.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from integration.pinctrl_harness import read_pcap_records, side_by_side
from integration.sandbox import Sandbox

pytestmark = pytest.mark.integration

KINDS = ("c", "py")
MIN_S, MAX_S = 3, 4
TOLERANCE_S = 0.3
RA_CONFIGS = {"send_periodic": "true", "address_mode": "dhcpv6_stateless",
              "max_interval": str(MAX_S), "min_interval": str(MIN_S), "mtu": "1500",
              "rdnss": "aef0::11", "dnssl": "aa.bb.cc", "router_preference": "HIGH",
              "route_info": "HIGH-aef1::11/48,LOW-aef2::11/96"}

_NB = [
    "--", "lr-add", "ro",
    "--", "lrp-add", "ro", "ro-sw", "00:00:00:00:00:01", "aef0::1/64", "fd0f::1/48",
    "--", "ls-add", "sw",
    "--", "lsp-add", "sw", "sw-ro", "--", "lsp-set-type", "sw-ro", "router",
    "--", "lsp-set-addresses", "sw-ro", "00:00:00:00:00:01",
    "--", "lsp-set-options", "sw-ro", "router-port=ro-sw",
    "--", "lsp-add", "sw", "sw-p1",
    "--", "lsp-set-addresses", "sw-p1", "00:00:00:00:00:02 aef0::200:ff:fe00:2",
    "--", "set", "Logical_Router_Port", "ro-sw",
    *[f"ipv6_ra_configs:{k}={v}" for k, v in RA_CONFIGS.items()],
]


def _is_ra(frame: bytes) -> bool:
    return len(frame) >= 58 and frame[:6] == bytes.fromhex("333300000001") \
        and frame[12:14] == b"\x86\xdd" and frame[20] == 58 and frame[54] == 134


class Agent:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.box = Sandbox(northd=True)

    def setup(self) -> None:
        self.box.start()
        self.box.nbctl("--no-wait", *_NB)
        self.box.bind_vif("vif1", "sw-p1", ofport=1, pcap=True)
        self.box.nbctl("--wait=sb", "sync")

    def sends(self) -> list[tuple[float, bytes]]:
        return [(ts, f) for ts, f in read_pcap_records(self.box.run / "vif1-tx.pcap")
                if _is_ra(f)]


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, Agent]]:
    yield from side_by_side(Agent, KINDS)


def _wait(agents: dict[str, Agent], n: int, timeout: float,
          frame: bytes | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(len([f for _, f in a.sends() if frame is None or f == frame]) >= n
               for a in agents.values()):
            return
        time.sleep(0.2)


def _expected(mode_flags: int, la_flags: int) -> bytes:
    from controller.pinctrl.ra import ra_frame
    mac = bytes.fromhex("000000000001")
    lla = bytes.fromhex("fe80000000000000020000fffe000001")
    prefixes = [(bytes.fromhex("aef00000000000000000000000000000"), 64),
                (bytes.fromhex("fd0f0000000000000000000000000000"), 48)]
    return ra_frame(mac, lla, mode_flags, la_flags, 1500, prefixes,
                    bytes.fromhex("aef00000000000000000000000000011"), "aa.bb.cc",
                    "HIGH-aef1::11/48,LOW-aef2::11/96")


def test_ra_frames_match_c_and_keep_the_interval(agents: dict[str, Agent]) -> None:
    _wait(agents, 3, timeout=3 * MAX_S + 10)
    sends = {kind: a.sends() for kind, a in agents.items()}
    frames = {kind: {f for _, f in s} for kind, s in sends.items()}
    assert len(frames["c"]) == 1, [f.hex() for f in frames["c"]]
    assert frames["py"] == frames["c"], ([f.hex() for f in frames["py"]],
                                         [f.hex() for f in frames["c"]])
    assert frames["c"] == {_expected(0x40 | 0x08, 0xC0)}       # O + HIGH; L + A
    for kind, s in sends.items():
        times = [ts for ts, _ in s]
        assert len(times) >= 3, (kind, times)
        for a, b in zip(times, times[1:]):
            assert MIN_S - TOLERANCE_S <= b - a <= MAX_S + TOLERANCE_S, (kind, times)


def test_address_mode_change_changes_the_frame(agents: dict[str, Agent]) -> None:
    for a in agents.values():
        a.box.nbctl("--wait=sb", "set", "Logical_Router_Port", "ro-sw",
                    "ipv6_ra_configs:address_mode=dhcpv6_stateful")
    want = _expected(0x80 | 0x08, 0x80)                       # M + HIGH; L only
    _wait(agents, 1, timeout=2 * MAX_S + 5, frame=want)
    for kind, a in agents.items():
        assert want in {f for _, f in a.sends()}, kind
