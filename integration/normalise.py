"""Canonical form of an OpenFlow dump, so two agents' flows can be compared.

Pure text processing, no I/O (sandbox-recipe.md §9). Two correct
ovn-controllers fed the same SB snapshot may still choose some values freely;
this module replaces each of them with a name derived from content:

* ``cookie=`` (and any statistics fields) is dropped; the cookie is kept on
  the side (:attr:`CanonicalDump.cookies`) to name the Logical_Flow behind a
  differing flow.
* ``group:N`` -> ``G<i>``, ranked by the group's content (type + buckets with
  ``bucket_id:`` removed, buckets sorted). Groups with equal content share a
  name: the agent may or may not deduplicate them.
* ``meter:N`` / ``meter_id=N`` -> ``M<i>``, ranked by flags and bands (equal
  bands share a name, same reason).
* conntrack zone constants loaded into reg11/reg12/reg13
  (``set_field:V->reg1X``, ``load:V->NXM_NX_REG1X[...]``) -> ``Z(<owner>)``
  from ``ct-zone-list``; ``<datapath uuid>_dnat|_snat`` owners are shown with
  the datapath name; unknown values become ``Z(#<decimal>)``; 0 stays 0.
* port numbers that ``--names`` could not name (a 15-character-truncated
  name shared by two ports) -> the port's full name, from ``port_names``.
* ``conj_id=N`` / ``conjunction(N,k/n)`` -> ``C<i>``, ranked by the
  conjunction's signature: the sorted texts of its ``conj_id`` flows (without
  the ``conj_id``) and of its clause flows (match plus ``[k/n]``), computed on
  the already normalised text. Several ``conjunction()`` actions of one flow
  are sorted after renaming.

Everything that comes straight from the SB (metadata, tunnel keys, reg14/15,
tables, priorities, addresses) is left alone.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_STAT_FIELD = re.compile(r"\b(?:cookie|duration|n_packets|n_bytes|idle_age|hard_age)=[^ ,]*,?\s*")
_COOKIE = re.compile(r"\bcookie=(0x[0-9a-fA-F]+|\d+)")
_SPACE = re.compile(r"\s+")
_ZONE_SET = re.compile(r"set_field:(0x[0-9a-fA-F]+|\d+)->reg(1[123])\b")
_ZONE_LOAD = re.compile(r"load:(0x[0-9a-fA-F]+|\d+)->NXM_NX_REG(1[123])\[([0-9.]*)\]")
_GROUP_REF = re.compile(r"\bgroup:(\d+)")
_METER_REF = re.compile(r"\b(meter:|meter_id=)(\d+)")
_CONJ_ID = re.compile(r"\bconj_id=(\d+)")
_CONJ_ID_FIELD = re.compile(r"\bconj_id=\d+,?")
_CONJ_ACTION = re.compile(r"conjunction\((\d+),(\d+/\d+)\)")
_PORT_REF = re.compile(r"\b(in_port=|output:)(\d+)\b")
_TABLE = re.compile(r"^table=(\d+),")
_BUCKET_ID = re.compile(r"bucket_id:\d+,")
_DATAPATH_OWNER = re.compile(r"^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})_(.*)$")
_HEADERS = ("OFPST_", "NXST_", "OFPT_")


@dataclass
class CanonicalDump:
    """Normalised flows (sorted), groups and meters of one br-int."""

    flows: list[str]
    groups: list[str]
    meters: list[str]
    # canonical flow text -> cookies (lflow uuid prefixes) of the raw flows
    cookies: dict[str, list[int]] = field(default_factory=dict)


def _int(text: str) -> int:
    return int(text, 16) if text.lower().startswith("0x") else int(text)


def parse_ct_zones(text: str | Iterable[str]) -> dict[str, int]:
    """``ct-zone-list`` output (``<owner> <zone>`` per line) -> owner: zone."""
    lines = text.splitlines() if isinstance(text, str) else text
    zones: dict[str, int] = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            zones[parts[0]] = int(parts[1])
    return zones


def parse_dp_names(text: str | Iterable[str]) -> dict[str, str]:
    """``<datapath uuid> <name>`` lines -> uuid: name."""
    lines = text.splitlines() if isinstance(text, str) else text
    names: dict[str, str] = {}
    for line in lines:
        parts = line.split(None, 1)
        if len(parts) == 2:
            names[parts[0]] = parts[1].strip()
    return names


def zone_names(ct_zones: Mapping[str, int], dp_names: Mapping[str, str]) -> dict[int, str]:
    """zone number -> ``Z(owner)`` with datapath uuids replaced by names."""
    out: dict[int, str] = {}
    for owner, zone in ct_zones.items():
        m = _DATAPATH_OWNER.match(owner)
        if m and m.group(1) in dp_names:
            owner = f"{dp_names[m.group(1)]}_{m.group(2)}"
        out[zone] = f"Z({owner})"
    return out


def _lines(text: str | Iterable[str]) -> list[str]:
    return text.splitlines() if isinstance(text, str) else list(text)


def canonical_groups(text: str | Iterable[str],
                     port_names: Mapping[int, str] | None = None) -> dict[int, str]:
    """dump-groups output -> group id: content (bucket ids dropped, buckets sorted)."""
    groups: dict[int, str] = {}
    for line in _lines(text):
        line = line.strip()
        if not line.startswith("group_id="):
            continue
        gid_text, _, rest = line.partition(",")
        rest = _BUCKET_ID.sub("", rest)
        head, *buckets = rest.split(",bucket=")
        content = ",bucket=".join([head, *sorted(buckets)])
        if port_names:
            content = _rename_ports(content, port_names)
        groups[int(gid_text.split("=", 1)[1])] = content
    return groups


def canonical_meters(text: str | Iterable[str]) -> dict[int, str]:
    """dump-meters output (multi-line or one line per meter) -> meter id: content."""
    meters: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in _lines(text):
        line = line.strip()
        if not line or line.startswith(_HEADERS):
            continue
        if line.startswith("meter="):
            mid_text, _, rest = line.partition(" ")
            current = meters.setdefault(int(mid_text.split("=", 1)[1]), [])
            if rest:
                current.append(rest)
        elif current is not None:
            current.append(line)
    return {mid: _SPACE.sub(" ", " ".join(parts)).strip() for mid, parts in meters.items()}


def _rank(contents: Mapping[int, str], prefix: str) -> dict[int, str]:
    """id -> prefix<i>, i the 1-based rank of the id's content (equal contents share)."""
    order = {content: i for i, content in enumerate(sorted(set(contents.values())), 1)}
    return {ident: f"{prefix}{order[content]}" for ident, content in contents.items()}


def _rename_ports(text: str, port_names: Mapping[int, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        name = port_names.get(int(m.group(2)))
        return f'{m.group(1)}"{name}"' if name is not None else m.group(0)
    return _PORT_REF.sub(sub, text)


def strict_flow(line: str) -> str:
    """Recipe §9.1 for one flow line: no cookie/statistics, single spaces."""
    return _SPACE.sub(" ", _STAT_FIELD.sub("", line)).strip()


def flow_table(line: str) -> int:
    """Table number of a normalised flow line (table 0 is printed without it)."""
    m = _TABLE.match(line)
    return int(m.group(1)) if m else 0


def normalise(flows: str | Iterable[str], groups: str | Iterable[str] = (),
              meters: str | Iterable[str] = (), ct_zones: Mapping[str, int] | None = None,
              dp_names: Mapping[str, str] | None = None,
              port_names: Mapping[int, str] | None = None) -> CanonicalDump:
    """Canonical form of a br-int dump (see the module docstring)."""
    group_contents = canonical_groups(groups, port_names)
    meter_contents = canonical_meters(meters)
    group_name = _rank(group_contents, "G")
    meter_name = _rank(meter_contents, "M")
    zone_name = zone_names(ct_zones or {}, dp_names or {})

    def zone(value: str) -> str:
        n = _int(value)
        return "0" if n == 0 else zone_name.get(n, f"Z(#{n})")

    def group_sub(m: re.Match[str]) -> str:
        return "group:" + group_name.get(int(m.group(1)), f"G#{m.group(1)}")

    def meter_sub(m: re.Match[str]) -> str:
        return m.group(1) + meter_name.get(int(m.group(2)), f"M#{m.group(2)}")

    texts: list[str] = []
    cookies: list[int] = []
    for raw in _lines(flows):
        raw = raw.strip()
        if not raw or raw.startswith(_HEADERS):
            continue
        cm = _COOKIE.search(raw)
        cookies.append(_int(cm.group(1)) if cm else 0)
        line = strict_flow(raw)
        if "reg1" in line or "REG1" in line:
            line = _ZONE_SET.sub(lambda m: f"set_field:{zone(m.group(1))}->reg{m.group(2)}", line)
            line = _ZONE_LOAD.sub(
                lambda m: f"load:{zone(m.group(1))}->NXM_NX_REG{m.group(2)}[{m.group(3)}]", line)
        if "group:" in line:
            line = _GROUP_REF.sub(group_sub, line)
        if "meter" in line:
            line = _METER_REF.sub(meter_sub, line)
        if port_names and ("in_port=" in line or "output:" in line):
            line = _rename_ports(line, port_names)
        texts.append(line)

    texts = _rename_conjunctions(texts)
    by_text: dict[str, list[int]] = defaultdict(list)
    for text, cookie in zip(texts, cookies):
        by_text[text].append(cookie)
    return CanonicalDump(
        flows=sorted(texts),
        groups=[f"{group_name[g]} {c}" for g, c in
                sorted(group_contents.items(), key=lambda kv: (_name_key(group_name[kv[0]]), kv[0]))],
        meters=[f"{meter_name[m]} {c}" for m, c in
                sorted(meter_contents.items(), key=lambda kv: (_name_key(meter_name[kv[0]]), kv[0]))],
        cookies=dict(by_text))


def _name_key(name: str) -> int:
    return int(name[1:])


def _split_actions(line: str) -> tuple[str, str]:
    match, sep, actions = line.partition(" actions=")
    return match, actions if sep else ""


def _rename_conjunctions(texts: list[str]) -> list[str]:
    signature: dict[int, list[str]] = defaultdict(list)
    for line in texts:
        if "conj" not in line:
            continue
        match, actions = _split_actions(line)
        idm = _CONJ_ID.search(match)
        if idm:
            without = _CONJ_ID_FIELD.sub("", match).rstrip(",")
            signature[int(idm.group(1))].append(f"{without} actions={actions}")
        for cm in _CONJ_ACTION.finditer(actions):
            signature[int(cm.group(1))].append(f"{match} [{cm.group(2)}]")
    if not signature:
        return texts
    ranked = sorted(signature, key=lambda cid: (sorted(signature[cid]), cid))
    name = {cid: f"C{i}" for i, cid in enumerate(ranked, 1)}

    out: list[str] = []
    for line in texts:
        if "conj" not in line:
            out.append(line)
            continue
        match, actions = _split_actions(line)
        match = _CONJ_ID.sub(lambda m: f"conj_id={name[int(m.group(1))]}", match)
        if "conjunction(" in actions:
            items = _CONJ_ACTION.findall(actions)
            renamed = [f"conjunction({name[int(cid)]},{kn})" for cid, kn in items]
            if ",".join(f"conjunction({c},{k})" for c, k in items) == actions:
                actions = ",".join(sorted(renamed))
            else:
                actions = _CONJ_ACTION.sub(
                    lambda m: f"conjunction({name[int(m.group(1))]},{m.group(2)})", actions)
        out.append(f"{match} actions={actions}")
    return out


# ---------------------------------------------------------------- comparison

@dataclass
class TableDiff:
    """One table of a comparison: counts and the differing lines."""

    table: int
    identical: int
    only_ours: list[str]
    only_theirs: list[str]


def compare_flows(ours: Iterable[str], theirs: Iterable[str]) -> dict[int, TableDiff]:
    """Per-table comparison of two canonical flow lists (as multisets)."""
    from collections import Counter
    a, b = Counter(ours), Counter(theirs)
    tables: dict[int, TableDiff] = {}

    def entry(t: int) -> TableDiff:
        if t not in tables:
            tables[t] = TableDiff(t, 0, [], [])
        return tables[t]

    for line in a.keys() | b.keys():
        common = min(a[line], b[line])
        e = entry(flow_table(line))
        e.identical += common
        e.only_ours.extend([line] * (a[line] - common))
        e.only_theirs.extend([line] * (b[line] - common))
    for e in tables.values():
        e.only_ours.sort()
        e.only_theirs.sort()
    return dict(sorted(tables.items()))


def compare_lists(ours: Iterable[str], theirs: Iterable[str]) -> tuple[list[str], list[str]]:
    """(only ours, only theirs) of two line multisets (groups, meters)."""
    from collections import Counter
    a, b = Counter(ours), Counter(theirs)
    return sorted((a - b).elements()), sorted((b - a).elements())
