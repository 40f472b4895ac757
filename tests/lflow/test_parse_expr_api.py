"""Unit tests of the parse expr API beyond the upstream vectors (moved out of
tests/conformance so that directory holds exactly one case per vector)."""

from __future__ import annotations

from tests.conformance.harness import addr_sets, make_symtab
from tests.lflow.match_pipeline import compile_match


def test_parse_field_and_helpers() -> None:
    from controller.lflow import lexer as lx
    from controller.lflow.expr.annotate import parse_field_with_prereqs
    from controller.lflow.expr.nodes import expr_format as fmt
    from controller.lflow.expr.parse import (
        format_field,
        parse_constant,
        parse_constant_set,
        parse_field,
        resolve_field,
        type_check,
    )
    from controller.lflow.symtab import WR_CT_COMMIT, WR_DEFAULT, ovn_symtab

    st = ovn_symtab()
    lexer = lx.Lexer("reg0[3..5] = 7;")
    lexer.get()
    f = parse_field(lexer, st)
    assert f is not None and (f.symbol.name, f.ofs, f.n_bits) == ("reg0", 3, 3)
    assert format_field(f) == "reg0[3..5]"
    assert resolve_field(f) == ("xxreg0", 99, 3)
    assert type_check(f, 3, True, WR_DEFAULT) is None
    assert type_check(f, 4, False, WR_DEFAULT) == (
        "Cannot use 3-bit field reg0[3..5] where 4-bit field is required.")
    assert lexer.match(lx.T_EQUALS)
    c = parse_constant(lexer, f)
    assert c is not None and c.value == 7 and not c.masked

    lexer = lx.Lexer("ct_label.blocked")
    lexer.get()
    f = parse_field(lexer, st)
    assert f is not None
    assert type_check(f, 1, True, WR_DEFAULT) == "Field ct_label.blocked is not modifiable."
    assert type_check(f, 1, True, WR_CT_COMMIT) is None

    lexer = lx.Lexer("tcp.dst")
    lexer.get()
    f, prereqs = parse_field_with_prereqs(lexer, st)
    assert f is not None and prereqs is not None
    assert fmt(prereqs) == "ip.proto == 0x6 && (eth.type == 0x800 || eth.type == 0x86dd)"

    lexer = lx.Lexer("ip4")
    lexer.get()
    f, prereqs = parse_field_with_prereqs(lexer, st)
    assert f is None and lexer.error == "Predicate symbol ip4 used where lvalue required."

    lexer = lx.Lexer('{1, 2.3.4.5/16, "x"}')
    lexer.get()
    assert parse_constant_set(lexer) is None
    assert lexer.error == "Syntax error at `\"x\"' expecting integer."


def test_template_and_references() -> None:

    refs: set[str] = set()
    as_ref: dict[str, int] = {}
    matches, n = compile_match(
        "ip4.dst == ^vip && ip4.src == $set1", make_symtab(),
        addr_sets=addr_sets(), template_vars={"vip": "10.1.1.1"}, template_refs=refs,
        addr_sets_ref=as_ref, lookup_port=lambda p: None, is_chassis_resident=lambda p: False)
    assert refs == {"vip"} and as_ref == {"set1": 1} and n == 0
    assert sorted(m.match.to_string() for m in matches) == [
        "ip,nw_src=10.0.0.1,nw_dst=10.1.1.1", "ip,nw_src=10.0.0.2,nw_dst=10.1.1.1",
        "ip,nw_src=10.0.0.3,nw_dst=10.1.1.1"]
    assert {m.as_name for m in matches} == {"set1"}
