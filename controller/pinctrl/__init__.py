"""pinctrl: the packet-in services of the agent (OVN 23.03.1 controller/pinctrl.c).

Importing the package declares every handler module and its opcodes to
:mod:`controller.pinctrl.registry`, which imports a module the first time
one of its opcodes is needed (a module that is not there is skipped; any
other import error is raised).  Layout: ``packet_in`` (decoding),
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

from controller.lflow.actions import base as ab
from controller.pinctrl import registry

# module -> the opcodes its import registers (tests/test_lazy_modules.py checks it)
HANDLER_MODULES: dict[str, tuple[int, ...]] = {
    "controller.pinctrl.handlers_state": (
        ab.OP_PUT_ARP, ab.OP_PUT_ND, ab.OP_PUT_FDB, ab.OP_BIND_VPORT, ab.OP_EVENT,
        ab.OP_ACTIVATION_STRATEGY_RARP, ab.OP_LOG),
    "controller.pinctrl.handlers_l3": (
        ab.OP_ARP, ab.OP_ND_NS, ab.OP_ND_NA, ab.OP_ND_NA_ROUTER, ab.OP_ICMP,
        ab.OP_ICMP4_ERROR, ab.OP_ICMP6_ERROR, ab.OP_TCP_RESET, ab.OP_SCTP_ABORT,
        ab.OP_REJECT, ab.OP_PUT_ICMP4_FRAG_MTU, ab.OP_PUT_ICMP6_FRAG_MTU),
    "controller.pinctrl.handlers_l7": (
        ab.OP_PUT_DHCP_OPTS, ab.OP_PUT_DHCPV6_OPTS, ab.OP_DNS_LOOKUP, ab.OP_PUT_ND_RA_OPTS),
    "controller.pinctrl.svc_monitor": (ab.OP_HANDLE_SVC_CHECK,),
    "controller.pinctrl.bfd_router": (ab.OP_BFD_MSG,),
    "controller.pinctrl.prefix_delegation": (ab.OP_DHCP6_SERVER,),
    "controller.pinctrl.mcast": (ab.OP_IGMP,),
}

for _module, _opcodes in HANDLER_MODULES.items():
    registry.lazy(_module, *_opcodes)
