"""The OVN facts module: declared tables are consistent with the names."""

from __future__ import annotations

from physical import constants as C


def test_tables_are_unique_and_named_after_their_constants() -> None:
    numbers = [t.number for t in C.TABLES]
    assert numbers == sorted(set(numbers))
    for t in C.TABLES:
        assert t.holds
    by_name = {t.name: t.number for t in C.TABLES}
    assert by_name["PHY_TO_LOG"] == C.T_PHY_TO_LOG == 0
    assert by_name["LOG_EGRESS_PIPELINE"] == C.T_LOG_EGRESS == 42
    assert by_name["CHK_LB_AFFINITY"] == C.T_CHK_LB_AFFINITY == 78


def test_declared_tables() -> None:
    # logical stages of both pipelines, the output stage, the lookup tables
    assert all(C.table_is_declared(n) for n in range(0, 1))
    assert all(C.table_is_declared(n) for n in range(8, 79))
    assert not any(C.table_is_declared(n) for n in (*range(1, 8), 79, 100, 255))
    assert C.T_LOG_INGRESS + C.LOG_PIPELINE_LEN == C.T_OUTPUT_INIT


def test_one_opcode_name_per_opcode() -> None:
    ops = {k: v for k, v in vars(C).items() if k.startswith("OP_")}
    assert len(set(ops.values())) == len(ops) == 27
    assert not any(k.startswith("ACTION_OPCODE_") for k in vars(C))
