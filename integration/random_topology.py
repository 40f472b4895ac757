"""Seeded random OVN topologies for the differential test.

:func:`plan_topology` turns a seed into a :class:`TopologyPlan` (pure: the
same seed always gives the same plan); :func:`build_random` writes it into a
sandbox with northd. A plan mixes: logical switches with VIFs bound here
(OVS interfaces on br-int), bound on fake remote chassis (``lsp-bind``) or
unbound, some with port security and DHCPv4 options; an optional VXLAN-only
fake chassis; external switches with a localnet port (bridge mapping to a
dummy provider bridge); routers attached to the switches, with a distributed
gateway port on an external switch (gateway chassis here or remote), SNAT,
DNAT and distributed dnat_and_snat; load balancers on switches and gateway
routers; address sets, port groups and ACLs on them (stateful, stateless,
logged + metered drops, rejects, conjunctive matches).

Sizes stay small (a few hundred logical flows) so 20 seeds run in CI.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from integration.sandbox import Sandbox


@dataclass
class Vif:
    name: str           # logical switch port
    iface: str          # OVS interface name (<= 15 chars) when bound here
    mac: str
    ip: str
    where: str          # "here", "remote:<chassis>", "unbound"
    port_security: bool = False


@dataclass
class TopologyPlan:
    seed: int
    nb_args: list[str] = field(default_factory=list)      # one ovn-nbctl --no-wait call
    remote_chassis: list[tuple[str, str, str]] = field(default_factory=list)  # name, encap, ip
    vifs: list[Vif] = field(default_factory=list)
    bridge_mappings: list[tuple[str, str]] = field(default_factory=list)  # physnet, bridge

    def describe(self) -> str:
        here = sum(v.where == "here" for v in self.vifs)
        remote = sum(v.where.startswith("remote") for v in self.vifs)
        return (f"seed {self.seed}: {len(self.vifs)} VIFs ({here} here, {remote} remote), "
                f"chassis {[c[0] + '/' + c[1] for c in self.remote_chassis]}, "
                f"localnets {len(self.bridge_mappings)}")


def _nb(plan: TopologyPlan, *args: str) -> None:
    plan.nb_args.extend(["--", *args])


def plan_topology(seed: int) -> TopologyPlan:
    """A random but reproducible topology plan for `seed`."""
    rng = random.Random(seed)
    plan = TopologyPlan(seed)
    n_remote = rng.randint(1, 2)
    for k in range(n_remote):
        plan.remote_chassis.append((f"hv{k + 2}", "geneve", f"127.0.0.{k + 2}"))
    if rng.random() < 0.5:
        plan.remote_chassis.append(("hvx", "vxlan", "127.0.1.1"))
    remote_names = [c[0] for c in plan.remote_chassis]

    # address sets and meters
    address_sets: list[str] = []
    for a in range(rng.randint(1, 2)):
        ips = sorted({f"192.168.{rng.randint(0, 9)}.{rng.randint(1, 250)}"
                      for _ in range(rng.randint(1, 4))})
        name = f"as{a}"
        _nb(plan, "create", "Address_Set", f"name={name}",
            "addresses=[" + ",".join(f'"{ip}"' for ip in ips) + "]")
        address_sets.append(name)
    meters = []
    for m in range(rng.randint(0, 2)):
        _nb(plan, "meter-add", f"mt{m}", "drop", str(rng.choice((10, 50, 100 + m))), "pktps")
        meters.append(f"mt{m}")

    # tenant switches with VIFs
    switches: list[tuple[str, int, list[Vif]]] = []
    for s in range(rng.randint(2, 3)):
        ls = f"ls{s}"
        net = s + 1
        _nb(plan, "ls-add", ls)
        vifs: list[Vif] = []
        for p in range(rng.randint(2, 4)):
            where = rng.choice(("here", "here", "remote", "unbound"))
            if where == "remote":
                where = f"remote:{rng.choice(remote_names)}"
            vif = Vif(f"{ls}-p{p}", f"v{s}-{p}", f"0a:00:00:00:{net:02x}:{p + 10:02x}",
                      f"10.0.{net}.{p + 10}", where, rng.random() < 0.3)
            _nb(plan, "lsp-add", ls, vif.name,
                "--", "lsp-set-addresses", vif.name, f"{vif.mac} {vif.ip}")
            if vif.port_security:
                _nb(plan, "lsp-set-port-security", vif.name, f"{vif.mac} {vif.ip}")
            vifs.append(vif)
            plan.vifs.append(vif)
        if rng.random() < 0.5:
            opts = (f'options={{lease_time="3600", router="10.0.{net}.1", '
                    f'server_id="10.0.{net}.1", server_mac="0a:00:00:00:{net:02x}:01"}}')
            _nb(plan, f"--id=@d{s}", "create", "DHCP_Options", f"cidr=10.0.{net}.0/24", opts)
            for vif in vifs:
                if rng.random() < 0.6:
                    _nb(plan, "set", "Logical_Switch_Port", vif.name, f"dhcpv4_options=@d{s}")
        switches.append((ls, net, vifs))

    # external switches with a localnet port
    externals: list[tuple[str, int]] = []
    for e in range(rng.choice((0, 1, 1, 2))):
        ls, physnet = f"ext{e}", f"physnet{e}"
        _nb(plan, "ls-add", ls, "--", "lsp-add", ls, f"ln-{ls}",
            "--", "lsp-set-type", f"ln-{ls}", "localnet",
            "--", "lsp-set-addresses", f"ln-{ls}", "unknown",
            "--", "lsp-set-options", f"ln-{ls}", f"network_name={physnet}")
        if rng.random() < 0.5:
            _nb(plan, "set", "Logical_Switch_Port", f"ln-{ls}", f"tag_request={100 + e}")
        plan.bridge_mappings.append((physnet, f"br-ph{e}"))
        externals.append((ls, e))

    # routers: each tenant switch on at most one router
    pending = list(switches)
    rng.shuffle(pending)
    r = 0
    while pending:
        take = pending[:rng.randint(1, 2)]
        pending = pending[len(take):]
        lr = f"lr{r}"
        _nb(plan, "lr-add", lr)
        for ls, net, _ in take:
            lrp = f"{lr}-{ls}"
            _nb(plan, "lrp-add", lr, lrp, f"0a:00:00:00:{net:02x}:01", f"10.0.{net}.1/24",
                "--", "lsp-add", ls, f"{ls}-{lr}", "--", "lsp-set-type", f"{ls}-{lr}", "router",
                "--", "lsp-set-addresses", f"{ls}-{lr}", "router",
                "--", "lsp-set-options", f"{ls}-{lr}", f"router-port={lrp}")
        if r < len(externals) and rng.random() < 0.8:
            # one gateway router per external switch: two gateway ports on one
            # localnet make both agents pick among equal-match flows and let the
            # C agent's pinctrl learn MAC_Bindings (see the differential test)
            ext, e = externals[r]
            gw = f"{lr}-{ext}"
            ext_net = 16 + e
            _nb(plan, "lrp-add", lr, gw, f"0a:00:00:01:{ext_net:02x}:{r + 1:02x}",
                f"172.{ext_net}.0.{r + 1}/24",
                "--", "lsp-add", ext, f"{ext}-{lr}", "--", "lsp-set-type", f"{ext}-{lr}", "router",
                "--", "lsp-set-addresses", f"{ext}-{lr}", "router",
                "--", "lsp-set-options", f"{ext}-{lr}", f"router-port={gw}")
            gw_chassis = rng.choice(["hv1", "hv1", *remote_names[:1]])
            _nb(plan, "lrp-set-gateway-chassis", gw, gw_chassis, "20")
            if rng.random() < 0.5:
                _nb(plan, "lsp-set-options", f"{ext}-{lr}", f"router-port={gw}",
                    "nat-addresses=router")
            _nb(plan, "lr-route-add", lr, "0.0.0.0/0", f"172.{ext_net}.0.254")
            for ls, net, vifs in take:
                _nb(plan, "lr-nat-add", lr, "snat", f"172.{ext_net}.0.{100 + r}", f"10.0.{net}.0/24")
                for vif in vifs:
                    roll = rng.random()
                    host = int(vif.ip.rsplit(".", 1)[1])
                    fip = f"172.{ext_net}.0.{100 + 10 * net + host}"      # 121..143
                    if roll < 0.2:
                        _nb(plan, "lr-nat-add", lr, "dnat_and_snat", fip, vif.ip,
                            vif.name, f"0a:00:00:02:{net:02x}:{host:02x}")
                    elif roll < 0.35:
                        _nb(plan, "lr-nat-add", lr, "dnat", fip, vif.ip)
            if rng.random() < 0.5:
                lb = f"lbr{r}"
                backends = [v.ip for _, _, vifs in take for v in vifs][:2]
                _nb(plan, "lb-add", lb, f"172.{ext_net}.0.{200 + r}:80",
                    ",".join(f"{ip}:8080" for ip in backends), "tcp",
                    "--", "lr-lb-add", lr, lb)
        r += 1

    # switch load balancers
    for b in range(rng.randint(0, 2)):
        ls, net, vifs = rng.choice(switches)
        backends = [v.ip for v in vifs[:rng.randint(1, 2)]]
        proto = rng.choice(("tcp", "udp"))
        lb = f"lbs{b}"
        _nb(plan, "lb-add", lb, f"10.99.{b}.{net}:{53 if proto == 'udp' else 80}",
            ",".join(f"{ip}:{53 if proto == 'udp' else 8080}" for ip in backends), proto,
            "--", "ls-lb-add", ls, lb)
        if rng.random() < 0.3:
            _nb(plan, "set", "Load_Balancer", lb, "options:affinity_timeout=30")

    # port groups and ACLs
    all_vifs = [v for _, _, vifs in switches for v in vifs]
    for g in range(rng.randint(1, 2)):
        members = sorted({v.name for v in rng.sample(all_vifs, k=min(len(all_vifs),
                                                                     rng.randint(1, 4)))})
        pg = f"pg{g}"
        _nb(plan, "pg-add", pg, *members)
        aset = rng.choice(address_sets)
        # Distinct priorities per group: groups may share ports, and two ACLs
        # with one match but different actions would conflict (either agent
        # may install either). The conjunctive ACL keeps one priority for all
        # groups on purpose: equal clause flows are merged by both agents.
        _nb(plan, "acl-add", pg, "from-lport", str(1001 + 10 * g), f"inport == @{pg} && ip4",
            rng.choice(("allow-related", "allow", "allow-stateless")))
        _nb(plan, "acl-add", pg, "to-lport", str(1002 + 10 * g),
            f"outport == @{pg} && ip4 && ip4.src == ${aset} && tcp.dst == 22", "allow-related")
        ports = sorted(rng.sample((80, 443, 8080, 8443, 9090), k=3))
        srcs = sorted({f"10.0.{rng.randint(1, 3)}.{rng.randint(10, 13)}" for _ in range(3)})
        _nb(plan, "acl-add", pg, "to-lport", "1003",
            f"outport == @{pg} && ip4.src == {{{', '.join(srcs)}}} && "
            f"tcp.dst == {{{', '.join(map(str, ports))}}}", "allow-related")
        # The default-deny ACL of the group: a drop or a reject, usually logged
        # and metered. With the stateful ACLs above, northd writes it as
        # "log(...); ct_commit { ... }; ..." (23.03.1 drops that ct_commit).
        verdict = rng.choice(("drop", "reject"))
        if meters and rng.random() < 0.7:
            _nb(plan, "--log", f"--meter={rng.choice(meters)}", "--severity=info",
                f"--name={verdict}-{pg}", "acl-add", pg, "to-lport", str(900 + 10 * g),
                f"outport == @{pg} && ip", verdict)
        else:
            _nb(plan, "acl-add", pg, "to-lport", str(900 + 10 * g), f"outport == @{pg} && ip",
                verdict)
    ls, _, _ = rng.choice(switches)
    verdict = rng.choice(("reject", "drop"))
    log_args = ["--log", f"--meter={rng.choice(meters)}", "--severity=warning",
                f"--name={verdict}-{ls}"] if meters and rng.random() < 0.5 else []
    _nb(plan, *log_args, "acl-add", ls, "to-lport", "1010",
        f"ip4.src == ${rng.choice(address_sets)}", verdict)
    return plan


def build_random(box: Sandbox, seed: int) -> TopologyPlan:
    """Write the plan of `seed` into a sandbox with northd; returns the plan."""
    plan = plan_topology(seed)
    for name, encap, ip in plan.remote_chassis:
        box.sbctl("--may-exist", "chassis-add", name, encap, ip)
    if plan.bridge_mappings:
        args: list[str] = []
        for _, bridge in plan.bridge_mappings:
            args += ["--", "--may-exist", "add-br", bridge, "--", "set", "Bridge", bridge,
                     "datapath_type=dummy", "fail-mode=standalone"]
        mappings = ",".join(f"{net}:{br}" for net, br in plan.bridge_mappings)
        box.vsctl(*args, "--", "set", "Open_vSwitch", ".",
                  f"external_ids:ovn-bridge-mappings={mappings}")
    box.nbctl("--no-wait", *plan.nb_args)
    here = [(v.iface, v.name) for v in plan.vifs if v.where == "here"]
    if here:
        box.bind_vifs(here)
    box.nbctl("--wait=sb", "sync")
    for vif in plan.vifs:
        if vif.where.startswith("remote:"):
            box.sbctl("lsp-bind", vif.name, vif.where.split(":", 1)[1])
    return plan
