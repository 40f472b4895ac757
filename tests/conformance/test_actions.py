"""OVN 23.03.1 "action parsing" vectors (tests/ovn.at, `test-ovn parse-actions`).

All 418 vectors are replayed in file order in one process (the group and
meter tables persist across lines, as in the C test), once per session; each
pytest case then checks the lines printed for its own vector: the error, or
"formats as" / "encodes as" / "uses group" / "has prereqs" -- and that the
formatted text re-parses and re-formats identically.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from tests.conformance import harness

VECTORS = harness.load_vectors("actions")

# Vectors known not to pass yet: index -> reason.
KNOWN_FAILURES: dict[int, str] = {}

LFLOW_UUID = UUID("aaaaaaaa-bbbb-bbbb-cccc-ccccdddddddd")


def run_vector(text: str, pp: Any, ep: Any) -> tuple[list[str], list[str]]:
    """Lines test-ovn prints for one input (without the echo), and any
    round-trip problems."""
    from controller.lflow import lexer as lx
    from controller.lflow.actions import (
        ActionError, encode_ovnacts, format_ovnacts, parse_actions)
    from ofctrl.ofpacts import format_actions

    lines: list[str] = []
    problems: list[str] = []
    expanded = lx.parse_template_string(text, {})
    parsed = parse_actions(expanded, pp)
    if isinstance(parsed, ActionError):
        return [str(parsed)], problems
    formatted = format_ovnacts(parsed.actions)
    if formatted != text:
        lines.append("formats as " + formatted)
    # OVS prints the ofpact it built in memory: its zero-controller dec_ttl
    # shows as "dec_ttl" there, while on the wire (and in dump-flows, which
    # is what ofctrl's DecTtl.format() models) it is "dec_ttl()".
    encoded = format_actions(encode_ovnacts(parsed.actions, ep)).replace(
        "dec_ttl()", "dec_ttl")
    lines.append("encodes as " + encoded)
    for entry in sorted(ep.group_table.desired.values(), key=lambda e: e.table_id):
        if encoded == f"group:{entry.table_id}":
            lines.append(f"uses group: id({entry.table_id}), name({entry.name})")
    prereqs = parsed.prereqs_text()
    if prereqs is not None:
        lines.append("has prereqs " + prereqs)
    again = parse_actions(formatted, pp)
    if isinstance(again, ActionError):
        problems.append("reparse error: " + again)
    elif format_ovnacts(again.actions) != formatted:
        problems.append("bad reformat: " + format_ovnacts(again.actions))
    return lines, problems


_RESULTS: list[tuple[list[str], list[str]]] | None = None


def results() -> list[tuple[list[str], list[str]]]:
    """Replay every vector in order (once)."""
    global _RESULTS
    if _RESULTS is None:
        from controller.lflow.actions import (
            EncodeParams, GroupTable, MeterTable, ParseParams)
        from controller.lflow.actions.dhcp_opts import (
            DHCPV4_TEST_OPTIONS, DHCPV6_TEST_OPTIONS, ND_RA_OPTIONS)

        pp = ParseParams(symtab=harness.symtab(), dhcp_opts=DHCPV4_TEST_OPTIONS,
                         dhcpv6_opts=DHCPV6_TEST_OPTIONS, nd_ra_opts=ND_RA_OPTIONS,
                         n_tables=24, cur_ltable=10)
        ports = harness.ACTION_PORTS
        ep = EncodeParams(lookup_port=ports.get, tunnel_ofport=ports.get,
                          is_switch=True, output_ptable=64, lflow_uuid=LFLOW_UUID,
                          dp_key=0xABCDEF, collector_ids=frozenset({0, 200}),
                          group_table=GroupTable(), meter_table=MeterTable())
        out = []
        for v in VECTORS:
            try:
                out.append(run_vector(v["input"], pp, ep))
            except Exception as exc:  # one broken vector must not hide the rest
                out.append(([f"exception: {type(exc).__name__}: {exc}"], []))
        _RESULTS = out
    return _RESULTS


@pytest.mark.parametrize("index", [
    pytest.param(i, id=f"actions-{i}",
                 marks=([pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[i])]
                        if i in KNOWN_FAILURES else []))
    for i in range(len(VECTORS))
])
def test_action_vector(index: int) -> None:
    vector = VECTORS[index]
    lines, problems = results()[index]
    assert lines == vector["expected"], vector["input"]
    assert problems == []
