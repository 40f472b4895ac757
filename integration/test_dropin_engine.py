"""Drop-in, the engine (issue 11 point 4, issue 10 point 2): ``inc-engine/
show-stats`` of our agent lists the C ovn-controller 23.03.1's nodes, in its
order and text format, on the same sandbox; ``show-stats NODE STAT`` answers
for every node and ``inc-engine/recompute`` recomputes the flow outputs of
both agents.
"""

from __future__ import annotations

import re
import time

import pytest

from controller.engine.graph import C_NODE_ORDER
from integration.sandbox import Sandbox

pytestmark = pytest.mark.integration

FLOW_NODES = ("runtime_data", "logical_flow_output", "physical_flow_output")


def _recomputes(box: Sandbox) -> dict[str, int]:
    return {n: int(box.appctl("controller", "inc-engine/show-stats", n, "recompute"))
            for n in FLOW_NODES}


def _run(box: Sandbox, kind: str) -> dict[str, object]:
    box.start_controller(kind)
    box.wait_hv_sync()
    stats = box.appctl("controller", "inc-engine/show-stats")
    per_node = {n: [box.appctl("controller", "inc-engine/show-stats", n, s).strip()
                    for s in ("recompute", "compute", "abort")]
                for n in C_NODE_ORDER}
    replies = [box.appctl("controller", "inc-engine/show-stats", *args)
               for args in (("SB_encap",), ("logical_flow_output", "bogus"), ("nosuchnode",),
                            ("nosuchnode", "recompute"))]
    box.appctl("controller", "inc-engine/clear-stats")
    cleared = box.appctl("controller", "inc-engine/show-stats", "physical_flow_output")
    before = _recomputes(box)
    box.appctl("controller", "inc-engine/recompute")
    deadline = time.monotonic() + 30
    after = _recomputes(box)
    while any(after[n] <= before[n] for n in FLOW_NODES) and time.monotonic() < deadline:
        time.sleep(0.1)
        after = _recomputes(box)
    box.stop_controller()
    return {"stats": stats, "per_node": per_node, "before": before, "after": after,
            "replies": replies, "cleared": cleared}


@pytest.fixture(scope="module")
def both() -> dict[str, dict[str, object]]:
    out = {}
    with Sandbox() as box:
        box.nbctl("ls-add", "sw0", "--", "lsp-add", "sw0", "p1", "--",
                  "lsp-set-addresses", "p1", "00:00:00:00:00:01 10.0.0.1",
                  "--", "lsp-add", "sw0", "p2")
        box.bind_vif("vif1", "p1")
        for kind in ("c", "py"):
            out[kind] = _run(box, kind)
    return out


def _nodes(stats: str) -> list[str]:
    return re.findall(r"^Node: (\S+)$", stats, re.M)


def test_show_stats_lists_cs_nodes_in_cs_order(both: dict[str, dict[str, object]]) -> None:
    c_nodes = _nodes(str(both["c"]["stats"]))
    assert tuple(c_nodes) == C_NODE_ORDER       # the reference list is still C's
    assert _nodes(str(both["py"]["stats"])) == c_nodes


def _shape(text: str) -> str:
    # right-aligned counters: the padded field keeps its width
    return re.sub(r" *\d+$", lambda m: "#" * len(m.group(0)), text, flags=re.M)


def test_show_stats_text_has_cs_shape(both: dict[str, dict[str, object]]) -> None:
    assert _shape(str(both["py"]["stats"])) == _shape(str(both["c"]["stats"]))


def test_show_stats_node_replies_as_c(both: dict[str, dict[str, object]]) -> None:
    """One node's block, an unknown stat, an unknown node, clear-stats."""
    py, c = both["py"]["replies"], both["c"]["replies"]
    assert isinstance(py, list) and isinstance(c, list)
    assert _shape(py[0]) == _shape(c[0]) and py[0].startswith("Node: SB_encap\n")
    assert py[1:] == c[1:]
    assert both["py"]["cleared"] == both["c"]["cleared"]
    assert "- recompute:            0\n" in str(both["c"]["cleared"])


def test_show_stats_node_stat_for_every_node(both: dict[str, dict[str, object]]) -> None:
    for kind in ("c", "py"):
        per_node = both[kind]["per_node"]
        assert isinstance(per_node, dict)
        for node, values in per_node.items():
            assert all(v.isdigit() for v in values), (kind, node, values)


def test_recompute_command_recomputes_the_flow_outputs(
        both: dict[str, dict[str, object]]) -> None:
    for kind in ("c", "py"):
        before, after = both[kind]["before"], both[kind]["after"]
        assert isinstance(before, dict) and isinstance(after, dict)
        assert all(after[n] > before[n] for n in FLOW_NODES), (kind, before, after)
