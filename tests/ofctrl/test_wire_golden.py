"""Golden digests of the flow-install encoding: any change to what a put
sends (match normalisation, OXM bytes, instructions, bundled flow_mod) for
the reference corpora changes a digest and fails here.

The digests were recorded with the encoder as it was before the hot path
was optimised; an optimisation must leave them unchanged.  Each flow
contributes its canonical match items, its ``ofp_match``, its flow_mod body
(``Flow.encode()``) and the bundled ADD and DELETE_STRICT messages.  The
random matches (the vswitchd differential generator) cover fields the
corpora do not use (VLAN, tunnel metadata, xxreg, in_port, ...) and are
also built from their items shuffled, so that normalisation must not depend
on input order.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from integration.flow_corpus import REF, flow_texts, port_numbers
from ofctrl import messages as m
from ofctrl.flow import Flow
from ofctrl.match import Match
from ofctrl.ofpacts import parse_actions

GOLDEN = {
    "rich": "1c36b13d749ffd7585d83b1eab40f65d8288535c6b7e5e6cdb6cd64c2142acb9",
    "seed-500": "066512758a24b6ac2bbfb74c4fbee94e05f420bab3e8edea785cdec150b54409",
    "random": "cecb6a25afd609a479be609e74cf8733aca07893344e9562ddfbbc3f0cba1be6",
}


def _flow_digest(flows: list[Flow]) -> str:
    h = hashlib.sha256()
    pack = m.bundle_flow_mod
    for i, f in enumerate(flows, 1):
        h.update(repr(f.match.items).encode())
        h.update(f.match.encode())
        body = f.encode()
        h.update(body)
        h.update(pack(i, 7, 3, m.OFPFC_ADD, f.table, f.priority, f.cookie, body))
        h.update(pack(i, 7, 3, m.OFPFC_DELETE_STRICT, f.table, f.priority, 0, f.match.encode()))
    return h.hexdigest()


def _corpus_flows(topology: str, filename: str) -> list[Flow]:
    ports = port_numbers(topology)
    return [Flow(ft.table, ft.priority, Match.parse(ft.match, ports),
                 parse_actions(ft.actions, ports), ft.cookie)
            for ft in flow_texts(REF / topology / filename)]


def test_rich_corpus_wire_digest() -> None:
    flows = _corpus_flows("rich", "flows.raw.txt")
    assert len(flows) == 1110
    assert _flow_digest(flows) == GOLDEN["rich"]


@pytest.mark.slow
def test_seed500_corpus_wire_digest() -> None:
    flows = _corpus_flows("seed-500", "flows.raw.txt.gz")
    assert len(flows) > 160000
    assert _flow_digest(flows) == GOLDEN["seed-500"]


def _random_flows() -> list[Flow]:
    from integration.test_match_vswitchd import random_matches

    rng = random.Random(11)
    flows = []
    for k, match in enumerate(random_matches(3000, seed=5)):
        items = list(match.items)
        rng.shuffle(items)
        again = Match(items)
        assert again == match and again.items == match.items and hash(again) == hash(match)
        flows.append(Flow(k % 80, k % 65536, again, (), k))
    return flows


def test_random_matches_wire_digest() -> None:
    assert _flow_digest(_random_flows()) == GOLDEN["random"]


def test_digest_detects_a_changed_byte() -> None:
    """The digest is sensitive to the encoding (guards the test itself)."""
    flows = _corpus_flows("rich", "flows.raw.txt")[:50]
    base = _flow_digest(flows)
    changed = flows[:-1] + [Flow(flows[-1].table, flows[-1].priority + 1, flows[-1].match,
                                 flows[-1].actions, flows[-1].cookie)]
    assert _flow_digest(changed) != base
    assert Path(REF).is_dir()
