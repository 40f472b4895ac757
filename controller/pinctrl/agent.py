"""The pinctrl facade the daemon drives: service thread + main-loop side.

Design note
-----------
One :class:`Pinctrl` per agent, created once br-int is known.  Per main-loop
iteration :meth:`Pinctrl.run` (called before the SB transaction commits and
the tracked changes are cleared) points the service at br-int's management
socket, acknowledges the service's wake-ups, follows the tracked
MAC_Binding/FDB changes, republishes the local view when Port_Bindings of
local datapaths changed, applies the pending SB work in this iteration's
transaction (``sb_writes``), releases buffered packets the new MAC_Bindings
resolve, and re-plans GARP/RARP announcements when an input may have
changed (``garp``; the announcer is one of the service's periodic senders),
and re-plans periodic IPv6 RAs when Port_Bindings changed (``ra``, another
periodic sender), and runs router BFD (``bfd_router.BfdSessions.sync`` every
iteration, as bfd_monitor_run; the session table is a periodic sender too),
and runs the DHCPv6 prefix-delegation states every iteration
(``prefix_delegation``: re-planned on Port_Binding/datapath changes,
delegated prefixes written to ``ipv6_ra_pd_list``), and syncs IP_Multicast /
IGMP_Group with the snooping tables (``mcast``, whose querier is another
periodic sender).
:meth:`Pinctrl.wait` arms the wake-ups (service notifications, the next
delayed MAC binding, leftover work) and :meth:`Pinctrl.close` stops the
thread.  Nothing here may take the agent down: a failing pass is logged
(rate-limited) and the next iteration starts afresh.

The periodic services and their modules are built on first use (issue 16:
a small chassis needs none of them): GARP when a local datapath has a
localnet port, RA when a Port_Binding asks for periodic RAs, BFD when there
is a BFD row, PD when a local port asks for prefix delegation, IGMP when
snooping is enabled on a datapath or IGMP_Group has rows, LB health checks
when there is a Service_Monitor row; also before a packet-in of their
opcode (``registry.prepare``) and when read as attributes.  Each skip is
taken only where the service, had it been built, would have done nothing:
its planner would give empty inputs and an empty service ignores them.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import uuid as uuidlib
from typing import TYPE_CHECKING, Any, Callable, Mapping, cast

from controller.diag.coverage import COVERAGE, Coverage
from controller.lflow.actions.base import OP_BFD_MSG, OP_DHCP6_SERVER, OP_HANDLE_SVC_CHECK, OP_IGMP
from controller.pinctrl import registry
from controller.pinctrl.buffered import BufferedPackets
from controller.pinctrl.sb_writes import (
    PendingWork,
    SbWriter,
    SnapshotPublisher,
    _now_ms,
)
from controller.pinctrl.service import PinctrlService
from controller.vlog import RateLimiter, get_logger
from physical.inputs import opt_first

if TYPE_CHECKING:
    from controller.pinctrl.bfd_router import BfdSessions, BfdSpec
    from controller.pinctrl.garp import GarpAnnouncer
    from controller.pinctrl.mcast import McastSnoop
    from controller.pinctrl.prefix_delegation import PdInputs, PrefixDelegation
    from controller.pinctrl.ra import RaSender
    from controller.pinctrl.svc_monitor import SvcMonitors

__all__ = ["Pinctrl"]

log = get_logger("pinctrl")
_rl_failed = RateLimiter(per_minute=6, burst=1)
# SB tables GARP planning reads (ports, residency of gateway ports, datapath options).
_BFD_TABLES = ("BFD", "Port_Binding", "Chassis", "HA_Chassis_Group", "HA_Chassis",
               "Datapath_Binding")
_GARP_TABLES = ("Port_Binding", "Chassis", "HA_Chassis_Group", "HA_Chassis",
                "Gateway_Chassis", "Datapath_Binding")


def _attached_or(module: str, build: Callable[[], object]) -> None:
    """Before a packet-in of a stateful handler: build the agent's state for it
    unless one is attached already (the handler modules' ``attach``)."""
    mod = sys.modules.get("controller.pinctrl." + module)
    if mod is None or not getattr(mod, "_ACTIVE", None):
        build()


# Periodic services built on first use: attribute of Pinctrl -> (module in
# controller.pinctrl, class, whether the module's packet-in handler is
# attached to the instance (attached ones also wake the main loop), and
# further keyword arguments as keyword -> name of a Pinctrl method).
_SERVICES: dict[str, tuple[str, str, bool, tuple[tuple[str, str], ...]]] = {
    "_garp": ("garp", "GarpAnnouncer", False, ()),
    "_ra": ("ra", "RaSender", False, ()),
    "_svc_monitors": ("svc_monitor", "SvcMonitors", True, ()),
    "_bfd": ("bfd_router", "BfdSessions", True, ()),
    "_pd": ("prefix_delegation", "PrefixDelegation", True, (("also_inject", "_announcing"),)),
    "_mcast": ("mcast", "McastSnoop", True, ()),
}


class Pinctrl:
    """What the daemon drives: the service thread plus the main-loop side.

    ``run()`` once per iteration (before the SB transaction commits and the
    tracked changes are cleared), ``wait()`` before blocking, ``close()`` on
    exit.  ``threaded=False`` runs the service from the main poller (tests).
    """

    def __init__(self, coverage: Coverage = COVERAGE, threaded: bool = True,
                 service: Any = None) -> None:
        self.work = PendingWork(coverage)
        self.buffered = BufferedPackets(coverage)
        self.service = service or PinctrlService(self.work, self.buffered, coverage)
        self.writer = SbWriter()
        self.snapshots = SnapshotPublisher(self.service.publish)
        # The periodic services (and the modules they live in) are built on
        # first use: when their SB input is there, when a packet-in of their
        # opcode arrives, or when read (tests).  See _needs().
        self._build_lock = threading.RLock()
        self._garp: GarpAnnouncer | None = None
        self._svc_monitors: SvcMonitors | None = None
        self._ra: RaSender | None = None
        self._bfd: BfdSessions | None = None
        self._pd: PrefixDelegation | None = None
        self._mcast: McastSnoop | None = None
        self._svc_key: Any = False
        self._garp_key: Any = None
        self._ra_key: Any = ()          # () until the first plan
        self._bfd_key: Any = None
        self._bfd_specs: list[BfdSpec] = []
        self._bfd_rerun = False
        self._pd_key: Any = ()
        self._pd_inputs: PdInputs | None = None
        self._mcast_key: Any = None
        self._mcast_wrote = False
        for op, module, build in (
                (OP_HANDLE_SVC_CHECK, "svc_monitor", lambda: self.svc_monitors),
                (OP_BFD_MSG, "bfd_router", lambda: self.bfd),
                (OP_DHCP6_SERVER, "prefix_delegation", lambda: self.pd),
                (OP_IGMP, "mcast", lambda: self.mcast)):
            registry.prepare(op, functools.partial(_attached_or, module, build))
        self.threaded = threaded
        self._had_txn = False
        self._symtab: Any = None

    # ------------------------------------------------------------ lazy services
    def _built(self, attr: str) -> Any:
        """The periodic service kept in `attr`, built (and its module
        imported) on first use; see _SERVICES."""
        with self._build_lock:
            svc = getattr(self, attr)
            if svc is None:
                module_name, class_name, attached, extra = _SERVICES[attr]
                module = importlib.import_module(f"controller.pinctrl.{module_name}")
                kwargs = {kw: getattr(self, method) for kw, method in extra}
                cls = getattr(module, class_name)
                if attached:
                    svc = cls(notify_service=self.service.wake,
                              notify_main=self.service.notify_main, **kwargs)
                    module.attach(svc)
                else:
                    svc = cls(notify=self.service.wake, **kwargs)
                self.service.add_periodic(svc)
                setattr(self, attr, svc)
            return svc

    @property
    def garp(self) -> GarpAnnouncer:
        return cast("GarpAnnouncer", self._built("_garp"))

    @property
    def svc_monitors(self) -> SvcMonitors:
        return cast("SvcMonitors", self._built("_svc_monitors"))

    @property
    def ra(self) -> RaSender:
        return cast("RaSender", self._built("_ra"))

    @property
    def bfd(self) -> BfdSessions:
        return cast("BfdSessions", self._built("_bfd"))

    @property
    def pd(self) -> PrefixDelegation:
        return cast("PrefixDelegation", self._built("_pd"))

    @property
    def mcast(self) -> McastSnoop:
        return cast("McastSnoop", self._built("_mcast"))

    def _announcing(self) -> bool:
        """Periodic RAs or GARPs are being sent (PD's also_inject)."""
        ra, garp = self._ra, self._garp
        return bool((ra is not None and ra.ports()) or (garp is not None and garp.keys()))

    def run(self, target: str, sb: Any, idx: Any, chassis: Any,
            local_datapaths: Mapping[uuidlib.UUID, Any], br_int: Any = None,
            ovs_changed: bool = True, active_tunnels: frozenset[str] = frozenset()) -> None:
        try:
            self._run(target, sb, idx, chassis, local_datapaths, br_int, ovs_changed,
                      active_tunnels)
        except Exception:           # pinctrl must never take the agent down
            log.err_rl(_rl_failed, "pinctrl main-loop pass failed", exc_info=True)

    def _run(self, target: str, sb: Any, idx: Any, chassis: Any,
             local_datapaths: Mapping[uuidlib.UUID, Any], br_int: Any, ovs_changed: bool,
             active_tunnels: frozenset[str]) -> None:
        svc = self.service
        svc.set_target(target)
        if self.threaded:
            svc.start()
        else:
            svc.run()
        svc.main_run()
        if sb is None:
            self._had_txn = False
            return
        tracker = sb.tracker
        tables = {n: sb.table(n) for n in ("MAC_Binding", "FDB", "Controller_Event")
                  if sb.has_table(n)}
        self.writer.track(tables, tracker)
        if chassis is not None:
            dns = (lambda: sb.table("DNS").values()) if sb.has_table("DNS") else None
            self.snapshots.run(chassis.name, local_datapaths, idx.pbs_on_datapath, tracker, dns)
        txn = sb.txn
        self._had_txn = txn is not None and chassis is not None
        batch = self.work.take(self._had_txn)
        if batch:
            mb_cols = sb.idl.tables["MAC_Binding"].columns if sb.has_table("MAC_Binding") else {}
            try:
                self.writer.apply(batch, txn, sb.idl.tables, idx, chassis,
                                  "timestamp" in mb_cols, self.work.done_activation,
                                  tables.get("Controller_Event", {}).values())
            except Exception:       # a bug here must not take the agent down
                log.exception("pinctrl SB writes failed; batch dropped")
        svc_rows = sb.table("Service_Monitor") if sb.has_table("Service_Monitor") else None
        # sync_svc_monitors (no monitor table built while there is no row)
        if svc_rows is not None and (svc_rows or self._svc_monitors is not None):
            from controller.pinctrl.svc_monitor import monitor_specs
            svc_key = chassis.uuid if chassis is not None else None
            if svc_key != self._svc_key or tracker.reset \
                    or tracker.has_changes("Service_Monitor") or tracker.has_changes("Port_Binding"):
                self._svc_key = svc_key
                self.svc_monitors.update(monitor_specs(svc_rows.values(), chassis,
                                                       idx.pb_by_name.get))
            if self._had_txn:
                self.svc_monitors.write_status(svc_rows)
        if len(self.buffered):
            tc = tracker.tables.get("MAC_Binding")
            rows = [tr.row for tr in tc.new_or_updated()] if tc else []
            svc.send(self.buffered.release(rows, idx.pb_by_name.get))
        self._run_garp(sb, idx, chassis, local_datapaths, br_int, ovs_changed, active_tunnels)
        self._run_ra(sb, idx, chassis)
        self._run_bfd(sb, idx, chassis, active_tunnels)
        self._run_pd(sb, idx, chassis, local_datapaths, active_tunnels)
        self._run_mcast(sb, idx, chassis, local_datapaths)

    def _run_bfd(self, sb: Any, idx: Any, chassis: Any, active_tunnels: frozenset[str]) -> None:
        """bfd_monitor_run: sessions follow the SB BFD rows every iteration;
        the rows are re-filtered only when an input changed."""
        self._bfd_rerun = False
        if chassis is None or not sb.has_table("BFD"):     # C: no pinctrl_run then
            return
        t = sb.tracker
        rows = sb.table("BFD")
        if not rows and self._bfd is None:      # no session can exist
            return
        key = (chassis.uuid, active_tunnels)
        if key != self._bfd_key or t.reset or any(t.has_changes(n) for n in _BFD_TABLES):
            from controller.pinctrl import bfd_router
            self._bfd_key = key
            self._bfd_specs = bfd_router.bfd_specs(rows.values(), chassis, idx.pb_by_name.get,
                                                   active_tunnels)
        writes, self._bfd_rerun = self.bfd.sync(self._bfd_specs, self._had_txn)
        if writes:
            self.bfd.write_status(rows, writes)

    def _run_pd(self, sb: Any, idx: Any, chassis: Any,
                local_datapaths: Mapping[uuidlib.UUID, Any],
                active_tunnels: frozenset[str]) -> None:
        """prepare_ipv6_prefixd: re-planned when an input may have changed,
        the states refreshed (and PENDING ones written) every iteration."""
        t = sb.tracker
        key = (chassis.uuid if chassis is not None else None, frozenset(local_datapaths),
               active_tunnels)
        if key != self._pd_key or t.reset or any(t.has_changes(n) for n in _GARP_TABLES):
            self._pd_key = key
            try:
                # only ports of local datapaths can qualify: no scan of the whole table
                local_pbs = [pb for u in local_datapaths for pb in idx.pbs_on_datapath(u)]
                if self._pd is None and (chassis is None or not any(
                        "ipv6_prefix_delegation" in pb.options for pb in local_pbs)):
                    self._pd_inputs = None      # no port asks: nothing to build
                else:
                    from controller.pinctrl.prefix_delegation import PdInputs, pd_inputs
                    self._pd_inputs = pd_inputs(local_pbs, chassis, idx.pb_by_name.get,
                                                local_datapaths, active_tunnels) \
                        if chassis is not None else PdInputs()
            except Exception:
                log.exception("IPv6 prefix delegation planning failed")
                return
        from_inputs = self._pd_inputs
        if from_inputs is None:
            if self._pd is None:
                return
            from controller.pinctrl.prefix_delegation import PdInputs
            from_inputs = PdInputs()
        from controller.pinctrl.prefix_delegation import write_pd_lists
        txn = sb.txn if chassis is not None else None
        writes = self.pd.update(from_inputs, _now_ms(), txn is not None)
        if writes and txn is not None:
            write_pd_lists(writes, idx.pb_by_name.get)

    def _run_mcast(self, sb: Any, idx: Any, chassis: Any,
                   local_datapaths: Mapping[uuidlib.UUID, Any]) -> None:
        """ip_mcast_sync (needs the SB transaction and the chassis): IP_Multicast
        config to the snooping tables, their groups to IGMP_Group.  Skipped
        while none of its inputs changed and the last pass wrote nothing."""
        txn = sb.txn
        if chassis is None or txn is None or not sb.has_table("IP_Multicast") \
                or not sb.has_table("IGMP_Group"):
            return
        t = sb.tracker
        local = {int(ld.key): ld.datapath for ld in local_datapaths.values()}
        key = (chassis.uuid, frozenset(local))
        changed = key != self._mcast_key or t.reset or any(
            t.has_changes(n) for n in ("IP_Multicast", "IGMP_Group", "Port_Binding",
                                       "Datapath_Binding"))
        if self._mcast is None:
            if not changed:
                return
            if not sb.table("IGMP_Group") and not any(
                    opt_first(r.enabled) for r in sb.table("IP_Multicast").values()):
                # No snooping enabled and no group to clean: a snooping table
                # would hold disabled entries only; none is built.
                self._mcast_key = key
                return
        if not (self.mcast.dirty or self._mcast_wrote or changed):
            return
        from controller.pinctrl.mcast import configs_from_rows
        self._mcast_key = key

        def lport(dp_key: int, port_key: int) -> Any:
            dp = idx.dp_by_key.get(dp_key)
            return idx.pb_by_key.get((dp.uuid, port_key)) if dp is not None else None

        try:
            _changed, flush = self.mcast.configure(
                configs_from_rows(sb.table("IP_Multicast").values(), local))
            self._mcast_wrote = self.mcast.sync(txn, sb.idl.tables["IGMP_Group"],
                                                sb.table("IGMP_Group").values(), chassis,
                                                local, lport, flush) > 0
        except Exception:
            self._mcast_wrote = True            # retry next iteration
            log.err_rl(_rl_failed, "IGMP_Group sync failed", exc_info=True)

    def _run_ra(self, sb: Any, idx: Any, chassis: Any) -> None:
        """Periodic RAs (prepare_ipv6_ras): re-planned when Port_Bindings or
        datapaths changed; the sender (run by the service) sends them."""
        t = sb.tracker
        key = chassis.uuid if chassis is not None else None
        if key == self._ra_key and not t.reset and not t.has_changes("Port_Binding") \
                and not t.has_changes("Datapath_Binding"):
            return
        self._ra_key = key
        pbs = sb.table("Port_Binding").values() \
            if chassis is not None and sb.has_table("Port_Binding") else ()
        if self._ra is None and not any("ipv6_ra_send_periodic" in pb.options for pb in pbs):
            return                  # no port sends periodic RAs: no sender to build
        from controller.pinctrl.ra import RaInputs, ra_inputs
        try:
            inputs = ra_inputs(pbs, idx.pb_by_name.get) if pbs else RaInputs()
        except Exception:
            log.exception("IPv6 RA planning failed")
            return
        self.ra.update(inputs, _now_ms())

    def _run_garp(self, sb: Any, idx: Any, chassis: Any,
                  local_datapaths: Mapping[uuidlib.UUID, Any], br_int: Any, ovs_changed: bool,
                  active_tunnels: frozenset[str]) -> None:
        """GARP/RARP announcements (send_garp_rarp_prepare): re-planned when an
        input may have changed; the announcer (run by the service) sends them."""
        t = sb.tracker
        key = (chassis.uuid if chassis is not None else None, frozenset(local_datapaths),
               active_tunnels)
        if key == self._garp_key and not ovs_changed and not t.reset \
                and not any(t.has_changes(n) for n in _GARP_TABLES):
            return
        self._garp_key = key
        # Everything announced hangs off a local datapath with a localnet port.
        with_localnet = any(getattr(ld, "localnet_port", None) is not None
                            for ld in local_datapaths.values())
        if not with_localnet and self._garp is None:
            return                  # nothing to announce: no announcer to build
        from controller.pinctrl.garp import GarpInputs, garp_inputs
        vifs = []
        if br_int is not None and with_localnet:
            for port in br_int.ports:
                if port.name == br_int.name:
                    continue
                for iface in port.interfaces:
                    try:
                        iface_id = iface.external_ids.get("iface-id")
                        ofport = opt_first(iface.ofport)
                    except AttributeError:      # inserted by this iteration's txn
                        continue
                    if iface_id and isinstance(ofport, int) and ofport > 0:
                        vifs.append(iface_id)
        try:
            inputs = garp_inputs(chassis, idx, local_datapaths, set(active_tunnels), vifs) \
                if with_localnet else GarpInputs()
        except Exception:
            log.exception("GARP planning failed")
            return
        txn = sb.txn if chassis is not None else None
        local = self.garp.update(inputs, _now_ms(), txn is not None)
        if local and txn is not None:
            try:
                self.writer.apply_local(local, txn, sb.idl.tables, idx,
                                        "timestamp" in sb.idl.tables["MAC_Binding"].columns)
            except Exception:
                log.exception("GARP local MAC_Binding writes failed")

    def wait(self, poller: Any) -> None:
        self.service.main_wait(poller)
        if self._had_txn:
            at = self.work.next_commit_ms()
            if at is not None:
                poller.timer_wait_until(at)
            if self.work.has_immediate():       # more than one txn's worth queued
                poller.immediate_wake()
        if self._bfd_rerun:     # a new BFD session leaves admin_down on the next run
            poller.immediate_wake()
        if not self.threaded:
            self.service.wait(poller)

    def inject(self, microflow: str, br_int: Any, sb_table: Callable[[str], Any]) -> str | None:
        """``inject-pkt``: None when sent, else the error text C replies."""
        from controller.lflow.expr.nodes import const_set_from_integers, const_set_from_strings
        from controller.lflow.symtab import ovn_symtab
        from controller.pinctrl.inject import inject_message
        conn = self.service.conn
        if conn is None or not conn.is_connected():
            return "OpenFlow channel not ready."
        if self._symtab is None:
            self._symtab = ovn_symtab()

        def lookup_port(name: str) -> int | None:
            for port in br_int.ports:
                for iface in port.interfaces:
                    if iface.external_ids.get("iface-id") != name:
                        continue
                    ofport = opt_first(iface.ofport)
                    if isinstance(ofport, int) and 1 <= ofport <= 0xFF00:
                        return ofport
            return None

        addr_sets = {a.name: const_set_from_integers(list(a.addresses))
                     for a in sb_table("Address_Set").values()}
        port_groups = {pg.name: const_set_from_strings(list(pg.ports))
                       for pg in sb_table("Port_Group").values()}
        msg, error = inject_message(microflow, self._symtab, lookup_port, addr_sets, port_groups)
        if msg is None:
            return error
        self.service.send([msg])
        return None

    @property
    def activated_ports(self) -> frozenset[tuple[int, int]]:
        """(dp key, port key) of ports a RARP activated on this chassis."""
        return frozenset(self.work.activated)

    def close(self) -> None:
        self.service.close()
