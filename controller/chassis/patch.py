"""Patch ports between br-int and provider bridges (OVN 23.03 patch.c).

Design note
-----------
For every ``localnet`` port on a local datapath whose ``network_name`` is in
``ovn-bridge-mappings`` (and every ``l2gateway`` port bound here), a pair of
OVS patch ports ``patch-br-int-to-<lport>`` / ``patch-<lport>-to-br-int``
links br-int and the mapped bridge; both Ports carry
``external_ids:ovn-localnet-port`` (or ``ovn-l2gateway-port``) = lport.
:func:`plan_patch_ports` is pure (what to create, which br-int patch ports
are stale); :func:`patch_run` applies it in the OVS transaction.  Only the
local datapaths' ports are looked at (through the SB index), never the whole
Port_Binding table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import structlog

from controller.binding.local_data import LocalDatapath, opt_first
from controller.chassis.encaps import has_map_key
from controller.ovsdb.indexes import SbIndexes
from controller.vlog import RateLimiter

log = structlog.get_logger("patch")
_rl = RateLimiter(per_minute=60, burst=5)
PATCH_KEYS = ("ovn-localnet-port", "ovn-l2gateway-port", "ovn-l3gateway-port",
              "ovn-logical-patch-port")


_PATCHED_TYPES = ("localnet", "l2gateway")


def patch_port_name(src: str, dst: str) -> str:
    return f"patch-{src}-to-{dst}"


@dataclass(frozen=True)
class PatchSpec:
    bridge: str       # bridge the port goes on
    name: str
    peer: str
    key: str          # external_ids key on the Port
    lport: str


@dataclass
class PatchPlan:
    create: list[PatchSpec]
    stale: list[Any]      # br-int Port rows to delete (with their peers)


def _patch_ports_by_peer(br: Any) -> dict[str, Any]:
    """peer name -> first port of `br` with a patch interface to it (one
    walk per bridge, not one per localnet port)."""
    out: dict[str, Any] = {}
    for p in br.ports:
        for i in p.interfaces:
            if i.type == "patch":
                peer = i.options.get("peer")
                if peer:
                    out.setdefault(peer, p)
    return out


def plan_patch_ports(br_int: Any, bridges_by_name: Mapping[str, Any],
                     mappings: Iterable[tuple[str, str]], chassis: Any,
                     local_dps: Mapping[Any, LocalDatapath], idx: SbIndexes,
                     missed: set[str], scan_ports: bool = True) -> PatchPlan:
    """``scan_ports`` False: skip the local datapaths' ports (only right
    when no mapping names an existing bridge, so none can get a patch)."""
    net_to_bridge: dict[str, Any] = {}
    for net, brname in mappings:
        br = bridges_by_name.get(brname)
        if br is None:
            log.warn_rl(_rl, f"Bridge '{brname}' not found for network '{net}'")
            continue
        net_to_bridge[net] = br
    existing: dict[str, Any] = {}
    for p in br_int.ports:
        if has_map_key(p, "external_ids", PATCH_KEYS):   # (no conversion per VIF port)
            existing[p.name] = p
    create: list[PatchSpec] = []
    peers: dict[str, dict[str, Any]] = {}    # bridge -> patch peer -> its first port
    for ld in (local_dps.values() if scan_ports else ()):
        for pb in idx.pbs_on_datapath(ld.uuid):
            if not has_map_key(pb, "type", _PATCHED_TYPES):
                continue          # (most ports: no conversion of the row's type)
            if pb.type == "l2gateway":
                key, check_chassis = "ovn-l2gateway-port", True
            elif pb.type == "localnet":
                key, check_chassis = "ovn-localnet-port", False
            else:
                continue
            if check_chassis:
                ch = opt_first(pb.chassis)
                if ch is None or chassis is None or ch.name != chassis.name:
                    continue
            net = pb.options.get("network_name")
            if not net:
                log.err_rl(_rl, f"{pb.type} port '{pb.logical_port}' has no network name.")
                continue
            br_ln = net_to_bridge.get(net)
            msg_key = f"{pb.logical_port};{net}"
            if br_ln is None:
                if pb.type == "l2gateway":
                    log.err_rl(_rl, f"bridge not found for {pb.type} port '{pb.logical_port}' "
                               f"with network name '{net}'")
                elif msg_key not in missed:
                    log.info(f"bridge not found for {pb.type} port '{pb.logical_port}' with "
                             f"network name '{net}'; skipping")
                    missed.add(msg_key)
                continue
            missed.discard(msg_key)
            n1 = patch_port_name(br_int.name, pb.logical_port)
            n2 = patch_port_name(pb.logical_port, br_int.name)
            for br, name, peer in ((br_int, n1, n2), (br_ln, n2, n1)):
                by_peer = peers.get(br.name)
                if by_peer is None:
                    by_peer = peers[br.name] = _patch_ports_by_peer(br)
                found = by_peer.get(peer)
                if found is not None:
                    existing.pop(found.name, None)
                    continue
                create.append(PatchSpec(br.name, name, peer, key, pb.logical_port))
    return PatchPlan(create, list(existing.values()))


class StartupDelay:
    """``daemon_started_recently``: true for the first 20 engine updates and
    10 s (``debug/ignore-startup-delay`` ends it)."""

    SEED = 20
    DELAY_MS = 10_000

    def __init__(self, now_ms: int) -> None:
        self.countdown = self.SEED
        self.started_ms = now_ms
        self.ignore = False

    def engine_updated(self) -> None:
        if self.countdown > 0:
            self.countdown -= 1

    def active(self, now_ms: int) -> bool:
        if self.ignore:
            return False
        if self.countdown:
            return True
        return now_ms - self.started_ms <= self.DELAY_MS


class Patches:
    def __init__(self) -> None:
        self.missed: set[str] = set()
        # Local datapaths whose ports were last scanned while no mapping named
        # an existing bridge (then a scan only logs skipped localnet ports).
        self._scanned_unmapped: frozenset[Any] | None = None

    def run(self, ovs_txn: Any | None, ovs_tables: Mapping[str, Any], br_int: Any | None,
            mappings: Iterable[tuple[str, str]], chassis: Any,
            local_dps: Mapping[Any, LocalDatapath], idx: SbIndexes,
            may_delete: bool = True) -> bool:
        """``may_delete`` is False while the daemon started recently: the SB
        contents may still be incomplete, so stale-looking ports are kept."""
        if ovs_txn is None or br_int is None:
            return False
        bridges = {b.name: b for b in ovs_tables["Bridge"].rows.values()}
        mappings = list(mappings)
        mapped = any(brname in bridges for _net, brname in mappings)
        dps = frozenset(local_dps)
        scan = mapped or dps != self._scanned_unmapped
        plan = plan_patch_ports(br_int, bridges, mappings, chassis, local_dps, idx, self.missed,
                                scan_ports=scan)
        self._scanned_unmapped = None if mapped else dps
        if not may_delete:
            plan.stale = []
        if not plan.create and not plan.stale:
            return False
        new_ports: dict[str, list[Any]] = {}
        for spec in plan.create:
            ovs_txn.add_comment(f"ovn-controller: creating patch port '{spec.name}' "
                                f"from '{spec.bridge}'")
            iface = ovs_txn.insert(ovs_tables["Interface"])
            iface.name = spec.name
            iface.type = "patch"
            iface.options = {"peer": spec.peer}
            port = ovs_txn.insert(ovs_tables["Port"])
            port.name = spec.name
            port.interfaces = [iface]
            port.external_ids = {spec.key: spec.lport}
            new_ports.setdefault(spec.bridge, []).append(port)
        gone: set[Any] = set()
        for port in plan.stale:
            gone.add(port.uuid)
            for i in port.interfaces:
                if i.type == "patch" and i.options.get("peer"):
                    peer_name = i.options["peer"]
                    for b in bridges.values():
                        for p in b.ports:
                            if p.name == peer_name:
                                gone.add(p.uuid)
        for b in bridges.values():
            adds = new_ports.get(b.name, [])
            cur = list(b.ports)
            keep = [p for p in cur if p.uuid not in gone]
            if adds or len(keep) != len(cur):
                b.verify("ports")
                b.ports = keep + adds
        return True
