"""Port-binding and HA-group decisions shared by the binding code
(``controller/binding/claim.py``) and the physical flows (``physical/ports.py``).

* :func:`can_bind_here` - may this chassis claim the port, as main or
  additional chassis (``lport_can_bind_on_this_chassis``, 23.03);
* :func:`ha_chassis_ordered` - the members of an HA chassis group that can
  be active, by priority then name, both descending
  (``get_ordered_ha_chassis_list``);
* :func:`ha_group_is_active` - is this chassis the active member of an HA
  chassis group (``ha_chassis_group_is_active``);
* :func:`lport_is_chassis_resident` - is a logical port resident here: bound
  here, or a chassisredirect port whose HA group is active here
  (``lport_is_chassis_resident``).

Rows are IDL rows or fakes with the same attributes; chassis are compared
by UUID.  Pure functions, no state.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Collection

from physical.inputs import opt_first, same_chassis


class CanBind(enum.Enum):
    CANNOT = 0
    MAIN = 1
    ADDITIONAL = 2


def can_bind_here(chassis: Any, pb: Any) -> CanBind:
    """Whether `chassis` may claim `pb`: requested_chassis and
    requested_additional_chassis first, then ``options:requested-chassis``
    (names or hostnames, comma separated; the first one is the main one; no
    option at all means any chassis, as main)."""
    if same_chassis(opt_first(pb.requested_chassis), chassis):
        return CanBind.MAIN
    if any(same_chassis(c, chassis) for c in pb.requested_additional_chassis):
        return CanBind.ADDITIONAL
    opt = pb.options.get("requested-chassis")
    if not opt:
        return CanBind.MAIN
    result = CanBind.MAIN
    for name in (x for x in opt.split(",") if x):
        if name == chassis.name or name == getattr(chassis, "hostname", None):
            return result
        result = CanBind.ADDITIONAL
    return CanBind.CANNOT


def _name_desc_key(name: str) -> tuple[int, ...]:
    # Sorts names descending, a longer name before its prefix (strcmp order).
    return tuple(-ord(c) for c in name) + (1,)


def ha_chassis_ordered(group: Any | None, active_tunnels: Collection[str] | None = None,
                       local: Any | None = None) -> list[Any] | None:
    """Members of `group` (their Chassis rows) by priority, then name, both
    descending; with `active_tunnels`, only `local` and the chassis whose
    tunnel is up (BFD), and a lone candidate only while some ref_chassis
    tunnel is up.  None when there is no candidate."""
    if group is None or not group.ha_chassis:
        return None
    items: list[tuple[int, Any]] = []
    for hac in group.ha_chassis:
        ch = opt_first(hac.chassis)
        if ch is None:
            continue
        if (active_tunnels is not None and not same_chassis(ch, local)
                and ch.name not in active_tunnels):
            continue
        items.append((int(hac.priority), ch))
    if not items:
        return None
    if len(items) == 1:
        if active_tunnels is not None:
            refs = getattr(group, "ref_chassis", None) or ()
            if not any(rc.name in active_tunnels for rc in refs):
                return None
    else:
        items.sort(key=lambda it: (-it[0], _name_desc_key(it[1].name)))
    return [ch for _, ch in items]


def ha_group_is_active(group: Any | None, active_tunnels: Collection[str],
                       chassis: Any | None) -> bool:
    """True when `chassis` is the active member of `group`: its only member,
    its only member with a chassis, or, with tunnels up, the first of
    :func:`ha_chassis_ordered`."""
    if group is None or chassis is None or not group.ha_chassis:
        return False
    if len(group.ha_chassis) == 1:
        return same_chassis(opt_first(group.ha_chassis[0].chassis), chassis)
    present = [ch for ch in (opt_first(h.chassis) for h in group.ha_chassis) if ch is not None]
    if len(present) == 1 and same_chassis(present[0], chassis):
        return True
    if not active_tunnels:
        return False
    ordered = ha_chassis_ordered(group, active_tunnels, chassis)
    return ordered is not None and same_chassis(ordered[0], chassis)


def lport_is_chassis_resident(name: str, chassis: Any | None,
                              pb_by_name: Callable[[str], Any | None],
                              active_tunnels: Collection[str]) -> bool:
    """Port `name` is bound to `chassis`, or is a chassisredirect port whose
    HA chassis group has `chassis` as its active member."""
    pb = pb_by_name(name)
    if pb is None:
        return False
    ch = opt_first(pb.chassis)
    if ch is None:
        return False
    if pb.type != "chassisredirect":
        return same_chassis(ch, chassis)
    return ha_group_is_active(opt_first(pb.ha_chassis_group), active_tunnels, chassis)
