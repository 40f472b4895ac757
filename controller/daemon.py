"""The agent's main loop (OVN 23.03 ovn-controller.c ``main()``).

Design note
-----------
One thread, one ``ovs.poller`` loop.  Each iteration of :class:`Daemon`:

1. run the OVS IDL (open this iteration's OVS transaction), read the knobs,
   (re)connect the SB IDL from ``ovn-remote`` and run it; only a replica
   that was thrown away (not a resumed monitor) forces a full recompute; SB
   indexes follow the tracked changes;
2. create/fix br-int, register Chassis/Chassis_Private/Encaps, run the
   OpenFlow session (reconnect => recompute), tunnel ports;
3. run the engine (recompute allowed only with an SB transaction and no
   OpenFlow backlog), commit ct zones, refresh SB monitor conditions;
4. hand desired flows to ofctrl with the request id of the latest seqno
   requests (nb_cfg, if-status), collect acked seqnos, run the if-status
   manager, echo nb_cfg; while a full compute runs in CPU-bounded slices
   (``controller.nodes.logical_flow_output``) or an SB update is applied in slices
   (``controller.ovsdb.connections``), nothing is put: the initial install instead streams
   each slice into its still open bundle (``OfctrlSession.put_partial``),
   and the loop wakes at once for the next slice;
5. unixctl, commit both transactions, clear tracked changes, wait.

The engine graph is :data:`controller.engine.graph.GRAPH`; the desired flow
tables handed to ofctrl are the data of its ``logical_flow_output`` and
``physical_flow_output`` nodes.

Parts kept in their own modules, as mixins of :class:`Daemon` (state created
here, in ``__init__``): the ``ovn-appctl`` methods
(:mod:`controller.daemon_appctl`), when SB monitor conditions are sent
(:mod:`controller.daemon_monitors`) and profiling, the iteration timeline and
GC tuning (:mod:`controller.daemon_profile`).
"""

from __future__ import annotations

import os
import time
from typing import Any

import ovs.poller
import structlog

from controller.binding.claim import binding_cleanup
from controller.binding.if_status import IfStatusMgr
from controller.chassis import features as featmod
from controller.chassis.bfd import bfd_run
from controller.chassis.encaps import Encaps, encaps_cleanup
from controller.chassis.features import Features
from controller.chassis.patch import Patches, StartupDelay
from controller.chassis.registration import (
    br_datapath,
    chassis_cleanup,
    chassis_config,
    chassis_run,
    ensure_br_int,
)
from controller.daemon_appctl import AppctlApi
from controller.daemon_monitors import SbMonitors
from controller.daemon_profile import DevProfile, gc_after_startup, gc_bulk, gc_startup, start_profile
from controller.diag import memory
from controller.diag.coverage import COVERAGE
from controller.diag.loop_stats import LoopStats
from controller.diag.stopwatch import AGENT_STOPWATCHES, Stopwatches
from controller.diag.unixctl import create_server
from controller.engine.agent_nodes import AgentState, agent_nodes
from controller.engine.core import State
from controller.engine.graph import FLOW_OUTPUT_NODES, GraphParts, build_engine
from controller.knobs import Knobs
from controller.knobs import chassis_name as resolve_chassis_name
from controller.nb_cfg import NbCfg
from controller.nodes.logical_flow_output import LflowOutput
from controller.nodes.physical_flow_output import PflowOutput
from controller.ovsdb import connections as dbmod
from controller.ovsdb import idl_fastpath
from controller.vlog import RateLimiter
from ofctrl.desired import DesiredFlowTable
from ofctrl.groups import GroupTable
from ofctrl.meters import MeterTable, sb_meter_configs
from ofctrl.seqno import SeqnoTracker
from ofctrl.session import OfctrlSession

log = structlog.get_logger("main")

SIGNALS_READY = True
# ovn_get_internal_version() of 23.03.1: package-SB schema-N_OVNACTS.minor.
INTERNAL_VERSION = "23.03.1-20.27.0-70.6"
_rl_version = RateLimiter(per_minute=60, burst=1)
# Longest hold of the installed flows after the SB replica was replaced.
SB_REFILL_HOLD_S = 10.0
# CPU an iteration may spend before a sliced compute yields (what is left of
# it goes to the compute's slice, at least MIN_SLICE_MS).
ITERATION_CPU_MS = 150.0
MIN_SLICE_MS = 30.0


def _ovs_rundir() -> str:
    return os.environ.get("OVS_RUNDIR", "/var/run/openvswitch")


def _of_probe_ms(knobs: Knobs) -> int:
    """ovn-openflow-probe-interval (seconds, 0 = off) in ms; at least 5 s as rconn."""
    secs = knobs["ovn-openflow-probe-interval"] or 0
    return max(5, secs) * 1000 if secs > 0 else 0


def _override_file() -> str:
    return os.path.join(os.environ.get("OVN_SYSCONFDIR", "/etc/ovn"), "system-id-override")


class Daemon(AppctlApi, SbMonitors, DevProfile):
    def __init__(self, options: Any) -> None:
        self.options = options
        self.ovs = dbmod.open_ovs(getattr(options, "ovs_remote", None))
        self.sb: dbmod.IdlLoop | None = None
        self.sb_remote: str | None = None
        self.seqno = SeqnoTracker()
        self.nb_cfg = NbCfg(self.seqno)
        self.if_mgr = IfStatusMgr(self.seqno)
        self.st = AgentState(self.if_mgr)
        self.groups = GroupTable()
        self.meters = MeterTable()
        self.lflow = LflowOutput(self.st, self._sb_table, lambda: self.engine.run_count,
                                 lambda: self._ovs_external_ids(), self.groups, self.meters)
        self.pflow = PflowOutput(self.st, self._sb_table, lambda: self.st.geneve_field,
                                 lambda: self.engine.run_count)
        self.pflow.budget = self._slice_budget_ms
        self.engine = build_engine(GraphParts(
            ovs_tracker=self.ovs.tracker, sb_tracker=dbmod.ChangeTracker(dbmod.SB_TABLES),
            nodes={**agent_nodes(self.st, self._sb_table), "logical_flow_output": self.lflow,
                   "physical_flow_output": self.pflow}))
        self.encaps = Encaps()
        self.patches = Patches()
        self.startup = StartupDelay(int(time.time() * 1000))
        self.session: OfctrlSession | None = None
        self.session_target: str | None = None
        self.loop_stats = LoopStats()
        self.stopwatches = Stopwatches(AGENT_STOPWATCHES)
        self.coverage = COVERAGE
        age = memory.process_age_ms()
        self.memory_monitor = memory.MemoryMonitor(
            None if age is None else time.monotonic() * 1000 - age)
        self.paused = False
        self.exiting = False
        self.restart = False
        self.done = False
        self.chassis: Any | None = None
        self.chassis_private: Any | None = None
        self.br_int: Any | None = None
        self.expected_cond_seqno = 0
        self.monitor_key: Any = None
        self.unixctl = None
        self._wake = False
        self.profile: Any = None
        self._profile_path = os.environ.get("OVN_CONTROLLER_PY_PROFILE", "")
        # OVN_CONTROLLER_PY_TIMELINE=FILE: one line per iteration (dev aid).
        tl = os.environ.get("OVN_CONTROLLER_PY_TIMELINE")
        self._timeline = open(tl, "a", buffering=1) if tl else None
        self._sb_loaded = False
        # SB replica replaced: the SB_Global.nb_cfg seen before, and until when
        # the install may be held for it (_hold_install).
        self._sb_replaced: int | None = None
        self._sb_replaced_until = 0.0
        self._sb_nb_cfg = 0
        self._held_lchg = self._held_pchg = False   # flow changes not yet put (held)
        self._version_mismatch = False
        self._engine_ran = False
        self._encaps_key: Any = None
        self._patch_last_starting: bool | None = None
        self._patch_dirty = True
        self._bfd_dirty = True
        self._encaps_dirty = True
        self.features: Features | None = None
        self._feature_probe = featmod.FeatureProbe()
        self._meter_support: bool | None = None
        self.pinctrl: Any = None      # controller.pinctrl.agent.Pinctrl, once br-int is known

    # ------------------------------------------------------------ helpers
    def _sb_meters(self) -> dict[str, Any]:
        rows = []
        for m in self._sb_table("Meter").values():
            rows.append((m.name, m.unit, [(b.action, int(b.rate), int(b.burst_size))
                                          for b in m.bands]))
        return sb_meter_configs(rows)

    def _ovs_external_ids(self) -> Any:
        row = self.ovs.first("Open_vSwitch")
        return row.external_ids if row is not None else {}

    def _sb_table(self, name: str) -> Any:
        if self.sb is None or not self.sb.has_table(name):
            return {}
        return self.sb.table(name)

    def _desired_tables(self) -> tuple[DesiredFlowTable, DesiredFlowTable, bool, bool]:
        lf, pf = (self.engine.node(n) for n in FLOW_OUTPUT_NODES)
        return (lf.data.flow_table, pf.data.flow_table, lf.state is State.UPDATED,
                pf.state is State.UPDATED)

    def _ovs_ports_changed(self) -> bool:
        t = self.ovs.tracker
        return t.reset or any(t.has_changes(n) for n in
                              ("Open_vSwitch", "Bridge", "Port", "Interface"))

    def _engine_skip_reason(self, sb: dbmod.IdlLoop | None) -> str:
        """Why this iteration did not run the engine (for the recompute log)."""
        if sb is None or not sb.has_ever_connected:
            return "OVNSB not connected"
        if self._version_mismatch:
            return "northd version mismatch"
        if self.chassis is None:
            return "no chassis yet"
        if self.br_int is None:
            return "no integration bridge"
        if self.exiting:
            return "exiting"
        return "engine not run"

    def _tunnels_may_change(self, sb: dbmod.IdlLoop) -> bool:
        """encaps_run only when its inputs moved (it walks every br-int port)."""
        key = (self.chassis.uuid if self.chassis is not None else None,
               self.br_int.uuid if self.br_int is not None else None)
        t = sb.tracker
        if key != self._encaps_key or self._ovs_ports_changed() or t.reset or \
                any(t.has_changes(n) for n in ("Chassis", "Encap", "SB_Global")):
            self._encaps_key = key
            return True
        return False

    def _hold_install(self, sess: OfctrlSession) -> bool:
        """The first install after a (re)connection replaces every flow in
        br-int atomically; hold it until the SB monitor conditions we asked for
        are acknowledged, so a restart never swaps working flows for a partial
        table (what later OVN does instead of ovn-ofctrl-wait-before-clear).
        The same after the SB replica was replaced (a new or wiped database):
        its datapaths and ports have new UUIDs, so the conditions take rounds
        to reach every local datapath again; the installed flows stay until
        then instead of dropping to what the first rounds bring (or to an
        empty table while northd has not yet filled a wiped SB)."""
        replaced = self._sb_replaced is not None
        if not (getattr(sess, "initial_clear", False) or getattr(sess, "bundle_open", False)) \
                and not replaced:
            return False
        sb = self.sb
        settled = sb is not None and self.monitor_key is not None and sb.conditions_settled()
        if replaced and sb is not None and time.monotonic() < self._sb_replaced_until:
            # A wiped SB is complete again once northd has caught up with the
            # NB (its nb_cfg, written with its output, is back where it was)
            # and our re-registered chassis is in the replica.
            sbg = sb.first("SB_Global")
            if sbg is None or sbg.nb_cfg < (self._sb_replaced or 0) or \
                    self.chassis is None or self.chassis.uuid not in sb.table("Chassis"):
                settled = False
        if settled:
            self._sb_replaced = None
        return not settled

    def _outputs_valid(self) -> bool:
        """Like engine_get_data(): flow tables are handed to ofctrl only when
        their nodes were computed (not stale or aborted, nothing pending) in
        this iteration, from a replica with no update half applied, and no
        VIF claim is still queued (``controller.nodes.runtime_data``)."""
        return all(self.engine.node(n).is_valid() for n in FLOW_OUTPUT_NODES) and \
            not self._sb_deferred() and not self.engine.node("runtime_data").pending()

    def _sb_deferred(self) -> bool:
        return self.sb is not None and self.sb.has_deferred()

    def _outputs_partial(self) -> bool:
        """Both flow tables computed in this iteration, but a sliced compute
        of one of them (controller.nodes.logical_flow_output) or the SB update it works
        from (controller.ovsdb.connections) is not complete yet."""
        nodes = [self.engine.node(n) for n in FLOW_OUTPUT_NODES]
        return all(n.state in (State.UPDATED, State.UNCHANGED) for n in nodes) and \
            (any(n.pending() for n in nodes) or self._sb_deferred())

    def _slice_budget_ms(self) -> float:
        """CPU left in this iteration for a sliced compute's next slice."""
        return max(MIN_SLICE_MS, ITERATION_CPU_MS - self.loop_stats.cpu_ms())

    def _desired_count(self) -> int:
        lf, pf, _, _ = self._desired_tables()
        return len(lf) + len(pf)

    def _update_sb(self, knobs: Knobs) -> None:
        remote = knobs["ovn-remote"]
        if not remote:
            return
        probe = knobs["ovn-remote-probe-interval"]
        if probe is None:
            probe = dbmod.default_sb_probe_interval(remote)
        if self.sb is not None and remote != self.sb_remote:
            log.info(f"OVNSB remote changed to {remote}")
            if self.sb.set_remote(remote):
                # Same IDL, same replica: the installed flows stay until the
                # new server's contents arrive (the reconnection forces the
                # recompute that replaces them in one round).
                self.sb_remote = remote
            else:
                self.sb.close()
                self.sb = None
        if self.sb is None:
            self.sb = dbmod.open_sb(remote, probe)
            self.sb_remote = remote
            self._sb_loaded = False
            self.monitor_key = None
            self._initial_monitors(knobs)
            # Table nodes of the engine read the new tracker.
            for n in self.engine.nodes:
                if n.name.startswith("SB_") and hasattr(n, "tracker"):
                    n.tracker = self.sb.tracker
            self.engine.set_force_recompute("OVNSB remote changed, force recompute.")
        self.sb.set_probe_interval(probe)

    def _ofctrl_target(self, knobs: Knobs, br_name: str) -> str:
        remote = knobs["ovn-bridge-remote"]
        return remote or f"unix:{_ovs_rundir()}/{br_name}.mgmt"

    def _run_session(self, knobs: Knobs, br_int: Any) -> None:
        target = self._ofctrl_target(knobs, br_int.name)
        if self.session is None or target != self.session_target:
            if self.session is not None:
                # The OpenFlow connection goes to another bridge: like the C
                # agent when its ofctrl connection drops, forget the seqno
                # requests and the interface states (so ports released
                # meanwhile are not marked down in the SB).
                self.session.close()
                self.seqno.flush()
                self.if_mgr.clear()
            self.session = OfctrlSession(target, ct_zones=self.st.ct, groups=self.groups,
                                         meters=self.meters,
                                         probe_interval_ms=_of_probe_ms(knobs),
                                         wait_before_clear_ms=knobs[
                                             "ovn-ofctrl-wait-before-clear"] or 0)
            self.session_target = target
        probe_ms = _of_probe_ms(knobs)          # re-read each iteration, as C
        if self.session.conn.fsm.get_probe_interval() != probe_ms:
            self.session.conn.set_probe_interval(probe_ms)
        was_connected = self.session.is_connected()
        if self.session.run():
            self.engine.set_force_recompute(
                "OVS OpenFlow connection reconnected,force recompute.")
        # Datapath meter support: the session asks the switch on every connection.
        self._meter_support = self.session.meter_support
        connected = self.session.is_connected()
        if was_connected and not connected:
            self.seqno.flush()
            self.if_mgr.openflow_disconnected()
        self.st.ofctrl_connected = connected
        self.st.geneve_field = self.session.geneve_field

    def _run_pinctrl(self, knobs: Knobs, br_int: Any) -> None:
        """Packet-in services: own connection (a thread), SB writes in this txn."""
        if self.pinctrl is None:
            from controller.pinctrl.agent import Pinctrl
            self.pinctrl = Pinctrl()
        self.pinctrl.run(self._ofctrl_target(knobs, br_int.name), self.sb, self.st.idx,
                         self.chassis, self.st.rt.local_datapaths, br_int,
                         self._ovs_ports_changed(), frozenset(self.st.rt.active_tunnels))

    def _features_run(self, caps: dict[str, str], br_name: str | None) -> None:
        """OVS datapath features that change flow encodings (lib/features.c)."""
        target = f"unix:{_ovs_rundir()}/{br_name}.mgmt" if br_name else None
        feats = self._feature_probe.run(caps, bool(self._meter_support), target)
        if feats != self.features:
            if self.features is not None:
                self.engine.set_force_recompute("OVS feature set changed, force recompute.")
            self.features = feats
            self.lflow.set_features(ct_zero_snat=feats.ct_zero_snat,
                                    dp_hash_l4_sym=feats.dp_hash_l4_sym,
                                    controller_meter=feats.meter_support)

    def _northd_version_ok(self, knobs: Knobs, sb: dbmod.IdlLoop) -> bool:
        """``ovn-match-northd-version``: stop processing while versions differ."""
        if not knobs["ovn-match-northd-version"]:
            self._version_mismatch = False
            return True
        sbg = sb.first("SB_Global")
        if sbg is None:
            self._version_mismatch = True
            return False
        theirs = sbg.options.get("northd_internal_version", "")
        if theirs != INTERNAL_VERSION:
            log.warn_rl(_rl_version, f"controller version - {INTERNAL_VERSION} mismatch with northd "
                        f"version - {theirs}")
            self._version_mismatch = True
            return False
        if self._version_mismatch:
            self.engine.set_force_recompute("northd version matches again, force recompute.")
        self._version_mismatch = False
        return True

    # ------------------------------------------------------------ one iteration
    def iteration(self, poller: ovs.poller.Poller) -> None:
        ls = self.loop_stats
        ls.begin()
        self._engine_ran = False
        self.engine.init_run()
        ovs_res = self.ovs.run()
        if ovs_res.reconnected or ovs_res.reset:
            self.engine.set_force_recompute("OVS IDL reconnected, force recompute.")
        if self.ovs.last_commit_status == "success" and self.ovs.committing is None:
            self.st.ct.db_committed()
        ovs_row = self.ovs.first("Open_vSwitch")
        ext = ovs_row.external_ids if ovs_row is not None else {}
        name = resolve_chassis_name(ext, getattr(self.options, "chassis_name", None),
                                    _override_file())
        knobs = Knobs(ext, name)
        self.st.ct.zone_range = knobs["ct-zone-range"]
        self._update_sb(knobs)
        sb = self.sb
        if sb is not None:
            sb_res = sb.run()
            if sb_res.reconnected:
                # No recompute: a resumed monitor_cond_since keeps the replica
                # and sends what was missed as tracked changes; a replica
                # thrown away shows up as sb_res.reset (recompute below).
                self.monitor_key = None
                self.expected_cond_seqno = sb.cond_seqno
            if sb_res.reset:
                self._sb_replaced = self._sb_nb_cfg
                self._sb_replaced_until = time.monotonic() + SB_REFILL_HOLD_S
            elif self._sb_replaced is None and sb.has_table("SB_Global"):
                sbg = sb.first("SB_Global")
                if sb.tracker["SB_Global"].deleted:
                    # SB_Global deleted (northd may have made a new one in the
                    # same run): the SB was wiped in place, every row deleted
                    # in one transaction; hold the flows as for a reset.
                    self._sb_replaced = self._sb_nb_cfg
                    self._sb_replaced_until = time.monotonic() + SB_REFILL_HOLD_S
                elif sbg is not None:
                    self._sb_nb_cfg = int(sbg.nb_cfg)
            if sb_res.reset or (not self._sb_loaded and sb.has_ever_connected):
                self.st.idx.rebuild({t: sb.table(t) for t in self.st.idx.tables
                                     if sb.has_table(t)})
                self._sb_loaded = sb.has_ever_connected
                self.engine.set_force_recompute(
                    "OVNSB contents replaced, force recompute." if sb_res.reset
                    else "OVNSB contents loaded, force recompute.")
            else:
                self.st.idx.apply(sb.tracker)
                self.st.idx.track_references(sb.tracker, self._sb_table)
            self.lflow.sb_changed(sb.tracker)
        ls.stage_done("idl-run")

        br_name = knobs["ovn-bridge"]
        if ovs_row is not None:
            self.br_int = ensure_br_int(self.ovs.txn, self.ovs.idl.tables, ovs_row, br_name,
                                        knobs["ovn-bridge-datapath-type"])
        br_int = self.br_int
        if ovs_row is not None:
            dp = br_datapath(self.ovs.txn, self.ovs.idl.tables, ovs_row, br_int,
                             knobs["ovn-bridge-datapath-type"])
            self._features_run(dict(dp.capabilities) if dp is not None else {},
                               br_int.name if br_int is not None else None)
        if self.exiting and not self.restart and knobs["ovn-cleanup-on-exit"]:
            self._cleanup_step(sb, br_int)
        elif self.exiting:
            self.done = True
        if sb is not None and sb.has_ever_connected and name and ovs_row is not None \
                and not self.done and self._northd_version_ok(knobs, sb):
            if self.chassis is None and br_int is not None:
                self._early_monitors(knobs, br_int)
            cfg = chassis_config(ovs_row, name, br_int)
            chst = chassis_run(sb.txn if not self.exiting else None, sb.idl.tables,
                               self.st.idx, cfg)
            self.chassis, self.chassis_private = chst.chassis, chst.chassis_private
            if br_int is not None:
                self._run_session(knobs, br_int)
            ls.stage_done("chassis")
            if self.chassis is not None and not self.exiting:
                if self._tunnels_may_change(sb):
                    self._encaps_dirty = True
                if self._encaps_dirty and self.ovs.txn is not None:
                    self.encaps.run(self.ovs.txn, self.ovs.idl.tables, br_int, self.chassis,
                                    sb.table("Chassis").values(), sb.first("SB_Global"), ext)
                    self._encaps_dirty = False
                self._run_engine(knobs)
                ls.stage_done("engine")
            settled = sb.conditions_settled()
            nb = self.nb_cfg.current(sb.first("SB_Global"), 0, 0 if settled else 1)
            self.nb_cfg.request(nb)
            if not self.exiting:
                self._flows_and_status(knobs)
            ls.stage_done("ofctrl-put")
            # Pinctrl (its imports: ~30 ms) starts once the first compute has
            # sent its flows: packet-ins need those flows first.
            if br_int is not None and not self.exiting and (self.pinctrl is not None
                                                            or self.engine.run_count > 0):
                self._run_pinctrl(knobs, br_int)
                ls.stage_done("pinctrl")
            if not self.exiting:     # the cleanup may have deleted Chassis_Private
                self.nb_cfg.store(sb.txn, self.ovs.txn, self.chassis_private, br_int)
        if not self._engine_ran and (self.ovs.tracker.any_changes() or
                                     (sb is not None and sb.tracker.any_changes())):
            # The tracked changes of this iteration are about to be dropped
            # unprocessed: the next run must be a full recompute.
            if not self.engine.force_recompute:
                self.engine.set_force_recompute(
                    f"tracked changes dropped ({self._engine_skip_reason(sb)}), "
                    "force recompute.")
        if self.unixctl is not None:
            self.unixctl.run()
        self._commit()
        ls.stage_done("commit")
        COVERAGE.run()
        self.memory_monitor.run(self.memory_report)
        self.lflow.cache.run()          # the trim after ovn-trim-timeout-ms idle
        self._wait(poller)
        ls.end()
        if self._timeline is not None:
            self._trace_iteration()

    def _run_engine(self, knobs: Knobs) -> None:
        st = self.st
        sb = self.sb
        assert sb is not None
        st.chassis = self.chassis
        st.br_int = self.br_int
        st.pb_rows = sb.table("Port_Binding")
        st.sb_readonly = sb.txn is None
        st.ovs_readonly = self.ovs.txn is None
        st.bridge_mappings = dict(knobs["ovn-bridge-mappings"])
        st.now_ms = int(time.monotonic() * 1000)
        if self.pinctrl is not None:
            st.activated_ports = self.pinctrl.activated_ports
        starting = self.startup.active(int(time.time() * 1000))
        if st.starting_up and not starting:
            # Grace period over: drop the zones kept for users that never
            # came (no full recompute: nothing else is stale).
            if st.ct.drop_absent(st.rt.local_lports,
                                 [ld.datapath for ld in st.rt.local_datapaths.values()]):
                self._wake = True
        st.starting_up = starting
        if self.br_int is None:
            return
        sw = self.stopwatches["flow-generation"]
        sw.start()
        allowed = sb.txn is not None and (self.session is None
                                          or not self.session.has_backlog())
        if self.engine.force_recompute and allowed:
            COVERAGE.inc("engine_recompute")
        runs_before = self.engine.run_count
        self.lflow.slice_ms = self._slice_budget_ms()
        ran = self.engine.run(allowed)
        self._engine_ran = True
        sw.stop()
        if not ran or self.engine.aborted:
            if not self.engine.force_recompute:
                why = "SB transaction in flight" if sb.txn is None else \
                    "OpenFlow backlog" if not allowed else "unknown"
                self.engine.set_force_recompute(
                    f"engine run aborted (recompute not allowed: {why}), force recompute.")
            # Like the C loop: wake at once after a run that aborted, or when a
            # skipped run (still no recompute allowed) left input changes
            # behind.  Otherwise the event that allows the recompute (the SB
            # reconnecting, a commit reply, the OpenFlow backlog draining)
            # wakes the loop; no busy loop while the SB is away.
            if self.engine.run_count != runs_before or self.engine.need_run():
                self._wake = True
        else:
            self.engine.clear_force()
            if self.engine.root.state is State.UPDATED:
                self.startup.engine_updated()
        if any(self.engine.node(n).pending() for n in FLOW_OUTPUT_NODES):
            self._wake = True       # a sliced compute goes on next iteration
            gc_bulk()
        elif ran and not self.engine.aborted and self.engine.node("runtime_data").pending():
            # So do queued claims; after an aborted run the engine resumes
            # nothing until a recompute is allowed (which wakes us), so no
            # busy loop meanwhile.
            self._wake = True
        if self.ovs.txn is not None and self.br_int is not None:
            csw = self.stopwatches["ct-zone-commit"]
            csw.start()
            if st.ct.commit(self.br_int):
                COVERAGE.inc("ct_zone_commit")
            csw.stop()
        # bfd_run and patch_run walk every br-int port: only when inputs moved.
        ports_changed = self._ovs_ports_changed()
        t = sb.tracker
        if ports_changed or t.reset or any(t.has_changes(n) for n in
                                           ("HA_Chassis_Group", "SB_Global", "Chassis")):
            self._bfd_dirty = True
        if self._bfd_dirty and self.ovs.txn is not None:
            bsw = self.stopwatches["bfd-run"]
            bsw.start()
            bfd_run(self.ovs.txn, self.br_int, self.chassis,
                    self._sb_table("HA_Chassis_Group").values(), sb.first("SB_Global"))
            bsw.stop()
            self._bfd_dirty = False
        rt_node = self.engine.node("runtime_data")
        starting = st.starting_up
        if rt_node.state is State.UPDATED or ports_changed or \
                starting != self._patch_last_starting:
            self._patch_dirty = True
        # Claims still queued (runtime_data pending) leave the local datapaths
        # complete: the patch ports need not wait for them.
        if self._patch_dirty and rt_node.state in (State.UPDATED, State.UNCHANGED) \
                and self.ovs.txn is not None:
            psw = self.stopwatches["patch-run"]
            psw.start()
            self._patch_last_starting = starting
            self.patches.run(self.ovs.txn, self.ovs.idl.tables, self.br_int,
                             knobs["ovn-bridge-mappings"], self.chassis, st.rt.local_datapaths,
                             st.idx, may_delete=not starting)
            psw.stop()
            self._patch_dirty = False
        if rt_node.state is State.UPDATED or self.monitor_key is None:
            self._update_monitors(knobs)

    def _flows_and_status(self, knobs: Knobs) -> None:
        st = self.st
        sess = self.session
        view = st.binding_view() if self.chassis is not None else None
        if view is not None:
            sw = self.stopwatches["if-status-mgr-update"]
            sw.start()
            sb = self.sb
            pb_changed = sb is None or sb.tracker.reset or sb.tracker.has_changes(
                "Port_Binding") or sb.last_commit_status not in ("success", "unchanged")
            self.if_mgr.update(view, self.chassis, sb is None or sb.txn is None,
                               self.ovs.txn is None, pb_changed)
            sw.stop()
        held = sess is not None and self.chassis is not None and self._outputs_valid() \
            and self._hold_install(sess)
        if held:
            # Changes computed meanwhile must reach the switch with the put
            # that ends the hold (ofctrl skips a put whose tables did not change).
            _, _, lchg, pchg = self._desired_tables()
            self._held_lchg |= lchg
            self._held_pchg |= pchg
        elif sess is not None and self.chassis is not None and self._outputs_valid():
            lf, pf, lchg, pchg = self._desired_tables()
            lchg, pchg = lchg or self._held_lchg, pchg or self._held_pchg
            self._held_lchg = self._held_pchg = False
            # Zone flushes ride on a flow round; physical_flow_output (which depends on
            # ct_zones) would force one, so do the same while it is absent.
            pchg = pchg or st.ct.has_queued_flushes()
            fsw = self.stopwatches["flow-installation"]
            fsw.start()
            sess.put(lf, pf, self.seqno.get_req_cfg(), lchg, pchg, self._sb_meters())
            fsw.stop()
            ssw = self.stopwatches["ofctrl-seqno-run"]
            ssw.start()
            self.seqno.run(sess.cur_cfg)
            ssw.stop()
            self.loop_stats.gauges["flows_desired"] = len(lf) + len(pf)
            inst = len(sess.installed_lflows) + len(sess.installed_pflows)
            self.loop_stats.gauges["flows_installed"] = inst
            inflight = sess.in_flight()
            self.loop_stats.gauges["flows_in_flight"] = inflight
            if sess.can_put() and not inflight and sess.cur_cfg == self.seqno.get_req_cfg() \
                    and self.engine.run_count > 0 and not self.engine.force_recompute \
                    and self.monitor_key is not None and self.sb is not None \
                    and self.sb.conditions_settled():
                if self.loop_stats.first_install_ms is None:
                    self.loop_stats.first_install_done()
                    self.dump_profile(restart=True)
                gc_after_startup()
        elif sess is not None and self.chassis is not None and self._outputs_partial():
            # The flows of each slice stream into one open bundle, committed
            # by the put once the compute is complete (after the initial
            # install: only the additions, ofctrl.session).
            lf, pf, _, _ = self._desired_tables()
            fsw = self.stopwatches["flow-installation"]
            fsw.start()
            sess.put_partial(lf, pf, self._sb_meters())
            fsw.stop()
        if view is not None:
            sw = self.stopwatches["if-status-mgr-run"]
            sw.start()
            self.if_mgr.run(view, self.chassis, self.sb is None or self.sb.txn is None,
                            self.ovs.txn is None)
            sw.stop()

    def _cleanup_step(self, sb: dbmod.IdlLoop | None, br_int: Any | None) -> None:
        done = True
        if sb is not None:
            done &= binding_cleanup(sb.txn, sb.table("Port_Binding"), self.chassis)
            done &= chassis_cleanup(sb.txn, self.chassis, self.chassis_private)
            if sb.has_table("IGMP_Group"):          # ip-mcast.c igmp_group_cleanup
                from controller.pinctrl.mcast import cleanup as igmp_group_cleanup
                done &= igmp_group_cleanup(sb.txn, sb.table("IGMP_Group").values())
            if done:
                self.chassis = self.chassis_private = None
        done &= encaps_cleanup(self.ovs.txn, br_int)
        if done:
            self.done = True

    def _commit(self) -> None:
        if self.sb is not None:
            self.sb.commit()
            if self.sb.commit_failed:
                # Retried without a recompute: the next transaction replays
                # the Port_Bindings it wrote as tracked updates (db.py).
                self.sb.commit_failed = False
                log.info("OVNSB commit failed, retrying without recompute.")
        st = self.ovs.commit()
        if st == "success" or st == "unchanged":
            self.st.ct.db_committed()
        self.ovs.clear_tracked()
        if self.sb is not None:
            self.sb.clear_tracked()

    def _wait(self, poller: ovs.poller.Poller) -> None:
        self.ovs.wait(poller)
        if self.sb is not None:
            self.sb.wait(poller)
        if self.session is not None:
            self.session.wait(poller)
        if self.unixctl is not None:
            self.unixctl.wait(poller)
        if self.pinctrl is not None:
            self.pinctrl.wait(poller)
        self.lflow.cache.wait(poller)
        if self.st.rt.postponed:
            poller.timer_wait(500)
        if self.st.starting_up:
            poller.timer_wait(1000)     # notice the end of the start-up grace period
        if self._wake:
            poller.immediate_wake()
            self._wake = False
        poller.timer_wait(5000)     # coverage / stats housekeeping

    # ------------------------------------------------------------ main loop
    def loop(self) -> int:
        while not self.done:
            poller = ovs.poller.Poller()
            if self.paused:
                if self.unixctl is not None:
                    self.unixctl.run()
                    self.unixctl.wait(poller)
                poller.block()
                continue
            self.iteration(poller)
            if self.done:
                break
            poller.block()
        log.info(f"Exiting ovn-controller, resource cleanup: "
                 f"{'False (--restart)' if self.restart else 'True'}")
        return 0

    def close(self) -> None:
        if self.pinctrl is not None:
            self.pinctrl.close()
        if self.session is not None:
            self.session.close()
        if self.sb is not None:
            self.sb.close()
        self.ovs.close()
        if self.unixctl is not None:
            self.unixctl.close()


def run(options: Any) -> int:
    prof = start_profile()
    idl_fastpath.install()
    gc_startup()
    d = Daemon(options)
    d.profile = prof
    d.unixctl = create_server(d, getattr(options, "unixctl", None))
    ready = getattr(options, "ready", None)
    if callable(ready):
        ready()
    try:
        return d.loop()
    finally:
        d.close()
        d.dump_profile()
