"""Application sequence numbers acknowledged by OpenFlow barriers.

Design: users (nb_cfg reporting, ovn-installed, ...) register a *type* and
ask for an application value `req_cfg` to be acknowledged once every flow
update made so far is in the switch.  Each request bumps an internal flow
sequence number; the caller passes `get_req_cfg()` as the request id of the
next `ofctrl` put, and feeds the session's acknowledged id back through
`run(acked)`.  All requests whose flow sequence number is <= `acked` move to
their type's acked list, which `acked_seqnos(type)` drains.

Mirrors the semantics of OVN's ofctrl-seqno module (vectors in
tests/ovn-ofctrl-seqno.at).  Values are Python ints (no 32-bit truncation).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(slots=True)
class AckedSeqnos:
    """Requests of one type acknowledged since the last drain."""

    last_acked: int
    acked: set[int] = field(default_factory=set)

    def __contains__(self, value: int) -> bool:
        return value in self.acked


@dataclass(slots=True)
class _TypeState:
    acked: list[int] = field(default_factory=list)
    cur_cfg: int = 0  # last acknowledged application value
    req_cfg: int = 0  # last requested application value


class SeqnoTracker:
    __slots__ = ("_updates", "_req_seqno", "_types")

    def __init__(self) -> None:
        # In flight: (flow_cfg, seqno_type, req_cfg), flow_cfg increasing.
        self._updates: deque[tuple[int, int, int]] = deque()
        self._req_seqno = 0
        self._types: list[_TypeState] = []

    def add_type(self) -> int:
        """Register a new application seqno type; returns its index."""
        self._types.append(_TypeState())
        return len(self._types) - 1

    def update_create(self, seqno_type: int, new_cfg: int) -> None:
        """Ask for `new_cfg` of `seqno_type` to be acked after current flows."""
        st = self._types[seqno_type]
        if new_cfg == st.req_cfg:
            return  # already pending
        st.req_cfg = new_cfg
        self._req_seqno += 1
        self._updates.append((self._req_seqno, seqno_type, new_cfg))

    def get_req_cfg(self) -> int:
        """The request id to pass to the next put."""
        return self._req_seqno

    def run(self, flow_cfg: int) -> None:
        """Everything up to request id `flow_cfg` is now in the switch."""
        updates = self._updates
        while updates and updates[0][0] <= flow_cfg:
            _, seqno_type, req_cfg = updates.popleft()
            st = self._types[seqno_type]
            st.acked.append(req_cfg)
            st.cur_cfg = req_cfg

    def acked_seqnos(self, seqno_type: int) -> AckedSeqnos:
        """Drain the acknowledged values of `seqno_type`."""
        st = self._types[seqno_type]
        out = AckedSeqnos(st.cur_cfg)
        for v in st.acked:
            out.last_acked = v
            out.acked.add(v)
        st.acked = []
        return out

    def flush(self) -> None:
        """The OpenFlow connection was lost: drop everything in flight."""
        for st in self._types:
            st.acked = []
        self._updates.clear()
        self._req_seqno = 0
