"""What a compiled logical flow depends on (the C agent's objdep references).

``LflowRefs``: the address sets (with use counts), port groups, ports,
multicast groups (``mcgroup_ref``: "<dp key>_<name>") and template
variables one compiled lflow used; ``RefIndex``: resource -> lflows and the
reverse, so a change re-processes only the lflows that use it.  Stateless
apart from ``RefIndex``'s two dicts (kept in step by ``add``/``remove``).
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable, Mapping


def mcgroup_ref(dp_key: int, name: str) -> str:
    """The reference name of multicast group `name` on datapath `dp_key`
    (as the C agent's MC_GROUP references: "<dp_tunnel_key>_<name>"), so a
    change of one switch's group re-processes only that switch's lflows."""
    return f"{dp_key}_{name}"


class LflowRefs:
    """Resources a compiled lflow depends on (objdep references); multicast
    groups are named per datapath (:func:`mcgroup_ref`)."""

    __slots__ = ("addr_sets", "port_groups", "ports", "mcgroups", "templates")

    def __init__(self, addr_sets: Mapping[str, int] | None = None,
                 port_groups: frozenset[str] = frozenset(),
                 ports: frozenset[str] = frozenset(),
                 mcgroups: frozenset[str] = frozenset(),
                 templates: frozenset[str] = frozenset()) -> None:
        self.addr_sets: Mapping[str, int] = addr_sets or {}
        self.port_groups = port_groups
        self.ports = ports
        self.mcgroups = mcgroups
        self.templates = templates

    def __bool__(self) -> bool:
        return bool(self.addr_sets or self.port_groups or self.ports or self.mcgroups
                    or self.templates)

    def merged(self, other: "LflowRefs") -> "LflowRefs":
        if not other:
            return self
        if not self:
            return other
        a = dict(self.addr_sets)
        for k, v in other.addr_sets.items():
            a[k] = a.get(k, 0) + v
        return LflowRefs(a, self.port_groups | other.port_groups, self.ports | other.ports,
                         self.mcgroups | other.mcgroups, self.templates | other.templates)

    def __repr__(self) -> str:
        return (f"LflowRefs(addr_sets={dict(self.addr_sets)}, port_groups={set(self.port_groups)},"
                f" ports={set(self.ports)}, mcgroups={set(self.mcgroups)},"
                f" templates={set(self.templates)})")


NO_REFS = LflowRefs()


class RefIndex:
    """Which lflows use which resource (the C agent's objdep manager):
    resource kind -> name -> lflow UUIDs, and the reverse.  ``add(lflow,
    refs)`` records an ``LflowRefs``; ``users(kind, names)`` are the lflows
    to re-process when those resources change; kinds are "addr_sets",
    "port_groups", "ports", "mcgroups" ("<dp key>_<name>") and "templates"."""

    KINDS = ("addr_sets", "port_groups", "ports", "mcgroups", "templates")

    def __init__(self) -> None:
        self.by_res: dict[str, dict[str, set[uuidlib.UUID]]] = {k: {} for k in self.KINDS}
        self.by_lflow: dict[uuidlib.UUID, list[tuple[str, str]]] = {}

    def add(self, lflow: uuidlib.UUID, refs: LflowRefs) -> None:
        entries = self.by_lflow.setdefault(lflow, [])
        for kind in self.KINDS:
            for name in getattr(refs, kind):
                self.by_res[kind].setdefault(name, set()).add(lflow)
                entries.append((kind, name))

    def remove(self, lflow: uuidlib.UUID) -> None:
        for kind, name in self.by_lflow.pop(lflow, ()):
            s = self.by_res[kind].get(name)
            if s is not None:
                s.discard(lflow)
                if not s:
                    del self.by_res[kind][name]

    def users(self, kind: str, names: Iterable[str]) -> set[uuidlib.UUID]:
        out: set[uuidlib.UUID] = set()
        idx = self.by_res[kind]
        for n in names:
            out |= idx.get(n, set())
        return out

    def clear(self) -> None:
        for d in self.by_res.values():
            d.clear()
        self.by_lflow.clear()
