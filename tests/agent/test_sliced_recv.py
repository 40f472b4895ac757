"""A big JSON-RPC message is read and parsed over several IDL runs (issue 15:
``TrackedIdl`` budgets the bytes read per run) and arrives intact."""

from __future__ import annotations

import errno
import json
import types
from typing import Any

import ovs.jsonrpc

from controller.ovsdb.connections import TrackedIdl


class FakeStream:
    """A stream whose whole input is already there (as a big update is in
    the socket buffer), handed out in reads of at most `n` bytes."""

    name = "fake"

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.reads = 0

    def recv(self, n: int) -> tuple[int, bytes]:
        if not self.data:
            return errno.EAGAIN, b""
        chunk, self.data = self.data[:n], self.data[n:]
        self.reads += 1
        return 0, chunk

    def close(self) -> None:
        return None


def _message() -> tuple[dict[str, Any], bytes]:
    rows = {f"{i:08x}-0000-0000-0000-000000000000": {"insert": {"match": "1" * 40, "priority": i}}
            for i in range(3000)}
    params = [None, {"Logical_Flow": rows}]
    return params[1], json.dumps({"method": "update2", "params": params, "id": None}).encode()


def test_big_message_is_parsed_over_several_runs() -> None:
    updates, wire = _message()
    assert len(wire) > 200_000
    stream = FakeStream(wire)
    conn = ovs.jsonrpc.Connection(stream)
    idl = types.SimpleNamespace(_budgeted=None, _recv_left=0, recv_bytes=64 * 1024)
    TrackedIdl._budget_reads(idl, conn)     # type: ignore[arg-type]
    assert idl._budgeted is conn
    runs = 0
    while True:
        idl._recv_left = idl.recv_bytes     # what TrackedIdl.run does
        runs += 1
        error, msg = conn.recv()
        if msg is not None:
            break
        assert error == errno.EAGAIN
        assert runs < 100
    assert runs >= len(wire) // (64 * 1024)
    assert msg.method == "update2" and msg.params[1] == updates
    assert not stream.data


def test_unbudgeted_message_is_parsed_in_one_run() -> None:
    updates, wire = _message()
    conn = ovs.jsonrpc.Connection(FakeStream(wire))
    error, msg = conn.recv()
    assert error == 0 and msg is not None and msg.params[1] == updates
