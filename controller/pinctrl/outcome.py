"""What a packet-in handler returns: messages to send and intents for the main loop.

Handlers are pure; everything they want done is data in an :class:`Outcome`:
OpenFlow messages for the pinctrl connection, SB write intents applied by the
main loop in its SB transaction (``sb_writes``), buffering requests
(``buffered``) and log lines, or a drop reason the service counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.vlog import RateLimiter

__all__ = ["MacBindingIntent", "FdbIntent", "VportIntent", "EventIntent",
           "ActivationIntent", "BufferIntent", "LogIntent", "SbIntent", "Intent",
           "Outcome", "DROP"]


@dataclass(frozen=True, slots=True)
class MacBindingIntent:
    """Learn ``ip`` (SB text form) at ``mac`` on logical port (dp_key, port_key);
    commit no earlier than ``delay_ms`` after it was queued."""

    dp_key: int
    port_key: int
    ip: str
    mac: str
    delay_ms: int


@dataclass(frozen=True, slots=True)
class FdbIntent:
    dp_key: int
    port_key: int
    mac: str


@dataclass(frozen=True, slots=True)
class VportIntent:
    """Claim virtual port ``vport_key`` of datapath ``dp_key`` behind ``parent_key``."""

    dp_key: int
    vport_key: int
    parent_key: int


@dataclass(frozen=True, slots=True)
class EventIntent:
    event_type: str
    info: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ActivationIntent:
    """A RARP arrived on multichassis port (dp_key, port_key): activate it here."""

    dp_key: int
    port_key: int


@dataclass(frozen=True, slots=True)
class BufferIntent:
    """Hold ``frame`` until (dp_key, port_key = outport, ip = next hop) resolves;
    ``reload`` is the set_field action bytes restoring the packet-in's registers
    (``openflow.reload_metadata``); ``ip`` is the 128-bit next hop (an IPv4
    next hop may be given as its 32-bit value or IPv4-mapped); ``pkt_mark``
    is restored on release.  ``buffered.buffer_intent(pin, is_arp)`` builds one."""

    dp_key: int
    port_key: int
    ip: int
    frame: bytes
    reload: bytes
    pkt_mark: int = 0


@dataclass(frozen=True, slots=True)
class LogIntent:
    """One log line; with ``rate_limit`` it is logged as VLOG_*_RL through that limiter."""

    module: str
    level: str
    text: str
    rate_limit: RateLimiter | None = field(default=None, compare=False)


SbIntent = MacBindingIntent | FdbIntent | VportIntent | EventIntent | ActivationIntent
Intent = SbIntent | BufferIntent | LogIntent


@dataclass(slots=True)
class Outcome:
    messages: list[bytes] = field(default_factory=list)
    intents: list[Intent] = field(default_factory=list)
    drop: str | None = None


def DROP(why: str) -> Outcome:
    """An outcome that sends nothing and is counted as a drop for ``why``."""
    return Outcome(drop=why)
