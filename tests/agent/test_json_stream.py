"""controller.ovsdb.json_stream: JSON-RPC framing on the stdlib decoder."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import ovs.json
import ovs.jsonrpc
import pytest

from controller.ovsdb import json_stream
from controller.ovsdb.connections import SB_SCHEMA
from controller.ovsdb.json_stream import FramedParser


def messages_of(stream: str, cuts: list[int]) -> list[object]:
    """Feed `stream` cut at `cuts` the way ovs.jsonrpc.Connection.recv does."""
    out: list[object] = []
    parser: FramedParser | None = None
    pieces = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)])]
    for piece in pieces:
        pending = piece
        while pending:
            if parser is None:
                parser = FramedParser()
            pending = pending[parser.feed(pending):]
            if parser.is_done():
                out.append(parser.finish())
                parser = None
    return out


TRICKY = [
    {"id": 1, "result": {"Logical_Flow": {"u1": {"initial": {
        "match": "ip4.dst == {10.0.0.1, 10.0.0.2} && outport == \"lsp\"",
        "actions": "ct_next { reg0 = 1; }; }}{{ ]][[ \\\\ \\\" \"",
        "external_ids": ["map", [["k{", "v}"], ["\\", "\\\\\""]]]}}}}, "error": None},
    {"method": "update3", "params": [["monid", "sb"], "00000000-0000-0000-0000-000000000000",
                                     {"T": {"u": {"modify": {"c": ["set", [1, 2.5, -3e7]]}}}}],
     "id": None},
    {"id": "echo", "method": "echo", "params": ["\u00e9\u4e2d\U0001f600 \t\n", "}{", "]["]},
    [],
    {},
]


def tricky_stream(sep: str = "") -> tuple[str, list[object]]:
    texts = [json.dumps(m, ensure_ascii=(i % 2 == 0)) for i, m in enumerate(TRICKY)]
    return sep.join(texts), [json.loads(t) for t in texts]


@pytest.mark.parametrize("sep", ["", " ", "\n", " \r\n\t "])
def test_every_single_cut(sep: str) -> None:
    stream, expected = tricky_stream(sep)
    for cut in range(1, len(stream)):
        assert messages_of(stream, [cut]) == expected, cut


def test_random_chunkings_and_one_char_chunks() -> None:
    stream, expected = tricky_stream(" ")
    rng = random.Random(16)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(1, 40)))
        assert messages_of(stream, cuts) == expected
    assert messages_of(stream, list(range(1, len(stream)))) == expected


def test_backslash_runs_at_chunk_ends() -> None:
    for n in range(1, 7):
        value = {"s": "a" + "\\" * n + "\"}{" + "\\" * n, "t": "x"}
        text = json.dumps(value)
        for cut in range(1, len(text)):
            for cut2 in range(cut + 1, min(len(text), cut + 4)):
                assert messages_of(text + text, [cut, cut2]) == [value, value]


def test_large_value_in_4096_chunks() -> None:
    rows = {f"{i:08d}-uuid": {"initial": {"match": f"reg{i % 9} == {{{i}}}", "actions": "next;",
                                          "n": i}} for i in range(20000)}
    value = {"id": 7, "result": {"Logical_Flow": rows}, "error": None}
    text = json.dumps(value)
    cuts = list(range(4096, len(text), 4096))
    assert messages_of(text + json.dumps([1]), cuts) == [value, [1]]


@pytest.mark.parametrize("bad", ['{"a": NaN}', '{"a": Infinity}', '{"a": tru}', '{"a" 1}',
                                 '}', '123 ', '"str" '])
def test_bad_input_is_an_error_string(bad: str) -> None:
    p = FramedParser()
    p.feed(bad)
    assert p.is_done()
    if bad.startswith(("123", '"')):
        # a bare scalar is decoded at once (ovs.jsonrpc rejects non-objects)
        assert not isinstance(p.finish(), dict)
    else:
        result = p.finish()
        assert isinstance(result, str) and result.startswith("syntax error")


def test_extra_closer_is_the_next_messages_error() -> None:
    assert messages_of('{"a": 1}}', []) == [{"a": 1}, "syntax error: Expecting value: line 1 "
                                                       "column 1 (char 0)"]


def test_too_deep_is_an_error_not_a_crash() -> None:
    p = FramedParser()
    p.feed("[" * 100000 + "]" * 100000)
    assert isinstance(p.finish(), str)


def test_unfinished_input() -> None:
    p = FramedParser()
    assert p.finish() == "empty input stream"
    p.feed('{"a": "b')
    assert not p.is_done()
    assert p.finish() == "unexpected end of input"


def test_install_keeps_check_trailer_parser() -> None:
    json_stream.install()
    assert isinstance(ovs.json.Parser(), FramedParser)
    assert ovs.json.PARSER == ovs.json.PARSER_PY
    assert ovs.json.from_string('{"a": [1, "}"]}') == {"a": [1, "}"]}
    assert isinstance(ovs.json.from_string('{"a": 1} x'), str)     # trailer still checked


def test_whole_text_parser_where_the_compiled_one_is_blocked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    json_stream.install()
    monkeypatch.setitem(sys.modules, "ovs._json", None)
    assert isinstance(ovs.json.Parser(check_trailer=True), json_stream.WholeTextParser)
    assert ovs.json.from_string(' {"a": [1, "}", 2.5]} ') == {"a": [1, "}", 2.5]}
    for bad in ('{"a": 1} x', '{"a": NaN}', "", "  "):
        assert isinstance(ovs.json.from_string(bad), str), bad
    schema = Path(SB_SCHEMA)
    assert ovs.json.from_file(str(schema)) == json.loads(schema.read_text())


def test_jsonrpc_connection_reads_messages() -> None:
    json_stream.install()

    class FakeStream:
        name = "fake"

        def __init__(self, data: bytes, size: int) -> None:
            self.chunks = [data[i:i + size] for i in range(0, len(data), size)]

        def recv(self, n: int) -> tuple[int, bytes]:
            import errno
            if not self.chunks:
                return errno.EAGAIN, b""
            return 0, self.chunks.pop(0)

        def close(self) -> None:
            raise AssertionError("the connection failed")

    msgs = [{"id": 1, "result": {"x": "é}{"}, "error": None},
            {"id": None, "method": "update", "params": ["m", {"T": {}}]}]
    # ASCII: ovs.jsonrpc takes a chunk that ends inside a UTF-8 sequence for EOF
    data = "".join(json.dumps(m) for m in msgs).encode()
    for size in (1, 3, 7, 4096):
        conn = ovs.jsonrpc.Connection(FakeStream(data, size))
        got = []
        while True:
            err, msg = conn.recv()
            if msg is None:
                break
            got.append(msg.to_json())
        assert [g.get("id") for g in got] == [1, None]
        assert got[0]["result"] == {"x": "é}{"}
        assert got[1]["params"] == ["m", {"T": {}}]
