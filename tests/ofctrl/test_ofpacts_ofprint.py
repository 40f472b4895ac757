"""``ovs-ofctl ofp-print`` (OVS 3.1's own decoder and formatter) must print
exactly ``format_actions()`` for an OF1.5 flow_mod carrying our encoded
actions. The match of each flow_mod satisfies the actions' prerequisites."""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from ofctrl.match import Match
from ofctrl.ofpacts import encode_instructions, format_actions, parse_actions

# (match, action text exactly as OVS prints it)
FLOWS: list[tuple[str, str]] = [
    ("", "set_field:0xd->reg13,set_field:0xb->reg11,set_field:0x2->metadata,"
         "set_field:0x1->reg14,resubmit(,8)"),
    ("", "move:NXM_NX_TUN_ID[0..23]->OXM_OF_METADATA[0..23],"
         "move:NXM_NX_REG14[]->NXM_NX_REG15[],resubmit(,40)"),
    ("tcp", "dec_ttl(),dec_ttl,dec_ttl(1,2)"),
    ("", "note:01.02.00.00.00.00,note:01.02.03.04.05.06.07.08.09.0a.0b.0c.0d.0e"),
    ("ip", "ct(commit,table=21,zone=NXM_NX_REG13[0..15],nat(dst=10.0.1.2:8080),"
           "exec(set_field:0x2/0x2->ct_label))"),
    ("ipv6", "ct(commit,table=21,zone=NXM_NX_REG13[0..15],nat(dst=[fd00:a::2]:8080),"
             "exec(set_field:0x2/0x2->ct_mark))"),
    ("ip", "ct(table=19,zone=NXM_NX_REG11[0..15],nat)"),
    ("ip", "ct(commit,zone=NXM_NX_REG12[0..15],nat(src=10.0.0.1-10.0.0.5:100-200,persistent,"
           "random))"),
    ("tcp", "ct(commit,force,zone=5,alg=ftp)"),
    ("ip", "ct(commit,zone=NXM_NX_REG13[0..15],nat(src),exec(set_field:0x1/0x1->ct_label)),"
           "controller(userdata=00.00.00.07.00.00.00.00.01.01.64.72.6f.70,meter_id=1)"),
    ("", "set_field:0x4000/0xe000->vlan_tci"),
    ("", "output:NXM_NX_REG15[],output:OXM_OF_PKT_REG4[0..15],output:3,IN_PORT,"
         "CONTROLLER:65535,LOCAL"),
    ("", "bundle(eth_src,0,active_backup,ofport,members:1,2)"),
    ("", "bundle_load(symmetric_l4,5,hrw,ofport,NXM_NX_REG0[],members:4,8)"),
    ("", "sample(probability=100,collector_set_id=200,obs_domain_id=11259375,"
         "obs_point_id=1000)"),
    ("", "sample(probability=10,collector_set_id=1,obs_domain_id=2,obs_point_id=3,"
         "sampling_port=5,ingress)"),
    ("", "group:3,meter:2,set_queue:5"),
    ("", "push_vlan:0x8100"),
    ("dl_vlan=5", "pop_vlan"),
    ("", "exit"),
    ("tcp", "fin_timeout(idle_timeout=5,hard_timeout=9)"),
    ("", "check_pkt_larger(1500)->NXM_NX_XXREG0[96],check_pkt_larger(1442)->NXM_NX_REG9[1]"),
    ("", "set_field:0x8000->tun_metadata0,set_field:0x1/0xffffff->tun_id,"
         "move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30]"),
    ("", "controller(userdata=00.00.00.02.00.00.00.00,pause,meter_id=2)"),
    ("", "controller(reason=no_match,max_len=128,id=3)"),
    ("", "controller(userdata=00.00.00.00.00.00.00.00.00.19.00.10.80.00.06.06.ff.ff.ff.ff.ff.ff."
         "00.00.ff.ff.00.10.00.00.23.20.00.0e.ff.f8.40.00.00.00),resubmit(,64)"),
    ("ip", "learn(table=78,idle_timeout=60,delete_learned,OXM_OF_METADATA[],eth_type=0x800,"
         "NXM_OF_IP_SRC[],ip_dst=10.0.0.11,nw_proto=17,udp_dst=53,"
         "load:0x1->NXM_NX_REG10[14],load:0xa000103->NXM_NX_REG4[],"
         "load:0x35->NXM_NX_REG8[0..15])"),
    ("ip", "learn(table=69,hard_timeout=5,priority=10,send_flow_rem,cookie=0x1234,"
         "eth_type=0x800,NXM_OF_IP_SRC[]=NXM_OF_IP_DST[],NXM_NX_REG0[0..3]=0x5,"
         "load:NXM_OF_IP_DST[]->NXM_NX_REG4[],output:NXM_NX_REG15[])"),
    ("udp6", "learn(table=77,idle_timeout=20,hard_timeout=30,delete_learned,OXM_OF_METADATA[],"
         "eth_type=0x86dd,NXM_NX_IPV6_SRC[]=NXM_NX_IPV6_DST[],nw_proto=17,"
         "NXM_OF_UDP_SRC[]=NXM_OF_UDP_DST[],load:0x1->NXM_NX_REG10[13])"),
    ("", "learn(table=77,limit=10,result_dst=NXM_NX_REG0[3],load:0x1->NXM_NX_REG10[13])"),
    ("", "clone(ct_clear,set_field:0->reg11,set_field:0x3c2->metadata,resubmit(,8))"),
    ("", "conjunction(100,2/2),conjunction(4182413772,1/2)"),
    ("", "push:NXM_OF_ETH_SRC[],pop:NXM_OF_ETH_DST[],push:NXM_NX_XXREG0[96..127],"
         "pop:OXM_OF_PKT_REG4[5],push:NXM_OF_IN_PORT[],set_field:ANY->in_port"),
    ("", "move:NXM_NX_REG10[13]->OXM_OF_PKT_REG4[5],set_field:0/0xffff00000000->xreg4"),
    ("ipv6", "set_field:fd00::1->ipv6_src,set_field:0xfd00000a000000000000000000000001->xxreg1"),
    ("arp", "set_field:2->arp_op,set_field:10.0.0.1->arp_spa,"
            "set_field:0a:00:00:00:01:01->arp_sha"),
    ("ip,ct_state=+trk-inv", "resubmit(3,9,ct),resubmit:2,resubmit(LOCAL,12)"),
    ("icmp", "set_field:3->icmp_type,set_field:0x3e8->pkt_mark"),
    ("", "set_field:01:00:00:00:00:00/01:00:00:00:00:00->eth_dst"),
]


def _flow_mod(match: Match, instructions: bytes) -> bytes:
    body = struct.pack("!QQBBHHHIIIHH", 0, 0, 0, 0, 0, 0, 100,
                       0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0)
    body += match.encode() + instructions
    return struct.pack("!BBHI", 6, 14, 8 + len(body), 1) + body


@pytest.mark.parametrize("match,text", FLOWS, ids=[t[:60] for _, t in FLOWS])
def test_ofp_print_matches_format(match: str, text: str) -> None:
    if shutil.which("ovs-ofctl") is None:
        pytest.fail("ovs-ofctl (OVS 3.1) is required")
    acts = parse_actions(text)
    assert format_actions(acts) == text
    msg = _flow_mod(Match.parse(match), encode_instructions(acts))
    out = subprocess.run(["ovs-ofctl", "ofp-print", msg.hex()], capture_output=True,
                         text=True, timeout=30).stdout
    assert "decode error" not in out, out
    line = [ln for ln in out.splitlines() if "actions=" in ln]
    assert len(line) == 1, out
    assert line[0].split("actions=", 1)[1].strip() == text
