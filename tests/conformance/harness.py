"""Replays the OVN 23.03.1 `test-ovn` environment for the conformance vectors.

See /work/shared/ovn-at-vectors/HARNESS.md.  Provides:

* ``load_vectors(name)`` -> list of vector dicts; ``vector_params(name)`` ->
  pytest params with ids ``<file>-<index>``; ``xfail_params(name, known)``
  marks the given indices ``xfail(strict=True)``.
* The test-ovn environment (filled in as the language modules land):
  ``make_symtab()``, ``ADDR_SETS``, ``PORT_GROUPS``, ``PORTS``,
  ``lookup_port(name)``, ``is_chassis_resident(name)``, ``DP_ID``.
"""

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
