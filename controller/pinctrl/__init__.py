"""pinctrl: the packet-in services of the agent (OVN 23.03.1 controller/pinctrl.c).

Importing the package registers every handler module with
:mod:`controller.pinctrl.registry` (a module that is not there is skipped;
any other import error is raised).  Layout: ``packet_in`` (decoding),
``registry`` (dispatch), ``outcome`` (what handlers return), ``openflow``
(packet-out / resume builders), ``state`` (the read-only local view),
``service`` (the thread and its connection), ``sb_writes`` / ``buffered``
(main-loop side), ``agent`` (what the daemon drives), ``handlers_*`` (the
opcodes), ``frames`` / ``garp`` / ``dhcp*`` / ``dns`` (pure builders),
``inject`` (``inject-pkt``), ``svc_monitor`` (LB health checks, opcode 18),
``bfd_router`` (router BFD, opcode 23), ``igmp`` / ``mcast`` (IGMP/MLD snooping
and querier, opcode 16),
``prefix_delegation`` (DHCPv6 PD client, opcode 19).
"""

from __future__ import annotations

import importlib

_HANDLER_MODULES = ("controller.pinctrl.handlers_state", "controller.pinctrl.handlers_l3",
                    "controller.pinctrl.handlers_l7", "controller.pinctrl.svc_monitor",
                    "controller.pinctrl.bfd_router",
                    "controller.pinctrl.prefix_delegation",
                    "controller.pinctrl.mcast")


def _load_handlers() -> None:
    for name in _HANDLER_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise


_load_handlers()
