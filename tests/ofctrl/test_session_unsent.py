"""A put diffs every table holding changes no put has sent, whatever its
`*_changed` flags say (ofctrl.session design note).

The agent changes its desired tables in iterations that cannot put (outputs
not valid: a VIF claim queued, an SB update half applied) and puts in a
later iteration whose nodes did not change (flags False).  Seen in the
seed-500 wipe benchmark: every multicast-group flood flow (tables 39/40)
was added in such an iteration and never reached br-int.
"""

from __future__ import annotations

from typing import Any

import pytest

from ofctrl import messages as m
from tests.ofctrl.test_session import Env, expected, mk


@pytest.fixture
def env() -> Any:
    e = Env()
    yield e
    e.close()


def _idle(env: Env, n: int = 5) -> None:
    """Iterations whose nodes changed nothing (both flags False)."""
    for _ in range(n):
        env.step(changed=False)


def test_tracked_changes_of_an_iteration_without_put_are_sent_later(env: Env) -> None:
    for i in range(5):
        env.pflows.add(mk(39, 100, i), owner=i)
    env.settle()
    assert env.pflows.change_tracked and len(env.sw.flows) == 5
    # An iteration whose outputs were not valid: flows added, one removed,
    # one modified; no put.
    for i in range(10, 14):
        env.pflows.add(mk(40, 100, i), owner=i)
    env.pflows.remove(0)
    env.pflows.remove(1)
    env.pflows.add(mk(39, 100, 1, out=9), owner=1)
    # The next iterations put with nothing changed in them.
    assert env.sess.put(env.lflows, env.pflows, 0, False, False)
    _idle(env)
    assert env.sw.flow_set() == expected(env.pflows)
    assert len(env.sw.flows) == 4 + 4
    assert not env.pflows.tracked
    assert len(env.sess.installed_pflows) == len(env.pflows)


def test_recompute_finished_in_an_iteration_without_put_is_compared(env: Env) -> None:
    for i in range(5):
        env.pflows.add(mk(39, 100, i), owner=i)
    env.settle()
    # A recompute (untracked) completed where no put could run ...
    env.pflows.clear()
    for i in range(1, 5):
        env.pflows.add(mk(39, 100, i), owner=i)
    for i in range(20, 23):
        env.pflows.add(mk(40, 100, i), owner=i)
    # ... then an unchanged iteration puts: the table is compared in full,
    # not turned to tracking with its content unsent.
    env.sess.put(env.lflows, env.pflows, 0, False, False)
    _idle(env)
    assert env.sw.flow_set() == expected(env.pflows) and len(env.sw.flows) == 7
    assert len(env.sess.installed_pflows) == 7
    # Later tracked changes go on from there.
    env.pflows.add(mk(40, 100, 30), owner=30)
    _idle(env)
    assert len(env.sw.flows) == 8 and env.sw.flow_set() == expected(env.pflows)


def test_deletions_left_by_a_partial_put_are_sent_by_an_unchanged_put(env: Env) -> None:
    for i in range(4):
        env.pflows.add(mk(39, 100, i), owner=i)
    env.settle()
    env.pflows.remove(3)                        # only a deletion: nothing to stream
    assert not env.sess.put_partial(env.lflows, env.pflows)
    _idle(env)
    assert len(env.sw.flows) == 3 and env.sw.flow_set() == expected(env.pflows)


def test_partial_put_of_a_recompute_without_new_keys_then_unchanged_put(env: Env) -> None:
    for i in range(4):
        env.pflows.add(mk(39, 100, i), owner=i)
    env.settle()
    env.pflows.clear()                          # recompute: one flow fewer, none new
    for i in range(3):
        env.pflows.add(mk(39, 100, i), owner=i)
    assert not env.sess.put_partial(env.lflows, env.pflows)
    _idle(env)
    assert len(env.sw.flows) == 3 and env.sw.flow_set() == expected(env.pflows)


def test_unchanged_tables_still_send_nothing(env: Env) -> None:
    for i in range(3):
        env.pflows.add(mk(39, 100, i), owner=i)
    env.settle()
    before = env.sw.received.count(1000 + m.OFPT_FLOW_MOD)
    puts = env.sess.n_puts
    _idle(env)
    assert env.sess.n_puts == puts
    assert env.sw.received.count(1000 + m.OFPT_FLOW_MOD) == before
