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

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from integration.flow_corpus import REF, flow_texts, port_numbers
from integration.ofswitch import Vswitchd, flow_mod, send_flow_mods
from ofctrl.match import Match
from ofctrl.ofpacts import Action, encode_instructions, format_actions, parse_actions
from tests.ofctrl.test_ofpacts_ofprint import FLOWS

pytestmark = pytest.mark.integration


def _reference_flows(topology: str, filename: str, step: int) -> list[tuple[Match, list[Action]]]:
    ports = port_numbers(topology)
    return [(Match.parse(f.match, ports), parse_actions(f.actions, ports))
            for i, f in enumerate(flow_texts(REF / topology / filename)) if i % step == 0]


def _cases() -> list[tuple[Match, list[Action]]]:
    cases = _reference_flows("rich", "flows.raw.txt", 1)
    cases += _reference_flows("seed-500", "flows.raw.txt.gz", 400)
    cases += [(Match.parse(m), parse_actions(t)) for m, t in FLOWS]
    return cases


@pytest.fixture(scope="module")
def vswitchd() -> Iterator[Vswitchd]:
    if shutil.which("ovs-vswitchd") is None:
        pytest.fail("ovs-vswitchd is required for integration tests")
    with Vswitchd(bridge="br0", prefix="ofpacts-vswitchd-") as daemons:
        yield daemons


def _install(mgmt: Path, cases: list[tuple[Match, list[Action]]]) -> dict[int, bytes]:
    """Send every case as a flow_mod (cookie/priority = index + 1); errors by xid."""
    return send_flow_mods(mgmt, (
        flow_mod(1000 + i, i + 1, i + 1, m.encode(), encode_instructions(a))
        for i, (m, a) in enumerate(cases)))


def test_vswitchd_prints_our_actions(vswitchd: Vswitchd) -> None:
    cases = _cases()
    assert len(cases) > 1500
    # Objects the flows refer to must exist: groups, meters, the Geneve TLV.
    text = "\n".join(format_actions(a) for _, a in cases)
    vswitchd.ofctl("add-tlv-map", vswitchd.target,
                   "{class=0x102,type=0x80,len=4}->tun_metadata0")
    for gid in sorted({int(g) for g in re.findall(r"group:(\d+)", text)}):
        vswitchd.ofctl("add-group", vswitchd.target, f"group_id={gid},type=all")
    meters = {int(m) for m in re.findall(r"meter(?::|_id=)(\d+)", text)}
    for mid in sorted(meters):
        vswitchd.ofctl("add-meter", vswitchd.target, f"meter={mid},pktps,band=type=drop,rate=100")

    errors = _install(vswitchd.mgmt, cases)
    rejected = {format_actions(cases[xid - 1000][1])[:120]: body[:4].hex()
                for xid, body in errors.items()}
    assert not rejected, list(rejected.items())[:5]

    dump = vswitchd.ofctl("--no-stats", "dump-flows", vswitchd.target)
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
