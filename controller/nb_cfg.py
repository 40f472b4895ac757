"""nb_cfg echo: ``ovn-nbctl --wait=hv`` support (OVN 23.03 §4).

Design note
-----------
Every iteration the agent asks ofctrl's :class:`ofctrl.seqno.SeqnoTracker`
to acknowledge ``SB_Global.nb_cfg`` once everything computed so far is in
the switch (:meth:`NbCfg.request`).  The value is frozen while SB monitor
condition changes are in flight, since they may bring older updates.  Only
acknowledged values are written (:meth:`NbCfg.store`): to
``Chassis_Private.nb_cfg`` (+ ``nb_cfg_timestamp``, wall ms) and to br-int
``external_ids:ovn-nb-cfg`` / ``ovn-nb-cfg-ts`` (per key); br-int also gets
``ovn-startup-ts`` once.
"""

from __future__ import annotations

import time
from typing import Any

import structlog

from ofctrl.seqno import SeqnoTracker

log = structlog.get_logger("nb_cfg")

OVS_NB_CFG = "ovn-nb-cfg"
OVS_NB_CFG_TS = "ovn-nb-cfg-ts"
OVS_STARTUP_TS = "ovn-startup-ts"


def _to_int(s: str | None) -> int:
    try:
        return int(s) if s is not None else 0
    except ValueError:
        return 0


class NbCfg:
    def __init__(self, seqno: SeqnoTracker, startup_ts_ms: int | None = None) -> None:
        self.seqno = seqno
        self.seq_type = seqno.add_type()
        self.nb_cfg = 0
        self.startup_ts = startup_ts_ms if startup_ts_ms is not None \
            else int(time.time() * 1000)
        self.delay_report_s = 0
        self.last_acked = 0

    def current(self, sb_global: Any | None, cond_seqno: int, expected_cond_seqno: int) -> int:
        """``get_nb_cfg``: SB_Global.nb_cfg unless condition changes are in flight."""
        if cond_seqno != expected_cond_seqno:
            return self.nb_cfg
        self.nb_cfg = int(sb_global.nb_cfg) if sb_global is not None else 0
        return self.nb_cfg

    def request(self, nb_cfg: int) -> None:
        self.seqno.update_create(self.seq_type, nb_cfg)

    def store(self, sb_txn: Any | None, ovs_txn: Any | None, chassis_private: Any | None,
              br_int: Any | None, now_ms: int | None = None) -> bool:
        """Write the last acknowledged nb_cfg; True if anything was written."""
        acked = self.seqno.acked_seqnos(self.seq_type)
        cur = acked.last_acked
        self.last_acked = cur
        wrote = False
        if ovs_txn is not None and br_int is not None and \
                _to_int(br_int.external_ids.get(OVS_STARTUP_TS)) != self.startup_ts:
            br_int.setkey("external_ids", OVS_STARTUP_TS, str(self.startup_ts))
            wrote = True
        if not cur:
            return wrote
        ts = now_ms if now_ms is not None else int(time.time() * 1000)
        if sb_txn is not None and chassis_private is not None and \
                cur != chassis_private.nb_cfg:
            chassis_private.nb_cfg = cur
            chassis_private.nb_cfg_timestamp = ts
            wrote = True
            if self.delay_report_s:
                log.info(f"Sleep for {self.delay_report_s} sec")
                time.sleep(self.delay_report_s)
        if ovs_txn is not None and br_int is not None and \
                cur != _to_int(br_int.external_ids.get(OVS_NB_CFG)):
            br_int.setkey("external_ids", OVS_NB_CFG, str(cur))
            br_int.setkey("external_ids", OVS_NB_CFG_TS, str(ts))
            wrote = True
        return wrote
