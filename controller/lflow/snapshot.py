"""Read-only SB snapshot reader (standalone ovsdb file, optionally gzipped).

Design note: an ``ovsdb-client backup`` file is a sequence of records, each a
header line ``OVSDB JSON <length> <hash>`` followed by one JSON object; the
first is the schema, the rest are transactions.  ``SbSnapshot`` replays the
transactions and turns every row into a ``types.SimpleNamespace`` shaped like
a row of the python IDL: ``uuid`` plus one attribute per schema column, with
references resolved to row objects, optional columns as lists, maps as
dicts.  The schema comes from the file itself, so no installed schema is
needed.  It is meant for tests, benchmarks and the CLI (no I/O elsewhere).

The compile context for one chassis of a snapshot is the agent's own:
:func:`context_from_snapshot` gives the SB rows by UUID (what the agent's
``tables`` gives) and an ``AgentState`` (SB indexes, the Chassis row, br-int
and bridge mappings from the dataset's ``conf-ovs.txt``, :class:`OvsConf`) to
the agent's node implementations (``runtime_data``: one full binding pass
over a read-only SB; ``addr_sets``, ``port_groups``, ``template_vars``,
``dhcp_options``, ``non_vif_data``) and then to
``controller.nodes.logical_flow_output.compile_context``, so the parity tests
and the compile benchmark run exactly what the agent builds.

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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.engine.agent_nodes import AgentState
    from controller.lflow.compile import CompileContext
    from controller.lflow.conj_ids import ConjIds

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


def final_rows(path: Path | str) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, Any]]]]:
    """The schema's tables and, per table and row uuid, the row's JSON as
    the database file leaves it (its transactions applied in order)."""
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
    return schema, raw


class SbSnapshot:
    """Rows by table name (see module docstring)."""

    def __init__(self, path: Path | str) -> None:
        schema, raw = final_rows(path)
        self._by_uuid: dict[str, dict[uuid.UUID, Row]] = {}
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

    def by_uuid(self, name: str) -> dict[uuid.UUID, Row]:
        """The rows of table `name` by UUID (what the agent's ``tables(name)``
        gives; built once per table)."""
        got = self._by_uuid.get(name)
        if got is None:
            got = self._by_uuid[name] = {r.uuid: r for r in self.rows.get(name, {}).values()}
        return got


# ---------------------------------------------------------------------------
# The Open_vSwitch side of a dataset (conf-ovs.txt).

_OVS_EXT_RE = re.compile(r"^Open_vSwitch external_ids: \{(.*)\}$", re.M)
_PAIR_RE = re.compile(r'([\w:.-]+)="([^"]*)"')
_IFACE_RE = re.compile(r"^  Interface ([^:]+): (.*)$")
_TUNNEL_TYPES = ("geneve", "vxlan", "stt")


def _pairs(text: str) -> dict[str, str]:
    return dict(_PAIR_RE.findall(text))


def _column_map(fields: str, column: str) -> dict[str, str]:
    m = re.search(rf"(?:^|; ){column}=\{{([^}}]*)\}}", fields)
    return _pairs(m.group(1)) if m else {}


class OvsConf:
    """What a dataset's ``conf-ovs.txt`` (a text summary of the Open_vSwitch
    database) says: the Open_vSwitch row's ``external_ids`` and, per bridge,
    its interfaces (name, type, ofport, external_ids, options)."""

    def __init__(self, text: str) -> None:
        m = _OVS_EXT_RE.search(text)
        self.external_ids = _pairs(m.group(1)) if m else {}
        self.interfaces: dict[str, list[Row]] = {}
        current: list[Row] | None = None
        for line in text.splitlines():
            if line.startswith("Bridge "):
                current = self.interfaces.setdefault(line[7:].split(":", 1)[0], [])
                continue
            im = _IFACE_RE.match(line)
            if im is None or current is None:
                continue
            name, fields = im.groups()
            tm = re.search(r'(?:^|; )type="([^"]*)"', fields)
            om = re.search(r"(?:^|; )ofport=(-?\d+)", fields)
            current.append(Row(uuid=uuid.uuid5(uuid.NAMESPACE_OID, f"iface:{name}"), name=name,
                               type=tm.group(1) if tm else "",
                               ofport=[int(om.group(1))] if om else [],
                               external_ids=_column_map(fields, "external_ids"),
                               options=_column_map(fields, "options")))

    @classmethod
    def read(cls, path: Path | str) -> "OvsConf":
        return cls(read_text(path))

    @property
    def system_id(self) -> str:
        return self.external_ids.get("system-id", "")

    @property
    def bridge_mappings(self) -> dict[str, str]:
        out = {}
        for item in self.external_ids.get("ovn-bridge-mappings", "").split(","):
            net, sep, br = item.partition(":")
            if sep and net and br:
                out[net] = br
        return out

    def br_int(self, sb: SbSnapshot) -> Row:
        """The integration bridge as an IDL-like Bridge row, one Port per
        Interface.  The summary has no Port columns, so a tunnel port's
        ``external_ids:ovn-chassis-id`` (which the C agent wrote) is rebuilt
        from its ``remote_ip`` and the SB Encap rows."""
        name = self.external_ids.get("ovn-bridge", "br-int")
        chassis_by_ip = {e.ip: e.chassis_name for e in sb.table("Encap")}
        ports = []
        for iface in self.interfaces.get(name, []):
            ext: dict[str, str] = {}
            ip = iface.options.get("remote_ip")
            if iface.type in _TUNNEL_TYPES and ip in chassis_by_ip:
                ext["ovn-chassis-id"] = f"{chassis_by_ip[ip]}@{ip}"
            ports.append(Row(uuid=uuid.uuid5(uuid.NAMESPACE_OID, f"port:{iface.name}"),
                             name=iface.name, external_ids=ext, interfaces=[iface]))
        return Row(uuid=uuid.uuid5(uuid.NAMESPACE_OID, f"bridge:{name}"), name=name, ports=ports)


# ---------------------------------------------------------------------------
# The agent's compile context for one chassis of a snapshot.

def snapshot_state(sb: SbSnapshot, chassis_name: str, br_int: Row | None = None,
                   bridge_mappings: Mapping[str, str] | None = None) -> "AgentState":
    """The agent's state for `chassis_name` over a snapshot: SB indexes, its
    Chassis row, br-int, and the runtime data of one run of the agent's
    ``runtime_data`` node (a full binding pass; the SB is read-only, so no
    row is claimed or released; OpenFlow is not connected, so no BFD tunnel
    counts as up, as a dataset records no BFD status)."""
    from controller.binding.if_status import IfStatusMgr
    from controller.engine.agent_nodes import AgentState, agent_nodes
    from controller.engine.core import Node
    from ofctrl.seqno import SeqnoTracker

    st = AgentState(IfStatusMgr(SeqnoTracker()))
    st.idx.rebuild({name: sb.by_uuid(name) for name in st.idx.tables})
    st.chassis = st.idx.chassis_by_name.get(chassis_name)
    st.pb_rows = sb.by_uuid("Port_Binding")
    st.br_int = br_int
    st.bridge_mappings = dict(bridge_mappings or {})
    agent_nodes(st, sb.by_uuid)["runtime_data"].run(Node("runtime_data"))
    return st


def agent_context(st: "AgentState", sb: SbSnapshot, base: "CompileContext | None" = None,
                  conj_ids: "ConjIds | None" = None) -> "CompileContext":
    """The agent's ``compile_context`` over `st` and the snapshot: the
    ``addr_sets``, ``port_groups``, ``template_vars``, ``dhcp_options`` and
    ``non_vif_data`` outputs come from one run of the agent's own nodes;
    `base` gives the symbol table, group/meter tables and OVS features (as
    the previous context does in the agent)."""
    from controller.engine.agent_nodes import agent_nodes
    from controller.engine.core import Node
    from controller.lflow.conj_ids import ConjIds
    from controller.nodes.logical_flow_output import compile_context

    nodes = agent_nodes(st, sb.by_uuid)
    data: dict[str, Any] = {}
    for name in ("addr_sets", "port_groups", "template_vars", "dhcp_options", "non_vif_data"):
        impl = nodes[name]
        impl.run(Node(name))
        data[name] = impl.data
    return compile_context(st, sb.by_uuid, conj_ids if conj_ids is not None else ConjIds(),
                           base, data["addr_sets"].sets, data["port_groups"].sets,
                           data["template_vars"].vars, data["dhcp_options"],
                           data["non_vif_data"])


def context_from_snapshot(sb: SbSnapshot, conf: OvsConf, base: "CompileContext | None" = None,
                          conj_ids: "ConjIds | None" = None) -> "CompileContext":
    """The compile context the agent builds on the chassis of `conf`
    (system-id, br-int, bridge mappings) over snapshot `sb`."""
    st = snapshot_state(sb, conf.system_id, conf.br_int(sb), conf.bridge_mappings)
    return agent_context(st, sb, base, conj_ids)
