"""CPU of loading a big Southbound into the agent's IDL and reading it back.

Design note
-----------
Issue 16 profiles put ~18% of an agent's main loop in the OVSDB IDL: the
python-ovs update processing (``Datum.from_json``, the default columns of
each inserted row) and the column reads of the agent's nodes
(``Row.__getattr__``, see ``controller.ovsdb.idl_fastpath``).  This replays a
standalone SB file (default: seed-500's ``sb.db.gz``) as the rows of one
``monitor_cond_since`` reply and feeds it, through the agent's own
:class:`controller.ovsdb.connections.TrackedIdl` (SB schema helper, change
tracker, ``notify``), to the IDL's update parser, the way ``Idl.run`` does
with a reply read from the wire (the JSON text is decoded before the clock
starts, as ``json_stream`` would have done).  Then:

* ``read1``: every registered column of every row is read once (what the
  first compute does), ``read2``: the same again (later computes, handlers);
* ``modify``: one ``update2`` notification modifying every Port_Binding
  (``external_ids`` key added, ``up`` flipped) and every Logical_Flow's
  ``priority`` (an update the tracker records with its old values), then a
  read of the modified rows' columns and of their tracked old values.

Each phase's CPU (``time.process_time``) is the minimum of ``--reps`` fresh
runs, under the agent's start-up GC thresholds.  Nothing is asserted; a checksum of everything read is printed so two
versions of the code can be compared for equal results.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import ovs.db.idl

from controller.daemon_profile import STARTUP_GC_THRESHOLD
from controller.lflow.snapshot import final_rows
from controller.ovsdb import idl_fastpath
from controller.ovsdb.connections import TrackedIdl, sb_schema_helper
from controller.ovsdb.tracking import ChangeTracker

DEFAULT_DB = Path("/work/shared/reference-data/seed-500/sb.db.gz")


def file_rows(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """table -> uuid -> row JSON of the database at the end of the file."""
    return final_rows(path)[1]


def monitor_reply_text(raw: dict[str, dict[str, dict[str, Any]]], idl: Any) -> str:
    """The table-updates of a monitor reply holding every row (known columns)."""
    out: dict[str, Any] = {}
    for table, rows in raw.items():
        t = idl.tables.get(table)
        if t is None:
            continue
        cols = t.columns
        out[table] = {u: {"initial": {c: v for c, v in row.items() if c in cols}}
                      for u, row in rows.items()}
    return json.dumps(out)


def modify_text(idl: Any) -> str:
    upd: dict[str, Any] = {"Port_Binding": {}, "Logical_Flow": {}}
    for u, row in idl.tables["Port_Binding"].rows.items():
        up = row.up
        upd["Port_Binding"][str(u)] = {"modify": {
            "external_ids": ["map", [["bench-key", "v"]]],
            "up": ["set", []] if up else True}}
    for u, row in idl.tables["Logical_Flow"].rows.items():
        upd["Logical_Flow"][str(u)] = {"modify": {"priority": row.priority + 1}}
    return json.dumps(upd)


def _digest(value: Any) -> str:
    if isinstance(value, ovs.db.idl.Row):
        return str(value.uuid)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_digest(k)}:{_digest(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_digest(v) for v in value) + "]"
    return repr(value)


def read_all(idl: Any, tables: list[str] | None = None) -> int:
    n = 0
    for name, table in idl.tables.items():
        if tables is not None and name not in tables:
            continue
        cols = list(table.columns)
        for row in table.rows.values():
            for c in cols:
                getattr(row, c)
                n += 1
    return n


def checksum(idl: Any) -> str:
    h = hashlib.sha256()
    for name in sorted(idl.tables):
        table = idl.tables[name]
        for u in sorted(table.rows):
            row = table.rows[u]
            for c in sorted(table.columns):
                h.update(f"{name}.{u}.{c}={_digest(getattr(row, c))}\n".encode())
    return h.hexdigest()[:16]


def one_run(raw: dict[str, dict[str, dict[str, Any]]]) -> tuple[dict[str, float], str]:
    tracker = ChangeTracker(())
    idl = TrackedIdl("unix:/nonexistent/sb.sock", sb_schema_helper(), tracker)
    parse = idl._Idl__parse_update
    text = monitor_reply_text(raw, idl)
    update = json.loads(text)
    times: dict[str, float] = {}
    gc.collect()
    t0 = time.process_time()
    parse(update, ovs.db.idl.OVSDB_UPDATE3)
    times["load"] = time.process_time() - t0
    tracker.clear()
    t0 = time.process_time()
    n = read_all(idl)
    times["read1"] = time.process_time() - t0
    t0 = time.process_time()
    read_all(idl)
    times["read2"] = time.process_time() - t0
    mod = json.loads(modify_text(idl))
    t0 = time.process_time()
    parse(mod, ovs.db.idl.OVSDB_UPDATE2)
    read_all(idl, ["Port_Binding", "Logical_Flow"])
    for tname in ("Port_Binding", "Logical_Flow"):
        for tr in tracker[tname].updated.values():
            for c in tr.old:
                tr.old_value(c)
    times["modify"] = time.process_time() - t0
    times["reads"] = n
    digest = checksum(idl)
    idl.close()
    return times, digest


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db", nargs="?", type=Path, default=DEFAULT_DB)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--profile", type=Path, help="cProfile one run into this file")
    args = ap.parse_args(argv)
    idl_fastpath.install()
    gc.set_threshold(*STARTUP_GC_THRESHOLD)     # the agent's, during a start
    raw = file_rows(args.db)
    print(f"{args.db}: {sum(len(r) for r in raw.values())} rows", flush=True)
    if args.profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
        one_run(raw)
        prof.disable()
        prof.dump_stats(str(args.profile))
        return
    best: dict[str, float] = {}
    digest = ""
    for _ in range(args.reps):
        times, digest = one_run(raw)
        for k, v in times.items():
            best[k] = min(best.get(k, v), v)
    reads = int(best.pop("reads"))
    print(" ".join(f"{k}={v:.3f}s" for k, v in best.items())
          + f" total={sum(best.values()):.3f}s (CPU, min of {args.reps}; "
          f"{reads} column reads per pass) checksum={digest}")


if __name__ == "__main__":
    main()
