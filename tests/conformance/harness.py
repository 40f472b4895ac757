"""Replays the OVN 23.03.1 `test-ovn` environment for the conformance vectors.

See /work/shared/ovn-at-vectors/HARNESS.md.  Provides:

* ``load_vectors(name)`` -> list of vector dicts; ``vector_params(name,
  known_failures)`` -> pytest params with ids ``<file>-<index>``, the known
  failures marked ``xfail(strict=True)``;
* the test-ovn environment: ``make_symtab()`` / ``symtab()``, ``PORTS`` and
  ``ACTION_PORTS`` (``lookup_port(name)``, ``is_chassis_resident(name)``),
  ``DP_ID``, ``addr_sets()`` and ``port_groups()`` (from ``ADDR_SET_VALUES``
  / ``PORT_GROUP_VALUES``), ``run_expr_steps(text, steps)``;
* the reference data of /work/shared/reference-data: ``load_sb_snapshot``,
  ``load_reference_flows``."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

VECTOR_DIR = os.environ.get("OVN_AT_VECTORS", "/work/shared/ovn-at-vectors")


def load_vectors(name: str) -> list[dict[str, Any]]:
    """Vectors of '<name>.json' (the 'vectors' list)."""
    with open(os.path.join(VECTOR_DIR, name + ".json"), encoding="utf-8") as f:
        data = json.load(f)
    vectors: list[dict[str, Any]] = data["vectors"] if isinstance(data, dict) else data
    return vectors


def vector_params(name: str, known_failures: dict[int, str] | None = None) -> list[Any]:
    """pytest params for every vector of 'name', id '<name>-<index>'.

    'known_failures' maps an index to the reason it is expected to fail; those
    cases are marked xfail(strict=True)."""
    known_failures = known_failures or {}
    params = []
    for i, v in enumerate(load_vectors(name)):
        marks = []
        if i in known_failures:
            marks.append(pytest.mark.xfail(strict=True, reason=known_failures[i]))
        params.append(pytest.param(v, id=f"{name}-{i}", marks=marks))
    return params


# ---------------------------------------------------------------------------
# The test-ovn environment (tests/test-ovn.c).

def make_symtab() -> Any:
    """ovn_init_symtab() plus the five negative-test symbols of create_symtab()."""
    from controller.lflow.symtab import build_ovn_symtab

    st = build_ovn_symtab()
    st.add_field("bad_prereq", "xreg0", "xyzzy", False)
    st.add_field("self_recurse", "xreg0", "self_recurse != 0", False)
    st.add_field("mutual_recurse_1", "xreg0", "mutual_recurse_2 != 0", False)
    st.add_field("mutual_recurse_2", "xreg0", "mutual_recurse_1 != 0", False)
    st.add_string("big_string", "xreg0", None)
    return st


_SYMTAB: Any = None


def symtab() -> Any:
    """Shared test symbol table (built once)."""
    global _SYMTAB
    if _SYMTAB is None:
        _SYMTAB = make_symtab()
    return _SYMTAB


# Logical port name -> key (expression tests); also is_chassis_resident().
PORTS: dict[str, int] = {
    "eth0": 5, "eth1": 6, "LOCAL": 0xfffe, "lsp1": 0x11, "lsp2": 0x12, "lsp3": 0x13,
}
# parse-actions uses a smaller map (no lsp2/lsp3).
ACTION_PORTS: dict[str, int] = {"eth0": 5, "eth1": 6, "LOCAL": 0xfffe, "lsp1": 0x11}
DP_ID = 0

ADDR_SET_VALUES: dict[str, list[str]] = {
    "set1": ["10.0.0.1", "10.0.0.2", "10.0.0.3"],
    "set2": ["::1", "::2", "::3"],
    "set3": ["00:00:00:00:00:01", "00:00:00:00:00:02", "00:00:00:00:00:03"],
    "set4": [],
}
PORT_GROUP_VALUES: dict[str, list[str]] = {
    "0_pg1": ["lsp1", "lsp2", "lsp3"],
    "0_pg_empty": [],
}


def lookup_port(name: str) -> int | None:
    return PORTS.get(name)


def is_chassis_resident(name: str) -> bool:
    return name in PORTS


def test_lines(text: str) -> list[str]:
    """Lines as OVS ds_get_test_line() returns them (comments/blank skipped)."""
    out = []
    for line in text.split("\n"):
        if line.startswith("#"):
            continue
        line = line.split("#", 1)[0]
        if not line.strip():
            continue
        out.append(line)
    return out


def addr_sets() -> dict[str, Any]:
    from controller.lflow.expr.nodes import const_set_from_integers

    return {name: const_set_from_integers(vals) for name, vals in ADDR_SET_VALUES.items()}


def port_groups() -> dict[str, Any]:
    from controller.lflow.expr.nodes import const_set_from_strings

    return {name: const_set_from_strings(vals) for name, vals in PORT_GROUP_VALUES.items()}


def run_expr_steps(text: str, steps: int) -> tuple[Any, str | None]:
    """test_parse_expr__(steps): 0 parse, 1 +annotate, 2 +simplify/evaluate
    conditions, 3 +normalize.  Returns (expr, error)."""
    from controller.lflow.expr import parse as expr_parse

    e, err = expr_parse.parse_expr_string(text, symtab(), addr_sets(), port_groups(), DP_ID)
    if err is not None or steps == 0 or e is None:
        return e, err
    import controller.lflow.expr.annotate as expr_annotate

    try:
        e = expr_annotate.annotate(e, symtab())
    except expr_parse.ExprError as exc:
        return None, str(exc)
    if steps > 1:
        e = expr_annotate.simplify(e)
        e = expr_annotate.evaluate_condition(e, is_chassis_resident)
    if steps > 2:
        import controller.lflow.expr.normalize as expr_normalize

        e = expr_normalize.normalize(e)
        assert expr_normalize.is_normalized(e)
    return e, None


# ---------------------------------------------------------------------------
# Real-agent reference data (/work/shared/reference-data): SB snapshot and
# the flows the C ovn-controller installed from it.

REFERENCE_DIR = os.environ.get("OVN_REFERENCE_DATA", "/work/shared/reference-data")


def _open_ref(path: str) -> Any:
    import gzip

    if os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _atoms(v: Any) -> list[Any]:
    if isinstance(v, list) and v:
        if v[0] == "set":
            return [_atoms(x)[0] for x in v[1]]
        if v[0] == "uuid":
            return [v[1]]
        if v[0] == "map":
            return list(v[1])
    return [v]


def load_sb_snapshot(name: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Tables of reference-data/<name>/sb.db (an ovsdb-client backup file),
    as {table: {uuid: {column: value}}} with OVSDB sets/uuids flattened to
    lists (use ``sb_atoms``)."""
    from controller.lflow.snapshot import final_rows

    return final_rows(os.path.join(REFERENCE_DIR, name, "sb.db"))[1]

sb_atoms = _atoms


def load_reference_flows(name: str) -> list[tuple[int, int, int, str, str]]:
    """(cookie, table, priority, match, actions) of reference-data/<name>/flows.raw.txt."""
    import re

    out = []
    pattern = re.compile(r"\s*(?:cookie=(\S+), )?table=(\d+), priority=(\d+)(?:,(\S*))? actions=(.*)")
    with _open_ref(os.path.join(REFERENCE_DIR, name, "flows.raw.txt")) as f:
        for line in f:
            m = pattern.match(line)
            if m:
                out.append((int(m.group(1) or "0", 16), int(m.group(2)), int(m.group(3)),
                            m.group(4) or "", m.group(5)))
    return out
