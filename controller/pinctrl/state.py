"""The read-only view of local state handlers and periodic senders consult.

Design note
-----------
The main loop owns every IDL; the pinctrl service (another thread) must
never touch one.  Instead the main loop publishes an immutable
:class:`LocalSnapshot` whenever the local state it is built from changes
(``sb_writes.SnapshotPublisher``), by swapping one reference: readers take
the reference once per packet-in and see one consistent version.  Handlers
are typed against the :class:`LocalView` protocol so tests can pass a small
dataclass.  Attributes are only ever added, never renamed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Protocol

from controller.pinctrl.dns_cache import EMPTY_DNS_CACHE, DnsCache

__all__ = ["PortInfo", "LocalView", "LocalSnapshot", "EMPTY_VIEW"]

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PortInfo:
    """One SB Port_Binding as pinctrl needs it."""

    name: str
    type: str
    dp_key: int
    port_key: int
    mac: tuple[str, ...] = ()            # Port_Binding.mac entries ("MAC IP..." strings)
    options: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    chassis: str = ""                    # name of the chassis the port is bound to
    virtual_parent: str = ""

    @property
    def addresses(self) -> tuple[str, ...]:
        return self.mac


class LocalView(Protocol):
    @property
    def chassis_name(self) -> str: ...

    def port_by_key(self, dp_key: int, port_key: int) -> PortInfo | None: ...

    def port_by_name(self, name: str) -> PortInfo | None: ...

    @property
    def dns(self) -> DnsCache: ...


@dataclass(frozen=True, slots=True)
class LocalSnapshot:
    """A published version of the local state (see module docstring)."""

    chassis_name: str = ""
    ports: Mapping[tuple[int, int], PortInfo] = field(
        default_factory=lambda: MappingProxyType({}))
    ports_by_name: Mapping[str, PortInfo] = field(default_factory=lambda: MappingProxyType({}))
    local_datapaths: frozenset[int] = frozenset()
    version: int = 0
    dns: DnsCache = EMPTY_DNS_CACHE

    def port_by_key(self, dp_key: int, port_key: int) -> PortInfo | None:
        return self.ports.get((dp_key, port_key))

    def port_by_name(self, name: str) -> PortInfo | None:
        return self.ports_by_name.get(name)

    @classmethod
    def build(cls, chassis_name: str, ports: list[PortInfo],
              local_datapaths: frozenset[int] = frozenset(), version: int = 0,
              dns: DnsCache = EMPTY_DNS_CACHE) -> "LocalSnapshot":
        return cls(chassis_name=chassis_name,
                   ports=MappingProxyType({(p.dp_key, p.port_key): p for p in ports}),
                   ports_by_name=MappingProxyType({p.name: p for p in ports}),
                   local_datapaths=local_datapaths, version=version, dns=dns)


EMPTY_VIEW = LocalSnapshot()
