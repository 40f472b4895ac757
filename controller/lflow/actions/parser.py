"""Top-level action grammar (parse_actions/parse_action/parse_set_action of
OVN lib/actions.c) dispatching to the family modules."""

from __future__ import annotations

from typing import Any, Callable

from controller.lflow import lexer as lx
from controller.lflow.actions import (
    controller_ops, ct, fields_ops, lb, lookups, misc)
from controller.lflow.actions import base
from controller.lflow.actions.base import ActionContext, FieldRef, OvnAction

Parser = Callable[[ActionContext], "OvnAction | None"]


def _nested(name: str) -> Parser:
    return lambda ctx: controller_ops.parse_controller_nested(ctx, name)


def _const(action: OvnAction) -> Parser:
    return lambda ctx: action


# Keyword actions, in OVN's parse_action() order.
KEYWORD_ACTIONS: dict[str, Parser] = {
    "next": fields_ops.parse_next,
    "push": lambda ctx: fields_ops.parse_push_pop(ctx, True),
    "pop": lambda ctx: fields_ops.parse_push_pop(ctx, False),
    "output": _const(fields_ops.Output()),
    "ip.ttl": fields_ops.parse_dec_ttl,
    "ct_next": ct.parse_ct_next,
    "ct_commit": ct.parse_ct_commit,
    "ct_dnat": lambda ctx: ct.parse_ct_nat(ctx, "ct_dnat", "dst"),
    "ct_snat": lambda ctx: ct.parse_ct_nat(ctx, "ct_snat", "src"),
    "ct_dnat_in_czone": lambda ctx: ct.parse_ct_nat(ctx, "ct_dnat_in_czone", "dst"),
    "ct_snat_in_czone": lambda ctx: ct.parse_ct_nat(ctx, "ct_snat_in_czone", "src"),
    "ct_lb": lambda ctx: lb.parse_ct_lb(ctx, False),
    "ct_lb_mark": lambda ctx: lb.parse_ct_lb(ctx, True),
    "ct_clear": _const(ct.CtClear()),
    "ct_commit_nat": ct.parse_ct_commit_nat,
    "clone": misc.parse_clone,
    "arp": _nested("arp"),
    "icmp4": _nested("icmp4"),
    "icmp4_error": _nested("icmp4_error"),
    "icmp6": _nested("icmp6"),
    "icmp6_error": _nested("icmp6_error"),
    "igmp": _const(controller_ops.IGMP),
    "tcp_reset": _nested("tcp_reset"),
    "sctp_abort": _nested("sctp_abort"),
    "nd_na": _nested("nd_na"),
    "nd_na_router": _nested("nd_na_router"),
    "nd_ns": _nested("nd_ns"),
    "get_arp": lambda ctx: lookups.parse_get_mac_bind(ctx, "get_arp", 32),
    "put_arp": lambda ctx: lookups.parse_put_mac_bind(ctx, "put_arp", 32),
    "get_nd": lambda ctx: lookups.parse_get_mac_bind(ctx, "get_nd", 128),
    "put_nd": lambda ctx: lookups.parse_put_mac_bind(ctx, "put_nd", 128),
    "set_queue": misc.parse_set_queue,
    "log": controller_ops.parse_log,
    "set_meter": misc.parse_set_meter,
    "trigger_event": controller_ops.parse_trigger_event,
    "bind_vport": controller_ops.parse_bind_vport,
    "handle_svc_check": controller_ops.parse_handle_svc_check,
    "fwd_group": lb.parse_fwd_group,
    "handle_dhcpv6_reply": _const(controller_ops.DHCP6_REPLY),
    "handle_bfd_msg": controller_ops.parse_handle_bfd_msg,
    "reject": _nested("reject"),
    "ct_snat_to_vip": _const(misc.CtSnatToVip()),
    "put_fdb": lookups.parse_put_fdb,
    "commit_ecmp_nh": misc.parse_commit_ecmp_nh,
    "commit_lb_aff": lb.parse_commit_lb_aff,
    "sample": misc.parse_sample,
}

AssignParser = Callable[[ActionContext, FieldRef], "OvnAction | None"]


def _flag(name: str) -> AssignParser:
    return lambda ctx, dst: lookups.parse_flag_result(ctx, name, dst)


# "dst = name(...)" actions (parse_set_action()).
ASSIGN_ACTIONS: dict[str, AssignParser] = {
    "select": lb.parse_select,
    "put_dhcp_opts": lambda ctx, dst: controller_ops.parse_put_dhcp_opts(ctx, dst, False),
    "put_dhcpv6_opts": lambda ctx, dst: controller_ops.parse_put_dhcp_opts(ctx, dst, True),
    "dns_lookup": controller_ops.parse_dns_lookup,
    "put_nd_ra_opts": controller_ops.parse_put_nd_ra_opts,
    "check_pkt_larger": misc.parse_check_pkt_larger,
    "lookup_arp": lambda ctx, dst: lookups.parse_lookup_mac_bind(ctx, dst, "lookup_arp", 32),
    "lookup_nd": lambda ctx, dst: lookups.parse_lookup_mac_bind(ctx, dst, "lookup_nd", 128),
    "lookup_arp_ip": lambda ctx, dst: lookups.parse_lookup_mac_bind_ip(
        ctx, dst, "lookup_arp_ip", 32),
    "lookup_nd_ip": lambda ctx, dst: lookups.parse_lookup_mac_bind_ip(
        ctx, dst, "lookup_nd_ip", 128),
    "chk_lb_hairpin": _flag("chk_lb_hairpin"),
    "chk_lb_hairpin_reply": _flag("chk_lb_hairpin_reply"),
    "get_fdb": lookups.parse_get_fdb,
    "lookup_fdb": lookups.parse_lookup_fdb,
    "check_in_port_sec": _flag("check_in_port_sec"),
    "check_out_port_sec": _flag("check_out_port_sec"),
    "chk_ecmp_nh_mac": _flag("chk_ecmp_nh_mac"),
    "chk_ecmp_nh": _flag("chk_ecmp_nh"),
    "chk_lb_aff": _flag("chk_lb_aff"),
}


def parse_set_action(ctx: ActionContext) -> OvnAction | None:
    lexer = ctx.lexer
    lhs = ctx.parse_field()
    if lhs is None:
        return None
    if lexer.match(lx.T_EXCHANGE):
        return fields_ops.parse_assignment(ctx, True, lhs)
    if lexer.match(lx.T_EQUALS):
        tok = lexer.token
        if tok.type != lx.T_ID:
            return fields_ops.parse_load(ctx, lhs)
        special = ASSIGN_ACTIONS.get(tok.s or "")
        if special is not None and lexer.lookahead() == lx.T_LPAREN:
            return special(ctx, lhs)
        return fields_ops.parse_assignment(ctx, False, lhs)
    lexer.syntax_error("expecting `=' or `<->'")
    return None


def parse_action(ctx: ActionContext, out: list[OvnAction]) -> bool:
    lexer = ctx.lexer
    tok = lexer.token
    if tok.type == lx.T_TEMPLATE:
        ctx.fail("Unexpanded template.")
        return False
    if tok.type != lx.T_ID:
        lexer.syntax_error(None)
        return False
    action: OvnAction | None
    if lexer.lookahead() in (lx.T_EQUALS, lx.T_EXCHANGE, lx.T_LSQUARE):
        action = parse_set_action(ctx)
    else:
        handler = KEYWORD_ACTIONS.get(tok.s or "")
        if handler is None:
            lexer.syntax_error("expecting action")
            action = None
        else:
            lexer.get()
            action = handler(ctx)
    lexer.force_match(lx.T_SEMICOLON)
    if lexer.error is not None:
        return False
    if action is not None:
        out.append(action)
    return True


def parse_action_list(ctx: ActionContext, sentinel: int) -> list[OvnAction]:
    """parse_actions(): ``drop;`` alone, or actions up to 'sentinel'."""
    lexer = ctx.lexer
    out: list[OvnAction] = []
    tok = lexer.token
    if tok.type == lx.T_ID and tok.s == "drop" and lexer.lookahead() == lx.T_SEMICOLON:
        lexer.get()
        lexer.get()
        lexer.force_match(sentinel)
        return out
    while not lexer.match(sentinel):
        if not parse_action(ctx, out):
            break
    return out


base.PARSE_ACTION_LIST = parse_action_list


def parse_with_lexer(lexer: lx.Lexer, pp: Any) -> tuple[list[OvnAction], Any]:
    """ovnacts_parse(): actions and prerequisites; errors stay in lexer."""
    ctx = ActionContext(pp, lexer)
    actions: list[OvnAction] = []
    if lexer.error is None:
        actions = parse_action_list(ctx, lx.T_END)
    if lexer.error is not None:
        return [], None
    return actions, ctx.prereqs
