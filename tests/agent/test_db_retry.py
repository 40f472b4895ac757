"""IdlLoop: a failed SB commit is retried by replaying the Port_Bindings it
wrote as tracked updates (no recompute), only once a transaction can be
opened again; a reconnection alone reports no reset."""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import ovs.db.idl
import pytest

from controller.ovsdb import connections as dbmod


class _Table:
    def __init__(self, name: str) -> None:
        self.name = name


class _Row:
    def __init__(self, table: str) -> None:
        self.uuid = uuidlib.uuid4()
        self._table = _Table(table)


class _Txn(ovs.db.idl.Transaction):  # type: ignore[misc]
    """Stands in for ovs.db.idl.Transaction (its status constants kept);
    the commit status is decided by the test."""

    status = "try again"
    opened: list[_Txn] = []

    def __init__(self, idl: Any) -> None:
        self._txn_rows: dict[uuidlib.UUID, _Row] = {}
        _Txn.opened.append(self)

    def commit(self) -> str:
        return _Txn.status

    def get_error(self) -> str:
        return "error"


@pytest.fixture()
def loop(monkeypatch: pytest.MonkeyPatch) -> dbmod.IdlLoop:
    lp = dbmod.open_sb("unix:/nonexistent/sb.sock", 0)
    idl = lp.idl
    state = {"connected": True}
    monkeypatch.setattr(idl, "run", lambda: None)
    monkeypatch.setattr(idl._session, "is_connected", lambda: state["connected"])
    monkeypatch.setattr(idl._session, "get_seqno", lambda: 1)
    monkeypatch.setattr(idl, "has_ever_connected", lambda: True)
    idl.state = idl.IDL_S_MONITORING
    monkeypatch.setattr(dbmod.ovs.db.idl, "Transaction", _Txn)
    monkeypatch.setattr(_Txn, "opened", [])
    lp.test_state = state   # type: ignore[attr-defined]
    return lp


def _rows(lp: dbmod.IdlLoop) -> tuple[_Row, _Row]:
    pb, ch = _Row("Port_Binding"), _Row("Chassis")
    lp.idl.tables["Port_Binding"].rows[pb.uuid] = pb
    lp.idl.tables["Chassis"].rows[ch.uuid] = ch
    return pb, ch


def test_failed_commit_replays_port_bindings(loop: dbmod.IdlLoop) -> None:
    pb, ch = _rows(loop)
    res = loop.run()
    assert loop.txn is not None and not res.reset
    loop.txn._txn_rows = {pb.uuid: pb, ch.uuid: ch}
    assert loop.commit() == "try again"
    assert loop.commit_failed and loop.replay == [("Port_Binding", pb.uuid)]
    loop.clear_tracked()
    loop.idl.change_seqno += 1          # the replica moved: may retry
    loop.run()
    assert loop.txn is not None
    tracked = loop.tracker["Port_Binding"]
    assert pb.uuid in tracked.updated and tracked.updated[pb.uuid].old == {}
    assert not loop.tracker.has_changes("Chassis")    # re-derived every iteration
    assert loop.replay == []


def test_replay_waits_for_a_transaction(loop: dbmod.IdlLoop) -> None:
    pb, _ = _rows(loop)
    loop.run()
    assert loop.txn is not None
    loop.txn._txn_rows = {pb.uuid: pb}
    _Txn.status = ovs.db.idl.Transaction.INCOMPLETE
    try:
        assert loop.commit() == "incomplete"
        loop.clear_tracked()
        # the connection drops: the in-flight commit is aborted (try again)
        loop.test_state["connected"] = False   # type: ignore[attr-defined]
        loop.committing._status = "try again"    # type: ignore[union-attr]
        monkey_commit = loop.committing
        monkey_commit.commit = lambda: "try again"  # type: ignore[union-attr,method-assign]
        loop.run()
        assert loop.txn is None and loop.replay, "no transaction while disconnected"
        assert not loop.tracker.has_changes("Port_Binding")
        loop.clear_tracked()
        loop.test_state["connected"] = True   # type: ignore[attr-defined]
        loop.idl.change_seqno += 1
        loop.run()
        assert loop.txn is not None
        assert pb.uuid in loop.tracker["Port_Binding"].updated
    finally:
        _Txn.status = "try again"


def test_successful_commit_replays_nothing(loop: dbmod.IdlLoop) -> None:
    pb, _ = _rows(loop)
    _Txn.status = "success"
    try:
        loop.run()
        assert loop.txn is not None
        loop.txn._txn_rows = {pb.uuid: pb}
        assert loop.commit() == "success"
        assert not loop.commit_failed and loop.replay == []
    finally:
        _Txn.status = "try again"


def test_no_transaction_before_the_monitor_is_back(loop: dbmod.IdlLoop) -> None:
    idl = loop.idl
    idl.state = idl.IDL_S_DATA_MONITOR_COND_SINCE_REQUESTED     # reconnected, no reply yet
    loop.run()
    assert loop.txn is None
    loop.commit()
    idl.state = idl.IDL_S_MONITORING
    loop.run()
    assert loop.txn is not None
