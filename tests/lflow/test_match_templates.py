"""Match templates (controller/lflow/match_templates.py): the compiler's
results with and without them are equal, flow for flow, on the reference
snapshots and on hand-made shapes; shapes whose structure depends on their
constants are not used as templates."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

import pytest

from controller.lflow.actions import OvsFeatures
from controller.lflow.cache import LflowCache, LflowCacheConfig
from controller.lflow.compile import CompileContext, CompiledLflow, LflowCompiler
from controller.lflow.snapshot import OvsConf, SbSnapshot, context_from_snapshot
from controller.lflow.match_templates import MatchTemplates
from controller.lflow.symtab import ovn_symtab
from tests.lflow.test_compile import LS1, LR, lflow, make_ctx

REF = Path("/work/shared/reference-data")


def _results(compiler: LflowCompiler, lflows: list[Any]) -> list[Any]:
    out: list[Any] = []
    for r in compiler.compile_all(lflows):
        if isinstance(r, CompiledLflow):
            out.append((r.lflow_uuid, r.dp_key, [f.to_string() for f in r.flows],
                        [f.to_string() for f in r.conj_flows],
                        sorted(repr(a.__dict__ if hasattr(a, "__dict__") else
                                    (a.name, a.ip, a.mask))
                               for a in (r.as_infos or {}).values()),
                        repr(r.refs)))
        else:
            out.append(repr(r))
    return out


def _snapshot_both_ways(sb: SbSnapshot, conf: OvsConf, lflows: list[Any], cache: bool
                        ) -> tuple[Any, Any, Any]:
    # The agent's context for the dataset's chassis, widened to every datapath
    # and port so that every lflow of the snapshot compiles.
    dps = frozenset(int(dp.tunnel_key) for dp in sb.table("Datapath_Binding"))
    related = frozenset(f"{pb.datapath.tunnel_key}_{pb.tunnel_key}"
                        for pb in sb.table("Port_Binding"))
    features = OvsFeatures(ct_zero_snat=True, dp_hash_l4_sym=False, controller_meter=True)
    outs = []
    comp = None
    for templates in (False, True):
        ctx = dataclasses.replace(
            context_from_snapshot(sb, conf, CompileContext(features=features)),
            local_datapaths=dps, related_lports=related)
        comp = LflowCompiler(ctx, LflowCache(LflowCacheConfig(enabled=cache)),
                             templates=templates)
        first = _results(comp, lflows)
        # A full recompute: per-text memo and conjunction ids cleared, the
        # lflow cache (if on) warm, the templates kept.
        comp.clear_text_cache()
        ctx.conj_ids.clear()
        outs.append((first, _results(comp, lflows)))
    return outs[0], outs[1], comp


@pytest.mark.parametrize("name,step,cache", [
    ("rich", 1, True), ("rich", 1, False), ("seed-500", 6, True), ("seed-500", 11, False)])
def test_snapshot_flows_equal_with_and_without_templates(name: str, step: int,
                                                         cache: bool) -> None:
    base = REF / name
    assert (base / "sb.db").exists() or (base / "sb.db.gz").exists(), \
        f"no reference snapshot {name}"
    sb = SbSnapshot(base / "sb.db")
    lflows = sb.table("Logical_Flow")[::step]
    off, on, comp = _snapshot_both_ways(sb, OvsConf.read(base / "conf-ovs.txt"), lflows, cache)
    assert comp is not None and comp.stats["template_hits"] > len(lflows) // 4
    assert off[0] == on[0]
    assert off[1] == on[1]


# ---------------------------------------------------------------------------
# Hand-made shapes: each list holds texts of one shape (the first teaches).

SHAPES = [
    # Used as templates.
    (True, ['ip4.dst == 10.0.0.1 && inport == "p1"', 'ip4.dst == 10.9.8.7 && inport == "p2"',
            'ip4.dst == 10.0.0.1 && inport == "nope"']),
    (True, ["eth.dst == 00:00:00:00:00:01", "eth.dst == ff:ff:ff:ff:ff:ff"]),
    (True, ["ip4.src == 10.0.0.0/8 && tcp", "ip4.src == 192.168.0.0/8 && tcp"]),
    (True, ["reg0 == 10.0.0.1 && outport == \"p1\"", "reg0 == 1.2.3.4 && outport == \"q1\""]),
    (True, ["ip6.dst == {fe80::1}", "ip6.dst == {fe80::2}"]),
    (True, ["ip4.src == {10.0.0.1, 10.0.0.255} && reg9[0] == 0 && tcp",
            "ip4.src == {10.9.0.1 10.9.0.255} && reg9[0] == 0 && tcp"]),
    (True, ['inport == {"p1", "p2"} && eth.src == {00:00:00:00:00:01, 00:00:00:00:00:01}',
            'inport == {"q1", "rp"} && eth.src == {00:00:00:00:00:07, 00:00:00:00:00:07}']),
    (True, ["ip6.dst == {fe80::1, ff02::1:ff00:1} && nd_ns && nd.target == fe80::1",
            "ip6.dst == {fe80::9, ff02::1:ff00:9} && nd_ns && nd.target == fe80::9"]),
    (True, ['ip4.src == 1.1.1.1 && (tcp.dst == 80 || udp.dst == 53) && inport == "p1"',
            'ip4.src == 1.1.1.9 && (tcp.dst == 80 || udp.dst == 53) && inport == "q1"']),
    # Structure depends on the values: the normal path for every text.
    (False, ['(inport == "p1" && ip4.src == 1.1.1.1) || (inport == "p2" && ip4.dst == 1.1.1.2)',
             '(inport == "p2" && ip4.src == 2.2.2.2) || (inport == "p2" && ip4.dst == 2.2.2.2)']),
    (False, ["ip4.src == {10.0.0.1, 10.0.0.2} || ip4.src == 10.0.0.3",
             "ip4.src == {10.0.0.4, 10.0.0.5} || ip4.src == 10.0.0.3"]),
    (False, ["ip4.dst == 10.0.0.1 || ip4.dst == 10.0.0.2",
             "ip4.dst == 10.0.0.2 || ip4.dst == 10.0.0.2"]),
    (False, ["ip4.dst == 10.0.0.1 && ip4.dst == 10.0.0.1/16",
             "ip4.dst == 10.0.0.1 && ip4.dst == 10.1.0.1/16"]),
    (False, ["!(eth.src == 00:00:00:00:00:01)", "!(eth.src == 00:00:00:00:00:ff)"]),
    (False, ["reg0 == 10.0.0.1 && xxreg0[96..127] == 5", "reg0 == 10.0.0.5 && xxreg0[96..127] == 5"]),
]


@pytest.mark.parametrize("used,texts", SHAPES)
def test_hand_made_shapes(used: bool, texts: list[str]) -> None:
    for dp in (LS1, LR):
        plain = LflowCompiler(make_ctx(), templates=False)
        tpl = LflowCompiler(make_ctx())
        for i, text in enumerate(texts):
            u = uuid.UUID(int=(0xB0000000 + i) << 96 | hash(text) & 0xFFFF)
            a = plain.compile_lflow(lflow(text, lf_uuid=u, dp=dp), _info(dp))
            b = tpl.compile_lflow(lflow(text, lf_uuid=u, dp=dp), _info(dp))
            assert repr(a) == repr(b)
            if isinstance(a, CompiledLflow):
                assert isinstance(b, CompiledLflow)
                assert ([f.to_string() for f in a.all_flows()]
                        == [f.to_string() for f in b.all_flows()])
                assert repr(a.refs) == repr(b.refs)
        assert (tpl.stats["template_hits"] == len(texts) - 1) is used, tpl.stats


def _info(dp: Any) -> Any:
    from controller.lflow.compile import DatapathInfo
    return DatapathInfo.from_row(dp)


def test_ineligible_texts_have_no_shape() -> None:
    mt = MatchTemplates(ovn_symtab())
    for text in ["ip4.src == $as1", "inport == @pg1", "ip4.dst == ^VIP",
                 'is_chassis_resident("p1") && ip4.dst == 1.2.3.4', "ip4.dst == 1.2.3.4 &"]:
        assert mt.shape(text) is None, text
    s = mt.shape("ip4.dst == 1.2.3.4 && tcp.dst == 80 && reg0[0..7] == 1.2.3.4")
    assert s is not None and s.values == (((0x01020304, 0xFFFFFFFF),),)


def test_sets_with_other_orders_and_duplicates() -> None:
    """A set's constants are sorted and de-duplicated by value, so the
    order and equality pattern is part of the shape: texts with another
    pattern are taught separately, and all give the normal compile's flows."""
    texts = ["ip4.dst == {10.0.0.1, 10.0.0.2, 10.0.0.3} && udp",
             "ip4.dst == {10.0.1.1, 10.0.1.2, 10.0.1.3} && udp",   # same pattern
             "ip4.dst == {10.0.0.3, 10.0.0.2, 10.0.0.1} && udp",   # reversed
             "ip4.dst == {10.0.2.3, 10.0.2.2, 10.0.2.1} && udp",   # reversed again
             "ip4.dst == {10.0.0.5, 10.0.0.5, 10.0.0.1} && udp",   # duplicate
             "ip4.dst == {10.0.3.5, 10.0.3.5, 10.0.3.1} && udp"]   # same as previous
    plain = LflowCompiler(make_ctx(), templates=False)
    tpl = LflowCompiler(make_ctx())
    for i, text in enumerate(texts):
        u = uuid.UUID(int=(0xC0000000 + i) << 96 | i)
        a = plain.compile_lflow(lflow(text, lf_uuid=u), _info(LS1))
        b = tpl.compile_lflow(lflow(text, lf_uuid=u), _info(LS1))
        assert isinstance(a, CompiledLflow) and isinstance(b, CompiledLflow)
        assert ([f.to_string() for f in a.all_flows()]
                == [f.to_string() for f in b.all_flows()]), text
    assert tpl.stats["template_hits"] == 3


def test_errors_that_depend_on_a_constant_are_kept() -> None:
    """The width check of a masked constant uses its whole mask; a text
    whose mask is too wide must fail as without templates."""
    texts = ["tcp.dst == 0x50/0xffff", "tcp.dst == 0x51/0x1ffff", "tcp.dst == 0x52/0xffff",
             'inport == "p1" && ip4.src == 1.2.3.4', 'inport == "p2" && ip4.src == 1.2.3.5']
    plain = LflowCompiler(make_ctx(), templates=False)
    tpl = LflowCompiler(make_ctx())
    for i, text in enumerate(texts):
        u = uuid.UUID(int=(0xD0000000 + i) << 96 | i)
        a = plain.compile_lflow(lflow(text, lf_uuid=u), _info(LS1))
        b = tpl.compile_lflow(lflow(text, lf_uuid=u), _info(LS1))
        assert repr(a) == repr(b)
        if isinstance(a, CompiledLflow):
            assert isinstance(b, CompiledLflow)
            assert ([f.to_string() for f in a.all_flows()]
                    == [f.to_string() for f in b.all_flows()])
        else:
            assert "17-bit constant" in repr(a)
    assert tpl.stats["template_hits"] == 2
