"""Drop-in, ``ovn-appctl`` commands (issue 11, point 7): the vlog commands, C's
module names and C's error texts, compared reply for reply (exit status and
text) with the C ovn-controller 23.03.1 given the same command sequence.
"""

from __future__ import annotations

import subprocess

import pytest

from integration.sandbox import Sandbox

pytestmark = pytest.mark.integration

# Run in this order against each agent; every reply must match C's.
SEQUENCE: list[list[str]] = [
    ["vlog/list-pattern"],
    ["vlog/set", "PATTERN:file:%c|%p|%m"],
    ["vlog/list-pattern"],
    ["vlog/set", "PATTERN:console:%D{%H:%M:%S}|%m"],
    ["vlog/set", "PATTERN"],
    ["vlog/set", "PATTERN:bogus:%m"],
    ["vlog/set", "nosuchmod:dbg"],
    ["vlog/set", "binding:nosuchlevel"],
    ["vlog/set", "binding:file:dbg:extra"],
    ["vlog/set", "vconn:dbg", "rconn:file:dbg", "jsonrpc:off", "reconnect:info"],
    ["vlog/set", "ovsdb_idl:syslog:warn", "pinctrl:console:emer", "stream_ssl:file:err"],
    ["vlog/set", "FACILITY:local0"],
    ["vlog/set", "FACILITY:bogus"],
    ["vlog/enable-rate-limit"],
    ["vlog/disable-rate-limit", "binding", "lflow"],
    ["vlog/disable-rate-limit", "nosuch"],
    ["vlog/enable-rate-limit", "nosuch"],
    ["vlog/set"],
    ["nosuchcmd"],
    ["version", "extra"],
    ["coverage/read-counter"],
    ["coverage/read-counter", "nosuch_counter"],
    ["connection-status"],
    ["vlog/reopen"],
]


def _run(box: Sandbox, kind: str) -> tuple[list[tuple[int, str]], str, str]:
    box.start_controller(kind)
    ctl = str(box.daemons["controller"].ctl)
    replies = []
    for cmd in [*SEQUENCE]:
        p = subprocess.run(["ovs-appctl", "-t", ctl, *cmd], env=box.env, capture_output=True,
                           text=True, timeout=60)
        text = p.stdout + p.stderr.replace(ctl, "CTL")
        replies.append((p.returncode, text))
    levels = box.appctl("controller", "vlog/list")
    commands = box.appctl("controller", "list-commands")
    box.stop_controller()
    return replies, levels, commands


@pytest.fixture(scope="module")
def both() -> dict[str, tuple[list[tuple[int, str]],
                                                                        str, str]]:
    out = {}
    with Sandbox() as box:
        for kind in ("c", "py"):
            out[kind] = _run(box, kind)
    return out


def test_replies_match_c(both: dict[str, tuple[list[tuple[int, str]], str, str]]) -> None:
    c, py = both["c"][0], both["py"][0]
    for cmd, want, got in zip(SEQUENCE, c, py):
        assert got == want, f"ovn-appctl {' '.join(cmd)}"


def _rows(text: str) -> dict[str, str]:
    return {line.split()[0]: line for line in text.splitlines()[2:]}


def test_vlog_list_has_c_modules_with_c_levels(
        both: dict[str, tuple[list[tuple[int, str]], str, str]]) -> None:
    c, py = _rows(both["c"][1]), _rows(both["py"][1])
    assert both["py"][1].splitlines()[:2] == both["c"][1].splitlines()[:2]
    missing = sorted(set(c) - set(py))
    assert not missing, f"C modules unknown to vlog/set: {missing}"
    for name, row in c.items():
        assert py[name] == row, name


def test_list_commands_has_c_commands_with_c_usage(
        both: dict[str, tuple[list[tuple[int, str]], str, str]]) -> None:
    def commands(text: str) -> dict[str, str]:
        return {line.split()[0]: line for line in text.splitlines()[1:]}
    c, py = commands(both["c"][2]), commands(both["py"][2])
    missing = set(c) - set(py)
    assert not missing
    for name in set(c) & set(py):
        assert py[name] == c[name], name
