"""Generate tests/physical/data/extra: the C ovn-controller's flows for a
feature-dense variant of reference-data/rich (run by hand, not by pytest).

    .venv/bin/python -m tests.physical.make_extra_reference [extra|extra2]

Starts from the rich SB snapshot with northd off and edits the SB directly
so the physical code paths that rich does not reach are exercised: VXLAN,
STT and extra Geneve chassis, a VTEP chassis with a vtep port (ramp flows),
remote chassis MAC mappings, a tagged localnet port, an external port bound
here, a nested container, an HA-remote port (bundle), a multichassis port
with activation-strategy=rarp, MAC_Binding / Static_MAC_Binding / FDB rows,
hairpin_snat_ip on a load balancer and drop sampling.  Then runs the real
ovn-controller 23.03.1 and saves: sb.db (the SB as the agent saw it),
flows.raw.txt, ports.txt, ct-zones.txt, interfaces.json (OVS interfaces),
collector.json (drop-sampling settings).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from integration.sandbox import Sandbox

RICH = Path("/work/shared/reference-data/rich")
DATA = Path(__file__).resolve().parent / "data"


def _uuid(box: Sandbox, table: str, cond: str) -> str:
    return box.sbctl("--bare", "--columns=_uuid", "find", table, cond).strip().split()[0]


def edit_sb(box: Sandbox) -> None:
    sb = box.sbctl
    for name, typ, ip in (("hv3", "vxlan", "127.0.0.3"), ("hv4", "stt", "127.0.0.4"),
                          ("hv5", "geneve", "127.0.0.5"), ("hv6", "vxlan", "127.0.0.6")):
        sb("chassis-add", name, typ, ip)
    sb("set", "Chassis", "hv2", 'other_config:ovn-chassis-mac-mappings="physnet1:0e:00:00:00:00:02"')
    sb("set", "Chassis", "hv6", "other_config:is-vtep=true")
    hv = {n: _uuid(box, "Chassis", f"name={n}") for n in ("hv2", "hv3", "hv4", "hv5", "hv6")}
    dp = {n: _uuid(box, "Datapath_Binding", f"external_ids:name={n}")
          for n in ("ls-a", "ls-b", "ls-pub", "lr0")}
    # ls-b-p2 moves to the VXLAN chassis; new ports on STT/HA/vtep chassis.
    sb("set", "Port_Binding", "ls-b-p2", f"chassis={hv['hv3']}")

    def new_pb(name: str, dpn: str, key: int, *cols: str) -> str:
        return sb("--id=@p", "create", "Port_Binding", f"logical_port={name}",
                  f"datapath={dp[dpn]}", f"tunnel_key={key}", *cols).strip()

    p4 = new_pb("ls-b-p4", "ls-b", 4, f"chassis={hv['hv4']}", 'mac="0a:00:00:00:02:04 10.0.2.4"')
    grp = sb("--id=@c1", "create", "HA_Chassis", f"chassis={hv['hv2']}", "priority=10",
             "--", "--id=@c2", "create", "HA_Chassis", f"chassis={hv['hv5']}", "priority=20",
             "--", "create", "HA_Chassis_Group", "name=grp-ha", "ha_chassis=[@c1,@c2]").split()[-1]
    p5 = new_pb("ls-b-p5", "ls-b", 5, f"ha_chassis_group={grp}", 'mac="0a:00:00:00:02:05"')
    vt = new_pb("ls-b-vtep", "ls-b", 6, "type=vtep", f"chassis={hv['hv6']}",
                'options:vtep-physical-switch=ps0', 'options:vtep-logical-switch=lsw0')
    c1 = new_pb("ls-a-c1", "ls-a", 6, "parent_port=ls-a-p1", "tag=42",
                'mac="0a:00:00:00:01:42 10.0.1.42"')
    mcp = new_pb("ls-a-mc", "ls-a", 7, 'mac="0a:00:00:00:01:77 10.0.1.77"',
                 'options:requested-chassis="hv2,hv1"', "options:activation-strategy=rarp",
                 f"requested_chassis={hv['hv2']}", f"chassis={hv['hv2']}")
    for mc_name, dpn, ports in (("_MC_flood", "ls-b", [p4, p5, vt]),
                                ("_MC_flood", "ls-a", [c1, mcp])):
        mc = box.sbctl("--bare", "--columns=_uuid", "find", "Multicast_Group",
                       f"name={mc_name}", f"datapath={dp[dpn]}").strip()
        for p in ports:
            sb("add", "Multicast_Group", mc, "ports", p)
    sb("set", "Port_Binding", "ln-pub", "tag=100")
    # ext1: make hv1 the only HA candidate so that it is claimed here.
    hagrp = _uuid(box, "HA_Chassis_Group", "name=hagrp")
    for hac in box.sbctl("--bare", "--columns=ha_chassis", "list", "HA_Chassis_Group",
                         hagrp).split():
        if box.sbctl("--bare", "--columns=chassis", "list", "HA_Chassis", hac).strip() == hv["hv2"]:
            sb("remove", "HA_Chassis_Group", hagrp, "ha_chassis", hac)
    sb("create", "MAC_Binding", "logical_port=lr0-pub", "ip=172.16.0.50",
       'mac="0a:00:00:00:00:50"', f"datapath={dp['lr0']}")
    sb("create", "MAC_Binding", "logical_port=lr0-a", 'ip="fd00:a::50"',
       'mac="0a:00:00:00:00:51"', f"datapath={dp['lr0']}")
    sb("create", "Static_MAC_Binding", "logical_port=lr0-pub", "ip=172.16.0.60",
       'mac="0a:00:00:00:00:60"', "override_dynamic_mac=true", f"datapath={dp['lr0']}")
    sb("create", "Static_MAC_Binding", "logical_port=lr0-b", "ip=10.0.2.60",
       'mac="0a:00:00:00:00:61"', "override_dynamic_mac=false",
       f"datapath={dp['lr0']}")
    sb("create", "FDB", 'mac="0a:00:00:00:00:70"', "dp_key=1", "port_key=3")
    sb("set", "Load_Balancer", "lb-udp", "options:hairpin_snat_ip=10.0.0.99")
    sb("set", "SB_Global", ".", "options:debug_drop_collector_set=7",
       "options:debug_drop_domain_id=2")


def edit_sb2(box: Sandbox) -> None:
    """extra2: multichassis port on the localnet switch (PMTUD flows), chassis-MAC
    router-port MAC replacement, redirect-type=bridged, transit switch,
    l3gateway and l2gateway ports, vlan-passthru localnet, more load balancers
    (sctp, no port, old-northd ct_* matches), IPv4/IPv6 prefix port security."""
    sb = box.sbctl
    dp = {n: _uuid(box, "Datapath_Binding", f"external_ids:name={n}")
          for n in ("ls-a", "ls-b", "ls-pub", "lr0")}
    hv2 = _uuid(box, "Chassis", "name=hv2")

    def new_pb(name: str, dpn: str, key: int, *cols: str) -> str:
        return sb("--id=@p", "create", "Port_Binding", f"logical_port={name}",
                  f"datapath={dp[dpn]}", f"tunnel_key={key}", *cols).strip()

    mcp = new_pb("ls-pub-mc", "ls-pub", 4, 'mac="0a:00:00:00:10:44 172.16.0.44"',
                 'options:requested-chassis="hv2,hv1"', f"requested_chassis={hv2}",
                 f"chassis={hv2}")
    rem = new_pb("ls-pub-r", "ls-pub", 5, 'mac="0a:00:00:00:10:55 172.16.0.55"', f"chassis={hv2}")
    encap2 = _uuid(box, "Encap", "chassis_name=hv2")
    sb("set", "Port_Binding", "ls-b-p2", f"encap={encap2}")
    mc = box.sbctl("--bare", "--columns=_uuid", "find", "Multicast_Group", "name=_MC_flood",
                   f"datapath={dp['ls-pub']}").strip()
    for p in (mcp, rem):
        sb("add", "Multicast_Group", mc, "ports", p)
    # cr-lr0-pub lives on hv2 now (single-chassis HA group), bridged redirect.
    grp = sb("--id=@c", "create", "HA_Chassis", f"chassis={hv2}", "priority=50",
             "--", "create", "HA_Chassis_Group", "name=grp-cr", "ha_chassis=[@c]").split()[-1]
    sb("set", "Port_Binding", "cr-lr0-pub", f"ha_chassis_group={grp}", f"chassis={hv2}",
       "options:redirect-type=bridged")
    sb("set", "Datapath_Binding", dp["ls-b"], "external_ids:interconn-ts=ts1")
    new_pb("ls-b-gw", "ls-b", 7, "type=l3gateway", "options:peer=lr0-gw",
           "options:l3gateway-chassis=hv1", 'mac="router"')
    new_pb("lr0-gw", "lr0", 7, "type=l3gateway", "options:peer=ls-b-gw",
           "options:l3gateway-chassis=hv1", 'mac="0a:00:00:00:0a:01 10.0.9.1/24"')
    new_pb("ls-pub-l2gw", "ls-pub", 6, "type=l2gateway", "options:network_name=physnet1",
           "options:l2gateway-chassis=hv1", "tag=200", 'mac="unknown"')
    sb("set", "Port_Binding", "ln-pub", "options:vlan-passthru=true")
    sb("set", "Port_Binding", "ls-b-p1",
       'port_security=["0a:00:00:00:02:02 10.0.2.2/24 fd00:b::2/64 fd00:c::/64", "0a:00:00:00:02:09"]')
    dpg = box.sbctl("--bare", "--columns=datapath_group", "list", "Load_Balancer", "lb-tcp").strip()
    sb("create", "Load_Balancer", "name=lb-sctp", "protocol=sctp",
       'vips={"10.0.0.30:5000"="10.0.1.2:5001,10.0.2.2:5002"}',
       f"datapath_group={dpg}", "options:hairpin_orig_tuple=true")
    sb("create", "Load_Balancer", "name=lb-noport", "protocol=tcp",
       'vips={"10.0.0.31"="10.0.1.3", "[fd00:b::31]"="[fd00:a::2]"}', f"datapaths={dp['ls-a']}",
       "options:hairpin_orig_tuple=true", 'options:hairpin_snat_ip="10.0.0.98 fd00:b::98"')
    sb("create", "Load_Balancer", "name=lb-old", "protocol=udp",
       'vips={"10.0.0.32:67"="10.0.2.2:6767"}', f"datapaths={dp['ls-b']}")
    sb("set", "SB_Global", ".", "options:lb_hairpin_use_ct_mark=true")


def edit_sb_many(box: Sandbox) -> None:
    """many: 13 remote Geneve chassis in one multicast group (sset fan-out order)."""
    sb = box.sbctl
    ls_b = _uuid(box, "Datapath_Binding", "external_ids:name=ls-b")
    mc = box.sbctl("--bare", "--columns=_uuid", "find", "Multicast_Group", "name=_MC_flood",
                   f"datapath={ls_b}").strip()
    for i in range(13):
        name = f"chassis-{i:02d}"
        sb("chassis-add", name, "geneve", f"127.0.1.{i + 10}")
        ch = _uuid(box, "Chassis", f"name={name}")
        p = sb("create", "Port_Binding", f"logical_port=ls-b-r{i}", f"datapath={ls_b}",
               f"tunnel_key={20 + i}", f"chassis={ch}").strip()
        sb("add", "Multicast_Group", mc, "ports", p)


def main() -> None:
    import sys
    scenario = sys.argv[1] if len(sys.argv) > 1 else "extra"
    out = DATA / scenario
    box = Sandbox.from_snapshot(None, RICH / "sb.db")
    try:
        box.vsctl("--may-exist", "add-br", "br-phys", "--", "set", "Bridge", "br-phys",
                  "datapath_type=dummy", "fail-mode=standalone", "--", "set", "Open_vSwitch", ".",
                  "external_ids:ovn-bridge-mappings=physnet1:br-phys",
                  "external_ids:ovn-chassis-mac-mappings=physnet1:0e:00:00:00:00:01",
                  "external_ids:ovn-encap-type=geneve,stt,vxlan")
        box.vsctl("--", "--id=@br", "get", "Bridge", "br-int", "--", "create",
                  "Flow_Sample_Collector_Set", "id=7", "bridge=@br")
        vifs = [("vif-a1", "ls-a-p1", 11), ("vif-a2", "ls-a-p2", 12),
                ("vif-md", "ls-a-md", 13), ("vif-b1", "ls-b-p1", 21)]
        vifs.append(("vif-mc", "ls-a-mc", 14) if scenario == "extra" else ("vif-pm", "ls-pub-mc", 15))
        for name, iface, ofport in vifs:
            box.bind_vif(name, iface, ofport)
        {"extra": edit_sb, "extra2": edit_sb2, "many": edit_sb_many}[scenario](box)
        box.start_controller("c")
        box.wait_hv_sync(timeout=120)
        box.wait_hv_sync(timeout=120)  # second round: claims written back, flows settled
        out.mkdir(parents=True, exist_ok=True)
        files = box.backup(out / "tmp")
        shutil.copy(files["sb"], out / "sb.db")
        shutil.rmtree(out / "tmp")
        (out / "flows.raw.txt").write_text(box.ofctl("--no-stats", "--names", "dump-flows", "br-int"))
        (out / "ports.txt").write_text(box.ofctl("show", "br-int"))
        (out / "ct-zones.txt").write_text(box.appctl("ovn-controller", "ct-zone-list"))
        ifaces = json.loads(box.vsctl("--format=json", "--columns=name,type,ofport,mtu,"
                                      "external_ids,options", "list", "Interface"))
        (out / "interfaces.json").write_text(json.dumps(ifaces, indent=1))
        (out / "collector.json").write_text(json.dumps({"collector_set_id": 7}))
    finally:
        box.stop()


if __name__ == "__main__":
    main()
