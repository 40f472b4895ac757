"""Acceptance tests of issue 6 (the agent) against the real sandbox.

1. No full recompute of runtime_data / logical_flow_output /
   physical_flow_output / ct_zones for: a VIF bound on an already-local datapath, a VIF that makes its
   datapath local, a VIF unbound, an ACL added, an address set changed; the
   flows then equal what a forced ``inc-engine/recompute`` yields.
2. ct zones are written to br-int ``external_ids`` key by key (OVSDB
   ``mutate`` insert/delete of ``ct-zone-*``/``ovn-*`` keys, never an
   ``update`` of the whole map), and nothing is written while nothing
   changes.  Zones keeping their numbers across an agent restart is
   already covered by test_agent_basic.py::
   test_zones_restored_after_restart_and_exit_semantics and
   test_agent_faults.py::test_restart_keeps_dataplane_and_zones.
3. ``connection-status`` flips when the SB ovsdb-server dies and comes back;
   an NB change made meanwhile reaches the flows.
4. A malformed Logical_Flow (bad match / bad actions) gives one warning
   naming it, the agent keeps running and installs the other flows.

The teardown of every sandbox (integration/conftest.py) also compares the
tables against a forced recompute.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from integration.conftest import SandboxFactory, forced_recompute_diff
from integration.sandbox import Sandbox
from integration.test_agent_basic import br_ext, col, iface_ext, wait_until

pytestmark = pytest.mark.integration

ENGINE_NODES = ("runtime_data", "logical_flow_output", "physical_flow_output", "ct_zones")


def recomputes(box: Sandbox) -> dict[str, int]:
    return {node: int(box.appctl("controller", "inc-engine/show-stats", node,
                                 "recompute").strip())
            for node in ENGINE_NODES}


def topology(box: Sandbox) -> None:
    """sw0 (p1..p3) and sw1 (q1, q2) behind router lr0; sw2 (r1) on its own;
    an ACL using as1."""
    box.nbctl("lr-add", "lr0")
    for sw, net, ports in (("sw0", "10.0.0", ("p1", "p2", "p3")), ("sw1", "10.0.1", ("q1", "q2"))):
        box.nbctl("ls-add", sw)
        box.nbctl("lrp-add", "lr0", f"lr0-{sw}", f"00:00:00:00:ff:0{sw[-1]}", f"{net}.254/24")
        box.nbctl("lsp-add", sw, f"{sw}-lr0", "--", "lsp-set-type", f"{sw}-lr0", "router",
                  "--", "lsp-set-addresses", f"{sw}-lr0", "router",
                  "--", "lsp-set-options", f"{sw}-lr0", f"router-port=lr0-{sw}")
        for i, port in enumerate(ports, 1):
            box.nbctl("lsp-add", sw, port, "--", "lsp-set-addresses", port,
                      f"00:00:00:00:0{sw[-1]}:0{i} {net}.{i}")
    box.nbctl("ls-add", "sw2", "--", "lsp-add", "sw2", "r1",
              "--", "lsp-set-addresses", "r1", "00:00:00:00:02:01 10.0.2.1")
    box.nbctl("create", "Address_Set", "name=as1", 'addresses="10.0.0.1","10.0.0.2"')
    box.nbctl("acl-add", "sw0", "to-lport", "1002", "ip4.src == $as1 && tcp.dst == 80",
              "allow-related")


def started(sandbox_factory: SandboxFactory) -> Sandbox:
    """Topology, agent running with p1 bound (sw0, lr0, sw1 local; sw2 not),
    synced."""
    box = sandbox_factory(northd=True)
    topology(box)
    box.bind_vif("vif-p1", "p1")
    box.start_controller("py")
    wait_until(lambda: iface_ext(box, "vif-p1").get("ovn-installed") == "true",
               timeout=60, what="p1 installed", box=box)
    box.wait_hv_sync(timeout=60)
    return box


def assert_no_recompute(box: Sandbox, before: dict[str, int], op: str) -> None:
    box.nbctl("--wait=hv", "sync", timeout=60)
    after = recomputes(box)
    grown = {n: after[n] - before[n] for n in ENGINE_NODES if after[n] != before[n]}
    stats = box.appctl("controller", "inc-engine/show-stats")
    diff = forced_recompute_diff(box)
    assert not diff, f"{op}: flows differ from a forced recompute:\n" + "\n".join(diff[:20])
    assert not grown, f"{op}: full recomputes {grown}\n{stats}"


# ---------------------------------------------------------------- 1. no recompute


def test_bind_vif_on_local_datapath_no_recompute(sandbox_factory: SandboxFactory) -> None:
    box = started(sandbox_factory)
    before = recomputes(box)
    n_flows = box.flow_count()
    box.bind_vif("vif-p2", "p2")
    wait_until(lambda: iface_ext(box, "vif-p2").get("ovn-installed") == "true",
               what="p2 installed", box=box)
    assert col(box, "Port_Binding", "logical_port=p2", "chassis") != ""
    assert_no_recompute(box, before, "bind p2 on local sw0")
    assert box.flow_count() > n_flows


def test_bind_first_vif_makes_datapath_local_no_recompute(
        sandbox_factory: SandboxFactory) -> None:
    box = started(sandbox_factory)
    sw2_key = col(box, "Datapath_Binding", "external_ids:name=sw2", "tunnel_key")
    assert f"metadata=0x{int(sw2_key):x}" not in " ".join(box.dump_flows(names=False))
    before = recomputes(box)
    box.bind_vif("vif-r1", "r1")
    wait_until(lambda: iface_ext(box, "vif-r1").get("ovn-installed") == "true",
               what="r1 installed", box=box)
    box.nbctl("--wait=hv", "sync", timeout=60)
    assert f"metadata=0x{int(sw2_key):x}" in " ".join(box.dump_flows(names=False))
    assert_no_recompute(box, before, "bind r1, first VIF of sw2")


def test_unbind_vif_no_recompute(sandbox_factory: SandboxFactory) -> None:
    box = started(sandbox_factory)
    box.bind_vif("vif-p2", "p2")
    wait_until(lambda: iface_ext(box, "vif-p2").get("ovn-installed") == "true",
               what="p2 installed", box=box)
    box.nbctl("--wait=hv", "sync", timeout=60)
    ofport = box.vsctl("get", "Interface", "vif-p2", "ofport").strip()
    before = recomputes(box)
    box.unbind_vif("vif-p2")
    wait_until(lambda: col(box, "Port_Binding", "logical_port=p2", "chassis") == "",
               what="p2 released", box=box)
    assert_no_recompute(box, before, "unbind p2")
    assert not any(f"in_port={ofport}," in f or f"in_port={ofport} " in f
                   for f in box.dump_flows(names=False))


def test_add_acl_no_recompute(sandbox_factory: SandboxFactory) -> None:
    box = started(sandbox_factory)
    before = recomputes(box)
    box.nbctl("acl-add", "sw0", "from-lport", "1001", "ip4.dst == 192.168.77.7", "drop")
    assert_no_recompute(box, before, "acl-add")
    assert any("nw_dst=192.168.77.7" in f for f in box.dump_flows(names=False))


def test_change_address_set_no_recompute(sandbox_factory: SandboxFactory) -> None:
    box = started(sandbox_factory)
    assert not any("nw_src=10.0.0.9" in f for f in box.dump_flows(names=False))
    before = recomputes(box)
    box.nbctl("add", "Address_Set", "as1", "addresses", '"10.0.0.9"')
    assert_no_recompute(box, before, "address set add")
    assert any("nw_src=10.0.0.9" in f for f in box.dump_flows(names=False))
    before = recomputes(box)
    box.nbctl("remove", "Address_Set", "as1", "addresses", '"10.0.0.9"')
    assert_no_recompute(box, before, "address set remove")
    assert not any("nw_src=10.0.0.9" in f for f in box.dump_flows(names=False))


# ---------------------------------------------------------------- 2. ct zones per key

_TRANSACT = re.compile(r'(unix#\d+): received request, method="transact", params=(\[.*\]), id=')


def agent_bridge_ext_ops(log: Path, start: int) -> list[dict[str, object]]:
    """Operations on Bridge.external_ids in the transactions logged by the
    OVS ovsdb-server after byte `start`, except those of ovs-vsctl (which
    carry an "ovs-vsctl" comment): here only our agent writes that column."""
    ops: list[dict[str, object]] = []
    with open(log, encoding="utf-8", errors="replace") as f:
        f.seek(start)
        text = f.read()
    for m in _TRANSACT.finditer(text):
        params = json.loads(m.group(2))
        txn = params[1:]
        if any(op.get("op") == "comment" and "ovs-vsctl" in op.get("comment", "")
               for op in txn):
            continue
        for op in txn:
            if op.get("table") != "Bridge":
                continue
            touched = (op.get("op") in ("update", "insert") and "external_ids" in op.get("row", {})
                       or op.get("op") == "mutate"
                       and any(mu[0] == "external_ids" for mu in op.get("mutations", [])))
            if touched:
                ops.append(op)
    return ops


def check_per_key(ops: list[dict[str, object]]) -> list[str]:
    """Keys mutated; fails on whole-map writes or on foreign keys."""
    keys: list[str] = []
    for op in ops:
        assert op["op"] == "mutate", f"br-int external_ids written as a whole map: {op}"
        for column, mutator, value in op["mutations"]:  # type: ignore[attr-defined]
            if column != "external_ids":
                continue
            assert mutator in ("insert", "delete"), op
            # value: ["map", [[k, v], ...]] for insert; ["set", [k...]] or a map for delete
            kind, items = value if isinstance(value, list) and value[0] in ("map", "set") \
                else ("set", [value])
            names = [it[0] if kind == "map" else it for it in items]
            for name in names:
                assert re.match(r"(ct-zone-|ovn-)", name), f"foreign key {name!r} in {op}"
                keys.append(f"{mutator} {name}")
    return keys


def test_ct_zones_written_per_key(sandbox_factory: SandboxFactory) -> None:
    box = sandbox_factory(northd=True)
    topology(box)
    ovsdb = box.daemons["ovsdb"]
    box.appctl(str(ovsdb.ctl), "vlog/set", "jsonrpc:file:dbg")
    box.vsctl("set", "Bridge", "br-int", "external_ids:foreign-key=keep-me")
    mark = ovsdb.log.stat().st_size
    box.bind_vif("vif-p1", "p1")
    box.start_controller("py")
    wait_until(lambda: "ct-zone-p1" in br_ext(box), timeout=60, what="ct-zone-p1", box=box)
    box.wait_hv_sync(timeout=60)
    box.bind_vif("vif-q1", "q1")
    wait_until(lambda: "ct-zone-q1" in br_ext(box), what="ct-zone-q1", box=box)
    box.unbind_vif("vif-q1")
    wait_until(lambda: "ct-zone-q1" not in br_ext(box), what="ct-zone-q1 gone", box=box)
    box.wait_hv_sync(timeout=60)
    zones = {k: v for k, v in br_ext(box).items() if k.startswith("ct-zone-")}
    box.appctl("controller", "exit", "--restart")
    wait_until(lambda: not box.controller_alive(), what="agent exit", box=box)
    box.stop_controller()
    box.start_controller("py")
    box.wait_hv_sync(timeout=60)
    keys = check_per_key(agent_bridge_ext_ops(ovsdb.log, mark))
    assert "insert ct-zone-p1" in keys and "insert ct-zone-q1" in keys, keys
    assert "delete ct-zone-q1" in keys, keys
    ext = br_ext(box)
    assert ext.get("foreign-key") == "keep-me"
    assert {k: v for k, v in ext.items() if k.startswith("ct-zone-")} == zones
    # Quiet: no write to br-int external_ids at all while nothing changes.
    mark = ovsdb.log.stat().st_size
    time.sleep(5)
    quiet = agent_bridge_ext_ops(ovsdb.log, mark)
    assert quiet == [], f"writes with nothing to change: {quiet}"


# ---------------------------------------------------------------- 3. SB down / up


def test_connection_status_flips_and_flows_resync(sandbox_factory: SandboxFactory) -> None:
    box = started(sandbox_factory)
    assert box.appctl("controller", "connection-status").strip() == "connected"
    sb = box.daemons["sb"]
    box.stop_daemon("sb")
    assert not sb.alive()
    wait_until(lambda: box.appctl("controller", "connection-status").strip() == "not connected",
               what="not connected", box=box)
    # NB change while the SB is away: northd applies it once the SB is back.
    box.nbctl("--no-wait", "acl-add", "sw0", "from-lport", "1001", "ip4.dst == 192.168.66.6",
              "drop")
    assert box.controller_alive()
    # Same command line and database file as Sandbox.start().
    box._ovs_daemon("sb", "ovsdb-server", [f"--remote=punix:{box.run}/ovnsb_db.sock",
                                           str(box.run / "ovnsb_db.db")],
                    base="ovnsb_db", unixctl=True)
    wait_until(lambda: box.appctl("controller", "connection-status").strip() == "connected",
               timeout=60, what="connected again", box=box)
    box.wait_hv_sync(timeout=60)
    assert any("nw_dst=192.168.66.6" in f for f in box.dump_flows(names=False))
    diff = forced_recompute_diff(box)
    assert not diff, "after SB reconnect:\n" + "\n".join(diff[:20])


# ---------------------------------------------------------------- 4. malformed lflow


def _malformed(sandbox_factory: SandboxFactory) -> tuple[Sandbox, list[str], int]:
    """Agent synced, northd stopped; two bad lflows and one good on sw0."""
    box = started(sandbox_factory)
    box.stop_daemon("northd")
    box.northd_enabled = False          # wait_hv_sync plays northd's nb_cfg part
    box.wait_hv_sync(timeout=60)
    n_before = box.flow_count()
    dp = col(box, "Datapath_Binding", "external_ids:name=sw0", "_uuid")
    common = [f"logical_datapath={dp}", "pipeline=ingress", "table_id=1", "priority=42"]
    bad_match = box.sbctl("create", "Logical_Flow", *common,
                          'match="ip4 && bogus == 1"', 'actions="next;"').strip()
    bad_actions = box.sbctl("create", "Logical_Flow", *common,
                            'match="ip4.src == 10.9.9.8"', 'actions="bogus_action(1);"').strip()
    box.sbctl("create", "Logical_Flow", *common, 'match="ip4.src == 10.9.9.9"',
              'actions="drop;"')
    box.wait_hv_sync(timeout=60)
    return box, [bad_match, bad_actions], n_before


def test_malformed_lflow_warns_once_and_others_install(sandbox_factory: SandboxFactory) -> None:
    box, bad, n_before = _malformed(sandbox_factory)
    box.wait_hv_sync(timeout=60)        # a second round must not warn again
    assert box.controller_alive()
    flows = box.dump_flows(names=False)
    good = [f for f in flows if "nw_src=10.9.9.9" in f]
    assert good and all("actions=drop" in f for f in good), good
    assert not any("nw_src=10.9.9.8" in f for f in flows)
    assert len(flows) == n_before + len(good)
    log = (box.run / "ovn-controller-py.log").read_text(errors="replace").splitlines()
    for uuid in bad:
        lines = [ln for ln in log if uuid in ln]
        assert len(lines) == 1, f"{uuid}: {lines}"
        assert "|WARN|" in lines[0], lines[0]


def coverage_totals(box: Sandbox) -> dict[str, int]:
    totals: dict[str, int] = {}
    for line in box.appctl("controller", "coverage/show").splitlines():
        m = re.match(r"(\S+)\s+.*total:\s*(\d+)", line.strip())
        if m:
            totals[m.group(1)] = int(m.group(2))
    return totals


def test_malformed_lflow_counted_in_coverage(sandbox_factory: SandboxFactory) -> None:
    box = started(sandbox_factory)
    before = coverage_totals(box)
    box.stop_daemon("northd")
    box.northd_enabled = False
    dp = col(box, "Datapath_Binding", "external_ids:name=sw0", "_uuid")
    box.sbctl("create", "Logical_Flow", f"logical_datapath={dp}", "pipeline=ingress",
              "table_id=1", "priority=42", 'match="ip4 && bogus == 1"', 'actions="next;"')
    box.wait_hv_sync(timeout=60)
    after = coverage_totals(box)
    grown = {n for n, v in after.items()
             if v > before.get(n, 0) and re.search(r"lflow|parse|error|invalid", n)
             and n != "lflow_run"}
    assert grown, f"no error counter moved: {before} -> {after}"
    assert after.get("lflow_parse_error", 0) > before.get("lflow_parse_error", 0)
