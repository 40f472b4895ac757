"""Parity of physical/ with the C ovn-controller, without daemons, on
reference-data/rich and seed-500 and tests/physical/data/{extra,extra2,many}.

Loads a dataset's sb.db (a standalone ovsdb file) into IDL-like rows
(``controller.lflow.snapshot.SbSnapshot``, which also reads the gzipped
files of seed-500 in place), builds a
PhysicalContext from conf-ovs.txt, ports.txt and ct-zones.txt, runs
physical.build_all() and compares tables 0, 37-41 and 64-78 with the C
agent's flows.raw.txt (cookies stripped, port names as dumped).

Run ``python -m integration.test_physical_parity [DIR]`` for per-table counts
and differing lines, ``... --bench`` for the build time of seed-500's flows.
"""

from __future__ import annotations

import collections
import json
import re
import types
from pathlib import Path
from typing import Any

from controller.lflow.snapshot import SbSnapshot, dumped_flow_lines, flow_table_of, read_text
from physical import (ChassisTunnel, LocalDatapath, OwnedFlows, PhysicalContext, PhysicalDebug,
                      TunnelType, build_all, flow_to_string)

RICH = Path("/work/shared/reference-data/rich")
SEED500 = RICH.parent / "seed-500"  # sb.db and flows.raw.txt gzipped
PHYS_TABLES = {0, 37, 38, 39, 40, 41} | set(range(64, 79))


# ----------------------------------------------------------------------
# PhysicalContext from the text dumps
# ----------------------------------------------------------------------

def _conf_interfaces(text: str) -> list[dict[str, str]]:
    out = []
    for line in text.splitlines():
        m = re.match(r"\s+Interface (\S+): (.*)", line)
        if not m:
            continue
        d = {"name": m.group(1)}
        for km in re.finditer(r'(\w+)=("[^"]*"|\{[^}]*\}|\S+?)(?:;|$)', m.group(2)):
            d[km.group(1)] = km.group(2).strip('"')
        iid = re.search(r'iface-id="([^"]+)"', m.group(2))
        if iid:
            d["iface-id"] = iid.group(1)
        rip = re.search(r'remote_ip="([^"]+)"', m.group(2))
        if rip:
            d["remote_ip"] = rip.group(1)
        out.append(d)
    return out


def port_names(ports_txt: str) -> dict[int, str]:
    """ofport -> name as dump-flows --names prints it (ambiguous names print as numbers)."""
    names = {int(m.group(1)): m.group(2)
             for m in re.finditer(r"^ (\d+)\(([^)]*)\):", ports_txt, re.M)}
    counts = collections.Counter(names.values())
    return {k: v for k, v in names.items() if counts[v] == 1}


def _json_interfaces(path: Path) -> list[dict[str, str]]:
    """`ovs-vsctl --format=json list Interface` (name,type,ofport,mtu,external_ids,options)."""
    doc = json.loads(path.read_text())
    out = []
    for values in doc["data"]:
        rec = dict(zip(doc["headings"], values))
        d = {"name": rec["name"], "type": rec["type"]}
        if isinstance(rec["ofport"], int):
            d["ofport"] = str(rec["ofport"])
        if isinstance(rec.get("mtu"), int):
            d["mtu"] = str(rec["mtu"])
        ext = dict(rec["external_ids"][1])
        if "iface-id" in ext:
            d["iface-id"] = ext["iface-id"]
        opts = dict(rec["options"][1])
        if "remote_ip" in opts:
            d["remote_ip"] = opts["remote_ip"]
        out.append(d)
    return out


def build_context(sb: SbSnapshot, data: Path) -> tuple[PhysicalContext, Any]:
    if (data / "interfaces.json").exists():
        system_name = "hv1"
        ifaces = _json_interfaces(data / "interfaces.json")
    else:
        conf = read_text(data / "conf-ovs.txt")
        system_id = re.search(r'system-id="([^"]+)"', conf)
        assert system_id
        system_name = system_id.group(1)
        ifaces = _conf_interfaces(conf)
    chassis = next(c for c in sb.table("Chassis") if c.name == system_name)
    pbs = sb.table("Port_Binding")
    by_name = {pb.logical_port: pb for pb in pbs}
    vif_ofports = {i["iface-id"]: int(i["ofport"]) for i in ifaces if "iface-id" in i}
    patch_ofports = {i["name"][len("patch-br-int-to-"):]: int(i["ofport"]) for i in ifaces
                     if i.get("type") == "patch" and i["name"].startswith("patch-br-int-to-")}
    encap_chassis = {e.ip: e.chassis_name for e in sb.table("Encap")}
    tun_types = {"geneve": TunnelType.GENEVE, "stt": TunnelType.STT, "vxlan": TunnelType.VXLAN}
    tunnels = [ChassisTunnel(encap_chassis[i["remote_ip"]], int(i["ofport"]), tun_types[i["type"]],
                             i["remote_ip"], ":" in i["remote_ip"])
               for i in ifaces if i.get("type") in tun_types and i.get("remote_ip") in encap_chassis]
    zones = {}
    for line in read_text(data / "ct-zones.txt").splitlines():
        if line.strip():
            owner, zone = line.split()
            zones[owner] = int(zone)

    # Local datapaths: datapaths of ports bound here (VIFs, localports with a VIF,
    # chassisredirect/l3gateway bound here), then everything reachable over patch ports.
    def peer_of(pb: Any) -> Any:
        peer = by_name.get(pb.options.get("peer", ""))
        return peer if peer is not None and peer.type == pb.type else None

    seeds = set()
    for pb in pbs:
        bound = pb.chassis[0].name == chassis.name if pb.chassis else False
        if pb.logical_port in vif_ofports or bound:
            seeds.add(pb.datapath.uuid)
    by_dp: dict[Any, list[Any]] = collections.defaultdict(list)
    for pb in pbs:
        by_dp[pb.datapath.uuid].append(pb)
    dps = {dp.uuid: dp for dp in sb.table("Datapath_Binding")}
    local: dict[int, LocalDatapath] = {}
    todo = list(seeds)
    while todo:
        du = todo.pop()
        dp = dps[du]
        if dp.tunnel_key in local:
            continue
        ld = LocalDatapath(dp, is_switch="logical-switch" in dp.external_ids,
                           is_transit_switch="interconn-ts" in dp.external_ids)
        local[dp.tunnel_key] = ld
        for pb in by_dp[du]:
            if pb.type == "localnet":
                ld.localnet_port = pb
            elif pb.type == "external":
                ld.external_ports[pb.logical_port] = pb
            if pb.additional_chassis:
                ld.multichassis_ports[pb.logical_port] = pb
            if pb.type == "patch":
                peer = peer_of(pb)
                if peer is not None:
                    ld.peer_ports.append((pb, peer))
                    todo.append(peer.datapath.uuid)
    sb_global = sb.table("SB_Global")
    use_ct_mark = True
    debug = PhysicalDebug()
    if sb_global:
        opts = sb_global[0].options
        use_ct_mark = opts.get("lb_hairpin_use_ct_mark", "true") == "true"
        # The C agent samples drops only if the collector set exists on br-int.
        collectors = (json.loads((data / "collector.json").read_text())
                      if (data / "collector.json").exists() else {})
        set_id = int(opts.get("debug_drop_collector_set", "0"))
        if set_id and collectors.get("collector_set_id") == set_id:
            debug = PhysicalDebug(set_id, int(opts.get("debug_drop_domain_id", "0")))
    mtus = {i["iface-id"]: int(i["mtu"]) for i in ifaces if "iface-id" in i and "mtu" in i}
    ctx = PhysicalContext(
        chassis=chassis, local_datapaths=local, port_bindings_by_name=by_name,
        vif_ofports=vif_ofports, patch_ofports=patch_ofports, chassis_tunnels=tunnels,
        ct_zones=zones, all_chassis=sb.table("Chassis"), lb_hairpin_use_ct_mark=use_ct_mark,
        debug=debug, iface_mtus=mtus)
    tables = types.SimpleNamespace(
        port_bindings=pbs, multicast_groups=sb.table("Multicast_Group"),
        mac_bindings=sb.table("MAC_Binding"), static_mac_bindings=sb.table("Static_MAC_Binding"),
        fdbs=sb.table("FDB"), load_balancers=sb.table("Load_Balancer"))
    return ctx, tables


# ----------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------

def expected_lines(data: Path) -> list[str]:
    return dumped_flow_lines(data / "flows.raw.txt", PHYS_TABLES)


def actual_lines(groups: list[OwnedFlows], names: dict[int, str]) -> list[str]:
    seen: set[Any] = set()
    out = []
    for _owner, flows in groups:
        for f in flows:
            key = (f.table, f.priority, f.match)
            if key in seen:
                continue  # ofctrl keeps the first flow for a (table, priority, match)
            seen.add(key)
            out.append(flow_to_string(f, names))
    return out


def _flow_counters(data: Path) -> tuple[collections.Counter[str], collections.Counter[str]]:
    """(C agent's lines, ours) for the dataset in ``data``."""
    sb = SbSnapshot(data / "sb.db")
    ctx, tables = build_context(sb, data)
    names = port_names(read_text(data / "ports.txt"))
    exp = collections.Counter(expected_lines(data))
    act = collections.Counter(actual_lines(build_all(ctx, tables), names))
    return exp, act


def compare(data: Path = RICH) -> dict[int, tuple[int, int, int]]:
    exp, act = _flow_counters(data)
    result: dict[int, tuple[int, int, int]] = {}
    for table in sorted(PHYS_TABLES):
        e = collections.Counter({k: v for k, v in exp.items() if flow_table_of(k) == table})
        a = collections.Counter({k: v for k, v in act.items() if flow_table_of(k) == table})
        same = sum((e & a).values())
        result[table] = (same, sum((e - a).values()), sum((a - e).values()))
    return result


def diff_lines(data: Path = RICH) -> tuple[list[str], list[str]]:
    exp, act = _flow_counters(data)
    return sorted((exp - act).elements()), sorted((act - exp).elements())


def test_rich_physical_parity() -> None:
    result = compare()
    missing = {t: r[1] for t, r in result.items() if r[1]}
    extra = {t: r[2] for t, r in result.items() if r[2]}
    assert sum(r[0] for r in result.values()) > 100
    assert not missing and not extra, (missing, extra)


def test_seed500_physical_parity() -> None:
    result = compare(SEED500)
    assert sum(r[0] for r in result.values()) > 10000
    assert all(r[1] == 0 and r[2] == 0 for r in result.values()), result


EXTRA = Path(__file__).resolve().parents[1] / "tests" / "physical" / "data" / "extra"


def test_extra_physical_parity() -> None:
    """rich + VXLAN/STT/vtep chassis, chassis MACs, tagged localnet, bound external
    port, nested container, HA-remote bundle, multichassis rarp port, MAC_Binding,
    Static_MAC_Binding, FDB, hairpin_snat_ip and drop sampling (C agent output
    generated by tests/physical/make_extra_reference.py)."""
    result = compare(EXTRA)
    assert sum(r[0] for r in result.values()) > 140
    assert all(r[1] == 0 and r[2] == 0 for r in result.values()), result



def test_extra2_physical_parity() -> None:
    """Multichassis port on a localnet switch (PMTUD flows with nested controller
    actions), chassis-MAC router-MAC replacement, redirect-type=bridged, transit
    switch, l3gateway / l2gateway ports, vlan-passthru, sctp / port-less /
    old-northd load balancers, prefix port security."""
    result = compare(EXTRA.parent / "extra2")
    assert sum(r[0] for r in result.values()) > 180
    assert all(r[1] == 0 and r[2] == 0 for r in result.values()), result



def test_many_remote_chassis_fanout_order() -> None:
    """14 remote chassis in one multicast group: the C agent outputs them in its
    string-set hash order, reproduced by physical.ovshash."""
    result = compare(EXTRA.parent / "many")
    assert result[39][0] > 20
    assert all(r[1] == 0 and r[2] == 0 for r in result.values()), result


def bench_seed500(runs: int = 5) -> None:
    """Print the CPU time of physical.build_all and of loading its flows into an
    ofctrl DesiredFlowTable, for seed-500 (first run and best of the others)."""
    import time

    from ofctrl.desired import DesiredFlowTable
    from physical import add_to_desired
    ctx, tables = build_context(SbSnapshot(SEED500 / "sb.db"), SEED500)
    times = []
    n_flows = 0
    for _ in range(runs):
        t0 = time.process_time()
        groups = build_all(ctx, tables)
        t1 = time.process_time()
        add_to_desired(DesiredFlowTable(), groups)
        t2 = time.process_time()
        times.append((t1 - t0, t2 - t0))
        n_flows = sum(len(g.flows) for g in groups)
    rest = times[1:] or times
    print(f"seed-500: {n_flows} physical flows; build_all first {times[0][0] * 1e3:.0f} ms, "
          f"best {min(t[0] for t in rest) * 1e3:.0f} ms; build_all + add_to_desired first "
          f"{times[0][1] * 1e3:.0f} ms, best {min(t[1] for t in rest) * 1e3:.0f} ms (CPU time)")


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--bench"]:
        bench_seed500()
        sys.exit(0)
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else RICH
    for t, (same, miss, extra) in compare(target).items():
        if same or miss or extra:
            print(f"table {t:2d}: identical {same:3d}  missing {miss:3d}  extra {extra:3d}")
    m, x = diff_lines(target)
    for line in m:
        print("-", line)
    for line in x:
        print("+", line)
