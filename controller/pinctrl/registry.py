"""Opcode -> handler registry and the dispatcher the service calls.

Handler modules register with ``@handler(OP_X, ...)`` at import time; a
second registration of an opcode raises ``ValueError`` (so two modules can
never silently shadow each other).  :func:`dispatch` never raises: an
unknown opcode, a short userdata or a handler exception all become a drop
reason the service counts and logs.

Handler modules are imported on demand: :func:`lazy` records which module
registers which opcodes (``controller.pinctrl`` declares them all), and the
module is imported the first time one of its opcodes is dispatched or read
from :data:`REGISTRY` (iterating or sizing it imports them all).  An agent
whose flows never send a packet-in of an opcode never loads its handler
(issue 16: the handler modules and their builders were ~0.8 MiB and ~25 ms
of import per agent).  :func:`prepare` names a callable run before each
dispatch of an opcode: the agent uses it to build the state a handler works
on (BFD sessions, service monitors...) only when its opcode shows up.
"""

from __future__ import annotations

import importlib
import threading
import traceback
from typing import TYPE_CHECKING, Callable, Iterator, Mapping

from controller.pinctrl.outcome import DROP, Outcome
from controller.pinctrl.packet_in import OFPR_ACTION, PacketIn, PacketInError

if TYPE_CHECKING:
    from controller.pinctrl.state import LocalView

__all__ = ["Handler", "handler", "dispatch", "lazy", "prepare", "load_all", "REGISTRY"]

Handler = Callable[[PacketIn, "LocalView"], Outcome]

_HANDLERS: dict[int, Handler] = {}
# opcode -> module whose import registers its handler (not imported yet)
_LAZY: dict[int, str] = {}
# opcode -> run before each dispatch of it (see the module note)
_PREPARE: dict[int, Callable[[], object]] = {}
_load_lock = threading.Lock()


def lazy(module: str, *opcodes: int) -> None:
    """Declare that importing `module` registers the handlers of `opcodes`."""
    for op in opcodes:
        if op not in _HANDLERS:
            _LAZY[op] = module


def _import(module: str) -> None:
    """Import a handler module; one that does not exist is skipped (its
    opcodes stay unhandled), any other import error is raised."""
    with _load_lock:
        for op in [o for o, name in _LAZY.items() if name == module]:
            del _LAZY[op]
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise


def _lookup(op: int) -> Handler | None:
    fn = _HANDLERS.get(op)
    if fn is None:
        module = _LAZY.get(op)
        if module is not None:
            _import(module)
            fn = _HANDLERS.get(op)
    return fn


def load_all() -> None:
    """Import every declared handler module."""
    for module in sorted(set(_LAZY.values())):
        _import(module)


class _Registry(Mapping[int, Handler]):
    """Read-only view of the handlers; reading an opcode imports its module."""

    def __getitem__(self, op: int) -> Handler:
        fn = _lookup(op)
        if fn is None:
            raise KeyError(op)
        return fn

    def __contains__(self, op: object) -> bool:
        return isinstance(op, int) and _lookup(op) is not None

    def __iter__(self) -> Iterator[int]:
        load_all()
        return iter(dict(_HANDLERS))

    def __len__(self) -> int:
        load_all()
        return len(_HANDLERS)


REGISTRY: Mapping[int, Handler] = _Registry()


def prepare(opcode: int, fn: Callable[[], object] | None) -> None:
    """Run `fn` before each dispatch of `opcode` (None: nothing)."""
    if fn is None:
        _PREPARE.pop(opcode, None)
    else:
        _PREPARE[opcode] = fn


def handler(*opcodes: int) -> Callable[[Handler], Handler]:
    """Register the decorated function for ``opcodes``; duplicates are a ValueError."""
    if not opcodes:
        raise ValueError("handler() needs at least one opcode")

    def register(fn: Handler) -> Handler:
        for op in opcodes:
            prev = _HANDLERS.get(op)
            if prev is not None and prev is not fn:
                raise ValueError("opcode %d already handled by %s.%s"
                                 % (op, prev.__module__, prev.__qualname__))
        for op in opcodes:
            _HANDLERS[op] = fn
        return fn

    return register


def unregister(opcode: int) -> None:
    """Remove a registration (tests only)."""
    _HANDLERS.pop(opcode, None)


def dispatch(pin: PacketIn, view: "LocalView") -> Outcome:
    """Run the handler of ``pin``'s opcode.  Packet-ins whose reason is not
    OFPR_ACTION are ignored (an empty outcome, no drop), as in C."""
    if pin.reason != OFPR_ACTION:
        return Outcome()
    try:
        op = pin.opcode
    except PacketInError as e:
        return DROP(str(e))
    fn = _HANDLERS.get(op)
    try:
        if fn is None:
            fn = _lookup(op)
            if fn is None:
                return DROP("unknown opcode %d" % op)
        prep = _PREPARE.get(op)
        if prep is not None:
            prep()
        out = fn(pin, view)
    except (ValueError, IndexError, KeyError, LookupError, ArithmeticError) as e:
        return DROP("opcode %d: %s: %s" % (op, type(e).__name__, e))
    except Exception as e:     # a handler bug must not take the service down
        tb = traceback.extract_tb(e.__traceback__)[-1:]
        where = ("%s:%s" % (tb[0].filename.rsplit("/", 1)[-1], tb[0].lineno)) if tb else "?"
        return DROP("opcode %d: handler error %s: %s (%s)" % (op, type(e).__name__, e, where))
    if not isinstance(out, Outcome):
        return DROP("opcode %d: handler returned %s" % (op, type(out).__name__))
    return out
