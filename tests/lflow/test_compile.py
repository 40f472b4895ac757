"""LflowCompiler: table/priority/cookie/metadata, conjunctions, related-port
skip, in_out_port, datapath groups, references, errors, the per-text memo
and the lflow cache (cached results must equal fresh ones)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from controller.lflow.actions import ExtendTable, OvsFeatures
from controller.lflow.cache import T_EXPR, T_MATCHES, LflowCache, LflowCacheConfig
from controller.lflow.compile import (
    CompileContext,
    CompiledLflow,
    DatapathInfo,
    LflowCompiler,
    LflowError,
)
from controller.lflow.conj_ids import ConjIds
from controller.lflow.expr.nodes import const_set_from_integers, const_set_from_strings
from ofctrl.desired import DesiredFlowTable

LS1 = SimpleNamespace(uuid=uuid.UUID(int=0x11), tunnel_key=1,
                      external_ids={"logical-switch": "x", "name": "ls1"})
LS2 = SimpleNamespace(uuid=uuid.UUID(int=0x12), tunnel_key=2,
                      external_ids={"logical-switch": "y", "name": "ls2"})
LS3 = SimpleNamespace(uuid=uuid.UUID(int=0x13), tunnel_key=3,
                      external_ids={"logical-switch": "z", "name": "ls3"})
LR = SimpleNamespace(uuid=uuid.UUID(int=0x21), tunnel_key=4,
                     external_ids={"logical-router": "r", "snat-ct-zone": "5"})

# name -> (datapath key, port key)
PORTS = {"p1": (1, 1), "p2": (1, 2), "remote": (1, 3), "q1": (2, 1), "rp": (4, 1)}
MCGROUPS = {(1, "_MC_flood"): 32768, (2, "_MC_flood"): 32768}


def make_ctx(**kw: Any) -> CompileContext:
    args: dict[str, Any] = dict(
        addr_sets={"as1": const_set_from_integers(["10.0.0.1", "10.0.0.2", "10.1.0.0/16"])},
        port_groups={"1_pg1": const_set_from_strings(["p1", "p2"]),
                     "2_pg1": const_set_from_strings(["q1"])},
        template_vars={"VIP": "192.168.0.10"},
        group_table=ExtendTable(), meter_table=ExtendTable(), conj_ids=ConjIds(),
        features=OvsFeatures(ct_zero_snat=True, dp_hash_l4_sym=False, controller_meter=True),
        port_binding=PORTS.get,
        multicast_group=lambda dp, name: MCGROUPS.get((dp, name)),
        related_lports={"1_1", "1_2", "2_1", "4_1"},
        is_chassis_resident=lambda name: name == "p1",
        local_datapaths={1, 2, 4})
    args.update(kw)
    return CompileContext(**args)


_N = [0]


def lflow(match: str, actions: str = "next;", *, dp: Any = LS1, group: list[Any] | None = None,
          pipeline: str = "ingress", table: int = 3, priority: int = 50,
          tags: dict[str, str] | None = None, meter: str | None = None,
          lf_uuid: uuid.UUID | None = None) -> SimpleNamespace:
    _N[0] += 1
    return SimpleNamespace(
        uuid=lf_uuid or uuid.UUID(int=(0xA0000000 + _N[0]) << 96 | _N[0]),
        match=match, actions=actions, pipeline=pipeline, table_id=table, priority=priority,
        tags=tags or {}, controller_meter=[meter] if meter else [],
        logical_datapath=[] if group is not None else [dp],
        logical_dp_group=[SimpleNamespace(datapaths=group)] if group is not None else [])


def one(compiler: LflowCompiler, lf: Any, dp: Any = LS1) -> CompiledLflow:
    res = compiler.compile_lflow(lf, DatapathInfo.from_row(dp))
    assert isinstance(res, CompiledLflow), res
    return res


def lines(res: CompiledLflow) -> list[str]:
    return sorted(f.to_string() for f in res.flows + res.conj_flows)


# ---------------------------------------------------------------------------

def test_ingress_flow_table_priority_cookie_metadata() -> None:
    c = LflowCompiler(make_ctx())
    lf = lflow("ip4.src == 10.0.0.1", "next;", table=3, priority=77,
               lf_uuid=uuid.UUID("12345678-aaaa-4bbb-8ccc-000000000001"))
    res = one(c, lf)
    assert lines(res) == [
        "cookie=0x12345678, table=11, priority=77,ip,metadata=0x1,nw_src=10.0.0.1 "
        "actions=resubmit(,12)"]
    assert res.conj_flows == [] and res.lflow_uuid == lf.uuid and res.dp_key == 1


def test_egress_table_and_output_table() -> None:
    c = LflowCompiler(make_ctx())
    res = one(c, lflow("1", "output;", pipeline="egress", table=9))
    (f,) = res.flows
    assert (f.table, f.actions_string()) == (51, "resubmit(,64)")
    res = one(c, lflow("1", "output;", pipeline="ingress", table=27))
    assert res.flows[0].actions_string() == "resubmit(,37)"


def test_conjunctive_match_and_add_or_append() -> None:
    ctx = make_ctx()
    c = LflowCompiler(ctx)
    m = "ip4.src == {10.0.0.1, 10.0.0.2} && tcp.dst == {80, 443}"
    a = one(c, lflow(m, "next;"))
    b = one(c, lflow(m, "drop;"))
    assert len(a.flows) == 1 and len(a.conj_flows) == 4
    (main,) = a.flows
    cid = main.match.get("conj_id")
    assert cid is not None and cid[0] == ctx.conj_ids.find(a.lflow_uuid, LS1.uuid)
    assert all(f.cookie == 0 for f in a.conj_flows)
    assert {f.actions[0].format() for f in a.conj_flows} == {
        f"conjunction({cid[0]},1/2)", f"conjunction({cid[0]},2/2)"}
    # Two lflows share their clause matches: the desired table appends.
    table = DesiredFlowTable()
    a.install(table)
    b.install(table)
    assert len(table) == 2 + 4
    shared = [d for d in table if len(d.owners) == 2]
    assert len(shared) == 4
    assert all(len(d.flow.actions) == 2 for d in shared)


def test_related_port_skip_on_switch_only() -> None:
    c = LflowCompiler(make_ctx())
    # "remote" (key 3) is not related on datapath 1: the flow is skipped.
    assert one(c, lflow('inport == "remote"')).flows == []
    assert len(one(c, lflow('inport == "p1"')).flows) == 1
    # Egress checks reg15, not reg14.
    assert len(one(c, lflow('inport == "remote"', pipeline="egress")).flows) == 1
    assert one(c, lflow('outport == "remote"', pipeline="egress")).flows == []
    # Only on logical switches.
    ctx = make_ctx(related_lports=set())
    res = one(LflowCompiler(ctx), lflow('inport == "rp"', dp=LR), LR)
    assert len(res.flows) == 1


def test_in_out_port_tag() -> None:
    c = LflowCompiler(make_ctx())
    assert one(c, lflow("1", tags={"in_out_port": "remote"})).flows == []
    assert one(c, lflow("1", tags={"in_out_port": "q1"})).flows == []   # other datapath
    res = one(c, lflow("1", tags={"in_out_port": "p2"}))
    assert len(res.flows) == 1 and "p2" in res.refs.ports


def test_dp_group_compiles_once_per_local_datapath_and_reuses_text() -> None:
    c = LflowCompiler(make_ctx())
    lf = lflow("ip4 && udp.dst == 53", "next;", group=[LS1, LS2, LS3])
    out = c.compile_lflow_local(lf)
    assert [r.dp_key for r in out if isinstance(r, CompiledLflow)] == [1, 2]   # 3 not local
    assert c.stats["text_compiles"] == 1 and c.stats["text_reuse"] == 1
    assert c.stats["match_compiles"] == 1 and c.stats["encodes"] == 1
    md = sorted(r.flows[0].match.get("metadata") for r in out if isinstance(r, CompiledLflow))
    assert md == [(1, None), (2, None)]


def test_port_names_resolved_per_datapath() -> None:
    c = LflowCompiler(make_ctx())
    lf = lflow('outport == "_MC_flood"', 'outport = "_MC_flood"; output;',
               group=[LS1, LS2], pipeline="ingress")
    out = [r for r in c.compile_lflow_local(lf) if isinstance(r, CompiledLflow)]
    assert len(out) == 2
    for r in out:
        (f,) = r.flows
        assert f.match.get("reg15") == (32768, None)
        assert r.refs.mcgroups == {f"{r.dp_key}__MC_flood"} and "_MC_flood" in r.refs.ports
    assert c.stats["match_compiles"] == 1


def test_port_groups_are_per_datapath() -> None:
    c = LflowCompiler(make_ctx())
    lf = lflow("inport == @pg1 && ip4", "next;", group=[LS1, LS2])
    a, b = (r for r in c.compile_lflow_local(lf) if isinstance(r, CompiledLflow))
    assert sorted(f.match.get("reg14") for f in a.flows) == [(1, None), (2, None)]
    assert [f.match.get("reg14") for f in b.flows] == [(1, None)]
    assert a.refs.port_groups == frozenset({"1_pg1"})
    assert c.stats["match_compiles"] == 2


def test_address_set_refs_and_as_info() -> None:
    c = LflowCompiler(make_ctx())
    res = one(c, lflow("ip4.src == $as1", "next;"))
    assert dict(res.refs.addr_sets) == {"as1": 1}
    assert res.as_infos is not None and len(res.as_infos) == 3
    infos = sorted((i.name, i.ip, i.mask) for i in res.as_infos.values())
    assert infos[0] == ("as1", 0x0A000001, 0xFFFFFFFF)
    assert ("as1", 0x0A010000, 0xFFFF0000) in infos


def test_templates_expand_and_are_recorded() -> None:
    c = LflowCompiler(make_ctx())
    res = one(c, lflow("ip4.dst == ^VIP", "next;"))
    assert res.flows[0].match.get("ip_dst") == (0xC0A8000A, None)
    assert res.refs.templates == frozenset({"VIP"})


def test_chassis_resident_condition() -> None:
    c = LflowCompiler(make_ctx())
    assert len(one(c, lflow('is_chassis_resident("p1") && ip4')).flows) == 1
    res = one(c, lflow('is_chassis_resident("p2") && ip4'))
    assert res.flows == [] and "p2" in res.refs.ports


def test_controller_meter_and_groups() -> None:
    ctx = make_ctx()
    c = LflowCompiler(ctx)
    res = one(c, lflow("ip4", "arp { eth.dst = ff:ff:ff:ff:ff:ff; output; };", meter="copp-arp"))
    assert "meter_id=1" in res.flows[0].actions_string()
    res = one(c, lflow("ip4", "ct_lb_mark(backends=10.0.0.1:80,10.0.0.2:80);", dp=LR), LR)
    assert res.flows[0].actions_string() == "group:1"
    assert len(ctx.group_table.desired) == 1


def test_errors_are_values() -> None:
    c = LflowCompiler(make_ctx())
    bad_match = lflow("ip4.src == ", "next;")
    res = c.compile_lflow(bad_match, DatapathInfo.from_row(LS1))
    assert isinstance(res, LflowError) and res.lflow_uuid == bad_match.uuid
    assert "Syntax error" in res.message
    res = c.compile_lflow(lflow("1", "frobnicate;"), DatapathInfo.from_row(LS1))
    assert isinstance(res, LflowError) and "frobnicate" in res.message
    res = c.compile_lflow(lflow("ip4.src == $nope", "next;"), DatapathInfo.from_row(LS1))
    assert isinstance(res, LflowError)
    orphan = lflow("1")
    orphan.logical_datapath = []
    assert isinstance(c.compile_lflow_local(orphan)[0], LflowError)


def test_lflow_cache_kinds() -> None:
    cache = LflowCache()
    c = LflowCompiler(make_ctx(), cache)
    plain = lflow("ip4 && tcp.dst == {1, 2} && ip4.src == {10.0.0.1, 10.0.0.2}")
    ported = lflow('inport == "p1" && ip4')
    with_set = lflow("ip4.src == $as1")
    for lf in (plain, ported, with_set):
        one(c, lf)
    assert (v := cache.get(plain.uuid)) is not None and v.type == T_MATCHES and v.n_conjs == 1
    assert (v := cache.get(ported.uuid)) is not None and v.type == T_EXPR
    assert cache.get(with_set.uuid) is None
    # A recompute (memo cleared) gives the same flows, from the cache.
    first = {lf.uuid: lines(one(c, lf)) for lf in (plain, ported, with_set)}
    c.clear_text_cache()
    hits = c.stats["cache_hits"]
    again = {lf.uuid: lines(one(c, lf)) for lf in (plain, ported, with_set)}
    assert again == first and c.stats["cache_hits"] == hits + 2
    disabled = LflowCache(LflowCacheConfig(enabled=False))
    one(LflowCompiler(make_ctx(), disabled), lflow("ip4"))
    assert len(disabled) == 0


CASES = [
    ("ip4.src == {10.0.0.1, 10.0.0.2} && tcp.dst == {80, 443}", "ct_next;"),
    ('inport == "p1" && eth.src == 00:00:00:00:00:01', 'outport = "p2"; output;'),
    ("ip4.src == $as1 && udp", "reg0[0] = 1; next;"),
    ("inport == @pg1 && ip6", "drop;"),
    ('is_chassis_resident("p1") && arp', "next(pipeline=egress, table=2);"),
    ("tcp.dst >= 1000 && tcp.dst <= 2000", "ct_commit { ct_mark.blocked = 1; }; next;"),
    ("ip4.dst == ^VIP && tcp.dst == 80", "ct_lb_mark(backends=10.0.0.1:80);"),
]


@pytest.mark.parametrize("match,actions", CASES)
def test_memo_and_cache_do_not_change_results(match: str, actions: str) -> None:
    """The same lflow on two datapaths, compiled by one compiler (memo,
    cache), then again after a recompute, equals fresh compilers per
    (lflow, datapath)."""
    lf = lflow(match, actions, group=[LS1, LS2])
    shared = LflowCompiler(make_ctx(), LflowCache())
    runs = []
    for _ in range(2):
        runs.append([lines(r) for r in shared.compile_lflow_local(lf)
                     if isinstance(r, CompiledLflow)])
        shared.clear_text_cache()
        shared.ctx.conj_ids.clear()
    fresh = []
    for dp in (LS1, LS2):
        ctx = make_ctx(local_datapaths={dp.tunnel_key})
        res = LflowCompiler(ctx).compile_lflow_local(lf)
        assert len(res) == 1 and isinstance(res[0], CompiledLflow)
        fresh.append(lines(res[0]))

    def strip_conj(x: list[list[str]]) -> list[list[str]]:
        # conj ids depend on allocation order; compare them by position.
        import re
        return [[re.sub(r"conj(unction\(|_id=)\d+", "conjX", ln) for ln in ls] for ls in x]

    assert strip_conj(runs[0]) == strip_conj(fresh)
    assert strip_conj(runs[1]) == strip_conj(fresh)
    assert any(fresh)


def test_compile_all_matches_one_by_one() -> None:
    lfs = [lflow(m, a, group=[LS1, LS2]) for m, a in CASES]
    a = LflowCompiler(make_ctx()).compile_all(lfs)
    b = [r for lf in lfs for r in LflowCompiler(make_ctx()).compile_lflow_local(lf)]
    assert [lines(r) for r in a if isinstance(r, CompiledLflow)] == \
        [lines(r) for r in b if isinstance(r, CompiledLflow)]


# ---------------------------------------------------------------------------
# CLI

def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller", "lflow-compile", *args],
                          capture_output=True, text=True, timeout=60)


def test_cli_prints_flows() -> None:
    r = _cli("--match", 'inport == "lp1" && ip4.src == {10.0.0.1, 10.0.0.2} && tcp.dst == {80, 443}',
             "--actions", "ct_next;", "--port", "lp1=5", "--table", "3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "table=11, priority=100,conj_id=1,tcp,reg14=0x5,metadata=0x1 "
        "actions=ct(table=12,zone=NXM_NX_REG13[0..15])",
        "table=11, priority=100,tcp,reg14=0x5,metadata=0x1,nw_src=10.0.0.1 actions=conjunction(1,1/2)",
        "table=11, priority=100,tcp,reg14=0x5,metadata=0x1,nw_src=10.0.0.2 actions=conjunction(1,1/2)",
        "table=11, priority=100,tcp,reg14=0x5,metadata=0x1,tp_dst=80 actions=conjunction(1,2/2)",
        "table=11, priority=100,tcp,reg14=0x5,metadata=0x1,tp_dst=443 actions=conjunction(1,2/2)",
    ]


def test_cli_egress_router_address_set_and_groups() -> None:
    r = _cli("--match", "ip4.src == $as1", "--actions", "ct_lb_mark(backends=10.0.0.1:80);",
             "--address-set", "as1=10.0.0.1,10.1.0.0/16", "--egress", "--table", "2",
             "--router", "--datapath-key", "7", "--priority", "9")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[:2] == [
        "table=44, priority=9,ip,metadata=0x7,nw_src=10.0.0.1 actions=group:1",
        "table=44, priority=9,ip,metadata=0x7,nw_src=10.1.0.0/16 actions=group:1"]
    assert out[2].startswith("group_id=1,type=select,") and "zone=NXM_NX_REG11[0..15]" in out[2]


def test_cli_errors() -> None:
    r = _cli("--match", "ip4.src ==", "--actions", "next;")
    assert r.returncode == 1
    assert r.stdout.startswith('error parsing match "ip4.src ==": Syntax error')
    r = _cli("--match", 'outport == "unknown"', "--actions", "next;")
    assert r.returncode == 0 and r.stdout == "" and "(no flows)" in r.stderr


def test_ref_index_and_forget() -> None:
    from controller.lflow.compile import RefIndex
    ctx = make_ctx()
    cache = LflowCache()
    c = LflowCompiler(ctx, cache)
    a = one(c, lflow("ip4.src == $as1 && tcp.dst == {1, 2} && ip4.dst == {10.9.0.1, 10.9.0.2}"))
    b = one(c, lflow('outport == "p2"', 'outport = "_MC_flood"; output;', pipeline="egress"))
    lr = one(c, lflow("ip4", "ct_lb_mark(backends=10.0.0.1:80);", dp=LR), LR)
    idx = RefIndex()
    for r in (a, b, lr):
        idx.add(r.lflow_uuid, r.refs)
    assert idx.users("addr_sets", ["as1"]) == {a.lflow_uuid}
    assert idx.users("ports", ["p2"]) == {b.lflow_uuid}
    assert idx.users("mcgroups", [f"{b.dp_key}__MC_flood"]) == {b.lflow_uuid}
    assert idx.users("mcgroups", ["_MC_flood"]) == set()
    idx.remove(b.lflow_uuid)
    assert idx.users("ports", ["p2"]) == set()
    assert ctx.conj_ids.find(a.lflow_uuid, LS1.uuid)
    assert b.lflow_uuid in cache and len(ctx.group_table.desired) == 1
    for r in (a, b, lr):
        c.forget_lflow(r.lflow_uuid)
    assert not ctx.conj_ids.find(a.lflow_uuid, LS1.uuid)
    assert b.lflow_uuid not in cache and len(ctx.group_table.desired) == 0


@pytest.mark.skipif(not os.path.exists("/work/shared/reference-data/rich/sb.db"),
                    reason="reference data absent")
def test_benchmark_runs_on_rich(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.compile_seed import main
    main(["/work/shared/reference-data/rich/sb.db"])
    out = capsys.readouterr().out
    assert "cold: 428 lflows" in out and "warm: 428 lflows" in out and "errors 0" in out


def test_tunnel_lookup_is_referenced() -> None:
    """An action that reads a tunnel ofport (fwd_group with liveness) records
    TUNNEL_REF, so a tunnel moving re-processes just those lflows."""
    from controller.lflow.compile import TUNNEL_REF
    ctx = make_ctx(tunnel_ofport=lambda dp_key, name: 7)
    c = LflowCompiler(ctx)
    res = one(c, lflow("1", 'fwd_group(liveness=true, childports="p1", "p2");'))
    assert res.flows and TUNNEL_REF in res.refs.ports
    res = one(c, lflow("1", 'fwd_group(childports="p1", "p2");'))
    assert TUNNEL_REF not in res.refs.ports
