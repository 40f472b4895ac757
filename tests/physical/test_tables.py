"""Multicast, generic, neighbour/FDB, LB hairpin and port-security flows."""

from __future__ import annotations

import uuid

from physical import (ChassisTunnel, TunnelType, chassis_mac_conj_flows, default_flows,
                      fdb_flows, flow_to_string, lb_hairpin_flows, mac_binding_flows,
                      mc_group_flows, port_security_flows, static_mac_binding_flows, tunnel_flows)
from physical.ovshash import hash_string, hmap_order, sset_order

from tests.physical.fakes import (HV1, HV2, HV3, LS_A, LS_B, NS, chassis, context, lines, pb, row)

P1 = pb("ls-a-p1", "21fb6a5a-39ac-4693-9120-bde1d507b52e", LS_A, 4, chassis=[HV1])
MD = pb("ls-a-md", "8ebaba1f-4e19-43f7-b7fe-25769b2b41f4", LS_A, 1, "localport")
P2 = pb("ls-a-p2", "bd46d3e7-71dc-4450-a3f1-36cc64f75877", LS_A, 5, chassis=[HV1],
        port_security=["0a:00:00:00:01:03 10.0.1.3"])
VIP = pb("ls-a-vip", "ea3ab05e-a925-45ca-9888-7d4f2f5d033a", LS_A, 3, "virtual")
A_LR0 = pb("ls-a-lr0", "67b33cce-7950-461f-9eca-20d0a1a5b193", LS_A, 2, "patch",
           options={"peer": "lr0-a"})
B1 = pb("ls-b-p1", "b533c940-790e-47ad-8b66-832cec56cd9a", LS_B, 3, chassis=[HV1])
B2 = pb("ls-b-p2", "aed72cc7-17f5-4b25-afba-4451b00837b1", LS_B, 2, chassis=[HV2])
VIFS = {"ls-a-p1": 11, "ls-a-p2": 12, "ls-a-md": 13, "ls-b-p1": 21}


def _mc(u: str, dp: NS, key: int, ports: list[NS]) -> NS:
    return row(u, datapath=dp, tunnel_key=key, ports=sorted(ports, key=lambda p: p.uuid))


def test_mc_flood_local_and_patch_and_localport_match_c_agent() -> None:
    mc = _mc("d6abc78f-8453-427a-9be7-940b97ed254e", LS_A, 0x8000, [P1, A_LR0, MD, P2, VIP])
    ctx = context([P1, MD, P2, VIP, A_LR0], vif_ofports=VIFS)
    assert lines(mc_group_flows(ctx, mc)) == [
        "table=39, priority=100,reg15=0x8000,metadata=0x3 actions=set_field:0x2->reg15,resubmit(,41),"
        "set_field:0x1->reg15,resubmit(,41),set_field:0x8000->reg15,resubmit(,40)",
        "table=40, priority=100,reg15=0x8000,metadata=0x3 actions=set_field:0x2->reg13,"
        "set_field:0x4->reg15,resubmit(,41),set_field:0x1->reg13,set_field:0x3->reg13,"
        "set_field:0x5->reg15,resubmit(,41),set_field:0x8000->reg15",
    ]


def test_mc_remote_members_are_tunnelled() -> None:
    mc = _mc("294778d7-2ba2-42f4-8722-396321a1d031", LS_B, 0x8000, [B2, B1])
    ctx = context([B1, B2], vif_ofports=VIFS)
    flows = mc_group_flows(ctx, mc)
    assert {f.cookie for f in flows} == {0x294778D7}
    assert lines(flows) == [
        "table=39, priority=100,reg15=0x8000,metadata=0x1 actions=set_field:0x1/0xffffff->tun_id,"
        "set_field:0x8000->tun_metadata0,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],"
        "output:\"ovn-hv2-0\",resubmit(,40)",
        "table=40, priority=100,reg15=0x8000,metadata=0x1 actions=set_field:0x4->reg13,"
        "set_field:0x3->reg15,resubmit(,41),set_field:0x8000->reg15",
    ]


def test_mc_vxlan_fanout_uses_12_bit_keys_once_per_type() -> None:
    b3 = pb("b3", "00000000-0000-0000-0000-0000000000b3", LS_B, 9, chassis=[HV3])
    mc = _mc("00000000-0000-0000-0000-0000000000c1", LS_B, 0x8001, [B2, b3])
    tuns = [ChassisTunnel("hv2", 4, TunnelType.VXLAN), ChassisTunnel("hv3", 5, TunnelType.VXLAN)]
    ctx = context([B2, b3], chassis_tunnels=tuns)
    (flow,) = mc_group_flows(ctx, mc)
    order = sset_order(["hv2", "hv3"])
    outs = ",".join(f"output:{4 if n == 'hv2' else 5}" for n in order)
    vni = 1 | ((0x800 | 1) << 12)
    assert flow_to_string(flow) == (f"table=39, priority=100,reg15=0x8001,metadata=0x1 actions="
                                    f"set_field:{vni:#x}/0xffffff->tun_id,{outs}")


def test_tunnel_and_default_flows_match_small_reference() -> None:
    ctx = context([], chassis_tunnels=[ChassisTunnel("hv2", 2, TunnelType.GENEVE, "127.0.0.2")])
    got = lines(tunnel_flows(ctx) + default_flows(ctx), {})
    small = open("/work/shared/reference-data/small/br-int-flows.txt").read()
    expected = []
    for line in small.splitlines():
        line = line.strip()
        if "cookie=" in line or not line or line.startswith(("OFPST", "NXST")):
            continue
        table = int(line.split("table=")[1].split(",")[0]) if "table=" in line else 0
        if table in (0, 37, 38, 39, 40, 41, 64, 65):
            expected.append(line)
    assert got == sorted(expected)


def test_vxlan_and_stt_decap_and_ramp() -> None:
    vtep = pb("vtep0", "00000000-0000-0000-0000-0000000000d1", LS_B, 6, "vtep", chassis=[HV3])
    tuns = [ChassisTunnel("hv3", 7, TunnelType.VXLAN), ChassisTunnel("hv2", 8, TunnelType.STT)]
    got = lines(tunnel_flows(context([vtep], chassis_tunnels=tuns), [vtep]), {})
    assert got == sorted([
        "priority=100,in_port=7 actions=move:NXM_NX_TUN_ID[12..23]->NXM_NX_REG15[0..11],"
        "move:NXM_NX_TUN_ID[0..11]->OXM_OF_METADATA[0..11],resubmit(,40)",
        "priority=100,in_port=8 actions=move:NXM_NX_TUN_ID[40..54]->NXM_NX_REG14[0..14],"
        "move:NXM_NX_TUN_ID[24..39]->NXM_NX_REG15[0..15],move:NXM_NX_TUN_ID[0..23]->OXM_OF_METADATA[0..23],"
        "resubmit(,40)",
        "priority=105,tun_id=0x800000/0x800000,in_port=7 actions=set_field:0x8000/0x8000->reg15,"
        "move:NXM_NX_TUN_ID[12..22]->NXM_NX_REG15[0..10],move:NXM_NX_TUN_ID[0..11]->OXM_OF_METADATA[0..11],"
        "resubmit(,40)",
        "priority=110,tun_id=0x1,in_port=7 actions=move:NXM_NX_TUN_ID[0..23]->OXM_OF_METADATA[0..23],"
        "set_field:0x6/0x7fff->reg14,set_field:0x2/0x2->reg10,resubmit(,8)",
    ])


def test_chassis_mac_conjunction_for_remote_chassis_only() -> None:
    hv2 = chassis("hv2", str(HV2.uuid), **{"ovn-chassis-mac-mappings": "physnet1:0e:00:00:00:00:02"})
    hv1 = chassis("hv1", str(HV1.uuid), **{"ovn-chassis-mac-mappings": "physnet1:0e:00:00:00:00:01"})
    flows = chassis_mac_conj_flows(context([], all_chassis=[hv1, hv2]))
    assert lines(flows) == ["priority=180,dl_src=0e:00:00:00:00:02 actions=conjunction(100,1/2)"]
    assert flows[0].cookie == HV2.uuid.int >> 96


def test_mac_bindings_and_fdb() -> None:
    ctx = context([P1])
    mb = row("00000000-0000-0000-0000-0000000000e1", logical_port="ls-a-p1", ip="10.0.1.9",
             mac="0a:00:00:00:00:09")
    assert lines(mac_binding_flows(ctx, mb)) == [
        "table=66, priority=100,reg0=0xa000109,reg15=0x4,metadata=0x3 actions="
        "set_field:0a:00:00:00:00:09->eth_dst,set_field:0x40/0x40->reg10",
        "table=67, priority=100,arp,reg0=0xa000109,reg14=0x4,metadata=0x3,dl_src=0a:00:00:00:00:09 "
        "actions=set_field:0x40/0x40->reg10",
    ]
    smb = row("00000000-0000-0000-0000-0000000000e2", logical_port="ls-a-p1", ip="fd00::1",
              mac="0a:00:00:00:00:0a", override_dynamic_mac=True)
    got = lines(static_mac_binding_flows(ctx, smb))
    assert got[0].startswith("table=66, priority=150,reg0=0xfd000000,reg1=0,reg2=0,reg3=0x1,reg15=0x4,")
    assert got[1] == ("table=67, priority=150,icmp6,reg0=0xfd000000,reg1=0,reg2=0,reg3=0x1,reg14=0x4,"
                      "metadata=0x3,dl_src=0a:00:00:00:00:0a,icmp_code=0 actions=set_field:0x40/0x40->reg10")
    remote_dp = row("00000000-0000-0000-0000-0000000000e3", logical_port="nope", ip="1.1.1.1", mac="0a:00:00:00:00:01")
    assert mac_binding_flows(ctx, remote_dp) == []
    fdb = row("00000000-0000-0000-0000-0000000000e4", mac="0a:00:00:00:00:0b", dp_key=3, port_key=4)
    assert lines(fdb_flows(ctx, fdb)) == [
        "table=71, priority=100,metadata=0x3,dl_dst=0a:00:00:00:00:0b actions=set_field:0x4->reg15",
        "table=72, priority=100,reg14=0x4,metadata=0x3,dl_src=0a:00:00:00:00:0b actions=set_field:0x100/0x100->reg10",
    ]


def _lb(**kw: object) -> NS:
    cols: dict[str, object] = dict(
        vips={"10.0.0.11:53": "10.0.1.3:53,10.0.2.3:53"}, protocol=["udp"],
        options={"hairpin_orig_tuple": "true"}, datapaths=[LS_A], datapath_group=[])
    cols.update(kw)
    return row("ef9f2ba4-6838-4a5a-9380-19ca35dd3534", **cols)


def test_lb_hairpin_matches_c_agent() -> None:
    ctx = context([P1], lb_hairpin_use_ct_mark=False)
    got = lines(lb_hairpin_flows(ctx, _lb()))
    assert got == sorted([
        "table=68, priority=100,ct_label=0x2/0x2,udp,reg1=0xa00000b,reg2=0x35/0xffff,nw_src=10.0.1.3,"
        "nw_dst=10.0.1.3,tp_dst=53 actions=set_field:0x80/0x80->reg10,learn(table=69,delete_learned,"
        "cookie=0xef9f2ba4,OXM_OF_METADATA[],eth_type=0x800,NXM_OF_IP_SRC[],ip_dst=10.0.0.11,nw_proto=17,"
        "NXM_OF_UDP_SRC[]=NXM_OF_UDP_DST[],load:0x1->NXM_NX_REG10[7])",
        "table=68, priority=100,ct_label=0x2/0x2,udp,reg1=0xa00000b,reg2=0x35/0xffff,nw_src=10.0.2.3,"
        "nw_dst=10.0.2.3,tp_dst=53 actions=set_field:0x80/0x80->reg10,learn(table=69,delete_learned,"
        "cookie=0xef9f2ba4,OXM_OF_METADATA[],eth_type=0x800,NXM_OF_IP_SRC[],ip_dst=10.0.0.11,nw_proto=17,"
        "NXM_OF_UDP_SRC[]=NXM_OF_UDP_DST[],load:0x1->NXM_NX_REG10[7])",
        "table=70, priority=100,udp,reg1=0xa00000b,reg2=0x35/0xffff actions="
        "ct(commit,zone=NXM_NX_REG12[0..15],nat(src=10.0.0.11))",
    ])
    assert lb_hairpin_flows(context([B2], dps=[LS_B]), _lb()) == []


def test_lb_hairpin_ct_mark_old_northd_and_snat_ip() -> None:
    ctx = context([P1])
    lb = _lb(options={"hairpin_snat_ip": "10.9.9.9"}, vips={"10.0.0.11": "10.0.1.3"})
    got = lines(lb_hairpin_flows(ctx, lb))
    assert got[0].startswith("table=68, priority=100,ct_state=+trk+dnat,ct_mark=0x2/0x2,"
                             "ct_nw_dst=10.0.0.11,ip,nw_src=10.0.1.3,nw_dst=10.0.1.3 ")
    assert "ip_dst=10.9.9.9,NXM_OF_IP_PROTO[]," in got[0]
    assert got[1] == ("table=70, priority=190,ct_state=+trk+dnat,ct_nw_dst=10.0.0.11,ip,metadata=0x3 "
                      "actions=ct(commit,zone=NXM_NX_REG12[0..15],nat(src=10.9.9.9))")


def test_port_security_matches_c_agent() -> None:
    ctx = context([P2], vif_ofports=VIFS)
    got = lines(port_security_flows(ctx, P2))
    with open("/work/shared/reference-data/rich/flows.raw.txt") as fh:
        ref = sorted(line.strip().split(", ", 1)[1] for line in fh
                     if "cookie=0xbd46d3e7, table=7" in line and "table=7 " not in line)
    assert got == ref and len(got) == 19
    unbound = pb("x", "00000000-0000-0000-0000-0000000000f1", LS_A, 8, port_security=["0a:00:00:00:00:01"])
    assert port_security_flows(ctx, unbound) == []


def test_port_security_ipv6_and_mac_only() -> None:
    p = pb("p6", "00000000-0000-0000-0000-0000000000f2", LS_A, 8, chassis=[HV1],
           port_security=["0a:00:00:00:00:02 fd00::5/64", "0a:00:00:00:00:03"])
    got = lines(port_security_flows(context([p]), p))
    assert ("table=73, priority=90,ipv6,reg14=0x8,metadata=0x3,dl_src=0a:00:00:00:00:02,"
            "ipv6_src=fd00::5 actions=resubmit(,74)") in got
    assert ("table=73, priority=90,ipv6,reg14=0x8,metadata=0x3,dl_src=0a:00:00:00:00:02,"
            "ipv6_src=fe80::800:ff:fe00:2 actions=resubmit(,74)") in got
    assert ("table=73, priority=90,reg14=0x8,metadata=0x3,dl_src=0a:00:00:00:00:03 "
            "actions=resubmit(,74)") in got
    assert ("table=75, priority=95,ipv6,reg15=0x8,metadata=0x3,dl_dst=0a:00:00:00:00:02,"
            "ipv6_dst=ff00::/8 actions=set_field:0/0x1000->reg10") in got
    assert ("table=75, priority=85,reg15=0x8,metadata=0x3,dl_dst=0a:00:00:00:00:03 "
            "actions=set_field:0/0x1000->reg10") in got


def test_ovs_hash_and_hmap_order() -> None:
    # hash_bytes of the empty string is mhash_finish(0) = 0.
    assert hash_string("") == 0
    assert hash_string("hv2") != hash_string("hv3")
    # hmap: newest first within a bucket; the 2nd insert grows the table to
    # 4 buckets and the rehash reverses the bucket's list again.
    assert hmap_order([(0, "a"), (0, "b")]) == ["a", "b"]
    assert hmap_order([(1, "a"), (0, "b")]) == ["b", "a"]
    assert hmap_order([(0, "a"), (0, "b"), (0, "c")]) == ["c", "a", "b"]
    names = [f"chassis-{i}" for i in range(10)]
    order = sset_order(names + names[:3])
    assert sorted(order) == sorted(names)
    assert uuid.UUID(int=0) is not None


def test_template_lb_uses_chassis_template_vars() -> None:
    lb = _lb(options={"hairpin_orig_tuple": "true", "template": "true"},
             vips={"^vip:^vport": "^be1:53,10.0.2.3:53"}, protocol=["udp"])
    ctx = context([P1], lb_hairpin_use_ct_mark=False,
                  template_vars={"vip": "10.0.0.11", "vport": "53", "be1": "10.0.1.3"})
    expected = lines(lb_hairpin_flows(context([P1], lb_hairpin_use_ct_mark=False), _lb()))
    assert lines(lb_hairpin_flows(ctx, lb)) == expected
    # Unknown template variable: the VIP does not parse and gives no flow.
    assert lb_hairpin_flows(context([P1], template_vars={}), lb) == []
    # A backend without port for a VIP with port invalidates the VIP.
    assert lb_hairpin_flows(ctx, _lb(vips={"10.0.0.11:53": "10.0.1.3"})) == []
