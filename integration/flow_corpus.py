"""The reference flow corpus: flow dumps of the real ovn-controller.

``/work/shared/reference-data/<topology>/`` holds ``flows.raw.txt`` (or
``flows.raw.txt.gz``), an ``ovs-ofctl -O OpenFlow15 --no-stats dump-flows
--names`` of br-int, and ``ports.txt`` (``show`` output: ``N(name): ...``).
Tests of ``ofctrl.match``/``ofctrl.ofpacts``, the vswitchd differential tests
and the install benchmark all read the corpus through this module:

* ``port_numbers(topology)``: port name -> OpenFlow port number;
* ``flow_texts(path)``: every flow line as ``FlowText`` (cookie, table,
  priority, match text without priority, actions text);
* ``distinct_matches(path)``, ``action_texts(path)``: the match / actions
  texts of a dump.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import IO, Iterator, NamedTuple

REF = Path("/work/shared/reference-data")

_PORT_LINE = re.compile(r"\s*(\d+)\(([^)]*)\):")
_FLOW_LINE = re.compile(
    r"^(?:cookie=(0x[0-9a-f]+), )?(?:table=(\d+), )?priority=(\d+),?(.*?) actions=(.*)$")


class FlowText(NamedTuple):
    """One flow of a dump, as text."""

    cookie: int
    table: int
    priority: int
    match: str     # without "priority=N"; "" for a catch-all
    actions: str


def port_numbers(topology: str) -> dict[str, int]:
    """Port name -> OpenFlow port number from ``<topology>/ports.txt``."""
    ports = {}
    for line in (REF / topology / "ports.txt").read_text().splitlines():
        m = _PORT_LINE.match(line)
        if m:
            ports[m.group(2)] = int(m.group(1))
    return ports


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt")
    return open(path)


def flow_texts(path: Path) -> Iterator[FlowText]:
    """Every flow line of a dump-flows file (gzipped when it ends in .gz)."""
    with _open_text(path) as fh:
        for line in fh:
            m = _FLOW_LINE.match(line.strip())
            if m:
                cookie, table, priority, match, actions = m.groups()
                yield FlowText(int(cookie, 16) if cookie else 0, int(table or 0),
                               int(priority), match, actions)


def distinct_matches(path: Path) -> list[str]:
    """The distinct match texts of a dump (without priority), sorted."""
    return sorted({f.match for f in flow_texts(path)})


def action_texts(path: Path) -> Iterator[str]:
    """The actions text of every flow of a dump, in file order."""
    return (f.actions for f in flow_texts(path))
