"""Differential check against the real ovn-controller 23.03.1.

For every logical flow of the "rich" reference topology
(/work/shared/reference-data/rich: SB snapshot + the br-int flows the C agent
installed) the actions are parsed and encoded with the parameters the agent
uses (output table 37/64, router vs switch zones, controller meters, group
and meter tables, OVS features that the sandbox's OVS supports) and compared
with the actions of every OpenFlow flow carrying that logical flow's cookie.
Group and meter ids are compared through their names (group-table.txt /
meter-table.txt), since allocation order differs.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from typing import Any
from uuid import UUID

import pytest

REF_ROOT = "/work/shared/reference-data"
REF = os.path.join(REF_ROOT, "rich")

pytestmark = pytest.mark.skipif(not os.path.isdir(REF), reason="reference data absent")


def _open(ref: str, name: str) -> Any:
    path = os.path.join(ref, name)
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _sb(ref: str = REF) -> dict[str, dict[str, Any]]:
    with _open(ref, "sb.db") as f:
        records = [ln for ln in f.read().split("\n") if ln.startswith("{")]
    data: dict[str, dict[str, Any]] = {}
    for rec in records[1:]:
        for table, rows in json.loads(rec).items():
            if isinstance(rows, dict):
                data.setdefault(table, {}).update(rows)
    return data


def _atom_set(v: Any) -> list[Any]:
    if isinstance(v, list) and v and v[0] == "set":
        return list(v[1])
    return [v]


def _uuid(v: Any) -> str | None:
    items = [x for x in _atom_set(v) if x]
    return items[0][1] if items else None


def _map(v: Any) -> dict[str, str]:
    return dict(v[1]) if isinstance(v, list) and v and v[0] == "map" else {}


def _name_table(ref: str, fname: str) -> dict[str, int]:
    out = {}
    with _open(ref, fname) as f:
        for line in f:
            line = line.rstrip("\n")
            if ": " in line:
                name, _, num = line.rpartition(": ")
                out[name] = int(num)
    return out


def _real_flow_actions(ref: str) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    with _open(ref, "flows.raw.txt") as f:
        for line in f:
            m = re.match(r"\s*cookie=(0x[0-9a-f]+),.*?table=(\d+),.* actions=(.*)$", line)
            if not m:
                continue
            table = int(m.group(2))
            if not (8 <= table <= 36 or 42 <= table <= 63):
                continue
            acts = m.group(3)
            if acts.startswith("conjunction("):
                continue
            out.setdefault(int(m.group(1), 16), set()).add(acts)
    return out


def compile_all(ref: str = REF) -> list[tuple[str, str, set[str]]]:
    from controller.lflow.actions import (
        ActionError, EncodeParams, ExtendTable, OvsFeatures, ParseParams,
        encode_ovnacts, parse_actions)
    from controller.lflow.actions.dhcp_opts import DHCPV6_OPTIONS, table_from_rows
    from controller.lflow.symtab import ovn_symtab
    from ofctrl.ofpacts import format_actions

    sb = _sb(ref)
    groups_by_name = _name_table(ref, "group-table.txt")
    meters_by_name = _name_table(ref, "meter-table.txt")
    real = _real_flow_actions(ref)

    dhcp_opts = table_from_rows((r["name"], r["code"], r["type"])
                                for r in sb.get("DHCP_Options", {}).values())
    dhcpv6_opts = table_from_rows((r["name"], r["code"], r["type"])
                                  for r in sb.get("DHCPv6_Options", {}).values()) \
        or DHCPV6_OPTIONS
    dps = sb["Datapath_Binding"]
    dp_groups = sb.get("Logical_DP_Group", {})
    ports: dict[tuple[str, str], int] = {}
    for pb in sb["Port_Binding"].values():
        ports[(_uuid(pb["datapath"]) or "", pb["logical_port"])] = pb["tunnel_key"]
    for mg in sb.get("Multicast_Group", {}).values():
        ports.setdefault((_uuid(mg["datapath"]) or "", mg["name"]), mg["tunnel_key"])

    group_table = ExtendTable()
    meter_table = ExtendTable()
    features = OvsFeatures(ct_zero_snat=True, dp_hash_l4_sym=False, controller_meter=True)
    symtab = ovn_symtab()
    results = []
    for lf_uuid, lf in sb["Logical_Flow"].items():
        cookie = int(lf_uuid.replace("-", "")[:8], 16)
        if cookie not in real:
            continue
        dp_uuids = []
        if _uuid(lf["logical_datapath"]):
            dp_uuids.append(_uuid(lf["logical_datapath"]))
        group = _uuid(lf["logical_dp_group"])
        if group:
            dp_uuids.extend(x[1] for x in _atom_set(dp_groups[group]["datapaths"]))
        ingress = lf["pipeline"] == "ingress"
        pp = ParseParams(symtab=symtab, dhcp_opts=dhcp_opts, dhcpv6_opts=dhcpv6_opts,
                         pipeline=0 if ingress else 1, n_tables=29,
                         cur_ltable=lf["table_id"])
        parsed = parse_actions(lf["actions"], pp)
        assert not isinstance(parsed, ActionError), (lf["actions"], parsed)
        ctrl_meter = next((x for x in _atom_set(lf.get("controller_meter", ["set", []]))
                           if isinstance(x, str)), None)
        for dp_uuid in dp_uuids:
            assert dp_uuid is not None
            dp = dps[dp_uuid]
            ext = _map(dp["external_ids"])
            is_switch = "logical-switch" in ext

            def lookup_port(name: str, dp_uuid: str = dp_uuid) -> int | None:
                return ports.get((dp_uuid, name))

            uuid = UUID(lf_uuid)
            ctrl_meter_id = 0
            if ctrl_meter:
                ctrl_meter_id = meter_table.assign_id(ctrl_meter, uuid)
            ep = EncodeParams(
                lookup_port=lookup_port, tunnel_ofport=lambda name: None,
                is_switch=is_switch, pipeline=0 if ingress else 1,
                output_ptable=37 if ingress else 64,
                common_nat_ct_zone="reg12" if "snat-ct-zone" in ext else "reg11",
                lflow_uuid=uuid, dp_key=dp["tunnel_key"], ctrl_meter_id=ctrl_meter_id,
                collector_ids=frozenset(), group_table=group_table,
                meter_table=meter_table, features=features)
            text = format_actions(encode_ovnacts(parsed.actions, ep))
            gmap = {e.table_id: groups_by_name.get(e.name, -1)
                    for e in group_table.desired.values()}
            mmap = {e.table_id: meters_by_name.get(e.name, -1)
                    for e in meter_table.desired.values()}
            text = re.sub(r"group:(\d+)", lambda m: f"group:{gmap[int(m.group(1))]}", text)
            text = re.sub(r"(meter:|meter_id=)(\d+)",
                          lambda m: f"{m.group(1)}{mmap[int(m.group(2))]}", text)
            results.append((lf["actions"], text, real[cookie]))
    return results


_RESULTS: dict[str, list[tuple[str, str, set[str]]]] = {}


def _results(topology: str) -> list[tuple[str, str, set[str]]]:
    if topology not in _RESULTS:
        _RESULTS[topology] = compile_all(os.path.join(REF_ROOT, topology))
    return _RESULTS[topology]


@pytest.mark.parametrize("topology,minimum", [("rich", 600), ("seed-500", 5000)])
def test_reference_actions_match_real_agent(topology: str, minimum: int) -> None:
    results = _results(topology)
    assert len(results) >= minimum
    mismatches = [(src, ours, sorted(theirs)) for src, ours, theirs in results
                  if ours not in theirs]
    assert mismatches == [], mismatches[:5]
