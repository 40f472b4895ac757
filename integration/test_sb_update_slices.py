"""A big SB update is applied by the agent's IDL in slices, one per run
(controller.ovsdb.connections design note), against a real ovsdb-server: every row arrives,
nothing is settled or complete before the last slice."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from controller.ovsdb import connections as dbmod

pytestmark = pytest.mark.skipif(shutil.which("ovsdb-server") is None, reason="no ovsdb-server")


@pytest.fixture
def sb_server(tmp_path: Path):       # type: ignore[no-untyped-def]
    db = tmp_path / "sb.db"
    sock = tmp_path / "sb.sock"
    subprocess.run(["ovsdb-tool", "create", str(db), dbmod.SB_SCHEMA], check=True)
    proc = subprocess.Popen(["ovsdb-server", str(db), f"--remote=punix:{sock}",
                             f"--unixctl={tmp_path / 'sb.ctl'}", "--log-file=/dev/null"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if sock.exists():
            break
        time.sleep(0.05)
    yield f"unix:{sock}"
    proc.terminate()
    proc.wait(10)


def _transact(remote: str, ops: list[dict[str, object]]) -> None:
    subprocess.run(["ovsdb-client", "transact", remote, json.dumps(["OVN_Southbound", *ops])],
                   check=True, stdout=subprocess.DEVNULL)


def _run(sb: dbmod.IdlLoop) -> None:
    sb.run()
    sb.commit()


def test_big_update_arrives_in_slices(sb_server: str) -> None:
    sb = dbmod.open_sb(sb_server, 0)
    sb.idl.chunk_rows = 10
    for _ in range(200):
        _run(sb)
        sb.clear_tracked()
        if sb.conditions_settled():
            break
        time.sleep(0.01)
    assert sb.conditions_settled()
    ops: list[dict[str, object]] = [
        {"op": "insert", "table": "Datapath_Binding", "uuid-name": "dp",
         "row": {"tunnel_key": 7}}]
    ops += [{"op": "insert", "table": "Logical_Flow",
             "row": {"logical_datapath": ["named-uuid", "dp"], "pipeline": "ingress",
                     "table_id": 0, "priority": i, "match": "1", "actions": "next;"}}
            for i in range(35)]
    _transact(sb_server, ops)
    created: list[int] = []
    slices = 0
    for _ in range(400):
        _run(sb)
        tc = sb.tracker["Logical_Flow"]
        if tc.created:
            slices += 1
            created.append(len(tc.created))
            # the datapath came with the first slice, before any lflow
            assert len(sb.table("Datapath_Binding")) == 1
            for u in tc.created:
                assert sb.table("Logical_Flow")[u].logical_datapath[0].tunnel_key == 7
            assert sb.has_deferred() == (sum(created) < 35)
            assert not (sb.has_deferred() and sb.conditions_settled())
        sb.clear_tracked()
        if sum(created) == 35 and not sb.has_deferred():
            break
        time.sleep(0.01)
    assert created == [10, 10, 10, 5] and slices == 4
    assert len(sb.table("Logical_Flow")) == 35
    assert sb.conditions_settled()
    sb.close()
