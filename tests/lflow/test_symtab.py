"""`test-ovn dump-symtab` vectors (grep reg / grep ^ct, sorted)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from controller.lflow import symtab as st
from tests.conformance.harness import make_symtab, vector_params


def dump_symtab() -> list[str]:
    table = make_symtab()
    return [st.format_symbol(table[name]) for name in sorted(table)]


@pytest.mark.parametrize("vec", vector_params("symtab"))
def test_symtab(vec: dict[str, Any]) -> None:
    pattern = re.search(r"grep (\S+)", vec["command"])
    assert pattern is not None
    regex = re.compile(pattern.group(1))
    lines = sorted(line for line in dump_symtab() if regex.search(line))
    assert lines == sorted(vec["expected"])


def test_levels_and_scopes() -> None:
    table = st.ovn_symtab()
    assert table["eth.type"].level == st.L_NOMINAL
    assert table["eth.type"].must_crossproduct
    assert table["ip4"].level == st.L_NOMINAL
    assert table["ct.trk"].level == st.L_ORDINAL
    assert table["ip.is_frag"].level == st.L_BOOLEAN
    assert table["ct_mark"].rw == st.WR_CT_COMMIT
    assert table["ct_label.blocked"].rw == st.WR_CT_COMMIT
    assert table["ct_state"].rw == 0
    assert table["reg0"].rw == st.WR_DEFAULT
    assert table["ct.new"].prereqs == "ct.trk"
    assert table["ct.trk"].prereqs is None
    assert table["inport"].width == 0 and table["inport"].field == "reg14"
    assert table["reg9"].root() == (table["xreg4"], 0)
    assert table["reg2"].root() == (table["xxreg0"], 32)
    assert table["icmp4.frag_mtu"].width == 16
    assert st.format_symbol(table["icmp6.frag_mtu"]) == "icmp6.frag_mtu = icmp6.frag_mtu"
    assert st.format_symbol(table["ip4"]) == "ip4 = eth.type == 0x800"
    assert st.format_symbol(table["eth.src"]) == "eth.src = OXM_OF_ETH_SRC"


@pytest.mark.parametrize("field, printed", [
    ("eth_src", "OXM_OF_ETH_SRC"),          # NXM and OXM headers: OF1.5 prints the OXM one
    ("metadata", "OXM_OF_METADATA"),        # OXM only
    ("reg0", "NXM_NX_REG0"),                # NXM only
    ("xreg4", "OXM_OF_PKT_REG4"),
    ("in_port", "NXM_OF_IN_PORT"),          # OXM_OF_IN_PORT is in_port_oxm's header
    ("in_port_oxm", "OXM_OF_IN_PORT"),
])
def test_field_symbol_prints_of15_header_name(field: str, printed: str) -> None:
    table = st.Symtab()
    table.add_field("x", field)
    assert st.format_symbol(table["x"]) == f"x = {printed}"
