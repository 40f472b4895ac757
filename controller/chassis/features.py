"""OVS features that change how flows are encoded (OVN 23.03 lib/features.c).

Design note
-----------
Two sources: br-int's ``Datapath.capabilities`` in the OVS database
(``ct_zero_snat``, ``ct_flush``, ``max_hash_alg``) and, for datapath meter
support (``controller(...,meter_id=N)``), the answer to the
``OFPMP_METER_FEATURES`` request the OpenFlow session sends on every
connection (``ofctrl.session.OfctrlSession.meter_support``; unknown counts
as unsupported until the switch answers, as in the C agent).  The daemon
compares the :class:`Features` value each iteration and forces a full
recompute when it changes.

:func:`run` also logs, as the C agent does, one ``OVS Feature: NAME, state:
supported|not supported`` line per capability whose state changed since the
previous call (rate-limited, 5 a minute).  States start as unsupported, so a
capability OVS does not report is never logged; meter support is not logged.
Before them, the first time a bridge is known (and again if its management
socket changes), the C agent's ``features`` probe connection logs
``TARGET: connecting to switch``; :class:`FeatureProbe` logs the same line
(our meter probe shares the ofctrl OpenFlow session, so no second
connection is opened).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from controller import vlog

log = vlog.get_logger("features")
_rl = vlog.RateLimiter(per_minute=5, burst=5)

OVS_HASH_ALG_SYM_L4 = 1


@dataclass(frozen=True)
class Features:
    ct_zero_snat: bool = False
    ct_flush: bool = False
    dp_hash_l4_sym: bool = False
    meter_support: bool = False


def from_capabilities(caps: Mapping[str, str], meter_support: bool) -> Features:
    try:
        max_hash = int(caps.get("max_hash_alg", "0"))
    except ValueError:
        max_hash = 0
    return Features(caps.get("ct_zero_snat") == "true", caps.get("ct_flush") == "true",
                    max_hash == OVS_HASH_ALG_SYM_L4, meter_support)


# Capability names as the C agent logs them, in its order.
_LOGGED: tuple[tuple[str, str], ...] = (
    ("ct_zero_snat", "ct_zero_snat"), ("ct_flush", "ct_flush"),
    ("dp_hash_l4_sym", "dp_hash_l4_sym_support"))


def changed_states(old: Features | None, new: Features) -> list[tuple[str, bool]]:
    """(C's name, new state) for each logged capability whose state changed."""
    before = old if old is not None else Features()
    return [(name, getattr(new, attr)) for attr, name in _LOGGED
            if getattr(new, attr) != getattr(before, attr)]


class FeatureProbe:
    """The feature state between iterations, and the log lines when it changes."""

    __slots__ = ("features", "_target")

    def __init__(self) -> None:
        self.features: Features | None = None
        self._target: str | None = None

    def run(self, caps: Mapping[str, str], meter_support: bool,
            mgmt_target: str | None) -> Features:
        """The features now (``mgmt_target``: br-int's management socket, if known)."""
        if mgmt_target is not None and mgmt_target != self._target:
            self._target = mgmt_target
            log.info(f"{mgmt_target}: connecting to switch")
        new = from_capabilities(caps, meter_support)
        for name, state in changed_states(self.features, new):
            log.info_rl(_rl, f"OVS Feature: {name}, state: "
                        f"{'supported' if state else 'not supported'}")
        self.features = new
        return new
