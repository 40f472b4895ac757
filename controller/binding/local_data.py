"""Local datapaths, lport types, HA chassis groups and tracked binding changes.

Design note
-----------
Data shared by binding, ct zones and (later) lflow/physical flow generation:

* :class:`LocalDatapath` - a datapath that has something bound here, or that
  is reachable from one through ``patch``/``l3gateway`` peers
  (:func:`add_local_datapath`, recursive, depth <= 100).  It records its
  peer ports as ``(local pb, remote pb)`` pairs and its localnet port.
* :class:`TrackedDatapaths` - what changed in this engine run: datapaths that
  became local (NEW) and lports NEW / UPDATED / REMOVED per datapath; ct
  zones, lflow and physical flow handlers consume it.
* :func:`lport_type` / :func:`ha_group_is_active` - 23.03 classification
  and HA "active chassis" rules.
"""

from __future__ import annotations

import enum
import uuid as uuidlib
from typing import Any, Iterable

import structlog

from controller.ovsdb.indexes import SbIndexes, ref_uuid
from controller.vlog import RateLimiter
from physical.inputs import opt_first  # noqa: F401  (re-exported: the one helper)
from physical.lport import ha_group_is_active  # noqa: F401  (re-exported)

log = structlog.get_logger("binding")
_rl_deep = RateLimiter(per_minute=60, burst=1)


class LportType(enum.Enum):
    VIF = "VIF"
    CONTAINER = "CONTAINER"
    VIRTUAL = "VIRTUAL"
    PATCH = "PATCH"
    CHASSISREDIRECT = "CHASSISREDIRECT"
    L3GATEWAY = "L3GATEWAY"
    LOCALNET = "LOCALNET"
    LOCALPORT = "LOCALPORT"
    L2GATEWAY = "L2GATEWAY"
    EXTERNAL = "EXTERNAL"
    REMOTE = "REMOTE"
    VTEP = "VTEP"
    UNKNOWN = "UNKNOWN"


_TYPE_BY_NAME = {
    "patch": LportType.PATCH, "chassisredirect": LportType.CHASSISREDIRECT,
    "l3gateway": LportType.L3GATEWAY, "localnet": LportType.LOCALNET,
    "localport": LportType.LOCALPORT, "l2gateway": LportType.L2GATEWAY,
    "external": LportType.EXTERNAL, "remote": LportType.REMOTE, "vtep": LportType.VTEP,
    "virtual": LportType.VIRTUAL,
}


def lport_type(pb: Any) -> LportType:
    t = pb.type
    if t == "":
        return LportType.CONTAINER if opt_first(pb.parent_port) else LportType.VIF
    return _TYPE_BY_NAME.get(t, LportType.UNKNOWN)


# ------------------------------------------------------------------ HA groups
def _ha_members(group: Any) -> list[tuple[Any, int]]:
    out = []
    for hc in group.ha_chassis:
        ch = opt_first(hc.chassis)
        if ch is not None:
            out.append((ch, int(hc.priority)))
    return out


def ha_group_contains(group: Any | None, chassis: Any) -> bool:
    if group is None or chassis is None:
        return False
    return any(ch.uuid == chassis.uuid for ch, _ in _ha_members(group))


# ------------------------------------------------------------------ local DPs
class LocalDatapath:
    __slots__ = ("datapath", "uuid", "key", "is_switch", "is_transit_switch",
                 "localnet_port", "peer_ports", "external_ports", "multichassis_ports")

    def __init__(self, dp: Any) -> None:
        self.datapath = dp
        self.uuid: uuidlib.UUID = dp.uuid
        self.key = int(dp.tunnel_key)
        ext = dp.external_ids
        self.is_switch = "logical-switch" in ext
        self.is_transit_switch = "interconn-ts" in ext
        self.localnet_port: Any | None = None
        self.peer_ports: list[tuple[Any, Any]] = []
        self.external_ports: dict[str, Any] = {}
        self.multichassis_ports: dict[str, Any] = {}

    def add_peer(self, local: Any, remote: Any) -> None:
        for lp, _ in self.peer_ports:
            if lp.uuid == local.uuid:
                return
        self.peer_ports.append((local, remote))


class TrackedType(enum.Enum):
    NEW = "new"
    UPDATED = "updated"
    REMOVED = "removed"


class TrackedDatapath:
    __slots__ = ("datapath", "type", "lports")

    def __init__(self, dp: Any, ttype: TrackedType) -> None:
        self.datapath = dp
        self.type = ttype
        self.lports: dict[str, tuple[Any, TrackedType]] = {}


class TrackedDatapaths:
    """Datapaths and lports changed during this engine run."""

    def __init__(self) -> None:
        self.dps: dict[uuidlib.UUID, TrackedDatapath] = {}

    def __bool__(self) -> bool:
        return bool(self.dps)

    def add_dp(self, dp: Any, ttype: TrackedType) -> TrackedDatapath:
        tdp = self.dps.get(dp.uuid)
        if tdp is None:
            tdp = self.dps[dp.uuid] = TrackedDatapath(dp, ttype)
        elif ttype is TrackedType.NEW:
            tdp.type = TrackedType.NEW
        return tdp

    def add_lport(self, pb: Any, ttype: TrackedType) -> None:
        dp = pb.datapath
        if dp is None:
            return
        tdp = self.add_dp(dp, TrackedType.UPDATED)
        tdp.lports[pb.logical_port] = (pb, ttype)

    def clear(self) -> None:
        self.dps.clear()

    def new_datapaths(self) -> list[Any]:
        return [t.datapath for t in self.dps.values() if t.type is TrackedType.NEW]


def _need_add_peer(idx: SbIndexes, pb: Any, chassis: Any) -> bool:
    if pb.type == "l3gateway":
        ch = opt_first(pb.chassis)
        return ch is not None and chassis is not None and ch.uuid == chassis.uuid
    if pb.type != "patch":
        return False
    crp_name = pb.options.get("chassis-redirect-port")
    if not crp_name:
        return True
    crp = idx.pb_by_name.get(crp_name)
    if crp is None:
        return False
    if crp.options.get("always-redirect") != "true":
        return True
    grp = opt_first(crp.ha_chassis_group)
    return ha_group_contains(grp, chassis) if grp is not None else False


def add_local_datapath(idx: SbIndexes, dp: Any, chassis: Any,
                       local_dps: dict[uuidlib.UUID, LocalDatapath],
                       tracked: TrackedDatapaths | None, depth: int = 0) -> LocalDatapath:
    ld = local_dps.get(dp.uuid)
    if ld is not None:
        return ld
    ld = local_dps[dp.uuid] = LocalDatapath(dp)
    if tracked is not None:
        tracked.add_dp(dp, TrackedType.NEW)
    if depth >= 100:
        log.warn_rl(_rl_deep, "datapaths nested too deep")
        return ld
    for pb in list(idx.pbs_on_datapath(dp.uuid)):
        if pb.type not in ("patch", "l3gateway"):
            continue
        peer_name = pb.options.get("peer")
        if not peer_name:
            continue
        peer = idx.pb_by_name.get(peer_name)
        if peer is None:
            continue
        peer_dp = peer.datapath
        if peer_dp is None or not _need_add_peer(idx, pb, chassis):
            continue
        peer_ld = add_local_datapath(idx, peer_dp, chassis, local_dps, tracked, depth + 1)
        peer_ld.add_peer(peer, pb)
        ld.add_peer(pb, peer)
    return ld


def datapath_uuid_of(pb: Any) -> uuidlib.UUID | None:
    return ref_uuid(pb, "datapath")


def related_id(dp_key: int, port_key: int) -> str:
    return f"{dp_key}_{port_key}"


def iter_local_dp_rows(local_dps: dict[uuidlib.UUID, LocalDatapath]) -> Iterable[Any]:
    return (ld.datapath for ld in local_dps.values())
