"""Read-only SB snapshot reader (standalone ovsdb file, optionally gzipped).

Design note: an ``ovsdb-client backup`` file is a sequence of records, each a
header line ``OVSDB JSON <length> <hash>`` followed by one JSON object; the
first is the schema, the rest are transactions.  ``SbSnapshot`` replays the
transactions and turns every row into a ``types.SimpleNamespace`` shaped like
a row of the python IDL: ``uuid`` plus one attribute per schema column, with
references resolved to row objects, optional columns as lists, maps as
dicts.  The schema comes from the file itself, so no installed schema is
needed.  It is meant for tests, benchmarks and the CLI (no I/O elsewhere).

Reference datasets (``reference-data/<name>/``) keep some files gzipped
(``sb.db.gz``, ``flows.raw.txt.gz``): ``SbSnapshot``, ``read_text`` and
``dumped_flow_lines`` take the plain name and read ``<name>.gz`` when only
that exists.
"""

from __future__ import annotations

import gzip
import json
import re
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from physical.inputs import opt_first

Row = types.SimpleNamespace


def _read_bytes(path: Path) -> bytes:
    if not path.exists() and Path(str(path) + ".gz").exists():
        path = Path(str(path) + ".gz")
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def read_text(path: Path | str) -> str:
    """A text file of a dataset, or its ``.gz`` twin."""
    return _read_bytes(Path(path)).decode()


_TABLE_RE = re.compile(r"(?:^|, )table=(\d+), ")
_COOKIE_RE = re.compile(r"^cookie=0x[0-9a-f]+, ")


def flow_table_of(line: str) -> int:
    """The ``table=N`` of one dump-flows line (0 if it has none)."""
    m = _TABLE_RE.search(line)
    return int(m.group(1)) if m else 0


def dumped_flow_lines(path: Path | str, tables: set[int] | frozenset[int]) -> list[str]:
    """The flows of an ``ovs-ofctl dump-flows`` text file (``flows.raw.txt``)
    that are in ``tables``, one stripped line each, without the cookie."""
    out = []
    for line in read_text(path).splitlines():
        line = line.strip()
        if not line or line.startswith(("OFPST_", "NXST_")):
            continue
        line = _COOKIE_RE.sub("", line)
        if flow_table_of(line) in tables:
            out.append(line)
    return out


def records(path: Path | str) -> Iterator[dict[str, Any]]:
    """The JSON records of an ovsdb file (schema first)."""
    data = _read_bytes(Path(path))
    pos = 0
    n = len(data)
    while pos < n:
        nl = data.index(b"\n", pos)
        length = int(data[pos:nl].split()[2])
        yield json.loads(data[nl + 1:nl + 1 + length])
        pos = nl + 1 + length
        while pos < n and data[pos:pos + 1] == b"\n":
            pos += 1


class SbSnapshot:
    """Rows by table name (see module docstring)."""

    def __init__(self, path: Path | str) -> None:
        recs = records(path)
        schema = next(recs)["tables"]
        raw: dict[str, dict[str, dict[str, Any]]] = {}
        for rec in recs:
            for table, rows in rec.items():
                if table.startswith("_") or not isinstance(rows, dict):
                    continue
                tab = raw.setdefault(table, {})
                for u, row in rows.items():
                    if row is None:
                        tab.pop(u, None)
                    else:
                        tab.setdefault(u, {}).update(row)
        self.rows: dict[str, dict[str, Row]] = {
            table: {u: Row(uuid=uuid.UUID(u)) for u in rows} for table, rows in raw.items()}
        for table, rows in raw.items():
            cols = schema[table]["columns"]
            objs = self.rows[table]
            for u, row in rows.items():
                obj = objs[u]
                for col, ctype in cols.items():
                    setattr(obj, col, self._convert(row.get(col), ctype["type"]))

    def _atom(self, value: Any, base: Any) -> Any:
        if isinstance(value, list) and value and value[0] == "uuid":
            ref = base.get("refTable") if isinstance(base, dict) else None
            if ref:
                return self.rows.get(ref, {}).get(value[1])
            return uuid.UUID(value[1])
        return value

    def _convert(self, value: Any, ctype: Any) -> Any:
        if isinstance(ctype, str):
            ctype = {"key": ctype}
        key, val = ctype["key"], ctype.get("value")
        mn, mx = ctype.get("min", 1), ctype.get("max", 1)
        if value is None:
            if val is not None:
                return {}
            if mn == 1 and mx == 1:
                kt = key if isinstance(key, str) else key["type"]
                return {"string": "", "integer": 0, "boolean": False, "real": 0.0}.get(kt)
            return []
        if val is not None:
            pairs = value[1] if value[0] == "map" else []
            return {self._atom(k, key): self._atom(v, val) for k, v in pairs}
        if isinstance(value, list) and value and value[0] == "set":
            items = [self._atom(v, key) for v in value[1]]
        else:
            items = [self._atom(value, key)]
        items = [i for i in items if i is not None]
        if mn == 1 and mx == 1:
            return items[0] if items else None
        if items and hasattr(items[0], "uuid"):
            return sorted(items, key=lambda r: r.uuid)
        return sorted(items)

    def table(self, name: str) -> list[Row]:
        return list(self.rows.get(name, {}).values())


# ---------------------------------------------------------------------------
# A compile context for one chassis of a snapshot.

def local_datapath_keys(sb: SbSnapshot, chassis_name: str,
                        iface_ids: set[str] | frozenset[str] = frozenset()) -> set[int]:
    """Datapaths of ports bound to 'chassis_name' (or with a local VIF), then
    every datapath reachable from them over patch ports (add_local_datapath)."""
    pbs = sb.table("Port_Binding")
    by_name = {pb.logical_port: pb for pb in pbs}
    by_dp: dict[int, list[Row]] = {}
    for pb in pbs:
        by_dp.setdefault(pb.datapath.tunnel_key, []).append(pb)
    todo = [pb.datapath.tunnel_key for pb in pbs
            if pb.logical_port in iface_ids
            or getattr(opt_first(pb.chassis), "name", None) == chassis_name]
    local: set[int] = set()
    while todo:
        key = todo.pop()
        if key in local:
            continue
        local.add(key)
        for pb in by_dp.get(key, ()):
            if pb.type == "patch":
                peer = by_name.get(pb.options.get("peer", ""))
                if peer is not None and peer.type == "patch":
                    todo.append(peer.datapath.tunnel_key)
    return local


def context_from_snapshot(sb: SbSnapshot, chassis_name: str, local_dps: set[int],
                          related_names: set[str], **overrides: Any) -> Any:
    """A ``CompileContext`` for 'chassis_name': ports, multicast groups,
    address sets, port groups (filtered to 'related_names'), chassis template
    variables, DHCP option tables, related ports ('related_names' plus every
    patch and vtep port, as binding.c does) and chassis residency."""
    from controller.lflow.actions.dhcp_opts import DHCPV4_OPTIONS, DHCPV6_OPTIONS, table_from_rows
    from controller.lflow.compile import CompileContext
    from controller.lflow.expr.nodes import const_set_from_integers, const_set_from_strings

    ports: dict[str, tuple[int, int]] = {}
    related: set[str] = set()
    resident: set[str] = set()
    for pb in sb.table("Port_Binding"):
        dp_key = pb.datapath.tunnel_key
        ports[pb.logical_port] = (dp_key, pb.tunnel_key)
        if pb.logical_port in related_names or pb.type in ("patch", "vtep"):
            related.add(f"{dp_key}_{pb.tunnel_key}")
        ch = opt_first(pb.chassis)
        if ch is not None and ch.name == chassis_name:
            resident.add(pb.logical_port)
        elif pb.type == "chassisredirect":
            group = opt_first(pb.ha_chassis_group)
            members = group.ha_chassis if group is not None else []
            if len(members) == 1 and opt_first(members[0].chassis) is not None \
                    and opt_first(members[0].chassis).name == chassis_name:
                resident.add(pb.logical_port)
    mcgroups = {(mg.datapath.tunnel_key, mg.name): mg.tunnel_key
                for mg in sb.table("Multicast_Group")}
    addr_sets = {a.name: const_set_from_integers(list(a.addresses))
                 for a in sb.table("Address_Set")}
    port_groups = {pg.name: const_set_from_strings(list(pg.ports), related_names)
                   for pg in sb.table("Port_Group")}
    tvars: dict[str, str] = {}
    for tv in sb.table("Chassis_Template_Var"):
        if tv.chassis == chassis_name:
            tvars.update(tv.variables)
    dhcp = table_from_rows((r.name, r.code, r.type) for r in sb.table("DHCP_Options"))
    dhcpv6 = table_from_rows((r.name, r.code, r.type) for r in sb.table("DHCPv6_Options"))

    def mcgroup(dp_key: int, name: str) -> int | None:
        return mcgroups.get((dp_key, name))

    kwargs: dict[str, Any] = dict(
        addr_sets=addr_sets, port_groups=port_groups, template_vars=tvars,
        dhcp_opts=dhcp or DHCPV4_OPTIONS, dhcpv6_opts=dhcpv6 or DHCPV6_OPTIONS,
        port_binding=ports.get, multicast_group=mcgroup, related_lports=related,
        is_chassis_resident=resident.__contains__, local_datapaths=local_dps)
    kwargs.update(overrides)
    return CompileContext(**kwargs)
