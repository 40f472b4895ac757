"""CommitBackoff: the delay before the next transaction after failed commits."""

from __future__ import annotations

import ovs.poller

from controller.ovsdb.connections import COMMIT_BACKOFF_MAX_MS, CommitBackoff


def test_doubles_to_cap_and_success_clears() -> None:
    b = CommitBackoff(initial_ms=250, max_ms=8000)
    assert b.ready(0.0)
    delays = []
    for _ in range(8):
        b.failed(100.0)
        delays.append(b.delay_ms)
    assert delays == [250, 500, 1000, 2000, 4000, 8000, 8000, 8000]
    assert not b.ready(107.9) and b.ready(108.0)
    b.succeeded()
    assert b.ready(100.0) and b.delay_ms == 0
    b.failed(200.0)
    assert b.delay_ms == 250 and not b.ready(200.2) and b.ready(200.25)


def test_default_cap_is_a_few_seconds() -> None:
    assert 1000 <= COMMIT_BACKOFF_MAX_MS <= 10000


def test_wait_arms_a_timer_only_while_backing_off() -> None:
    b = CommitBackoff(initial_ms=250, max_ms=8000)
    p = ovs.poller.Poller()
    b.wait(p, 0.0)
    assert p.timeout < 0                 # nothing to wait for
    b.failed(10.0)
    b.wait(p, 10.1)
    assert 0 < p.timeout <= 151
