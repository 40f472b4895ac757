"""Incremental binding: re-consider only the lports touched by tracked changes.

Design note
-----------
The full recompute lives in ``controller.binding.claim`` (:func:`binding_run`).
Here, :func:`handle_ovs_interface_changes` diffs tracked OVS Interfaces
against the iface-id shadow kept in the runtime data (the IDL only gives raw
old datums) and :func:`handle_port_binding_changes` re-considers tracked SB
Port_Bindings.  Both return False when the change needs a full recompute
(lport type change, patch/l3gateway/chassisredirect/localnet topology change
on a local datapath, non-VIF lport behind an interface), which the engine
then performs.  :func:`retry_postponed` re-tries claims postponed by the
anti flip-flop rule.

Local datapaths are never removed incrementally (as in 23.03): only a full
recompute drops a datapath that no longer has a local lport.  The C agent
recomputes ``runtime_data`` on any tracked change of an OVS Interface whose
type is neither "" nor "internal" (e.g. ``dummy``); so when such an
interface's lport is released and was the last lport bound here on its
datapath, we recompute too (:func:`_orphaned_datapath`), which yields the
same local datapaths, ct zones, flows and SB monitor conditions.  Releases
through plain VIF interfaces keep the datapath local, like the C agent,
until the next recompute.
"""

from __future__ import annotations

import time
from typing import Any, Iterable

import structlog

from controller.binding.claim import (
    OVN_INSTALLED,
    TUNNEL_TYPES,
    Binder,
    BindingCtx,
    RuntimeData,
    _rl_dup,
    iface_ofport,
    is_additional_chassis,
    pb_chassis,
)
from controller.binding.local_data import LportType, TrackedType, lport_type
from physical.inputs import same_chassis

log = structlog.get_logger("binding")

# OVS Interface types the C agent handles incrementally (is_iface_vif)
VIF_IFACE_TYPES = frozenset(("", "internal"))


def _orphaned_datapath(ctx: BindingCtx, rt: RuntimeData, names: Iterable[str]) -> str | None:
    """The first of `names` (released lports) whose datapath is still local
    but has no lport bound here any more, or None."""
    idx = ctx.idx
    dps: dict[Any, str] = {}
    for name in names:
        if name in rt.bound_here:
            continue
        pb = idx.pb_by_name.get(name)
        dp = pb.datapath if pb is not None else None
        if dp is not None and dp.uuid in rt.local_datapaths:
            dps.setdefault(dp.uuid, name)
    if not dps:
        return None
    for name in rt.bound_here:
        pb = idx.pb_by_name.get(name)
        dp = pb.datapath if pb is not None else None
        if dp is not None and dps.pop(dp.uuid, None) is not None and not dps:
            return None
    return next(iter(dps.values()), None)


def _reconsider(b: Binder, names: Iterable[str]) -> bool:
    idx = b.ctx.idx
    for name in names:
        pb = idx.pb_by_name.get(name)
        if pb is None:
            continue
        if not b.consider(pb) or not _reconsider_children(b, name):
            return False
    return True


def _reconsider_children(b: Binder, name: str) -> bool:
    """Re-consider the container/virtual lports behind local binding `name`."""
    lb = b.rt.bindings.get(name)
    if lb is not None and lb.children:
        idx = b.ctx.idx
        for child in list(lb.children):
            cpb = idx.pb_by_name.get(child)
            if cpb is not None and not b.consider(cpb):
                return False
    return True


def handle_ovs_interface_changes(ctx: BindingCtx, rt: RuntimeData,
                                 iface_changes: Any) -> bool:
    """Incremental processing of tracked OVS Interface changes."""
    if ctx.chassis is None or ctx.br_int is None:
        return False
    br = ctx.br_int
    on_br_int = {i.uuid for p in br.ports for i in p.interfaces}
    b = Binder(ctx, rt, track=True, defer=True)
    rt.tracked = True
    affected: list[str] = []
    released_typed: list[str] = []     # released via a non-VIF-typed interface
    for tr in iface_changes.all():
        iface = tr.row
        if iface.type in TUNNEL_TYPES:
            # Tunnels/patches belong to non_vif_data, but a BFD state change
            # may change which HA chassis is active: recompute then.
            if "bfd_status" in tr.old or "bfd" in tr.old:
                return False
            continue
        u = iface.uuid
        old_id = rt.iface_shadow.get(u)
        deleted = iface_changes.is_deleted(u) or u not in on_br_int
        new_id = None
        if not deleted and iface.name != br.name:
            nid = iface.external_ids.get("iface-id")
            if nid and iface_ofport(iface) > 0:
                new_id = nid
        if old_id is not None and old_id != new_id:
            rt.iface_shadow.pop(u, None)
            lb = rt.bindings.get(old_id)
            if lb is not None and lb.iface is not None and lb.iface.uuid == u:
                if lb.children:
                    lb.iface = None
                else:
                    del rt.bindings[old_id]
                if old_id not in rt.bound_here:
                    b._local_lport_remove(old_id)
                affected.append(old_id)
                if iface.type not in VIF_IFACE_TYPES:
                    released_typed.append(old_id)
        if new_id is not None:
            lb = rt.bindings.get(new_id)
            if lb is not None and lb.iface is not None and lb.iface.uuid != u:
                log.warn_rl(_rl_dup, f"Interface {iface.name} has the same iface-id {new_id} "
                            f"as {lb.iface.name}; ignoring it")
                continue
            b._binding_from_iface(iface, br.name)
            affected.append(new_id)
        elif old_id is None and not deleted and iface.external_ids.get(OVN_INSTALLED) \
                and not iface.external_ids.get("iface-id") and not ctx.ovs_readonly:
            iface.delkey("external_ids", OVN_INSTALLED)
    for name in dict.fromkeys(affected):
        pb = ctx.idx.pb_by_name.get(name)
        if pb is None:
            continue
        if lport_type(pb) not in (LportType.VIF, LportType.LOCALPORT):
            return False
        lb = rt.bindings.get(name)
        if lb is None or lb.iface is None:
            if name in rt.bound_here or same_chassis(pb_chassis(pb), ctx.chassis) \
                    or ctx.if_mgr.state_of(name) is not None:
                if lb is not None:
                    lb.pb = None
                if not b._release(pb):
                    return False
                if lb is not None:
                    for child in list(lb.children):
                        cpb = ctx.idx.pb_by_name.get(child)
                        if cpb is not None and same_chassis(pb_chassis(cpb), ctx.chassis):
                            if not b._release(cpb):
                                return False
            continue
        if not _reconsider(b, [name]):
            return False
    if released_typed:
        orphan = _orphaned_datapath(ctx, rt, released_typed)
        if orphan is not None:
            log.debug(f"lport {orphan} was the last one bound here on its datapath "
                      "(non-VIF interface type): recompute")
            return False
    return True


def _foreign_l3gw(ctx: BindingCtx, rt: RuntimeData, tr: Any) -> bool:
    """An l3gateway port that is not, and was not, this chassis' business:
    neither its l3gateway-chassis option (unchanged) nor its chassis (now
    or before) names us and it is none of our local or bound lports (a
    gateway port bound here makes its peer router local: recompute)."""
    pb = tr.row
    me = ctx.chassis
    if "options" in tr.old or pb.options.get("l3gateway-chassis") == me.name:
        return False
    name = pb.logical_port
    if name in rt.local_lports or name in rt.bound_here:
        return False
    if tr.column_changed("chassis"):
        old = tr.old_value("chassis")
        if me.uuid in (old if isinstance(old, (list, set, tuple)) else [old]):
            return False        # it was ours: its peer may be a local datapath
    return not (same_chassis(pb_chassis(pb), me) or is_additional_chassis(pb, me))


def handle_port_binding_changes(ctx: BindingCtx, rt: RuntimeData, pb_changes: Any) -> bool:
    """Incremental processing of tracked SB Port_Binding changes."""
    if ctx.chassis is None:
        return False
    b = Binder(ctx, rt, track=True, defer=True)
    rt.tracked = True
    for tr in pb_changes.deleted.values():
        pb = tr.row
        dp = pb.datapath
        if pb.type in ("patch", "l3gateway", "chassisredirect", "localnet") and \
                dp is not None and dp.uuid in rt.local_datapaths:
            return False
        name = pb.logical_port
        if name in rt.local_lports or name in rt.bound_here:
            rt.bound_here.discard(name)
            b._local_lport_remove(name)
            b._track(pb, TrackedType.REMOVED)
            ctx.if_mgr.delete_iface(name)
        b._related_remove(pb)
        lb = rt.bindings.get(name)
        if lb is not None and lb.pb is not None and lb.pb.uuid == pb.uuid:
            lb.pb = None
        for other in rt.bindings.values():
            other.children.pop(name, None)
    for tr in pb_changes.new_or_updated():
        pb = tr.row
        if "type" in tr.old:
            return False
        dp = pb.datapath
        if dp is None:
            continue
        local_dp = dp.uuid in rt.local_datapaths
        if pb.type == "l3gateway" and local_dp and _foreign_l3gw(ctx, rt, tr):
            # Another chassis' gateway port (typically its claim: chassis and
            # up set): a binding pass would leave it alone too (C handles it
            # in place, consider_l3gw_lport).  At scale every chassis'
            # gateway router joining would otherwise recompute every agent.
            continue
        if pb.type in ("patch", "l3gateway", "chassisredirect", "localnet", "external") \
                and local_dp:
            return False
        if not b.consider(pb):
            return False
        # A VIF's containers follow it (the VIF itself was just considered).
        if pb.type == "" and not _reconsider_children(b, pb.logical_port):
            return False
    return True


def claim_queued(ctx: BindingCtx, rt: RuntimeData) -> None:
    """One slice of the VIF claims a binding pass left queued: re-consider
    them in order (tracked, like any incremental claim) until the engine
    run's claim budget (``rt.slice_ms`` of CPU) is spent, at least one.  A lport whose
    re-consider fails (it needs the SB writable) moves to the postponed
    ones, whose retry recomputes if it fails again."""
    queue = rt.claim_queue
    if not queue:
        return
    b = Binder(ctx, rt, track=True)
    rt.tracked = True
    clock = time.process_time
    deadline = rt.claim_deadline       # shared with this run's handlers
    if deadline is None:
        deadline = rt.claim_deadline = clock() + (rt.slice_ms or 0.0) / 1000
    idx = ctx.idx
    while queue:
        name = next(iter(queue))
        pb = idx.pb_by_name.get(name)
        # Containers behind a queued VIF are queued after it (not re-considered here).
        if pb is not None and not b.consider(pb):
            rt.postponed.add(name)
        queue.pop(name, None)
        if clock() >= deadline:
            break


def retry_postponed(ctx: BindingCtx, rt: RuntimeData) -> bool:
    """Re-consider lports whose claim was postponed (anti flip-flop)."""
    if not rt.postponed:
        return True
    names = list(rt.postponed)
    rt.postponed.clear()
    rt.tracked = True
    return _reconsider(Binder(ctx, rt, track=True), names)
