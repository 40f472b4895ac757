"""Cyclic-GC phases of the agent (controller.daemon_profile): start-up
thresholds until a complete install, again during a later sliced compute."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from controller import daemon_profile as dp


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*saved)
    dp._GC_STARTUP[0] = False


def test_bulk_phase_after_startup_uses_startup_thresholds_until_installed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    freezes: list[int] = []
    monkeypatch.setattr(dp.gc, "freeze", lambda: freezes.append(1))
    dp.gc_startup()
    dp.gc_bulk()                        # the first compute: nothing changes
    assert gc.get_threshold() == dp.STARTUP_GC_THRESHOLD and not freezes
    dp.gc_after_startup()               # first complete install
    assert gc.get_threshold() == dp.STEADY_GC_THRESHOLD and len(freezes) == 1
    dp.gc_after_startup()               # later complete installs: no refreeze
    assert len(freezes) == 1
    dp.gc_bulk()                        # a sliced compute (SB refilled)
    assert gc.get_threshold() == dp.STARTUP_GC_THRESHOLD
    dp.gc_after_startup()
    assert gc.get_threshold() == dp.STEADY_GC_THRESHOLD and len(freezes) == 2
