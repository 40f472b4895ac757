"""What the agent hands to the physical-flow builders.

SB rows are consumed by attribute access exactly as the python ``ovs`` IDL
exposes them (``types.SimpleNamespace`` fakes work too):

* every row has ``uuid`` (``uuid.UUID``; the first 32 bits are the cookie);
* optional single references/values (``pb.chassis``, ``pb.tag``,
  ``pb.ha_chassis_group``, ``pb.parent_port``, ``mc.datapath`` is required)
  are lists of 0 or 1 element, required ones are the value itself;
* maps (``options``, ``other_config``, ``vips``) are ``dict[str, str]``;
* sets (``mac``, ``port_security``, ``additional_chassis``, ``ports``) are lists.

Columns read, per table:

* Port_Binding: uuid, logical_port, type, tunnel_key, datapath (row), options,
  chassis [row], additional_chassis [rows], encap [row], additional_encap [rows],
  ha_chassis_group [row], parent_port [str], tag [int], mac [str],
  port_security [str], requested_chassis [row], requested_additional_chassis [rows].
* Datapath_Binding: uuid, tunnel_key.
* Chassis: uuid, name, hostname, other_config.
* Encap: chassis_name, ip.
* HA_Chassis_Group: ha_chassis [rows] (HA_Chassis: chassis [row], priority);
  ref_chassis [rows].
* Multicast_Group: uuid, datapath (row), tunnel_key, ports [rows].
* MAC_Binding: uuid, logical_port, ip, mac.  Static_MAC_Binding: same plus
  override_dynamic_mac (bool).
* FDB: uuid, mac, dp_key, port_key.
* Load_Balancer: uuid, vips, protocol [str], options, datapaths [rows],
  datapath_group [row with datapaths].

Everything that is *not* an SB row (OVS interfaces, zones, tunnels) is
described by :class:`PhysicalContext`, filled by the agent.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

Row = Any  # an IDL row (or a SimpleNamespace with the same attributes)


class TunnelType(enum.IntEnum):
    GENEVE = 1
    STT = 2
    VXLAN = 3


@dataclass(frozen=True, slots=True)
class ChassisTunnel:
    """An OVS tunnel port to a remote chassis (controller/local_data.h)."""
    chassis_name: str          # remote chassis name (first part of ovn-chassis-id)
    ofport: int
    type: TunnelType
    remote_ip: str = ""        # encap IP of the remote side ("" = any)
    is_ipv6: bool = False


@dataclass(slots=True)
class LocalDatapath:
    """A datapath relevant to this chassis (controller/local_data.h)."""
    datapath: Row                                  # SB Datapath_Binding
    is_switch: bool = True
    is_transit_switch: bool = False
    localnet_port: Row | None = None               # SB Port_Binding of type localnet
    # (local port in this datapath, its patch peer in the neighbour datapath)
    peer_ports: list[tuple[Row, Row]] = field(default_factory=list)
    external_ports: dict[str, Row] = field(default_factory=dict)      # name -> PB
    multichassis_ports: dict[str, Row] = field(default_factory=dict)  # name -> PB


@dataclass(slots=True)
class PhysicalDebug:
    """Drop sampling (SB_Global options debug_drop_collector_set/domain_id),
    only non-zero when the collector set exists on br-int."""
    collector_set_id: int = 0
    obs_domain_id: int = 0


@dataclass(slots=True)
class PhysicalContext:
    chassis: Row                                   # our SB Chassis row
    local_datapaths: dict[int, LocalDatapath]      # datapath tunnel key -> LocalDatapath
    port_bindings_by_name: Mapping[str, Row]       # every SB Port_Binding by logical_port
    # OpenFlow port of the local VIF whose iface-id is the logical port
    # (local_binding_get_lport_ofport).
    vif_ofports: Mapping[str, int] = field(default_factory=dict)
    # Logical ports with a primary local binding here (local_binding_get_primary_pb);
    # None means "the keys of vif_ofports".
    primary_bound_lports: frozenset[str] | None = None
    # localnet / l2gateway logical port name -> ofport of its patch port on br-int.
    patch_ofports: Mapping[str, int] = field(default_factory=dict)
    # Tunnels, in the order lookups should find them (first match wins).
    chassis_tunnels: Sequence[ChassisTunnel] = ()
    # ct zones: logical port name / "<datapath uuid>_dnat" / "_snat" -> zone.
    ct_zones: Mapping[str, int] = field(default_factory=dict)
    mff_ovn_geneve: str = "tun_metadata0"          # negotiated Geneve option slot
    active_tunnels: frozenset[str] = frozenset()   # chassis names with BFD up
    debug: PhysicalDebug = field(default_factory=PhysicalDebug)
    # Interface MTU by logical port (if-status mgr), for multichassis PMTUD flows.
    iface_mtus: Mapping[str, int] = field(default_factory=dict)
    # (dp key, port key) pairs activated by pinctrl (activation-strategy).
    activated_ports: frozenset[tuple[int, int]] = frozenset()
    # All SB Chassis rows (for remote chassis MAC mappings).
    all_chassis: Sequence[Row] = ()
    # SB_Global options:lb_hairpin_use_ct_mark (default true).
    lb_hairpin_use_ct_mark: bool = True
    # Chassis_Template_Var.variables of this chassis (for template load balancers).
    template_vars: Mapping[str, str] = field(default_factory=dict)

    # ------------------------------------------------------------------
    def is_primary_bound(self, lport: str) -> bool:
        if self.primary_bound_lports is not None:
            return lport in self.primary_bound_lports
        return lport in self.vif_ofports

    def find_tunnel(self, chassis_name: str, encap_ip: str | None = None) -> ChassisTunnel | None:
        for tun in self.chassis_tunnels:
            if tun.chassis_name == chassis_name and (not encap_ip or tun.remote_ip == encap_ip):
                return tun
        return None

    def zone_ids(self, pb: Row) -> tuple[int, int, int]:
        """(ct, dnat, snat) zones of a port binding; 0 when unassigned."""
        dp_uuid = str(pb.datapath.uuid)
        return (self.ct_zones.get(pb.logical_port, 0),
                self.ct_zones.get(dp_uuid + "_dnat", 0),
                self.ct_zones.get(dp_uuid + "_snat", 0))


# ----------------------------------------------------------------------
# Small helpers over IDL-style rows.
# ----------------------------------------------------------------------

def opt_first(value: Any) -> Any:
    """The element of an optional column (the IDL gives a list of 0 or 1
    items; fakes may give the value itself), or None.  The one helper for
    this: controller/ imports it from here."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


def cookie_of(row: Row) -> int:
    """First 32 bits of the row UUID (OVN's uuid.parts[0])."""
    return int(row.uuid.int >> 96)


def same_chassis(a: Row | None, b: Row | None) -> bool:
    """Both set and the same Chassis row."""
    return a is not None and b is not None and (a is b or a.uuid == b.uuid)


def bound_chassis(pb: Row) -> Row | None:
    return opt_first(pb.chassis)
