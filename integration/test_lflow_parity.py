"""Parity of controller.lflow.compile with the C ovn-controller, without daemons.

Every Logical_Flow of a reference SB snapshot is compiled in the compile
context the agent itself builds (``controller.nodes.logical_flow_output.
compile_context`` through ``controller.lflow.snapshot.context_from_snapshot``):
the chassis, br-int interfaces and bridge mappings of conf-ovs.txt, the runtime
data of one pass of the agent's binding (local datapaths, related ports,
residency), the outputs of its addr_sets, port_groups, template_vars,
dhcp_options and non_vif_data nodes, OVS features on.  The flows are
installed into an ofctrl DesiredFlowTable owned by lflow UUID
and resolved the way ofctrl resolves same-key flows, then rendered with
``Match.to_string`` / ``format_actions`` and compared with the C agent's
flows.raw.txt on the logical tables (8-36, 42-63).

Both sides are normalised the same way (recipe section 9): cookies and
statistics dropped; conjunction ids renamed ``C<i>`` by content (the ids the C
agent picks are hashes of UUIDs); group and meter ids replaced by their
ovn-controller names (group-table.txt / meter-table.txt for the C side, our
GroupTable/MeterTable for ours).  Conntrack zone constants do not occur in the logical
tables.

Run ``python -m integration.test_lflow_parity [--mode=cold|recompute|no-cache] [DIR]``
for per-table counts and the differing lines (DIR holds sb.db, flows.raw.txt,
conf-ovs.txt, group-table.txt, meter-table.txt; any of them may
be gzipped as ``<name>.gz``).
"""

from __future__ import annotations

import collections
import re
from pathlib import Path
from typing import Any

import pytest

from controller.lflow.actions import GroupTable, MeterTable, OvsFeatures
from controller.lflow.cache import LflowCache, LflowCacheConfig
from controller.lflow.compile import CompileContext, CompiledLflow, LflowCompiler, LflowError
from controller.lflow.snapshot import (
    OvsConf, SbSnapshot, context_from_snapshot, dumped_flow_lines, flow_table_of, read_text)
from ofctrl.desired import DesiredFlowTable
from ofctrl.flow import Flow
from ofctrl.installed import InstalledFlowTable, update_by_compare

REF_ROOT = Path("/work/shared/reference-data")
RICH = REF_ROOT / "rich"
SEED500 = REF_ROOT / "seed-500"
LOGICAL_TABLES = set(range(8, 37)) | set(range(42, 64))

pytestmark = pytest.mark.skipif(not RICH.is_dir(), reason="reference data absent")


# ----------------------------------------------------------------------
# Inputs

def _name_table(path: Path) -> dict[int, str]:
    """id -> name from `group-table-list` / `meter-table-list` output."""
    out: dict[int, str] = {}
    for line in read_text(path).splitlines():
        if ": " in line:
            name, _, num = line.rpartition(": ")
            out[int(num)] = name
    return out


class Compiled:
    __slots__ = ("flows", "errors", "compiler", "groups", "meters")

    def __init__(self, flows: list[Flow], errors: list[LflowError], compiler: LflowCompiler,
                 groups: GroupTable, meters: MeterTable) -> None:
        self.flows = flows
        self.errors = errors
        self.compiler = compiler
        self.groups = groups
        self.meters = meters


def compile_snapshot(data: Path, sb: SbSnapshot | None = None, mode: str = "cold") -> Compiled:
    """mode: "cold" (empty caches), "recompute" (a second full pass with the
    per-text memo and conjunction ids cleared, the lflow cache warm) or
    "no-cache" (ovn-enable-lflow-cache=false)."""
    sb = sb or SbSnapshot(data / "sb.db")
    groups, meters = GroupTable(), MeterTable()
    base = CompileContext(
        group_table=groups, meter_table=meters,
        features=OvsFeatures(ct_zero_snat=True, dp_hash_l4_sym=False, controller_meter=True))
    ctx = context_from_snapshot(sb, OvsConf.read(data / "conf-ovs.txt"), base)
    compiler = LflowCompiler(ctx, LflowCache(LflowCacheConfig(enabled=mode != "no-cache")))
    lflows = sb.table("Logical_Flow")
    if mode == "recompute":
        compiler.compile_all(lflows)
        compiler.clear_text_cache()
        ctx.conj_ids.clear()
    desired = DesiredFlowTable()
    errors: list[LflowError] = []
    for res in compiler.compile_all(lflows):
        if isinstance(res, CompiledLflow):
            res.install(desired)
        else:
            errors.append(res)
    installed = InstalledFlowTable()
    update_by_compare(desired, installed, lambda op, flow: None)
    return Compiled(list(installed.flows()), errors, compiler, groups, meters)


# ----------------------------------------------------------------------
# Normalisation (both sides)

_CONJ_ID = re.compile(r"conj_id=(\d+),")
_CONJ_ACT = re.compile(r"conjunction\((\d+),(\d+)/(\d+)\)")


def normalise(lines: list[str], group_names: dict[int, str],
              meter_names: dict[int, str]) -> list[str]:
    """Group/meter ids -> names, conjunction ids -> C<i> ranked by content."""
    out = []
    for line in lines:
        line = re.sub(r"group:(\d+)", lambda m: f"group:G({group_names.get(int(m.group(1)), m.group(1))})", line)
        line = re.sub(r"(meter:|meter_id=)(\d+)",
                      lambda m: f"{m.group(1)}M({meter_names.get(int(m.group(2)), m.group(2))})", line)
        out.append(line)
    sigs: dict[int, list[str]] = collections.defaultdict(list)
    for line in out:
        m = _CONJ_ID.search(line)
        if m:
            sigs[int(m.group(1))].append(line.replace(m.group(0), "", 1))
        match_text = line.split(" actions=")[0]
        for cm in _CONJ_ACT.finditer(line):
            sigs[int(cm.group(1))].append(f"{match_text}[{cm.group(2)}/{cm.group(3)}]")
    order = sorted(sigs, key=lambda cid: (sorted(sigs[cid]), cid))
    rename = {cid: f"C{i + 1}" for i, cid in enumerate(order)}
    result = []
    for line in out:
        line = _CONJ_ID.sub(lambda m: f"conj_id={rename[int(m.group(1))]},", line)
        if "conjunction(" in line:
            head, _, acts = line.partition(" actions=")
            parts = sorted(_CONJ_ACT.sub(lambda m: f"conjunction({rename[int(m.group(1))]},"
                                         f"{m.group(2)}/{m.group(3)})", a)
                           for a in acts.split("),"))
            line = head + " actions=" + "),".join(p.rstrip(")") for p in parts) + ")"
        result.append(line)
    return result


def expected_lines(data: Path) -> list[str]:
    lines = dumped_flow_lines(data / "flows.raw.txt", LOGICAL_TABLES)
    groups = _name_table(data / "group-table.txt")
    meters = _name_table(data / "meter-table.txt")
    return normalise(lines, groups, meters)


def flow_line(f: Flow) -> str:
    m = f.match.to_string()
    return f"table={f.table}, priority={f.priority}{',' + m if m else ''} actions={f.actions_string()}"


def actual_lines(c: Compiled) -> list[str]:
    lines = [flow_line(f) for f in c.flows if f.table in LOGICAL_TABLES]
    groups = {e.table_id: e.name for e in c.groups.desired.values()}
    meters = {e.table_id: e.name for e in c.meters.desired.values()}
    return normalise(lines, groups, meters)


def compare(data: Path = RICH, mode: str = "cold"
            ) -> tuple[dict[int, tuple[int, int, int]], list[str], list[str], Compiled]:
    c = compile_snapshot(data, mode=mode)
    exp = collections.Counter(expected_lines(data))
    act = collections.Counter(actual_lines(c))
    result: dict[int, tuple[int, int, int]] = {}
    for table in sorted(LOGICAL_TABLES):
        e = collections.Counter({k: v for k, v in exp.items() if flow_table_of(k) == table})
        a = collections.Counter({k: v for k, v in act.items() if flow_table_of(k) == table})
        if e or a:
            result[table] = (sum((e & a).values()), sum((e - a).values()), sum((a - e).values()))
    return result, sorted((exp - act).elements()), sorted((act - exp).elements()), c


def _report(result: dict[int, tuple[int, int, int]]) -> str:
    return "\n".join(f"table {t:2d}: identical {s:5d}  missing {m:4d}  extra {x:4d}"
                     for t, (s, m, x) in result.items())


@pytest.mark.parametrize("mode", ["cold", "recompute", "no-cache"])
def test_rich_lflow_parity(mode: str) -> None:
    result, missing, extra, c = compare(RICH, mode)
    print(_report(result))
    assert not c.errors, c.errors[:5]
    assert sum(r[0] for r in result.values()) > 900
    assert not missing and not extra, (missing[:10], extra[:10])
    if mode == "recompute":
        assert c.compiler.stats["cache_hits"] > 100


@pytest.mark.slow
def test_seed500_lflow_parity() -> None:
    result, missing, extra, c = compare(SEED500)
    print(_report(result))
    assert sum(r[0] for r in result.values()) > 100000
    assert not missing and not extra, (missing[:10], extra[:10])


def main(argv: list[str]) -> Any:
    mode = "cold"
    if argv and argv[0].startswith("--mode="):
        mode = argv.pop(0).split("=", 1)[1]
    target = Path(argv[0]) if argv else RICH
    result, missing, extra, c = compare(target, mode)
    print(_report(result))
    for err in c.errors[:20]:
        print("!", err)
    for line in missing:
        print("-", line)
    for line in extra:
        print("+", line)
    print(c.compiler.stats)


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
