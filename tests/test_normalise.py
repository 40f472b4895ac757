"""integration.normalise: the canonical form of recipe §9.2.

The reference directories hold the C agent's raw dumps and the canonical form
that gave zero differences between two C runs: ours must reproduce it exactly.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from integration.normalise import (
    canonical_groups, canonical_meters, compare_flows, compare_lists, flow_table,
    normalise, parse_ct_zones, parse_dp_names, strict_flow)

REF = Path("/work/shared/reference-data")


def _read(path: Path) -> str:
    for candidate in (path, path.with_name(path.name + ".gz")):
        if candidate.exists():
            if candidate.suffix == ".gz":
                with gzip.open(candidate, "rt") as f:
                    return f.read()
            return candidate.read_text()
    pytest.skip(f"reference data {path} not present")


@pytest.mark.parametrize("topology", ["rich", "seed-500"])
def test_reference_canonical_form_reproduced(topology: str) -> None:
    d = REF / topology
    canon = normalise(_read(d / "flows.raw.txt"), _read(d / "groups.raw.txt"),
                      _read(d / "meters.raw.txt"), parse_ct_zones(_read(d / "ct-zones.txt")),
                      parse_dp_names(_read(d / "dp-names.txt")))
    assert canon.flows == _read(d / "flows.canon.txt").splitlines()
    assert canon.groups == _read(d / "groups.canon.txt").splitlines()
    assert canon.meters == _read(d / "meters.canon.txt").splitlines()


def test_reference_strict_form_reproduced() -> None:
    d = REF / "rich"
    strict = sorted(strict_flow(ln) for ln in _read(d / "flows.raw.txt").splitlines()
                    if ln.strip() and not ln.startswith(("OFPST_", "NXST_")))
    assert strict == _read(d / "flows.txt").splitlines()


def test_reference_cookies_kept_per_canonical_line() -> None:
    d = REF / "rich"
    canon = normalise(_read(d / "flows.raw.txt"), _read(d / "groups.raw.txt"),
                      _read(d / "meters.raw.txt"), parse_ct_zones(_read(d / "ct-zones.txt")),
                      parse_dp_names(_read(d / "dp-names.txt")))
    line = ('priority=100,in_port="vif-b1" actions=set_field:Z(ls-b-p1)->reg13,'
            "set_field:Z(ls-b_dnat)->reg11,set_field:Z(ls-b_snat)->reg12,"
            "set_field:0x1->metadata,set_field:0x3->reg14,resubmit(,8)")
    assert canon.cookies[line] == [0xb533c940]


def _agent_dump(zones: dict[str, int], group_ids: tuple[int, int], meter_id: int,
                conj_ids: tuple[int, int]) -> tuple[list[str], list[str], list[str]]:
    """The same flows as two agents that chose different free values would install."""
    g_a, g_b = group_ids
    c_a, c_b = conj_ids
    z = zones
    flows = [
        f" cookie=0x1, priority=100,in_port=\"vif1\" actions=set_field:{hex(z['p1'])}->reg13,"
        f"set_field:{hex(z['dp1_dnat'])}->reg11,load:{hex(z['dp1_snat'])}->NXM_NX_REG12[],"
        "resubmit(,8)",
        f" cookie=0x2, table=12, priority=10,ip,metadata=0x1 actions=group:{g_a}",
        f" cookie=0x3, table=12, priority=11,ip,metadata=0x2 actions=group:{g_b}",
        f" cookie=0x4, table=20, priority=5,arp actions=controller(userdata=00.00,meter_id={meter_id})",
        f" cookie=0x5, table=44, priority=2000,conj_id={c_a},ip,metadata=0x1 actions=resubmit(,45)",
        f" cookie=0x6, table=44, priority=2000,conj_id={c_b},ip,metadata=0x2 actions=drop",
        f" cookie=0x5, table=44, priority=2000,ip,metadata=0x1,nw_src=10.0.0.1 "
        f"actions=conjunction({c_a},1/2)",
        f" cookie=0x6, table=44, priority=2000,ip,metadata=0x2,nw_src=10.0.0.1 "
        f"actions=conjunction({c_b},1/2)",
        f" cookie=0x5, table=44, priority=2000,ip,metadata=0x1,tp_dst=80 "
        f"actions=conjunction({c_a},2/2),conjunction({c_b},2/2)",
        " cookie=0x7, table=44, priority=1,reg13=0 actions=set_field:0->reg13",
    ]
    groups = ["OFPST_GROUP_DESC reply (OF1.5) (xid=0x2):",
              f" group_id={g_a},type=select,bucket=bucket_id:0,actions=output:1,"
              "bucket=bucket_id:1,actions=output:2",
              f" group_id={g_b},type=select,bucket=bucket_id:0,actions=drop"]
    meters = ["OFPST_METER_CONFIG reply (OF1.5) (xid=0x2):", f"meter={meter_id} pktps stats bands=",
              "type=drop rate=50", ""]
    return flows, groups, meters


def test_free_choices_normalised_away() -> None:
    dp = {"11111111-2222-3333-4444-555555555555": "sw0"}
    uuid = next(iter(dp))
    ours = _agent_dump({"p1": 1, "dp1_dnat": 2, "dp1_snat": 3}, (1, 2), 1, (10, 20))
    theirs = _agent_dump({"p1": 7, "dp1_dnat": 5, "dp1_snat": 6}, (9, 4), 3, (2000, 1000))

    def zones_of(z: tuple[int, int, int]) -> dict[str, int]:
        return {"p1": z[0], f"{uuid}_dnat": z[1], f"{uuid}_snat": z[2]}

    a = normalise(*ours, ct_zones=zones_of((1, 2, 3)), dp_names=dp)
    b = normalise(*theirs, ct_zones=zones_of((7, 5, 6)), dp_names=dp)
    assert a.flows == b.flows
    assert a.groups == b.groups
    assert a.meters == b.meters == ["M1 pktps stats bands= type=drop rate=50"]
    text = "\n".join(a.flows)
    assert "set_field:Z(p1)->reg13,set_field:Z(sw0_dnat)->reg11," \
           "load:Z(sw0_snat)->NXM_NX_REG12[]" in text
    assert "set_field:0->reg13" in text
    assert "meter_id=M1" in text
    assert "conjunction(C1,2/2),conjunction(C2,2/2)" in text
    assert all(g.startswith(("G1 type=select,bucket=actions=drop",
                             "G2 type=select,bucket=actions=output:1,bucket=actions=output:2"))
               for g in a.groups)


def test_differences_survive_normalisation() -> None:
    ours = _agent_dump({"p1": 1, "dp1_dnat": 2, "dp1_snat": 3}, (1, 2), 1, (10, 20))
    theirs = _agent_dump({"p1": 1, "dp1_dnat": 2, "dp1_snat": 3}, (1, 2), 1, (10, 20))
    theirs[0][1] = theirs[0][1].replace("metadata=0x1", "metadata=0x3")
    # the conjunction of the changed clause, not only the line, must differ
    theirs[0][6] = theirs[0][6].replace("nw_src=10.0.0.1", "nw_src=10.0.0.2")
    a, b = normalise(*ours), normalise(*theirs)
    diff = compare_flows(a.flows, b.flows)
    assert diff[12].only_ours == ["table=12, priority=10,ip,metadata=0x1 actions=group:G2"]
    assert diff[12].only_theirs == ["table=12, priority=10,ip,metadata=0x3 actions=group:G2"]
    assert diff[44].only_ours and diff[44].only_theirs
    assert diff[0].only_ours == diff[0].only_theirs == []
    assert diff[0].identical == 1


def test_unknown_zone_and_ambiguous_port_numbers() -> None:
    flows = [" priority=100,in_port=7 actions=set_field:0x9->reg13,output:8"]
    canon = normalise(flows, port_names={7: "patch-br-int-to-ln1", 8: "patch-br-int-to-ln2"})
    assert canon.flows == ['priority=100,in_port="patch-br-int-to-ln1" actions='
                           'set_field:Z(#9)->reg13,output:"patch-br-int-to-ln2"']


def test_groups_and_meters_parsing() -> None:
    assert canonical_groups(["group_id=3,type=all,bucket=bucket_id:1,actions=b,"
                             "bucket=bucket_id:0,actions=a"]) == {
        3: "type=all,bucket=actions=a,bucket=actions=b"}
    assert canonical_meters(["meter=2 kbps stats bands=", "type=drop rate=10",
                             "meter=5 pktps stats bands= type=drop rate=3"]) == {
        2: "kbps stats bands= type=drop rate=10", 5: "pktps stats bands= type=drop rate=3"}
    assert flow_table("table=65, priority=1 actions=drop") == 65
    assert flow_table("priority=1 actions=drop") == 0
    assert compare_lists(["a", "a", "b"], ["a", "c"]) == (["a", "b"], ["c"])
