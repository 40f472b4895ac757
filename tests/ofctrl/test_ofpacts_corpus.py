"""Differential test over the real ovn-controller flow dumps: every
``actions=`` text of the reference corpus must parse, format back to the
identical text (port names replaced by numbers), and survive
encode -> decode unchanged."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from integration.flow_corpus import REF, action_texts, port_numbers
from ofctrl.ofpacts import decode_actions, encode_actions, format_actions, parse_actions

_OUTPUT_NAME = re.compile(r'output:("(?:[^"\\]|\\.)*"|[A-Za-z][A-Za-z0-9]*)(?=,|\)|$)')


def check_corpus(topology: str, filename: str) -> tuple[int, Counter[str]]:
    ports = port_numbers(topology)
    numbered = {name: str(num) for name, num in ports.items()}
    failures: Counter[str] = Counter()
    n = 0
    for text in action_texts(REF / topology / filename):
        n += 1
        expected = _OUTPUT_NAME.sub(
            lambda m: "output:" + numbered[m.group(1).strip('"')], text)
        acts = parse_actions(text, ports)
        if format_actions(acts) != expected:
            failures["format: " + expected[:80]] += 1
            continue
        back = decode_actions(encode_actions(acts))
        if back != acts:
            failures["roundtrip: " + expected[:80]] += 1
    return n, failures


def test_rich_corpus_round_trip() -> None:
    n, failures = check_corpus("rich", "flows.raw.txt")
    assert n == 1110
    assert not failures, failures.most_common(5)


@pytest.mark.slow
def test_seed500_corpus_round_trip() -> None:
    n, failures = check_corpus("seed-500", "flows.raw.txt.gz")
    assert n > 160000
    assert not failures, failures.most_common(5)


def test_group_bucket_actions() -> None:
    """Bucket action lists of the reference groups (ct + nat inside)."""
    text = (REF / "rich/groups.raw.txt").read_text()
    buckets = re.findall(r"actions=(.*?)(?=,bucket=|$)", text, re.M)
    assert len(buckets) >= 10
    for b in buckets:
        acts = parse_actions(b)
        assert format_actions(acts) == b
        assert decode_actions(encode_actions(acts)) == acts
