"""controller.vlog / vlog_format: PATTERN:, FACILITY:, syslog senders, rate-limit
switches, the ovs library bridge and C's error texts."""

from __future__ import annotations

import io
import socket
import time
from collections.abc import Iterator

import pytest

from controller import vlog
from controller.vlog_format import Record, compile_pattern, format_time, render_pattern


@pytest.fixture
def console() -> Iterator[io.StringIO]:
    vlog.reset()
    stream = io.StringIO()
    vlog.set_console(stream)
    yield stream
    vlog.reset()


def _rec(**kw: object) -> Record:
    base: dict[str, object] = dict(seq=7, module="binding", level_name="INFO", text="hi",
                                   now=1_700_000_000.25, program="ovn-controller",
                                   priority=30, start=1_700_000_000.0)
    base.update(kw)
    return Record(**base)  # type: ignore[arg-type]


def test_default_file_pattern_renders_like_the_fast_path() -> None:
    pieces = compile_pattern("%D{%Y-%m-%dT%H:%M:%S.###Z}|%05N|%c%T|%p|%m")
    assert render_pattern(pieces, _rec()) == "2023-11-14T22:13:20.250Z|00007|binding|INFO|hi"


def test_widths_flags_and_other_escapes() -> None:
    rec = _rec()
    assert render_pattern(compile_pattern("[%-8c][%8p][%3N]%%"), rec) == \
        "[binding ][    INFO][  7]%"
    assert render_pattern(compile_pattern("%A:%B:%r:%t%T"), rec) == "ovn-controller:30:250:main"
    assert render_pattern(compile_pattern("%q stays"), rec) == "%q stays"
    assert format_time("%S.#", 12.75, True) == "12.7"


def test_pattern_command_changes_the_console_line(console: io.StringIO) -> None:
    vlog.apply_spec("PATTERN:console:%c|%p|%m")
    vlog.get_logger("binding").info("Claiming lport p1 for this chassis.")
    assert console.getvalue() == "binding|INFO|Claiming lport p1 for this chassis.\n"
    assert "CONSOLE  none                              %c|%p|%m" in vlog.list_patterns()
    vlog.apply_spec("PATTERN:console")          # back to the default
    assert vlog.list_patterns().splitlines()[3] == \
        "CONSOLE  none                              %D{%Y-%m-%dT%H:%M:%SZ}|%05N|%c%T|%p|%m"


@pytest.mark.parametrize("spec, error", [
    ("nosuchmod:dbg", 'no destination, level, or module "nosuchmod"'),
    ("binding:loud", 'no destination, level, or module "loud"'),
    ("PATTERN", "missing destination"),
    ("PATTERN:bogus:%m", 'unknown destination "bogus"'),
    ("FACILITY:bogus", "invalid facility"),
])
def test_c_error_texts(console: io.StringIO, spec: str, error: str) -> None:
    with pytest.raises(ValueError) as exc:
        vlog.apply_spec(spec)
    assert str(exc.value) == error


def test_rate_limit_switches(console: io.StringIO) -> None:
    log = vlog.get_logger("binding")
    rl = vlog.RateLimiter(per_minute=1, burst=1, clock=lambda: 0.0)
    for _ in range(3):
        log.warn_rl(rl, "again")
    assert console.getvalue().count("again") == 1
    vlog.set_rate_limit(["binding"], False)
    for _ in range(3):
        log.warn_rl(rl, "again")
    assert console.getvalue().count("again") == 4
    assert "(rate limiting disabled)" in next(
        line for line in vlog.list_levels().splitlines() if line.startswith("binding "))
    with pytest.raises(ValueError, match="unknown module"):
        vlog.set_rate_limit(["nosuch"], True)


def test_vlog_list_layout_is_c_s(console: io.StringIO) -> None:
    row = next(line for line in vlog.list_levels().splitlines() if line.startswith("acl_log"))
    assert row == "acl_log           INFO       INFO       INFO"   # "%-16s  %4s..."
    names = {line.split()[0] for line in vlog.list_levels().splitlines()[2:]}
    assert {"vconn", "rconn", "reconnect", "jsonrpc", "ovsdb_idl", "pinctrl",
            "stream_ssl"} <= names


def test_syslog_over_udp_with_prefix(console: io.StringIO) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx:
        rx.bind(("127.0.0.1", 0))
        rx.settimeout(5)
        vlog.set_syslog_method(f"udp:127.0.0.1:{rx.getsockname()[1]}")
        vlog.apply_spec("FACILITY:local0")
        vlog.get_logger("binding").warning("to syslog")
        data = rx.recv(4096).decode()
    # <local0*8 + warning(4)> then "Mon dd hh:mm:ss host program:" then the syslog pattern
    assert data.startswith("<132> ")
    assert data.endswith(" ovs|00001|binding|WARN|to syslog")
    assert f" {socket.gethostname()} " in data


def test_syslog_level_filters(console: io.StringIO) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx:
        rx.bind(("127.0.0.1", 0))
        rx.setblocking(False)
        vlog.set_syslog_method(f"udp:127.0.0.1:{rx.getsockname()[1]}")
        vlog.apply_spec("syslog:err")
        vlog.get_logger("binding").info("not for syslog")
        vlog.get_logger("binding").error("for syslog")
        time.sleep(0.1)
        got = rx.recv(4096).decode()
        assert got.endswith("|binding|ERR|for syslog")
        with pytest.raises(BlockingIOError):
            rx.recv(4096)


def test_ovs_library_messages_use_c_module_names_and_levels(console: io.StringIO) -> None:
    import ovs.reconnect
    import ovs.vlog
    vlog.bridge_ovs_library()
    fsm = ovs.reconnect.Reconnect(0)
    fsm.set_name("tcp:127.0.0.1:6642")
    fsm.enable(0)
    fsm.connecting(0)
    fsm.connect_failed(0, 111)
    ovs.vlog.Vlog("idl").warn("something")
    lines = [line.split("|", 2)[2] for line in console.getvalue().splitlines()]
    assert lines[:2] == ["reconnect|INFO|tcp:127.0.0.1:6642: connecting...",
                         "reconnect|INFO|tcp:127.0.0.1:6642: connection attempt failed "
                         "(Connection refused)"]
    assert "ovsdb_idl|WARN|something" in lines


def test_logging_while_the_writer_lock_is_held_does_not_deadlock(console: io.StringIO) -> None:
    """A fatal-signal handler logs from the main thread, possibly in the middle
    of another write."""
    with vlog._STATE.lock:
        vlog.get_logger("fatal_signal").warning("terminating with signal 15 (Terminated)")
    assert "fatal_signal|WARN|terminating" in console.getvalue()


def test_lines_from_another_thread_name_it_like_c(console: io.StringIO) -> None:
    import threading
    t = threading.Thread(target=lambda: vlog.get_logger("rconn").info("x: connecting..."),
                         name="ovn_pinctrl0")
    t.start()
    t.join()
    assert console.getvalue().split("|", 2)[2] == "rconn(ovn_pinctrl0)|INFO|x: connecting...\n"
