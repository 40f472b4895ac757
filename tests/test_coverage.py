"""coverage/show, coverage/read-counter and memory/show formats (OVS lib/coverage.c,
lib/memory.c semantics) and the measured memory figures."""

from __future__ import annotations

import re
import sys

import structlog

from controller.diag import coverage as covmod
from controller.diag.coverage import COVERAGE, Coverage
from controller.diag.memory import MemoryMonitor, deep_size, format_usage, kb, sampled_size
from ofctrl import connection as of_connection

# One counter line of OVS's coverage/show.
LINE = re.compile(r"^(\S+) +(\d+\.\d)/sec +(\d+\.\d{3})/sec +(\d+\.\d{4})/sec   total: (\d+)$")


def _line(out: str, name: str) -> str:
    return next(ln for ln in out.splitlines() if ln.split()[0] == name)


def test_show_layout_before_the_first_interval():
    c = Coverage(("a_counter", "b", "never"))
    c.inc("a_counter", 3)
    c.inc("b")
    c.run(now_ms=1000)                  # arms the deadline only
    out = c.show()
    lines = out.splitlines()
    assert re.fullmatch(r"Event coverage, avg rate over last: 5 seconds, last minute, "
                        r"last hour,  hash=[0-9a-f]{8}:", lines[0])
    assert lines[1] == "a_counter                  0.0/sec     0.000/sec        0.0000/sec   total: 3"
    assert LINE.match(lines[2]) and lines[2].startswith("b ")
    assert lines[3] == "1 events never hit" and len(lines) == 4 and out.endswith("\n")


def test_registration_order_not_sorted_and_duplicates_rejected():
    c = Coverage(("zeta", "alpha"))
    c.inc("alpha")
    c.inc("zeta")
    names = [ln.split()[0] for ln in c.show().splitlines()[1:-1]]
    assert names == ["zeta", "alpha"]
    try:
        Coverage(("x", "x"))
    except ValueError:
        pass
    else:
        raise AssertionError("duplicate counter accepted")


def test_rates_minute_and_hour_include_the_current_minute():
    c = Coverage(("ev",))
    c.run(now_ms=0)                     # deadline at 5000
    c.inc("ev", 10)
    c.run(now_ms=5000)
    ln = _line(c.show(), "ev")
    # 10 in the last 5 s -> 2.0/s; 10 in the last minute /60; the hour bucket
    # in progress already holds them: 10/3600.
    assert ln == "ev                         2.0/sec     0.167/sec        0.0028/sec   total: 10"
    c.run(now_ms=9999)                  # next deadline is 5 s after the last run
    c.run(now_ms=10000)
    assert _line(c.show(), "ev").startswith("ev                         0.0/sec     0.167/sec")


def test_late_run_spreads_the_delta_over_elapsed_slots():
    c = Coverage(("ev",))
    c.run(now_ms=0)
    c.inc("ev", 7)
    c.run(now_ms=5000 + 2 * 5000)       # three slots elapsed: 2, 2, 3 (rest last)
    assert c.counters["ev"].mins[:3] == [2, 2, 3]
    assert _line(c.show(), "ev").split()[1] == "0.6/sec"          # 3 / 5 s


def test_minute_ring_rolls_into_hour():
    c = Coverage(("ev",))
    c.run(now_ms=0)
    t = 0
    for _ in range(12):                 # one full minute, 1 event per 5 s
        c.inc("ev")
        t += 5000
        c.run(now_ms=t)
    for _ in range(12):                 # a quiet minute
        t += 5000
        c.run(now_ms=t)
    out = _line(c.show(), "ev")
    assert out == "ev                         0.0/sec     0.000/sec        0.0033/sec   total: 12"


def test_read_counter_and_sources():
    c = Coverage(("own",))
    counts = {"ext_sent": 0}
    c.add_source(counts)
    counts["ext_sent"] += 5
    c.inc("own", 2)
    assert c.read("own") == 2 and c.read("ext_sent") == 5 and c.read("nope") is None
    c.run(now_ms=0)
    c.run(now_ms=5000)
    assert _line(c.show(), "ext_sent").split()[1] == "1.0/sec"
    assert "total: 5" in _line(c.show(), "ext_sent")


def test_agent_counters_use_c_names_and_openflow_counts_are_folded_in():
    for name in ("lflow_run", "consider_logical_flow", "physical_run", "lflow_cache_hit",
                 "txn_success", "txn_unchanged", "txn_incomplete", "rconn_queued",
                 "rconn_sent", "vconn_open", "vconn_sent", "vconn_received", "stream_open",
                 "pstream_open", "unixctl_received", "pinctrl_total_pin_pkts"):
        assert name in COVERAGE.counters, name
    before = COVERAGE.read("vconn_received")
    assert before is not None
    of_connection.COUNTS["vconn_received"] += 1
    try:
        assert COVERAGE.read("vconn_received") == before + 1
    finally:
        of_connection.COUNTS["vconn_received"] -= 1


def test_txn_status_names():
    c = covmod.COVERAGE
    before = {n: c.read(n) or 0 for n in ("txn_try_again", "txn_not_locked", "txn_success")}
    for status in ("try again", "not locked", "success"):
        covmod.count_txn_status(status)
    for n, v in before.items():
        assert c.read(n) == v + 1, n


def test_hash_depends_on_which_counters_were_hit():
    a, b = Coverage(("x", "y")), Coverage(("x", "y"))
    a.inc("x")
    b.inc("y")
    ha = a.show().splitlines()[0]
    assert ha != b.show().splitlines()[0]
    a.run(now_ms=0)
    a.run(now_ms=5000)
    assert a.show().splitlines()[0] == ha    # the rates do not change it


# ---------------------------------------------------------------- memory
def test_format_usage_sorted_nonzero_c_layout():
    usage = {"ofctrl_desired_flow_usage-KB": 3, "idl-cells-Open_vSwitch": 5,
             "idl-cells-OVN_Southbound": 9, "oflow_update_usage-KB": 0}
    assert format_usage(usage) == ("idl-cells-OVN_Southbound:9 idl-cells-Open_vSwitch:5 "
                                   "ofctrl_desired_flow_usage-KB:3")
    assert kb(0) == 0 and kb(1) == 1 and kb(1024) == 1 and kb(1025) == 2


class _Node:
    __slots__ = ("payload", "other")

    def __init__(self, payload: bytes, other: object = None) -> None:
        self.payload = payload
        self.other = other


def test_deep_size_follows_slots_and_stops_where_told():
    inner = _Node(b"y" * 1000)
    outer = _Node(b"x" * 500, inner)
    whole = deep_size(outer, set())
    assert whole >= sys.getsizeof(b"x" * 500) + sys.getsizeof(b"y" * 1000)
    assert deep_size(outer, set(), stop=(type(inner),)) == 0          # outer is a _Node too
    alone = deep_size((outer,), set(), stop=())
    assert alone == whole + sys.getsizeof((outer,))

    class Foreign:                      # has a __dict__: someone else's, not counted
        def __init__(self) -> None:
            self.big = b"z" * 10000
    assert deep_size([Foreign()], set()) == sys.getsizeof([None])


def test_sampled_size_scales_a_uniform_population():
    entries = [_Node(b"%06d" % i + b"." * 200) for i in range(10000)]
    exact = sum(deep_size(e, set()) for e in entries)
    est = sampled_size(iter(entries), len(entries))
    assert abs(est - exact) / exact < 0.02
    assert sampled_size(iter(()), 0) == 0


def test_memory_monitor_reports_first_after_10s_then_on_growth():
    mon = MemoryMonitor(boot_ms=0)
    reports: list[str] = []

    def report() -> str:
        reports.append("x")
        return "idl-cells-Open_vSwitch:5\n"
    with structlog.testing.capture_logs() as logs:
        assert not mon.run(report, now_ms=9999, maxrss_kb=1000)
        assert mon.run(report, now_ms=10100, maxrss_kb=1000)
        assert not mon.run(report, now_ms=15000, maxrss_kb=9000)   # not checked yet
        assert not mon.run(report, now_ms=20100, maxrss_kb=1400)   # < 1.5x
        assert mon.run(report, now_ms=30100, maxrss_kb=1500)
    msgs = [e["event"] for e in logs]
    assert msgs == ["1000 kB peak resident set size after 10.1 seconds",
                    "idl-cells-Open_vSwitch:5",
                    "peak resident set size grew 50% in last 20.0 seconds, "
                    "from 1000 kB to 1500 kB",
                    "idl-cells-Open_vSwitch:5"]
    assert all(e["log_level"] == "info" for e in logs) and len(reports) == 2
