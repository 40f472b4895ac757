"""``ovn-controller-py lflow-compile``: compile one logical flow from the command line.

Usage::

    ovn-controller-py lflow-compile --match M --actions A [--egress] [--table N]
        [--priority P] [--datapath-key K] [--port NAME=KEY ...]
        [--address-set NAME=ADDR,...] [--port-group NAME=PORT,...]
        [--chassis-resident PORT ...] [--switch | --router] [--snat-ct-zone]
        [--uuid UUID]

Prints the OpenFlow flows the agent would install, one per line, in the
syntax of ``ovs-ofctl dump-flows`` (``table=N, priority=P,<match>
actions=<actions>``), or the parse error (exit status 1).  Ports given with
``--port`` live on the datapath and are related to this chassis; port
groups are given by their logical name (they are stored as
``<datapath key>_<name>``, as northd names them).  Conjunction ids are
allocated in test mode (first 32 bits of ``--uuid``, 1 by default).
Group and meter ids are allocated from 1; the groups the actions use are
printed after the flows in ``ovs-ofctl add-group`` syntax.  A match that
yields no flow (e.g. an unknown port) prints ``(no flows)`` on stderr.
"""

from __future__ import annotations

import argparse
import sys
import uuid as uuidlib
from collections.abc import Sequence
from types import SimpleNamespace

from controller.lflow.actions import ExtendTable, OvsFeatures
from controller.lflow.compile import CompileContext, CompiledLflow, DatapathInfo, LflowCompiler
from controller.lflow.conj_ids import ConjIds
from controller.lflow.expr.nodes import const_set_from_integers, const_set_from_strings
from ofctrl.flow import Flow

DEFAULT_UUID = "00000001-0000-4000-8000-000000000000"


def _pairs(values: list[str], what: str) -> list[tuple[str, str]]:
    out = []
    for v in values:
        name, sep, rest = v.partition("=")
        if not sep or not name:
            raise SystemExit(f"lflow-compile: {what} must be NAME=VALUE, got {v!r}")
        out.append((name, rest))
    return out


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="ovn-controller-py lflow-compile",
        description="Compile one logical flow to OpenFlow flows (ovs-ofctl syntax).")
    ap.add_argument("--match", required=True, help="Logical_Flow match")
    ap.add_argument("--actions", required=True, help="Logical_Flow actions")
    ap.add_argument("--egress", action="store_true", help="egress pipeline (default ingress)")
    ap.add_argument("--table", type=int, default=0, help="logical table id (default 0)")
    ap.add_argument("--priority", type=int, default=100, help="priority (default 100)")
    ap.add_argument("--datapath-key", type=int, default=1, help="datapath tunnel key")
    ap.add_argument("--port", action="append", default=[], metavar="NAME=KEY",
                    help="logical port (or multicast group) of the datapath")
    ap.add_argument("--address-set", action="append", default=[], metavar="NAME=ADDR,...")
    ap.add_argument("--port-group", action="append", default=[], metavar="NAME=PORT,...")
    ap.add_argument("--chassis-resident", action="append", default=[], metavar="PORT",
                    help="port for which is_chassis_resident() is true")
    kind = ap.add_mutually_exclusive_group()
    kind.add_argument("--switch", action="store_true", help="logical switch (default)")
    kind.add_argument("--router", action="store_true", help="logical router")
    ap.add_argument("--snat-ct-zone", action="store_true",
                    help="the datapath has external_ids:snat-ct-zone (common NAT zone reg12)")
    ap.add_argument("--uuid", default=DEFAULT_UUID, help="Logical_Flow UUID")
    return ap


def flow_line(f: Flow) -> str:
    m = f.match.to_string()
    return (f"table={f.table}, priority={f.priority}{',' + m if m else ''} "
            f"actions={f.actions_string()}")


def compile_one(args: argparse.Namespace) -> tuple[CompiledLflow, ExtendTable] | str:
    dp_key = args.datapath_key
    ports = {name: int(key, 0) for name, key in _pairs(args.port, "--port")}
    addr_sets = {name: const_set_from_integers([a for a in value.split(",") if a])
                 for name, value in _pairs(args.address_set, "--address-set")}
    port_groups = {f"{dp_key}_{name}": const_set_from_strings([p for p in value.split(",") if p])
                   for name, value in _pairs(args.port_group, "--port-group")}
    resident = set(args.chassis_resident)

    def port_binding(name: str) -> tuple[int, int] | None:
        key = ports.get(name)
        return (dp_key, key) if key is not None else None

    ctx = CompileContext(
        addr_sets=addr_sets, port_groups=port_groups, group_table=ExtendTable(),
        meter_table=ExtendTable(), conj_ids=ConjIds(test_mode=True),
        features=OvsFeatures(ct_zero_snat=True, dp_hash_l4_sym=False, controller_meter=True),
        port_binding=port_binding, related_lports={f"{dp_key}_{k}" for k in ports.values()},
        is_chassis_resident=resident.__contains__, local_datapaths={dp_key})
    try:
        lflow_uuid = uuidlib.UUID(args.uuid)
    except ValueError:
        return f"invalid --uuid {args.uuid!r}"
    row = SimpleNamespace(
        uuid=lflow_uuid, match=args.match, actions=args.actions,
        pipeline="egress" if args.egress else "ingress", table_id=args.table,
        priority=args.priority, tags={}, controller_meter=[], logical_datapath=[],
        logical_dp_group=[])
    dp = DatapathInfo(uuidlib.UUID(int=dp_key), dp_key, not args.router,
                      "reg12" if args.snat_ct_zone else "reg11")
    res = LflowCompiler(ctx).compile_lflow(row, dp)
    if isinstance(res, CompiledLflow):
        return res, ctx.group_table
    return res.message


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    res = compile_one(args)
    if isinstance(res, str):
        print(res)
        return 1
    compiled, groups = res
    flows = compiled.flows + compiled.conj_flows
    if not flows:
        print("(no flows)", file=sys.stderr)
    for f in flows:
        print(flow_line(f))
    for entry in sorted(groups.desired.values(), key=lambda e: e.table_id):
        print(f"group_id={entry.table_id},{entry.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
