"""A row on several local datapaths is compiled in one pass
(``LflowCompiler._compile``): it must give exactly what compiling it with
``compile_lflow`` once per datapath gives, on the reference datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.lflow.actions import OvsFeatures
from controller.lflow.cache import LflowCache, LflowCacheConfig
from controller.lflow.compile import CompileContext, CompiledLflow, DatapathInfo, LflowCompiler
from controller.lflow.snapshot import OvsConf, SbSnapshot, context_from_snapshot
from physical.inputs import opt_first

DATA = Path("/work/shared/reference-data/rich")

pytestmark = pytest.mark.skipif(not (DATA / "sb.db").exists(), reason="no reference data")


def _compiler(sb: SbSnapshot) -> LflowCompiler:
    conf = OvsConf.read(DATA / "conf-ovs.txt")
    ctx = context_from_snapshot(sb, conf, CompileContext(
        features=OvsFeatures(ct_zero_snat=True, dp_hash_l4_sym=False, controller_meter=True)))
    return LflowCompiler(ctx, LflowCache(LflowCacheConfig(enabled=True)))


def _digest(res: Any) -> Any:
    if not isinstance(res, CompiledLflow):
        return ("error", res.lflow_uuid, res.message)
    infos = res.as_infos or {}

    def flows(fl: list[Any]) -> list[Any]:
        return [(f.table, f.priority, f.match.items, f.actions, f.cookie,
                 repr(infos.get(id(f)))) for f in fl]
    r = res.refs
    return (res.lflow_uuid, res.dp_key, flows(res.flows), flows(res.conj_flows),
            dict(r.addr_sets), r.port_groups, r.ports, r.mcgroups, r.templates)


def test_one_pass_equals_one_compile_per_datapath() -> None:
    sb = SbSnapshot(DATA / "sb.db")
    lflows = sb.table("Logical_Flow")
    one_pass, per_dp = _compiler(sb), _compiler(sb)
    local = per_dp.ctx.local_datapaths
    n_groups = 0
    for rep in range(2):                 # cold, then warm (lflow cache filled)
        for c in (one_pass, per_dp):
            c.clear_text_cache()
            c.ctx.conj_ids.clear()
        for lf in lflows:
            got = [_digest(r) for r in one_pass.compile_lflow_local(lf)]
            dp = opt_first(lf.logical_datapath)
            dps = [dp] if dp is not None else opt_first(lf.logical_dp_group).datapaths
            want = [_digest(per_dp.compile_lflow(lf, DatapathInfo.from_row(d)))
                    for d in dps if d.tunnel_key in local]
            assert got == want, lf.uuid
            n_groups += len(want) > 1
        assert one_pass.stats == per_dp.stats
    assert n_groups > 50           # the dataset has rows on several local datapaths
