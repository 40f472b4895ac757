"""Chassis / Chassis_Private / Encap registration and the integration bridge.

Design note
-----------
:func:`chassis_config` turns the local Open_vSwitch row (and br-int) into a
:class:`ChassisConfig` - pure, no I/O - or None when ``ovn-encap-type`` /
``ovn-encap-ip`` are missing.  :func:`chassis_run` then makes the SB rows
match it inside the SB transaction of this iteration, writing only columns
that differ.  As in OVN 23.03 the function returns the Chassis row only once
it has been read back from the SB (the iteration that inserts it returns
None), because other modules need a row with a real UUID.

:func:`ensure_br_int` creates br-int when missing (``fail_mode=secure``,
``disable-in-band``, a random ``hwaddr`` so the datapath id never changes)
and keeps its fail mode and datapath type right.
"""

from __future__ import annotations

import random
import socket
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import structlog

from controller.knobs import get_knob, raw_value
from controller.ovsdb.indexes import SbIndexes
from controller.vlog import RateLimiter

log = structlog.get_logger("chassis")
_rl_encap = RateLimiter(per_minute=12, burst=1)

FEATURE_FLAGS = ("port-up-notif", "ct-no-masked-label", "mac-binding-timestamp",
                 "ovn-ct-lb-related")
DEFAULT_DATAPATH = "system"


@dataclass
class ChassisConfig:
    name: str
    hostname: str
    encap_types: tuple[str, ...]
    encap_ips: tuple[str, ...]
    encap_csum: str
    transport_zones: tuple[str, ...]
    other_config: dict[str, str] = field(default_factory=dict)


def _first_row(rows: Mapping[Any, Any]) -> Any | None:
    for r in rows.values():
        return r
    return None


def chassis_config(ovs_row: Any, chassis_name: str, br_int: Any | None) -> ChassisConfig | None:
    """Desired state of this chassis' SB records (``chassis_parse_ovs_config``)."""
    ext: Mapping[str, str] = ovs_row.external_ids
    enc_type, _ = raw_value(ext, "ovn-encap-type", chassis_name)
    enc_ip, _ = raw_value(ext, "ovn-encap-ip", chassis_name)
    if not enc_type or not enc_ip:
        log.info_rl(_rl_encap, "Need to specify an encap type and ip")
        return None
    types = tuple(dict.fromkeys(t.strip() for t in enc_type.split(",") if t.strip()))
    for t in types:
        if t not in ("geneve", "stt", "vxlan"):
            log.info(f"Unknown tunnel type: {t}")
    ips = tuple(dict.fromkeys(i.strip() for i in enc_ip.split(",") if i.strip()))

    def raw(key: str, default: str) -> str:
        v, _ = raw_value(ext, key, chassis_name)
        return v if v is not None else default

    hostname = raw("hostname", "") or socket.gethostname()
    datapath_type = (br_int.datapath_type if br_int is not None else "") or ""
    iface_types = ",".join(ovs_row.iface_types)
    oc = {
        "ovn-bridge-mappings": raw("ovn-bridge-mappings", ""),
        "datapath-type": datapath_type,
        "ovn-cms-options": raw("ovn-cms-options", ""),
        "ovn-monitor-all": raw("ovn-monitor-all", "false"),
        "ovn-enable-lflow-cache": raw("ovn-enable-lflow-cache", "true"),
        "ovn-limit-lflow-cache": raw("ovn-limit-lflow-cache", ""),
        "ovn-memlimit-lflow-cache-kb": raw("ovn-memlimit-lflow-cache-kb", ""),
        "ovn-trim-limit-lflow-cache": raw("ovn-trim-limit-lflow-cache", ""),
        "ovn-trim-wmark-perc-lflow-cache": raw("ovn-trim-wmark-perc-lflow-cache", ""),
        "ovn-trim-timeout-ms": raw("ovn-trim-timeout-ms", ""),
        "iface-types": iface_types,
        "ovn-chassis-mac-mappings": raw("ovn-chassis-mac-mappings", ""),
        "is-interconn": "true" if get_knob(ext, "ovn-is-interconn", chassis_name) else "false",
    }
    for f in FEATURE_FLAGS:
        oc[f] = "true"
    tz = tuple(sorted(set(get_knob(ext, "ovn-transport-zones", chassis_name))))
    return ChassisConfig(chassis_name, hostname, types, ips, raw("ovn-encap-csum", "true"),
                         tz, oc)


def _encaps_match(cfg: ChassisConfig, encaps: Iterable[Any]) -> bool:
    encs = list(encaps)
    if len(encs) != len(cfg.encap_types) * len(cfg.encap_ips):
        return False
    seen_types = set()
    for e in encs:
        if e.chassis_name != cfg.name or e.type not in cfg.encap_types \
                or e.ip not in cfg.encap_ips or e.options.get("csum", "") != cfg.encap_csum:
            return False
        seen_types.add(e.type)
    return len(seen_types) == len(cfg.encap_types)


class ChassisState:
    """What chassis_run found: rows (may be None) and whether it wrote."""

    __slots__ = ("chassis", "chassis_private", "updated")

    def __init__(self) -> None:
        self.chassis: Any | None = None
        self.chassis_private: Any | None = None
        self.updated = False


def chassis_run(sb_txn: Any | None, sb_tables: Mapping[str, Any], idx: SbIndexes,
                cfg: ChassisConfig | None) -> ChassisState:
    """Register or update this chassis; returns the rows known in the IDL."""
    st = ChassisState()
    if cfg is None:
        return st
    ch = idx.chassis_by_name.get(cfg.name)
    existed = ch is not None
    if sb_txn is None:
        st.chassis = ch
        st.chassis_private = idx.chassis_private_by_name.get(cfg.name)
        return st
    if ch is None:
        ch = sb_txn.insert(sb_tables["Chassis"])
        ch.name = cfg.name
        st.updated = True
    updated = _chassis_update(sb_txn, sb_tables, ch, cfg, fresh=not existed)
    st.updated |= updated
    if st.updated:
        sb_txn.add_comment(f"ovn-controller: {'updating' if existed else 'registering'}"
                           f" chassis '{cfg.name}'")
    cp = idx.chassis_private_by_name.get(cfg.name)
    if cp is None:
        cp = sb_txn.insert(sb_tables["Chassis_Private"])
        cp.name = cfg.name
        cp.chassis = [ch]
    else:
        cur = cp.chassis
        cur_row = cur[0] if cur else None
        if cur_row is None or getattr(cur_row, "uuid", None) != ch.uuid:
            cp.chassis = [ch]
    if existed:
        st.chassis = ch
        st.chassis_private = idx.chassis_private_by_name.get(cfg.name)
    return st


def _chassis_update(sb_txn: Any, sb_tables: Mapping[str, Any], ch: Any,
                    cfg: ChassisConfig, fresh: bool) -> bool:
    updated = False
    if fresh or ch.hostname != cfg.hostname:
        ch.hostname = cfg.hostname
        updated = True
    cur_oc: dict[str, str] = dict(ch.other_config) if not fresh else {}
    new_oc = dict(cur_oc)
    new_oc.update(cfg.other_config)
    if fresh or new_oc != cur_oc:
        if not fresh:
            ch.verify("other_config")
        ch.other_config = new_oc
        updated = True
    cur_tz = set(ch.transport_zones) if not fresh else set()
    if fresh or cur_tz != set(cfg.transport_zones):
        ch.transport_zones = list(cfg.transport_zones)
    if fresh or not _encaps_match(cfg, ch.encaps):
        encaps = []
        for ip in cfg.encap_ips:
            for t in cfg.encap_types:
                e = sb_txn.insert(sb_tables["Encap"])
                e.type = t
                e.ip = ip
                e.options = {"csum": cfg.encap_csum}
                e.chassis_name = cfg.name
                encaps.append(e)
        ch.encaps = encaps
        updated = True
    return updated


def chassis_cleanup(sb_txn: Any | None, chassis: Any | None, chassis_private: Any | None) -> bool:
    """Delete this chassis' SB rows; True when nothing is left to do."""
    if chassis is None and chassis_private is None:
        return True
    if sb_txn is not None:
        name = getattr(chassis, "name", None) or getattr(chassis_private, "name", "")
        sb_txn.add_comment(f"ovn-controller: unregistering chassis '{name}'")
        if chassis is not None:
            chassis.delete()
        if chassis_private is not None:
            chassis_private.delete()
    return False


# --------------------------------------------------------------- br-int
def random_hwaddr() -> str:
    b = [random.randint(0, 255) for _ in range(6)]
    b[0] = (b[0] & 0xFE) | 0x02          # unicast, locally administered
    return ":".join(f"{x:02x}" for x in b)


def find_bridge(bridges: Mapping[Any, Any], name: str) -> Any | None:
    for br in bridges.values():
        if br.name == name:
            return br
    return None


def ensure_br_int(ovs_txn: Any | None, ovs_tables: Mapping[str, Any], ovs_row: Any,
                  bridge_name: str, datapath_type: str | None) -> Any | None:
    """Return br-int, creating or fixing it when an OVS transaction is open."""
    br = find_bridge(ovs_tables["Bridge"].rows, bridge_name)
    if ovs_txn is None or ovs_row is None:
        return br
    if br is None:
        ovs_txn.add_comment(f"ovn-controller: creating integration bridge '{bridge_name}'")
        iface = ovs_txn.insert(ovs_tables["Interface"])
        iface.name = bridge_name
        iface.type = "internal"
        port = ovs_txn.insert(ovs_tables["Port"])
        port.name = bridge_name
        port.interfaces = [iface]
        br = ovs_txn.insert(ovs_tables["Bridge"])
        br.name = bridge_name
        br.fail_mode = ["secure"]
        br.ports = [port]
        br.other_config = {"disable-in-band": "true", "hwaddr": random_hwaddr()}
        ovs_row.verify("bridges")
        ovs_row.bridges = list(ovs_row.bridges) + [br]
        return None   # usable once read back
    want_dp = datapath_type or br.datapath_type or DEFAULT_DATAPATH
    if br.datapath_type != want_dp:
        br.datapath_type = want_dp
    fm = br.fail_mode
    if not fm or fm[0] != "secure":
        br.fail_mode = ["secure"]
        log.warning("Integration bridge fail-mode changed to 'secure'.")
    return br


def br_datapath(ovs_txn: Any | None, ovs_tables: Mapping[str, Any], ovs_row: Any,
                br_int: Any | None, datapath_type: str | None) -> Any | None:
    """The Datapath row of br-int's datapath type (created when missing, like
    ``create_br_datapath``); vswitchd fills its ``capabilities``."""
    if ovs_row is None or br_int is None:
        return None
    dp_type = datapath_type or br_int.datapath_type or DEFAULT_DATAPATH
    cur = dict(ovs_row.datapaths)
    dp = cur.get(dp_type)
    if dp is not None or ovs_txn is None:
        return dp
    ovs_txn.add_comment(f"ovn-controller: creating bridge datapath '{dp_type}'")
    row = ovs_txn.insert(ovs_tables["Datapath"])
    row.capabilities = {}     # the Python IDL drops inserts without any column set
    ovs_row.verify("datapaths")
    cur[dp_type] = row
    ovs_row.datapaths = cur
    return None
