"""Drop-in, log lines people grep for (issue 11, point 8) and the OpenFlow
inactivity probe (point 9), side by side with the C ovn-controller 23.03.1.

Both agents see the same events: start, ovs-vswitchd stopped (br-int.mgmt
closed, reconnect attempts with backoff) and started again, then the SB
ovsdb-server stopped.  The ``reconnect`` (OVSDB) and ``rconn`` (br-int.mgmt)
lines, in order of first appearance, must be the C agent's, word for word
once the run directory is masked.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import poll_until, Sandbox

pytestmark = pytest.mark.integration


def _messages(log: Path, run: Path, modules: tuple[str, ...]) -> list[str]:
    seen: list[str] = []
    for line in log.read_text().splitlines():
        parts = line.split("|", 4)
        if len(parts) < 5 or parts[2] not in modules:
            continue
        text = f"{parts[2]}|{parts[3]}|{parts[4].replace(str(run), 'RUN')}"
        if text not in seen:
            seen.append(text)
    return seen




def _scenario(box: Sandbox, kind: str) -> list[str]:
    d = box.start_controller(kind)
    box.wait_hv_sync(timeout=60)
    box.stop_daemon("vswitchd")
    # two failed attempts: "waiting 2 seconds", then "waiting 4 seconds"
    assert poll_until(lambda: "waiting 4 seconds before reconnect" in d.log.read_text(), 30)
    box.restart_vswitchd()
    assert poll_until(lambda: d.log.read_text().count("br-int.mgmt: connected") >= 2, 30)
    box.stop_daemon("sb")
    assert poll_until(lambda: "ovnsb_db.sock: waiting 4 seconds" in d.log.read_text(), 30)
    return _messages(d.log, box.run, ("reconnect", "rconn"))


def test_reconnect_and_rconn_lines_as_c(sandbox_factory: SandboxFactory) -> None:
    got = {kind: _scenario(sandbox_factory(), kind) for kind in ("c", "py")}
    assert got["py"] == got["c"]
    assert "reconnect|INFO|unix:RUN/ovnsb_db.sock: connection closed by peer" in got["c"]
    assert "rconn|WARN|unix:RUN/br-int.mgmt: connection failed (No such file or directory)" \
        in got["c"]


def test_first_lines(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory()
    d = box.start_controller("py")
    box.wait_hv_sync(timeout=60)
    lines = d.log.read_text().splitlines()
    assert lines[0].split("|", 2)[2] == f"vlog|INFO|opened log file {d.log}"
    assert any(line.endswith("|main|INFO|OVN internal version is : [23.03.1-20.27.0-70.6]")
               for line in lines)


@pytest.mark.parametrize("kind", ["c", "py"])
def test_openflow_probe_interval(sandbox_factory: SandboxFactory, kind: str) -> None:
    """ovn-openflow-probe-interval=5: echo requests while idle; a switch that
    stops answering is dropped after another interval and reconnected."""
    box = sandbox_factory()
    box.vsctl("set", "Open_vSwitch", ".", "external_ids:ovn-openflow-probe-interval=5")
    box.appctl("ovs-vswitchd", "vlog/set", "vconn:file:dbg")
    d = box.start_controller(kind)
    box.wait_hv_sync(timeout=60)
    vswitchd_log = box.daemons["vswitchd"].log
    assert poll_until(lambda: re.search(r"received: OFPT_ECHO_REQUEST",
                                   vswitchd_log.read_text()) is not None, 20)
    pid = box.daemons["vswitchd"].pid
    os.kill(pid, signal.SIGSTOP)
    try:
        assert poll_until(lambda: "no response to inactivity probe after 5 seconds, disconnecting"
                     in d.log.read_text(), 30), d.log.read_text()[-2000:]
    finally:
        os.kill(pid, signal.SIGCONT)
    text = d.log.read_text()
    assert "|rconn|ERR|unix:" in text
    n_connected = text.count("br-int.mgmt: connected")
    assert poll_until(lambda: d.log.read_text().count("br-int.mgmt: connected") > n_connected, 30)
    assert box.controller_alive()
