"""Action templates (controller/lflow/actions/templates.py): every action
text of the reference snapshots parses, formats, gives the same
prerequisites and encodes the same with and without templates; shapes
whose constants are not plain loads are not used as templates."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest

from benchmarks.parse_actions_texts import load
from controller.lflow.actions import (
    ActionError, EncodeParams, ParsedActions, ParseParams, encode_ovnacts, format_ovnacts,
    parse_actions)
from controller.lflow.actions.templates import ActionTemplates, split_slots
from controller.lflow.symtab import ovn_symtab
from ofctrl.ofpacts import format_actions

REF = Path("/work/shared/reference-data")


def _port(name: str) -> int | None:
    return None if name.endswith("-unknown") else 1 + sum(map(ord, name)) % 4000


def _outcome(parsed: ParsedActions | ActionError, ep: EncodeParams) -> tuple[object, ...]:
    if isinstance(parsed, ActionError):
        return ("error", str(parsed))
    return (format_ovnacts(parsed.actions), parsed.prereqs_text(),
            format_actions(encode_ovnacts(parsed.actions, ep)))


def _eps() -> list[EncodeParams]:
    return [EncodeParams(lookup_port=_port, tunnel_ofport=_port, is_switch=sw,
                         lflow_uuid=UUID(int=7), dp_key=3) for sw in (True, False)]


@pytest.mark.parametrize("name,sb_file", [("rich", "sb.db"), ("seed-500", "sb.db.gz")])
def test_snapshot_actions_equal_with_and_without_templates(name: str, sb_file: str) -> None:
    path = REF / name / sb_file
    assert path.exists(), f"no reference snapshot {path}"
    ctx, keys = load(str(path), None)
    params: dict[tuple[bool, int], ParseParams] = {}
    tpls = ActionTemplates()
    plain_eps, tpl_eps = _eps(), _eps()
    for text, ingress, table in keys:
        pp = params.get((ingress, table))
        if pp is None:
            pp = params[(ingress, table)] = ParseParams(
                symtab=ctx.symtab, dhcp_opts=ctx.dhcp_opts, dhcpv6_opts=ctx.dhcpv6_opts,
                pipeline=0 if ingress else 1, cur_ltable=table)
        for ep_plain, ep_tpl in zip(plain_eps, tpl_eps):
            assert _outcome(tpls.parse(text, pp), ep_tpl) == \
                _outcome(parse_actions(text, pp), ep_plain), text
    # Most texts really came from a template.
    assert tpls.stats["hits"] > len(keys) // 4 if name == "seed-500" else tpls.stats["hits"] > 0


SYMTAB = ovn_symtab()


def _both(texts: list[str], pp: ParseParams) -> ActionTemplates:
    tpls = ActionTemplates()
    for text in texts:
        assert _outcome(tpls.parse(text, pp), _eps()[0]) == \
            _outcome(parse_actions(text, pp), _eps()[0]), text
    return tpls


def test_loads_share_a_template() -> None:
    pp = ParseParams(symtab=SYMTAB, cur_ltable=5)
    tpls = _both([f'eth.dst = 00:00:00:00:00:0{i}; outport = "lsp{i}"; '
                  f'ip4.dst = 10.0.0.{i}/24; output;' for i in range(1, 6)], pp)
    assert tpls.stats == {"first": 1, "learnt": 1, "hits": 3, "rejected": 0, "plain": 0}


def test_nested_loads_and_comments() -> None:
    pp = ParseParams(symtab=SYMTAB, cur_ltable=5)
    tpls = _both([f'arp {{ eth.dst = ff:ff:ff:ff:ff:0{i}; /* x = 1; */ arp.op = 1; '
                  f'output; }}; clone {{ outport = "p{i}"; output; }}; // y = 2;\n'
                  for i in range(1, 4)], pp)
    assert tpls.stats["learnt"] == 1 and tpls.stats["hits"] == 1


def test_widths_and_kinds_are_in_the_key() -> None:
    pp = ParseParams(symtab=SYMTAB, cur_ltable=5)
    # 64 does not fit 6-bit ip.dscp: a different shape, and the error is OVN's.
    tpls = _both(["ip.dscp = 5; next;", "ip.dscp = 64; next;", "ip.dscp = 6; next;",
                  "ip.dscp = 7; next;",
                  'outport = "a"; next;', "outport = 5; next;"], pp)
    assert tpls.stats["hits"] == 1
    assert isinstance(tpls.parse("ip.dscp = 64; next;", pp), ActionError)


def test_constants_that_are_not_loads_are_not_templated() -> None:
    pp = ParseParams(symtab=SYMTAB, cur_ltable=5)
    texts = [f"ct_lb_mark(backends=10.0.0.{i}; hash_fields=\"eth_src\");" for i in (1, 2, 3)]
    tpls = _both(texts, pp)
    assert tpls.stats["rejected"] == 2 and tpls.stats["hits"] == 0
    # "x == 1;" / "x != 1;" are not slots; "=" inside a string is not one.
    assert split_slots('log(name="a = 1;"); next;') is None
    assert split_slots("reg0 == 1;") is None
    assert split_slots("reg0 != 1;") is None


def test_shapes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.lflow.actions import templates
    monkeypatch.setattr(templates, "_MAX_SHAPES", 3)
    pp = ParseParams(symtab=SYMTAB, cur_ltable=5)
    texts = [f"reg{r} = 10.0.0.{i}; next;" for r in range(6) for i in (1, 2, 3)]
    tpls = _both(texts, pp)
    assert len(tpls._shapes) <= 3
    assert tpls.stats["hits"] == 6
