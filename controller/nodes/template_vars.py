"""The ``template_vars`` engine node: this chassis' template variables.

Design note
-----------
Its data maps each variable of the Chassis_Template_Var row of this chassis
(``AgentState.chassis``) to its value, and ``changed`` holds the names that
appeared, went away or got another value in this iteration, as C's
en_template_vars tracks them.  ``logical_flow_output`` re-processes the
lflows that used a changed name; ``lb_data`` marks the templated load
balancers.  OVS_open_vswitch is a recompute edge; the SB_chassis (which
chassis is this one) and Chassis_Template_Var handlers re-read the (one)
row of this chassis, as ``run`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from controller.engine.core import HANDLED_UNCHANGED, HANDLED_UPDATED, Handled, HandlerFn, Node

if TYPE_CHECKING:
    from controller.engine.agent_nodes import AgentState

Tables = Callable[[str], Mapping[Any, Any]]


class TemplateVars:
    __slots__ = ("vars", "changed")

    def __init__(self) -> None:
        self.vars: dict[str, str] = {}
        self.changed: set[str] = set()


class TemplateVarsNode:
    def __init__(self, st: "AgentState", tables: Tables) -> None:
        self.st = st
        self.tables = tables
        self.data = TemplateVars()

    @property
    def handlers(self) -> Mapping[str, HandlerFn]:
        return {"sb_chassis_template_var": self._sb_chassis_template_var,
                "sb_chassis": self._sb_chassis_template_var}

    def clear_tracked(self) -> None:
        self.data.changed.clear()

    def _refresh(self) -> bool:
        new: dict[str, str] = {}
        me = self.st.chassis
        if me is not None:
            for tv in self.tables("Chassis_Template_Var").values():
                if tv.chassis == me.name:
                    new.update(tv.variables)
        old = self.data.vars
        changed = {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
        self.data.vars = new
        self.data.changed |= changed
        return bool(changed)

    def run(self, node: Node) -> bool:
        return self._refresh()

    def _sb_chassis_template_var(self, node: Node, inp: Node) -> Handled:
        return HANDLED_UPDATED if self._refresh() else HANDLED_UNCHANGED
