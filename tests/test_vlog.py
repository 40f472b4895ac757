"""controller.vlog: OVS-style lines, per-module levels, rate limiting."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from controller import vlog

# the console pattern has whole seconds, as C's (the file pattern has milliseconds)
LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\|(\d{5})\|([a-z_]+)\|([A-Z]+)\|(.*)$")


@pytest.fixture
def console() -> Iterator[io.StringIO]:
    vlog.reset()
    stream = io.StringIO()
    vlog.set_console(stream)
    yield stream
    vlog.reset()


def _lines(stream: io.StringIO) -> list[tuple[str, str, str, str]]:
    out = []
    for line in stream.getvalue().splitlines():
        m = LINE.match(line)
        assert m, f"not a vlog line: {line!r}"
        out.append((m.group(1), m.group(2), m.group(3), m.group(4)))
    return out


def test_line_format_and_key_values(console: io.StringIO) -> None:
    log = vlog.get_logger("binding")
    log.info("Claiming lport X for this chassis.", lport="ls-a-p1", why="a b", n=3)
    log.warning("second")
    assert _lines(console) == [
        ("00001", "binding", "INFO",
         'Claiming lport X for this chassis. lport=ls-a-p1 why="a b" n=3'),
        ("00002", "binding", "WARN", "second"),
    ]


def test_default_levels_filter_debug(console: io.StringIO) -> None:
    log = vlog.get_logger("lflow")
    log.debug("hidden")
    log.dbg("hidden too")
    assert console.getvalue() == ""
    assert vlog.get_levels("lflow") == {"console": "INFO", "syslog": "INFO", "file": "INFO"}


def test_set_level_per_module_and_destination(console: io.StringIO, tmp_path: Path) -> None:
    path = tmp_path / "agent.log"
    vlog.setup(str(path), ["console:warn", "binding:file:dbg"])
    binding, lflow = vlog.get_logger("binding"), vlog.get_logger("lflow")
    binding.debug("to file only")
    lflow.info("file only too")
    lflow.error("everywhere")
    lflow.debug("nowhere")
    file_lines = path.read_text().splitlines()
    assert [line.split("|", 2)[2] for line in file_lines] == [
        f"vlog|INFO|opened log file {path}", "binding|DBG|to file only", "lflow|INFO|file only too", "lflow|ERR|everywhere"]
    # "opened log file" comes before the -v specs apply, on the console too (as C)
    assert [m for _, m, _, _ in _lines(console)] == ["vlog", "lflow"]
    assert vlog.get_levels("binding") == {"console": "WARN", "syslog": "INFO", "file": "DBG"}


def test_apply_spec_forms(console: io.StringIO) -> None:
    vlog.apply_spec("")                    # plain -v: debug everything
    assert vlog.get_levels("ofctrl") == {"console": "DBG", "syslog": "DBG", "file": "DBG"}
    vlog.apply_spec("console:off")
    assert vlog.get_levels("ofctrl")["console"] == "OFF"
    vlog.apply_spec("ofctrl:syslog:emer")
    assert vlog.get_levels("ofctrl")["syslog"] == "EMER"
    before = vlog.list_levels()
    vlog.apply_spec("PATTERN:file:%D{%H:%M:%S}|%m")     # patterns are not levels
    vlog.apply_spec("FACILITY:daemon")
    assert vlog.list_levels() == before
    with pytest.raises(ValueError):
        vlog.apply_spec("no_such_module:dbg")
    with pytest.raises(ValueError):
        vlog.set_level("binding", "loud")


def test_list_levels_looks_like_vlog_list(console: io.StringIO) -> None:
    vlog.set_level("pinctrl", "dbg", "file")
    text = vlog.list_levels()
    assert text.splitlines()[0].split() == ["console", "syslog", "file"]
    row = next(line for line in text.splitlines() if line.startswith("pinctrl "))
    assert row.split() == ["pinctrl", "INFO", "INFO", "DBG"]


def test_plain_structlog_loggers_use_the_same_format(console: io.StringIO) -> None:
    structlog.get_logger("ofctrl.conn").warning("reconnecting", remote="unix:/x")
    structlog.get_logger(module="physical").info("hello")
    assert _lines(console) == [("00001", "conn", "WARN", "reconnecting remote=unix:/x"),
                               ("00002", "physical", "INFO", "hello")]


def test_a_traceback_follows_its_event_as_err_records(console: io.StringIO) -> None:
    log = vlog.get_logger("main")
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        log.exception("failed")
    log.warning("next", exc_info=False)
    lines = _lines(console)
    assert lines[0] == ("00001", "main", "ERR", "failed")
    assert lines[1] == ("00002", "main", "ERR", "Traceback (most recent call last):")
    assert [ln[2] for ln in lines[1:-1]] == ["ERR"] * (len(lines) - 2)
    assert [ln[3] for ln in lines[-3:-1]] == ["ValueError: bad", "value"]
    assert lines[-1][2:] == ("WARN", "next")
    seqs = [int(ln[0]) for ln in lines]
    assert seqs == list(range(1, len(lines) + 1))


def test_rate_limiter_token_bucket() -> None:
    now = [0.0]
    rl = vlog.RateLimiter(per_minute=6, burst=2, clock=lambda: now[0])
    assert [rl.allow() for _ in range(4)] == [True, True, False, False]
    assert rl.dropped == 2
    now[0] = 10.0                               # 6/min = one token per 10 s
    assert rl.allow() is True
    assert rl.allow() is False
    count, span, since = rl.take_dropped() or (0, 0.0, 0.0)
    assert count == 3 and span == 10.0 and since == 0.0
    assert rl.take_dropped() is None


def test_rate_limited_logging_reports_drops(console: io.StringIO) -> None:
    now = [0.0]
    rl = vlog.RateLimiter(per_minute=60, burst=1, clock=lambda: now[0])
    log = vlog.get_logger("lflow")
    for i in range(5):
        log.warn_rl(rl, "error parsing match", i=i)
    now[0] = 1.0
    log.warn_rl(rl, "error parsing match", i=5)
    texts = [t for _, _, _, t in _lines(console)]
    assert texts[0] == "error parsing match i=0"
    assert texts[1].startswith("Dropped 4 log messages in last 1 seconds")
    assert texts[2] == "error parsing match i=5"
    assert len(texts) == 3
