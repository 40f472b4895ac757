"""BFD on tunnels towards the chassis we share HA chassis groups with
(OVN 23.03 bfd.c), and the set of chassis reachable through a tunnel whose
BFD session is up ("active tunnels", which decides HA activity).

Design note
-----------
:func:`bfd_chassis` is pure: every chassis of an HA group with two or more
members that we belong to, plus that group's reference chassis (minus remote
ones); or, when we are only a reference chassis of a group, its members.
:func:`bfd_run` writes ``Interface.bfd`` (``enable=true`` + the SB_Global
``bfd-*`` options) on tunnel ports to those chassis and clears it elsewhere,
only when the value differs.  :func:`active_tunnels` reads
``bfd_status:state=up`` back.
"""

from __future__ import annotations

from typing import Any, Iterable

import structlog

from controller.binding.local_data import opt_first
from controller.chassis.encaps import CHASSIS_ID_KEY, parse_tunnel_id

log = structlog.get_logger("bfd")


def active_tunnels(br_int: Any | None) -> set[str]:
    out: set[str] = set()
    if br_int is None:
        return out
    for port in br_int.ports:
        if port.name == br_int.name:
            continue
        tid = port.external_ids.get(CHASSIS_ID_KEY)
        if tid is None:
            continue
        for iface in port.interfaces:
            try:
                if "remote_ip" not in iface.options:
                    continue
                if iface.bfd.get("enable") == "true" and \
                        iface.bfd_status.get("state") == "up":
                    parsed = parse_tunnel_id(tid)
                    if parsed is not None:
                        out.add(parsed[0])
            except AttributeError:      # a row inserted by this transaction
                continue
    return out


def bfd_chassis(me: Any, ha_groups: Iterable[Any]) -> set[str]:
    out: set[str] = set()
    for grp in ha_groups:
        members = [opt_first(hc.chassis) for hc in grp.ha_chassis]
        if len(members) < 2:
            continue
        names = {c.name for c in members if c is not None}
        is_member = any(c is not None and c.uuid == me.uuid for c in members)
        required = is_member
        if is_member:
            for ref in grp.ref_chassis:
                if ref.other_config.get("is-remote") != "true":
                    names.add(ref.name)
        elif any(ref.uuid == me.uuid for ref in grp.ref_chassis):
            required = True
        if required:
            out |= names
    return out


def bfd_config(sb_global: Any | None) -> dict[str, str]:
    # check_tnl_key: only BFD packets with tunnel key 0 are BFD (a fix the
    # Debian 23.03.1 binary we compare against carries; in upstream 23.03.2).
    cfg = {"enable": "true", "check_tnl_key": "true"}
    if sb_global is not None:
        opts = sb_global.options
        for key, name in (("bfd-min-rx", "min_rx"), ("bfd-decay-min-rx", "decay_min_rx"),
                          ("bfd-min-tx", "min_tx"), ("bfd-mult", "mult")):
            if opts.get(key):
                cfg[name] = opts[key]
    return cfg


def bfd_run(ovs_txn: Any | None, br_int: Any | None, me: Any | None,
            ha_groups: Iterable[Any], sb_global: Any | None) -> int:
    """Enable/disable BFD on tunnel interfaces; returns how many changed."""
    if ovs_txn is None or br_int is None or me is None:
        return 0
    wanted = bfd_chassis(me, ha_groups)
    cfg = bfd_config(sb_global)
    changed = 0
    for port in br_int.ports:
        tid = port.external_ids.get(CHASSIS_ID_KEY)
        if tid is None:
            continue
        parsed = parse_tunnel_id(tid)
        on = parsed is not None and parsed[0] in wanted
        for iface in port.interfaces:
            try:
                cur = dict(iface.bfd)
            except AttributeError:
                continue
            if on and cur != cfg:
                iface.verify("bfd")
                iface.bfd = cfg
                log.info(f"Enabled BFD on interface {iface.name}")
                changed += 1
            elif not on and cur:
                iface.verify("bfd")
                iface.bfd = {}
                log.info(f"Disabled BFD on interface {iface.name}")
                changed += 1
    return changed
