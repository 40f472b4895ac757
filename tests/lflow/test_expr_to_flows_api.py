"""Unit tests of the expr to flows API beyond the upstream vectors (moved out of
tests/conformance so that directory holds exactly one case per vector)."""

from __future__ import annotations

from controller.lflow.expr import matches as expr_matches
from tests.conformance.harness import lookup_port, run_expr_steps
from tests.lflow.match_pipeline import compile_match


def test_address_set_members_are_remembered() -> None:
    e, err = run_expr_steps("ip4.src == $set1 && tcp", 3)
    assert err is None
    matches, n_conjs = expr_matches.to_matches(e, lookup_port)
    assert n_conjs == 0
    assert sorted((m.as_name, m.as_ip, m.as_mask) for m in matches) == [
        ("set1", 0x0A000001, 0xFFFFFFFF), ("set1", 0x0A000002, 0xFFFFFFFF),
        ("set1", 0x0A000003, 0xFFFFFFFF)]


def test_prepare_offsets_conjunction_ids() -> None:
    e, _ = run_expr_steps("ip4.src == {1.1.1.1, 1.1.1.2} && ip4.dst == {2.2.2.1, 2.2.2.2}", 3)
    matches, n_conjs = expr_matches.to_matches(e, lookup_port)
    assert n_conjs == 1
    expr_matches.prepare(matches, 99)
    lines = sorted(expr_matches.format_matches(matches))
    assert lines[0] == "conj_id=100,ip"
    assert all("conjunction(100, " in line for line in lines[1:])


def test_rich_reference_flows() -> None:
    import collections
    import re

    from controller.lflow.actions import P_EGRESS, P_INGRESS, ParseParams, parse_actions
    from controller.lflow.conj_ids import ConjIds
    from controller.lflow.expr import api as expr
    from controller.lflow.symtab import ovn_symtab
    from tests.conformance.harness import load_reference_flows, load_sb_snapshot, sb_atoms

    sb = load_sb_snapshot("rich")
    symtab = ovn_symtab()
    dp_keys = {u: r["tunnel_key"] for u, r in sb["Datapath_Binding"].items()}
    is_switch = {u: "logical-switch" in str(r.get("external_ids")) for u, r in sb["Datapath_Binding"].items()}
    local_chassis = {u for u, r in sb["Chassis"].items() if r["name"] == "hv1"}
    ports = {}
    for r in sb["Port_Binding"].values():
        chassis = sb_atoms(r.get("chassis", ["set", []]))
        ports[r["logical_port"]] = (sb_atoms(r["datapath"])[0], r["tunnel_key"],
                                    chassis[0] if chassis else None, r.get("type", ""))
    local = {n for n, p in ports.items() if p[2] in local_chassis or p[3]}
    local_keys: dict[str, set[int]] = {}
    for n in local:
        local_keys.setdefault(ports[n][0], set()).add(ports[n][1])
    mc_groups = {(sb_atoms(r["datapath"])[0], r["name"]): r["tunnel_key"]
                 for r in sb.get("Multicast_Group", {}).values()}
    addr_sets = {r["name"]: expr.const_set_from_integers(sb_atoms(r.get("addresses", ["set", []])))
                 for r in sb.get("Address_Set", {}).values()}
    port_groups = {r["name"]: expr.const_set_from_strings(sb_atoms(r.get("ports", ["set", []])), local)
                   for r in sb.get("Port_Group", {}).values()}
    dp_groups = {u: sb_atoms(r["datapaths"]) for u, r in sb.get("Logical_DP_Group", {}).items()}

    plain: dict[tuple[int, int, int], set[str]] = collections.defaultdict(set)
    conj: set[tuple[int, int, str, int, int, int]] = set()
    for cookie, table, prio, match, actions in load_reference_flows("rich"):
        plain[(cookie, table, prio)].add(match)
        for cid, k, n in re.findall(r"conjunction\((\d+),(\d+)/(\d+)\)", actions):
            conj.add((table, prio, match, int(cid), int(k), int(n)))

    conj_ids = ConjIds()
    n_compared = n_conj = 0
    for uuid, lf in sb["Logical_Flow"].items():
        dps = sb_atoms(lf.get("logical_datapath", ["set", []])) or dp_groups[sb_atoms(lf["logical_dp_group"])[0]]
        ingress = lf["pipeline"] == "ingress"
        table = (8 if ingress else 42) + lf["table_id"]
        parsed = parse_actions(lf["actions"], ParseParams(
            symtab, pipeline=P_INGRESS if ingress else P_EGRESS, cur_ltable=lf["table_id"]))
        assert not isinstance(parsed, str), parsed
        for dp in dps:
            key = dp_keys[dp]

            def lookup(name: str, dp: str = dp) -> int | None:
                if name == "none":
                    return 0
                p = ports.get(name)
                if p is not None and p[0] == dp:
                    return int(p[1])
                return mc_groups.get((dp, name))

            prereqs = expr.clone(parsed.prereqs) if parsed.prereqs is not None else None
            matches, n_conjs = compile_match(
                lf["match"], symtab, addr_sets=addr_sets, port_groups=port_groups, dp_key=key,
                lookup_port=lookup, prereqs=prereqs,
                is_chassis_resident=lambda name: ports.get(name, ("", 0, None, ""))[2] in local_chassis)
            if n_conjs:
                expr.prepare(matches, conj_ids.alloc(uuid, dp, n_conjs) - 1)
            ours = set()
            for em in matches:
                text = em.match.with_field("metadata", key).to_string()
                if em.conjunctions:
                    for cid, k, n in em.conjunctions:
                        assert (table, lf["priority"], text, cid, k + 1, n) in conj, (lf["match"], text)
                        n_conj += 1
                    continue
                if is_switch[dp] and em.match.get("conj_id") is None:
                    pinned = em.match.get("reg14" if ingress else "reg15")
                    if pinned is not None and pinned[0] not in local_keys.get(dp, set()):
                        continue
                ours.add(text)
            theirs = {m for m in plain.get((int(uuid[:8], 16), table, lf["priority"]), set())
                      if f"metadata={key:#x}," in m + ","}
            if ours or theirs:
                assert ours == theirs, lf["match"]
                n_compared += 1
    assert n_compared >= 600 and n_conj >= 40


def test_parse_microflow() -> None:
    from controller.lflow.expr.microflow import find_inport, parse_microflow
    from controller.lflow.expr.parse import parse_expr
    from tests.conformance.harness import symtab

    st = symtab()
    m, err = parse_microflow(
        'inport == "eth0" && eth.src == 00:00:00:00:00:01 && ip4 && ip.ttl == 64 '
        "&& ip4.src == 10.0.0.1 && udp && udp.src == 53 && udp.dst == 4369", st, lookup_port)
    assert err is None and m is not None
    assert m.to_string() == ("udp,reg14=0x5,dl_src=00:00:00:00:00:01,nw_src=10.0.0.1,"
                             "nw_ttl=64,tp_src=53,tp_dst=4369")
    assert parse_microflow("ip4 && ip6", st, lookup_port) == (None, "Constraints are contradictory.")
    assert parse_microflow("tcp.src == 80", st, lookup_port) == (
        None, "Constraints are ambiguous: tcp.src == 0x50 && ip.proto == 0x6 && "
              "(eth.type == 0x800 || eth.type == 0x86dd).")
    assert parse_microflow("ip4 && tcp.src == {80, 81}", st, lookup_port)[1] is not None
    assert parse_microflow("ip4 && tcp.src[1..15] == 0x28", st, lookup_port)[1] is None
    assert parse_microflow("xyzzy", st, lookup_port) == (
        None, "Syntax error at `xyzzy' expecting field name.")

    e = parse_expr('inport == "a" && ip4', st)
    assert find_inport(e) == ("a", None)
    e = parse_expr('inport == {"a", "b"}', st)
    assert find_inport(e) == (None, "flow match expression matches on multiple inports")
    assert find_inport(parse_expr("ip4", st)) == (
        None, "flow match expression does not match on inport")


def test_address_set_diff() -> None:
    from controller.lflow.expr.nodes import (
        const_set_from_integers,
        const_set_integers_diff,
        constant_set_format,
    )

    old = const_set_from_integers(["10.0.0.3", "10.0.0.1", "10.0.0.0/24", "bogus"])
    new = const_set_from_integers(["10.0.0.1", "10.0.0.4", "10.0.0.0/24"])
    added, deleted = const_set_integers_diff(old, new)
    assert added is not None and deleted is not None
    assert constant_set_format(added) == "10.0.0.4"
    assert constant_set_format(deleted) == "10.0.0.3"
    assert const_set_integers_diff(new, new) == (None, None)
