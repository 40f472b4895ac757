"""controller.chassis.features.FeatureProbe: C's feature log lines, only on change."""

from __future__ import annotations

import io
from typing import Iterator

import pytest

from controller import vlog
from controller.chassis import features


@pytest.fixture
def console() -> Iterator[io.StringIO]:
    vlog.reset()
    stream = io.StringIO()
    vlog.set_console(stream)
    yield stream
    vlog.reset()


def _messages(stream: io.StringIO) -> list[str]:
    return [line.split("|", 2)[2] for line in stream.getvalue().splitlines()]


def test_lines_on_first_sight_and_on_change_only(console: io.StringIO) -> None:
    probe = features.FeatureProbe()
    caps = {"ct_zero_snat": "true", "ct_flush": "false", "max_hash_alg": "1"}
    feats = probe.run(caps, True, "unix:/r/br-int.mgmt")
    assert feats == features.Features(True, False, True, True)
    probe.run(caps, True, "unix:/r/br-int.mgmt")          # nothing changed: no line
    probe.run({"ct_zero_snat": "true"}, False, "unix:/r/br-int.mgmt")
    assert _messages(console) == [
        "features|INFO|unix:/r/br-int.mgmt: connecting to switch",
        "features|INFO|OVS Feature: ct_zero_snat, state: supported",
        "features|INFO|OVS Feature: dp_hash_l4_sym_support, state: supported",
        "features|INFO|OVS Feature: dp_hash_l4_sym_support, state: not supported",
    ]


def test_no_bridge_no_connecting_line(console: io.StringIO) -> None:
    features.FeatureProbe().run({}, False, None)
    assert _messages(console) == []
