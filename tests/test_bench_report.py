"""Pure helpers of the benchmark modes: argument parsing, summaries, tables.

No daemon is started and nothing is timed: the inputs are hand-written run
records shaped like those ``benchmarks.wipe`` / ``benchmarks.scaling`` keep.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.scaling import format_scaling_table, parse_sizes, scaling_rows
from benchmarks.seed import main as bench_main
from benchmarks.snapshot import snapshot_files
from benchmarks.wipe import format_wipe_table, main_thread_vcsw, summarize_wipe
from integration.sandbox import SandboxError


def test_parse_sizes_sorts_and_dedups() -> None:
    assert parse_sizes("1000, 250,500,250") == [250, 500, 1000]


@pytest.mark.parametrize("text", ["", ",", "0,10", "-5"])
def test_parse_sizes_rejects_empty_and_non_positive(text: str) -> None:
    with pytest.raises(ValueError):
        parse_sizes(text)


def test_bench_cli_reports_bad_sizes_without_running(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main(["--sizes", "0"]) == 1
    assert "bench failed" in capsys.readouterr().err


def _run(kind: str, ttf: float, iters: int | None, max_ms: float, vcsw: int) -> dict[str, object]:
    return {"agent": kind, "time_to_flows_s": ttf, "loop_iterations": iters,
            "loop_avg_ms": None if iters is None else ttf * 1000 / iters,
            "loop_max_ms": max_ms, "engine_runs": 10.0, "engine_avg_ms": 2.0,
            "engine_max_ms": max_ms, "main_thread_vcsw": vcsw, "hv_acked_s": ttf,
            "chassis_seen_s": 0.1, "agent_cpu_s": ttf / 2, "vswitchd_cpu_s": 0.5,
            "peak_rss_mib": 100.0, "flow_count": 1234}


def test_summarize_wipe_medians_and_ratios() -> None:
    runs = {"c": [_run("c", 2.0, None, 100.0, 40), _run("c", 4.0, None, 300.0, 60)],
            "py": [_run("py", 1.0, 20, 50.0, 30), _run("py", 3.0, 40, 150.0, 50)]}
    summary = summarize_wipe(runs)
    assert summary["reps"] == {"c": 2, "py": 2}
    assert summary["agents"]["c"]["time_to_flows_s"] == 3.0
    assert summary["agents"]["py"]["loop_iterations"] == 30
    assert summary["agents"]["c"]["loop_iterations"] is None
    rows = {row["metric"]: row for row in summary["rows"]}
    assert rows["time until all flows installed (s)"]["ratio"] == [round(2.0 / 3.0, 3)]
    assert rows["maximum iteration (ms)"]["ratio"] == [0.5]
    assert rows["loop iterations"]["ratio"] == [None]
    # the two-key row keeps both figures
    assert rows["engine run avg / max (ms)"]["py"] == [2.0, 100.0]


def test_format_wipe_table_shows_missing_c_figures_as_dash() -> None:
    summary = summarize_wipe({"c": [_run("c", 2.0, None, 100.0, 40)],
                              "py": [_run("py", 1.0, 20, 50.0, 30)]})
    text = format_wipe_table(summary, 77)
    assert text.startswith("seed-77, wipe mode")
    line = next(ln for ln in text.splitlines() if ln.startswith("loop iterations"))
    assert line.split()[2:] == ["-", "20", "-"]


def test_scaling_rows_and_table() -> None:
    points = [{"n": 250, "c": {"time_to_flows_s": 4.0, "agent_cpu_s": 2.0,
                               "peak_rss_mib": 150.0, "flow_count": 82761},
               "py": {"time_to_flows_s": 2.0, "agent_cpu_s": 3.0, "peak_rss_mib": 300.0,
                      "loop_max_ms": 180.0, "flow_count": 82761}}]
    rows = scaling_rows(points)
    assert rows[0]["n"] == 250
    assert rows[0]["time_to_flows_s"] == {"c": 4.0, "py": 2.0, "ratio": 0.5}
    assert rows[0]["peak_rss_mib"]["ratio"] == 2.0
    assert rows[0]["loop_max_ms"] == {"c": None, "py": 180.0, "ratio": None}
    table = format_scaling_table(rows)
    assert "82,761" in table and "0.500" in table


def test_snapshot_files_accepts_gzipped_sb_and_no_conf(tmp_path: Path) -> None:
    (tmp_path / "nb.db").write_text("x")
    (tmp_path / "sb.db.gz").write_text("x")
    files = snapshot_files(tmp_path)
    assert files == {"nb": tmp_path / "nb.db", "sb": tmp_path / "sb.db.gz"}
    (tmp_path / "nb.db").unlink()
    with pytest.raises(SandboxError):
        snapshot_files(tmp_path)


def test_main_thread_vcsw_of_this_process() -> None:
    value = main_thread_vcsw(os.getpid())
    assert isinstance(value, int) and value >= 0
    assert main_thread_vcsw(2 ** 22 + 12345) is None


def test_merged_points_prefer_this_run_and_sort_by_n() -> None:
    from benchmarks.scaling import merged_points
    done = [{"n": 1000, "c": {"x": 1}}, {"n": 500, "c": {"x": 2}}]
    previous = [{"n": 250, "c": {"x": 3}}, {"n": 500, "c": {"x": 4}}]
    merged = merged_points(done, previous)
    assert [p["n"] for p in merged] == [250, 500, 1000]
    assert merged[1]["c"] == {"x": 2}


def test_scaling_rows_tolerate_a_failed_agent() -> None:
    rows = scaling_rows([{"n": 1000, "c": {"error": "timeout"},
                          "py": {"time_to_flows_s": 30.0}}])
    assert rows[0]["time_to_flows_s"] == {"c": None, "py": 30.0, "ratio": None}
    assert "1000" in format_scaling_table(rows)
