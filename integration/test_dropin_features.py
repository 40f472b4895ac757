"""Drop-in (issue 11, points 7 and 8): ``debug/dump-local-template-vars`` and the
``features|INFO|OVS Feature: ...`` lines, side by side with the C ovn-controller
23.03.1 on the same sandbox events.

A Chassis_Template_Var row for this chassis is created in the NB database
(northd copies it to the SB), then changed; both agents must give the same
reply each time.  The feature lines (the probe's ``connecting to switch``,
then one per capability) are compared in order, run directory masked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import poll_until, Sandbox

pytestmark = pytest.mark.integration


def _feature_lines(log: Path, run: Path) -> list[str]:
    out = []
    for line in log.read_text().splitlines():
        parts = line.split("|", 4)
        if len(parts) == 5 and parts[2] == "features":
            out.append(f"{parts[2]}|{parts[3]}|{parts[4].replace(str(run), 'RUN')}")
    return out


def _dump(box: Sandbox) -> str:
    return box.appctl("controller", "debug/dump-local-template-vars")


def _scenario(box: Sandbox, kind: str) -> tuple[list[str], list[str]]:
    d = box.start_controller(kind)
    box.wait_hv_sync(timeout=60)
    replies = [_dump(box)]
    uuid = box.nbctl("create", "Chassis_Template_Var", f"chassis={box.chassis}",
                     'variables={vip="10.0.0.10", port="8080"}').strip()
    assert poll_until(lambda: "vip" in _dump(box), 30), _dump(box)
    replies.append(_dump(box))
    box.nbctl("set", "Chassis_Template_Var", uuid, 'variables={port="80"}')
    assert poll_until(lambda: "vip" not in _dump(box), 30), _dump(box)
    replies.append(_dump(box))
    # a row for another chassis is not local
    box.nbctl("create", "Chassis_Template_Var", "chassis=hv-other", 'variables={x="1"}')
    box.nbctl("--wait=sb", "sync")
    replies.append(_dump(box))
    return replies, _feature_lines(d.log, box.run)


def test_template_vars_and_feature_lines_as_c(sandbox_factory: SandboxFactory) -> None:
    got = {kind: _scenario(sandbox_factory(), kind) for kind in ("c", "py")}
    c_replies, c_features = got["c"]
    py_replies, py_features = got["py"]
    assert py_replies == c_replies
    assert c_replies[0] == "Local template vars:\n"
    assert c_replies[1] == ("Local template vars:\nname: 'port' value: '8080'\n"
                            "name: 'vip' value: '10.0.0.10'\n")
    assert py_features == c_features
    assert c_features[0] == "features|INFO|unix:RUN/br-int.mgmt: connecting to switch"
    assert "features|INFO|OVS Feature: ct_zero_snat, state: supported" in c_features
