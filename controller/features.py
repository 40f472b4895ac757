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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

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
