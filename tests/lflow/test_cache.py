"""lflow cache: the ovn-lflow-cache.at vectors (test-lflow-cache driver
re-expressed) plus the knob parsing and eviction rules."""

from __future__ import annotations

import json
import uuid

import pytest

from controller.lflow.cache import (
    T_EXPR, T_MATCHES, UINT32_MAX, LflowCache, LflowCacheConfig)

VECTORS = "/work/shared/ovn-at-vectors/lflow-cache.json"
VALUE_SIZE = 1024      # the C driver charges 1 KB per value
TRIM_LIMIT = 1
TRIM_WMARK = 50


def _config(enabled: bool, limit: int = UINT32_MAX, mem_kb: int = UINT32_MAX,
            trim_limit: int = TRIM_LIMIT, wmark: int = TRIM_WMARK) -> LflowCacheConfig:
    return LflowCacheConfig(enabled=enabled, capacity=limit, max_mem_kb=mem_kb,
                            trim_limit=trim_limit, trim_wmark_perc=wmark)


def run_operations(argv: list[str]) -> list[str]:
    """Our version of `test-lflow-cache lflow_cache_operations ARGS`."""
    out: list[str] = []

    def stats(lc: LflowCache) -> None:
        out.extend(ln for ln in lc.stats_text().splitlines() if not ln.startswith("Mem usage"))

    def lookup(lc: LflowCache, u: uuid.UUID) -> None:
        out.append("LOOKUP:")
        v = lc.get(u)
        if v is None:
            out.append("  not found")
            return
        out.append(f"  conj_id_ofs: {v.conj_id_ofs}")
        out.append(f"  n_conjs: {v.n_conjs}")
        out.append("  type: " + ("expr" if v.type == T_EXPR else "matches"))

    def add(lc: LflowCache, kind: str, u: uuid.UUID, ofs: int, n: int) -> None:
        out.extend([f"ADD {kind}:", f"  conj-id-ofs: {ofs}", f"  n_conjs: {n}"])
        if kind == "expr":
            lc.add_expr(u, object(), VALUE_SIZE)
        else:
            lc.add_matches(u, ofs, n, [object()], VALUE_SIZE)

    lc = LflowCache(_config(argv[0] == "true"))
    stats(lc)
    n_ops = int(argv[1])
    args = argv[2:]
    uuids: list[uuid.UUID] = []
    for _ in range(n_ops):
        op = args.pop(0)
        if op in ("add", "add-del"):
            kind, ofs, n = args.pop(0), int(args.pop(0)), int(args.pop(0))
            u = uuid.uuid4()
            add(lc, kind, u, ofs, n)
            lookup(lc, u)
            if op == "add":
                uuids.append(u)
            else:
                out.append("DELETE")
                lc.delete(u)
                lookup(lc, u)
        elif op == "del":
            out.append("DELETE")
            lc.delete(uuids.pop())
        elif op == "enable":
            limit, mem = int(args.pop(0)), int(args.pop(0))
            trim_limit, wmark = TRIM_LIMIT, TRIM_WMARK
            if args and args[0] == "trim-limit":
                trim_limit = int(args[1])
                del args[:2]
            if args and args[0] == "trim-wmark-perc":
                wmark = int(args[1])
                del args[:2]
            out.append("ENABLE")
            lc.configure(_config(True, limit, mem, trim_limit, wmark))
        elif op == "disable":
            out.append("DISABLE")
            lc.configure(_config(False))
        elif op == "flush":
            out.append("FLUSH")
            lc.flush()
        else:
            raise AssertionError(op)
        stats(lc)
    return out


def _vectors() -> list[dict]:
    # A missing vector file is an error (collection fails), not zero tests.
    with open(VECTORS) as f:
        return [v for v in json.load(f)["vectors"] if "lflow_cache_operations" in v["command"]]


@pytest.mark.parametrize("vec", _vectors(), ids=lambda v: v["test"])
def test_lflow_cache_vector(vec: dict) -> None:
    cmd = vec["command"].split("|")[0].split()
    argv = cmd[cmd.index("lflow_cache_operations") + 1:]
    assert run_operations(argv) == vec["expected"]


def test_vectors_present() -> None:
    assert len(_vectors()) == 6


def test_negative_inputs() -> None:
    lc = LflowCache()
    assert not lc.add_expr(None, object(), 0)
    assert not lc.add_matches(None, 0, 0, [], VALUE_SIZE)
    assert lc.get(None) is None
    assert len(lc) == 0


def test_full_cache_evicts_expr_for_matches_only() -> None:
    lc = LflowCache(_config(True, limit=2))
    a, b, c, d = (uuid.uuid4() for _ in range(4))
    assert lc.add_expr(a, "ea", 10)
    assert lc.add_matches(b, 1, 1, ["mb"], 10)
    assert not lc.add_expr(c, "ec", 10)          # full: EXPR cannot evict
    assert lc.add_matches(d, 5, 2, ["md"], 10)   # full: evicts the EXPR entry
    assert lc.get(a) is None
    assert lc.count(T_MATCHES) == 2 and lc.count(T_EXPR) == 0
    v = lc.get(d)
    assert v is not None and (v.conj_id_ofs, v.n_conjs, v.matches) == (5, 2, ["md"])


def test_memory_limit_refuses_adds_and_lowering_flushes() -> None:
    lc = LflowCache(_config(True, mem_kb=4))
    assert lc.add_expr(uuid.uuid4(), "e", 1500)
    assert lc.add_expr(uuid.uuid4(), "e", 1500)
    assert not lc.add_expr(uuid.uuid4(), "e", 1500)   # 3 x 1.5 KB > 4 KB
    assert len(lc) == 2
    lc.configure(_config(True, mem_kb=2))             # below usage: flush
    assert len(lc) == 0


def test_stats_format() -> None:
    lc = LflowCache()
    lc.add_matches(uuid.uuid4(), 0, 0, [], 5000)
    assert lc.stats_text() == (
        "Enabled: true\nhigh-watermark  : 1\ntotal           : 1\n"
        "cache-expr      : 0\ncache-matches   : 1\ntrim count      : 0\n"
        "Mem usage (KB)  : 5\n")


def test_config_from_external_ids() -> None:
    cfg = LflowCacheConfig.from_external_ids({
        "ovn-enable-lflow-cache": "false", "ovn-limit-lflow-cache": "10",
        "ovn-memlimit-lflow-cache-kb": "20"})
    assert (cfg.enabled, cfg.capacity, cfg.max_mem_kb) == (False, 10, 20)
    dflt = LflowCacheConfig.from_external_ids({})
    assert dflt.enabled and dflt.capacity == UINT32_MAX


def test_config_from_values() -> None:
    cfg = LflowCacheConfig.from_values(True, None, 512, None, None, None)
    assert (cfg.capacity, cfg.max_mem_kb, cfg.trim_limit, cfg.trim_wmark_perc) == (
        UINT32_MAX, 512, 10000, 50)
    assert not LflowCacheConfig.from_values(False).enabled
