"""IGMP/MLD snooping and querier: our agent against the C agent.

Both agents run at once, each in its own sandbox with northd and the same
topology: switch sw with ``mcast_snoop``, ``mcast_querier`` (eth/IPv4/IPv6
sources set), ``mcast_query_interval`` 2 s and ``mcast_idle_timeout`` 15 s
(the minimum), three VIFs bound here capturing what they send out.

Checked:
* the periodic IGMPv3 and MLDv2 general queries: every byte, against each
  other and against the frames the config implies; the gaps between sends
  stay within the interval +- a scheduling tolerance (C's own schedule);
* reports (IGMPv1/v2/v3, MLDv1/v2) from two ports and a query from a third,
  injected with ``netdev-dummy/receive``: the IGMP_Group rows (address,
  datapath, chassis, ports by name, the ``mrouters`` row) of both agents are
  the same and the expected ones; the reports re-injected to
  _MC_mrouter_flood reach sw-p3 (``mcast_flood_reports``) byte-identical
  under both (the query's _MC_flood_l2 re-injection reaches no VIF under
  either agent in this topology);
* a leave deletes its row, and the remaining groups age out idle_timeout
  after the last report under both agents (loose bound; expiry has 1 s
  granularity in C);
* ``ovn-sbctl ip-multicast-flush`` (seq_no + 1) leaves only an empty
  ``mrouters`` row; an invalid ``mcast_ip4_src`` stops the IGMP queries but
  not the MLD ones, ``mcast_querier=false`` stops both, re-enabling resumes;
* bad IGMP / MLD checksums: the same two warnings under both, no row;
* ``exit`` deletes every IGMP_Group row (northd stopped first, so only the
  agent can have deleted them).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from controller.pinctrl.mcast import igmp_query, mld_query
from integration.mcast_frames import (
    IGMP_LEAVE, IGMP_QUERY, IGMPV1_REPORT, IGMPV2_REPORT, MLD_REPORT, igmp_v2_frame,
    igmp_v3_report_frame, mld_v1_frame, mld_v2_report_frame)
from integration.pinctrl_harness import read_pcap_records, side_by_side
from integration.sandbox import Sandbox

pytestmark = pytest.mark.integration

KINDS = ("c", "py")
QUERY_S, IDLE_S = 2, 15
TOLERANCE_S = 0.5
ETH_SRC, IP4_SRC, IP6_SRC = "0a:00:00:00:00:fe", "10.0.0.254", "fe80::fe"
PORTS = {"vif1": ("sw-p1", "0a:00:00:00:00:01", "10.0.0.1", "fe80::1"),
         "vif2": ("sw-p2", "0a:00:00:00:00:02", "10.0.0.2", "fe80::2"),
         "vif3": ("sw-p3", "0a:00:00:00:00:03", "10.0.0.3", "fe80::3")}

_NB = ["--", "ls-add", "sw",
       "--", "set", "Logical_Switch", "sw", "other_config:mcast_snoop=true",
       "other_config:mcast_querier=true", f"other_config:mcast_eth_src={ETH_SRC}",
       f"other_config:mcast_ip4_src={IP4_SRC}", f'other_config:mcast_ip6_src="{IP6_SRC}"',
       f"other_config:mcast_query_interval={QUERY_S}",
       f"other_config:mcast_idle_timeout={IDLE_S}"]
for _lsp, _mac, _ip, _ip6 in PORTS.values():
    _NB += ["--", "lsp-add", "sw", _lsp, "--", "lsp-set-addresses", _lsp, f"{_mac} {_ip} {_ip6}"]
_NB += ["--", "set", "Logical_Switch_Port", "sw-p3", "options:mcast_flood_reports=true"]

IGMP_Q = igmp_query(bytes.fromhex(ETH_SRC.replace(":", "")), bytes((10, 0, 0, 254)), 1)
MLD_Q = mld_query(bytes.fromhex(ETH_SRC.replace(":", "")),
                  bytes.fromhex("fe80" + "00" * 13 + "fe"), 1)


def _is_igmp_query(f: bytes) -> bool:
    return f[:6] == bytes.fromhex("01005e000001") and f[12:14] == b"\x08\x00" \
        and len(f) > 34 and f[23] == 2 and f[34] == 0x11


def _is_mld_query(f: bytes) -> bool:
    return f[:6] == bytes.fromhex("333300000000") and f[12:14] == b"\x86\xdd"


class Agent:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.box = Sandbox(northd=True)

    def setup(self) -> None:
        self.box.start()
        self.box.nbctl("--no-wait", *_NB)
        for i, (vif, (lsp, *_rest)) in enumerate(PORTS.items(), start=1):
            self.box.bind_vif(vif, lsp, ofport=i, pcap=True)
        self.box.nbctl("--wait=sb", "sync")

    def sent(self, vif: str) -> list[tuple[float, bytes]]:
        return read_pcap_records(self.box.run / f"{vif}-tx.pcap")

    def inject(self, vif: str, *frames: bytes) -> None:
        for f in frames:
            self.box.appctl("ovs-vswitchd", "netdev-dummy/receive", vif, f.hex())

    def groups(self) -> set[tuple[str, str, str, tuple[str, ...]]]:
        """IGMP_Group rows as (address, datapath name, chassis name, port names)."""
        def get(table: str, cols: str) -> list[dict[str, Any]]:
            out = json.loads(self.box.sbctl("--format=json", f"--columns=_uuid,{cols}",
                                            "list", table))
            return [dict(zip(out["headings"], row, strict=True)) for row in out["data"]]

        def ref(cell: Any) -> list[str]:
            if cell[0] == "uuid":
                return [cell[1]]
            return [v[1] for v in cell[1]]

        pbs = {r["_uuid"][1]: r["logical_port"] for r in get("Port_Binding", "logical_port")}
        dps = {r["_uuid"][1]: dict(r["external_ids"][1]).get("name", "?")
               for r in get("Datapath_Binding", "external_ids")}
        chs = {r["_uuid"][1]: r["name"] for r in get("Chassis", "name")}
        rows = set()
        for r in get("IGMP_Group", "address,datapath,chassis,ports"):
            rows.add((r["address"], ",".join(dps.get(u, u) for u in ref(r["datapath"])),
                      ",".join(chs.get(u, u) for u in ref(r["chassis"])),
                      tuple(sorted(pbs.get(u, u) for u in ref(r["ports"])))))
        return rows


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, Agent]]:
    yield from side_by_side(Agent, KINDS)


def _wait(pred: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.2)
    return pred()


def test_queries_match_c_and_keep_the_interval(agents: dict[str, Agent]) -> None:
    def enough() -> bool:
        return all(len([1 for _, f in a.sent("vif1") if _is_igmp_query(f)]) >= 4
                   for a in agents.values())
    assert _wait(enough, 4 * QUERY_S + 20)
    for kind, a in agents.items():
        for vif in PORTS:
            sent = a.sent(vif)
            igmp = [(t, f) for t, f in sent if _is_igmp_query(f)]
            mld = [(t, f) for t, f in sent if _is_mld_query(f)]
            assert {f for _, f in igmp} == {IGMP_Q}, (kind, vif, [f.hex() for _, f in igmp])
            assert {f for _, f in mld} == {MLD_Q}, (kind, vif, [f.hex() for _, f in mld])
            for series in (igmp, mld):
                times = [t for t, _ in series]
                gaps = [round(t1 - t0, 3) for t0, t1 in zip(times, times[1:])]
                print(f"{kind} {vif} query gaps (s): {gaps}")
                assert len(times) >= 3, (kind, vif, times)
                for t0, t1 in zip(times, times[1:]):
                    assert QUERY_S - TOLERANCE_S <= t1 - t0 <= QUERY_S + TOLERANCE_S, \
                        (kind, vif, times)


def _non_queries(a: Agent, vif: str, since: int) -> list[str]:
    return [f.hex() for _, f in a.sent(vif)[since:]
            if not _is_igmp_query(f) and not _is_mld_query(f)]


WANT = {("239.1.1.1", "sw", "hv1", ("sw-p1", "sw-p2")),
        ("239.1.1.2", "sw", "hv1", ("sw-p1",)),
        ("239.1.1.4", "sw", "hv1", ("sw-p2",)),
        ("239.1.1.5", "sw", "hv1", ("sw-p2",)),
        ("ff0e::1", "sw", "hv1", ("sw-p1",)),
        ("ff0e::2", "sw", "hv1", ("sw-p2",)),
        ("mrouters", "sw", "hv1", ("sw-p3",))}


def test_reports_make_the_same_igmp_group_rows(agents: dict[str, Agent]) -> None:
    _, m1, ip1, ip61 = PORTS["vif1"]
    _, m2, ip2, ip62 = PORTS["vif2"]
    _, m3, ip3, _ = PORTS["vif3"]
    marks = {k: {v: len(a.sent(v)) for v in PORTS} for k, a in agents.items()}
    for a in agents.values():
        a.inject("vif1", igmp_v2_frame(m1, ip1, IGMPV2_REPORT, "239.1.1.1"),
                 igmp_v3_report_frame(m1, ip1, [(2, "239.1.1.2", []), (1, "239.1.1.3", [])]),
                 mld_v1_frame(m1, ip61, MLD_REPORT, "ff0e::1"))
        a.inject("vif2", igmp_v2_frame(m2, ip2, IGMPV1_REPORT, "239.1.1.1"),
                 igmp_v2_frame(m2, ip2, IGMPV2_REPORT, "239.1.1.4"),
                 mld_v2_report_frame(m2, ip62, [(4, "ff0e::2", []), (3, "ff0e::3", [])]),
                 igmp_v3_report_frame(m2, ip2, [(4, "239.1.1.5", [])], router_alert=True))
        a.inject("vif3", igmp_v2_frame(m3, ip3, IGMP_QUERY, "0.0.0.0", max_resp=100))
    assert _wait(lambda: all(a.groups() == WANT for a in agents.values()), 30), \
        {k: sorted(a.groups()) for k, a in agents.items()}
    time.sleep(1.0)
    assert agents["py"].groups() == agents["c"].groups() == WANT
    # reports re-injected to _MC_mrouter_flood reach sw-p3 (mcast_flood_reports)
    fwd = {k: {v: _non_queries(a, v, marks[k][v]) for v in PORTS} for k, a in agents.items()}
    assert fwd["py"] == fwd["c"], fwd
    assert len(fwd["c"]["vif3"]) == 7, fwd


def test_leave_deletes_and_groups_age_out(agents: dict[str, Agent]) -> None:
    _, m1, ip1, _ = PORTS["vif1"]
    _, m2, ip2, _ = PORTS["vif2"]
    for a in agents.values():
        a.inject("vif1", igmp_v2_frame(m1, ip1, IGMP_LEAVE, "239.1.1.2"))
        a.inject("vif2", igmp_v2_frame(m2, ip2, IGMP_LEAVE, "239.1.1.1"))
    want = (WANT - {("239.1.1.2", "sw", "hv1", ("sw-p1",)),
                    ("239.1.1.1", "sw", "hv1", ("sw-p1", "sw-p2"))}) \
        | {("239.1.1.1", "sw", "hv1", ("sw-p1",))}
    assert _wait(lambda: all(a.groups() == want for a in agents.values()), 10), \
        {k: sorted(a.groups()) for k, a in agents.items()}
    start = time.monotonic()
    only_mrouters = {("mrouters", "sw", "hv1", ("sw-p3",))}
    gone: dict[str, float] = {}

    def aged() -> bool:
        for k, a in agents.items():
            if k not in gone and a.groups() == only_mrouters:
                gone[k] = time.monotonic() - start
        return len(gone) == len(agents)
    assert _wait(aged, IDLE_S + 30), {k: sorted(a.groups()) for k, a in agents.items()}
    print(f"groups gone after the leave (s): {gone}")
    for kind, after in gone.items():
        # reports were injected before the leave; expiry has 1 s granularity
        assert after <= IDLE_S + 5, (kind, gone)


def test_ip_multicast_flush_empties_the_rows(agents: dict[str, Agent]) -> None:
    _, m1, ip1, _ = PORTS["vif1"]
    joined = ("239.5.5.5", "sw", "hv1", ("sw-p1",))
    for a in agents.values():
        a.inject("vif1", igmp_v2_frame(m1, ip1, IGMPV2_REPORT, "239.5.5.5"))
    assert _wait(lambda: all(joined in a.groups() for a in agents.values()), 10), \
        {k: sorted(a.groups()) for k, a in agents.items()}
    for a in agents.values():
        a.box.sbctl("ip-multicast-flush", "sw")        # IP_Multicast.seq_no + 1
    want = {("mrouters", "sw", "hv1", ())}            # the flush drops mrouter ports too
    assert _wait(lambda: all(a.groups() == want for a in agents.values()), 10), \
        {k: sorted(a.groups()) for k, a in agents.items()}


def _queries_since(a: Agent, since: float) -> tuple[int, int]:
    sent = [f for t, f in a.sent("vif1") if t > since]
    return sum(map(_is_igmp_query, sent)), sum(map(_is_mld_query, sent))


def test_querier_config_changes_act_alike(agents: dict[str, Agent]) -> None:
    for a in agents.values():
        a.box.nbctl("--wait=sb", "set", "Logical_Switch", "sw",
                    "other_config:mcast_ip4_src=bogus")
    time.sleep(1.0)
    since = time.time()
    time.sleep(3 * QUERY_S + 1)
    counts = {k: _queries_since(a, since) for k, a in agents.items()}
    for kind, (n4, n6) in counts.items():     # IPv4 querier off, MLD goes on
        assert n4 == 0 and n6 >= 3, counts
    # the same warning, module and level under both (rate-limited: at least once)
    warned = {k: {ln.split("|", 2)[-1] for ln in a.box.log_tail(lines=400).splitlines()
                  if "Querier" in ln} for k, a in agents.items()}
    assert warned["py"] == warned["c"] == \
        {"pinctrl|WARN|IGMP Querier enabled with invalid IPv4 src address"}, warned
    for a in agents.values():
        a.box.nbctl("--wait=sb", "set", "Logical_Switch", "sw",
                    "other_config:mcast_querier=false")
    time.sleep(1.0)
    since = time.time()
    time.sleep(2 * QUERY_S + 1)
    counts = {k: _queries_since(a, since) for k, a in agents.items()}
    assert counts == {"c": (0, 0), "py": (0, 0)}, counts
    for a in agents.values():
        a.box.nbctl("--wait=sb", "set", "Logical_Switch", "sw",
                    "other_config:mcast_querier=true", f"other_config:mcast_ip4_src={IP4_SRC}")
    since = time.time()
    assert _wait(lambda: all(min(_queries_since(a, since)) >= 1 for a in agents.values()),
                 2 * QUERY_S + 5), {k: _queries_since(a, since) for k, a in agents.items()}


def test_bad_checksums_are_warned_and_dropped_alike(agents: dict[str, Agent]) -> None:
    _, m1, ip1, ip61 = PORTS["vif1"]
    bad4 = bytearray(igmp_v2_frame(m1, ip1, IGMPV2_REPORT, "239.7.7.7"))
    bad4[-5] ^= 0xFF                                   # IGMP checksum byte
    bad6 = bytearray(mld_v1_frame(m1, ip61, MLD_REPORT, "ff0e::77"))
    bad6[-1] ^= 0x01                                   # group address
    for a in agents.values():
        a.inject("vif1", bytes(bad4), bytes(bad6))
    want = {"pinctrl(ovn_pinctrlN)|WARN|multicast snooping received bad IGMP checksum",
            "pinctrl(ovn_pinctrlN)|WARN|multicast snooping received bad MLD checksum"}

    def warned(a: Agent) -> set[str]:
        # C's thread number comes from a process-wide counter of started
        # threads (0 or 1 from run to run): free, normalised
        return {re.sub(r"\(ovn_pinctrl\d+\)", "(ovn_pinctrlN)", ln.split("|", 2)[-1])
                for ln in a.box.log_tail(lines=400).splitlines()
                if "bad IGMP" in ln or "bad MLD" in ln}
    assert _wait(lambda: all(warned(a) == want for a in agents.values()), 10), \
        {k: warned(a) for k, a in agents.items()}
    time.sleep(1.0)
    for kind, a in agents.items():
        assert not any(g[0] in ("239.7.7.7", "ff0e::77") for g in a.groups()), kind


def test_exit_deletes_every_igmp_group_row(agents: dict[str, Agent]) -> None:
    _, m2, ip2, _ = PORTS["vif2"]
    joined = ("239.6.6.6", "sw", "hv1", ("sw-p2",))
    for a in agents.values():
        a.inject("vif2", igmp_v2_frame(m2, ip2, IGMPV2_REPORT, "239.6.6.6"))
    assert _wait(lambda: all(joined in a.groups() for a in agents.values()), 10), \
        {k: sorted(a.groups()) for k, a in agents.items()}
    for a in agents.values():
        a.box.stop_daemon("northd")      # else northd deletes rows whose chassis went
        a.box.appctl("controller", "exit")
    assert _wait(lambda: not any(a.box.controller_alive() for a in agents.values()), 30)
    assert {k: a.groups() for k, a in agents.items()} == {"c": set(), "py": set()}
