"""consider_port_binding per port type; expected text from the C agent where available
(reference-data/rich/flows.raw.txt) and from physical.c semantics otherwise."""

from __future__ import annotations

from typing import Any

from ofctrl.flow import Flow
from ofctrl.match import Match
from physical import ChassisTunnel, TunnelType, flow_to_string, port_binding_flows

from tests.physical.fakes import (GENEVE_HV2, HV1, HV2, HV3, LR0, LS_A, LS_B, LS_PUB, NS,
                                  context, lines, pb, row)

P1 = pb("ls-a-p1", "21fb6a5a-39ac-4693-9120-bde1d507b52e", LS_A, 4, chassis=[HV1])
MD = pb("ls-a-md", "8ebaba1f-4e19-43f7-b7fe-25769b2b41f4", LS_A, 1, "localport")
LN = pb("ln-pub", "121b5766-0ebe-4b03-91e2-25a0d862dfaa", LS_PUB, 1, "localnet",
        options={"network_name": "physnet1"}, mac=["unknown"])
LR0_PUB = pb("lr0-pub", "0c756aa7-c052-43ec-96c9-0d64f96a87bc", LR0, 2, "patch",
             options={"peer": "ls-pub-lr0", "chassis-redirect-port": "cr-lr0-pub"},
             mac=["0a:00:00:00:10:01 172.16.0.1/24"])
LS_PUB_LR0 = pb("ls-pub-lr0", "8929ad16-29e5-44c1-a335-d8597f4d4dba", LS_PUB, 2, "patch",
                options={"peer": "lr0-pub"}, mac=["router"])
CR = pb("cr-lr0-pub", "4695f1bc-8aed-4157-81f1-a209145e2722", LR0, 3, "chassisredirect",
        chassis=[HV1], options={"distributed-port": "lr0-pub"})
B2 = pb("ls-b-p2", "aed72cc7-17f5-4b25-afba-4451b00837b1", LS_B, 2, chassis=[HV2])
EXT = pb("ext1", "1d6eb385-a92b-4223-804d-671eb5b0373e", LS_PUB, 3, "external",
         mac=["0a:00:00:00:10:20 172.16.0.20"])
ALL = [P1, MD, LN, LR0_PUB, LS_PUB_LR0, CR, B2, EXT]
VIFS = {"ls-a-p1": 11, "ls-a-md": 13}


def _ctx(**kw: Any) -> Any:
    args: dict[str, Any] = dict(vif_ofports=VIFS, patch_ofports={"ln-pub": 2})
    args.update(kw)
    return context(ALL, **args)


def test_local_vif_matches_c_agent() -> None:
    flows = port_binding_flows(_ctx(), P1)
    assert all(isinstance(f, Flow) and isinstance(f.match, Match) and f.cookie == 0x21FB6A5A
               for f in flows)
    assert lines(flows) == sorted([
        "priority=100,in_port=\"vif-a1\" actions=set_field:0x2->reg13,set_field:0x6->reg11,"
        "set_field:0x5->reg12,set_field:0x3->metadata,set_field:0x4->reg14,resubmit(,8)",
        "table=40, priority=100,reg15=0x4,metadata=0x3 actions=set_field:0x2->reg13,"
        "set_field:0x6->reg11,set_field:0x5->reg12,resubmit(,41)",
        "table=41, priority=100,reg10=0/0x1,reg14=0x4,reg15=0x4,metadata=0x3 actions=drop",
        "table=64, priority=100,reg10=0x1/0x1,reg15=0x4,metadata=0x3 actions="
        "push:NXM_OF_IN_PORT[],set_field:ANY->in_port,resubmit(,65),pop:NXM_OF_IN_PORT[]",
        "table=65, priority=100,reg15=0x4,metadata=0x3 actions=output:\"vif-a1\"",
    ])


def test_localport_sets_flag_and_never_tunnels() -> None:
    got = lines(port_binding_flows(_ctx(), MD))
    assert ("priority=100,in_port=\"vif-md\" actions=set_field:0x1->reg13,set_field:0x6->reg11,"
            "set_field:0x5->reg12,set_field:0x3->metadata,set_field:0x1->reg14,"
            "set_field:0x400/0x400->reg10,resubmit(,8)") in got
    assert "table=39, priority=150,reg14=0x1,metadata=0x3 actions=resubmit(,40)" in got


def test_vif_requested_elsewhere_is_not_local() -> None:
    other = pb("ls-a-p1", str(P1.uuid), LS_A, 4, chassis=[HV1],
               options={"requested-chassis": "hv2"})
    got = lines(port_binding_flows(_ctx(), other))
    assert not any("vif-a1" in line for line in got)


def test_localnet_untagged_two_table0_flows_and_chassis_mac_conj() -> None:
    got = lines(port_binding_flows(_ctx(), LN))
    tail = ("set_field:0xd->reg13,set_field:0xb->reg11,set_field:0xa->reg12,"
            "set_field:0x2->metadata,set_field:0x1->reg14,resubmit(,8)")
    assert f"priority=100,in_port=\"patch-br-int-to\",dl_vlan=0 actions=pop_vlan,{tail}" in got
    assert f"priority=100,in_port=\"patch-br-int-to\",vlan_tci=0x0000/0x1000 actions={tail}" in got
    assert ("priority=180,conj_id=100,in_port=\"patch-br-int-to\",vlan_tci=0x0000/0x1000 actions="
            "set_field:0xd->reg13,set_field:0xb->reg11,set_field:0xa->reg12,set_field:0x2->metadata,"
            "set_field:0x1->reg14,set_field:0a:00:00:00:10:01->eth_src,resubmit(,8)") in got
    assert "priority=180,vlan_tci=0x0000/0x1000 actions=conjunction(100,2/2)" in got
    assert "table=41, priority=160,reg10=0x400/0x400,reg15=0x1,metadata=0x2 actions=drop" in got
    assert "table=41, priority=160,reg10=0x10/0x10,reg15=0x1,metadata=0x2 actions=drop" in got
    assert "table=65, priority=100,reg15=0x1,metadata=0x2 actions=output:\"patch-br-int-to\"" in got
    assert not any("priority=170" in line for line in got)  # ext1 is not bound here


def test_localnet_tagged_and_external_port_bound_here() -> None:
    ln = pb("ln-pub", str(LN.uuid), LS_PUB, 1, "localnet", tag=[100],
            options={"network_name": "physnet1"})
    ext = pb("ext1", str(EXT.uuid), LS_PUB, 3, "external", chassis=[HV1],
             mac=["0a:00:00:00:10:20 172.16.0.20"])
    ctx = context([P1, ln, LR0_PUB, LS_PUB_LR0, ext], vif_ofports=VIFS, patch_ofports={"ln-pub": 2})
    got = lines(port_binding_flows(ctx, ln))
    assert any(line.startswith('priority=150,in_port="patch-br-int-to",dl_vlan=100 actions=pop_vlan,')
               for line in got)
    assert not any("vlan_tci=0x0000/0x1000 actions=set_field:0xd" in line for line in got)
    assert ("table=65, priority=100,reg15=0x1,metadata=0x2 actions=push_vlan:0x8100,"
            "set_field:4196->vlan_vid,output:\"patch-br-int-to\",pop_vlan") in got
    assert ("table=41, priority=170,reg10=0x400/0x400,reg15=0x1,metadata=0x2,dl_dst=0a:00:00:00:10:20 "
            "actions=set_field:0->reg0,set_field:0->reg1,set_field:0->reg2,set_field:0->reg3,"
            "set_field:0->reg4,set_field:0->reg5,set_field:0->reg6,set_field:0->reg7,"
            "set_field:0->reg8,set_field:0->reg9,resubmit(,42)") in got


def test_patch_port_clones_into_peer_pipeline() -> None:
    got = lines(port_binding_flows(_ctx(), LS_PUB_LR0))
    assert ("table=65, priority=100,reg15=0x2,metadata=0x2 actions=clone(ct_clear,set_field:0->reg11,"
            "set_field:0->reg12,set_field:0->reg13,set_field:0xc->reg11,set_field:0x9->reg12,"
            "set_field:0x4->metadata,set_field:0x2->reg14,set_field:0->reg10,set_field:0->reg15,"
            "set_field:0->reg0,set_field:0->reg1,set_field:0->reg2,set_field:0->reg3,set_field:0->reg4,"
            "set_field:0->reg5,set_field:0->reg6,set_field:0->reg7,set_field:0->reg8,"
            "set_field:0->reg9,resubmit(,8))") in got
    assert len(got) == 4  # 40, 41, 64, 65


def test_patch_without_valid_peer_gives_nothing() -> None:
    lonely = pb("x", "00000000-0000-0000-0000-000000000001", LS_A, 9, "patch", options={"peer": "nope"})
    assert port_binding_flows(context([lonely]), lonely) == []


def test_chassisredirect_here_rewrites_outport() -> None:
    got = lines(port_binding_flows(_ctx(), CR))
    assert got == ["table=40, priority=100,reg15=0x3,metadata=0x4 actions=set_field:0x2->reg15,"
                   "set_field:0xc->reg11,set_field:0x9->reg12,resubmit(,41)"]


def test_remote_port_geneve() -> None:
    got = lines(port_binding_flows(_ctx(), B2))
    assert got == ["table=39, priority=100,reg15=0x2,metadata=0x1 actions=set_field:0x1/0xffffff->tun_id,"
                   "set_field:0x2->tun_metadata0,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],"
                   "output:\"ovn-hv2-0\",resubmit(,40)"]


def test_remote_port_stt_vxlan_and_additional_chassis() -> None:
    tuns = [ChassisTunnel("hv2", 5, TunnelType.STT, "10.0.0.2"),
            ChassisTunnel("hv3", 6, TunnelType.VXLAN, "10.0.0.3")]
    p = pb("p", "00000000-0000-0000-0000-0000000000aa", LS_B, 7, chassis=[HV2], additional_chassis=[HV3])
    got = lines(port_binding_flows(context([p], chassis_tunnels=tuns), p), {})
    assert got == ["table=39, priority=100,reg15=0x7,metadata=0x1 actions="
                   f"set_field:{(7 << 24) | 1:#x}->tun_id,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_ID[40..54],"
                   f"output:5,set_field:{(7 << 12) | 1:#x}/0xffffff->tun_id,output:6,resubmit(,40)"]


def test_remote_port_reached_through_localnet() -> None:
    remote = pb("r", "00000000-0000-0000-0000-0000000000ab", LS_PUB, 5, chassis=[HV2])
    got = lines(port_binding_flows(_ctx(), remote))
    assert got == ["table=40, priority=100,reg15=0x5,metadata=0x2 actions=set_field:0x1->reg15,resubmit(,40)"]
    # External port, unbound: same treatment (C agent output for ext1).
    got = lines(port_binding_flows(_ctx(), EXT))
    assert got == ["table=40, priority=100,reg15=0x3,metadata=0x2 actions=set_field:0x1->reg15,resubmit(,40)"]


def test_ha_remote_uses_active_backup_bundle() -> None:
    grp = NS(ha_chassis=[NS(chassis=[HV2], priority=10), NS(chassis=[HV3], priority=20)], ref_chassis=[])
    p = pb("cr", "00000000-0000-0000-0000-0000000000ac", LS_B, 8, ha_chassis_group=[grp])
    tuns = [GENEVE_HV2, ChassisTunnel("hv3", 3, TunnelType.GENEVE, "127.0.0.3")]
    got = lines(port_binding_flows(context([p], chassis_tunnels=tuns), p), {})
    assert got == ["table=39, priority=100,reg15=0x8,metadata=0x1 actions=set_field:0x1/0xffffff->tun_id,"
                   "set_field:0x8->tun_metadata0,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],"
                   "bundle(eth_src,0,active_backup,ofport,members:3,1)"]


def test_nested_container_tagged() -> None:
    child = pb("c1", "00000000-0000-0000-0000-0000000000ad", LS_A, 9, chassis=[HV1],
               parent_port=["ls-a-p1"], tag=[42])
    ctx = context([P1, child], vif_ofports=VIFS)
    got = lines(port_binding_flows(ctx, child))
    assert ("priority=150,in_port=\"vif-a1\",dl_vlan=42 actions=set_field:0x20/0x20->reg10,pop_vlan,"
            "set_field:0x6->reg11,set_field:0x5->reg12,set_field:0x3->metadata,set_field:0x9->reg14,"
            "resubmit(,8)") in got
    assert ("table=64, priority=100,reg15=0x9,metadata=0x3 actions=push:NXM_OF_IN_PORT[],"
            "set_field:ANY->in_port,resubmit(,65),pop:NXM_OF_IN_PORT[]") in got
    assert ("table=64, priority=100,reg10=0x20/0x20,reg15=0x4,metadata=0x3 actions=push:NXM_OF_IN_PORT[],"
            "set_field:ANY->in_port,resubmit(,65),pop:NXM_OF_IN_PORT[]") in got
    assert ("table=65, priority=100,reg15=0x9,metadata=0x3 actions=push_vlan:0x8100,"
            "set_field:4138->vlan_vid,output:\"vif-a1\",pop_vlan") in got


def test_not_local_datapath_gives_nothing() -> None:
    assert port_binding_flows(context(ALL, dps=[LS_B]), P1) == []


def test_drop_sampling_when_debug_collector_set() -> None:
    from physical import PhysicalDebug
    ctx = context(ALL, vif_ofports=VIFS, debug=PhysicalDebug(collector_set_id=7, obs_domain_id=1))
    got = lines(port_binding_flows(ctx, P1))
    assert ("table=41, priority=100,reg10=0/0x1,reg14=0x4,reg15=0x4,metadata=0x3 actions="
            "sample(probability=65535,collector_set_id=7,obs_domain_id=16777216,obs_point_id=41)") in got


def test_rarp_activation_strategy_blocks_until_activated() -> None:
    p = pb("m", "00000000-0000-0000-0000-0000000000ae", LS_A, 6, chassis=[HV2],
           additional_chassis=[HV1], options={"activation-strategy": "rarp"})
    ctx = context([p], vif_ofports={"m": 30})
    got = lines(port_binding_flows(ctx, p), {})
    assert "priority=1000,in_port=30 actions=drop" in got
    assert "table=65, priority=1000,reg15=0x6,metadata=0x3 actions=drop" in got
    assert any(line.startswith("priority=1010,rarp,in_port=30 actions=") for line in got)
    activated = context([p], vif_ofports={"m": 30}, activated_ports=frozenset({(3, 6)}))
    assert not any("priority=1000" in line for line in lines(port_binding_flows(activated, p), {}))


def test_unused_row_helper() -> None:
    assert row("00000000-0000-0000-0000-000000000002").uuid.int == 2
    assert LS_A.tunnel_key == 3 and LR0.tunnel_key == 4


def test_multichassis_port_tunnels_and_pmtud_flows() -> None:
    from ofctrl.ofpacts import Controller, SetNwTtl, decode_actions
    mcp = pb("mc", "00000000-0000-0000-0000-0000000000af", LS_PUB, 6, chassis=[HV1],
             additional_chassis=[HV2])
    remote = pb("r", "00000000-0000-0000-0000-0000000000b0", LS_PUB, 7, chassis=[HV2])
    ctx = context([LN, mcp, remote], vif_ofports={"mc": 40}, patch_ofports={"ln-pub": 2},
                  iface_mtus={"mc": 1500})
    flows = port_binding_flows(ctx, remote)
    got = lines(flows)
    assert ("table=39, priority=110,reg14=0x6,reg15=0x7,metadata=0x2 actions=set_field:0x2/0xffffff->tun_id,"
            "set_field:0x7->tun_metadata0,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],"
            "output:\"ovn-hv2-0\"") in got
    assert ("table=37, priority=100,ip,reg14=0x6,metadata=0x2 actions=check_pkt_larger(1442)->NXM_NX_REG9[1],"
            "resubmit(,38)") in got
    big = [f for f in flows if f.table == 38]
    assert len(big) == 4
    for f in big:
        text = flow_to_string(f)
        assert ",reg9=0x2/0x2," in text and text.endswith(",pause)")
        (ctl,) = f.actions
        assert isinstance(ctl, Controller) and ctl.pause
        # userdata: ICMP opcode, padding, then the nested OF1.5 actions.
        assert ctl.userdata[:8] == bytes.fromhex("0000000a00000000")
        nested = decode_actions(ctl.userdata[8:])
        assert SetNwTtl(255) in nested
        inner = [a for a in nested if isinstance(a, Controller)]
        assert len(inner) == 1 and inner[0].pause


def test_lport_update_dependencies() -> None:
    from physical import lport_update
    ctx = _ctx()
    upd = lport_update(ctx, EXT, False, [LN, LS_PUB_LR0, EXT])
    assert upd is not None
    assert [r.logical_port for r in upd.rebuild] == ["ln-pub", "ext1"]
    assert set(upd.remove) == {EXT.uuid, LN.uuid}
    upd = lport_update(ctx, LS_PUB_LR0, False)
    assert upd is not None and [r.logical_port for r in upd.rebuild] == ["ls-pub-lr0", "lr0-pub"]
    upd = lport_update(ctx, P1, True)
    assert upd is not None and upd.rebuild == [] and upd.remove == [P1.uuid]
    multi = pb("ls-a-p1", str(P1.uuid), LS_A, 4, chassis=[HV1], additional_chassis=[HV2])
    upd = lport_update(ctx, multi, False, [multi, MD])
    assert upd is not None and [r.logical_port for r in upd.rebuild] == ["ls-a-p1", "ls-a-md"]
    assert "ls-a-p1" in ctx.local_datapaths[3].multichassis_ports
    vtep = pb("v", "00000000-0000-0000-0000-0000000000b1", LS_B, 9, "vtep")
    assert lport_update(ctx, vtep, False) is None
