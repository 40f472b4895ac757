"""OVN 23.03 facts shared by the whole agent: OpenFlow tables (with what
each holds), logical registers, MFF_LOG_FLAGS bits, controller opcodes and
a few protocol numbers.

Design note
-----------
One home for the numbers of ``controller/lflow.h``,
``include/ovn/logical-fields.h`` and ``include/ovn/actions.h``: ``physical/``
(physical flows), ``controller/lflow/`` (the logical-flow compiler and its
actions) and the agent import them from here.  It lives at the bottom of
the import order (it imports nothing of ours), in ``physical/`` because
imports point controller -> physical -> ofctrl.  :data:`TABLES` declares
every OpenFlow table the agent writes; :func:`table_is_declared` is what
tests check every installed flow against.
"""

from __future__ import annotations

from dataclasses import dataclass

# OpenFlow tables (controller/lflow.h, 23.03 layout).
T_PHY_TO_LOG = 0
T_LOG_INGRESS = 8
T_LARGE_PKT_DETECT = 37
T_LARGE_PKT_PROCESS = 38
T_REMOTE_OUTPUT = 39
T_LOCAL_OUTPUT = 40
T_CHECK_LOOPBACK = 41
T_LOG_EGRESS = 42
T_SAVE_INPORT = 64
T_LOG_TO_PHY = 65
T_MAC_BINDING = 66
T_MAC_LOOKUP = 67
T_CHK_LB_HAIRPIN = 68
T_CHK_LB_HAIRPIN_REPLY = 69
T_CT_SNAT_HAIRPIN = 70
T_GET_FDB = 71
T_LOOKUP_FDB = 72
T_CHK_IN_PORT_SEC = 73
T_CHK_IN_PORT_SEC_ND = 74
T_CHK_OUT_PORT_SEC = 75
T_ECMP_NH_MAC = 76
T_ECMP_NH = 77
T_CHK_LB_AFFINITY = 78
T_OUTPUT_INIT = T_LARGE_PKT_DETECT      # first table of the output stage

# Logical pipelines: stage N of the ingress pipeline is table T_LOG_INGRESS
# + N, of the egress pipeline T_LOG_EGRESS + N; a logical flow may name
# stages up to LOG_PIPELINE_LEN - 1 (what "next" may reach).
LOG_PIPELINE_LEN = 29


@dataclass(frozen=True, slots=True)
class OfTable:
    number: int
    name: str        # OFTABLE_* name of controller/lflow.h
    holds: str       # what the flows of this table do


TABLES: tuple[OfTable, ...] = (
    OfTable(T_PHY_TO_LOG, "PHY_TO_LOG",
            "physical to logical: in_port of VIFs, tunnels, patch/localnet ports -> "
            "datapath metadata, logical inport, then the ingress pipeline"),
    OfTable(T_LOG_INGRESS, "LOG_INGRESS_PIPELINE",
            "first of the ingress logical stages (Logical_Flow rows)"),
    OfTable(T_LARGE_PKT_DETECT, "OUTPUT_LARGE_PKT_DETECT",
            "output stage start: packets larger than a multichassis port's MTU"),
    OfTable(T_LARGE_PKT_PROCESS, "OUTPUT_LARGE_PKT_PROCESS",
            "ICMP 'fragmentation needed' for those large packets"),
    OfTable(T_REMOTE_OUTPUT, "REMOTE_OUTPUT",
            "logical outport on another chassis: tunnel encapsulation"),
    OfTable(T_LOCAL_OUTPUT, "LOCAL_OUTPUT",
            "logical outport here (or a multicast group): to the loopback check"),
    OfTable(T_CHECK_LOOPBACK, "CHECK_LOOPBACK",
            "drop packets going back out their logical inport; clear registers; egress"),
    OfTable(T_LOG_EGRESS, "LOG_EGRESS_PIPELINE",
            "first of the egress logical stages (Logical_Flow rows)"),
    OfTable(T_SAVE_INPORT, "SAVE_INPORT",
            "keep in_port when the packet may loop back (MLF_ALLOW_LOOPBACK)"),
    OfTable(T_LOG_TO_PHY, "LOG_TO_PHY",
            "logical outport -> physical port (VIF, patch, localnet, l2gateway)"),
    OfTable(T_MAC_BINDING, "MAC_BINDING", "get_arp/get_nd: IP -> MAC of MAC_Binding rows"),
    OfTable(T_MAC_LOOKUP, "MAC_LOOKUP", "lookup_arp/lookup_nd: is this IP/MAC pair known"),
    OfTable(T_CHK_LB_HAIRPIN, "CHK_LB_HAIRPIN", "chk_lb_hairpin: LB traffic to itself"),
    OfTable(T_CHK_LB_HAIRPIN_REPLY, "CHK_LB_HAIRPIN_REPLY",
            "chk_lb_hairpin_reply: replies of hairpinned LB traffic"),
    OfTable(T_CT_SNAT_HAIRPIN, "CT_SNAT_HAIRPIN", "ct_snat_to_vip: SNAT hairpin to the VIP"),
    OfTable(T_GET_FDB, "GET_FDB", "get_fdb: MAC -> port of FDB rows"),
    OfTable(T_LOOKUP_FDB, "LOOKUP_FDB", "lookup_fdb: is this MAC learnt on this port"),
    OfTable(T_CHK_IN_PORT_SEC, "CHK_IN_PORT_SEC", "check_in_port_sec: L2/L3 port security"),
    OfTable(T_CHK_IN_PORT_SEC_ND, "CHK_IN_PORT_SEC_ND",
            "check_in_port_sec: ARP/ND port security"),
    OfTable(T_CHK_OUT_PORT_SEC, "CHK_OUT_PORT_SEC", "check_out_port_sec: egress port security"),
    OfTable(T_ECMP_NH_MAC, "ECMP_NH_MAC", "chk_ecmp_nh_mac: learnt ECMP next-hop MACs"),
    OfTable(T_ECMP_NH, "ECMP_NH", "chk_ecmp_nh: learnt ECMP next hops"),
    OfTable(T_CHK_LB_AFFINITY, "CHK_LB_AFFINITY", "chk_lb_aff: learnt LB affinity sessions"),
)
TABLE_BY_NUMBER = {t.number: t for t in TABLES}


def table_is_declared(number: int) -> bool:
    """A table the agent may write: a declared table or a logical stage."""
    return number in TABLE_BY_NUMBER or \
        T_LOG_INGRESS <= number < T_LARGE_PKT_DETECT or T_LOG_EGRESS <= number < T_SAVE_INPORT


# Logical fields (include/ovn/logical-fields.h), as meta-flow names.
LOG_DATAPATH = "metadata"
LOG_FLAGS = "reg10"
LOG_DNAT_ZONE = "reg11"
LOG_SNAT_ZONE = "reg12"
LOG_CT_ZONE = "reg13"
LOG_INPORT = "reg14"
LOG_OUTPORT = "reg15"
N_LOG_REGS = 10  # reg0..reg9 are cleared between pipelines
LB_ORIG_DIP_IPV4 = "reg1"
LB_ORIG_TP_DPORT = "reg2"
LB_ORIG_DIP_IPV6_REGS = ("reg4", "reg5", "reg6", "reg7")  # xxreg1, MSB first

# MFF_LOG_FLAGS bits (enum mff_log_flags_bits).
MLF_ALLOW_LOOPBACK_BIT = 0
MLF_RCV_FROM_RAMP_BIT = 1
MLF_FORCE_SNAT_FOR_DNAT_BIT = 2
MLF_FORCE_SNAT_FOR_LB_BIT = 3
MLF_LOCAL_ONLY_BIT = 4
MLF_NESTED_CONTAINER_BIT = 5
MLF_LOOKUP_MAC_BIT = 6
MLF_LOOKUP_LB_HAIRPIN_BIT = 7
MLF_LOOKUP_FDB_BIT = 8
MLF_SKIP_SNAT_FOR_LB_BIT = 9
MLF_LOCALPORT_BIT = 10
MLF_USE_SNAT_ZONE_BIT = 11        # (MLF_USE_SNAT_ZONE in logical-fields.h)
MLF_CHECK_PORT_SEC_BIT = 12
MLF_LOOKUP_COMMIT_ECMP_NH_BIT = 13
MLF_USE_LB_AFF_SESSION_BIT = 14

MLF_ALLOW_LOOPBACK = 1 << MLF_ALLOW_LOOPBACK_BIT
MLF_RCV_FROM_RAMP = 1 << MLF_RCV_FROM_RAMP_BIT
MLF_LOCAL_ONLY = 1 << MLF_LOCAL_ONLY_BIT
MLF_NESTED_CONTAINER = 1 << MLF_NESTED_CONTAINER_BIT
MLF_LOCALPORT = 1 << MLF_LOCALPORT_BIT

# ct_mark / ct_label bit for "natted" (OVN_CT_NATTED).
OVN_CT_NATTED = 2

# Multicast keys (lib/mcast-group-index.h).
OVN_MIN_MULTICAST = 32768
OVN_VXLAN_MIN_MULTICAST = 2048

# Tunnel overheads for path-MTU discovery (lib/ovn-util.h).
GENEVE_TUNNEL_OVERHEAD = 38
STT_TUNNEL_OVERHEAD = 18
VXLAN_TUNNEL_OVERHEAD = 30
IP_HEADER_LEN = 20
IPV6_HEADER_LEN = 40
ETHERNET_OVERHEAD = 18  # ETH_HEADER_LEN + ETH_CRC_LENGTH

# Controller opcodes (include/ovn/actions.h, enum action_opcode, 23.03).
OP_ARP = 0
OP_PUT_ARP = 1
OP_PUT_DHCP_OPTS = 2
OP_ND_NA = 3
OP_PUT_ND = 4
OP_PUT_DHCPV6_OPTS = 5
OP_DNS_LOOKUP = 6
OP_LOG = 7
OP_PUT_ND_RA_OPTS = 8
OP_ND_NS = 9
OP_ICMP = 10
OP_TCP_RESET = 11
OP_ND_NA_ROUTER = 12
OP_PUT_ICMP4_FRAG_MTU = 13
OP_ICMP4_ERROR = 14
OP_EVENT = 15
OP_IGMP = 16
OP_BIND_VPORT = 17
OP_HANDLE_SVC_CHECK = 18
OP_DHCP6_SERVER = 19
OP_ICMP6_ERROR = 20
OP_PUT_ICMP6_FRAG_MTU = 21
OP_REJECT = 22
OP_BFD_MSG = 23
OP_SCTP_ABORT = 24
OP_PUT_FDB = 25
OP_ACTIVATION_STRATEGY_RARP = 26

CHASSIS_MAC_TO_ROUTER_MAC_CONJID = 100

OFPP_NONE = 0xFFFF  # 16-bit OpenFlow 1.0 "none" port, printed as ANY in set_field

ETH_TYPE_IP = 0x0800
ETH_TYPE_ARP = 0x0806
ETH_TYPE_RARP = 0x8035
ETH_TYPE_IPV6 = 0x86DD
IPPROTO_ICMP = 1
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_ICMPV6 = 58
IPPROTO_SCTP = 132
