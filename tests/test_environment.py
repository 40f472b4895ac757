"""The Python environment the project depends on (see README "Dependencies")."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest


def _run_clean(code: str) -> str:
    """Run `code` in a fresh interpreter (nothing imported by pytest leaks in)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_ovs_uses_the_c_json_parser() -> None:
    # a clean interpreter: the agent itself blocks ovs._json and installs its own
    # JSON-RPC parser (controller.ovsdb.json_stream), which sets PARSER in-process
    assert _run_clean("import ovs.json\nprint(ovs.json.PARSER)\n").strip() == "C", (
        "ovs is not Debian's python3-openvswitch build (a pip-installed ovs shadows it?)")


def test_eventlet_is_absent_and_not_pulled_in() -> None:
    out = _run_clean(
        "import importlib.util, sys\n"
        "import ovs.poller, ovs.json\n"
        "import os_ken.ofproto.ofproto_v1_5_parser\n"
        "print(ovs.json.PARSER, 'eventlet' in sys.modules,"
        " importlib.util.find_spec('eventlet') is not None)\n")
    assert out.split() == ["C", "False", "False"]


@pytest.mark.parametrize("module", [
    "controller", "controller.lflow", "controller.cli", "controller.vlog",
    "controller.version", "ofctrl", "physical", "integration", "integration.sandbox",
    "integration.topologies",
])
def test_our_packages_import(module: str) -> None:
    importlib.import_module(module)


def test_os_ken_openflow15_parser_is_usable() -> None:
    from os_ken.ofproto import ofproto_v1_5 as ofp
    from os_ken.ofproto import ofproto_v1_5_parser as parser
    assert ofp.OFP_VERSION == 6
    match = parser.OFPMatch(in_port=1, eth_type=0x0800)
    assert dict(match.items()) == {"in_port": 1, "eth_type": 0x0800}


def test_entry_point_reports_version() -> None:
    out = _run_clean("import sys; from controller.cli import main; sys.exit(main(['--version']))")
    lines = out.splitlines()
    # C's four lines first (tools read the "ovn-controller " prefix), then ours.
    assert lines[:4] == ["ovn-controller 23.03.1", "Open vSwitch Library 3.1.0",
                         "OpenFlow versions 0x6:0x6", "SB DB Schema 20.27.0"]
    assert lines[4].startswith("ovn-controller-py ")
