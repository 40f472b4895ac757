"""Opcode -> handler registry and the dispatcher the service calls.

Handler modules register with ``@handler(OP_X, ...)`` at import time; a
second registration of an opcode raises ``ValueError`` (so two modules can
never silently shadow each other).  :func:`dispatch` never raises: an
unknown opcode, a short userdata or a handler exception all become a drop
reason the service counts and logs.
"""

from __future__ import annotations

import traceback
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable, Mapping

from controller.pinctrl.outcome import DROP, Outcome
from controller.pinctrl.packet_in import OFPR_ACTION, PacketIn, PacketInError

if TYPE_CHECKING:
    from controller.pinctrl.state import LocalView

__all__ = ["Handler", "handler", "dispatch", "REGISTRY"]

Handler = Callable[[PacketIn, "LocalView"], Outcome]

_HANDLERS: dict[int, Handler] = {}
REGISTRY: Mapping[int, Handler] = MappingProxyType(_HANDLERS)


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
    if fn is None:
        return DROP("unknown opcode %d" % op)
    try:
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
