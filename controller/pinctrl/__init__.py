"""pinctrl: the packet-in services of the agent (OVN 23.03.1 controller/pinctrl.c).

Importing the package registers every handler module with
:mod:`controller.pinctrl.registry`.  Modules written by other work streams
(``handlers_l3``, ``garp``) are imported when present.
"""

from __future__ import annotations

import importlib

_HANDLER_MODULES = ("controller.pinctrl.handlers_state", "controller.pinctrl.handlers_l3",
                    "controller.pinctrl.handlers_l7")


def _load_handlers() -> None:
    for name in _HANDLER_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise


_load_handlers()
