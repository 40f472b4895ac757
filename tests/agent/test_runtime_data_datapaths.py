"""runtime_data's Datapath_Binding handler: which changes of a datapath
recompute the binding data (C: a local datapath deleted; here also its
tunnel key moved, which every flow of the datapath carries)."""

from types import SimpleNamespace

from controller.binding.if_status import IfStatusMgr
from controller.engine.agent_nodes import AgentState
from controller.engine.core import HANDLED_UNCHANGED, UNHANDLED
from controller.nodes.runtime_data import RuntimeDataNode
from controller.ovsdb.tracking import ROW_CREATE, ROW_DELETE, ROW_UPDATE, TableChanges
from ofctrl.seqno import SeqnoTracker
from tests.agent.fakes import dp


def _inp(*events):
    tc = TableChanges("Datapath_Binding")
    for ev, row, old in events:
        tc.record(ev, row, old)
    return SimpleNamespace(data=tc)


def test_datapath_changes_that_recompute_runtime_data():
    local, remote = dp(1), dp(2)
    st = AgentState(IfStatusMgr(SeqnoTracker()))
    st.rt.local_datapaths = {local.uuid: SimpleNamespace(key=1)}
    h = RuntimeDataNode(st).handlers["sb_datapath_binding"]
    node = SimpleNamespace()
    assert h(node, _inp((ROW_UPDATE, local, {"external_ids": {}}))) is HANDLED_UNCHANGED
    assert h(node, _inp((ROW_CREATE, dp(3), None))) is HANDLED_UNCHANGED
    assert h(node, _inp((ROW_UPDATE, remote, {"tunnel_key": 5}))) is HANDLED_UNCHANGED
    assert h(node, _inp((ROW_DELETE, remote, None))) is HANDLED_UNCHANGED
    assert h(node, _inp((ROW_UPDATE, local, {"tunnel_key": 9}))) is UNHANDLED
    assert h(node, _inp((ROW_DELETE, local, None))) is UNHANDLED
