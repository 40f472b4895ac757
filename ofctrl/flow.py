"""OpenFlow flow value object shared by every flow producer and by ofctrl.

A `Flow` is (table, priority, match, actions, cookie).  Its *key* is
(table, priority, match): two flows with the same key occupy the same slot
in the switch.  `key_hash` is computed once, when the flow is made, and every
table operation (desired table, installed table, diff) reuses it instead of
rehashing the match.

The encoded OpenFlow 1.5 body (ofp_match followed by the apply-actions
instruction) is cached in `_wire` by `wire()`; `encode()` (what a put uses)
reuses that cache but does not fill it, so that the hundreds of thousands of
installed flows do not each keep a copy of their bytes.

Flows are treated as immutable after construction.  Appending conjunction
actions makes a new Flow (`with_actions`), which keeps the old key_hash.
"""

from __future__ import annotations

import struct
from typing import Any, Iterable, Protocol, Sequence


class MatchLike(Protocol):
    """What ofctrl needs from `ofctrl.match.Match`."""

    def encode(self) -> bytes: ...

    def to_string(self) -> str: ...

    def __hash__(self) -> int: ...


class ActionLike(Protocol):
    """What ofctrl needs from an `ofctrl.ofpacts` action."""

    def encode(self) -> bytes: ...

    def format(self) -> str: ...


# OFPIT_APPLY_ACTIONS instruction header: type, length, 4 bytes of padding.
_INSTRUCTION_HDR = struct.Struct("!HH4x")
_OFPIT_APPLY_ACTIONS = 4


def encode_actions_bytes(actions: Iterable[ActionLike]) -> bytes:
    """Concatenated OF1.5 encoding of `actions` (each padded by its class)."""
    return b"".join([a.encode() for a in actions])


# The last actions tuple encoded and its instructions: the compiler shares
# one actions tuple between all the flows of an lflow (across datapaths
# too), and a put walks those flows one after the other, so most flows reuse
# the previous flow's encoding (seed-500: 84% of 155k flows).  The entry
# holds its tuple, so the identity test cannot be fooled by a reused id.
_last_instructions: tuple[tuple[Any, ...], bytes] = ((), b"")


def encode_instructions(actions: Sequence[ActionLike]) -> bytes:
    """The instruction list of a flow_mod: one APPLY_ACTIONS, or nothing for drop."""
    global _last_instructions
    if not actions:
        return b""
    last = _last_instructions
    if last[0] is actions:
        return last[1]
    body = b"".join([a.encode() for a in actions])
    out = _INSTRUCTION_HDR.pack(_OFPIT_APPLY_ACTIONS, 8 + len(body)) + body
    if type(actions) is tuple:
        _last_instructions = (actions, out)
    return out


def is_conjunction(action: object) -> bool:
    """True for a `conjunction(...)` action (class named Conjunction)."""
    return type(action).__name__ == "Conjunction"


class Flow:
    """One OpenFlow flow.  See the module docstring."""

    __slots__ = ("table", "priority", "match", "actions", "cookie", "key_hash", "_wire")

    table: int
    priority: int
    match: Any
    actions: tuple[Any, ...]
    cookie: int
    key_hash: int
    _wire: bytes | None

    def __init__(
        self,
        table: int,
        priority: int,
        match: Any,
        actions: Iterable[Any] = (),
        cookie: int = 0,
    ) -> None:
        self.table = table
        self.priority = priority
        self.match = match
        self.actions = actions if type(actions) is tuple else tuple(actions)
        self.cookie = cookie
        self.key_hash = hash((table, priority, match))
        self._wire = None

    # ----------------------------------------------------------------- keys
    def same_key(self, other: "Flow") -> bool:
        """True if `other` has the same (table, priority, match)."""
        return (
            self.key_hash == other.key_hash
            and self.table == other.table
            and self.priority == other.priority
            and (self.match is other.match or self.match == other.match)
        )

    def same_content(self, other: "Flow") -> bool:
        """Same key, same actions and same cookie."""
        return (
            self.same_key(other)
            and self.cookie == other.cookie
            and (self.actions is other.actions or self.actions == other.actions)
        )

    def with_actions(self, actions: Iterable[Any], cookie: int | None = None) -> "Flow":
        """A new flow with the same key (key_hash reused) and other actions."""
        f = Flow.__new__(Flow)
        f.table = self.table
        f.priority = self.priority
        f.match = self.match
        f.actions = actions if type(actions) is tuple else tuple(actions)
        f.cookie = self.cookie if cookie is None else cookie
        f.key_hash = self.key_hash
        f._wire = None
        return f

    # ----------------------------------------------------------- encoding
    def wire(self) -> bytes:
        """Encoded ofp_match + instructions, cached on the flow."""
        w = self._wire
        if w is None:
            w = self.match.encode() + encode_instructions(self.actions)
            self._wire = w
        return w

    def encode(self) -> bytes:
        """Like `wire()` but without caching what it encodes: the put path
        uses it so that installed flows keep no copy of their wire bytes
        (seed-500: ~165k flows, tens of MiB)."""
        w = self._wire
        if w is None:
            return self.match.encode() + encode_instructions(self.actions)
        return w

    def has_conjunction(self) -> bool:
        for a in self.actions:
            if is_conjunction(a):
                return True
        return False

    # ----------------------------------------------------------- text
    def actions_string(self) -> str:
        if not self.actions:
            return "drop"
        return ",".join(a.format() for a in self.actions)

    def to_string(self) -> str:
        """`ovs-ofctl dump-flows`-like text (cookie, table, priority, match, actions)."""
        m = self.match.to_string()
        parts = []
        if self.cookie:
            parts.append("cookie=%#x" % self.cookie)
        parts.append("table=%d" % self.table)
        parts.append("priority=%d" % self.priority + ("," + m if m else ""))
        return ", ".join(parts) + " actions=" + self.actions_string()

    def __repr__(self) -> str:
        try:
            return "Flow(%s)" % self.to_string()
        except Exception:  # pragma: no cover - repr must not fail
            return "Flow(table=%d, priority=%d, match=%r, actions=%r, cookie=%#x)" % (
                self.table,
                self.priority,
                self.match,
                self.actions,
                self.cookie,
            )
