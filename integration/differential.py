"""Differential flow comparison: the C ovn-controller vs ours on one SB snapshot.

Design note
-----------
A topology is built once in a sandbox with ovn-northd (:func:`build_snapshot`;
the local chassis ``hv1`` is created in the SB first, so northd resolves
gateway/HA chassis references to it as it would for a running agent), settled
with ``ovn-nbctl --wait=sb sync`` and saved with ``ovsdb-client backup``
(NB, SB, conf.db). :func:`run_differential` restores that snapshot into two
fresh sandboxes **without northd** (so the SB stays byte-identical), starts
the C agent in one and ours in the other (concurrently), waits for each with
the nb_cfg handshake (``wait_hv_sync``), then dumps br-int flows (``--names``),
groups, meters, the agent's ``ct-zone-list``, the SB datapath names and the
OVS port numbers, and normalises them (:mod:`integration.normalise`).
:class:`DifferentialResult` compares per table and names the Logical_Flow
behind each differing flow (cookie = first 32 bits of the lflow UUID).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from integration.normalise import (
    CanonicalDump, TableDiff, compare_flows, compare_lists, normalise, parse_ct_zones)
from integration.sandbox import Sandbox

Builder = Callable[[Sandbox], object]
LOCAL_CHASSIS = "hv1"


@dataclass
class Snapshot:
    """Saved databases of one built topology."""

    name: str
    nb: Path
    sb: Path
    conf: Path
    build_s: float = 0.0


def build_snapshot(name: str, builder: Builder, directory: str | Path) -> Snapshot:
    """Build a topology with northd, let it settle, save NB/SB/conf."""
    t0 = time.monotonic()
    with Sandbox(northd=True, chassis=LOCAL_CHASSIS) as box:
        box.sbctl("--may-exist", "chassis-add", LOCAL_CHASSIS, "geneve", "127.0.0.1")
        builder(box)
        box.nbctl("--wait=sb", "sync", timeout=600)
        files = box.backup(directory)
    return Snapshot(name, files["nb"], files["sb"], files["conf"], time.monotonic() - t0)


@dataclass
class AgentDump:
    """What one agent installed, raw and canonical."""

    kind: str
    canonical: CanonicalDump
    settle_s: float
    raw_flow_count: int
    raw: dict[str, str] = field(default_factory=dict)   # flows/groups/meters/zones dumps
    origins: dict[int, list[str]] = field(default_factory=dict)  # cookie -> SB rows
    learnt: list[str] = field(default_factory=list)     # MAC_Binding/FDB rows of its SB


def _port_numbers(box: Sandbox) -> dict[int, str]:
    out = json.loads(box.vsctl("--format=json", "--columns=name,ofport", "list", "Interface"))
    ports: dict[int, str] = {}
    for name, ofport in out["data"]:
        if isinstance(ofport, int) and ofport > 0:
            ports[ofport] = name
    return ports


def datapath_names(box: Sandbox) -> dict[str, str]:
    """SB Datapath_Binding uuid -> external_ids:name (or name2 / the uuid)."""
    out = json.loads(box.sbctl("--format=json", "--columns=_uuid,external_ids",
                               "list", "Datapath_Binding"))
    names: dict[str, str] = {}
    for (_, uuid), (_, pairs) in out["data"]:
        ext = dict(pairs)
        names[uuid] = ext.get("name") or ext.get("name2") or uuid
    return names


# SB tables whose row UUIDs become flow cookies, with the columns that name a row.
_COOKIE_SOURCES: tuple[tuple[str, str], ...] = (
    ("Port_Binding", "logical_port,type"),
    ("MAC_Binding", "logical_port,ip,mac"),
    ("Static_MAC_Binding", "logical_port,ip,mac"),
    ("Multicast_Group", "name,tunnel_key"),
    ("Datapath_Binding", "tunnel_key,external_ids"),
)
# Rows the agents themselves write into the SB (learnt state): if these differ
# between the two sandboxes, so did the agents' inputs.
LEARNT_TABLES: tuple[tuple[str, str], ...] = (
    ("MAC_Binding", "logical_port,ip,mac"),
    ("FDB", "mac,dp_key,port_key"),
)


def _sb_json(box: Sandbox, table: str, columns: str) -> list[list[Any]]:
    out = json.loads(box.sbctl("--format=json", f"--columns={columns}", "list", table))
    return list(out["data"])


def _cell(value: object) -> str:
    if isinstance(value, list) and len(value) == 2 and value[0] in ("uuid", "set", "map"):
        if value[0] == "map":
            pairs = value[1] if isinstance(value[1], list) else []
            return "{" + ",".join(f"{k}={v}" for k, v in pairs) + "}"
        if value[0] == "set":
            items = value[1] if isinstance(value[1], list) else []
            return "[" + ",".join(_cell(x) for x in items) + "]"
        return str(value[1])[:8]
    return str(value)


def lflows_by_cookie(box: Sandbox) -> dict[int, list[str]]:
    """cookie (first 32 bits of a row uuid) -> short descriptions of the SB rows:
    Logical_Flows, and the Port_Binding/MAC_Binding/... rows physical flows use."""
    by_cookie: dict[int, list[str]] = {}
    for (_, uuid), pipeline, table, priority, match, actions in _sb_json(
            box, "Logical_Flow", "_uuid,pipeline,table_id,priority,match,actions"):
        text = (f"lflow {str(uuid)[:8]} {pipeline} table={table} prio={priority} "
                f"match=({match}) actions=({actions})")
        by_cookie.setdefault(int(str(uuid)[:8], 16), []).append(text)
    for table, columns in _COOKIE_SOURCES:
        for (_, uuid), *values in _sb_json(box, table, "_uuid," + columns):
            text = f"{table} {str(uuid)[:8]} " + " ".join(_cell(v) for v in values)
            by_cookie.setdefault(int(str(uuid)[:8], 16), []).append(text)
    return by_cookie


def learnt_rows(box: Sandbox) -> list[str]:
    """The SB rows agents write from what they learn (MAC_Binding, FDB)."""
    rows: list[str] = []
    for table, columns in LEARNT_TABLES:
        for values in _sb_json(box, table, columns):
            rows.append(f"{table} " + " ".join(_cell(v) for v in values))
    return sorted(rows)


def dump_agent(box: Sandbox, kind: str, settle_s: float) -> AgentDump:
    """Dump and normalise br-int of a sandbox whose agent has settled."""
    flows = box.ofctl("--no-stats", "--names", "dump-flows", "br-int")
    groups = box.ofctl("--names", "dump-groups", "br-int")
    meters = box.ofctl("dump-meters", "br-int")
    zones = parse_ct_zones(box.appctl("controller", "ct-zone-list"))
    canonical = normalise(flows, groups, meters, zones, datapath_names(box), _port_numbers(box))
    return AgentDump(kind, canonical, settle_s, len(canonical.flows),
                     {"flows": flows, "groups": groups, "meters": meters,
                      "ct-zones": "\n".join(f"{k} {v}" for k, v in zones.items())})


def _run_one(snapshot: Snapshot, kind: str, timeout: float,
             boxes: list[Sandbox], after_settle: Callable[[Sandbox], None] | None
             ) -> AgentDump:
    box = Sandbox.from_snapshot(snapshot.nb, snapshot.sb, snapshot.conf, northd=False,
                                chassis=LOCAL_CHASSIS)
    boxes.append(box)
    t0 = time.monotonic()
    box.start_controller(kind)
    box.wait_hv_sync(timeout=timeout)
    if after_settle is not None:
        after_settle(box)
        box.wait_hv_sync(timeout=timeout)
    settle = time.monotonic() - t0
    dump = dump_agent(box, kind, settle)
    dump.origins = lflows_by_cookie(box)
    dump.learnt = learnt_rows(box)
    return dump


@dataclass
class DifferentialResult:
    """Canonical dumps of both agents and their per-table comparison."""

    topology: str
    ours: AgentDump
    theirs: AgentDump
    tables: dict[int, TableDiff]
    groups_only_ours: list[str]
    groups_only_theirs: list[str]
    meters_only_ours: list[str]
    meters_only_theirs: list[str]
    elapsed_s: float = 0.0

    @property
    def identical(self) -> int:
        return sum(t.identical for t in self.tables.values())

    @property
    def only_ours(self) -> int:
        return sum(len(t.only_ours) for t in self.tables.values())

    @property
    def only_theirs(self) -> int:
        return sum(len(t.only_theirs) for t in self.tables.values())

    @property
    def ok(self) -> bool:
        return not (self.only_ours or self.only_theirs or self.groups_only_ours
                    or self.groups_only_theirs or self.meters_only_ours
                    or self.meters_only_theirs)

    def summary(self) -> str:
        verdict = "IDENTICAL" if self.ok else "DIFFERENT"
        return (f"{self.topology}: {verdict}: {self.identical} identical flows, "
                f"{self.only_ours} only ours, {self.only_theirs} only C; groups "
                f"{len(self.ours.canonical.groups)} (+{len(self.groups_only_ours)}/"
                f"-{len(self.groups_only_theirs)}), meters {len(self.ours.canonical.meters)} "
                f"(+{len(self.meters_only_ours)}/-{len(self.meters_only_theirs)}); "
                f"settled C {self.theirs.settle_s:.1f}s, ours {self.ours.settle_s:.1f}s")

    def _origin(self, line: str, dump: AgentDump) -> str:
        cookies = dump.canonical.cookies.get(line, [])
        parts: list[str] = []
        for cookie in sorted(set(cookies)):
            if cookie == 0:
                parts.append("physical flow (cookie 0)")
            else:
                parts.extend(dump.origins.get(cookie, [f"cookie {cookie:#x} (no SB row)"]))
        return "; ".join(parts) if parts else "?"

    def report(self, limit: int = 20) -> str:
        lines = [self.summary(), "per table (identical / only ours / only C):"]
        for t in self.tables.values():
            mark = "" if not (t.only_ours or t.only_theirs) else "   <-- differs"
            lines.append(f"  table {t.table:3d}: {t.identical:6d} / {len(t.only_ours):4d} / "
                         f"{len(t.only_theirs):4d}{mark}")
        for title, dump, pick in (("only ours", self.ours, "only_ours"),
                                  ("only C", self.theirs, "only_theirs")):
            diff = [ln for t in self.tables.values() for ln in getattr(t, pick)]
            if not diff:
                continue
            lines.append(f"first {min(limit, len(diff))} of {len(diff)} flows {title}:")
            for ln in diff[:limit]:
                lines.append(f"  {ln}")
                lines.append(f"      <- {self._origin(ln, dump)}")
        learnt_ours = sorted(set(self.ours.learnt) - set(self.theirs.learnt))
        learnt_theirs = sorted(set(self.theirs.learnt) - set(self.ours.learnt))
        if learnt_ours or learnt_theirs:
            lines.append("NOTE: the agents' SB inputs diverged (rows learnt by one agent):")
        for title, items in (("learnt SB rows only in our sandbox", learnt_ours),
                             ("learnt SB rows only in the C sandbox", learnt_theirs),
                             ("groups only ours", self.groups_only_ours),
                             ("groups only C", self.groups_only_theirs),
                             ("meters only ours", self.meters_only_ours),
                             ("meters only C", self.meters_only_theirs)):
            if items:
                lines.append(f"{title}:")
                lines.extend(f"  {x}" for x in items[:limit])
        return "\n".join(lines)


def compare_dumps(topology: str, ours: AgentDump, theirs: AgentDump) -> DifferentialResult:
    g_ours, g_theirs = compare_lists(ours.canonical.groups, theirs.canonical.groups)
    m_ours, m_theirs = compare_lists(ours.canonical.meters, theirs.canonical.meters)
    return DifferentialResult(topology, ours, theirs,
                              compare_flows(ours.canonical.flows, theirs.canonical.flows),
                              g_ours, g_theirs, m_ours, m_theirs)


def run_differential(snapshot: Snapshot, timeout: float = 300.0, concurrent: bool = True,
                     after_settle: Callable[[Sandbox], None] | None = None
                     ) -> DifferentialResult:
    """Replay `snapshot` under the C agent and ours (northd off) and compare.

    `after_settle(box)`, if given, runs in both sandboxes once the agent has
    settled (an incremental change, e.g. unbinding a VIF); the dump follows
    the next nb_cfg handshake."""
    t0 = time.monotonic()
    boxes: list[Sandbox] = []
    try:
        if concurrent:
            with ThreadPoolExecutor(max_workers=2) as pool:
                fut_c = pool.submit(_run_one, snapshot, "c", timeout, boxes, after_settle)
                fut_py = pool.submit(_run_one, snapshot, "py", timeout, boxes, after_settle)
                theirs = fut_c.result()
                ours = fut_py.result()
        else:
            theirs = _run_one(snapshot, "c", timeout, boxes, after_settle)
            ours = _run_one(snapshot, "py", timeout, boxes, after_settle)
    finally:
        for box in boxes:
            box.stop()
    result = compare_dumps(snapshot.name, ours, theirs)
    result.elapsed_s = time.monotonic() - t0
    return result
