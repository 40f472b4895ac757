"""Scalar values kept in the rows of the agent's IDL (controller.ovsdb.idl_fastpath)
always read as what ovs.db.idl.Row.__getattr__ returns."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import ovs.db.idl
import ovs.jsonrpc
import pytest

from controller.ovsdb import idl_fastpath
from controller.ovsdb.connections import SB_SCHEMA, TrackedIdl
from controller.ovsdb.tracking import ChangeTracker

_ORIG = idl_fastpath._ORIGINAL


@pytest.fixture(autouse=True)
def installed() -> Iterator[None]:
    was = ovs.db.idl.Row.__getattr__ is idl_fastpath._fast_getattr
    idl_fastpath.install()
    yield
    if not was:
        idl_fastpath.uninstall()


@pytest.fixture()
def idl() -> Iterator[Any]:
    helper = ovs.db.idl.SchemaHelper(SB_SCHEMA)
    helper.register_all()
    i = TrackedIdl("unix:/nonexistent/sb.sock", helper, ChangeTracker(()))
    yield i
    i.close()


def _update(idl: Any, version: int, table: str, u: str, op: str, cols: dict[str, Any]) -> None:
    idl._Idl__parse_update({table: {u: {op: cols}}}, version)


def _chassis(idl: Any) -> tuple[str, Any]:
    u = str(uuid.uuid4())
    _update(idl, ovs.db.idl.OVSDB_UPDATE3, "Chassis", u, "initial",
            {"name": "hv1", "hostname": "host1", "nb_cfg": 3})
    return u, idl.tables["Chassis"].rows[uuid.UUID(u)]


def test_scalars_are_kept_and_others_are_not(idl: Any) -> None:
    _, row = _chassis(idl)
    assert (row.name, row.hostname, row.nb_cfg, row.external_ids, row.encaps) \
        == ("hv1", "host1", 3, {}, [])
    kept = {k for k in row.__dict__ if k not in idl_fastpath._ROW_SLOTS}
    assert kept == {"name", "hostname", "nb_cfg"}


def test_updates_replace_kept_values(idl: Any) -> None:
    u, row = _chassis(idl)
    assert row.hostname == "host1" and row.nb_cfg == 3
    _update(idl, ovs.db.idl.OVSDB_UPDATE2, "Chassis", u, "modify", {"hostname": "host2"})
    assert row.hostname == "host2" and row.nb_cfg == 3
    # The v1 protocol's full rows (old/new), through the same row update.
    idl._Idl__parse_update({"Chassis": {u: {"old": {"nb_cfg": 3},
                                            "new": {"name": "hv1", "nb_cfg": 4}}}},
                           ovs.db.idl.OVSDB_UPDATE)
    assert row.nb_cfg == 4 and row.name == "hv1"
    # Inserted again (same uuid): a new row object.
    _update(idl, ovs.db.idl.OVSDB_UPDATE2, "Chassis", u, "insert", {"name": "hv9"})
    again = idl.tables["Chassis"].rows[uuid.UUID(u)]
    assert again is not row and again.name == "hv9" and again.hostname == ""


def test_transaction_writes_hide_kept_values(idl: Any) -> None:
    _, row = _chassis(idl)
    assert row.hostname == "host1"
    txn = ovs.db.idl.Transaction(idl)
    row.hostname = "written"
    assert row.hostname == "written" == _ORIG(row, "hostname")
    assert "hostname" not in row.__dict__
    row.nb_cfg = 9
    assert row.nb_cfg == 9
    txn.abort()
    assert row.hostname == "host1" == _ORIG(row, "hostname") and row.nb_cfg == 3


def test_deleted_row_reads_as_the_library_does(idl: Any) -> None:
    _, row = _chassis(idl)
    assert row.name == "hv1"
    txn = ovs.db.idl.Transaction(idl)
    row.delete()
    with pytest.raises(AssertionError):
        _ORIG(row, "name")
    with pytest.raises(AssertionError):
        row.name
    txn.abort()


def test_fetch_reply_drops_kept_value(idl: Any) -> None:
    _, row = _chassis(idl)
    assert row.nb_cfg == 3
    txn = ovs.db.idl.Transaction(idl)
    txn._fetch_requests.append({"row": row, "column_name": "nb_cfg", "index": 0})
    row._data["nb_cfg"] = ovs.db.data.Datum.from_json(
        idl.tables["Chassis"].columns["nb_cfg"].type, 7)      # what a fetch reply does
    txn._process_reply(ovs.jsonrpc.Message.create_error("no", None))
    assert row.nb_cfg == 7
    txn.abort()


def test_plain_idl_rows_keep_nothing() -> None:
    helper = ovs.db.idl.SchemaHelper(SB_SCHEMA)
    helper.register_all()
    plain = ovs.db.idl.Idl("unix:/nonexistent/sb.sock", helper)
    try:
        _, row = _chassis(plain)
        assert row.name == "hv1"
        assert "name" not in row.__dict__
    finally:
        plain.close()
