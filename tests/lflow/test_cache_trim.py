"""lflow cache: the trim forced after ovn-trim-timeout-ms of inactivity
(lib/memory-trim.c semantics: armed by cache activity, fires once, at least
1 s), and the poller timer that wakes the loop for it."""

from __future__ import annotations

import uuid

from controller.lflow.cache import MIN_TRIM_TIMEOUT_MS, LflowCache, LflowCacheConfig


class FakePoller:
    def __init__(self) -> None:
        self.timers: list[int] = []

    def timer_wait(self, ms: int) -> None:
        self.timers.append(ms)


def test_idle_trim_fires_once_after_the_timeout() -> None:
    lc = LflowCache(LflowCacheConfig(trim_timeout_ms=2000))
    assert not lc.run()                     # nothing happened yet: nothing to trim
    lc.add_expr(uuid.uuid4(), object(), 10)
    t = lc.last_active
    assert not lc.run(t + 1.9)
    assert lc.trim_count == 0
    assert lc.run(t + 2.0)
    assert lc.trim_count == 1 and lc.high_watermark == lc.n_entries == 1
    assert not lc.run(t + 10.0)             # once per burst of activity
    u = uuid.uuid4()
    lc.add_matches(u, 0, 0, [], 10)
    lc.delete(u)
    assert lc.run(lc.last_active + 2.0)
    assert lc.trim_count == 2


def test_timeout_below_one_second_is_raised_to_it() -> None:
    lc = LflowCache(LflowCacheConfig(trim_timeout_ms=10))
    assert lc.trim_timeout_ms == MIN_TRIM_TIMEOUT_MS


def test_wait_arms_a_timer_only_while_a_trim_is_due() -> None:
    lc = LflowCache(LflowCacheConfig(trim_timeout_ms=3000))
    p = FakePoller()
    lc.wait(p)
    assert p.timers == []
    lc.add_expr(uuid.uuid4(), object(), 10)
    lc.wait(p, lc.last_active + 1.0)
    assert len(p.timers) == 1 and 1990 <= p.timers[0] <= 2001
    lc.run(lc.last_active + 3.0)
    lc.wait(p)
    assert len(p.timers) == 1
