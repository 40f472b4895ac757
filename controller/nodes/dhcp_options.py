"""The ``dhcp_options`` engine node: DHCPv4/DHCPv6 option code tables.

Design note
-----------
Built from the SB ``DHCP_Options``/``DHCPv6_Options`` rows (the well-known
tables of ``controller.lflow.actions.dhcp_opts`` while a table is empty), as
C's en_dhcp_options; both inputs are recompute edges.  ``run`` reports a
change only when a table differs from the previous one.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from controller.engine.core import HandlerFn, Node
from controller.lflow.actions.dhcp_opts import (
    DHCPV4_OPTIONS,
    DHCPV6_OPTIONS,
    OptionTable,
    table_from_rows,
)

Tables = Callable[[str], Mapping[Any, Any]]


class DhcpOptions:
    __slots__ = ("v4", "v6")

    def __init__(self) -> None:
        self.v4: OptionTable = DHCPV4_OPTIONS
        self.v6: OptionTable = DHCPV6_OPTIONS


class DhcpOptionsNode:
    handlers: Mapping[str, HandlerFn] = {}

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.data = DhcpOptions()

    def clear_tracked(self) -> None:
        return None

    def _table(self, name: str, default: OptionTable) -> OptionTable:
        rows = table_from_rows((r.name, r.code, r.type) for r in self.tables(name).values())
        return rows or default

    def run(self, node: Node) -> bool:
        v4 = self._table("DHCP_Options", DHCPV4_OPTIONS)
        v6 = self._table("DHCPv6_Options", DHCPV6_OPTIONS)
        changed = v4 != self.data.v4 or v6 != self.data.v6
        self.data.v4, self.data.v6 = v4, v6
        return changed
