"""Generate tests/physical/data/extra: the C ovn-controller's flows for a
feature-dense variant of reference-data/rich (run by hand, not by pytest).

    .venv/bin/python -m tests.physical.make_extra_reference

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
OUT = Path(__file__).resolve().parent / "data" / "extra"


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


def main() -> None:
    box = Sandbox.from_snapshot(None, RICH / "sb.db")
    try:
        box.vsctl("--may-exist", "add-br", "br-phys", "--", "set", "Bridge", "br-phys",
                  "datapath_type=dummy", "fail-mode=standalone", "--", "set", "Open_vSwitch", ".",
                  "external_ids:ovn-bridge-mappings=physnet1:br-phys",
                  "external_ids:ovn-chassis-mac-mappings=physnet1:0e:00:00:00:00:01",
                  "external_ids:ovn-encap-type=geneve,stt,vxlan")
        box.vsctl("--", "--id=@br", "get", "Bridge", "br-int", "--", "create",
                  "Flow_Sample_Collector_Set", "id=7", "bridge=@br")
        for name, iface, ofport in (("vif-a1", "ls-a-p1", 11), ("vif-a2", "ls-a-p2", 12),
                                    ("vif-md", "ls-a-md", 13), ("vif-b1", "ls-b-p1", 21),
                                    ("vif-mc", "ls-a-mc", 14)):
            box.bind_vif(name, iface, ofport)
        edit_sb(box)
        box.start_controller("c")
        box.wait_hv_sync(timeout=120)
        box.wait_hv_sync(timeout=120)  # second round: claims written back, flows settled
        OUT.mkdir(parents=True, exist_ok=True)
        files = box.backup(OUT / "tmp")
        shutil.copy(files["sb"], OUT / "sb.db")
        shutil.rmtree(OUT / "tmp")
        (OUT / "flows.raw.txt").write_text(box.ofctl("--no-stats", "--names", "dump-flows", "br-int"))
        (OUT / "ports.txt").write_text(box.ofctl("show", "br-int"))
        (OUT / "ct-zones.txt").write_text(box.appctl("ovn-controller", "ct-zone-list"))
        ifaces = json.loads(box.vsctl("--format=json", "--columns=name,type,ofport,mtu,"
                                      "external_ids,options", "list", "Interface"))
        (OUT / "interfaces.json").write_text(json.dumps(ifaces, indent=1))
        (OUT / "collector.json").write_text(json.dumps({"collector_set_id": 7}))
    finally:
        box.stop()


if __name__ == "__main__":
    main()
