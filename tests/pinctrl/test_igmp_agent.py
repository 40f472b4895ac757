"""The agent's IGMP_Group sync pass (Pinctrl._run_mcast) with a fake SB."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

from controller.diag.coverage import Coverage
from controller.ovsdb.connections import ChangeTracker
from controller.pinctrl.agent import Pinctrl
from integration.mcast_frames import IGMPV2_REPORT, igmp_v2_frame
from tests.pinctrl.test_core_agent import FakeService
from tests.pinctrl.test_igmp_mcast import Row, Txn, pin, row


def setup() -> tuple[Pinctrl, Any, Any, Any, dict[str, dict]]:
    svc = FakeService()
    p = Pinctrl(Coverage(), threaded=False, service=svc)
    assert p.mcast in svc.periodic
    chassis = SimpleNamespace(uuid=uuid.uuid4(), name="hv1")
    dp = SimpleNamespace(uuid=uuid.uuid4(), tunnel_key=1)
    pb = SimpleNamespace(uuid=uuid.uuid4(), tunnel_key=3, logical_port="p3")
    ipm = row(datapath=dp)
    tables: dict[str, dict] = {"IP_Multicast": {uuid.uuid4(): ipm}, "IGMP_Group": {}}
    idx = SimpleNamespace(dp_by_key={1: dp}, pb_by_key={(dp.uuid, 3): pb})
    local = {dp.uuid: SimpleNamespace(key=1, datapath=dp)}
    return p, chassis, idx, local, tables


def sb(txn: Any, tables: dict[str, dict]) -> Any:
    return SimpleNamespace(tracker=ChangeTracker(("IP_Multicast", "IGMP_Group")), txn=txn,
                           table=lambda n: tables[n], has_table=lambda n: n in tables,
                           idl=SimpleNamespace(tables={"IGMP_Group": object()}))


def test_sync_writes_groups_and_mrouters_then_settles() -> None:
    p, chassis, idx, local, tables = setup()
    txn = Txn()
    p._run_mcast(sb(txn, tables), idx, chassis, local)
    assert [r.address for r in txn.rows] == ["mrouters"]          # enabled, no groups yet
    for r in txn.rows:                                            # "committed"
        r.datapath, r.chassis = [local[next(iter(local))].datapath], [chassis]
        tables["IGMP_Group"][r.uuid] = r
    p.mcast.handle(pin(igmp_v2_frame("0a:00:00:00:00:05", "10.0.0.5", IGMPV2_REPORT,
                                     "239.1.1.1")))
    assert p.mcast.dirty
    txn2 = Txn()
    p._run_mcast(sb(txn2, tables), idx, chassis, local)
    assert [(r.address, [x.logical_port for x in r.ports]) for r in txn2.rows] == \
        [("239.1.1.1", ["p3"])]
    for r in txn2.rows:
        r.datapath, r.chassis = [local[next(iter(local))].datapath], [chassis]
        tables["IGMP_Group"][r.uuid] = r
    txn3 = Txn()
    p._run_mcast(sb(txn3, tables), idx, chassis, local)          # verifies, writes nothing
    assert txn3.rows == [] and not p._mcast_wrote
    txn4 = Txn()
    p._run_mcast(sb(txn4, tables), idx, chassis, local)          # nothing changed: skipped
    assert txn4.rows == []


def test_no_txn_or_chassis_does_nothing_and_keeps_dirty() -> None:
    p, chassis, idx, local, tables = setup()
    p._run_mcast(sb(None, tables), idx, chassis, local)
    p._run_mcast(sb(Txn(), tables), idx, None, local)
    assert p.mcast.dirty and p.mcast.snapshot() == {}


def test_a_failing_sync_is_contained_and_retried() -> None:
    p, chassis, idx, local, tables = setup()
    bad = Row(uuid=uuid.uuid4(), address="239.1.1.1", datapath=[object()], chassis=[chassis])
    tables["IGMP_Group"][bad.uuid] = bad
    p._run_mcast(sb(Txn(), tables), idx, chassis, local)         # logged, not raised
    assert p._mcast_wrote
