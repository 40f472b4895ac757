"""physical_flow_output's handlers for other chassis (issue 16): a tunnel
that moves, goes away or appears, and a remote chassis appearing with MAC
mappings, leave exactly the table a full compute with the new inputs builds
(also when they arrive in the middle of a sliced compute); the real
builders on the ``rich`` reference snapshot."""

from __future__ import annotations

import collections
import dataclasses
import types
import uuid
from typing import Any

import pytest

from controller.engine.core import UNHANDLED
from controller.lflow.snapshot import SbSnapshot
from controller.nodes.non_vif_data import NonVifData
from controller.nodes.physical_flow_output import PflowOutput
from controller.ovsdb.tracking import ROW_CREATE, ROW_UPDATE, TableChanges
from integration.test_physical_parity import RICH, build_context
from physical import ChassisTunnel
from tests.agent.sliced_harness import OneNodeEngine
from tests.agent.test_sliced_pflow import TABLES, _contents

pytestmark = pytest.mark.skipif(not (RICH / "sb.db").exists(), reason="no reference data")


class Harness(OneNodeEngine):
    """A PflowOutput over the snapshot, in a one-node engine whose input is
    ``non_vif_data`` or ``SB_chassis``; the agent state it reads (local
    datapaths, Port_Binding and Multicast_Group indexes) from the context."""

    def __init__(self, sb: SbSnapshot, slice_ms: float | None, leaf: str = "non_vif_data",
                 handler: str = "non_vif_data") -> None:
        self.ctx, _ = build_context(sb, RICH)
        self.rows: dict[str, dict[uuid.UUID, Any]] = {
            t: {r.uuid: r for r in sb.table(t)}
            for t in (*TABLES, "Chassis", "HA_Chassis_Group")}
        pbs = list(self.rows["Port_Binding"].values())
        by_name = {pb.logical_port: pb for pb in pbs}
        by_dp: dict[uuid.UUID, list[Any]] = collections.defaultdict(list)
        for pb in pbs:
            by_dp[pb.datapath.uuid].append(pb)
        mgs = {(mc.datapath.uuid, mc.name): mc for mc in self.rows["Multicast_Group"].values()}
        st = types.SimpleNamespace(
            chassis=self.ctx.chassis,
            rt=types.SimpleNamespace(local_datapaths={
                ld.datapath.uuid: ld for ld in self.ctx.local_datapaths.values()}),
            idx=types.SimpleNamespace(
                pb_by_name=types.SimpleNamespace(get=by_name.get, by_key=by_name),
                pbs_on_datapath=lambda u: list(by_dp[u]),
                mg_by_name=types.SimpleNamespace(by_key=mgs)))
        self.out = PflowOutput(st, lambda t: self.rows.get(t, {}),   # type: ignore[arg-type]
                               lambda: None)
        self.out._ctx = lambda node: self.ctx       # type: ignore[method-assign]
        self.wire(self.out, "physical_flow_output", leaf, "Chassis", handler, slice_ms)

    def feed(self, data: Any) -> None:
        """The input's data for the next run (and mark it changed)."""
        self.node.input(self._leaf).data = data
        self.changed = True

    def table(self) -> set[tuple[Any, ...]]:
        return _contents(self.out.data.flow_table)


def _fresh(sb: SbSnapshot, tunnels: list[ChassisTunnel],
           chassis: dict[uuid.UUID, Any] | None = None) -> set[tuple[Any, ...]]:
    h = Harness(sb, None)
    h.ctx.chassis_tunnels = tunnels
    if chassis is not None:
        h.rows["Chassis"] = chassis
        h.ctx.all_chassis = list(chassis.values())
    h.finish()
    return h.table()


def _moved(nv_tunnels: list[ChassisTunnel], names: set[str]) -> NonVifData:
    nv = NonVifData()
    nv.tunnels = nv_tunnels
    nv.tunnels_changed = True
    nv.tunnel_chassis_changed = set(names)
    return nv


@pytest.fixture(scope="module")
def sb() -> SbSnapshot:
    return SbSnapshot(RICH / "sb.db")


@pytest.mark.parametrize("change", ["move", "gone", "new"])
def test_tunnel_changes_rebuild_what_a_compute_builds(sb: SbSnapshot, change: str) -> None:
    h = Harness(sb, None)
    h.finish()
    before = h.table()
    tun = h.ctx.chassis_tunnels[0]
    assert tun.chassis_name == "hv2"        # the snapshot's one remote chassis
    if change == "move":
        tunnels, names = [dataclasses.replace(tun, ofport=77)], {"hv2"}
    elif change == "gone":
        tunnels, names = [], {"hv2"}
    else:
        tunnels = [tun, ChassisTunnel("hv9", 78, tun.type, "192.0.2.9")]
        names = {"hv9"}
    h.ctx.chassis_tunnels = tunnels
    h.feed(_moved(tunnels, names))
    h.run()
    assert not h.node.pending()
    assert h.table() == _fresh(sb, tunnels)
    assert h.table() != before


@pytest.mark.parametrize("queued", ["tunnel", "ps"])
def test_tunnel_moving_during_a_sliced_compute(sb: SbSnapshot, queued: str) -> None:
    """`queued`: the tunnel flows (and ports) still to build when the tunnel
    moves, or only the port security flows (the generic ones are built)."""
    h = Harness(sb, 0.0)
    while True:
        h.run()
        assert h.node.pending()
        kinds = {kind for kind, _ in h.out.queue}
        if "conj" not in kinds and ({"tunnel", "pb"} <= kinds if queued == "tunnel"
                                    else "ps" in kinds and "tunnel" not in kinds):
            break
    tunnels = [dataclasses.replace(h.ctx.chassis_tunnels[0], ofport=77)]
    h.ctx.chassis_tunnels = tunnels
    h.feed(_moved(tunnels, {"hv2"}))
    h.finish()
    assert h.table() == _fresh(sb, tunnels)


def test_remote_chassis_appearing_rebuilds_the_generic_flows(sb: SbSnapshot) -> None:
    h = Harness(sb, None, leaf="SB_chassis", handler="chassis")
    h.finish()
    new = types.SimpleNamespace(uuid=uuid.uuid4(), name="hv9", hostname="hv9",
                                other_config={"ovn-chassis-mac-mappings": "phys:0a:00:00:00:00:99"},
                                encaps=[])
    h.rows["Chassis"] = {**h.rows["Chassis"], new.uuid: new}
    h.ctx.all_chassis = list(h.rows["Chassis"].values())
    tc = TableChanges("Chassis")
    tc.record(ROW_CREATE, new)
    h.feed(tc)
    h.run()
    table = h.table()
    assert table == _fresh(sb, list(h.ctx.chassis_tunnels), h.rows["Chassis"])
    assert any(f[2] == new.uuid.int >> 96 for f in table)     # its MAC flow's cookie

    # An update of its other_config: the generic flows again; our own row: recompute.
    new.other_config = {"ovn-chassis-mac-mappings": "phys:0a:00:00:00:00:98"}
    tc = TableChanges("Chassis")
    tc.record(ROW_UPDATE, new, {"other_config": {}})
    h.feed(tc)
    h.run()
    assert h.table() == _fresh(sb, list(h.ctx.chassis_tunnels), h.rows["Chassis"])
    tc = TableChanges("Chassis")
    tc.record(ROW_UPDATE, h.ctx.chassis, {"other_config": {}})
    assert h.out.handlers["chassis"](h.node, types.SimpleNamespace(data=tc)) is UNHANDLED


@pytest.mark.parametrize("ofport", [9, None])
def test_localnet_patch_port_moving_rebuilds_its_datapath(sb: SbSnapshot,
                                                          ofport: int | None) -> None:
    """The ports of a localnet datapath not bound here leave through the
    localnet's patch port: moving (9) or losing (None) it rebuilds them too."""
    h = Harness(sb, None)
    h.finish()
    before = h.table()
    patches = {} if ofport is None else {"ln-pub": ofport}
    assert dict(h.ctx.patch_ofports) == {"ln-pub": 2}
    h.ctx.patch_ofports = patches
    nv = NonVifData()
    nv.patch_ofports = dict(patches)
    nv.patches_changed = {"ln-pub"}
    h.feed(nv)
    h.run()
    fresh = Harness(sb, None)
    fresh.ctx.patch_ofports = patches
    fresh.finish()
    assert h.table() == fresh.table() != before
