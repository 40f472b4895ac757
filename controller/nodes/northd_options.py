"""The ``northd_options`` engine node: SB_Global options that shape flows.

Design note
-----------
Its data is the one option the flows read, ``lb_hairpin_use_ct_mark``
(default true), as C's en_northd_options.  The SB_Global handler re-reads it
and reports UPDATED only when the value moved.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from controller.engine.core import HANDLED_UNCHANGED, HANDLED_UPDATED, Handled, HandlerFn, Node

Tables = Callable[[str], Mapping[Any, Any]]


class NorthdOptions:
    __slots__ = ("lb_hairpin_use_ct_mark",)

    def __init__(self) -> None:
        self.lb_hairpin_use_ct_mark = True


def _use_ct_mark(tables: Tables) -> bool:
    for row in tables("SB_Global").values():
        return bool(row.options.get("lb_hairpin_use_ct_mark", "true") != "false")
    return True


class NorthdOptionsNode:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.data = NorthdOptions()

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"sb_sb_global": self._sb_sb_global}

    def clear_tracked(self) -> None:
        return None

    def _refresh(self) -> bool:
        value = _use_ct_mark(self.tables)
        changed = value != self.data.lb_hairpin_use_ct_mark
        self.data.lb_hairpin_use_ct_mark = value
        return changed

    def run(self, node: Node) -> bool:
        return self._refresh()

    def _sb_sb_global(self, node: Node, inp: Node) -> Handled:
        return HANDLED_UPDATED if self._refresh() else HANDLED_UNCHANGED
