"""Drop-in, SSL Southbound (issue 11, point 1): ``ovn-remote=ssl:IP:PORT`` with
``-p/-c/-C``, against a real SB ovsdb-server listening on ``pssl:`` with a PKI
made by ``ovs-pki``; the C ovn-controller is run the same way for comparison.

The sandbox's SB ovsdb-server is restarted on the same database with the
server-side key, certificate and CA certificate on its command line and an
extra ``--remote=pssl:PORT:127.0.0.1`` (northd keeps using the unix socket).
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from integration.conftest import SandboxFactory
from integration.sandbox import Sandbox, find_binary, poll_until

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Pki:
    """A CA pair and two certificates made with ovs-pki: the SB server's
    (signed by controllerca) and the chassis' (signed by switchca)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        pki = root / "pki"
        run = [find_binary("ovs-pki"), f"--dir={pki}", "--force"]
        subprocess.run([*run, "init"], cwd=root, check=True, capture_output=True, timeout=120)
        for name, kind in (("sb", "controller"), ("hv", "switch")):
            subprocess.run([*run, "req+sign", name, kind], cwd=root, check=True,
                           capture_output=True, timeout=120)
        self.controller_ca = pki / "controllerca" / "cacert.pem"
        self.switch_ca = pki / "switchca" / "cacert.pem"

    def key(self, name: str) -> Path:
        return self.root / f"{name}-privkey.pem"

    def cert(self, name: str) -> Path:
        return self.root / f"{name}-cert.pem"

    def client_args(self, ca: Path | None = None) -> list[str]:
        return [f"--private-key={self.key('hv')}", f"--certificate={self.cert('hv')}",
                f"--ca-cert={ca or self.controller_ca}"]


def _serve_sb_over_ssl(box: Sandbox, pki: Pki) -> int:
    port = _free_port()
    box.stop_daemon("sb")
    box._ovs_daemon("sb", "ovsdb-server", [
        f"--remote=punix:{box.run}/ovnsb_db.sock",
        f"--remote=pssl:{port}:127.0.0.1",
        f"--private-key={pki.key('sb')}", f"--certificate={pki.cert('sb')}",
        f"--ca-cert={pki.switch_ca}", str(box.run / "ovnsb_db.db")],
        base="ovnsb_db", unixctl=True)
    return port


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


def _setup(sandbox_factory: SandboxFactory, pki: Pki, remote_fmt: str) -> Sandbox:
    box = sandbox_factory()
    port = _serve_sb_over_ssl(box, pki)
    box.nbctl("ls-add", "ls1", "--", "lsp-add", "ls1", "p1", "--",
              "lsp-set-addresses", "p1", "00:00:00:00:00:01 10.0.0.1")
    box.vsctl("set", "Open_vSwitch", ".",
              f"external_ids:ovn-remote={remote_fmt.format(port=port, run=box.run)}")
    box.bind_vif("p1", "p1")
    return box


@pytest.mark.parametrize("kind", ["c", "py"])
def test_ssl_southbound_connects_and_installs_flows(sandbox_factory: SandboxFactory, pki: Pki,
                                                    kind: str) -> None:
    box = _setup(sandbox_factory, pki, "ssl:127.0.0.1:{port}")
    box.start_controller(kind, extra_args=pki.client_args())
    box.wait_hv_sync(timeout=60, min_flows=10)
    assert box.appctl("controller", "connection-status").strip() == "connected"
    chassis = box.sbctl("--bare", "--columns=chassis", "find", "Port_Binding",
                        "logical_port=p1").strip()
    assert chassis, "p1 not claimed over the SSL connection"
    log = box.daemons["controller"].log.read_text()
    assert "|reconnect|INFO|ssl:127.0.0.1:" in log and ": connected" in log


def test_ssl_comma_list_skips_a_dead_remote(sandbox_factory: SandboxFactory, pki: Pki) -> None:
    dead = _free_port()
    box = _setup(sandbox_factory, pki, f"tcp:127.0.0.1:{dead},ssl:127.0.0.1:{{port}}")
    box.start_controller("py", extra_args=pki.client_args())
    box.wait_hv_sync(timeout=90, min_flows=10)
    assert box.appctl("controller", "connection-status").strip() == "connected"


@pytest.mark.parametrize("kind", ["c", "py"])
def test_ssl_wrong_ca_is_logged_and_retried(sandbox_factory: SandboxFactory, pki: Pki,
                                            kind: str) -> None:
    box = _setup(sandbox_factory, pki, "ssl:127.0.0.1:{port}")
    # the switch CA did not sign the server's certificate
    box.start_controller(kind, extra_args=pki.client_args(ca=pki.switch_ca))
    log = box.daemons["controller"].log

    def retried() -> bool:
        text = log.read_text()
        return text.count("connection attempt failed") >= 2

    assert poll_until(retried, 30, period=0.2), log.read_text()
    text = log.read_text()
    assert box.controller_alive()
    assert box.appctl("controller", "connection-status").strip() == "not connected"
    if kind == "py":
        assert "|stream_ssl|WARN|ssl:127.0.0.1:" in text
        assert "SSL_connect: certificate verify failed" in text
        assert "|reconnect|INFO|" in text and "seconds before reconnect" in text
    assert "Traceback" not in text


def test_ssl_without_pki_options_is_an_error_not_a_crash(sandbox_factory: SandboxFactory,
                                                         pki: Pki) -> None:
    box = _setup(sandbox_factory, pki, "ssl:127.0.0.1:{port}")
    box.start_controller("py")
    log = box.daemons["controller"].log
    assert poll_until(lambda: "Private key must be configured to use SSL" in log.read_text(),
                      period=0.2)
    assert poll_until(lambda: "connection attempt failed" in log.read_text(), period=0.2)
    assert box.controller_alive()
    assert box.appctl("controller", "connection-status").strip() == "not connected"


def test_ssl_files_from_the_ovs_ssl_table(sandbox_factory: SandboxFactory, pki: Pki) -> None:
    """`ovs-vsctl set-ssl` configures the agent's PKI (and wins over -p/-c/-C)."""
    box = _setup(sandbox_factory, pki, "ssl:127.0.0.1:{port}")
    box.vsctl("set-ssl", str(pki.key("hv")), str(pki.cert("hv")), str(pki.controller_ca))
    box.start_controller("py", extra_args=pki.client_args(ca=pki.switch_ca))   # wrong CA
    box.wait_hv_sync(timeout=60, min_flows=10)
    assert box.appctl("controller", "connection-status").strip() == "connected"
