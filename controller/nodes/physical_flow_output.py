"""The ``physical_flow_output`` engine node (C's en_pflow_output): physical
flows from ``physical/``.

Design note
-----------
:class:`PflowOutput` implements the ``physical_flow_output`` node
(``controller.engine.core.EngineNode``).  Its data owns the desired physical flow
table (``flow_table``) handed to ofctrl; every flow is owned by the SB row
it was built from (port binding, multicast group, MAC binding, ...) or by
nobody (generic flows).  :func:`physical_context` translates the agent's
runtime data (local datapaths, VIF ofports, ct zones, negotiated Geneve
option) and the data of its input nodes (tunnel and patch ports of
``non_vif_data``, ``template_vars``, ``northd_options``) into
``physical.PhysicalContext``, once per engine run; ``lb_data`` names the
load balancers whose hairpin flows to rebuild.  ``run`` rebuilds the whole table; the handlers rebuild only the
flows of the rows that changed; ofctrl only sends the difference.

Other chassis (issue 16).  C recomputes all physical flows when a chassis
appears or goes away, on any Encap change and (through non_vif_data) on
any Chassis change or tunnel port move; at scale each chassis joining cost
every agent several recomputes.  Here what a remote chassis is in: the
generic flows (its MAC mappings, the decapsulation flow of its tunnel,
rebuilt whole: a few flows per chassis) and the flows of the ports that
send to it (bound there as main or additional chassis, or an HA group
with a member there: ``_ports_using``, found by reference on the local
datapaths), with the multicast groups of their datapaths.  So non_vif_data
names the chassis whose tunnels moved, the Encap handler rebuilds the
ports naming a changed Encap, and the Chassis handler the generic flows
(plus HA and localnet ports when a chassis comes or goes: HA members'
weak references to it change unseen).  Still recomputed: our own Chassis
row, HA_Chassis_Group changes, a new Geneve option slot, drop-sampling
options, ct zones or the if-status manager recomputed from scratch, a
bound VIF moving to another ofport.  Measured at N=10/20 on the scale
harness (``integration/scale.py``, same run as C): physical_flow_output
recomputes per agent 4.3/4.2 -> 2.0/2.0 (C 5.1/4.8), all of them now the
start-up's forced ones and those following runtime_data's recomputes.

Bounded slices (issue 15), as in ``logical_flow_output``: ``run`` clears the
table and queues one item per builder call of ``physical.build_all`` (a
row's uuid and its builder, or the generic flows), in that order; the engine
then calls :meth:`PflowOutput.resume`, which builds queued items until the
CPU budget (``budget()``: what the daemon's iteration has left; else
``slice_ms``) is spent.  While items are queued the node is not valid
(nothing is installed from it).  A handler running meanwhile rebuilds the
rows it is given from the current inputs and marks their owners; a queued
item of a marked owner, or of a row gone since, is skipped, and every other
item is built later from the then-current inputs, so the result is that of
a compute started after the change (a test compares the tables); a handler
rebuilding the generic flows marks their owner too.

Measured, seed-500 cold start (``benchmarks/seed.py`` restart mode, one rep,
CPU per main-loop iteration from the ``OVN_CONTROLLER_PY_TIMELINE`` lines up
to the complete install, machine shared with a test suite): unsliced, the
longest iteration took 0.76-0.96 s of CPU (two runs), sliced 0.63-0.80 s
(four runs): the longest did not clearly move, as pflow_output's recompute
was not most of it; the mean fell from 0.10-0.13 to 0.05-0.11 s.  What is
left in the longest: runtime_data's Port_Binding handler and the
if-status manager claiming the VIFs, with the first slices; the IDL
applying the first SB update slice (~0.55-0.7 s).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator, Mapping

import structlog

import physical
from controller.binding.claim import TUNNEL_TYPES, iface_ofport
from controller.binding.local_data import TrackedType, opt_first
from controller.diag.coverage import COVERAGE
from controller.engine.agent_nodes import AgentState
from controller.engine.core import (
    HANDLED_UNCHANGED,
    HANDLED_UPDATED,
    UNHANDLED,
    Handled,
    HandlerFn,
    Node,
)
from controller.nodes.lb_data import LbData
from controller.nodes.non_vif_data import NonVifData
from controller.ovsdb.indexes import ref_uuid
from controller.ovsdb.tracking import TableChanges
from ofctrl.desired import DesiredFlowTable


def add_to_desired(table: DesiredFlowTable, flows: Any, owner: Any = None) -> None:
    """Load the flows of one builder call under ``owner``."""
    physical.add_to_desired(table, [physical.OwnedFlows(owner, list(flows))])


log = structlog.get_logger("physical")
# Port_Binding columns no flow is built from (the if-status manager sets
# ``up`` of every port once its flows are installed).
PB_FLOWLESS_COLUMNS = frozenset({"up"})
# SB_Global options of drop sampling (physical.PhysicalDebug).
DEBUG_DROP_OPTIONS = ("debug_drop_collector_set", "debug_drop_domain_id")

# CPU per engine run spent building queued items when no budget callable is
# set (see the design note; the daemon passes what is left of its iteration).
SLICE_MS = 100.0
_CLOCK_EVERY = 4    # items built between two looks at the CPU clock
# One queue item: (kind, row uuid or None for the generic flows), in the
# order of ``physical.build_all``; kind -> the SB table of the row.
_ROW_TABLES = {"pb": "Port_Binding", "mc": "Multicast_Group", "mb": "MAC_Binding",
               "smb": "Static_MAC_Binding", "lb": "Load_Balancer", "fdb": "FDB",
               "ps": "Port_Binding"}
_ROW_BUILDERS: dict[str, Callable[[physical.PhysicalContext, Any], Any]] = {
    "pb": physical.port_binding_flows, "mc": physical.mc_group_flows,
    "mb": physical.mac_binding_flows, "smb": physical.static_mac_binding_flows,
    "lb": physical.lb_hairpin_flows, "fdb": physical.fdb_flows,
    "ps": physical.port_security_flows}
Item = tuple[str, Any]


class PflowData:
    __slots__ = ("flow_table",)

    def __init__(self) -> None:
        self.flow_table = DesiredFlowTable()


class VifOfports(Mapping[str, int]):
    """logical port -> OpenFlow port of its local VIF (a container port: its
    parent's), read from the Interface only when asked: an incremental run
    looks up a few ports, not every VIF of br-int."""

    __slots__ = ("_bindings", "_children", "_cache")

    def __init__(self, bindings: Mapping[str, Any]) -> None:
        self._bindings = bindings
        self._children: dict[str, Any] | None = None
        self._cache: dict[str, int | None] = {}

    def _lookup(self, name: str) -> int | None:
        lb = self._bindings.get(name)
        if lb is not None and lb.iface is not None:
            # Only a binding with its primary lport (as local_binding_get_
            # lport_ofport): not an interface whose Port_Binding was skipped
            # (unknown type, iface-id-ver mismatch) or has not arrived.
            return iface_ofport(lb.iface) if lb.pb is not None else None
        if self._children is None:
            children: dict[str, Any] = {}
            for parent in self._bindings.values():
                if parent.iface is not None:
                    for child in parent.children:
                        children.setdefault(child, parent)
            self._children = children
        parent = self._children.get(name)
        return iface_ofport(parent.iface) if parent is not None else None

    def __getitem__(self, name: str) -> int:
        if name in self._cache:
            v = self._cache[name]
        else:
            v = self._cache[name] = self._lookup(name)
        if v is None:
            raise KeyError(name)
        return v

    def _names(self) -> list[str]:
        names = [n for n, lb in self._bindings.items()
                 if lb.iface is not None and lb.pb is not None]
        seen = set(names)
        for lb in self._bindings.values():
            if lb.iface is not None:
                for child in lb.children:
                    if child not in seen:
                        seen.add(child)
                        names.append(child)
        return names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


def physical_context(st: AgentState, chassis_rows: Any, non_vif: NonVifData,
                     template_vars: Mapping[str, str], use_ct_mark: bool,
                     geneve_field: str | None) -> physical.PhysicalContext:
    rt = st.rt
    lds: dict[int, physical.LocalDatapath] = {}
    for ld in rt.local_datapaths.values():
        lds[ld.key] = physical.LocalDatapath(
            datapath=ld.datapath, is_switch=ld.is_switch, is_transit_switch=ld.is_transit_switch,
            localnet_port=ld.localnet_port, peer_ports=list(ld.peer_ports),
            external_ports=dict(ld.external_ports),
            # shared on purpose: physical.lport_update keeps it current
            multichassis_ports=ld.multichassis_ports)
    vif_ofports = VifOfports(rt.bindings)
    primary = {name for name, lb in rt.bindings.items() if lb.pb is not None}
    mtus = {i.id: i.mtu for i in st.if_mgr.ifaces.values() if i.mtu}
    me = st.chassis
    return physical.PhysicalContext(
        chassis=me, local_datapaths=lds, port_bindings_by_name=st.idx.pb_by_name.by_key,
        vif_ofports=vif_ofports, primary_bound_lports=frozenset(primary),
        patch_ofports=non_vif.patch_ofports, chassis_tunnels=non_vif.tunnels,
        ct_zones=dict(st.ct.current),
        mff_ovn_geneve=geneve_field or "tun_metadata0",
        active_tunnels=frozenset(rt.active_tunnels), iface_mtus=mtus,
        all_chassis=list(chassis_rows), lb_hairpin_use_ct_mark=use_ct_mark,
        template_vars=template_vars)


def _ref_uuids(row: Any, column: str) -> set[Any]:
    """UUIDs held in a set-of-references column, without row lookups."""
    data = row.__dict__.get("_data") if hasattr(row, "__dict__") else None
    if data is not None and column in data:
        values = getattr(data[column], "values", None)
        if values is not None:
            return {atom.value for atom in values}
    refs = getattr(row, column, None) or ()
    return {getattr(r, "uuid", r) for r in refs}


# More interfaces than this changing MTU in one run (start-up): recompute.
MTU_REBUILD_MAX = 64


class PflowOutput:
    """Provider of the ``physical_flow_output`` node.

    ``run`` rebuilds the whole table; handlers re-build only the flows owned
    by the SB rows that changed (``physical.lport_update`` decides which
    Port_Bindings to redo), the generic flows whole when tunnels or remote
    chassis change, and give up (full recompute) on what the design note
    lists.
    """

    def __init__(self, st: AgentState, tables: Callable[[str], Mapping[Any, Any]],
                 geneve_field: Callable[[], str | None],
                 run_id: Callable[[], int] | None = None) -> None:
        self.st = st
        self.tables = tables
        self.geneve_field = geneve_field
        self.run_id = run_id
        self.data = PflowData()
        self.n_incremental = 0
        self._ctx_cache: tuple[int, physical.PhysicalContext] | None = None
        # The sliced recompute: items still to build (popped from the end)
        # and the owners handlers rebuilt meanwhile (their items are skipped).
        self.queue: list[Item] = []
        self._rebuilt: set[Any] = set()
        self.slice_ms: float | None = SLICE_MS
        self.budget: Callable[[], float] | None = None
        self.n_slices = 0

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {
            "ct_zones": self._ct_zones,
            "chassis": self._chassis,
            "encap": self._encap,
            "if_status_mgr": self._if_status_mgr,
            "runtime_data": self._runtime_data,
            "port_binding": self._port_binding,
            "multicast_group": self._multicast_group,
            "sb_global": self._sb_global,
            "mac_binding": self._owned_rows(physical.mac_binding_flows),
            "static_mac_binding": self._owned_rows(physical.static_mac_binding_flows),
            "fdb": self._owned_rows(physical.fdb_flows),
            "lb_data": self._lb_data,
            "northd_options": self._northd_options,
            "non_vif_data": self._non_vif_data,
            "activated_ports": self._activated_ports,
            "flow_sample_collector_set": lambda node, inp: HANDLED_UNCHANGED,
            "ovs_interface": self._ovs_interface,
        }

    def clear_tracked(self) -> None:
        return None

    def _ctx(self, node: Node) -> physical.PhysicalContext:
        """The physical context, built once per engine run (all inputs of this
        node are computed before it in the run)."""
        rid = self.run_id() if self.run_id is not None else None
        if rid is not None and self._ctx_cache is not None and self._ctx_cache[0] == rid:
            return self._ctx_cache[1]
        tvars = node.input_data("template_vars").vars
        ctx = physical_context(self.st, self.tables("Chassis").values(),
                               node.input_data("non_vif_data"), tvars,
                               node.input_data("northd_options").lb_hairpin_use_ct_mark,
                               self.geneve_field())
        if rid is not None:
            self._ctx_cache = (rid, ctx)
        return ctx

    def run(self, node: Node) -> bool:
        self.data.flow_table.clear()
        self.queue = []
        self._rebuilt = set()
        if self.st.chassis is None:
            return True
        COVERAGE.inc("physical_run")
        self.queue = self._items()
        return True

    def _items(self) -> list[Item]:
        """Every build of ``physical.build_all``, reversed (popped from the end)."""
        def rows(kind: str) -> list[Item]:
            return [(kind, u) for u in self.tables(_ROW_TABLES[kind])]
        items: list[Item] = [("conj", None), *rows("pb"), *rows("mc"), ("tunnel", None)]
        for kind in ("mb", "smb", "lb", "fdb", "ps"):
            items += rows(kind)
        items.reverse()
        return items

    def pending(self) -> bool:
        return bool(self.queue)

    def resume(self, node: Node) -> bool:
        """Build queued items for the CPU budget (``budget()`` if set, else
        ``slice_ms``; None: everything); True if any was built."""
        queue = self.queue
        ctx = self._ctx(node)
        table = self.data.flow_table
        rebuilt = self._rebuilt
        budget = self.budget() if self.budget is not None else self.slice_ms
        clock = time.process_time
        deadline = clock() + budget / 1000 if budget is not None else 0.0
        n = 0
        while queue:
            kind, u = queue.pop()
            n += 1
            if kind in ("conj", "tunnel") and physical.GENERIC_OWNER in rebuilt:
                pass        # a handler rebuilt all the generic flows meanwhile
            elif kind == "conj":
                add_to_desired(table, physical.chassis_mac_conj_flows(ctx), physical.GENERIC_OWNER)
            elif kind == "tunnel":
                pbs = list(self.tables("Port_Binding").values())
                add_to_desired(table, physical.tunnel_flows(ctx, pbs) + physical.default_flows(ctx),
                               physical.GENERIC_OWNER)
            elif u not in rebuilt:
                row = self.tables(_ROW_TABLES[kind]).get(u)
                if row is not None:
                    add_to_desired(table, _ROW_BUILDERS[kind](ctx, row), u)
            if budget is not None and n % _CLOCK_EVERY == 0 and clock() >= deadline:
                break
        if queue:
            self.n_slices += 1
        else:
            self._rebuilt = set()
        return n > 0

    def _drop(self, owner: Any) -> None:
        self.data.flow_table.remove(owner)
        if self.queue:
            self._rebuilt.add(owner)

    def _add(self, flows: Any, owner: Any) -> None:
        add_to_desired(self.data.flow_table, flows, owner)
        if self.queue:
            self._rebuilt.add(owner)

    # -- handlers ------------------------------------------------------
    def _ct_zones(self, node: Node, inp: Node) -> Handled:
        # New/removed lport zones are picked up when runtime_data's tracked
        # lports are rebuilt; a from-scratch zone recompute may move any zone.
        return UNHANDLED if self.st.ct.recomputed else HANDLED_UNCHANGED

    def _if_status_mgr(self, node: Node, inp: Node) -> Handled:
        """Interface MTUs feed only the PMTUD flows of multichassis ports, which
        every port of their datapath carries: rebuild those datapaths' ports
        (a recompute of the manager: everything)."""
        changed = self.st.if_mgr.mtu_changed
        if changed is None:
            return UNHANDLED      # the manager was recomputed: any MTU may have moved
        # Only a multichassis port's MTU is in flows (its datapath's PMTUD
        # flows); vswitchd setting the MTU of many plain VIFs at once (e.g.
        # on the first port added after start) changes nothing.
        rt = self.st.rt
        dps: dict[Any, Any] = {}
        for name in sorted(changed):
            pb = self.st.idx.pb_by_name.get(name)
            if pb is None or pb.datapath is None:
                continue
            dp = pb.datapath
            ld = rt.local_datapaths.get(dp.uuid)
            if ld is None:
                continue
            if name in ld.multichassis_ports or pb.additional_chassis:
                dps.setdefault(dp.uuid, pb)
        if not dps:
            return HANDLED_UNCHANGED
        if len(dps) > MTU_REBUILD_MAX:
            return UNHANDLED      # (many datapaths at once: a recompute is cheaper)
        changes: list[tuple[Any, bool]] = []
        for dp_uuid, pb in dps.items():
            changes.append((pb, False))
            changes += [(p, False) for p in self.st.idx.pbs_on_datapath(dp_uuid)
                        if p.uuid != pb.uuid]
        return self._rebuild_lports(self._ctx(node), changes)

    def _rebuild_lports(self, ctx: physical.PhysicalContext,
                        changes: list[tuple[Any, bool]],
                        extra_mc_dps: set[Any] | None = None) -> Handled:
        mc_dps: set[Any] = set(extra_mc_dps or ())
        updated = bool(mc_dps)
        for pb, removed in changes:
            dp = pb.datapath
            if dp is None:
                self._drop(pb.uuid)
                updated = True
                continue
            upd = physical.lport_update(ctx, pb, removed,
                                        list(self.st.idx.pbs_on_datapath(dp.uuid)))
            if upd is None:
                return UNHANDLED
            for owner in upd.remove:
                self._drop(owner)
            for row in upd.rebuild:
                flows: list[Any] = list(physical.port_binding_flows(ctx, row))
                flows += physical.port_security_flows(ctx, row)
                self._add(flows, row.uuid)
            mc_dps.add(dp.uuid)
            updated = True
        if mc_dps:
            # The groups of the touched datapaths only (the index key holds
            # the datapath: no walk over every switch's groups).
            for (dp_uuid, _name), mc in list(self.st.idx.mg_by_name.by_key.items()):
                if dp_uuid in mc_dps:
                    self._drop(mc.uuid)
                    self._add(physical.mc_group_flows(ctx, mc), mc.uuid)
        if updated:
            self.n_incremental += 1
        return HANDLED_UPDATED if updated else HANDLED_UNCHANGED

    def _runtime_data(self, node: Node, inp: Node) -> Handled:
        rt = self.st.rt
        if not rt.tracked:
            return UNHANDLED
        changes: list[tuple[Any, bool]] = []
        new_dps: set[Any] = set()
        for tdp in rt.tracked_dps.dps.values():
            if tdp.type is TrackedType.NEW:
                new_dps.add(tdp.datapath.uuid)
            for pb, ttype in tdp.lports.values():
                changes.append((pb, ttype is TrackedType.REMOVED and
                                self.st.idx.pb_by_name.get(pb.logical_port) is None))
        if new_dps:
            changes += self._new_datapath_ports(new_dps)
        if not changes and not new_dps:
            return HANDLED_UNCHANGED
        ctx = self._ctx(node)
        res = self._rebuild_lports(ctx, changes, new_dps)
        if res is UNHANDLED or not new_dps:
            return res
        self._rebuild_dp_rows(ctx, new_dps)
        return HANDLED_UPDATED

    def _new_datapath_ports(self, new_dps: set[Any]) -> list[tuple[Any, bool]]:
        """Every port of a datapath that just became local, and of its patch
        neighbours (their flows may look at the new datapath: e.g. a
        distributed gateway port's localnet of the switch behind it)."""
        rt = self.st.rt
        dps: set[Any] = set(new_dps)
        for dp_uuid in new_dps:
            ld = rt.local_datapaths.get(dp_uuid)
            if ld is None:
                continue
            for _local, remote in ld.peer_ports:
                if remote.datapath is not None:
                    dps.add(remote.datapath.uuid)
        out: list[tuple[Any, bool]] = []
        for dp_uuid in sorted(dps, key=str):
            out += [(pb, False) for pb in self.st.idx.pbs_on_datapath(dp_uuid)]
        return out

    def _rebuild_dp_rows(self, ctx: physical.PhysicalContext, new_dps: set[Any]) -> None:
        """The rows keyed by datapath whose flows exist only for local
        datapaths: MAC bindings, static MAC bindings, FDB entries of the
        datapaths that just became local (load balancers: lb_data)."""
        keys = {ld.datapath.tunnel_key for u, ld in self.st.rt.local_datapaths.items()
                if u in new_dps}

        def port_dp_is_new(row: Any) -> bool:
            pb = ctx.port_bindings_by_name.get(row.logical_port)
            return pb is not None and pb.datapath is not None and pb.datapath.uuid in new_dps

        def fdb_dp_is_new(fdb: Any) -> bool:
            return bool(fdb.dp_key in keys)

        groups: list[tuple[str, Callable[[Any], bool], Callable[..., Any]]] = [
            ("MAC_Binding", port_dp_is_new, physical.mac_binding_flows),
            ("Static_MAC_Binding", port_dp_is_new, physical.static_mac_binding_flows),
            ("FDB", fdb_dp_is_new, physical.fdb_flows),
        ]
        for tname, wanted, build in groups:
            for row in self.tables(tname).values():
                if wanted(row):
                    self._drop(row.uuid)
                    self._add(build(ctx, row), row.uuid)

    def _port_binding(self, node: Node, inp: Node) -> Handled:
        tc: TableChanges = inp.data
        changes: list[tuple[Any, bool]] = []
        for tr in tc.deleted.values():
            changes.append((tr.row, True))
        for tr in tc.new_or_updated():
            if "type" in tr.old:
                return UNHANDLED
            if tr.only_changed(PB_FLOWLESS_COLUMNS):
                continue
            changes.append((tr.row, False))
        if not changes:
            return HANDLED_UNCHANGED
        return self._rebuild_lports(self._ctx(node), changes)

    def _multicast_group(self, node: Node, inp: Node) -> Handled:
        tc: TableChanges = inp.data
        ctx = self._ctx(node)
        for u in tc.deleted:
            self._drop(u)
        for tr in tc.new_or_updated():
            self._drop(tr.row.uuid)
            self._add(physical.mc_group_flows(ctx, tr.row), tr.row.uuid)
        return HANDLED_UPDATED

    def _lb_data(self, node: Node, inp: Node) -> Handled:
        """Rebuild the LB hairpin flows of the rows lb_data names."""
        lbd: LbData = inp.data
        if lbd.recomputed:
            return UNHANDLED
        if not lbd.changed:
            return HANDLED_UNCHANGED
        ctx = self._ctx(node)
        for u, lb in lbd.changed.items():
            self._drop(u)
            if lb is not None:
                self._add(physical.lb_hairpin_flows(ctx, lb), u)
        return HANDLED_UPDATED

    def _northd_options(self, node: Node, inp: Node) -> Handled:
        """lb_hairpin_use_ct_mark moved: only LB hairpin flows read it."""
        ctx = self._ctx(node)
        for u, lb in self.tables("Load_Balancer").items():
            self._drop(u)
            self._add(physical.lb_hairpin_flows(ctx, lb), u)
        return HANDLED_UPDATED

    def _non_vif_data(self, node: Node, inp: Node) -> Handled:
        """A patch port that moved rebuilds the flows of its localnet/l2gateway
        port (a localnet port: of its whole datapath, whose remote ports
        output through it); tunnels that moved rebuild the generic flows (the table 0
        decapsulation flows) and the ports sending to those chassis (bound
        there, additional chassis there, or an HA group with a member
        there), with the multicast groups of their datapaths (C: any
        non_vif_data change recomputes)."""
        nv: NonVifData = inp.data
        changes: list[tuple[Any, bool]] = []
        for name in sorted(nv.patches_changed):
            pb = self.st.idx.pb_by_name.get(name)
            if pb is None:
                continue
            changes.append((pb, False))
            if pb.type == "localnet" and pb.datapath is not None:
                # Every port of its datapath not bound here leaves through it.
                changes += [(p, False) for p in self.st.idx.pbs_on_datapath(pb.datapath.uuid)
                            if p.uuid != pb.uuid]
        generic = nv.tunnels_changed
        if generic:
            changes += [(pb, False) for pb in self._ports_using(nv.tunnel_chassis_changed)]
        if not changes and not generic:
            return HANDLED_UNCHANGED
        ctx = self._ctx(node)
        if generic:
            self._rebuild_generic(ctx)
        res = self._rebuild_lports(ctx, changes)
        return HANDLED_UPDATED if generic and res is HANDLED_UNCHANGED else res

    # -- remote chassis ------------------------------------------------
    def _local_pbs(self) -> Iterator[Any]:
        """The Port_Bindings of the local datapaths (no other has flows)."""
        idx = self.st.idx
        for dp_uuid in list(self.st.rt.local_datapaths):
            yield from idx.pbs_on_datapath(dp_uuid)

    def _ports_using(self, names: set[str]) -> list[Any]:
        """Ports of local datapaths whose flows look up a tunnel to one of the
        chassis `names`: bound there (main or additional) or in an HA chassis
        group with a member there (read by reference, no row conversions)."""
        if not names:
            return []
        chassis = {u for u, ch in self.tables("Chassis").items() if ch.name in names}
        groups = self.tables("HA_Chassis_Group")
        out = []
        for pb in self._local_pbs():
            if ref_uuid(pb, "chassis") in chassis or not chassis.isdisjoint(
                    _ref_uuids(pb, "additional_chassis")):
                out.append(pb)
                continue
            hg = ref_uuid(pb, "ha_chassis_group")
            group = groups.get(hg) if hg is not None else None
            if group is not None and any(ref_uuid(hac, "chassis") in chassis
                                         for hac in group.ha_chassis):
                out.append(pb)
        return out

    def _rebuild_generic(self, ctx: physical.PhysicalContext) -> None:
        """The flows of nobody (remote chassis MACs, tunnel decapsulation,
        table defaults), as the recompute builds them."""
        pbs = list(self.tables("Port_Binding").values())
        self._drop(physical.GENERIC_OWNER)
        self._add(physical.chassis_mac_conj_flows(ctx) + physical.tunnel_flows(ctx, pbs)
                  + physical.default_flows(ctx), physical.GENERIC_OWNER)

    def _chassis(self, node: Node, inp: Node) -> Handled:
        """Remote Chassis rows are in the generic flows (their MAC mappings)
        and, through HA chassis groups, in the flows of HA ports and
        localnet ports (the weak references of those groups' members to a
        chassis come and go with it, unseen by the trackers): a remote
        chassis appearing or going away rebuilds those, an update of its other_config the generic
        flows, and of its is-vtep the multicast groups of the local
        datapaths.  Our own row, or a name change: recompute.  (C recomputes
        on a new or deleted chassis, and on any Chassis change through
        non_vif_data.)"""
        tc: TableChanges = inp.data
        me = self.st.chassis
        if me is None:
            return UNHANDLED
        generic = ha = mcast = False
        for tr in tc.all():
            row = tr.row
            if row.uuid == me.uuid or "name" in tr.old or \
                    getattr(row, "name", None) == me.name:
                return UNHANDLED
            if tc.is_new(row.uuid) or tc.is_deleted(row.uuid):
                generic = ha = True
            elif "other_config" in tr.old:
                generic = True
                old = tr.old_value("other_config")
                old_vtep = old.get("is-vtep") if isinstance(old, dict) else None
                mcast |= old_vtep != row.other_config.get("is-vtep")
        if not (generic or mcast):
            return HANDLED_UNCHANGED
        ctx = self._ctx(node)
        if generic:
            self._rebuild_generic(ctx)
        changes: list[tuple[Any, bool]] = []
        if ha:
            # HA ports, and localnet ports (their router port MAC flows ask
            # whether a chassisredirect port is resident here).
            changes = [(pb, False) for pb in self._local_pbs()
                       if ref_uuid(pb, "ha_chassis_group") is not None
                       or pb.type == "localnet"]
        mc_dps = set(self.st.rt.local_datapaths) if mcast else None
        if self._rebuild_lports(ctx, changes, mc_dps) is UNHANDLED:
            return UNHANDLED
        return HANDLED_UPDATED

    def _encap(self, node: Node, inp: Node) -> Handled:
        """Encap rows: rebuild the ports that name them (``encap``,
        ``additional_encap``: which tunnel of a chassis to use).  The
        HA_Chassis_Group changes this input also carries recompute."""
        tracker = getattr(inp, "tracker", None)
        if tracker is not None and any(tracker.tables.get(t) for t in getattr(inp, "also", ())):
            return UNHANDLED
        tc: TableChanges = inp.data
        encaps = set(tc.created) | set(tc.updated) | set(tc.deleted)
        if not encaps:
            return HANDLED_UNCHANGED
        changes = [(pb, False) for pb in self._local_pbs()
                   if ref_uuid(pb, "encap") in encaps
                   or not encaps.isdisjoint(_ref_uuids(pb, "additional_encap"))]
        if not changes:
            return HANDLED_UNCHANGED
        return self._rebuild_lports(self._ctx(node), changes)

    def _activated_ports(self, node: Node, inp: Node) -> Handled:
        """Ports pinctrl activated: rebuild their flows."""
        changes: list[tuple[Any, bool]] = []
        for dp_key, port_key in sorted(inp.data):
            dp = self.st.idx.dp_by_key.get(dp_key)
            if dp is None:
                continue
            for pb in self.st.idx.pbs_on_datapath(dp.uuid):
                if pb.tunnel_key == port_key:
                    changes.append((pb, False))
        if not changes:
            return HANDLED_UNCHANGED
        return self._rebuild_lports(self._ctx(node), changes)

    def _owned_rows(self, build: Callable[[physical.PhysicalContext, Any], Any]) -> HandlerFn:
        def handler(node: Node, inp: Node) -> Handled:
            tc: TableChanges = inp.data
            ctx = self._ctx(node)
            for u in tc.deleted:
                self._drop(u)
            for tr in tc.new_or_updated():
                self._drop(tr.row.uuid)
                self._add(build(ctx, tr.row), tr.row.uuid)
            return HANDLED_UPDATED
        return handler

    def _ovs_interface(self, node: Node, inp: Node) -> Handled:
        """VIF appearances/removals reach us through runtime_data, tunnel and
        patch interfaces through non_vif_data; a bound VIF moving to another
        ofport recomputes."""
        tc: TableChanges = inp.data
        for tr in tc.all():
            iface = tr.row
            if iface.type in TUNNEL_TYPES:
                continue
            if "ofport" in tr.old and not tc.is_new(iface.uuid) and \
                    iface.external_ids.get("iface-id"):
                old = opt_first(tr.old_value("ofport"))
                if isinstance(old, int) and old > 0:
                    return UNHANDLED      # a bound VIF moved to another ofport
        return HANDLED_UNCHANGED

    def _sb_global(self, node: Node, inp: Node) -> Handled:
        """Of SB_Global's options only the drop sampling ones shape physical
        flows (as C's pflow_output_debug_handler; lb_hairpin_use_ct_mark
        comes through northd_options); the row appearing or going away, or
        ipsec, recompute."""
        tc: TableChanges = inp.data
        if tc.created or tc.deleted:
            return UNHANDLED
        for tr in tc.updated.values():
            if "ipsec" in tr.old:
                return UNHANDLED
            if "options" in tr.old:
                old = tr.old_value("options")
                new = tr.row.options
                if not isinstance(old, dict) or any(old.get(k) != new.get(k)
                                                    for k in DEBUG_DROP_OPTIONS):
                    return UNHANDLED
        return HANDLED_UNCHANGED
