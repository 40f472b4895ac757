"""pytest fixtures for tests that run the real OVS/OVN daemons.

* ``sandbox``: a started Sandbox with northd (chassis hv1), stopped afterwards.
* ``sandbox_factory``: ``make(**kwargs)`` -> started Sandbox; ``make.snapshot(nb,
  sb, conf=None, northd=False, **kwargs)`` -> Sandbox.from_snapshot; every
  sandbox made is stopped at teardown.

Every test collected under integration/ gets the ``integration`` marker.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from integration.sandbox import Sandbox

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.integration)


class SandboxFactory:
    def __init__(self) -> None:
        self.made: list[Sandbox] = []

    def __call__(self, **kwargs: Any) -> Sandbox:
        box = Sandbox(**kwargs)
        self.made.append(box)
        box.start()
        return box

    def snapshot(self, nb: str | os.PathLike[str] | None, sb: str | os.PathLike[str],
                 conf: str | os.PathLike[str] | None = None, northd: bool = False,
                 **kwargs: Any) -> Sandbox:
        box = Sandbox.from_snapshot(nb, sb, conf, northd=northd, **kwargs)
        self.made.append(box)
        return box

    def stop_all(self) -> None:
        for box in reversed(self.made):
            box.stop()
        self.made.clear()


@pytest.fixture
def sandbox_factory() -> Iterator[SandboxFactory]:
    factory = SandboxFactory()
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture
def sandbox(sandbox_factory: SandboxFactory) -> Sandbox:
    return sandbox_factory(northd=True)
