"""Cross-check ofctrl.ofpacts encodings with os-ken's OpenFlow 1.5 action
parser (an independent decoder): the fields os-ken extracts must be the
ones we put in."""

from __future__ import annotations

from typing import Any

from os_ken.ofproto import ofproto_v1_5_parser as ofp

from ofctrl.ofpacts import encode_actions, parse_actions


def osken(text: str) -> Any:
    data = encode_actions(parse_actions(text))
    act = ofp.OFPAction.parser(data, 0)
    assert act.len == len(data)
    return act


def test_set_field() -> None:
    a = osken("set_field:0x5->reg15")
    assert isinstance(a, ofp.OFPActionSetField) and a.key == "reg15" and a.value == 5
    a = osken("set_field:0x2/0x2->reg10")
    assert a.key == "reg10" and a.value == (2, 2)
    a = osken("set_field:0a:00:00:00:10:01->eth_src")
    assert a.key == "eth_src" and a.value == "0a:00:00:00:10:01"
    a = osken("set_field:0/0xffff00000000->xreg4")
    assert a.key == "xreg4" and a.value == (0, 0xFFFF00000000)
    a = osken("set_field:0x4000/0xe000->vlan_tci")
    assert a.value == (0x4000, 0xE000)


def test_resubmit() -> None:
    a = osken("resubmit(,19)")
    assert isinstance(a, ofp.NXActionResubmitTable)
    assert (a.in_port, a.table_id) == (0xFFF8, 19)
    a = osken("resubmit(3,8)")
    assert (a.in_port, a.table_id) == (3, 8)


def test_ct_with_nat_and_exec() -> None:
    a = osken("ct(commit,table=21,zone=NXM_NX_REG13[0..15],nat(dst=10.0.1.2:8080),"
              "exec(set_field:0x2/0x2->ct_label))")
    assert isinstance(a, ofp.NXActionCT)
    assert a.flags == 1 and a.recirc_table == 21 and a.zone_src == "reg13"
    assert a.zone_ofs_nbits == 15
    nat, sf = a.actions
    assert isinstance(nat, ofp.NXActionNAT)
    assert nat.flags == 2 and nat.range_ipv4_min == "10.0.1.2" and nat.range_proto_min == 8080
    assert sf.key == "ct_label" and sf.value == (2, 2)


def test_ct_nat_ipv6_and_flags() -> None:
    a = osken("ct(commit,zone=7,nat(src=[fd00::1]-[fd00::9]:100-200,random))")
    nat = a.actions[0]
    assert nat.flags == 1 | 16
    assert nat.range_ipv6_min == "fd00::1" and nat.range_ipv6_max == "fd00::9"
    assert (nat.range_proto_min, nat.range_proto_max) == (100, 200)
    assert a.zone_src == "" or not a.zone_src
    assert a.zone_ofs_nbits == 7


def test_conjunction() -> None:
    a = osken("conjunction(100,2/2)")
    assert isinstance(a, ofp.NXActionConjunction)
    assert (a.id, a.clause, a.n_clauses) == (100, 1, 2)


def test_controller2() -> None:
    a = osken("controller(userdata=00.00.00.17.00.00.00.00,pause)")
    assert isinstance(a, ofp.NXActionController2)
    assert a.pause is True and bytes(a.userdata) == bytes.fromhex("0000001700000000")
    # (os-ken cannot parse the NXAC2PT_METER_ID property: not checked here.)


def test_learn() -> None:
    a = osken("learn(table=78,idle_timeout=60,delete_learned,cookie=0x99,OXM_OF_METADATA[],"
              "eth_type=0x800,NXM_OF_IP_SRC[],load:0x1->NXM_NX_REG10[14],"
              "load:NXM_OF_IP_DST[]->NXM_NX_REG4[])")
    assert isinstance(a, ofp.NXActionLearn)
    assert (a.table_id, a.idle_timeout, a.flags, a.cookie) == (78, 60, 2, 0x99)
    kinds = [type(s).__name__ for s in a.specs]
    assert kinds == ["NXFlowSpecMatch", "NXFlowSpecMatch", "NXFlowSpecMatch",
                     "NXFlowSpecLoad", "NXFlowSpecLoad"]
    assert a.specs[0].src == ("metadata", 0) and a.specs[0].n_bits == 64
    assert a.specs[1].src == 0x800 and a.specs[1].n_bits == 16
    assert a.specs[3].src == 1 and a.specs[3].dst == ("reg10", 14) and a.specs[3].n_bits == 1
    assert a.specs[4].src == ("ipv4_dst_nxm", 0) and a.specs[4].dst == ("reg4", 0)


def test_stack_output_reg_and_simple() -> None:
    a = osken("push:NXM_NX_REG14[]")
    assert isinstance(a, ofp.NXActionStackPush) and a.field == "reg14"
    assert (a.start, a.end) == (0, 32)
    a = osken("pop:NXM_NX_XXREG0[96..127]")
    # os-ken's parser keeps n_bits in "end" (its own quirk).
    assert isinstance(a, ofp.NXActionStackPop) and (a.start, a.end) == (96, 32)
    a = osken("output:NXM_NX_REG15[]")
    assert isinstance(a, ofp.NXActionOutputReg) and a.src == "reg15" and a.ofs_nbits == 31
    assert osken("group:7").group_id == 7
    assert osken("meter:3").meter_id == 3
    assert isinstance(osken("dec_ttl"), ofp.OFPActionDecNwTtl)
    assert osken("dec_ttl()").cnt_ids == []
    assert osken("output:5").port == 5
    assert list(osken("note:01.02.03.04.05.06").note) == [1, 2, 3, 4, 5, 6]
    s = osken("sample(probability=100,collector_set_id=200,obs_domain_id=11259375,"
              "obs_point_id=1000)")
    assert (s.probability, s.collector_set_id, s.obs_domain_id, s.obs_point_id) == \
        (100, 200, 11259375, 1000)


def test_unknown_to_osken_still_well_formed() -> None:
    # os-ken has no clone/check_pkt_larger classes; it must still frame them.
    a = osken("clone(resubmit(,8))")
    assert a.subtype == 42 and a.len == 32
    a = osken("check_pkt_larger(1500)->NXM_NX_REG0[0]")
    assert a.subtype == 49 and a.data[:2] == b"\x05\xdc"


def _osken_bytes(act: Any) -> bytes:
    buf = bytearray()
    act.serialize(buf, 0)
    return bytes(buf)


SERIALIZE_CASES: list[tuple[Any, str]] = [
    (ofp.OFPActionSetField(reg15=5), "set_field:0x5->reg15"),
    (ofp.OFPActionSetField(reg10=(2, 2)), "set_field:0x2/0x2->reg10"),
    (ofp.OFPActionSetField(eth_src="0a:00:00:00:10:01"), "set_field:0a:00:00:00:10:01->eth_src"),
    (ofp.OFPActionSetField(xreg4=(0, 0xFFFF00000000)), "set_field:0/0xffff00000000->xreg4"),
    (ofp.NXActionResubmitTable(in_port=0xFFF8, table_id=19), "resubmit(,19)"),
    (ofp.NXActionConjunction(clause=1, n_clauses=2, id_=100), "conjunction(100,2/2)"),
    (ofp.NXActionController2(userdata=[0, 0, 0, 0x17, 0, 0, 0, 0], pause=True),
     "controller(userdata=00.00.00.17.00.00.00.00,pause)"),
    (ofp.NXActionStackPush(field="reg14", start=0, end=32), "push:NXM_NX_REG14[]"),
    (ofp.NXActionOutputReg(ofs_nbits=31, src="reg15", max_len=65535), "output:NXM_NX_REG15[]"),
    (ofp.NXActionCT(flags=1, zone_src="reg13", zone_ofs_nbits=15, recirc_table=255, alg=0,
                    actions=[ofp.OFPActionSetField(ct_mark=(1, 1))]),
     "ct(commit,zone=NXM_NX_REG13[0..15],exec(set_field:0x1/0x1->ct_mark))"),
    (ofp.NXActionCTClear(), "ct_clear"),
    (ofp.NXActionDecTtlCntIds(cnt_ids=[]), "dec_ttl()"),
    (ofp.OFPActionDecNwTtl(), "dec_ttl"),
    (ofp.OFPActionGroup(3), "group:3"),
    (ofp.OFPActionMeter(3), "meter:3"),
    (ofp.NXActionSample(probability=100, collector_set_id=200, obs_domain_id=11259375,
                        obs_point_id=1000),
     "sample(probability=100,collector_set_id=200,obs_domain_id=11259375,obs_point_id=1000)"),
    (ofp.NXActionLearn(table_id=78, idle_timeout=60, flags=2, specs=[
        ofp.NXFlowSpecMatch(src=("metadata", 0), dst=("metadata", 0), n_bits=64),
        ofp.NXFlowSpecMatch(src=0x800, dst=("eth_type_nxm", 0), n_bits=16),
        ofp.NXFlowSpecLoad(src=1, dst=("reg10", 14), n_bits=1)]),
     "learn(table=78,idle_timeout=60,delete_learned,OXM_OF_METADATA[],eth_type=0x800,"
     "load:0x1->NXM_NX_REG10[14])"),
]


def test_bytes_equal_osken_serialization() -> None:
    """Same bytes as os-ken builds, except for os-ken's missing NX padding
    (python-libs bug 2): its buffer stops short of its own length field."""
    for act, text in SERIALIZE_CASES:
        theirs = _osken_bytes(act)
        ours = encode_actions(parse_actions(text))
        declared = int.from_bytes(theirs[2:4], "big")
        assert declared == len(ours), text
        assert ours == theirs + bytes(declared - len(theirs)), text
