"""The two reference topologies of sandbox-recipe.md §4, built in a Sandbox.

* ``seed-N`` (:func:`build_seed`): N isolated router+switch pairs, two bound
  VIFs and four ACLs per switch; big and regular, for scale.
* ``rich`` (:func:`build_rich`): one small topology that touches most features
  (NAT, LBs with health check, DHCP, DNS, localnet, virtual/localport/external
  ports, port groups, address sets, meters, CoPP, QoS, a fake remote chassis).

Both need northd running (they end with ``--wait=sb`` and, for rich, an SB
command on a northd-made Port_Binding). Neither starts an agent.
"""

from __future__ import annotations

from integration.sandbox import Sandbox, SandboxError

SEED_ROUTERS_PER_CALL = 1000


def seed_router_commands(i: int) -> list[str]:
    """ovn-nbctl arguments that create router i of seed-N (recipe §4.1)."""
    hh, ll = i // 256, i % 256
    x, y = i // 256, i % 256
    lr, ls = f"lr{i}", f"ls{i}"
    lrp, lsp_r = f"lr{i}-ls{i}", f"ls{i}-lr{i}"
    p1, p2 = f"ls{i}-p1", f"ls{i}-p2"
    return [
        "--", "lr-add", lr,
        "--", "lrp-add", lr, lrp, f"0a:01:00:{hh:02x}:{ll:02x}:01", f"10.{x}.{y}.1/24",
        "--", "ls-add", ls,
        "--", "lsp-add", ls, lsp_r, "--", "lsp-set-type", lsp_r, "router",
        "--", "lsp-set-addresses", lsp_r, "router",
        "--", "lsp-set-options", lsp_r, f"router-port={lrp}",
        "--", "lsp-add", ls, p1,
        "--", "lsp-set-addresses", p1, f"0a:02:00:{hh:02x}:{ll:02x}:01 10.{x}.{y}.11",
        "--", "lsp-add", ls, p2,
        "--", "lsp-set-addresses", p2, f"0a:02:00:{hh:02x}:{ll:02x}:02 10.{x}.{y}.12",
        "--", "acl-add", ls, "from-lport", "1002", f'inport == "{p1}" && ip4', "allow-related",
        "--", "acl-add", ls, "to-lport", "1002",
        f'outport == "{p1}" && ip4 && tcp.dst == 22', "allow-related",
        "--", "acl-add", ls, "to-lport", "1001", f'outport == "{p2}" && ip4 && icmp4', "allow",
        "--", "acl-add", ls, "to-lport", "1000",
        f'outport == "{p2}" && ip4.src == 192.168.0.0/16', "drop",
    ]


def build_seed(sb: Sandbox, n: int = 500, *, bind: bool = True) -> None:
    """seed-N: routers lr1..lrN with their switch, VIFs s<i>p1/s<i>p2 bound on br-int."""
    if n < 1:
        raise ValueError("n must be >= 1")
    for first in range(1, n + 1, SEED_ROUTERS_PER_CALL):
        last = min(n, first + SEED_ROUTERS_PER_CALL - 1)
        args: list[str] = []
        for i in range(first, last + 1):
            args += seed_router_commands(i)
        sb.nbctl("--no-wait", *args, timeout=600)
    if bind:
        sb.bind_vifs(((f"s{i}p{p}", f"ls{i}-p{p}") for i in range(1, n + 1) for p in (1, 2)),
                     batch=2 * SEED_ROUTERS_PER_CALL)
    if sb.northd_enabled:
        sb.nbctl("--wait=sb", "sync", timeout=600)


# The NB transaction of recipe §4.2, one argument per list item (no shell quoting).
_RICH_NB: list[str] = [
    "--", "ls-add", "ls-a", "--", "ls-add", "ls-b", "--", "ls-add", "ls-pub",
    "--", "set", "Logical_Switch", "ls-b", "other_config:mcast_snoop=true",
    "other_config:mcast_querier=false",
    "--", "lr-add", "lr0",
    "--", "lrp-add", "lr0", "lr0-a", "0a:00:00:00:01:01", "10.0.1.1/24", "fd00:a::1/64",
    "--", "lrp-add", "lr0", "lr0-b", "0a:00:00:00:02:01", "10.0.2.1/24",
    "--", "lrp-add", "lr0", "lr0-pub", "0a:00:00:00:10:01", "172.16.0.1/24",
    "--", "lrp-set-gateway-chassis", "lr0-pub", "hv1", "20",
    "--", "set", "Logical_Router_Port", "lr0-a", "ipv6_ra_configs:address_mode=slaac",
    "ipv6_ra_configs:send_periodic=true", "ipv6_ra_configs:max_interval=300",
    "ipv6_ra_configs:min_interval=200",
    "--", "lsp-add", "ls-a", "ls-a-lr0", "--", "lsp-set-type", "ls-a-lr0", "router",
    "--", "lsp-set-addresses", "ls-a-lr0", "router",
    "--", "lsp-set-options", "ls-a-lr0", "router-port=lr0-a",
    "--", "lsp-add", "ls-b", "ls-b-lr0", "--", "lsp-set-type", "ls-b-lr0", "router",
    "--", "lsp-set-addresses", "ls-b-lr0", "router",
    "--", "lsp-set-options", "ls-b-lr0", "router-port=lr0-b",
    "--", "lsp-add", "ls-pub", "ls-pub-lr0", "--", "lsp-set-type", "ls-pub-lr0", "router",
    "--", "lsp-set-addresses", "ls-pub-lr0", "router",
    "--", "lsp-set-options", "ls-pub-lr0", "router-port=lr0-pub", "nat-addresses=router",
    "--", "lsp-add", "ls-pub", "ln-pub", "--", "lsp-set-type", "ln-pub", "localnet",
    "--", "lsp-set-addresses", "ln-pub", "unknown",
    "--", "lsp-set-options", "ln-pub", "network_name=physnet1",
    "--", "lsp-add", "ls-a", "ls-a-p1",
    "--", "lsp-set-addresses", "ls-a-p1", "0a:00:00:00:01:02 10.0.1.2 fd00:a::2",
    "--", "lsp-add", "ls-a", "ls-a-p2",
    "--", "lsp-set-addresses", "ls-a-p2", "0a:00:00:00:01:03 10.0.1.3",
    "--", "lsp-set-port-security", "ls-a-p2", "0a:00:00:00:01:03 10.0.1.3",
    "--", "lsp-add", "ls-a", "ls-a-vip", "--", "lsp-set-type", "ls-a-vip", "virtual",
    "--", "lsp-set-addresses", "ls-a-vip", "0a:00:00:00:01:50 10.0.1.50",
    "--", "lsp-set-options", "ls-a-vip", "virtual-ip=10.0.1.50",
    "virtual-parents=ls-a-p1,ls-a-p2",
    "--", "lsp-add", "ls-a", "ls-a-md", "--", "lsp-set-type", "ls-a-md", "localport",
    "--", "lsp-set-addresses", "ls-a-md", "0a:00:00:00:01:fe 10.0.1.254",
    "--", "lsp-add", "ls-b", "ls-b-p1",
    "--", "lsp-set-addresses", "ls-b-p1", "0a:00:00:00:02:02 10.0.2.2",
    "--", "lsp-add", "ls-b", "ls-b-p2",
    "--", "lsp-set-addresses", "ls-b-p2", "0a:00:00:00:02:03 10.0.2.3",
    "--", "lsp-add", "ls-pub", "ext1", "--", "lsp-set-type", "ext1", "external",
    "--", "lsp-set-addresses", "ext1", "0a:00:00:00:10:20 172.16.0.20",
    "--", "ha-chassis-group-add", "hagrp",
    "--", "ha-chassis-group-add-chassis", "hagrp", "hv1", "30",
    "--", "ha-chassis-group-add-chassis", "hagrp", "hv2", "20",
    "--", "lr-nat-add", "lr0", "snat", "172.16.0.100", "10.0.0.0/16",
    "--", "lr-nat-add", "lr0", "dnat_and_snat", "172.16.0.110", "10.0.1.2", "ls-a-p1",
    "0a:00:00:00:ff:10",
    "--", "lr-nat-add", "lr0", "dnat_and_snat", "172.16.0.111", "10.0.2.2",
    "--", "lr-nat-add", "lr0", "dnat", "172.16.0.112", "10.0.2.3",
    "--", "lr-route-add", "lr0", "0.0.0.0/0", "172.16.0.254",
    "--", "lr-route-add", "lr0", "192.168.200.0/24", "10.0.2.3",
    "--", "lr-policy-add", "lr0", "1000", "ip4.src == 10.0.2.0/24 && ip4.dst == 10.0.1.0/24",
    "allow",
    "--", "lr-policy-add", "lr0", "900", "ip4.dst == 192.168.100.0/24", "drop",
    "--", "lr-policy-add", "lr0", "800", "ip4.src == 10.0.1.3 && ip4.dst == 8.8.8.8",
    "reroute", "10.0.2.3",
    "--", "lb-add", "lb-tcp", "10.0.0.10:80", "10.0.1.2:8080,10.0.2.2:8080", "tcp",
    "--", "lb-add", "lb-tcp", "[fd00:b::10]:80", "[fd00:a::2]:8080", "tcp",
    "--", "lb-add", "lb-udp", "10.0.0.11:53", "10.0.1.3:53,10.0.2.3:53", "udp",
    "--", "set", "Load_Balancer", "lb-udp", "options:affinity_timeout=60",
    "--", "lb-add", "lb-ext", "172.16.0.200:80", "10.0.1.2:80,10.0.2.2:80", "tcp",
    "--", "lb-add", "lb-hc", "10.0.0.12:8080", "10.0.1.2:8080,10.0.2.2:8080", "tcp",
    "--", "set", "Load_Balancer", "lb-hc", "ip_port_mappings:10.0.1.2=ls-a-p1:10.0.1.250",
    "ip_port_mappings:10.0.2.2=ls-b-p1:10.0.2.250",
    "--", "--id=@hc", "create", "Load_Balancer_Health_Check", 'vip="10.0.0.12:8080"',
    "options:interval=5", "options:timeout=20", "options:success_count=3",
    "options:failure_count=3",
    "--", "add", "Load_Balancer", "lb-hc", "health_check", "@hc",
    "--", "ls-lb-add", "ls-b", "lb-hc",
    "--", "ls-lb-add", "ls-a", "lb-tcp", "--", "ls-lb-add", "ls-a", "lb-udp",
    "--", "ls-lb-add", "ls-b", "lb-tcp", "--", "ls-lb-add", "ls-b", "lb-udp",
    "--", "lr-lb-add", "lr0", "lb-tcp", "--", "lr-lb-add", "lr0", "lb-ext",
    "--", "create", "Address_Set", "name=as_admin", 'addresses=["192.168.50.0/24","10.0.2.3"]',
    "--", "create", "Address_Set", "name=as_blocked", 'addresses=["10.0.2.99","10.0.2.100"]',
    "--", "create", "Address_Set", "name=as_v6", 'addresses=["fd00:a::5","fd00:a::6"]',
    "--", "pg-add", "pg_web", "ls-a-p1", "ls-b-p1",
    "--", "pg-add", "pg_all", "ls-a-p1", "ls-a-p2", "ls-b-p1", "ls-b-p2",
    "--", "meter-add", "acl-meter", "drop", "100", "pktps", "10",
    "--", "meter-add", "copp-arp", "drop", "200", "pktps",
    "--", "meter-add", "copp-dhcp", "drop", "50", "pktps",
    "--", "acl-add", "pg_all", "from-lport", "1001", "inport == @pg_all && ip4",
    "allow-related",
    "--", "acl-add", "pg_all", "from-lport", "1001", "inport == @pg_all && ip6",
    "allow-related",
    "--", "acl-add", "pg_all", "from-lport", "1100", "inport == @pg_all && udp.dst == 9999",
    "allow-stateless",
    "--", "acl-add", "pg_all", "to-lport", "1001",
    "outport == @pg_all && ip4 && ip4.src == $as_admin && tcp.dst == 22", "allow-related",
    "--", "acl-add", "pg_web", "to-lport", "1002",
    "outport == @pg_web && ip4 && tcp.dst == {80, 443}", "allow-related",
    "--", "acl-add", "pg_web", "to-lport", "1003",
    "outport == @pg_web && ip4.src == $pg_all_ip4 && icmp4", "allow-related",
    "--", "acl-add", "pg_web", "to-lport", "1004",
    "outport == @pg_web && ip4.src == {10.0.1.2, 10.0.1.3, 10.0.2.3} && "
    "tcp.dst == {8080, 8443, 9090}", "allow-related",
    "--", "acl-add", "pg_all", "to-lport", "1005", "outport == @pg_all && ip6.src == $as_v6",
    "allow",
    "--", "--log", "--meter=acl-meter", "--severity=alert", "--name=drop-all", "acl-add",
    "pg_all", "to-lport", "900", "outport == @pg_all && ip", "drop",
    "--", "acl-add", "ls-b", "to-lport", "1010", "ip4.src == $as_blocked", "reject",
    "--", "qos-add", "ls-a", "from-lport", "100", 'inport == "ls-a-p1" && ip4', "dscp=12",
    "--", "qos-add", "ls-a", "from-lport", "101", 'inport == "ls-a-p2" && ip4', "rate=1000",
    "burst=100",
    "--", "copp-add", "copp-ls", "arp", "copp-arp",
    "--", "copp-add", "copp-ls", "dhcpv4-opts", "copp-dhcp",
    "--", "ls-copp-add", "copp-ls", "ls-a",
    "--", "copp-add", "copp-lr", "arp-resolve", "copp-arp", "--", "lr-copp-add", "copp-lr", "lr0",
    "--", "--id=@d4", "create", "DHCP_Options", "cidr=10.0.1.0/24",
    'options={lease_time="3600", router="10.0.1.1", server_id="10.0.1.1", '
    'server_mac="0a:00:00:00:01:01", dns_server="{8.8.8.8}", mtu="1442"}',
    "--", "set", "Logical_Switch_Port", "ls-a-p1", "dhcpv4_options=@d4",
    "--", "set", "Logical_Switch_Port", "ls-a-p2", "dhcpv4_options=@d4",
    "--", "--id=@d6", "create", "DHCP_Options", 'cidr="fd00:a::/64"',
    'options={server_id="0a:00:00:00:01:01"}',
    "--", "set", "Logical_Switch_Port", "ls-a-p1", "dhcpv6_options=@d6",
    "--", "--id=@dns", "create", "DNS",
    'records={"vm1.ovn.test"="10.0.1.2", "vm2.ovn.test"="10.0.1.3"}',
    "--", "add", "Logical_Switch", "ls-a", "dns_records", "@dns",
]

# (OVS interface, logical port, ofport) of the VIFs bound on hv1.
RICH_VIFS = (("vif-a1", "ls-a-p1", 11), ("vif-a2", "ls-a-p2", 12),
             ("vif-b1", "ls-b-p1", 21), ("vif-md", "ls-a-md", 13))


def build_rich(sb: Sandbox) -> None:
    """The rich topology, exactly as recipe §4.2 (needs northd; chassis must be hv1)."""
    if not sb.northd_enabled:
        raise SandboxError("build_rich needs northd (it waits for SB Port_Bindings)")
    if sb.chassis != "hv1":
        raise SandboxError("build_rich names chassis hv1 in the NB; use chassis='hv1'")
    # OVS side: provider bridge and mapping
    sb.vsctl("--may-exist", "add-br", "br-phys",
             "--", "set", "Bridge", "br-phys", "datapath_type=dummy", "fail-mode=standalone",
             "--", "set", "Open_vSwitch", ".", "external_ids:ovn-bridge-mappings=physnet1:br-phys")
    sb.appctl("ovs-vswitchd", "netdev-dummy/ip4addr", "br-phys", "172.16.0.2/24")
    # fake remote chassis, SB only
    sb.sbctl("--may-exist", "chassis-add", "hv2", "geneve", "127.0.0.2")
    sb.nbctl("--no-wait", *_RICH_NB)
    group = sb.nbctl("--bare", "--columns=_uuid", "find", "HA_Chassis_Group",
                     "name=hagrp").strip()
    sb.nbctl("--no-wait", "set", "Logical_Switch_Port", "ext1", f"ha_chassis_group={group}")
    for name, lsp, ofport in RICH_VIFS:
        sb.bind_vif(name, lsp, ofport=ofport, pcap=True)
    sb.nbctl("--wait=sb", "sync")
    sb.sbctl("lsp-bind", "ls-b-p2", "hv2")
