"""The ``pflow_output`` engine node: physical flows from ``physical/``.

Design note
-----------
:class:`PflowOutput` implements :class:`controller.engine_graph.FlowOutputProvider`.
Its data owns the desired physical flow table (``flow_table``) handed to
ofctrl.  :func:`physical_context` translates the agent's runtime data (local
datapaths, VIF ofports, tunnel ports on br-int, ct zones, negotiated Geneve
option) into ``physical.PhysicalContext``.  The first version recomputes the
whole table whenever an input changes (no incremental handlers yet, so the
engine falls back to ``run``); ofctrl only sends the difference.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import structlog

import physical
from controller.binding import iface_ofport
from controller.coverage import COVERAGE
from controller.engine import HandlerFn, Node
from controller.engine_nodes import AgentState
from controller.local_data import opt_first
from ofctrl.desired import DesiredFlowTable
from physical.to_ofctrl import add_to_desired

log = structlog.get_logger("physical")

_TUN_TYPES = {"geneve": physical.TunnelType.GENEVE, "stt": physical.TunnelType.STT,
              "vxlan": physical.TunnelType.VXLAN}


class PflowData:
    __slots__ = ("flow_table",)

    def __init__(self) -> None:
        self.flow_table = DesiredFlowTable()


class _SbView:
    """Object with the SB tables as iterables, as ``physical.build_all`` wants."""

    def __init__(self, tables: Callable[[str], Mapping[Any, Any]]) -> None:
        self.port_bindings = list(tables("Port_Binding").values())
        self.multicast_groups = list(tables("Multicast_Group").values())
        self.mac_bindings = list(tables("MAC_Binding").values())
        self.static_mac_bindings = list(tables("Static_MAC_Binding").values())
        self.fdbs = list(tables("FDB").values())
        self.load_balancers = list(tables("Load_Balancer").values())


def physical_context(st: AgentState, chassis_rows: Any, sb_global: Any | None,
                     template_rows: Any, geneve_field: str | None) -> physical.PhysicalContext:
    rt = st.rt
    lds: dict[int, physical.LocalDatapath] = {}
    for ld in rt.local_datapaths.values():
        lds[ld.key] = physical.LocalDatapath(
            datapath=ld.datapath, is_switch=ld.is_switch, is_transit_switch=ld.is_transit_switch,
            localnet_port=ld.localnet_port, peer_ports=list(ld.peer_ports),
            external_ports=dict(ld.external_ports), multichassis_ports=dict(ld.multichassis_ports))
    vif_ofports: dict[str, int] = {}
    primary: set[str] = set()
    for name, lb in rt.bindings.items():
        if lb.iface is not None:
            vif_ofports[name] = iface_ofport(lb.iface)
            for child in lb.children:
                vif_ofports.setdefault(child, iface_ofport(lb.iface))
        if lb.pb is not None:
            primary.add(name)
    tunnels: list[physical.ChassisTunnel] = []
    patch_ofports: dict[str, int] = {}
    br = st.br_int
    if br is not None:
        for port in br.ports:
            ext = port.external_ids
            ifaces = list(port.interfaces)
            if len(ifaces) != 1:
                continue
            iface = ifaces[0]
            ofport = iface_ofport(iface)
            if ofport <= 0:
                continue
            tid = ext.get("ovn-chassis-id")
            if tid is not None:
                ch, _, ip = tid.partition("@")
                ttype = _TUN_TYPES.get(iface.type)
                if ttype is not None:
                    tunnels.append(physical.ChassisTunnel(ch, ofport, ttype, ip, ":" in ip))
                continue
            for key in ("ovn-localnet-port", "ovn-l2gateway-port"):
                lport = ext.get(key)
                if lport:
                    patch_ofports[lport] = ofport
    mtus = {i.id: i.mtu for i in st.if_mgr.ifaces.values() if i.mtu}
    tvars: dict[str, str] = {}
    me = st.chassis
    for row in template_rows:
        if me is not None and row.chassis == me.name:
            tvars = dict(row.variables)
    use_ct_mark = True
    if sb_global is not None:
        use_ct_mark = sb_global.options.get("lb_hairpin_use_ct_mark", "true") != "false"
    return physical.PhysicalContext(
        chassis=me, local_datapaths=lds, port_bindings_by_name=st.idx.pb_by_name.by_key,
        vif_ofports=vif_ofports, primary_bound_lports=frozenset(primary),
        patch_ofports=patch_ofports, chassis_tunnels=tunnels, ct_zones=dict(st.ct.current),
        mff_ovn_geneve=geneve_field or "tun_metadata0",
        active_tunnels=frozenset(rt.active_tunnels), iface_mtus=mtus,
        all_chassis=list(chassis_rows), lb_hairpin_use_ct_mark=use_ct_mark,
        template_vars=tvars)


class PflowOutput:
    """Provider of the ``pflow_output`` node (full recompute on any change)."""

    def __init__(self, st: AgentState, tables: Callable[[str], Mapping[Any, Any]],
                 geneve_field: Callable[[], str | None]) -> None:
        self.st = st
        self.tables = tables
        self.geneve_field = geneve_field
        self.data = PflowData()

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {}

    def run(self, node: Node) -> bool:
        st = self.st
        table = self.data.flow_table
        table.clear()
        if st.chassis is None:
            return True
        COVERAGE.inc("physical_run")
        sbg = None
        for row in self.tables("SB_Global").values():
            sbg = row
        ctx = physical_context(st, self.tables("Chassis").values(), sbg,
                               self.tables("Chassis_Template_Var").values(),
                               self.geneve_field())
        flows = physical.build_all(ctx, _SbView(self.tables))
        add_to_desired(table, flows)
        return True


def first(value: Any) -> Any:
    return opt_first(value)
