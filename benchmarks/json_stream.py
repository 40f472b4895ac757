"""JSON-RPC parsing: controller.ovsdb.json_stream vs the OVS library's ovs._json.

Design note
-----------
The agent does not load ``ovs._json`` (issue 16: its shared libraries cost
RSS per agent) and frames JSON-RPC messages itself on the stdlib decoder.
This compares both on one Southbound-like monitor reply (Logical_Flow rows
with quoted names, braces inside strings, uuid/set/map columns), fed in
4096-character chunks the way ``ovs.jsonrpc.Connection.recv`` does (the
compiled parser with its byte-offset round trip, ours with character
offsets), under the agent's start-up GC thresholds.  Prints the best CPU
time of `reps` for each and the ratio; nothing is asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import uuid
from typing import Any, Callable

from controller.daemon_profile import STARTUP_GC_THRESHOLD
from controller.ovsdb.json_stream import FramedParser

CHUNK = 4096


def monitor_reply(rows: int) -> str:
    table = {}
    for i in range(rows):
        table[str(uuid.UUID(int=i))] = {"initial": {
            "match": f'inport == "lsp{i}" && ip4.dst == {{10.0.{i % 250}.1, 10.0.0.2}}',
            "actions": "reg0[1] = 1; ct_next { next; };", "table_id": i % 30,
            "priority": 100, "logical_datapath": ["uuid", str(uuid.UUID(int=i * 7))],
            "pipeline": "ingress",
            "external_ids": ["map", [["source", "northd.c:1234"], ["stage-name", "ls_in_acl"]]],
            "tags": ["map", []], "controller_meter": ["set", []]}}
    return json.dumps({"id": 3, "result": {"Logical_Flow": table}, "error": None},
                      separators=(",", ":"))


def parse_compiled(text: str) -> Any:
    import ovs._json
    parser = ovs._json.Parser()
    pending, i = "", 0
    while not parser.is_done():
        pending += text[i:i + CHUNK]
        i += CHUNK
        pending = pending.encode("utf-8")[parser.feed(pending):].decode()
    return parser.finish()


def parse_framed(text: str) -> Any:
    parser = FramedParser()
    pending, i = "", 0
    while not parser.is_done():
        pending += text[i:i + CHUNK]
        i += CHUNK
        pending = pending[parser.feed(pending):]
    return parser.finish()


def best_cpu(fn: Callable[[str], Any], text: str, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()
        value = fn(text)
        best = min(best, time.process_time() - t)
        del value
        gc.collect()
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.json_stream",
                                     description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--rows", type=int, default=60000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    text = monitor_reply(args.rows)
    gc.set_threshold(*STARTUP_GC_THRESHOLD)
    if parse_framed(text) != parse_compiled(text):
        print("the two parsers disagree", file=sys.stderr)
        return 1
    compiled = best_cpu(parse_compiled, text, args.reps)
    framed = best_cpu(parse_framed, text, args.reps)
    print(f"{len(text) / 1e6:.1f} MB reply, best of {args.reps}: ovs._json {compiled:.3f} s CPU, "
          f"json_stream {framed:.3f} s CPU, ratio {framed / compiled:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
