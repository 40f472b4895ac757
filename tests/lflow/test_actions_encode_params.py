"""Encoding parameters the conformance vectors keep fixed: pipelines, router
vs switch zones, table numbers, OVS feature flags, controller meters."""

from __future__ import annotations

from uuid import UUID

import pytest

from controller.lflow.actions import (
    P_EGRESS, P_INGRESS, ActionError, EncodeParams, ExtendTable, OvsFeatures,
    ParseParams, encode_ovnacts, format_ovnacts, parse_actions)
from controller.lflow.symtab import ovn_symtab
from ofctrl.ofpacts import Controller, decode_actions, encode_actions, format_actions

UUID1 = UUID("12345678-9abc-def0-1234-56789abcdef0")
PORTS = {"lp1": 1, "lp2": 2, "mc": 0x8001}


def pp(table: int = 5, pipeline: int = P_INGRESS) -> ParseParams:
    return ParseParams(symtab=ovn_symtab(), pipeline=pipeline, n_tables=29,
                       cur_ltable=table)


def enc(text: str, *, parse: ParseParams | None = None, **kw: object) -> str:
    parsed = parse_actions(text, parse or pp())
    assert not isinstance(parsed, ActionError), parsed
    params: dict[str, object] = dict(lookup_port=PORTS.get, lflow_uuid=UUID1)
    params.update(kw)
    ep = EncodeParams(**params)  # type: ignore[arg-type]
    return format_actions(encode_ovnacts(parsed.actions, ep))


def test_next_and_output_tables() -> None:
    assert enc("next;") == "resubmit(,14)"
    assert enc("output;") == "resubmit(,37)"
    egress = pp(3, P_EGRESS)
    assert enc("next;", parse=egress, pipeline=P_EGRESS) == "resubmit(,46)"
    assert enc("output;", parse=egress, pipeline=P_EGRESS, output_ptable=64) == \
        "resubmit(,64)"
    # Egress flows may jump back to the ingress pipeline.
    assert enc("next(pipeline=ingress, table=0);", parse=egress,
               pipeline=P_EGRESS) == "resubmit(,8)"


def test_last_table_limits() -> None:
    assert parse_actions("next(29);", pp()) == \
        '"next" action cannot advance beyond table 28.'
    last = ParseParams(symtab=ovn_symtab(), n_tables=29, cur_ltable=29)
    assert parse_actions("ct_next;", last) == \
        '"ct_next" action not allowed in last table.'


def test_router_uses_dnat_zone() -> None:
    assert enc("ct_next;", is_switch=False) == "ct(table=14,zone=NXM_NX_REG11[0..15])"
    assert enc("ct_commit;", is_switch=False) == "ct(commit,zone=NXM_NX_REG11[0..15])"
    assert enc("ct_lb;", is_switch=False) == "ct(table=14,zone=NXM_NX_REG11[0..15],nat)"
    assert enc("ct_commit_nat;", is_switch=False) == \
        "ct(commit,table=14,zone=NXM_NX_REG11[0..15],nat)"
    # ct_commit(...) (v1) always uses the switch zone register, as in OVN.
    assert enc("ct_commit(ct_mark=1);", is_switch=False) == \
        "ct(commit,zone=NXM_NX_REG13[0..15],exec(set_field:0x1->ct_mark))"


def test_common_nat_zone() -> None:
    assert enc("ct_snat_in_czone(10.0.0.1);", common_nat_ct_zone="reg12") == \
        "ct(commit,table=14,zone=NXM_NX_REG12[0..15],nat(src=10.0.0.1))"
    assert enc("ct_dnat_in_czone;", common_nat_ct_zone="reg12") == \
        "ct(table=14,zone=NXM_NX_REG12[0..15],nat)"


def test_ct_zero_snat_feature() -> None:
    on = OvsFeatures(ct_zero_snat=True)
    assert enc("ct_commit { ct_mark.blocked = 1; };", features=on) == \
        "ct(commit,zone=NXM_NX_REG13[0..15],nat(src),exec(set_field:0x1/0x1->ct_mark))"
    assert enc("ct_commit;", features=on) == "ct(commit,zone=NXM_NX_REG13[0..15],nat(src))"
    assert enc("ct_commit(ct_label=1);", features=on) == \
        "ct(commit,zone=NXM_NX_REG13[0..15],nat(src),exec(set_field:0x1->ct_label))"


def test_dp_hash_l4_sym_feature() -> None:
    groups = ExtendTable()
    assert enc("reg0 = select(1, 2);", group_table=groups,
               features=OvsFeatures(dp_hash_l4_sym=True)) == "group:1"
    (entry,) = groups.desired.values()
    assert entry.name.startswith(
        "type=select,selection_method=dp_hash,selection_method_param=0x100000000,"
        "bucket=bucket_id=0,weight:100,actions=load:1->xxreg0[96..127],resubmit(,14)")


def test_controller_meter_feature() -> None:
    # Without the feature, no meter_id even if the flow has a controller meter.
    assert enc("igmp;", ctrl_meter_id=7) == "controller(userdata=00.00.00.10.00.00.00.00)"
    on = OvsFeatures(controller_meter=True)
    assert enc("igmp;", ctrl_meter_id=7, features=on) == \
        "controller(userdata=00.00.00.10.00.00.00.00,meter_id=7)"
    # log(meter=...) allocates its own meter and uses it instead.
    meters = ExtendTable()
    meters.assign_id("other", UUID1)
    assert enc('log(verdict=drop, meter="acl-meter");', ctrl_meter_id=7,
               features=on, meter_table=meters) == \
        "controller(userdata=00.00.00.07.00.00.00.00.01.06,meter_id=2)"


def test_nested_userdata_wire_roundtrip() -> None:
    parsed = parse_actions("arp { eth.dst = ff:ff:ff:ff:ff:ff; arp.op = 1; output; };", pp())
    assert not isinstance(parsed, ActionError)
    (ctl,) = encode_ovnacts(parsed.actions, EncodeParams(lookup_port=PORTS.get))
    assert isinstance(ctl, Controller)
    inner = decode_actions(ctl.userdata[8:])
    assert format_actions(inner) == \
        "set_field:ff:ff:ff:ff:ff:ff->eth_dst,set_field:1->arp_op,resubmit(,37)"
    assert decode_actions(encode_actions([ctl])) == [ctl]


def test_ports_and_sample() -> None:
    assert enc('outport = "lp2"; output;') == "set_field:0x2->reg15,resubmit(,37)"
    assert enc('outport = "nope";') == "set_field:0->reg15"
    assert enc('bind_vport("nope", inport);') == "drop"
    text = "sample(probability=65535,collector_set=5,obs_domain=1,obs_point=$cookie);"
    assert enc(text, collector_ids=frozenset({5}), dp_key=3) == \
        "sample(probability=65535,collector_set_id=5,obs_domain_id=16777219," \
        "obs_point_id=305419896)"
    assert enc(text, collector_ids=None) == "drop"


def test_fwd_group_liveness_and_unknown_ports() -> None:
    groups = ExtendTable()
    assert enc('fwd_group(liveness=true, childports="lp1", "lp2");', group_table=groups,
               tunnel_ofport={"lp1": 10, "lp2": 11}.get) == "group:1"
    (entry,) = groups.desired.values()
    assert entry.name == ("type=select,selection_method=dp_hash,"
                          "bucket=watch_port:10,load=0x1->NXM_NX_REG15[0..15],resubmit(,37),"
                          "bucket=watch_port:11,load=0x2->NXM_NX_REG15[0..15],resubmit(,37)")
    assert enc('fwd_group(childports="lp1", "zz");') == "drop"
    assert enc('fwd_group(liveness=true, childports="lp1");') == "drop"


@pytest.mark.parametrize("text", [
    "ct_lb_mark(backends=[fd00::1]:80,10.0.0.1; hash_fields=\"ip_src\"; skip_snat);",
    'commit_lb_aff(vip = "[fd00::1]:80", backend = "[fd00::2]:8080", proto = udp, timeout = 5);',
    'commit_lb_aff(vip = "10.0.0.1", backend = "10.0.0.2", timeout = 5);',
    "reg0[1] = put_nd_ra_opts(addr_mode = \"dhcpv6_stateful\", slla = 00:00:00:00:00:01, "
    "rdnss = fd00::1, dnssl = \"a.b,c.d\", route_info = \"HIGH-fd00:1::/48\");",
    'trigger_event(event = "empty_lb_backends", vip = "[fd00::1]:80", protocol = "udp", '
    'load_balancer = "12345678-abcd-9876-fedc-11119f8e7d6c");',
    "log(name=\"x\", verdict=reject, severity=alert, meter=\"m\");",
    "icmp6.frag_mtu = 1500;",
    "sample(probability=1,collector_set=2,obs_domain=3,obs_point=$cookie);",
])
def test_format_round_trip(text: str) -> None:
    first = parse_actions(text, pp())
    assert not isinstance(first, ActionError), first
    formatted = format_ovnacts(first.actions)
    second = parse_actions(formatted, pp())
    assert not isinstance(second, ActionError), second
    assert format_ovnacts(second.actions) == formatted
    assert second.actions == first.actions


def test_ct_commit_after_other_actions_is_lost_as_in_23_03_1() -> None:
    """23.03.1 drops ct_commit (and what lies between the first action and
    it) when it is not the first action; actions after it stay."""
    on = OvsFeatures(ct_zero_snat=True)
    # The example of the upstream fix's commit message (before the fix).
    assert enc("reg8[17] = 1; ct_commit { ct_mark.blocked = 1; };") == \
        "set_field:0x2000000000000/0x2000000000000->xreg4"
    assert enc("reg8[17] = 1; reg0 = 0; ct_commit(ct_label=1); next;", features=on) == \
        "set_field:0x2000000000000/0x2000000000000->xreg4,resubmit(,14)"
    # northd's logged reject ACL on a switch with stateful ACLs (egress).
    egress = pp(4, P_EGRESS)
    got = enc('log(name="r", severity=info, verdict=reject); '
              "ct_commit { ct_label.blocked = 1; }; reg0 = 0; "
              "reject { outport <-> inport; next(pipeline=ingress,table=25); };",
              parse=egress, pipeline=P_EGRESS, features=on)
    assert "ct(" not in got
    parts = got.split(",set_field:0/0xffffffff000000000000000000000000->xxreg0,")
    assert len(parts) == 2 and parts[0].startswith("controller(") and \
        parts[1].startswith("controller(")
    # First (or only) action: encoded normally.
    assert enc("ct_commit { ct_mark.blocked = 1; }; reg0 = 0;") == \
        "ct(commit,zone=NXM_NX_REG13[0..15],exec(set_field:0x1/0x1->ct_mark))," \
        "set_field:0/0xffffffff000000000000000000000000->xxreg0"
