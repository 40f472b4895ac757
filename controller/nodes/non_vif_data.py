"""The ``non_vif_data`` engine node: tunnel and patch ports on br-int.

Design note
-----------
C's en_non_vif_data.  One walk over br-int's ports (skipping VIFs by their
``external_ids`` keys without converting them) finds

* ``tunnels``: the tunnel ports to other chassis (``ovn-chassis-id``), as
  ``physical.ChassisTunnel`` for the physical flows;
* ``tunnel_ofports``: remote chassis name -> OpenFlow port, for the lflow
  actions that output to a chassis' tunnel;
* ``patch_ofports``: localnet/l2gateway logical port -> patch ofport.

OVS_open_vswitch and OVS_bridge are recompute edges.  The Interface
handler rescans br-int when a tunnel or patch interface changed, and the
SB_chassis handler always: a rescan is all ``run`` does (it reads no SB
row), and as a handler it is not refused while an SB transaction is in
flight (C recomputes here, which then aborts the engine run and forces a
full recompute of every node in the next iteration: at scale, each chassis
joining did that on every agent).  ``run`` reports a change only when one
of the three moved, and says which (``tunnels_changed``,
``tunnel_ofports_changed``, ``patches_changed``: the logical ports whose
patch ofport moved; ``tunnel_chassis_changed``: the remote chassis whose
tunnels moved).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import physical
from controller.binding.claim import TUNNEL_TYPES, iface_ofport
from controller.binding.local_data import opt_first
from controller.chassis.encaps import has_map_key, parse_tunnel_id
from controller.engine.core import HANDLED_UNCHANGED, HANDLED_UPDATED, Handled, HandlerFn, Node
from controller.ovsdb.tracking import TableChanges

if TYPE_CHECKING:
    from controller.engine.agent_nodes import AgentState

_OVN_PORT_KEYS = ("ovn-chassis-id", "ovn-localnet-port", "ovn-l2gateway-port")
_TUN_TYPES = {"geneve": physical.TunnelType.GENEVE, "stt": physical.TunnelType.STT,
              "vxlan": physical.TunnelType.VXLAN}


class NonVifData:
    __slots__ = ("tunnels", "tunnel_ofports", "patch_ofports", "tunnels_changed",
                 "tunnel_ofports_changed", "patches_changed", "tunnel_chassis_changed")

    def __init__(self) -> None:
        self.tunnels: list[physical.ChassisTunnel] = []
        self.tunnel_ofports: dict[str, int] = {}
        self.patch_ofports: dict[str, int] = {}
        # what moved in this iteration
        self.tunnels_changed = False
        self.tunnel_ofports_changed = False
        self.patches_changed: set[str] = set()
        self.tunnel_chassis_changed: set[str] = set()


def _tunnels_by_chassis(tunnels: list[physical.ChassisTunnel]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for tun in tunnels:
        out.setdefault(tun.chassis_name, []).append(tun)
    return out


def _lflow_tunnel_ofport(iface: Any) -> int | None:
    try:
        ofp = opt_first(iface.ofport)
    except AttributeError:
        return None
    return ofp if isinstance(ofp, int) and ofp > 0 else None


def scan_br_int(br: Any | None) -> NonVifData:
    """The tunnel and patch ports of bridge row `br` (None: none)."""
    out = NonVifData()
    if br is None:
        return out
    for port in br.ports:
        if not has_map_key(port, "external_ids", _OVN_PORT_KEYS):
            continue          # a VIF: nothing to read (the common case)
        ext = port.external_ids
        ifaces = list(port.interfaces)
        if len(ifaces) != 1:
            continue
        iface = ifaces[0]
        tid = ext.get("ovn-chassis-id")
        if tid is not None:
            parsed = parse_tunnel_id(tid)     # no tunnel to "chassis@" (encap ip "")
            if parsed is None:
                continue
            ch, ip = parsed
            lofp = _lflow_tunnel_ofport(iface)
            if lofp is not None:
                out.tunnel_ofports.setdefault(ch, lofp)
            ofport = iface_ofport(iface)
            ttype = _TUN_TYPES.get(iface.type)
            if ttype is not None and ofport > 0:
                out.tunnels.append(physical.ChassisTunnel(ch, ofport, ttype, ip, ":" in ip))
            continue
        ofport = iface_ofport(iface)
        if ofport <= 0:
            continue
        for key in ("ovn-localnet-port", "ovn-l2gateway-port"):
            lport = ext.get(key)
            if lport:
                out.patch_ofports[lport] = ofport
    return out


class NonVifDataNode:
    def __init__(self, st: "AgentState") -> None:
        self.st = st
        self.data = NonVifData()

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"ovs_interface": self._ovs_interface, "sb_chassis": self._sb_chassis}

    def clear_tracked(self) -> None:
        self.data.tunnels_changed = self.data.tunnel_ofports_changed = False
        self.data.patches_changed.clear()
        self.data.tunnel_chassis_changed.clear()

    def run(self, node: Node) -> bool:
        return self._rescan()

    def _rescan(self) -> bool:
        """Read br-int again; True when something moved (accumulates what
        moved over the calls of one iteration)."""
        new = scan_br_int(self.st.br_int)
        old = self.data
        old.patches_changed |= {k for k in old.patch_ofports.keys() | new.patch_ofports.keys()
                                if old.patch_ofports.get(k) != new.patch_ofports.get(k)}
        if new.tunnels != old.tunnels:
            old.tunnels_changed = True
            was, now = _tunnels_by_chassis(old.tunnels), _tunnels_by_chassis(new.tunnels)
            old.tunnel_chassis_changed |= {ch for ch in was.keys() | now.keys()
                                           if was.get(ch) != now.get(ch)}
        if new.tunnel_ofports != old.tunnel_ofports:
            old.tunnel_ofports_changed = True
        moved = (new.tunnels != old.tunnels or new.tunnel_ofports != old.tunnel_ofports
                 or new.patch_ofports != old.patch_ofports)
        old.tunnels, old.tunnel_ofports = new.tunnels, new.tunnel_ofports
        old.patch_ofports = new.patch_ofports
        return moved

    def _handled(self) -> Handled:
        return HANDLED_UPDATED if self._rescan() else HANDLED_UNCHANGED

    def _ovs_interface(self, node: Node, inp: Node) -> Handled:
        tc: TableChanges = inp.data
        for tr in tc.all():
            if tr.row.type in TUNNEL_TYPES:
                return self._handled()
        return HANDLED_UNCHANGED

    def _sb_chassis(self, node: Node, inp: Node) -> Handled:
        return self._handled()
