"""Flow: key hash computed once, wire bytes cached, text form."""

from __future__ import annotations

import struct

from ofctrl.desired import DesiredFlowTable
from ofctrl.flow import Flow, encode_instructions
from ofctrl.installed import InstalledFlowTable, update_by_compare
from ofctrl.match import Match
from ofctrl.ofpacts import Conjunction, Output, Resubmit, SetField, encode_instructions as ofp_instructions


class CountingMatch:
    """Match stand-in that counts hash and encode calls."""

    n_hash = 0
    n_encode = 0

    def __init__(self, v: int) -> None:
        self.v = v

    def __hash__(self) -> int:
        CountingMatch.n_hash += 1
        return hash(self.v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CountingMatch) and other.v == self.v

    def encode(self) -> bytes:
        CountingMatch.n_encode += 1
        return struct.pack("!HHI", 1, 4, 0)

    def to_string(self) -> str:
        return "reg0=%d" % self.v


def test_key_hash_computed_once_and_reused() -> None:
    CountingMatch.n_hash = 0
    flows = [Flow(1, 10, CountingMatch(i), (Output(1),)) for i in range(50)]
    assert CountingMatch.n_hash == 50
    d = DesiredFlowTable()
    for i, f in enumerate(flows):
        d.add(f, i)
    inst = InstalledFlowTable()
    update_by_compare(d, inst, lambda c, f: None)
    for f in flows:
        assert d.lookup(f) is not None and inst.lookup(f) is not None
    assert CountingMatch.n_hash == 50  # no rehash in any table operation


def test_wire_cached_and_resent_unchanged() -> None:
    CountingMatch.n_encode = 0
    f = Flow(1, 10, CountingMatch(1), (Resubmit(table=2),))
    w1 = f.wire()
    w2 = f.wire()
    assert w1 is w2 and CountingMatch.n_encode == 1
    assert w1 == struct.pack("!HHI", 1, 4, 0) + encode_instructions(f.actions)


def test_instructions_match_ofpacts_module() -> None:
    acts = (SetField("reg15", 3), Resubmit(table=9), Output(2))
    assert encode_instructions(acts) == ofp_instructions(acts)
    assert encode_instructions(()) == b""


def test_with_actions_keeps_key_hash() -> None:
    f = Flow(3, 5, Match([("reg0", 1, None)]), (Conjunction(1, 1, 2),), 7)
    g = f.with_actions(f.actions + (Conjunction(2, 1, 2),))
    assert g.key_hash == f.key_hash and g.same_key(f) and not g.same_content(f)
    assert g.cookie == 7 and g._wire is None


def test_equal_keys_hash_equal_across_instances() -> None:
    a = Flow(3, 5, Match([("reg0", 1, None), ("metadata", 2, None)]), (Output(1),))
    b = Flow(3, 5, Match([("metadata", 2, None), ("reg0", 1, None)]), ())
    assert a.key_hash == b.key_hash and a.same_key(b)
    assert not Flow(4, 5, a.match).same_key(a)


def test_to_string() -> None:
    f = Flow(8, 50, Match([("reg14", 5, None), ("metadata", 1, None)]), (Resubmit(table=9),), 0x1A)
    assert f.to_string() == "cookie=0x1a, table=8, priority=50,reg14=0x5,metadata=0x1 actions=resubmit(,9)"
    assert Flow(0, 0, Match()).to_string() == "table=0, priority=0 actions=drop"


def test_instructions_memo_is_keyed_by_the_tuple_itself() -> None:
    """The last-tuple memo of encode_instructions never answers for another
    tuple: fresh tuples (whose ids are reused once the old ones die) and
    interleaved ones all encode to what their actions encode to."""
    keep = (Resubmit(table=9), Output(3))
    for k in range(5000):
        acts = (Resubmit(table=k % 250), Output(k % 60000 + 1))
        expected = ofp_instructions(list(acts))
        assert encode_instructions(acts) == expected
        assert encode_instructions(acts) == expected          # the memo hit
        assert encode_instructions(list(acts)) == expected    # lists are not memoised
        if k % 7 == 0:
            assert encode_instructions(keep) == ofp_instructions(list(keep))
