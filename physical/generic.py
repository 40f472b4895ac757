"""Flows not tied to one Port_Binding or Multicast_Group (physical_run).

All of them are owned by ``GENERIC_OWNER`` (the C agent's hc_uuid).

* :func:`tunnel_flows`   - table 0 decapsulation per tunnel port (+ VXLAN
  multicast and ramp-switch flows).
* :func:`default_flows`  - priority-0 defaults of tables 0, 37-41, 64, 65 and
  the table 38/39 priority 10/150 flag flows.
* :func:`chassis_mac_conj_flows` - table 0 priority 180 first conjunction
  clause for MACs of remote chassis (ovn-chassis-mac-mappings).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ofctrl.flow import Flow
from ofctrl.match import Match
from ofctrl.ofpacts import Action, Conjunction, Resubmit
from physical import constants as C
from physical.common import clear_log_regs, drop_actions, parse_mac
from physical.inputs import PhysicalContext, Row, TunnelType, bound_chassis, cookie_of
from physical.ofbuild import load, move
from physical.ovshash import hash_string, hmap_order


def tunnel_flows(ctx: PhysicalContext, port_bindings: Iterable[Row] = ()) -> list[Flow]:
    flows: list[Flow] = []
    geneve = ctx.mff_ovn_geneve
    for tun in ctx.chassis_tunnels:
        m = Match([("in_port", tun.ofport, None)])
        acts: list[Action]
        if tun.type == TunnelType.GENEVE:
            acts = [move("tun_id", 0, C.LOG_DATAPATH, 0, 24),
                    move(geneve, 16, C.LOG_INPORT, 0, 15),
                    move(geneve, 0, C.LOG_OUTPORT, 0, 16)]
        elif tun.type == TunnelType.STT:
            acts = [move("tun_id", 40, C.LOG_INPORT, 0, 15),
                    move("tun_id", 24, C.LOG_OUTPORT, 0, 16),
                    move("tun_id", 0, C.LOG_DATAPATH, 0, 24)]
        else:
            acts = [move("tun_id", 12, C.LOG_OUTPORT, 0, 12),
                    move("tun_id", 0, C.LOG_DATAPATH, 0, 12)]
        acts.append(Resubmit(C.T_LOCAL_OUTPUT))
        flows.append(Flow(C.T_PHY_TO_LOG, 100, m, acts, 0))
    for tun in ctx.chassis_tunnels:
        if tun.type != TunnelType.VXLAN:
            continue
        bits = C.OVN_VXLAN_MIN_MULTICAST << 12
        m = Match([("in_port", tun.ofport, None), ("tun_id", bits, bits)])
        flows.append(Flow(C.T_PHY_TO_LOG, 105, m, [
            load(C.LOG_OUTPORT, 1, 15, 1),
            move("tun_id", 12, C.LOG_OUTPORT, 0, 11),
            move("tun_id", 0, C.LOG_DATAPATH, 0, 12),
            Resubmit(C.T_LOCAL_OUTPUT)], 0))
    vteps = [pb for pb in port_bindings if pb.type == "vtep"]
    for tun in ctx.chassis_tunnels:
        if tun.type != TunnelType.VXLAN:
            continue
        for pb in vteps:
            ch = bound_chassis(pb)
            if ch is None or ch.name != tun.chassis_name:
                continue
            m = Match([("in_port", tun.ofport, None), ("tun_id", pb.datapath.tunnel_key, None)])
            flows.append(Flow(C.T_PHY_TO_LOG, 110, m, [
                move("tun_id", 0, C.LOG_DATAPATH, 0, 24),
                load(C.LOG_INPORT, pb.tunnel_key, 0, 15),
                load(C.LOG_FLAGS, 1, C.MLF_RCV_FROM_RAMP_BIT, 1),
                Resubmit(C.T_LOG_INGRESS)], cookie_of(pb)))
    return flows


def default_flows(ctx: PhysicalContext) -> list[Flow]:
    d = ctx.debug
    flag = C.LOG_FLAGS
    spec: list[tuple[int, int, Match, Sequence[Action]]] = [
        (C.T_PHY_TO_LOG, 0, Match(), drop_actions(d, C.T_PHY_TO_LOG)),
        (C.T_LARGE_PKT_DETECT, 0, Match(), [Resubmit(C.T_REMOTE_OUTPUT)]),
        (C.T_LARGE_PKT_PROCESS, 10, Match([(flag, C.MLF_ALLOW_LOOPBACK, C.MLF_ALLOW_LOOPBACK)]),
         [Resubmit(C.T_LOCAL_OUTPUT)]),
        (C.T_LARGE_PKT_PROCESS, 0, Match(), [Resubmit(C.T_REMOTE_OUTPUT)]),
        (C.T_REMOTE_OUTPUT, 150,
         Match([(flag, C.MLF_RCV_FROM_RAMP, C.MLF_RCV_FROM_RAMP | C.MLF_ALLOW_LOOPBACK)]),
         [Resubmit(C.T_LOCAL_OUTPUT)]),
        (C.T_REMOTE_OUTPUT, 150, Match([(flag, C.MLF_LOCAL_ONLY, C.MLF_LOCAL_ONLY)]),
         [Resubmit(C.T_LOCAL_OUTPUT)]),
        (C.T_REMOTE_OUTPUT, 0, Match(), [Resubmit(C.T_LOCAL_OUTPUT)]),
        (C.T_LOCAL_OUTPUT, 0, Match(), drop_actions(d, C.T_LOCAL_OUTPUT)),
        (C.T_CHECK_LOOPBACK, 0, Match(), [*clear_log_regs(), Resubmit(C.T_LOG_EGRESS)]),
        (C.T_SAVE_INPORT, 0, Match(), [Resubmit(C.T_LOG_TO_PHY)]),
        (C.T_LOG_TO_PHY, 0, Match(), drop_actions(d, C.T_LOG_TO_PHY)),
    ]
    return [Flow(t, p, m, a, 0) for t, p, m, a in spec]


def chassis_mac_conj_flows(ctx: PhysicalContext) -> list[Flow]:
    """Table 0 prio 180 ``dl_src=<remote chassis MAC> -> conjunction(100,1/2)``.

    The C agent stops at the first unparsable MAC (entries are visited in its
    hmap order keyed by bridge name)."""
    entries: list[tuple[int, str]] = []
    info: dict[str, tuple[str, Row]] = {}
    idx = 0
    for ch in ctx.all_chassis:
        if ch.name == ctx.chassis.name:
            continue
        mappings = ch.other_config.get("ovn-chassis-mac-mappings", "")
        for token in (t for t in mappings.split(",") if t):
            bridge, sep, mac = token.partition(":")
            if not sep or not mac:
                continue
            key = f"{idx}"
            idx += 1
            entries.append((hash_string(bridge), key))
            info[key] = (mac, ch)
    flows: list[Flow] = []
    for key in hmap_order(entries):
        mac_text, ch = info[key]
        mac = parse_mac(mac_text)
        if mac is None:
            return flows
        flows.append(Flow(C.T_PHY_TO_LOG, 180, Match([("eth_src", mac, None)]),
                          [Conjunction(C.CHASSIS_MAC_TO_ROUTER_MAC_CONJID, 1, 2)],
                          cookie_of(ch)))
    return flows
