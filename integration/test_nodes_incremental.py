"""The nodes of C's graph at work (issue 10 point 2): a template variable of
this chassis changing is handled incrementally by ``template_vars``,
``lb_data`` and both flow outputs (no full recompute of runtime_data,
logical_flow_output or physical_flow_output), and the flows then equal a
forced recompute's and carry the new values; a template variable of another
chassis changes nothing.
"""

from __future__ import annotations

import pytest

from integration.conftest import SandboxFactory, forced_recompute_diff, openflow_state
from integration.sandbox import Sandbox

pytestmark = pytest.mark.integration

NODES = ("runtime_data", "logical_flow_output", "physical_flow_output")


def _recomputes(box: Sandbox) -> dict[str, int]:
    return {n: int(box.appctl("controller", "inc-engine/show-stats", n, "recompute"))
            for n in NODES}


def _flows(box: Sandbox) -> str:
    return "\n".join(openflow_state(box))


def test_template_var_change_is_incremental(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory()
    box.nbctl("ls-add", "sw0", "--", "lsp-add", "sw0", "p1", "--",
              "lsp-set-addresses", "p1", "00:00:00:00:00:01 10.0.0.1",
              "--", "lsp-add", "sw0", "p2", "--",
              "lsp-set-addresses", "p2", "00:00:00:00:00:02 10.0.0.2")
    tv = box.nbctl("create", "Chassis_Template_Var", f"chassis={box.chassis}",
                   'variables={vip="10.0.0.100", vport="80", backends="10.0.0.2:8080"}').strip()
    other = box.nbctl("create", "Chassis_Template_Var", "chassis=hv-other",
                      'variables={vip="10.0.0.200", vport="81", '
                      'backends="10.0.0.2:9090"}').strip()
    box.nbctl("--template", "lb-add", "lb0", "^vip:^vport", "^backends", "tcp")
    box.nbctl("ls-lb-add", "sw0", "lb0")
    box.start_controller("py")
    box.bind_vif("vif1", "p1")
    box.bind_vif("vif2", "p2")
    box.wait_hv_sync()
    flows = _flows(box)
    assert "10.0.0.100" in flows and "10.0.0.2:8080" in flows
    before = _recomputes(box)

    box.nbctl("set", "Chassis_Template_Var", tv,
              'variables={vip="10.0.0.101", vport="80", backends="10.0.0.2:8181"}')
    box.wait_hv_sync()
    flows = _flows(box)
    assert "10.0.0.101" in flows and "10.0.0.2:8181" in flows
    assert "10.0.0.100" not in flows and "10.0.0.2:8080" not in flows
    assert _recomputes(box) == before

    box.nbctl("set", "Chassis_Template_Var", other, 'variables={vip="10.0.0.201"}')
    box.wait_hv_sync()
    assert _flows(box) == flows
    assert _recomputes(box) == before
    assert forced_recompute_diff(box) == []
