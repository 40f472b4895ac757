"""A flow-output node alone in a one-node engine, fed by one table's tracked
changes: what the sliced-compute tests of both flow outputs drive."""

from __future__ import annotations

from typing import Any

from controller.engine.core import Engine, Node
from controller.ovsdb.tracking import TableChanges


class OneNodeEngine:
    """Call :meth:`wire` once the node's provider (`out`) exists."""

    out: Any

    def wire(self, out: Any, node: str, leaf: str, table: str, handler: str,
             slice_ms: float | None) -> None:
        self.out = out
        out.slice_ms = slice_ms
        self._leaf, self._table = leaf, table
        self.changes = TableChanges(table)
        self.changed = False
        self.node = Node(node, out.run, data=out.data, pending=out.pending, resume=out.resume)
        self.node.add_input(Node(leaf, lambda n: self.changed, data=self.changes),
                            out.handlers[handler])
        self.engine = Engine(self.node)
        self.engine.set_force_recompute()

    def run(self) -> None:
        self.engine.run()
        self.engine.clear_force()
        self.changed = False
        self.changes = self.node.input(self._leaf).data = TableChanges(self._table)

    def record(self, event: str, row: Any) -> None:
        self.changes.record(event, row)
        self.changed = True

    def finish(self) -> int:
        """Engine runs until nothing is pending; how many it took."""
        runs = 0
        while True:
            self.run()
            runs += 1
            if not self.node.pending():
                assert self.node.is_valid()
                return runs
            assert not self.node.is_valid()     # never handed on half done
