"""Incremental processing engine (the model of OVN's lib/inc-proc-eng).

Design note
-----------
A :class:`Node` owns a piece of data and a list of inputs; each input has
either a change handler or ``None`` (any change of that input forces a full
recompute of the node).  An :class:`Engine` sorts the nodes reachable from a
root (inputs first, depth first, in insertion order) and on every iteration:

* :meth:`Engine.init_run` marks every node STALE and clears tracked data;
* :meth:`Engine.run` visits nodes in order.  A node without inputs runs its
  ``run`` (leaves of OVSDB tables report UPDATED when the table changed).  A
  node with inputs is recomputed when a forced recompute is pending, when an
  UPDATED input has no handler, or when a handler gives up
  (:data:`UNHANDLED`); otherwise the handlers of its UPDATED inputs are
  called in order.  A recompute that is not allowed (no SB transaction
  available) aborts the node and stops the run; the next iteration must
  then recompute.

A node may leave work *pending* (a bounded, sliced full compute: see
``controller.nodes.logical_flow_output``): its implementation then has ``pending()`` and
``resume(node)``.  After the node's recompute, handlers or no-change visit,
the engine calls ``resume`` (which does one time-bounded slice and returns
True when the data changed); while work is pending the node is not
:meth:`Node.is_valid`, so its data is never handed on as complete (the
daemon keeps the installed flows and wakes at once for the next slice).
Changes arriving meanwhile go through the node's handlers as usual.

``run`` returns True when the node's data changed.  A handler returns one of
:data:`HANDLED_UPDATED`, :data:`HANDLED_UNCHANGED` or :data:`UNHANDLED`.
Counters ``recompute``/``compute``/``abort`` per node are what
``inc-engine/show-stats`` prints.
"""

from __future__ import annotations

import enum
import time
from typing import Any, Callable, Mapping, Protocol

import structlog

log = structlog.get_logger("inc_proc_eng")


class State(enum.Enum):
    STALE = "stale"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    ABORTED = "aborted"


class Handled(enum.Enum):
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    UNHANDLED = "unhandled"


HANDLED_UPDATED = Handled.UPDATED
HANDLED_UNCHANGED = Handled.UNCHANGED
UNHANDLED = Handled.UNHANDLED

RunFn = Callable[["Node"], bool]
HandlerFn = Callable[["Node", "Node"], Handled]


def noop_handler(node: "Node", inp: "Node") -> Handled:
    """Input changes need no processing (they are correlated with others)."""
    return HANDLED_UNCHANGED


class Stats:
    __slots__ = ("recompute", "compute", "abort")

    def __init__(self) -> None:
        self.recompute = 0
        self.compute = 0
        self.abort = 0


class EngineNode(Protocol):
    """What every computed node implements (the engine's node interface).

    ``data`` is the node's data (what its dependants read); ``run`` recomputes
    it from scratch and returns True when it changed; ``handlers`` maps the
    handler keys named in the graph (``controller/engine/graph.py``) to
    change handlers ``(node, input_node) -> Handled``; ``clear_tracked``
    forgets the changes tracked in the last iteration.
    """

    data: Any

    def run(self, node: "Node") -> bool: ...

    @property
    def handlers(self) -> Mapping[str, HandlerFn]: ...

    def clear_tracked(self) -> None: ...


class Node:
    """One engine node: data + run + inputs with change handlers."""

    def __init__(self, name: str, run: RunFn | None = None, data: Any = None,
                 clear_tracked: Callable[[], None] | None = None,
                 pending: Callable[[], bool] | None = None,
                 resume: RunFn | None = None) -> None:
        self.name = name
        self._run = run
        self.data = data
        self._clear_tracked = clear_tracked
        self._pending = pending
        self._resume = resume
        self.inputs: list[tuple[Node, HandlerFn | None]] = []
        self.state = State.STALE
        self.stats = Stats()
        self.engine: Engine | None = None

    def add_input(self, node: "Node", handler: HandlerFn | None = None) -> None:
        if any(n is node for n, _ in self.inputs):
            raise ValueError(f"{node.name} already an input of {self.name}")
        self.inputs.append((node, handler))

    def input(self, name: str) -> "Node":
        for n, _ in self.inputs:
            if n.name == name:
                return n
        raise KeyError(f"{self.name} has no input {name}")

    def input_data(self, name: str) -> Any:
        return self.input(name).data

    @property
    def changed(self) -> bool:
        return self.state is State.UPDATED

    def is_valid(self) -> bool:
        """Computed in this iteration (not stale, not aborted, nothing pending)."""
        return (self.state is State.UPDATED or self.state is State.UNCHANGED) \
            and not self.pending()

    def pending(self) -> bool:
        """Part of a compute is left for later iterations (see the design note)."""
        return self._pending is not None and self._pending()

    def clear_tracked(self) -> None:
        if self._clear_tracked is not None:
            self._clear_tracked()

    def run_fn(self) -> bool:
        if self._run is None:
            return False
        return bool(self._run(self))

    def __repr__(self) -> str:
        return f"Node({self.name}, {self.state.value})"


class Engine:
    """Topologically sorted nodes reachable from ``root``."""

    def __init__(self, root: Node, compute_log_timeout_ms: int = 500) -> None:
        self.root = root
        self.nodes: list[Node] = []
        self._topo(root, set())
        for n in self.nodes:
            n.engine = self
        self.force_recompute = False
        self.force_reason = ""
        self.aborted = False
        self.run_count = 0
        self.compute_log_timeout_ms = compute_log_timeout_ms

    def _topo(self, node: Node, seen: set[int]) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        for inp, _ in node.inputs:
            self._topo(inp, seen)
        self.nodes.append(node)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def set_force_recompute(self, reason: str = "") -> None:
        if reason:
            log.info(f"{reason}")
        self.force_recompute = True
        self.force_reason = reason

    def init_run(self) -> None:
        for n in self.nodes:
            n.state = State.STALE
            n.clear_tracked()

    def need_run(self) -> bool:
        """Run only the leaves (input nodes); True when any of them changed.

        The main loop asks this after a skipped run (recompute still not
        allowed) to decide whether to wake at once or sleep until an event."""
        for n in self.nodes:
            if not n.inputs:
                changed = n.run_fn()
                n.stats.recompute += 1
                n.state = State.UPDATED if changed else State.UNCHANGED
                if changed:
                    return True
        return False

    def run(self, recompute_allowed: bool = True) -> bool:
        """Process all nodes; returns False when the run aborted."""
        if self.aborted and not recompute_allowed:
            return False
        self.aborted = False
        self.run_count += 1
        for n in self.nodes:
            self._run_node(n, recompute_allowed)
            if n.state is State.ABORTED:
                n.stats.abort += 1
                self.aborted = True
                return False
        return True

    def _recompute(self, n: Node, allowed: bool, reason: str) -> None:
        if not allowed:
            log.debug(f"node: {n.name}, recompute ({reason}) aborted")
            n.state = State.ABORTED
            return
        t0 = time.monotonic()
        n.clear_tracked()
        changed = n.run_fn()
        n.stats.recompute += 1
        n.state = State.UPDATED if changed else State.UNCHANGED
        ms = (time.monotonic() - t0) * 1000
        if ms >= self.compute_log_timeout_ms:
            log.info(f"node: {n.name}, recompute ({reason}) took {ms:.0f}ms")
        else:
            log.debug(f"node: {n.name}, recompute ({reason}) took {ms:.0f}ms")

    def _run_node(self, n: Node, allowed: bool) -> None:
        self._visit_node(n, allowed)
        if n._resume is not None and n.state is not State.ABORTED and n.pending():
            if n._resume(n):
                n.state = State.UPDATED

    def _visit_node(self, n: Node, allowed: bool) -> None:
        if not n.inputs:
            changed = n.run_fn()
            n.stats.recompute += 1
            n.state = State.UPDATED if changed else State.UNCHANGED
            return
        if self.force_recompute:
            self._recompute(n, allowed, "forced")
            return
        updated_inputs = [(i, h) for i, h in n.inputs if i.state is State.UPDATED]
        if not updated_inputs:
            n.state = State.UNCHANGED
            return
        for inp, handler in updated_inputs:
            if handler is None:
                self._recompute(n, allowed, f"missing handler for input {inp.name}")
                return
        node_updated = False
        for inp, handler in updated_inputs:
            assert handler is not None
            t0 = time.monotonic()
            res = handler(n, inp)
            ms = (time.monotonic() - t0) * 1000
            if ms >= self.compute_log_timeout_ms:
                log.info(f"node: {n.name}, handler for input {inp.name} took {ms:.0f}ms")
            if res is Handled.UNHANDLED:
                self._recompute(n, allowed, f"failed handler for input {inp.name}")
                return
            if res is Handled.UPDATED:
                node_updated = True
        n.stats.compute += 1
        n.state = State.UPDATED if node_updated else State.UNCHANGED

    def trigger_recompute(self) -> None:
        """``inc-engine/recompute``: user-requested full recompute."""
        log.info("User triggered force recompute.")
        self.force_recompute = True
        self.force_reason = "user"

    def clear_force(self) -> None:
        self.force_recompute = False
        self.force_reason = ""

    # -- diagnostics --------------------------------------------------
    def show_stats(self, node: str | None = None, stat: str | None = None) -> str:
        """Text of ``inc-engine/show-stats [NODE [STAT]]`` (23.03 format)."""
        out = []
        for n in self.nodes:
            if node is not None and n.name != node:
                continue
            if stat is not None:
                if stat not in ("recompute", "compute", "abort"):
                    out.append(f"Invalid stat type : {stat}")
                else:
                    out.append(f"{getattr(n.stats, stat)}")
                break
            out.append(f"Node: {n.name}\n"
                       f"- recompute: {n.stats.recompute:12d}\n"
                       f"- compute:   {n.stats.compute:12d}\n"
                       f"- abort:     {n.stats.abort:12d}\n")
            if node is not None:
                break
        return "".join(out)

    def clear_stats(self) -> None:
        for n in self.nodes:
            n.stats = Stats()

    def dump_graph(self) -> str:
        """DOT text of the graph (inputs -> node; dashed = any change of the
        input recomputes the node, dotted = the change needs no processing)."""
        lines = ["digraph \"Incremental-Processing-Engine\" {", "    rankdir=LR;"]
        for n in self.nodes:
            lines.append(f"    {n.name} [label=\"{n.name}\"];")
            for inp, h in n.inputs:
                style = " [style=dashed]" if h is None else \
                    " [style=dotted]" if h is noop_handler else ""
                lines.append(f"    {inp.name} -> {n.name}{style};")
        lines.append("}")
        return "\n".join(lines) + "\n"

