"""OVN logical actions (OVN 23.03 lib/actions.c): parse, format, encode.

Public API
----------
``parse_actions(text, pp: ParseParams) -> ParsedActions | ActionError``
    Parses the ``actions`` column of a Logical_Flow.  On success the result
    has ``actions`` (list of ``OvnAction``) and ``prereqs`` (an expression
    node of ``controller.lflow.expr.nodes`` to AND into the flow's match, or
    None); ``prereqs_text()`` formats it as OVN ``expr_format()`` does.  On
    failure an ``ActionError`` (a ``str``) carries OVN's exact message.
    ``ParseParams(symtab, dhcp_opts, dhcpv6_opts, nd_ra_opts,
    controller_event_opts, pipeline, n_tables, cur_ltable)``.

``format_ovnacts(actions) -> str``
    OVN syntax (``"drop;"`` for no actions); re-parses to the same actions.

``encode_ovnacts(actions, ep: EncodeParams) -> list[ofctrl action]``
    OpenFlow actions (``ofctrl.ofpacts`` objects; ``format_actions`` prints
    them as OVS does).  ``EncodeParams`` carries ``lookup_port(name)`` and
    ``tunnel_ofport(name)`` (-> int or None), ``is_switch``, ``pipeline``,
    the table numbers (``ingress_ptable`` 8, ``egress_ptable`` 42,
    ``output_ptable`` (37 for ingress flows in the agent, 64 for egress),
    ``mac_bind_ptable`` 66, ``mac_lookup_ptable`` 67, ``lb_hairpin_ptable``
    68, ``lb_hairpin_reply_ptable`` 69, ``ct_snat_vip_ptable`` 70,
    ``fdb_ptable`` 71, ``fdb_lookup_ptable`` 72, ``in_port_sec_ptable`` 73,
    ``out_port_sec_ptable`` 75), ``common_nat_ct_zone`` ("reg11"/"reg12"),
    ``lflow_uuid``, ``dp_key``, ``ctrl_meter_id``, ``collector_ids``,
    ``group_table``/``meter_table`` and ``features`` (``OvsFeatures``:
    ``ct_zero_snat``, ``dp_hash_l4_sym``, ``controller_meter``).

Group and meter ids
    ``group_table``/``meter_table`` are the OpenFlow side's id tables,
    ``ofctrl.groups.GroupTable`` and ``ofctrl.meters.MeterTable`` (both
    ``ofctrl.groups.ExtendTable``: ids by name, lowest free id from 1,
    desired vs installed).  Actions call ``assign_id(name, lflow_uuid)``
    (``EXT_TABLE_ID_INVALID``, 0, when ids run out); the agent passes the same
    tables it installs from, so names and ids are shared across flows and
    with ofctrl.  ``GroupTable``, ``MeterTable``, ``ExtendTable`` and
    ``EXT_TABLE_ID_INVALID`` are re-exported here.

Option tables for put_dhcp_opts & co. are in ``dhcp_opts``.  Action classes
live in the family modules (``fields_ops``, ``ct``, ``lb``, ``lookups``,
``controller_ops``, ``misc``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.lflow import lexer as lx
from controller.lflow.actions.base import (
    P_EGRESS,
    P_INGRESS,
    ActionError,
    EncodeParams,
    OvnAction,
    OvsFeatures,
    ParseParams,
    encode_ovnacts,
    format_ovnacts,
)
from controller.lflow.actions.exprglue import format_expr
from controller.lflow.actions.parser import parse_with_lexer
from ofctrl.groups import EXT_TABLE_ID_INVALID, ExtendTable, GroupTable
from ofctrl.meters import MeterTable

__all__ = [
    "parse_actions", "format_ovnacts", "encode_ovnacts", "ParsedActions",
    "ActionError", "ParseParams", "EncodeParams", "OvsFeatures", "OvnAction",
    "ExtendTable", "GroupTable", "MeterTable", "EXT_TABLE_ID_INVALID",
    "P_INGRESS", "P_EGRESS",
]


@dataclass(slots=True)
class ParsedActions:
    actions: list[OvnAction]
    prereqs: Any          # expr_nodes.Expr or None

    def prereqs_text(self) -> str | None:
        if self.prereqs is None:
            return None
        return format_expr(self.prereqs)


def parse_actions(text: str, pp: ParseParams) -> ParsedActions | ActionError:
    """ovnacts_parse_string() (see module docstring)."""
    lexer = lx.Lexer(text)
    lexer.get()
    actions, prereqs = parse_with_lexer(lexer, pp)
    if lexer.error is not None:
        return ActionError(lexer.error)
    return ParsedActions(actions, prereqs)
