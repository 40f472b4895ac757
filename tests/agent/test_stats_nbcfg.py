from controller.diag.coverage import Coverage
from controller.diag.loop_stats import LoopStats
from controller.diag.stopwatch import Stopwatch, Stopwatches
from controller.nb_cfg import NbCfg
from ofctrl.seqno import SeqnoTracker
from tests.agent.fakes import FakeRow


def test_nb_cfg_only_after_ack_and_frozen_during_cond_change():
    seq = SeqnoTracker()
    nb = NbCfg(seq, startup_ts_ms=123)
    sbg = FakeRow(nb_cfg=5)
    cp = FakeRow(nb_cfg=0, nb_cfg_timestamp=0)
    br = FakeRow(external_ids={})
    assert nb.current(sbg, 1, 1) == 5
    sbg.nb_cfg = 6
    assert nb.current(sbg, 1, 2) == 5          # condition change in flight
    nb.request(5)
    assert nb.store(object(), object(), cp, br, now_ms=99)   # startup ts only
    assert cp.nb_cfg == 0 and br.external_ids == {"ovn-startup-ts": "123"}
    seq.run(seq.get_req_cfg())                 # barrier acked
    assert nb.store(object(), object(), cp, br, now_ms=99)
    assert cp.nb_cfg == 5 and cp.nb_cfg_timestamp == 99
    assert br.external_ids["ovn-nb-cfg"] == "5" and br.external_ids["ovn-nb-cfg-ts"] == "99"
    br.writes.clear()
    assert not nb.store(object(), object(), cp, br)   # nothing new: no writes
    assert br.writes == []


def test_stopwatch_format_and_percentile():
    sw = Stopwatch("flow-generation")
    for v in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 10:
        sw.add_sample(v)
    txt = sw.text()
    assert txt.startswith("Statistics for 'flow-generation'\n  Total samples: 100\n"
                          "  Maximum: 10 msec\n  Minimum: 1 msec\n  95th percentile: ")
    assert 8.0 <= sw.percentile <= 10.0
    reg = Stopwatches(("a",))
    assert reg.show("nope") is None and "Statistics for 'a'" in reg.show()


def test_coverage_show_and_rates():
    c = Coverage(("lflow_run", "unused"))
    c.inc("lflow_run", 10)
    c.run(now_ms=0)          # the first run arms the 5 s deadline
    c.run(now_ms=5000)
    out = c.show()
    assert "lflow_run" in out and "total: 10" in out and "1 events never hit" in out
    line = [ln for ln in out.splitlines() if ln.startswith("lflow_run")][0]
    assert line.startswith("lflow_run                  2.0/sec     0.167/sec")
    assert c.read("lflow_run") == 10 and c.read("x") is None


def test_loop_stats_text_json():
    ls = LoopStats()
    for _ in range(3):
        ls.begin()
        ls.stage_done("engine")
        ls.end()
    ls.first_install_done()
    d = ls.as_dict()
    assert d["iterations"] == 3 and "engine" in d["stages_last_ms"]
    assert d["first_install_ms"] is not None
    assert "iterations: 3" in ls.text() and '"iterations": 3' in ls.json()
