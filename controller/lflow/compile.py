"""One Logical_Flow row -> OpenFlow flows (OVN 23.03 controller/lflow.c,
consider_logical_flow__() and add_matches_to_flow_table()).

Public API
----------
``LflowCompiler(ctx: CompileContext, cache: LflowCache | None = None)``

* ``compile_lflow(lflow_row, datapath: DatapathInfo) -> CompiledLflow | LflowError``
  for one datapath of the flow;
* ``compile_lflow_local(lflow_row) -> list[CompiledLflow | LflowError]`` for
  every local datapath of the flow (its datapath, or each datapath of its
  Logical_DP_Group), as the C agent does;
* ``compile_all(lflow_rows)``: the same for many rows (a full recompute),
  with the cyclic GC paused;
* ``clear_text_cache()``: forget what was compiled per distinct text (call it
  whenever an input changes: address sets, port groups, template variables,
  chassis residency, port bindings, multicast groups);
* ``forget_lflow(uuid)``: a deleted (or to be recompiled) lflow gives back
  its conjunction ids, lflow-cache entry and group/meter references;
* ``stats``: counters (instances, text reuse, lflow-cache hits).

``CompiledLflow`` has ``flows`` (plain flows: cookie = first 32 bits of the
lflow UUID), ``conj_flows`` (cookie 0; add them with
``DesiredFlowTable.add_or_append``), ``as_infos`` ({id(flow):
AddrSetInfo} for flows made from one address-set member) and ``refs``
(``LflowRefs``: address sets, port groups, ports, multicast groups, template
variables the flow used), so the agent can re-process only the lflows that use
a changed resource (``RefIndex`` keeps resource -> lflows).
``install(desired_table)`` adds everything owned by the lflow UUID.  Errors never raise: ``LflowError(lflow_uuid, message)``.

Design note
-----------
The work is split so that the part that does not depend on the datapath is
done once per distinct (match, actions, pipeline, table) text:

* per text (``_Text``): action parsing (+ prerequisites); the match parsed,
  ANDed with the prerequisites, annotated, simplified, conditions evaluated
  (chassis-wide) and normalised; and, when ``to_matches`` looked up no port
  name, the matches themselves, pre-digested (``_Prepared``: match items
  without metadata, base conjunction ids, reg14/reg15 values);
* per text and datapath, only when the match uses port groups (which are
  per-datapath, ``<dp_key>_<name>``): the parse and everything after it;
* per datapath: ``to_matches`` when the match compares port names, the
  conjunction id range (``ConjIds``), metadata, the related-port check, and
  the encoded actions, which are themselves memoised per text and (is_switch,
  NAT zone, controller meter) when encoding looked nothing up (no port,
  tunnel, group, meter or sample).

A row on several local datapaths (a datapath group) is compiled in one
pass (``_compile``): its tags, templates, per-text entry and meter are looked
up once, and each datapath then only adds what differs (metadata, ports,
conjunction ids, encodings that looked something up), in the order and with
the side effects a separate ``compile_lflow`` per datapath would have.

Below the per-text memo, texts that differ only in addresses and port names
share one parse/annotate/simplify/normalise per match *shape*
(``MatchTemplates``, see match_templates.py: the constants are substituted
into the shape's normalised expression where that is provably what a full
compile gives; every other text takes the full path).

On top of that the uuid-keyed ``LflowCache`` keeps, as the C agent does, the
simplified expression (EXPR) or the final matches and conjunction range
(MATCHES) across full recomputes; on a MATCHES hit the same conjunction ids
are re-reserved (``alloc_specified``) or the entry dropped.
"""

from __future__ import annotations

import gc
import uuid as uuidlib
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from controller.lflow.actions import (
    ActionError,
    EncodeParams,
    ExtendTable,
    OvsFeatures,
    ParsedActions,
    ParseParams,
    encode_ovnacts,
)
from controller.lflow.actions.base import NX_CTLR_NO_METER
from controller.lflow.actions.dhcp_opts import DHCPV4_OPTIONS, DHCPV6_OPTIONS
from controller.lflow.actions.templates import ActionTemplates
from controller.lflow.cache import T_MATCHES, LflowCache
from controller.lflow.conj_ids import ConjIds
from controller.lflow.expr.annotate import annotate, evaluate_condition, simplify
from controller.lflow.expr.matches import ExprMatch, to_matches
from controller.lflow.expr.nodes import E_AND, E_COND, E_OR, ConstantSet, Expr, clone, combine
from controller.lflow.expr.normalize import normalize
from controller.lflow.expr.parse import ExprError, parse_expr
from controller.lflow.lexer import parse_template_string
from controller.lflow.match_templates import MatchTemplates, expr_key
from controller.lflow.refs import NO_REFS, LflowRefs, mcgroup_ref
from controller.lflow.refs import RefIndex as RefIndex  # re-exported
from controller.lflow.symtab import Symtab, ovn_symtab
from ofctrl.desired import AddrSetInfo, DesiredFlowTable
from ofctrl.flow import Flow
from ofctrl.match import Match
from ofctrl.ofpacts.basic import Conjunction
from physical import constants as C
from physical.inputs import opt_first

_M32 = 0xFFFFFFFF


# ---------------------------------------------------------------------------
# Inputs and results.

@dataclass(frozen=True, slots=True)
class DatapathInfo:
    """What the compiler needs about one Datapath_Binding."""

    uuid: uuidlib.UUID
    key: int                       # tunnel_key (the metadata value)
    is_switch: bool
    common_nat_ct_zone: str = "reg11"   # "reg12" if external_ids:snat-ct-zone is set

    @classmethod
    def from_row(cls, row: Any) -> "DatapathInfo":
        ext = row.external_ids
        return cls(row.uuid, row.tunnel_key, "logical-switch" in ext,
                   "reg12" if "snat-ct-zone" in ext else "reg11")


def _no_port_binding(name: str) -> tuple[int, int] | None:
    return None


def _no_mcgroup(dp_key: int, name: str) -> int | None:
    return None


def _not_resident(name: str) -> bool:
    return False


def _no_tunnel(dp_key: int, name: str) -> int | None:
    return None


@dataclass(slots=True)
class CompileContext:
    """Everything outside the lflow row that changes its flows."""

    symtab: Symtab = field(default_factory=ovn_symtab)
    addr_sets: Mapping[str, ConstantSet] = field(default_factory=dict)
    # SB Port_Group name ("<dp_key>_<name>" or global) -> ports related to this chassis.
    port_groups: Mapping[str, ConstantSet] = field(default_factory=dict)
    template_vars: Mapping[str, str] | None = None
    dhcp_opts: dict[str, Any] = field(default_factory=lambda: DHCPV4_OPTIONS)
    dhcpv6_opts: dict[str, Any] = field(default_factory=lambda: DHCPV6_OPTIONS)
    group_table: ExtendTable = field(default_factory=ExtendTable)
    meter_table: ExtendTable = field(default_factory=ExtendTable)
    conj_ids: ConjIds = field(default_factory=ConjIds)
    features: OvsFeatures = field(default_factory=OvsFeatures)
    collector_ids: frozenset[int] | None = None
    # port name -> (datapath key, port key) of its Port_Binding (any datapath).
    port_binding: Callable[[str], tuple[int, int] | None] = _no_port_binding
    # (datapath key, name) -> Multicast_Group key.
    multicast_group: Callable[[int, str], int | None] = _no_mcgroup
    # "<dp_key>_<port_key>" of the ports related to this chassis.
    related_lports: Container[str] = frozenset()
    is_chassis_resident: Callable[[str], bool] = _not_resident
    # (datapath key, port name) -> OpenFlow port of the tunnel to its chassis.
    tunnel_ofport: Callable[[int, str], int | None] = _no_tunnel
    local_datapaths: Container[int] = frozenset()


class LflowError:
    """A logical flow that could not be compiled (the C agent logs and skips it)."""

    __slots__ = ("lflow_uuid", "message")

    def __init__(self, lflow_uuid: uuidlib.UUID, message: str) -> None:
        self.lflow_uuid = lflow_uuid
        self.message = message

    def __repr__(self) -> str:
        return f"LflowError({self.lflow_uuid}, {self.message!r})"


class CompiledLflow:
    """The flows of one lflow on one datapath (see module docstring)."""

    __slots__ = ("lflow_uuid", "dp_key", "flows", "conj_flows", "as_infos", "refs")

    def __init__(self, lflow_uuid: uuidlib.UUID, dp_key: int, flows: list[Flow],
                 conj_flows: list[Flow], as_infos: dict[int, AddrSetInfo] | None,
                 refs: LflowRefs) -> None:
        self.lflow_uuid = lflow_uuid
        self.dp_key = dp_key
        self.flows = flows
        self.conj_flows = conj_flows
        self.as_infos = as_infos
        self.refs = refs

    def all_flows(self) -> list[Flow]:
        return self.flows + self.conj_flows

    def install(self, table: DesiredFlowTable) -> None:
        """Adds the flows to a desired table, owned by the lflow UUID."""
        owner = self.lflow_uuid
        infos = self.as_infos or {}
        for f in self.flows:
            table.add(f, owner, as_info=infos.get(id(f)))
        for f in self.conj_flows:
            table.add_or_append(f, owner, as_info=infos.get(id(f)))

    def __repr__(self) -> str:
        return (f"CompiledLflow({self.lflow_uuid}, dp={self.dp_key}, "
                f"{len(self.flows)} flows, {len(self.conj_flows)} conj flows)")


# ---------------------------------------------------------------------------
# Per-text state.

class _Prepared:
    """A datapath-independent match, ready to be finished per datapath:
    ``template`` is the match items in canonical order with a metadata slot
    (and a conj_id slot) whose positions are ``md_pos`` / ``conj_pos``."""

    __slots__ = ("template", "md_pos", "conj_pos", "conj_id", "conjunctions", "inport",
                 "outport", "as_info", "head", "tail")

    def __init__(self, em: ExprMatch) -> None:
        items = em.match.items
        self.conj_id = 0
        inport = outport = 0
        for name, value, _mask in items:
            if name == "conj_id":
                self.conj_id = value
            elif name == "reg14":
                inport = value
            elif name == "reg15":
                outport = value
        # Positions of the per-datapath fields in the canonical order.
        probe = Match(items + (("metadata", 0, None),))
        self.template = probe.items
        self.md_pos = md_pos = next(i for i, it in enumerate(probe.items)
                                    if it[0] == "metadata")
        # The items before and after the metadata slot.
        self.head = probe.items[:md_pos]
        self.tail = probe.items[md_pos + 1:]
        self.conj_pos = (next(i for i, it in enumerate(probe.items) if it[0] == "conj_id")
                         if self.conj_id else -1)
        self.inport = inport
        self.outport = outport
        self.conjunctions = tuple(em.conjunctions)
        self.as_info = (AddrSetInfo(em.as_name, em.as_ip, em.as_mask)
                        if em.as_name is not None else None)


class _MatchState:
    """The match of one text (on one datapath if it uses port groups).

    ``expr`` is what the lflow cache stores as EXPR: the simplified
    expression, or, when it had no is_chassis_resident() condition, the
    normalised one (normalising it again gives it back)."""

    __slots__ = ("expr", "normalized", "prepared", "n_conjs", "conj_start", "refs", "error",
                 "uses_sets")

    def __init__(self) -> None:
        self.expr: Expr | None = None
        self.normalized: Expr | None = None
        self.prepared: list[_Prepared] | None = None   # None: to_matches per datapath
        self.n_conjs = 0
        self.conj_start = 0       # conjunction ids of a cached MATCHES entry
        self.refs = NO_REFS
        self.error: str | None = None
        self.uses_sets = False


_NO_KEY = object()


class _Actions:
    """Parsed actions of one (actions, pipeline, table) text and their
    encodings that looked nothing up, by (is_switch, NAT zone, meter id)."""

    __slots__ = ("parsed", "error", "encoded", "sample", "prereq_key")

    def __init__(self, parsed: ParsedActions | None, error: str | None, sample: bool) -> None:
        self.parsed = parsed
        self.error = error
        self.encoded: dict[tuple[bool, str, int], tuple[Any, ...]] = {}
        self.sample = sample
        self.prereq_key: object = _NO_KEY    # match_templates.expr_key(parsed.prereqs)


class _Text:
    __slots__ = ("match", "actions", "shared", "by_dp")

    def __init__(self, match: str, actions: _Actions) -> None:
        self.match = match
        self.actions = actions
        self.shared: _MatchState | None = None
        self.by_dp: dict[int, _MatchState] | None = None


# The "port" every lflow that looked up a tunnel ofport references, so a
# tunnel moving re-processes those lflows only (no logical port has a NUL).
TUNNEL_REF = "\0tunnel"


class _Recorder:
    """Port lookups of one (lflow, datapath), recording references."""

    __slots__ = ("ctx", "dp_key", "ports", "mcgroups", "used")

    def __init__(self, ctx: CompileContext, dp_key: int) -> None:
        self.ctx = ctx
        self.dp_key = dp_key
        self.ports: set[str] | None = None
        self.mcgroups: set[str] | None = None
        self.used = False

    def lookup_port(self, name: str) -> int | None:
        if name == "none":
            return 0
        self.used = True
        if self.ports is None:
            self.ports = set()
        self.ports.add(name)
        pb = self.ctx.port_binding(name)
        if pb is not None and pb[0] == self.dp_key:
            return pb[1]
        if self.mcgroups is None:
            self.mcgroups = set()
        self.mcgroups.add(mcgroup_ref(self.dp_key, name))
        return self.ctx.multicast_group(self.dp_key, name)

    def tunnel_ofport(self, name: str) -> int | None:
        self.used = True
        if self.ports is None:
            self.ports = set()
        self.ports.add(TUNNEL_REF)
        return self.ctx.tunnel_ofport(self.dp_key, name)

    def refs(self) -> LflowRefs:
        if self.ports is None:
            return NO_REFS
        return LflowRefs(ports=frozenset(self.ports),
                         mcgroups=frozenset(self.mcgroups or ()))


class _RecordingTable:
    """An ExtendTable stand-in that notes that an id was assigned."""

    __slots__ = ("table", "used")

    def __init__(self, table: ExtendTable) -> None:
        self.table = table
        self.used = False

    def assign_id(self, name: str, lflow_uuid: uuidlib.UUID) -> int:
        self.used = True
        return self.table.assign_id(name, lflow_uuid)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.table, name)


def has_condition(e: Expr) -> bool:
    """True if 'e' contains an is_chassis_resident() condition."""
    t = e.type
    if t == E_COND:
        return True
    if t == E_AND or t == E_OR:
        for sub in e.subs:
            if has_condition(sub):
                return True
    return False


def _expr_size(e: Expr | None) -> int:
    if e is None:
        return 0
    n = 64
    subs = e.subs
    if subs:
        for s in subs:
            n += _expr_size(s)
    return n


# ---------------------------------------------------------------------------
# The compiler.

class LflowCompiler:
    """See the module docstring."""

    def __init__(self, ctx: CompileContext, cache: LflowCache | None = None,
                 templates: bool = True) -> None:
        self.ctx = ctx
        self.cache = cache
        # Per match shape (see match_templates); it depends on the symtab only.
        self.templates = MatchTemplates(ctx.symtab) if templates else None
        self._texts: dict[tuple[str, str, bool, int], _Text] = {}
        self._action_texts: dict[tuple[str, bool, int], _Actions] = {}
        self._parse_params: dict[tuple[bool, int], ParseParams] = {}
        self._dp_infos: dict[int, DatapathInfo] = {}
        # One parse per action-text shape (actions.templates); unlike the
        # per-text memo it is kept across clear_text_cache.
        self._action_templates = ActionTemplates()
        self.stats = {"instances": 0, "text_compiles": 0, "text_reuse": 0,
                      "match_compiles": 0, "template_hits": 0, "encodes": 0, "encode_reuse": 0,
                      "cache_hits": 0, "cache_misses": 0, "flows": 0, "errors": 0}

    def clear_text_cache(self) -> None:
        self._texts.clear()
        self._action_texts.clear()

    def forget_lflow(self, lflow_uuid: uuidlib.UUID) -> None:
        """A Logical_Flow was deleted (or is about to be recompiled): free its
        conjunction ids, lflow-cache entry and group/meter references."""
        ctx = self.ctx
        ctx.conj_ids.free(lflow_uuid)
        if self.cache is not None:
            self.cache.delete(lflow_uuid)
        ctx.group_table.remove_desired(lflow_uuid)
        ctx.meter_table.remove_desired(lflow_uuid)

    # -------------------------------------------------------------- entry points
    def compile_all(self, lflows: Iterable[Any]) -> list[CompiledLflow | LflowError]:
        """``compile_lflow_local`` for every row (a full recompute).

        The cyclic garbage collector is paused meanwhile: the compiler makes
        no reference cycles that matter, and on large inputs the collector's
        repeated scans of the growing heap of new flows cost more than the
        compilation itself (seed-500: 12 s -> 4 s)."""
        out: list[CompiledLflow | LflowError] = []
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            compile_local = self.compile_lflow_local
            for lf in lflows:
                out.extend(compile_local(lf))
        finally:
            if was_enabled:
                gc.enable()
        return out

    def compile_lflow_local(self, lflow: Any) -> list[CompiledLflow | LflowError]:
        """The flow on each of its datapaths that is local."""
        local = self.ctx.local_datapaths
        dp = opt_first(lflow.logical_datapath)
        if dp is not None:
            dps = [dp]
        else:
            group = opt_first(lflow.logical_dp_group)
            if group is None:
                return [LflowError(lflow.uuid, "lflow has no datapath or datapath group")]
            dps = group.datapaths
        info = self._dp_info
        infos = [info(d) for d in dps if d.tunnel_key in local]
        return self._compile(lflow, infos) if infos else []

    def compile_lflow(self, lflow: Any, dp: DatapathInfo) -> CompiledLflow | LflowError:
        return self._compile(lflow, (dp,))[0]

    def _dp_info(self, row: Any) -> DatapathInfo:
        """``DatapathInfo.from_row``, memoised by tunnel key (checked against
        every field, so a changed row gets a new one)."""
        key = row.tunnel_key
        ext = row.external_ids
        info = self._dp_infos.get(key)
        if info is None or not ((info.uuid is row.uuid or info.uuid == row.uuid)
                                and info.is_switch == ("logical-switch" in ext)
                                and (info.common_nat_ct_zone == "reg12")
                                == ("snat-ct-zone" in ext)):
            info = self._dp_infos[key] = DatapathInfo.from_row(row)
        return info

    def _compile(self, lflow: Any, dps: Sequence[DatapathInfo]
                 ) -> list[CompiledLflow | LflowError]:
        """The lflow on each of 'dps' (in order): what depends on the row
        only (ports tag, templates, per-text entry, meter) is done once, the
        rest per datapath, as ``compile_lflow`` would do it for each."""
        ctx = self.ctx
        stats = self.stats
        stats["instances"] += len(dps)
        lf_uuid: uuidlib.UUID = lflow.uuid
        out: list[CompiledLflow | LflowError] = []
        tags = lflow.tags
        io_port = tags.get("in_out_port") if tags else None
        io_refs = NO_REFS
        io_pb: tuple[int, int] | None = None
        if io_port:
            io_refs = LflowRefs(ports=frozenset((io_port,)))
            io_pb = ctx.port_binding(io_port)
        related = ctx.related_lports
        text: _Text | None = None
        for dp in dps:
            dp_key = dp.key
            if io_port and (io_pb is None or io_pb[0] != dp_key
                            or f"{dp_key}_{io_pb[1]}" not in related):
                out.append(CompiledLflow(lf_uuid, dp_key, [], [], None, io_refs))
                continue
            if text is None:
                # Templates, then the per-text entry (first instance only).
                lf_refs = io_refs
                match_text: str = lflow.match
                actions_text: str = lflow.actions
                tvars = ctx.template_vars
                if tvars is not None and ("^" in match_text or "^" in actions_text):
                    trefs: set[str] = set()
                    match_text = parse_template_string(match_text, tvars, trefs)
                    actions_text = parse_template_string(actions_text, tvars, trefs)
                    if trefs:
                        lf_refs = lf_refs.merged(LflowRefs(templates=frozenset(trefs)))
                ingress = lflow.pipeline == "ingress"
                table_id: int = lflow.table_id
                key = (match_text, actions_text, ingress, table_id)
                text = self._texts.get(key)
                if text is None:
                    stats["text_compiles"] += 1
                    text = self._texts[key] = _Text(
                        match_text, self._actions(actions_text, ingress, table_id))
                else:
                    stats["text_reuse"] += 1
                acts = text.actions
                parsed = acts.parsed
                ptable = (C.T_LOG_INGRESS if ingress else C.T_LOG_EGRESS) + table_id
                priority: int = lflow.priority
                cookie = lf_uuid.int >> 96
                meter_name = opt_first(lflow.controller_meter)
                meter_id = 0          # assigned on first use (idempotent per lflow)
                cache = self.cache
                if cache is not None and not cache.enabled:
                    cache = None
            else:
                stats["text_reuse"] += 1
            if acts.error is not None:
                stats["errors"] += 1
                out.append(LflowError(lf_uuid, acts.error))
                continue
            assert parsed is not None

            state = text.shared
            if state is None:
                state, cacheable = self._match_state(text, parsed, dp_key, lf_uuid)
            else:
                cacheable = False
            if state.error is not None:
                stats["errors"] += 1
                out.append(LflowError(lf_uuid, state.error))
                continue
            refs = lf_refs if state.refs is NO_REFS else lf_refs.merged(state.refs)
            recorder: _Recorder | None = None
            prepared = state.prepared
            n_conjs = state.n_conjs
            if prepared is None:
                assert state.normalized is not None
                recorder = _Recorder(ctx, dp_key)
                ems, n_conjs = to_matches(state.normalized, recorder.lookup_port)
                prepared = [_Prepared(em) for em in ems]
            if not prepared:
                if recorder is not None:
                    refs = refs.merged(recorder.refs())
                out.append(CompiledLflow(lf_uuid, dp_key, [], [], None, refs))
                continue
            start = 0
            if n_conjs:
                conj_ids = ctx.conj_ids
                if not (state.conj_start and conj_ids.alloc_specified(
                        lf_uuid, dp.uuid, state.conj_start, n_conjs)):
                    start = conj_ids.alloc(lf_uuid, dp.uuid, n_conjs)
                    if not start:
                        stats["errors"] += 1
                        out.append(LflowError(lf_uuid, "32-bit conjunction ids exhausted!"))
                        continue
                else:
                    start = state.conj_start

            # Controller meter and actions.
            if meter_name and not meter_id:
                meter_id = ctx.meter_table.assign_id(meter_name, lf_uuid)
                if not meter_id:
                    stats["errors"] += 1
                    out.append(LflowError(lf_uuid,
                                          f"Unable to assign id for meter: {meter_name}"))
                    continue
            akey = (dp.is_switch, dp.common_nat_ct_zone,
                    meter_id if meter_name else NX_CTLR_NO_METER)
            actions = acts.encoded.get(akey)
            if actions is None:
                if recorder is None:
                    recorder = _Recorder(ctx, dp_key)
                actions = self._encode(acts, parsed, akey, ingress, lf_uuid, dp, recorder)
            else:
                stats["encode_reuse"] += 1

            flows, conj_flows, as_infos = self._finish(
                prepared, start - 1 if n_conjs else 0, dp, ingress, ptable, priority, cookie,
                actions)
            stats["flows"] += len(flows) + len(conj_flows)
            if recorder is not None:
                refs = refs.merged(recorder.refs())

            # The lflow cache, as the C agent fills it: matches if nothing
            # external was used, else the expression if no address set, port
            # group or template was.
            if cache is not None and (cacheable or lf_uuid not in cache):
                if not refs:
                    cache.add_matches(lf_uuid, start if n_conjs else 0, n_conjs, prepared,
                                      200 * len(prepared))
                elif not state.uses_sets and not refs.templates and state.expr is not None:
                    cache.add_expr(lf_uuid, state.expr, _expr_size(state.expr))
            out.append(CompiledLflow(lf_uuid, dp_key, flows, conj_flows, as_infos, refs))
        return out

    # -------------------------------------------------------------- per text
    def _actions(self, actions: str, ingress: bool, table_id: int) -> _Actions:
        akey = (actions, ingress, table_id)
        entry = self._action_texts.get(akey)
        if entry is not None:
            return entry
        pkey = (ingress, table_id)
        pp = self._parse_params.get(pkey)
        if pp is None:
            ctx = self.ctx
            pp = self._parse_params[pkey] = ParseParams(
                symtab=ctx.symtab, dhcp_opts=ctx.dhcp_opts, dhcpv6_opts=ctx.dhcpv6_opts,
                pipeline=0 if ingress else 1, n_tables=C.LOG_PIPELINE_LEN, cur_ltable=table_id)
        parsed = self._action_templates.parse(actions, pp)
        if isinstance(parsed, ActionError):
            entry = _Actions(None, f"error parsing actions \"{actions}\": {parsed}", False)
        else:
            entry = _Actions(parsed, None, "sample" in actions)
        self._action_texts[akey] = entry
        return entry

    def _match_state(self, text: _Text, parsed: ParsedActions, dp_key: int,
                     lf_uuid: uuidlib.UUID) -> tuple[_MatchState, bool]:
        """The match state for 'dp_key' and whether it was just made (so
        the lflow cache may take it): per-text memo, then lflow cache, then
        compile."""
        if text.shared is not None:
            return text.shared, False
        if text.by_dp is not None:
            st = text.by_dp.get(dp_key)
            if st is not None:
                return st, False
        cache = self.cache
        lcv = cache.get(lf_uuid) if cache is not None else None
        if lcv is not None:
            self.stats["cache_hits"] += 1
            st = _MatchState()
            if lcv.type == T_MATCHES:
                st.prepared = lcv.matches
                st.n_conjs = lcv.n_conjs
                st.conj_start = lcv.conj_id_ofs
            else:
                self._finish_expr(st, clone(lcv.expr), text.match)
            text.shared = st
            return st, False
        self.stats["cache_misses"] += 1
        st = _MatchState()
        tpls = self.templates
        if tpls is not None and tpls.symtab is not self.ctx.symtab:
            tpls = self.templates = MatchTemplates(self.ctx.symtab)
        shape = tpls.shape(text.match) if tpls is not None else None
        pkey: object = None
        if tpls is not None and shape is not None:
            acts = text.actions
            pkey = acts.prereq_key
            if pkey is _NO_KEY:
                pkey = acts.prereq_key = expr_key(parsed.prereqs)
            e = tpls.instantiate(shape, pkey)
            if e is not None:
                self.stats["template_hits"] += 1
                st.expr = st.normalized = e
                self._prepare(st, e)
                text.shared = st
                return st, True
            if tpls.known(shape, pkey):
                shape = None        # not a template: the normal path
        self.stats["match_compiles"] += 1
        ctx = self.ctx
        as_ref: dict[str, int] = {}
        pg_ref: set[str] = set()
        verified = False
        try:
            e = parse_expr(text.match, ctx.symtab, ctx.addr_sets, ctx.port_groups, dp_key,
                           as_ref, pg_ref)
            if parsed.prereqs is not None:
                e = combine(E_AND, e, clone(parsed.prereqs)) or e
            e = annotate(e, ctx.symtab)
            if tpls is not None and shape is not None:
                verified = tpls.verify(shape, e)
            e = simplify(e)
        except ExprError as err:
            st.error = f"error parsing match \"{text.match}\": {err}"
            e = None
        if as_ref or pg_ref:
            st.uses_sets = True
            st.refs = LflowRefs(addr_sets=as_ref, port_groups=frozenset(pg_ref))
        if e is not None:
            self._finish_expr(st, e, text.match)
        if tpls is not None and shape is not None:
            ok = verified and st.error is None and not st.uses_sets
            tpls.learn(shape, pkey, st.normalized if ok else None)
        if pg_ref:
            if text.by_dp is None:
                text.by_dp = {}
            text.by_dp[dp_key] = st
        else:
            text.shared = st
        return st, True

    def _finish_expr(self, st: _MatchState, e: Expr, match_text: str) -> None:
        """Conditions, normalisation and, if no port name is compared,
        the matches (datapath-independent).  Consumes 'e'."""
        # Conditions only come from is_chassis_resident() in the text.
        if "is_chassis_resident" in match_text and has_condition(e):
            st.expr = clone(e)
            cond_ports: set[str] = set()
            resident = self.ctx.is_chassis_resident

            def is_resident(name: str) -> bool:
                cond_ports.add(name)
                return resident(name)

            e = normalize(evaluate_condition(e, is_resident))
            st.refs = st.refs.merged(LflowRefs(ports=frozenset(cond_ports)))
        else:
            e = normalize(e)
            st.expr = e
        st.normalized = e
        self._prepare(st, e)

    def _prepare(self, st: _MatchState, e: Expr) -> None:
        """The matches of normalised 'e', if they look up no port name."""
        probe = _Recorder(self.ctx, -1)
        ems, n_conjs = to_matches(e, probe.lookup_port)
        if not probe.used:
            st.prepared = [_Prepared(em) for em in ems]
            st.n_conjs = n_conjs

    # -------------------------------------------------------------- per datapath
    def _encode(self, acts: _Actions, parsed: ParsedActions, akey: tuple[bool, str, int],
                ingress: bool, lf_uuid: uuidlib.UUID, dp: DatapathInfo,
                recorder: _Recorder) -> tuple[Any, ...]:
        self.stats["encodes"] += 1
        ctx = self.ctx
        groups = _RecordingTable(ctx.group_table)
        meters = _RecordingTable(ctx.meter_table)
        used_before = recorder.used
        recorder.used = False
        ep = EncodeParams(
            lookup_port=recorder.lookup_port, tunnel_ofport=recorder.tunnel_ofport,
            is_switch=dp.is_switch, pipeline=0 if ingress else 1,
            output_ptable=C.T_OUTPUT_INIT if ingress else C.T_SAVE_INPORT,
            common_nat_ct_zone=dp.common_nat_ct_zone, lflow_uuid=lf_uuid, dp_key=dp.key,
            ctrl_meter_id=akey[2], collector_ids=ctx.collector_ids,
            group_table=cast(ExtendTable, groups), meter_table=cast(ExtendTable, meters),
            features=ctx.features)
        actions = tuple(encode_ovnacts(parsed.actions, ep))
        if not (recorder.used or groups.used or meters.used or acts.sample):
            acts.encoded[akey] = actions
        recorder.used = recorder.used or used_before
        return actions

    def _finish(self, prepared: list[_Prepared], conj_ofs: int, dp: DatapathInfo, ingress: bool,
                ptable: int, priority: int, cookie: int, actions: tuple[Any, ...]
                ) -> tuple[list[Flow], list[Flow], dict[int, AddrSetInfo] | None]:
        flows: list[Flow] = []
        conj_flows: list[Flow] = []
        as_infos: dict[int, AddrSetInfo] | None = None
        dp_key = dp.key
        md = ("metadata", dp_key, None)
        md1 = (md,)
        new_match = object.__new__
        check_port = dp.is_switch
        related = self.ctx.related_lports
        for p in prepared:
            if check_port:
                port = p.inport if ingress else p.outport
                if port and f"{dp_key}_{port}" not in related:
                    continue
            if p.conj_id:
                t = list(p.template)
                t[p.md_pos] = md
                t[p.conj_pos] = ("conj_id", (p.conj_id + conj_ofs) & _M32, None)
                items = tuple(t)
            else:
                items = p.head + md1 + p.tail
            m = new_match(Match)
            m.items = items
            m._hash = hash(items)
            if p.conjunctions:
                f = Flow(ptable, priority, m,
                         tuple([Conjunction((cid + conj_ofs) & _M32, clause + 1, n)
                                for cid, clause, n in p.conjunctions]), 0)
                conj_flows.append(f)
            else:
                f = Flow(ptable, priority, m, actions, cookie)
                flows.append(f)
            if p.as_info is not None:
                if as_infos is None:
                    as_infos = {}
                as_infos[id(f)] = p.as_info
        return flows, conj_flows, as_infos
