"""Bad SB input (issue 12, point 5), ours and the C oracle side by side.

* a Port_Binding of a type this agent does not know (``frobnicate``), with a
  VIF claiming its name on br-int: warned about, not bound, no flows;
* a remote chassis whose Encap ip is ``""``: its tunnel port may exist in
  OVS (both agents write it) but no flow receives from or sends to it.

northd is stopped first so the hand-made SB rows stay as written.
"""

from __future__ import annotations

import re

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import Sandbox
from integration.test_agent_basic import col, wait_until
from integration.test_faults import AGENTS, log_lines, rich_agent

pytestmark = pytest.mark.integration


def frozen_rich(sandbox_factory: SandboxFactory, kind: str) -> Sandbox:
    box = rich_agent(sandbox_factory, kind)
    box.stop_daemon("northd")
    box.northd_enabled = False          # wait_hv_sync plays northd's nb_cfg part
    box.wait_hv_sync(timeout=60)
    return box


def flows(box: Sandbox) -> set[str]:
    return set(box.dump_flows(names=False))


@AGENTS
def test_unknown_port_binding_type_warned_and_skipped(sandbox_factory: SandboxFactory,
                                                      kind: str) -> None:
    box = frozen_rich(sandbox_factory, kind)
    before = flows(box)
    dp = col(box, "Datapath_Binding", "external_ids:name=ls-a", "_uuid")
    box.sbctl("create", "Port_Binding", "logical_port=frob", "type=frobnicate",
              f"datapath={dp}", "tunnel_key=99", 'mac="0a:00:00:00:01:63 10.0.1.99"')
    box.bind_vif("vif-frob", "frob", ofport=19)
    wait_until(lambda: any("Unknown port binding type [frobnicate] for port binding [frob]"
                           in ln for ln in log_lines(box)), what="the warning", box=box)
    box.wait_hv_sync(timeout=60)
    after = flows(box)
    assert box.controller_alive()
    assert after == before, "flows for an unknown port type:\n" + "\n".join(
        sorted(after ^ before)[:20])
    assert col(box, "Port_Binding", "logical_port=frob", "chassis") == ""


def _tunnel_ofport(box: Sandbox, chassis: str) -> int:
    # One CSV row per interface: a port vswitchd has not numbered yet has an empty
    # ofport, which --bare would print as nothing and so shift every later pair.
    out = box.vsctl("--format=csv", "--data=bare", "--no-headings",
                    "--columns=name,ofport", "find", "Interface", "type=geneve")
    for row in out.splitlines():
        name, _, ofport = row.partition(",")
        if name.startswith(f"ovn-{chassis}-") and ofport.strip().lstrip("-").isdigit():
            return int(ofport)
    return 0


@AGENTS
def test_remote_chassis_with_empty_encap_ip_gets_no_tunnel_flow(
        sandbox_factory: SandboxFactory, kind: str) -> None:
    box = frozen_rich(sandbox_factory, kind)
    before = flows(box)
    box.sbctl("chassis-add", "hv3", "geneve", "127.0.0.3")
    wait_until(lambda: _tunnel_ofport(box, "hv3") > 0, what="tunnel to hv3", box=box)
    box.wait_hv_sync(timeout=60)
    port = _tunnel_ofport(box, "hv3")
    wait_until(lambda: any(re.search(rf"\bin_port={port}\b", f) for f in flows(box)),
               what="hv3 tunnel flow", box=box)
    encap = col(box, "Chassis", "name=hv3", "encaps")
    box.sbctl("set", "Encap", encap, 'ip=""')
    wait_until(lambda: flows(box) == before, what="no hv3 tunnel flow", box=box)
    port = _tunnel_ofport(box, "hv3")
    box.wait_hv_sync(timeout=60)
    assert flows(box) == before
    assert not port or not any(re.search(rf"\b(in_port|output):{port}\b|in_port={port}\b", f)
                               for f in flows(box))
    assert box.controller_alive()
