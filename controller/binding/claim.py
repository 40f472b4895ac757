"""Port binding: which logical ports live on this chassis (OVN 23.03 binding.c).

Design note
-----------
:class:`RuntimeData` is the data of the ``runtime_data`` engine node: the
local VIF bindings (iface-id -> OVS Interface with ofport > 0), the lports
bound here, local datapaths (with patch/l3gateway peers), related lports
(names and ``<dp key>_<port key>`` ids) and, per run, tracked changes.

* :func:`binding_run` is the full recompute: build bindings from br-int, then
  consider every Port_Binding once (the SB table is conditionally monitored,
  so this is the local neighbourhood, not the whole cloud).
* ``controller.binding.incremental``'s ``handle_ovs_interface_changes`` and
  ``handle_port_binding_changes`` re-consider only the lports touched by
  tracked OVS Interface / SB Port_Binding changes; they return False when a
  change needs a full recompute (type change, topology change on a local
  datapath), which the engine then performs.

Claims of plain VIFs go through the if-status manager (``Port_Binding.up``
and ``ovn-installed`` only after the flows are acked); container, virtual
and non-VIF lports (l2/l3 gateway, chassisredirect, external) are written
directly.  A lport re-claimed from another chassis less than 500 ms after we
claimed it is postponed (anti flip-flop).  Log lines follow the C agent.

Sliced claims (issue 15).  A cold start claims every VIF of the chassis in
one pass (each claim writes the Port_Binding, logs two lines, creates its
if-status entry).  :func:`binding_run` stops claiming once the pass has
spent ``RuntimeData.slice_ms`` of CPU, and so do the incremental handlers
(per engine run, from their first claim; at a cold start the ports usually
arrive as one tracked SB update): the VIF claims left (new claims through
the if-status manager only, and the containers behind them) go to
``RuntimeData.claim_queue``, in order, and are treated like postponed ones
meanwhile (local datapath, related and local lport, not bound here).  Everything else of the
pass (local datapaths, related ports, already claimed ports, non-VIF
lports) is complete.  ``controller.binding.incremental.claim_queued`` then
claims one budgeted slice per iteration as tracked changes, committed with
that iteration's transactions; a claim made by a handler meanwhile leaves
the queue.  The flows are installed only once the queue is empty
(``controller.nodes.runtime_data``), so the switch sees the same tables as
after one long pass.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from typing import Any, Iterable, Mapping

import structlog

from controller.binding.if_status import IfStatusMgr
from controller.binding.local_data import (
    LocalDatapath,
    LportType,
    TrackedDatapaths,
    TrackedType,
    add_local_datapath,
    ha_group_contains,
    ha_group_is_active,
    lport_type,
    opt_first,
    related_id,
)
from controller.ovsdb.indexes import SbIndexes
from controller.vlog import RateLimiter
from physical.lport import CanBind, can_bind_here  # noqa: F401  (CanBind re-exported)
from physical.inputs import same_chassis

log = structlog.get_logger("binding")
_rl_notclaim = RateLimiter(per_minute=60, burst=5)
_rl_dup = RateLimiter(per_minute=1, burst=5)
_rl_unknown = RateLimiter(per_minute=1, burst=5)

CLAIM_TIME_THRESHOLD_MS = 500
# CPU a binding pass, then each later slice, may spend before the VIF claims
# still to make wait for the next iteration (see "Sliced claims" above).
CLAIM_SLICE_MS = 50.0
OVN_INSTALLED = "ovn-installed"
OVN_INSTALLED_TS = "ovn-installed-ts"
TUNNEL_TYPES = frozenset(("geneve", "vxlan", "stt", "patch", "gre", "erspan", "ip6erspan"))


def pb_chassis(pb: Any) -> Any | None:
    return opt_first(pb.chassis)


def is_additional_chassis(pb: Any, chassis: Any) -> bool:
    return any(same_chassis(c, chassis) for c in pb.additional_chassis)


def iface_ofport(iface: Any) -> int:
    """OpenFlow port of an Interface; 0 while unknown (also for rows this
    iteration's transaction just inserted, which have no ofport yet)."""
    try:
        v = opt_first(iface.ofport)
    except AttributeError:
        return 0
    return int(v) if v is not None else 0


class LocalBinding:
    """An OVS interface with ``external_ids:iface-id`` on br-int."""

    __slots__ = ("name", "iface", "pb", "ptype", "children")

    def __init__(self, name: str, iface: Any | None) -> None:
        self.name = name
        self.iface = iface
        self.pb: Any | None = None           # primary lport (VIF)
        self.ptype: LportType | None = None
        self.children: dict[str, tuple[Any, LportType]] = {}   # container/virtual


class RuntimeData:
    def __init__(self) -> None:
        self.bindings: dict[str, LocalBinding] = {}
        self.iface_shadow: dict[uuidlib.UUID, str] = {}   # iface uuid -> iface-id
        self.local_datapaths: dict[uuidlib.UUID, LocalDatapath] = {}
        self.local_lports: set[str] = set()
        self.related_lports: set[str] = set()
        self.related_lport_ids: set[str] = set()
        self.bound_here: set[str] = set()        # lports with chassis == us (non-VIF too)
        self.active_tunnels: set[str] = set()
        self.claim_ts: dict[str, int] = {}
        self.postponed: set[str] = set()
        # Sliced claims: VIF lports whose claim waits for a later slice (in
        # table order), the CPU budget of a slice (None: no slicing) and the
        # process_time() at which the binding pass under way stops claiming.
        self.claim_queue: dict[str, None] = {}
        self.slice_ms: float | None = CLAIM_SLICE_MS
        self.claim_deadline: float | None = None
        self.tracked = False
        self.tracked_dps = TrackedDatapaths()
        self.local_lports_changed = False
        self.related_lports_changed = False

    def clear_tracked(self) -> None:
        self.claim_deadline = None      # a new engine run: a new claim budget
        self.tracked = False
        self.tracked_dps.clear()
        self.local_lports_changed = False
        self.related_lports_changed = False

    def reset(self) -> None:
        keep_ts, keep_post, keep_slice = self.claim_ts, self.postponed, self.slice_ms
        self.__init__()  # type: ignore[misc]
        self.claim_ts, self.postponed, self.slice_ms = keep_ts, keep_post, keep_slice

    def dump_local_bindings(self) -> str:
        out = ["Local bindings:\n"]
        for name in sorted(self.bindings):
            lb = self.bindings[name]
            n = (1 if lb.pb is not None else 0) + len(lb.children)
            ifname = lb.iface.name if lb.iface is not None else "NULL"
            out.append(f"name: [{name}], OVS interface name : [{ifname}], "
                       f"num binding lports : [{n}]\n")
            out.append(f"primary lport : [{lb.pb.logical_port if lb.pb else 'NULL'}]\n")
            for child, (_, ct) in sorted(lb.children.items()):
                out.append(f"{ct.value.lower()} lport : [{child}]\n")
            out.append("----------------------------------------\n")
        return "".join(out)


class BindingCtx:
    """Inputs of one binding pass."""

    def __init__(self, chassis: Any, idx: SbIndexes, pb_rows: Mapping[Any, Any],
                 br_int: Any | None, sb_readonly: bool, ovs_readonly: bool,
                 if_mgr: IfStatusMgr, bridge_mappings: Mapping[str, str],
                 now_ms: int | None = None, active_tunnels: Iterable[str] = ()) -> None:
        self.chassis = chassis
        self.idx = idx
        self.pb_rows = pb_rows
        self.br_int = br_int
        self.sb_readonly = sb_readonly
        self.ovs_readonly = ovs_readonly
        self.if_mgr = if_mgr
        self.bridge_mappings = dict(bridge_mappings)
        self.now_ms = now_ms if now_ms is not None else int(time.monotonic() * 1000)
        self.active_tunnels = set(active_tunnels)


class Binder:
    """One binding pass over RuntimeData (also the if-status BindingView)."""

    def __init__(self, ctx: BindingCtx, rt: RuntimeData, track: bool,
                 defer: bool = False) -> None:
        self.ctx = ctx
        self.rt = rt
        self.tracked: TrackedDatapaths | None = rt.tracked_dps if track else None
        # `defer`: new VIF claims past the engine run's budget are queued.
        self.defer = defer

    # ---------------------------------------------------------- helpers
    def _local_lport_add(self, name: str) -> None:
        if name not in self.rt.local_lports:
            self.rt.local_lports.add(name)
            self.rt.local_lports_changed = True

    def _local_lport_remove(self, name: str) -> None:
        if name in self.rt.local_lports:
            self.rt.local_lports.discard(name)
            self.rt.local_lports_changed = True

    def _related_add(self, pb: Any, dp: Any | None = None, name: str | None = None) -> None:
        """`dp` and `name`: the lport's datapath and name when the caller
        read them already (each column read converts the IDL datum)."""
        if dp is None:
            dp = pb.datapath
            if dp is None:
                return
        rid = related_id(int(dp.tunnel_key), int(pb.tunnel_key))
        if rid not in self.rt.related_lport_ids:
            self.rt.related_lport_ids.add(rid)
            self.rt.related_lports_changed = True
            if self.tracked is not None:
                self.tracked.add_lport(pb, TrackedType.NEW)
        self.rt.related_lports.add(name if name is not None else pb.logical_port)

    def _related_remove(self, pb: Any) -> None:
        dp = pb.datapath
        if dp is not None:
            rid = related_id(int(dp.tunnel_key), int(pb.tunnel_key))
            if rid in self.rt.related_lport_ids:
                self.rt.related_lport_ids.discard(rid)
                self.rt.related_lports_changed = True
        self.rt.related_lports.discard(pb.logical_port)

    def _track(self, pb: Any, ttype: TrackedType) -> None:
        if self.tracked is not None:
            self.tracked.add_lport(pb, ttype)

    def _add_dp(self, pb: Any, dp: Any | None = None) -> None:
        if dp is None:
            dp = pb.datapath
        if dp is not None and dp.uuid not in self.rt.local_datapaths:
            add_local_datapath(self.ctx.idx, dp, self.ctx.chassis, self.rt.local_datapaths,
                               self.tracked)

    # ---------------------------------------------------------- bindings
    def build_local_bindings(self) -> None:
        br = self.ctx.br_int
        if br is None:
            return
        for port in br.ports:
            for iface in port.interfaces:
                self._binding_from_iface(iface, br.name)

    def _binding_from_iface(self, iface: Any, br_name: str) -> str | None:
        if iface.name == br_name or iface.type in TUNNEL_TYPES:
            return None
        iface_id = iface.external_ids.get("iface-id")
        if not iface_id or iface_ofport(iface) <= 0:
            return None
        lb = self.rt.bindings.get(iface_id)
        if lb is not None and lb.iface is not None and lb.iface.uuid != iface.uuid:
            log.warn_rl(_rl_dup, f"Interface {iface.name} has the same iface-id {iface_id} as "
                        f"{lb.iface.name}; ignoring it")
            return None
        if lb is None:
            lb = self.rt.bindings[iface_id] = LocalBinding(iface_id, iface)
        else:
            lb.iface = iface
        self.rt.iface_shadow[iface.uuid] = iface_id
        # Every local iface-id is a local lport: the SB monitor condition asks
        # for its Port_Binding even before we know it.
        self._local_lport_add(iface_id)
        return iface_id

    # ---------------------------------------------------------- consider
    def consider(self, pb: Any, lt: LportType | None = None) -> bool:
        """`lt`: the lport's type when the caller classified it already."""
        if lt is None:
            lt = lport_type(pb)
        if lt in (LportType.PATCH, LportType.VTEP):
            self._related_add(pb)
            return True
        if lt is LportType.LOCALPORT:
            return self._consider_localport(pb)
        if lt is LportType.VIF:
            return self._consider_vif(pb)
        if lt is LportType.CONTAINER:
            return self._consider_container(pb)
        if lt is LportType.VIRTUAL:
            return self._consider_virtual(pb)
        if lt is LportType.L2GATEWAY:
            return self._consider_nonvif(
                pb, pb.options.get("l2gateway-chassis") == self.ctx.chassis.name)
        if lt is LportType.L3GATEWAY:
            return self._consider_nonvif(
                pb, pb.options.get("l3gateway-chassis") == self.ctx.chassis.name)
        if lt in (LportType.CHASSISREDIRECT, LportType.EXTERNAL):
            return self._consider_ha(pb)
        if lt is LportType.LOCALNET:
            self._local_lport_add(pb.logical_port)
            self._related_add(pb)
            return True
        if lt is LportType.UNKNOWN:
            # Skipped (not bound, no flows): a newer northd's port type.
            log.warn_rl(_rl_unknown, f"Unknown port binding type [{pb.type}] for port binding "
                        f"[{pb.logical_port}]. Does the ovn-controller need an update ?")
        return True

    def _consider_localport(self, pb: Any) -> bool:
        lb = self.rt.bindings.get(pb.logical_port)
        if lb is None:
            return True
        lb.pb, lb.ptype = pb, LportType.LOCALPORT
        cb = can_bind_here(self.ctx.chassis, pb)
        if cb is not CanBind.CANNOT:
            if not self._release(pb):
                return False
        self._related_add(pb)
        return True

    def _consider_vif(self, pb: Any) -> bool:
        name = pb.logical_port
        lb = self.rt.bindings.get(name)
        bound = None
        if lb is not None and lb.iface is not None:
            ver = pb.options.get("iface-id-ver")
            if ver and lb.iface.external_ids.get("iface-id-ver") != ver:
                lb.pb = None
            else:
                lb.pb, lb.ptype = pb, LportType.VIF
                bound = lb
        return self._consider_vif_(pb, can_bind_here(self.ctx.chassis, pb), bound, None, name)

    def _consider_vif_(self, pb: Any, cb: CanBind, lb: LocalBinding | None,
                       parent: Any | None, name: str | None = None) -> bool:
        me = self.ctx.chassis
        if name is None:
            name = pb.logical_port
        bound = lb is not None and lb.iface is not None
        if bound:
            assert lb is not None
            if cb is not CanBind.CANNOT:
                if not self._claim(pb, parent, lb.iface, notify_up=parent is None, cb=cb):
                    return False
                dp = pb.datapath
                self._add_dp(pb, dp)
                if dp is not None:
                    self._related_add(pb, dp, name)
                self._local_lport_add(name)
                return True     # bound here, nothing to release
            ch = pb_chassis(pb)
            log.info_rl(_rl_notclaim, f"Not claiming lport {name}, chassis {me.name} "
                        f"requested-chassis {pb.options.get('requested-chassis', '[]')} "
                        f"pb->chassis {ch.name if ch is not None else ''}")
        if same_chassis(pb_chassis(pb), me) or is_additional_chassis(pb, me) \
                or self.ctx.if_mgr.state_of(name) is not None:
            return self._release(pb)
        return True

    def _parent_ok(self, parent_name: str) -> tuple[LocalBinding, Any | None]:
        plb = self.rt.bindings.get(parent_name)
        if plb is None:
            plb = self.rt.bindings[parent_name] = LocalBinding(parent_name, None)
        if plb.pb is None:
            ppb = self.ctx.idx.pb_by_name.get(parent_name)
            if ppb is not None and lport_type(ppb) is LportType.VIF and plb.iface is not None:
                self._consider_vif(ppb)
        return plb, plb.pb

    def _consider_container(self, pb: Any) -> bool:
        parent_name = opt_first(pb.parent_port)
        plb, ppb = self._parent_ok(parent_name)
        for other in self.rt.bindings.values():
            if other is not plb and pb.logical_port in other.children:
                del other.children[pb.logical_port]
                self._related_remove(pb)
        plb.children[pb.logical_port] = (pb, LportType.CONTAINER)
        if ppb is None or plb.ptype is not LportType.VIF:
            if same_chassis(pb_chassis(pb), self.ctx.chassis):
                return self._release(pb)
            return True
        return self._consider_vif_(pb, can_bind_here(self.ctx.chassis, pb), plb, ppb)

    def _consider_virtual(self, pb: Any) -> bool:
        vp = opt_first(pb.virtual_parent)
        plb = self.rt.bindings.get(vp) if vp else None
        bound = None
        if plb is not None:
            if plb.pb is None:
                ppb = self.ctx.idx.pb_by_name.get(vp)
                if ppb is not None and lport_type(ppb) is LportType.VIF:
                    self._consider_vif(ppb)
            if plb.pb is not None and same_chassis(pb_chassis(plb.pb), self.ctx.chassis):
                plb.children[pb.logical_port] = (pb, LportType.VIRTUAL)
                bound = plb
        if not self._consider_vif_(pb, CanBind.MAIN, bound, bound.pb if bound else None):
            return False
        if bound is None:
            for other in self.rt.bindings.values():
                other.children.pop(pb.logical_port, None)
            self._related_remove(pb)
        return True

    def _consider_ha(self, pb: Any) -> bool:
        grp = opt_first(pb.ha_chassis_group)
        is_member = ha_group_contains(grp, self.ctx.chassis)
        ours = is_member and ha_group_is_active(grp, self.rt.active_tunnels, self.ctx.chassis)
        ok = self._consider_nonvif(pb, ours)
        if is_member and not ours:
            # A standby member keeps the datapath local (and the port related).
            self._add_dp(pb)
            self._related_add(pb)
        return ok

    def _consider_nonvif(self, pb: Any, ours: bool) -> bool:
        me = self.ctx.chassis
        if ours:
            self._local_lport_add(pb.logical_port)
            self._add_dp(pb)
            self._related_add(pb)
            return self._claim(pb, None, None, notify_up=False, cb=CanBind.MAIN)
        if same_chassis(pb_chassis(pb), me) or is_additional_chassis(pb, me):
            return self._release(pb)
        return True

    # ---------------------------------------------------------- claim/release
    def _maybe_postpone(self, name: str) -> bool:
        last = self.rt.claim_ts.get(name)
        if last is None or self.ctx.now_ms - last >= CLAIM_TIME_THRESHOLD_MS:
            return False
        self.rt.postponed.add(name)
        log.debug(f"Postponed claim on logical port {name}.")
        return True

    def _defer_claim(self, name: str, notify_up: bool, parent: Any | None) -> bool:
        """Queue the claim of VIF `name` for a later slice when this engine
        run has spent its claim budget (which starts with the first claim,
        or with the full pass), and that of a container whose parent's
        claim is queued (it follows its parent, in order); a claim made now
        leaves the queue."""
        rt = self.rt
        if self.defer and rt.slice_ms is not None:
            if parent is not None:
                if rt.claim_queue and parent.logical_port in rt.claim_queue:
                    rt.claim_queue[name] = None
                    return True
            elif notify_up:
                now = time.process_time()
                if rt.claim_deadline is None:
                    rt.claim_deadline = now + rt.slice_ms / 1000
                elif now >= rt.claim_deadline:
                    rt.claim_queue[name] = None
                    return True
        if rt.claim_queue:
            rt.claim_queue.pop(name, None)
        return False

    def _claim(self, pb: Any, parent: Any | None, iface: Any | None, notify_up: bool,
               cb: CanBind) -> bool:
        me = self.ctx.chassis
        ro = self.ctx.sb_readonly
        name = pb.logical_port
        if cb is CanBind.MAIN:
            cur = pb_chassis(pb)
            if not same_chassis(cur, me):
                if cur is not None and self._maybe_postpone(name):
                    return True
                if self._defer_claim(name, notify_up, parent):
                    return True
                if is_additional_chassis(pb, me):
                    if ro:
                        return False
                    pb.additional_chassis = [c for c in pb.additional_chassis
                                             if not same_chassis(c, me)]
                if not notify_up:
                    if not self._claimed_set_up(pb, parent):
                        return False
                    if ro:
                        return False
                    self.set_pb_chassis_row(pb, me, True, iface)
                else:
                    self.ctx.if_mgr.claim_iface(self, pb, me, ro)
                self.rt.claim_ts[name] = self.ctx.now_ms
                self.rt.postponed.discard(name)
                self._track(pb, TrackedType.UPDATED)
            else:
                if not notify_up:
                    if not self._claimed_set_up(pb, parent):
                        return False
                else:
                    up = opt_first(pb.up)
                    if (up is False) or iface is None or \
                            iface.external_ids.get(OVN_INSTALLED) != "true":
                        self.ctx.if_mgr.claim_iface(self, pb, me, ro)
            self.rt.bound_here.add(name)
        elif cb is CanBind.ADDITIONAL:
            if not is_additional_chassis(pb, me):
                self.ctx.if_mgr.claim_iface(self, pb, me, ro, additional=True)
                self._track(pb, TrackedType.UPDATED)
            self.rt.bound_here.add(name)
        return True

    def _claimed_set_up(self, pb: Any, parent: Any | None) -> bool:
        if parent is None or opt_first(parent.up) is True:
            if not self.ctx.sb_readonly:
                if pb.up:
                    if opt_first(pb.up) is not True:
                        pb.up = [True]
            elif opt_first(pb.up) is False:
                return False
        return True

    def _release(self, pb: Any) -> bool:
        me = self.ctx.chassis
        ro = self.ctx.sb_readonly
        name = pb.logical_port
        if same_chassis(pb_chassis(pb), me):
            if opt_first(pb.encap) is not None:
                if ro:
                    return False
                pb.encap = []
            if not ro:
                pb.chassis = []
            elif self.ctx.if_mgr.state_of(name) is None:
                return False
            if opt_first(pb.virtual_parent) is not None:
                if ro:
                    return False
                pb.virtual_parent = []
            log.info(f"Releasing lport {name} from this chassis (sb_readonly={int(ro)})")
        elif is_additional_chassis(pb, me):
            if ro:
                return False
            pb.additional_chassis = [c for c in pb.additional_chassis if not same_chassis(c, me)]
            log.info(f"Releasing lport {name} from this additional chassis.")
        else:
            log.info(f"Releasing lport {name}")
        self.rt.bound_here.discard(name)
        # Only bound ports are related (a recompute would not list it either);
        # localports re-add themselves right after.
        self._related_remove(pb)
        lb = self.rt.bindings.get(name)
        if lb is None or lb.iface is None:
            self._local_lport_remove(name)
        self._track(pb, TrackedType.REMOVED)
        self.ctx.if_mgr.release_iface(name)
        return True

    # ---------------------------------------------------------- BindingView
    def _primary(self, iface_id: str) -> tuple[LocalBinding | None, Any | None]:
        lb = self.rt.bindings.get(iface_id)
        return lb, (lb.pb if lb is not None else None)

    def has_binding(self, iface_id: str) -> bool:
        return iface_id in self.rt.bindings

    def pb_chassis_is_set(self, iface_id: str, chassis: Any) -> bool:
        _, pb = self._primary(iface_id)
        return pb is not None and (same_chassis(pb_chassis(pb), chassis)
                                   or is_additional_chassis(pb, chassis))

    def set_pb_chassis_row(self, pb: Any, chassis: Any, is_set: bool,
                           iface: Any | None) -> None:
        cur = pb_chassis(pb)
        if not same_chassis(cur, chassis):
            if is_set:
                if cur is not None:
                    log.info(f"Changing chassis for lport {pb.logical_port} from {cur.name} "
                             f"to {chassis.name}.")
                else:
                    log.info(f"Claiming lport {pb.logical_port} for this chassis.")
                for mac in pb.mac:
                    log.info(f"{pb.logical_port}: Claiming {mac}")
                pb.chassis = [chassis]
                enc_ip = iface.external_ids.get("encap-ip") if iface is not None else None
                if enc_ip:
                    for e in chassis.encaps:
                        if e.ip == enc_ip:
                            pb.encap = [e]
                            break
        elif not is_set:
            pb.chassis = []

    def set_pb_chassis(self, iface_id: str, chassis: Any, is_set: bool,
                       additional: bool) -> None:
        lb, pb = self._primary(iface_id)
        if pb is None:
            return
        if not additional:
            self.set_pb_chassis_row(pb, chassis, is_set, lb.iface if lb else None)
        elif is_set and not is_additional_chassis(pb, chassis):
            log.info(f"Claiming lport {pb.logical_port} for this additional chassis.")
            pb.additional_chassis = list(pb.additional_chassis) + [chassis]
            if same_chassis(pb_chassis(pb), chassis):
                pb.chassis = []
        elif not is_set and is_additional_chassis(pb, chassis):
            pb.additional_chassis = [c for c in pb.additional_chassis if not same_chassis(c, chassis)]

    def is_ovn_installed(self, iface_id: str) -> bool:
        lb = self.rt.bindings.get(iface_id)
        return lb is not None and lb.iface is not None and \
            lb.iface.external_ids.get(OVN_INSTALLED) == "true"

    def is_up(self, iface_id: str, chassis: Any) -> bool:
        lb, pb = self._primary(iface_id)
        if pb is not None and not same_chassis(pb_chassis(pb), chassis):
            return False
        if lb is not None and pb is not None and lb.iface is not None:
            if pb.up and opt_first(pb.up) is not True:
                return False
            return bool(lb.iface.external_ids.get(OVN_INSTALLED) == "true")
        return False

    def is_down(self, iface_id: str, chassis: Any) -> bool:
        lb, pb = self._primary(iface_id)
        if pb is not None:
            cur = pb_chassis(pb)
            if same_chassis(cur, chassis):
                return False
            if cur is not None:
                return True
        if lb is None:
            return True
        if lb.iface is not None and lb.iface.external_ids.get(OVN_INSTALLED) == "true":
            return False
        if pb is not None and opt_first(pb.up) is True:
            return False
        return True

    def set_up(self, iface_id: str, chassis: Any, ts: str, sb_readonly: bool,
               ovs_readonly: bool) -> None:
        lb, pb = self._primary(iface_id)
        if not ovs_readonly and lb is not None and lb.iface is not None \
                and lb.iface.external_ids.get(OVN_INSTALLED) != "true":
            log.info(f"Setting lport {iface_id} ovn-installed in OVS")
            lb.iface.setkey("external_ids", OVN_INSTALLED, "true")
            lb.iface.setkey("external_ids", OVN_INSTALLED_TS, ts)
        if not sb_readonly and lb is not None and pb is not None and pb.up \
                and opt_first(pb.up) is not True and same_chassis(pb_chassis(pb), chassis):
            log.info(f"Setting lport {iface_id} up in Southbound")
            pb.up = [True]
            for cpb, _ in lb.children.values():
                if cpb.up and opt_first(cpb.up) is not True:
                    cpb.up = [True]

    def set_down(self, iface_id: str, chassis: Any, sb_readonly: bool,
                 ovs_readonly: bool) -> None:
        lb, pb = self._primary(iface_id)
        if not ovs_readonly and lb is not None and lb.iface is not None \
                and lb.iface.external_ids.get(OVN_INSTALLED) == "true":
            log.info(f"Removing lport {iface_id} ovn-installed in OVS")
            lb.iface.delkey("external_ids", OVN_INSTALLED)
        if not sb_readonly and pb is not None and opt_first(pb.up) is True:
            cur = pb_chassis(pb)
            if cur is None or same_chassis(cur, chassis):
                log.info(f"Setting lport {pb.logical_port} down in Southbound")
                pb.up = [False]
                if lb is not None:
                    for cpb, _ in lb.children.values():
                        if opt_first(cpb.up) is True:
                            cpb.up = [False]

    def remove_ovn_installed(self, iface_id: str, ovs_readonly: bool) -> None:
        lb = self.rt.bindings.get(iface_id)
        if not ovs_readonly and lb is not None and lb.iface is not None \
                and OVN_INSTALLED in lb.iface.external_ids:
            lb.iface.delkey("external_ids", OVN_INSTALLED)
            lb.iface.delkey("external_ids", OVN_INSTALLED_TS)

    def set_port_down(self, iface_id: str, pb_uuid: Any, chassis: Any) -> None:
        pb = self.ctx.pb_rows.get(pb_uuid)
        if pb is None:
            return
        if opt_first(pb.up) is True:
            log.info(f"Setting lport {iface_id} down in Southbound")
            pb.up = [False]
        if same_chassis(pb_chassis(pb), chassis):
            pb.chassis = []

    # ---------------------------------------------------------- localnet
    def finish_localnet(self, localnets: Iterable[Any]) -> None:
        for pb in localnets:
            net = pb.options.get("network_name")
            if not net or net not in self.ctx.bridge_mappings:
                continue
            dp = pb.datapath
            if dp is None:
                continue
            ld = self.rt.local_datapaths.get(dp.uuid)
            if ld is None:
                continue
            if ld.localnet_port is not None and \
                    ld.localnet_port.logical_port != pb.logical_port:
                continue
            ld.localnet_port = pb

    def finish_external(self, externals: Iterable[Any]) -> None:
        for pb in externals:
            dp = pb.datapath
            ld = self.rt.local_datapaths.get(dp.uuid) if dp is not None else None
            if ld is not None:
                ld.external_ports[pb.logical_port] = pb


def binding_run(ctx: BindingCtx, rt: RuntimeData) -> None:
    """Full recompute of the runtime data."""
    rt.reset()
    rt.active_tunnels = set(ctx.active_tunnels)
    if ctx.chassis is None:
        return
    b = Binder(ctx, rt, track=False, defer=True)
    if rt.slice_ms is not None:
        rt.claim_deadline = time.process_time() + rt.slice_ms / 1000
    b.build_local_bindings()
    localnets, externals, multichassis = [], [], []
    for pb in list(ctx.pb_rows.values()):
        lt = lport_type(pb)
        if not b.consider(pb, lt):
            continue
        if lt is LportType.LOCALNET:
            localnets.append(pb)
        elif lt is LportType.EXTERNAL:
            externals.append(pb)
        elif (lt is LportType.VIF or lt is LportType.CONTAINER) and pb.additional_chassis:
            multichassis.append(pb)
    b.finish_localnet(localnets)
    b.finish_external(externals)
    for pb in multichassis:
        ld = rt.local_datapaths.get(pb.datapath.uuid) if pb.datapath is not None else None
        if ld is not None:
            ld.multichassis_ports[pb.logical_port] = pb
    # Forget claim timestamps older than the threshold.
    for name in [n for n, ts in rt.claim_ts.items()
                 if ctx.now_ms - ts >= CLAIM_TIME_THRESHOLD_MS]:
        del rt.claim_ts[name]


def binding_cleanup(sb_txn: Any | None, pb_rows: Mapping[Any, Any], chassis: Any) -> bool:
    """On exit: release this chassis from every Port_Binding. True when done."""
    if sb_txn is None:
        return False
    if chassis is None:
        return True
    any_change = False
    for pb in pb_rows.values():
        if same_chassis(pb_chassis(pb), chassis):
            pb.chassis = []
            any_change = True
        if is_additional_chassis(pb, chassis):
            pb.additional_chassis = [c for c in pb.additional_chassis if not same_chassis(c, chassis)]
            any_change = True
    if any_change:
        sb_txn.add_comment(f"ovn-controller: removing all port bindings for '{chassis.name}'")
    return not any_change
