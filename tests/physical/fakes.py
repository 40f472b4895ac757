"""Hand-built IDL-like SB rows (SimpleNamespace) for the physical tests."""

from __future__ import annotations

import types
import uuid
from typing import Any

from ofctrl.flow import Flow
from physical import ChassisTunnel, LocalDatapath, PhysicalContext, TunnelType, flow_to_string

NS = types.SimpleNamespace


def row(uuid_text: str, **cols: Any) -> NS:
    return NS(uuid=uuid.UUID(uuid_text), **cols)


def chassis(name: str, u: str, **other: str) -> NS:
    return row(u, name=name, hostname=name, other_config=dict(other))


def datapath(key: int, u: str, switch: bool = True) -> NS:
    return row(u, tunnel_key=key,
               external_ids={"logical-switch" if switch else "logical-router": "x"})


def pb(name: str, u: str, dp: NS, key: int, type: str = "", **kw: Any) -> NS:
    cols: dict[str, Any] = dict(
        logical_port=name, type=type, tunnel_key=key, datapath=dp, options={},
        chassis=[], additional_chassis=[], encap=[], additional_encap=[],
        ha_chassis_group=[], parent_port=[], tag=[], mac=[], port_security=[],
        requested_chassis=[], requested_additional_chassis=[])
    cols.update(kw)
    return row(u, **cols)


HV1 = chassis("hv1", "6fa17272-ca13-4eff-b72f-6c48b69db429")
HV2 = chassis("hv2", "a63c49be-13f2-4255-99d7-7840f80568f4")
HV3 = chassis("hv3", "b63c49be-13f2-4255-99d7-7840f80568f5")

# Datapaths of the rich topology (same UUIDs and keys as reference-data/rich).
LS_B = datapath(1, "c0822390-6745-48d5-8aee-f771c4367f7c")
LS_PUB = datapath(2, "bd54f57f-83db-4d23-a675-e504f96808fd")
LS_A = datapath(3, "43421996-2d25-4bb1-8919-95c8977d7806")
LR0 = datapath(4, "bb3691da-b5df-4cf8-a295-c1709c52e323", switch=False)

ZONES = {
    "ls-a-md": 1, "ls-a-p1": 2, "ls-a-p2": 3, "ls-b-p1": 4, "ln-pub": 13, "cr-lr0-pub": 14,
    str(LS_A.uuid) + "_snat": 5, str(LS_A.uuid) + "_dnat": 6,
    str(LS_B.uuid) + "_snat": 7, str(LS_B.uuid) + "_dnat": 8,
    str(LR0.uuid) + "_snat": 9, str(LR0.uuid) + "_dnat": 12,
    str(LS_PUB.uuid) + "_snat": 10, str(LS_PUB.uuid) + "_dnat": 11,
}

GENEVE_HV2 = ChassisTunnel("hv2", 1, TunnelType.GENEVE, "127.0.0.2")
PORT_NAMES = {1: "ovn-hv2-0", 2: "patch-br-int-to", 11: "vif-a1", 12: "vif-a2",
              13: "vif-md", 21: "vif-b1"}


def context(pbs: list[NS], dps: list[NS] | None = None, **kw: Any) -> PhysicalContext:
    dps = dps if dps is not None else [LS_A, LS_B, LS_PUB, LR0]
    local = {}
    for dp in dps:
        ld = LocalDatapath(dp, is_switch="logical-switch" in dp.external_ids)
        for p in pbs:
            if p.datapath is not dp:
                continue
            if p.type == "localnet":
                ld.localnet_port = p
            if p.type == "external":
                ld.external_ports[p.logical_port] = p
            if p.additional_chassis:
                ld.multichassis_ports[p.logical_port] = p
            if p.type == "patch":
                peer = next((q for q in pbs if q.logical_port == p.options.get("peer")), None)
                if peer is not None:
                    ld.peer_ports.append((p, peer))
        local[dp.tunnel_key] = ld
    args: dict[str, Any] = dict(
        chassis=HV1, local_datapaths=local, port_bindings_by_name={p.logical_port: p for p in pbs},
        ct_zones=ZONES, chassis_tunnels=[GENEVE_HV2], all_chassis=[HV1, HV2])
    args.update(kw)
    return PhysicalContext(**args)


def lines(flows: list[Flow], names: dict[int, str] | None = None) -> list[str]:
    """Sorted dump-flows text of ``flows`` (port names from PORT_NAMES by default)."""
    return sorted(flow_to_string(f, PORT_NAMES if names is None else names) for f in flows)
