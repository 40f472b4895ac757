"""Session message encodings, checked with os-ken's decoder and `ovs-ofctl ofp-print`."""

from __future__ import annotations

import shutil
import struct
import subprocess
from typing import Any

import pytest

from ofctrl import messages as m
from ofctrl.flow import Flow
from ofctrl.ofpacts import Output, Resubmit
from tests.ofctrl.fake_switch import OxmMatch

HAVE_OFCTL = shutil.which("ovs-ofctl") is not None


def ofp_print(msg: bytes) -> str:
    r = subprocess.run(["ovs-ofctl", "ofp-print", msg.hex()], capture_output=True, text=True, check=True)
    assert "decode error" not in r.stdout, r.stdout
    assert "WARN" not in r.stderr, r.stderr
    return r.stdout


class _DP:
    def __init__(self) -> None:
        from os_ken.ofproto import ofproto_v1_5, ofproto_v1_5_parser

        self.ofproto = ofproto_v1_5
        self.ofproto_parser = ofproto_v1_5_parser
        self.id = 1


def osken(msg: bytes) -> Any:
    from os_ken.ofproto import ofproto_parser

    version, mtype, length, xid = m.HEADER.unpack_from(msg)
    assert length == len(msg)
    return ofproto_parser.msg(_DP(), version, mtype, length, xid, bytearray(msg))


def test_headers_and_lengths() -> None:
    for msg in (m.hello(1), m.features_request(2), m.echo_request(3, b"x"), m.barrier_request(4),
                m.set_config(5), m.get_config_request(6), m.tlv_table_request(7)):
        v, _, length, _ = m.HEADER.unpack_from(msg)
        assert v == 6 and length == len(msg)


def test_osken_decodes_basic_messages() -> None:
    h = osken(m.hello(1))
    assert type(h).__name__ == "OFPHello"
    assert [e.versions for e in h.elements] == [[6]]
    e = osken(m.echo_request(3, b"abc"))
    assert type(e).__name__ == "OFPEchoRequest" and bytes(e.data) == b"abc"
    gm = osken(m.delete_all_groups(3))
    assert (gm.command, gm.group_id, gm.command_bucket_id) == (m.OFPGC15_DELETE, m.OFPG_ALL, m.OFPG15_BUCKET_ALL)
    bc = osken(m.bundle_ctrl(6, 42, m.OFPBCT_COMMIT_REQUEST))
    assert (bc.bundle_id, bc.type, bc.flags) == (42, m.OFPBCT_COMMIT_REQUEST, 3)
    mm = osken(m.meter_mod(7, m.OFPMC_ADD, 3, m.OFPMF_KBPS | m.OFPMF_BURST, [m.MeterBand(100, 10)]))
    assert (mm.command, mm.flags, mm.meter_id) == (0, 5, 3)
    assert [(b.rate, b.burst_size) for b in mm.bands] == [(100, 10)]


def test_flow_mod_matches_osken() -> None:
    flow = Flow(8, 50, OxmMatch(reg0=5, metadata=7), (Resubmit(table=9), Output(3)), 0xABCD)
    msg = m.flow_mod(77, m.OFPFC_ADD, flow.table, flow.priority, flow.wire(), cookie=flow.cookie)
    fm = osken(msg)
    assert (fm.table_id, fm.priority, fm.cookie, fm.command) == (8, 50, 0xABCD, 0)
    assert fm.match["reg0"] == 5 and fm.match["metadata"] == 7
    (inst,) = fm.instructions
    assert inst.type == 4 and len(inst.actions) == 2
    # The fast bundle path wraps the identical inner message with the same xid.
    b = m.bundle_flow_mod(77, 9, 3, m.OFPFC_ADD, flow.table, flow.priority, flow.cookie, flow.wire())
    assert b == m.bundle_add(9, msg, 3)
    assert struct.unpack_from("!BBHIIxxH", b) == (6, m.OFPT_BUNDLE_ADD_MESSAGE, len(b), 77, 9, 3)
    inner = osken(b[16:])
    assert type(inner).__name__ == "OFPFlowMod" and inner.xid == 77


def test_error_decode_names() -> None:
    err = m.decode_error(m.simple(m.OFPT_ERROR, 5, struct.pack("!HH", 2, 9) + m.barrier_request(99)))
    assert err.name == "OFPBAC_BAD_OUT_GROUP"
    assert err.offending_xid() == 99
    nx = m.decode_error(m.simple(m.OFPT_ERROR, 5, struct.pack("!HHI", 0xFFFF, 20, m.NX_VENDOR_ID)))
    assert nx.name == "NXTTMFC_ALREADY_MAPPED"
    assert m.error_name(17, 13) == "OFPBFC_MSG_FAILED"


def test_tlv_reply_decode() -> None:
    body = struct.pack("!IH10x", 256, 64) + struct.pack("!HBBH2x", 0x102, 0x80, 4, 3)
    space, fields, maps = m.decode_tlv_table_reply(m.nx_message(m.NXT_TLV_TABLE_REPLY, 1, body))
    assert (space, fields) == (256, 64)
    assert maps == [m.TlvMap(0x102, 0x80, 4, 3)]


def test_group_mods_split_exactly() -> None:
    out = struct.pack("!HHIH6x", 0, 16, 2, 0xFFFF)
    buckets = [m.GroupBucket(i, out * 30, 10) for i in range(300)]
    msgs = m.group_mods(iter(range(1, 50)), m.OFPGC15_ADD, m.OFPGT_SELECT, 9, buckets, "dp_hash")
    assert len(msgs) > 1
    assert all(len(x) <= 0xFFFF - 16 for x in msgs)
    cmds = [struct.unpack_from("!H", x, 8)[0] for x in msgs]
    assert cmds == [m.OFPGC15_ADD] + [m.OFPGC15_INSERT_BUCKET] * (len(msgs) - 1)
    n = 0
    for x in msgs:
        blen = struct.unpack_from("!H", x, 16)[0]
        off = 24
        while off < 24 + blen:
            n += 1
            off += struct.unpack_from("!H", x, off)[0]
    assert n == 300


@pytest.mark.skipif(not HAVE_OFCTL, reason="ovs-ofctl not installed")
def test_ofp_print_accepts_every_message_kind() -> None:
    flow = Flow(8, 50, OxmMatch(reg0=5), (Resubmit(table=9),), 0x1)
    out2 = struct.pack("!HHIH6x", 0, 16, 2, 0xFFFF)
    cases = {
        "hello": (m.hello(1), "version bitmap: 0x06"),
        "features": (m.features_request(2), "OFPT_FEATURES_REQUEST"),
        "echo": (m.echo_request(3, b"ab"), "OFPT_ECHO_REQUEST"),
        "barrier": (m.barrier_request(4), "OFPT_BARRIER_REQUEST"),
        "set_config": (m.set_config(5), "miss_send_len=65535"),
        "pktin_format": (m.set_packet_in_format(6), "format=nxt_packet_in2"),
        "tlv_request": (m.tlv_table_request(7), "NXT_TLV_TABLE_REQUEST"),
        "tlv_mod": (m.tlv_table_mod(8, m.NXTTMC_ADD, [m.TlvMap(0x102, 0x80, 4, 0)]), "0x102  0x80       4  tun_metadata0"),
        "ct_flush": (m.ct_flush_zone(9, 5), "zone_id=5"),
        "bundle_open": (m.bundle_ctrl(10, 3, m.OFPBCT_OPEN_REQUEST), "type=OPEN_REQUEST flags=atomic ordered"),
        "delete_all": (m.delete_all_flows(11), "DEL table:255"),
        "flow_add": (m.flow_mod(12, m.OFPFC_ADD, 8, 50, flow.wire(), cookie=1),
                     "ADD table:8 priority=50,reg0=0x5 cookie:0x1 actions=resubmit(,9)"),
        "flow_mod_strict": (m.flow_mod(13, m.OFPFC_MODIFY_STRICT, 8, 50, flow.wire()), "MOD_STRICT table:8"),
        "flow_del_strict": (m.flow_mod(14, m.OFPFC_DELETE_STRICT, 8, 50, OxmMatch(reg0=5).encode()),
                            "DEL_STRICT table:8 priority=50,reg0=0x5"),
        "bundle_add": (m.bundle_flow_mod(15, 3, 3, m.OFPFC_ADD, 8, 50, 1, flow.wire()), "bundle_id=0x3 flags=atomic ordered"),
        "group_del_all": (m.delete_all_groups(16), "DEL group_id=4294967292"),
        "group_add": (m.group_mod(17, m.OFPGC15_ADD, m.OFPGT_SELECT, 7,
                                  [m.GroupBucket(0, out2, 100)], selection_method="dp_hash"),
                      "ADD group_id=7,type=select,selection_method=dp_hash,bucket=bucket_id:0,weight:100,actions=output:2"),
        "meter_add": (m.meter_mod(18, m.OFPMC_ADD, 1, m.OFPMF_KBPS | m.OFPMF_BURST | m.OFPMF_STATS,
                                  [m.MeterBand(100, 200)]), "ADD meter=1 kbps burst stats bands=\ntype=drop rate=100 burst_size=200"),
        "meter_del_all": (m.meter_mod(19, m.OFPMC_DELETE, m.OFPM_ALL), "DEL meter=all"),
        "ct_flush_lb": (m.ct_flush_lb_backend(21, 6, m.ipv4_mapped(0x0A000001), 80, m.ipv4_mapped(0x0A000102), 8080),
                     "'ct_nw_src=::,ct_nw_dst=10.0.0.1,ct_tp_src=0,ct_tp_dst=80,ct_nw_proto=6' "
                     "'ct_nw_src=10.0.1.2,ct_nw_dst=::,ct_tp_src=8080,ct_tp_dst=0'"),
        "ct_flush_icmp_zone": (m.ct_flush(22, 1, m.CtTuple(src=m.ipv4_mapped(0x01020304), icmp_id=7, icmp_type=8),
                                          zone=5), "zone=5 'ct_nw_src=1.2.3.4,ct_nw_dst=::,icmp_id=7,icmp_type=8"),
        "resume": (m.resume(20, struct.pack("!HH", 0, 18) + bytes(14) + bytes(6)), "NXT_RESUME (OF1.5) (xid=0x14): total_len=14"),
    }
    for name, (msg, expect) in cases.items():
        text = ofp_print(msg)
        assert expect in text, (name, text)


@pytest.mark.skipif(not HAVE_OFCTL, reason="ovs-ofctl not installed")
def test_group_hash_fields_print() -> None:
    from ofctrl.groups import hash_fields

    out2 = struct.pack("!HHIH6x", 0, 16, 2, 0xFFFF)
    f = hash_fields([("ip_src", None), ("ip_dst", 0xFFFFFF00), ("tcp_src", None)])
    msg = m.group_mod(16, m.OFPGC15_ADD, m.OFPGT_SELECT, 7, [m.GroupBucket(0, out2, 100)],
                      selection_method="hash", fields=f)
    assert "selection_method=hash,fields(ip_src,ip_dst=255.255.255.0,tcp_src),bucket=bucket_id:0" in ofp_print(msg)


LB_GROUP = ("type=select,selection_method=dp_hash,bucket=bucket_id=0,weight:100,actions=ct(nat(dst=10.0.0.2:80),"
            "commit,table=15,zone=NXM_NX_REG13[0..15],exec(set_field:0x2/0x2->ct_mark)),bucket=bucket_id=1,"
            "weight:100,actions=ct(nat(dst=10.0.0.3:80),commit,table=15,zone=NXM_NX_REG13[0..15],"
            "exec(set_field:0x2/0x2->ct_mark))")


@pytest.mark.skipif(not HAVE_OFCTL, reason="ovs-ofctl not installed")
@pytest.mark.parametrize("text,expect", [
    (LB_GROUP, "ADD group_id=7,type=select,selection_method=dp_hash,bucket=bucket_id:0,weight:100,actions=ct(commit,"
               "table=15,zone=NXM_NX_REG13[0..15],nat(dst=10.0.0.2:80),exec(set_field:0x2/0x2->ct_mark)),"
               "bucket=bucket_id:1,weight:100,actions=ct(commit,table=15,zone=NXM_NX_REG13[0..15],"
               "nat(dst=10.0.0.3:80),exec(set_field:0x2/0x2->ct_mark))"),
    ("type=select,selection_method=hash,fields(ip_src,ip_dst,tp_src,tp_dst),bucket=bucket_id=0,weight:100,"
     "actions=resubmit(,9)", "type=select,selection_method=hash,fields(ip_src,ip_dst,tcp_src,tcp_dst),"
                             "bucket=bucket_id:0,weight:100,actions=resubmit(,9)"),
    ("type=all,bucket=output:1,bucket=bucket_id:5,actions=resubmit(,9),output:2",
     "type=all,bucket=bucket_id:0,actions=output:1,bucket=bucket_id:5,actions=resubmit(,9),output:2"),
])
def test_parse_group_spec_round_trips_through_ovs(text: str, expect: str) -> None:
    from ofctrl.groups import parse_group_spec

    g = parse_group_spec(text)
    msg = m.group_mod(1, m.OFPGC15_ADD, g.type_code(), 7, g.wire_buckets(), selection_method=g.selection_method,
                      fields=g.fields)
    assert expect in ofp_print(msg)


def test_parse_group_spec_errors() -> None:
    from ofctrl.groups import parse_group_spec

    with pytest.raises(ValueError):
        parse_group_spec("type=bogus,bucket=output:1")
    with pytest.raises(ValueError):
        parse_group_spec("color=blue")
