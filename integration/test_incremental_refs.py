"""Rows that change only through a row they refer to (issue 12 follow-up).

The C IDL marks a row as updated when a row it refers to changes, and the
23.03 agent relies on it: a Port_Binding whose HA_Chassis_Group members
changed, a Logical_Flow whose Logical_DP_Group was edited in place.  Ours
missed both until ``SbIndexes.track_references``: the incremental result
kept (or lacked) a gateway router's chassis-resident flows, or a
datapath's share of grouped lflows, that a forced recompute fixed.

* HA: the order a wiped SB is refilled in when northd is quicker than our
  chassis' re-registration: northd writes the gateway port's HA_Chassis
  without a chassis, then fills it in once our Chassis row is back; the
  Port_Binding itself never changes.  Played here with northd stopped:
  the member's chassis cleared, then set again.
* DP group: northd adds or removes a datapath of an existing group in
  place; played by editing the group with northd stopped.
* A datapath's tunnel key moved in place by northd (no reference involved,
  found on the way): runtime_data now recomputes for it.

Each step ends with the flows a forced recompute gives (forced_recompute_diff
empty), and the step must have moved the flow count (so the test fails if
the change did nothing).
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from integration.conftest import SandboxFactory, forced_recompute_diff
from integration.sandbox import Sandbox
from integration.test_agent_basic import wait_until
from integration.test_faults import rich_agent

pytestmark = pytest.mark.integration


def without_northd(box: Sandbox) -> None:
    box.stop_daemon("northd")
    box.northd_enabled = False


def settled_diff(box: Sandbox) -> list[str]:
    box.wait_hv_sync(timeout=60, min_flows=0)
    time.sleep(0.5)
    return forced_recompute_diff(box)


def pb_chassis(box: Sandbox, port: str) -> str:
    return box.sbctl("--bare", "--columns=chassis", "find", "Port_Binding",
                     f"logical_port={port}").strip()


def test_ha_chassis_filled_in_later_no_gap(sandbox_factory: SandboxFactory) -> None:
    box = rich_agent(sandbox_factory)
    without_northd(box)
    me = box.sbctl("--bare", "--columns=_uuid", "find", "Chassis", f"name={box.chassis}").strip()
    group = box.sbctl("get", "Port_Binding", "cr-lr0-pub", "ha_chassis_group").strip()
    members = box.sbctl("get", "HA_Chassis_Group", group, "ha_chassis").strip("[]\n").split(", ")
    member = next(m for m in members if box.sbctl("get", "HA_Chassis", m, "chassis").strip() == me)
    assert pb_chassis(box, "cr-lr0-pub") == me
    before = box.flow_count()
    for rep in range(2):
        box.sbctl("clear", "HA_Chassis", member, "chassis")
        wait_until(lambda: pb_chassis(box, "cr-lr0-pub") == "", timeout=30,
                   what="cr-lr0-pub released", box=box)
        diff = settled_diff(box)
        cleared = box.flow_count()
        print(f"\n[py] rep {rep}: HA_Chassis chassis cleared: flows {before} -> {cleared}")
        assert not diff, "a forced recompute changed:\n" + "\n".join(diff[:20])
        assert cleared < before
        box.sbctl("set", "HA_Chassis", member, f"chassis={me}")
        wait_until(lambda: pb_chassis(box, "cr-lr0-pub") == me, timeout=30,
                   what="cr-lr0-pub claimed again", box=box)
        diff = settled_diff(box)
        print(f"[py] rep {rep}: HA_Chassis chassis set again: flows {box.flow_count()}")
        assert not diff, "a forced recompute changed:\n" + "\n".join(diff[:20])
        assert box.flow_count() == before


def test_dp_group_edited_in_place_no_gap(sandbox_factory: SandboxFactory) -> None:
    box = rich_agent(sandbox_factory)
    without_northd(box)
    users = Counter(box.sbctl("--bare", "--columns=logical_dp_group", "find", "Logical_Flow",
                              "logical_dp_group!=[]").split())
    assert users, "no grouped lflows in the rich topology"
    before = box.flow_count()
    for group, n in users.most_common(2):
        dps = box.sbctl("get", "Logical_DP_Group", group, "datapaths").strip("[]\n").split(", ")
        assert len(dps) >= 2, f"group {group} of {n} lflows has {dps}"
        box.sbctl("remove", "Logical_DP_Group", group, "datapaths", dps[-1])
        diff = settled_diff(box)
        shrunk = box.flow_count()
        print(f"\n[py] group of {n} lflows without one datapath: flows {before} -> {shrunk}")
        assert not diff, "a forced recompute changed:\n" + "\n".join(diff[:20])
        assert shrunk < before
        box.sbctl("add", "Logical_DP_Group", group, "datapaths", dps[-1])
        diff = settled_diff(box)
        print(f"[py] the datapath back in the group: flows {box.flow_count()}")
        assert not diff, "a forced recompute changed:\n" + "\n".join(diff[:20])
        assert box.flow_count() == before


def test_datapath_tunnel_key_moved_by_northd_no_gap(sandbox_factory: SandboxFactory) -> None:
    """northd moves a datapath's tunnel key in place (NB requested-tnl-key):
    the local datapath's flows all carry the key, so runtime_data recomputes
    (23.03 C notices only a deleted datapath)."""
    box = rich_agent(sandbox_factory)

    def ls_a() -> tuple[str, str]:
        row = box.sbctl("--bare", "--columns=_uuid,tunnel_key", "find", "Datapath_Binding",
                        "external_ids:name=ls-a").split()
        return row[0], row[1]
    uuid, key = ls_a()
    before = box.flow_count()
    for new_key in ("77", key):
        box.nbctl("--wait=sb", "set", "Logical_Switch", "ls-a",
                  f"other_config:requested-tnl-key={new_key}")
        assert ls_a() == (uuid, new_key), "northd made a new datapath instead"
        diff = settled_diff(box)
        print(f"\n[py] ls-a tunnel key {key} -> {new_key}: flows {before} -> {box.flow_count()}")
        assert not diff, "a forced recompute changed:\n" + "\n".join(diff[:20])
        assert any(f"metadata=0x{int(new_key):x}," in f for f in box.dump_flows(names=False))
