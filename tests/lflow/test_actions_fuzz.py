"""Robustness: any action text (SB content is not trusted) yields either an
ActionError or actions that format, re-parse to equal actions, and encode
without raising."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.lflow.actions import (
    ActionError, EncodeParams, ParseParams, encode_ovnacts, format_ovnacts,
    parse_actions)
from tests.conformance import harness

# Fragments of real action syntax; random sequences of them exercise the
# error paths of every action parser.
FRAGMENTS = [
    "next", "output", "drop", "ct_next", "ct_commit", "ct_lb", "ct_lb_mark",
    "ct_dnat", "ct_snat", "ct_dnat_in_czone", "ct_snat_in_czone", "ct_clear",
    "ct_commit_nat", "clone", "arp", "nd_ns", "nd_na", "icmp4", "icmp6_error",
    "reject", "tcp_reset", "sctp_abort", "igmp", "get_arp", "put_arp", "get_nd",
    "put_nd", "lookup_arp", "lookup_nd_ip", "put_dhcp_opts", "put_dhcpv6_opts",
    "put_nd_ra_opts", "dns_lookup", "set_queue", "log", "set_meter",
    "trigger_event", "bind_vport", "handle_svc_check", "fwd_group", "select",
    "check_pkt_larger", "handle_dhcpv6_reply", "handle_bfd_msg", "put_fdb",
    "get_fdb", "lookup_fdb", "chk_lb_hairpin", "check_in_port_sec",
    "commit_ecmp_nh", "chk_ecmp_nh", "commit_lb_aff", "chk_lb_aff", "sample",
    "push", "pop", "ip.ttl", "--", "reg0", "reg1[0]", "xxreg0", "inport",
    "outport", "eth.src", "ip4.dst", "ip6.src", "nd.target", "ct_mark",
    "ct_label", "icmp4.frag_mtu", "pkt.mark", "vlan.pcp", "=", "<->", ";", ",",
    "(", ")", "{", "}", "[", "]", ":", "-", "/", "1", "0", "65535", "123456",
    "10.0.0.1", "fd00::1", "00:00:00:00:00:01", "10.0.0.0/24", '"lsp1"',
    '"x"', '"tcp"', "backends", "hash_fields", "skip_snat", "offerip",
    "router", "addr_mode", '"slaac"', "slla", "prefix", "verdict", "severity",
    "name", "meter", "probability", "obs_point", "$cookie", "event",
    '"empty_lb_backends"', "vip", "liveness", "childports", "true", "ipv6",
    "proto", "tcp", "timeout", "^tmpl", "@pg", "$as",
]

PP = ParseParams(symtab=harness.symtab(), n_tables=24, cur_ltable=10)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=14))
def test_random_fragments_never_crash(fragments: list[str]) -> None:
    text = " ".join(fragments)
    parsed = parse_actions(text, PP)
    if isinstance(parsed, ActionError):
        assert parsed
        return
    formatted = format_ovnacts(parsed.actions)
    again = parse_actions(formatted, PP)
    assert not isinstance(again, ActionError), (text, formatted, again)
    assert again.actions == parsed.actions
    encode_ovnacts(parsed.actions, EncodeParams(lookup_port=harness.ACTION_PORTS.get,
                                                collector_ids=frozenset({0})))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_random_text_never_crashes(text: str) -> None:
    parsed = parse_actions(text, PP)
    assert isinstance(parsed, ActionError) or parsed.actions is not None


REG_FIELDS = ["reg0", "reg1", "reg5[0..15]", "reg9[16..31]", "xxreg1[0..31]", "reg2[3]",
              "eth.src", "eth.dst", "ip4.dst", "ip6.src", "pkt.mark", "ip.ttl", "tcp.dst",
              "inport", "outport", "flags.loopback", "ct_mark", "vlan.pcp"]
ips = st.builds(lambda a, b: f"10.{a}.{b}.1", st.integers(0, 255), st.integers(0, 255))
ports = st.integers(0, 70000)
nums = st.integers(0, 1 << 70)
meter_nums = st.integers(0, (1 << 63) - 1)


def _simple_action() -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda f, v: f"{f} = {v};", st.sampled_from(REG_FIELDS), nums),
        st.builds(lambda f, g: f"{f} = {g};", st.sampled_from(REG_FIELDS),
                  st.sampled_from(REG_FIELDS)),
        st.builds(lambda f, g: f"{f} <-> {g};", st.sampled_from(REG_FIELDS),
                  st.sampled_from(REG_FIELDS)),
        st.builds(lambda ip, p: f"ct_dnat({ip}, {p});", ips, ports),
        st.builds(lambda a, b, p: f"ct_lb(backends={a}:{p},{b});", ips, ips, ports),
        st.builds(lambda f, a, b: f"{f} = select({a}, {b}=7);", st.sampled_from(REG_FIELDS),
                  st.integers(0, 70000), st.integers(0, 70000)),
        st.builds(lambda p, c, d, o: f"sample(probability={p},collector_set={c},"
                  f"obs_domain={d},obs_point={o});",
                  st.integers(0, 70000), st.integers(0, 300), st.integers(0, 300), nums),
        # (C keeps set_meter's rate and burst as int64 and prints them signed, as
        # ours does, so text above 2**63 - 1 does not read back: not generated)
        st.builds(lambda r, b: f"set_meter({r}, {b});", meter_nums, meter_nums),
        st.builds(lambda f: f"{f} = check_pkt_larger(1500);", st.sampled_from(REG_FIELDS)),
        st.builds(lambda f, ip: f"{f} = put_dhcp_opts(offerip = {ip}, router = {ip});",
                  st.sampled_from(REG_FIELDS), ips),
        st.sampled_from(["next;", "output;", "ct_next;", "ct_commit;", "ip.ttl--;",
                         "ct_clear;", "igmp;", "get_arp(outport, reg0);",
                         "reg0[0] = lookup_fdb(inport, eth.src);"]),
    )


actions_text = st.recursive(
    st.lists(_simple_action(), min_size=1, max_size=4).map(" ".join),
    lambda inner: st.builds(lambda kw, body, rest: f"{kw} {{ {body} }}; {rest}",
                            st.sampled_from(["clone", "arp", "ct_commit", "nd_ns", "reject"]),
                            inner, inner),
    max_leaves=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions_text)
def test_generated_actions_round_trip(text: str) -> None:
    parsed = parse_actions(text, PP)
    if isinstance(parsed, ActionError):
        return
    formatted = format_ovnacts(parsed.actions)
    again = parse_actions(formatted, PP)
    assert not isinstance(again, ActionError), (text, formatted, again)
    assert again.actions == parsed.actions
    assert format_ovnacts(again.actions) == formatted
    encode_ovnacts(parsed.actions, EncodeParams(lookup_port=harness.ACTION_PORTS.get,
                                                collector_ids=frozenset({0})))
