"""The agent's ``ovn-appctl`` face: the methods :mod:`controller.diag.unixctl`
calls on the :class:`controller.daemon.Daemon` (its ``Agent`` protocol).

Design note
-----------
A mixin of :class:`~controller.daemon.Daemon`, kept apart from the main loop
so the loop reads as the iteration alone.  It owns no state: every attribute
it touches is created by ``Daemon.__init__`` and only declared here (for the
type checker).  Each method answers or acts at once, from the loop's own
thread (unixctl runs inside the iteration), so none needs locking; requests
that need the loop to act (exit, recompute, flush) set ``_wake`` so the next
iteration starts without waiting for the poller's timers.
"""

from __future__ import annotations

from typing import Any, Callable

import structlog

from controller.chassis.patch import StartupDelay
from controller.diag import memory
from controller.engine.agent_nodes import AgentState
from controller.engine.core import Engine
from controller.nb_cfg import NbCfg
from controller.nodes.logical_flow_output import LflowOutput
from controller.ovsdb import connections as dbmod
from ofctrl.desired import DesiredFlowTable
from ofctrl.groups import GroupTable
from ofctrl.meters import MeterTable

log = structlog.get_logger("main")


class AppctlApi:
    """The ``ovn-appctl`` commands of the agent (mixin of ``Daemon``)."""

    # Created by Daemon.__init__.
    st: AgentState
    lflow: LflowOutput
    engine: Engine
    groups: GroupTable
    meters: MeterTable
    nb_cfg: NbCfg
    startup: StartupDelay
    sb: dbmod.IdlLoop | None
    chassis: Any | None
    br_int: Any | None
    pinctrl: Any
    exiting: bool
    restart: bool
    _wake: bool
    _sb_table: Callable[[str], Any]
    _desired_tables: Callable[[], tuple[DesiredFlowTable, DesiredFlowTable, bool, bool]]

    def request_exit(self, restart: bool) -> None:
        self.exiting = True
        self.restart = restart
        self._wake = True

    def sb_connected(self) -> bool:
        return self.sb is not None and self.sb.connected

    def ct_zone_list(self) -> str:
        return self.st.ct.list_text()

    def dump_local_bindings(self) -> str:
        return self.st.rt.dump_local_bindings()

    def local_template_vars(self) -> dict[str, str]:
        """This chassis's Chassis_Template_Var variables (empty without a chassis)."""
        me = self.chassis
        if me is None:
            return {}
        for row in self._sb_table("Chassis_Template_Var").values():
            if row.chassis == me.name:
                return dict(row.variables)
        return {}

    def force_recompute(self) -> None:
        self.engine.trigger_recompute()
        self._wake = True

    def set_delay_nb_cfg_report(self, seconds: int) -> None:
        self.nb_cfg.delay_report_s = seconds

    def lflow_cache_stats(self) -> str:
        return str(self.lflow.cache.stats_text())

    def lflow_cache_flush(self) -> None:
        log.info("User triggered lflow cache flush.")
        self.lflow.cache.flush()
        self.force_recompute()

    def conj_ids_dump(self) -> str:
        return str(self.lflow.conj_ids_dump())

    def extend_table_list(self, which: str) -> str:
        table = self.groups if which == "group" else self.meters
        items = sorted((e.name, e.table_id) for e in table.existing.values())
        return "".join(f"{name}: {tid}\n" for name, tid in items)

    def sb_cluster_state_reset(self) -> None:
        """Forget the raft index seen so far (the SB cluster was rebuilt)."""
        if self.sb is not None:
            self.sb.idl._min_index = 0
            self.sb.force_reconnect()
        self.engine.set_force_recompute("SB cluster state reset, force recompute.")
        self._wake = True

    def ignore_startup_delay(self) -> None:
        self.startup.ignore = True

    def wake(self) -> None:
        self._wake = True

    def memory_report(self) -> str:
        lf, pf, _, _ = self._desired_tables()
        return memory.format_usage(memory.agent_usage(self, (lf, pf))) + "\n"

    def inject_pkt(self, microflow: str) -> str | None:
        """``inject-pkt MICROFLOW``: None when injected, else the error reply."""
        if self.pinctrl is None or self.br_int is None or self.chassis is None:
            return "ovn-controller not ready."
        result: str | None = self.pinctrl.inject(microflow, self.br_int, self._sb_table)
        return result
