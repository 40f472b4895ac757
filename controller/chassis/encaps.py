"""Tunnel ports on br-int towards the other chassis (OVN 23.03 encaps.c).

Design note
-----------
:func:`plan_tunnels` is pure: from this chassis, the other Chassis rows, the
SB_Global row, the knobs and the ports currently on br-int it computes which
tunnel ports must exist (:class:`TunnelSpec`), which existing ones are kept
unchanged and which must be deleted.  :func:`encaps_run` applies that plan in
the OVS transaction of the iteration.  Tunnel ids are
``<chassis>@<remote ip>`` in ``Port.external_ids:ovn-chassis-id``; port names
are ``ovn<idx>-<first 6 (5 with an idx) chars of the chassis>-<hex n>``, the
first free ``n``.  For each peer the best encap type both chassis support is
chosen (geneve > stt > vxlan) and one tunnel is made per remote IP of that
type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import ovs.db.data
import ovs.db.idl
import structlog

from controller.knobs import get_knob, raw_value

log = structlog.get_logger("encaps")

TUNNEL_PREF = {"geneve": 4, "stt": 2, "vxlan": 1}
CHASSIS_ID_KEY = "ovn-chassis-id"
_TUNNEL_KEYS = (CHASSIS_ID_KEY,)


_PROBES: dict[tuple[int, tuple[str, ...]], tuple[Any, tuple[Any, ...]]] = {}


def has_map_key(row: Any, column: str, keys: tuple[str, ...]) -> bool:
    """Whether map column `column` of `row` holds one of `keys` (for a set
    or scalar column: one of `keys` is among its values).

    br-int has one Port per VIF, so walks over it (tunnels, patch ports) must
    not convert every port's whole ``external_ids``: an IDL row without
    pending changes on that column is probed in its committed ``Datum``
    (hash lookups of the key atoms); anything else reads the column."""
    d = getattr(row, "__dict__", None)
    if d is not None and isinstance(row, ovs.db.idl.Row):
        changes = d.get("_changes")
        data = d.get("_data")
        if changes is not None and data is not None and column not in changes \
                and not d.get("_mutations"):
            datum = data.get(column)
            if datum is None and type(data) is ovs.db.idl.ColumnDefaultDict \
                    and column in d["_table"].columns:
                # Never sent by the server: the column's default, which holds
                # no map key and no set value (a scalar's default never
                # equals one of the probed non-empty keys either).
                return any(not k for k in keys) and d["_table"].columns[column].type.is_scalar()
            if datum is not None:
                col = d["_table"].columns[column]
                probe = _PROBES.get((id(col), keys))
                if probe is None or probe[0] is not col:
                    probe = (col, tuple(ovs.db.data.Atom(col.type.key.type, k) for k in keys))
                    _PROBES[(id(col), keys)] = probe
                vals = datum.values
                return any(a in vals for a in probe[1])
    value = getattr(row, column)
    if isinstance(value, (str, int, float)):
        return value in keys
    return any(k in value for k in keys)


def tunnel_id(chassis: str, ip: str) -> str:
    return f"{chassis}@{ip}"


def parse_tunnel_id(tid: str) -> tuple[str, str] | None:
    ch, sep, ip = tid.partition("@")
    if not sep or not ch or not ip:
        return None
    return ch, ip


@dataclass(frozen=True)
class TunnelSpec:
    tunnel_id: str
    type: str
    options: tuple[tuple[str, str], ...]
    name: str = ""


@dataclass
class TunnelPlan:
    add: list[TunnelSpec]
    delete: list[Any]       # Port rows
    keep: list[Any]         # Port rows


def _best_encap(peer: Any, my_types: set[str]) -> str | None:
    best, best_pref = None, 0
    for e in peer.encaps:
        pref = TUNNEL_PREF.get(e.type, 0)
        if pref > best_pref and e.type in my_types:
            best, best_pref = e.type, pref
    return best


def _tunnel_options(encap: Any, this_chassis: Any, ext: Mapping[str, str],
                    sb_global: Any | None, peer_name: str) -> dict[str, str]:
    me = this_chassis.name
    opts = {"remote_ip": encap.ip, "key": "flow"}
    csum = encap.options.get("csum")
    if csum in ("true", "false"):
        opts["csum"] = csum
    dst_port = encap.options.get("dst_port")
    if dst_port:
        opts["dst_port"] = dst_port
    tos, _ = raw_value(ext, "ovn-encap-tos", me)
    if tos and tos != "none":
        opts["tos"] = tos
    df, _ = raw_value(ext, "ovn-encap-df_default", me)
    if df is not None:
        opts["df_default"] = df
    set_local_ip = bool(get_knob(ext, "ovn-set-local-ip", me))
    if sb_global is not None and sb_global.ipsec:
        set_local_ip = True
        opts["remote_name"] = peer_name
        sbo = sb_global.options
        if sbo.get("ipsec_encapsulation") == "true":
            opts["ipsec_encapsulation"] = "yes"
        if sbo.get("ipsec_forceencaps") == "true":
            opts["ipsec_forceencaps"] = "yes"
    if set_local_ip:
        ips = {e.ip for e in this_chassis.encaps}
        if len(ips) == 1:
            opts["local_ip"] = next(iter(ips))
        elif ips:
            log.error("ovn-encap-ip has been configured as a list. This is unsupported for "
                      "IPsec and explicit local_ip configuration.")
            opts["local_ip"] = this_chassis.encaps[0].ip
    return opts


def chassis_idx(ext: Mapping[str, str], chassis: str) -> str:
    return ext.get(f"ovn-chassis-idx-{chassis}", "")


def _new_name(idx: str, chassis: str, used: set[str]) -> str | None:
    prefix = chassis[:5] if idx else chassis[:6]
    for i in range(0xFFFF):
        name = f"ovn{idx}-{prefix}-{i:x}"
        if name not in used:
            return name
    return None


def plan_tunnels(this_chassis: Any, chassis_rows: Iterable[Any], sb_global: Any | None,
                 ext: Mapping[str, str], br_ports: Iterable[Any]) -> TunnelPlan:
    me = this_chassis.name
    my_types = {e.type for e in this_chassis.encaps}
    my_tz = set(get_knob(ext, "ovn-transport-zones", me))
    i_am_interconn = this_chassis.other_config.get("is-interconn") == "true"
    existing: dict[str, Any] = {}
    delete: list[Any] = []
    ports = list(br_ports)
    used: set[str] | None = None     # every br-int port name, only to name a new tunnel
    for port in ports:
        if not has_map_key(port, "external_ids", _TUNNEL_KEYS):
            continue
        tid = port.external_ids.get(CHASSIS_ID_KEY)
        if tid is None:
            continue
        if tid in existing:
            delete.append(port)            # duplicate tunnel for the same id
        else:
            existing[tid] = port
    idx = chassis_idx(ext, me)
    add: list[TunnelSpec] = []
    keep: list[Any] = []
    for peer in sorted(chassis_rows, key=lambda c: c.name):
        if peer.name == me:
            continue
        peer_tz = set(peer.transport_zones)
        if (peer_tz or my_tz) and not (peer_tz & my_tz):
            continue
        if peer.other_config.get("is-remote") == "true" and not i_am_interconn:
            continue
        best = _best_encap(peer, my_types)
        if best is None:
            log.info(f"chassis_tunnel_add: No supported encaps for '{peer.name}'")
            continue
        for e in peer.encaps:
            if e.type != best:
                continue
            tid = tunnel_id(peer.name, e.ip)
            opts = _tunnel_options(e, this_chassis, ext, sb_global, peer.name)
            port = existing.pop(tid, None)
            if port is not None:
                ifaces = list(port.interfaces)
                if len(ifaces) == 1 and ifaces[0].type == best \
                        and dict(ifaces[0].options) == opts:
                    keep.append(port)
                    continue
                name = port.name
                delete.append(port)
            else:
                if used is None:
                    used = {p.name for p in ports}
                name = _new_name(idx, peer.name, used) or ""
                if not name:
                    log.warning(f"Unable to allocate unique name for '{peer.name}' tunnel")
                    continue
                used.add(name)
            add.append(TunnelSpec(tid, best, tuple(sorted(opts.items())), name))
    delete.extend(existing.values())
    return TunnelPlan(add, delete, keep)


def apply_plan(ovs_txn: Any, ovs_tables: Mapping[str, Any], br_int: Any,
               plan: TunnelPlan) -> bool:
    if not plan.add and not plan.delete:
        return False
    ovs_txn.add_comment("ovn-controller: modifying OVS tunnels")
    gone = {p.uuid for p in plan.delete}
    ports = [p for p in br_int.ports if p.uuid not in gone]
    for spec in plan.add:
        iface = ovs_txn.insert(ovs_tables["Interface"])
        iface.name = spec.name
        iface.type = spec.type
        iface.options = dict(spec.options)
        port = ovs_txn.insert(ovs_tables["Port"])
        port.name = spec.name
        port.interfaces = [iface]
        port.external_ids = {CHASSIS_ID_KEY: spec.tunnel_id}
        ports.append(port)
    br_int.verify("ports")
    br_int.ports = ports
    return True


class Encaps:
    """Per-process tunnel state (remembers br-int name for stale cleanup)."""

    def __init__(self) -> None:
        self.current_br_int: str | None = None

    def run(self, ovs_txn: Any | None, ovs_tables: Mapping[str, Any], br_int: Any | None,
            this_chassis: Any, chassis_rows: Iterable[Any], sb_global: Any | None,
            ext: Mapping[str, str]) -> bool:
        if ovs_txn is None or br_int is None:
            return False
        if self.current_br_int is None:
            prefix = f"ovn{chassis_idx(ext, this_chassis.name)}-"
            for br in ovs_tables["Bridge"].rows.values():
                if br.name != br_int.name:
                    _clear_old_tunnels(br, prefix)
            self.current_br_int = br_int.name
        elif self.current_br_int != br_int.name:
            for br in ovs_tables["Bridge"].rows.values():
                if br.name == self.current_br_int:
                    _clear_old_tunnels(br, "")
            self.current_br_int = br_int.name
        plan = plan_tunnels(this_chassis, chassis_rows, sb_global, ext, br_int.ports)
        return apply_plan(ovs_txn, ovs_tables, br_int, plan)


def _clear_old_tunnels(br: Any, prefix: str) -> None:
    ports = list(br.ports)
    keep = [p for p in ports
            if not (CHASSIS_ID_KEY in p.external_ids and p.name.startswith(prefix))]
    if len(keep) != len(ports):
        br.verify("ports")
        br.ports = keep


def encaps_cleanup(ovs_txn: Any | None, br_int: Any | None) -> bool:
    """Remove every OVN tunnel port; True when nothing is left to do."""
    if br_int is None:
        return True
    ports = list(br_int.ports)
    keep = [p for p in ports if CHASSIS_ID_KEY not in p.external_ids]
    if len(keep) == len(ports):
        return True
    if ovs_txn is not None:
        ovs_txn.add_comment("ovn-controller: destroying tunnels")
        br_int.verify("ports")
        br_int.ports = keep
    return False
