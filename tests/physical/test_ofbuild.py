"""physical builds ofctrl objects directly: helpers of physical.ofbuild, wire
round trip of every rich flow, ownership in an ofctrl DesiredFlowTable."""

from __future__ import annotations

from typing import Any

from ofctrl.desired import DesiredFlowTable
from ofctrl.flow import Flow
from ofctrl.match import Match
from ofctrl.ofpacts import (Bundle, Clone, Controller, Output, Resubmit, SetField, decode_actions,
                            decode_instructions)

from controller.lflow.snapshot import SbSnapshot
from integration.test_physical_parity import RICH, build_context, port_names
from physical import (GENERIC_OWNER, OwnedFlows, PhysicalContext, add_to_desired, build_all,
                      flow_to_string, port_binding_flows, port_security_flows)
from physical.ofbuild import controller_op, load, move, pop, push


def test_load_is_put_load_with_ovn_widths() -> None:
    assert load("reg15", 5) == SetField("reg15", 5)
    assert load("reg10", 1, 12, 1) == SetField("reg10", 0x1000, 0x1000)
    assert load("metadata", 3) == SetField("metadata", 3)
    assert load("tun_id", 7, 0, 24) == SetField("tun_id", 7, 0xFFFFFF)
    assert load("in_port", 0xFFFF, 0, 16).format() == "set_field:ANY->in_port"
    # OVN's Geneve option is 4 bytes: 32 bits are the whole field.
    assert load("tun_metadata0", 0x8000, 0, 32) == SetField("tun_metadata0", 0x8000)
    assert load("reg15", 5) is load("reg15", 5)   # memoised: shared wire bytes


def test_field_helpers_format_as_ovs() -> None:
    assert move("tun_id", 0, "metadata", 0, 24).format() == \
        "move:NXM_NX_TUN_ID[0..23]->OXM_OF_METADATA[0..23]"
    assert move("reg14", 0, "tun_metadata0", 16, 15).format() == \
        "move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30]"
    assert push("in_port").format() == "push:NXM_OF_IN_PORT[]"
    assert pop("eth_src").format() == "pop:NXM_OF_ETH_SRC[]"


def test_controller_op_userdata_layout() -> None:
    ctl = controller_op(10, pause=True, nested=[Resubmit(8)], payload=b"\x05\xdc")
    assert isinstance(ctl, Controller) and ctl.pause
    assert ctl.userdata[:8] == bytes.fromhex("0000000a00000000")
    assert decode_actions(ctl.userdata[8:-2]) == [Resubmit(8)]
    assert ctl.userdata[-2:] == b"\x05\xdc"
    assert controller_op(26).format() == "controller(userdata=00.00.00.1a.00.00.00.00)"


def test_flow_to_string_names_ports_like_dump_flows() -> None:
    names = {1: "ovn-hv2-0", 2: "patch-br-int-to", 3: "a b"}
    f = Flow(0, 100, Match([("in_port", 2, None)]),
             [Output(1), Output(3), Bundle((1, 2)), Clone((Output(1),))], 0x1234)
    assert flow_to_string(f, names) == (
        'priority=100,in_port="patch-br-int-to" actions=output:"ovn-hv2-0",output:"a b",'
        'bundle(eth_src,0,active_backup,ofport,members:"ovn-hv2-0","patch-br-int-to"),'
        'clone(output:"ovn-hv2-0")')
    assert flow_to_string(f) == (
        "priority=100,in_port=2 actions=output:1,output:3,"
        "bundle(eth_src,0,active_backup,ofport,members:1,2),clone(output:1)")
    g = Flow(65, 0, Match(), [], 0x1234)
    assert flow_to_string(g) == "table=65, priority=0 actions=drop"
    assert flow_to_string(g, cookie=True) == "cookie=0x1234, table=65, priority=0 actions=drop"


def _rich() -> tuple[PhysicalContext, Any, list[OwnedFlows]]:
    sb = SbSnapshot(RICH / "sb.db")
    ctx, tables = build_context(sb, RICH)
    return ctx, tables, build_all(ctx, tables)


def test_rich_flows_are_ofctrl_flows_that_round_trip_on_the_wire() -> None:
    _ctx, _tables, groups = _rich()
    names = port_names((RICH / "ports.txt").read_text())
    flows = [f for g in groups for f in g.flows]
    assert len(flows) > 100 and all(g.flows for g in groups)
    for f in flows:
        assert isinstance(f, Flow) and isinstance(f.match, Match)
        wire = f.wire()
        match, ofs = Match.decode_prefix(wire)
        assert match == f.match
        assert decode_instructions(wire[ofs:]) == list(f.actions), flow_to_string(f, names)


def test_add_to_desired_and_remove_by_owner() -> None:
    ctx, tables, groups = _rich()
    keys = {(f.table, f.priority, f.match) for g in groups for f in g.flows}
    desired = DesiredFlowTable()
    add_to_desired(desired, groups)
    assert len(desired) == len(keys)
    pb = next(p for p in tables.port_bindings if p.logical_port == "ls-a-p1")
    own = port_binding_flows(ctx, pb) + port_security_flows(ctx, pb)
    assert own
    desired.remove(pb.uuid)
    assert len(desired) == len(keys) - len(own)
    add_to_desired(desired, [OwnedFlows(pb.uuid, own)])
    assert len(desired) == len(keys)
    assert all(desired.owners_of(f) == [pb.uuid] for f in own)
    generic = {(f.table, f.priority, f.match) for g in groups if g.owner == GENERIC_OWNER
               for f in g.flows}
    assert len(generic) == 12  # 11 table defaults + the ovn-hv2-0 decapsulation flow
    desired.remove(GENERIC_OWNER)
    assert len(desired) == len(keys) - len(generic)
