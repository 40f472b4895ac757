"""Helpers shared by the physical-flow builders (matches, zone loads, encapsulation)."""

from __future__ import annotations

from typing import Sequence

from ofctrl.match import Match
from ofctrl.ofpacts import Action, Sample, SetField
from physical import constants as C
from physical.inputs import ChassisTunnel, PhysicalContext, PhysicalDebug, Row, TunnelType
from physical.ofbuild import load, move


def match_outport(dp_key: int, port_key: int) -> Match:
    return Match([(C.LOG_DATAPATH, dp_key, None), (C.LOG_OUTPORT, port_key, None)])


def zone_loads(zones: tuple[int, int, int] | None) -> list[Action]:
    if zones is None:
        return []
    ct, dnat, snat = zones
    acts: list[Action] = []
    if ct:
        acts.append(load(C.LOG_CT_ZONE, ct))
    if dnat:
        acts.append(load(C.LOG_DNAT_ZONE, dnat))
    if snat:
        acts.append(load(C.LOG_SNAT_ZONE, snat))
    return acts


def ingress_metadata(pb: Row, zones: tuple[int, int, int] | None) -> list[Action]:
    """Zone loads, then logical datapath and input port (load_logical_ingress_metadata)."""
    return [*zone_loads(zones),
            load(C.LOG_DATAPATH, pb.datapath.tunnel_key),
            load(C.LOG_INPORT, pb.tunnel_key)]


def drop_actions(debug: PhysicalDebug, table: int) -> list[Action]:
    """Empty (= drop) or a sample() for debug drop sampling."""
    if not debug.collector_set_id:
        return []
    return [Sample(probability=0xFFFF, collector_set_id=debug.collector_set_id,
                   obs_domain_id=(debug.obs_domain_id << 24) & 0xFFFFFFFF,
                   obs_point_id=table)]


_CLEAR_LOG_REGS: tuple[Action, ...] = tuple(SetField(f"reg{i}", 0) for i in range(C.N_LOG_REGS))


def clear_log_regs() -> list[Action]:
    return list(_CLEAR_LOG_REGS)


def vxlan_port_key(port_key: int) -> int:
    if port_key >= C.OVN_MIN_MULTICAST:
        return C.OVN_VXLAN_MIN_MULTICAST | (port_key & (C.OVN_VXLAN_MIN_MULTICAST - 1))
    return port_key


def encapsulation(ctx: PhysicalContext, tun: ChassisTunnel, dp_key: int,
                  outport: int, is_ramp_switch: bool) -> list[Action]:
    """Tunnel metadata for a packet sent over ``tun`` (put_encapsulation)."""
    if tun.type == TunnelType.GENEVE:
        return [load("tun_id", dp_key, 0, 24),
                load(ctx.mff_ovn_geneve, outport, 0, 32),
                move(C.LOG_INPORT, 0, ctx.mff_ovn_geneve, 16, 15)]
    if tun.type == TunnelType.STT:
        return [load("tun_id", dp_key | (outport << 24), 0, 64),
                move(C.LOG_INPORT, 0, "tun_id", 40, 15)]
    vni = dp_key
    if not is_ramp_switch:
        vni |= vxlan_port_key(outport) << 12
    return [load("tun_id", vni, 0, 24)]


def parse_mac(text: str) -> int | None:
    """Leading MAC of a string like OVS str_to_mac/eth_addr_from_string (lenient)."""
    token = text.strip().split(" ", 1)[0] if text else ""
    parts = token.split(":")
    if len(parts) != 6:
        return None
    try:
        vals = [int(p, 16) for p in parts]
    except ValueError:
        return None
    if any(v < 0 or v > 255 for v in vals) or any(len(p) > 2 or not p for p in parts):
        return None
    mac = 0
    for v in vals:
        mac = (mac << 8) | v
    return mac


def first_pb_mac(pb: Row) -> int | None:
    """extract_sbrec_binding_first_mac: first MAC in the Port_Binding mac column."""
    for entry in pb.mac:
        m = parse_mac(entry)
        if m is not None:
            return m
    return None


def flatten(groups: Sequence[Sequence[Action]]) -> list[Action]:
    out: list[Action] = []
    for g in groups:
        out.extend(g)
    return out
