"""The ofctrl OpenFlow session: Geneve TLV negotiation, clear, flow updates.

Design (after OVN 23.03 ofctrl.c).  States of a connection:

  NEW -> TLV_REQUESTED -> [TLV_MOD_SENT] -> WAIT_BEFORE_CLEAR -> CLEAR_FLOWS
      -> UPDATE_FLOWS (terminal until the connection drops)

* NEW sends NXT_TLV_TABLE_REQUEST.  If the reply maps the OVN Geneve option
  (class 0x0102, type 0x80, len 4) we use that tun_metadata slot; else we map
  the lowest free one with NXT_TLV_TABLE_MOD + barrier.  "Already mapped" /
  "duplicate" errors (another controller raced us) restart from NEW; other
  failures disable Geneve (`geneve_field` None).
* WAIT_BEFORE_CLEAR waits `wait_before_clear_ms` so the first full flow
  computation is ready; CLEAR_FLOWS forgets what we believe is installed
  and arms `initial_clear`, so the next `put` deletes all flows and groups
  and installs everything *inside the same atomic bundle* (no empty moment).
* `put` (only in UPDATE_FLOWS and with no tx backlog): NXT_CT_FLUSH_ZONE for
  queued zones, meter mods, one ORDERED|ATOMIC bundle of group adds, flow
  mods (tracked changes or full compare) and group deletes, meter deletes,
  then a barrier.  The `req_cfg` passed to put becomes `cur_cfg` when that
  barrier is answered (coalescing like 23.03).
* `put_partial` (the initial install: while `initial_clear` is armed or
  its bundle is open) sends what the desired tables hold so far into the
  bundle and leaves it open; the agent calls it after each slice of a
  sliced full compute, so the switch ingests the flows while the rest is
  compiled.  The `installed` tables and groups then describe the open
  bundle; the `put` that follows sends the remaining difference into the
  same bundle and commits it, so the dataplane still switches in one
  commit and nothing installed is deleted before the compute is complete.
  An open bundle idle for `STREAM_IDLE_MS` (OVS expires idle bundles after
  10 s) is discarded and the initial install re-armed
  (`discard_partial`); a reconnection forgets it (the switch dropped it).
* After the initial install, `put_partial` streams only additions: the
  desired flows of keys nothing installed has (`installed.add_new`), with
  the groups and meters they need, go into a bundle left open
  (`_open_adds_only`); deletions, modifications and group deletes wait for
  the `put` that commits it, so nothing installed changes before the
  compute is complete and a flow removed and re-added identically in
  between still sends nothing.  Each call looks only at the flows added
  since the last one (`DesiredFlowTable.fresh`).  A table being recomputed
  (untracked) is scanned once, then tracked; the put compares it in full
  (`_compare_at_put`).  For a sliced compute spanning many iterations while
  the SB fills (a wiped SB refilled by northd: the 156k flows of seed-500
  otherwise went out in one put at the end).  Discarding such an idle
  bundle takes its flows out of the installed tables again (they are put
  again later); the flows installed before stay as they are.
* The `*_changed` flags of `put` only say which tables the caller's
  iteration changed; a table holding changes no put has diffed (tracked
  changes, or untracked: rebuilt and never compared) is diffed whatever
  they say, and makes the put needed.  The agent computes its tables in
  iterations that cannot put (outputs not valid: a claim queued, an SB
  update half applied) and puts in a later one whose flags are False; the
  changes of the former were left tracked forever, or, for a recompute,
  lost when the put turned tracking on (a wiped SB refilled by northd:
  every multicast-group flow, added while the claims were queued, never
  reached br-int).
* Any OpenFlow error is logged with its decoded name and the offending flow
  text, the offending flow (or group) is quarantined, and the connection is
  reset: the resync installs everything else.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Iterable, Mapping, Protocol

import ovs.poller
import ovs.timeval
import structlog

from ofctrl import messages as m
from ofctrl.connection import Connection, RateLimit, Target
from ofctrl.desired import DesiredFlowTable
from ofctrl.flow import Flow
from ofctrl.groups import GroupTable, parse_group_spec
from ofctrl.installed import InstalledFlowTable, add_new, update_by_compare, update_by_track
from ofctrl.meters import MeterConfig, MeterTable

log = structlog.get_logger("ofctrl")

S_NEW = "S_NEW"
S_TLV_TABLE_REQUESTED = "S_TLV_TABLE_REQUESTED"
S_TLV_TABLE_MOD_SENT = "S_TLV_TABLE_MOD_SENT"
S_WAIT_BEFORE_CLEAR = "S_WAIT_BEFORE_CLEAR"
S_CLEAR_FLOWS = "S_CLEAR_FLOWS"
S_UPDATE_FLOWS = "S_UPDATE_FLOWS"

TUN_METADATA_NUM_OPTS = 64
_BUNDLE_FLAGS = m.OFPBF_ORDERED | m.OFPBF_ATOMIC
# Messages queued before a put hands them to the connection (see `stream`).
_STREAM_CHUNK = 4096
# An open bundle (put_partial) idle this long is discarded (OVS: 10 s).
STREAM_IDLE_MS = 5000


class CtZoneFlusher(Protocol):
    """What the session needs from the agent's ct-zone state (controller/binding/ct_zones.py)."""

    def take_queued_flushes(self) -> list[int]: ...

    def assign_barrier(self, xid: int) -> None: ...

    def barrier_acked(self, xid: int) -> None: ...

    def openflow_reconnected(self) -> None: ...


class OfctrlSession:
    def __init__(
        self,
        target: Target,
        *,
        wait_before_clear_ms: int = 0,
        probe_interval_ms: int = 0,
        groups: GroupTable | None = None,
        meters: MeterTable | None = None,
        ct_zones: CtZoneFlusher | None = None,
        max_tx_bytes: int = 1 << 30,
    ) -> None:
        self.conn = Connection(target, probe_interval_ms=probe_interval_ms, max_tx_bytes=max_tx_bytes)
        self.state = S_NEW
        self.wait_before_clear_ms = wait_before_clear_ms
        self._wait_expire = 0
        self.groups = groups if groups is not None else GroupTable()
        self.meters = meters if meters is not None else MeterTable()
        self.ct_zones = ct_zones
        self.installed_lflows = InstalledFlowTable()
        self.installed_pflows = InstalledFlowTable()
        self.geneve_index: int | None = None
        # Datapath meter support (OFPMP_METER_FEATURES, asked on every
        # connection): None until the switch answered.
        self.meter_support: bool | None = None
        self._meter_xid: int | None = None
        self.initial_clear = False
        self.cur_cfg = 0
        self._flow_updates: deque[list[int]] = deque()  # [barrier xid, req_cfg]
        self._old_req_cfg = 0
        self._skipped_last_time = False
        self._bundle_id = 0
        # The initial install's bundle left open by put_partial: its id, the
        # {xid: what} of its messages, when it was last added to.
        self._open_bundle: int | None = None
        self._open_inflight: dict[int, Any] = {}
        self._open_used = 0
        # The open bundle holds only additions (put_partial after the initial
        # install), made to these desired tables (lflows, pflows).
        self._open_adds_only = False
        self._open_tables: tuple[DesiredFlowTable, DesiredFlowTable] | None = None
        # Tables a recompute was rebuilding when put_partial took their new
        # keys (tracking turned on for the rest): compared in full by the next put.
        self._compare_at_put: list[DesiredFlowTable] = []
        self.n_partial_puts = 0
        self._conn_seqno = 0
        self._xid = 0
        self._xid2 = 0
        self._immediate_wake = False
        self._reset_pending = False
        # Per put in flight: (barrier xid, {xid: Flow | ("group", name) | ("meter", id)}).
        self._inflight: deque[tuple[int, dict[int, Any]]] = deque()
        # Quarantined after an error: key_hash -> Flow; group names.
        self.rejected_flows: dict[int, Flow] = {}
        self.rejected_groups: set[str] = set()
        self.errors: list[tuple[str, str]] = []  # (error name, offending text), most recent last
        self._error_rl = RateLimit(30, 300_000)
        self.n_puts = 0

    # ------------------------------------------------------------ info
    @property
    def geneve_field(self) -> str | None:
        """`tun_metadataN` carrying OVN's Geneve option, once negotiated."""
        if not self.conn.is_connected() or self.geneve_index is None:
            return None
        if self.state in (S_WAIT_BEFORE_CLEAR, S_CLEAR_FLOWS, S_UPDATE_FLOWS):
            return "tun_metadata%d" % self.geneve_index
        return None

    def has_backlog(self) -> bool:
        return self.conn.has_backlog()

    def can_put(self) -> bool:
        return self.state == S_UPDATE_FLOWS and not self.conn.has_backlog()

    def is_connected(self) -> bool:
        return self.conn.is_connected()

    def close(self) -> None:
        self.conn.close()

    def set_target(self, target: Target) -> None:
        """Connect elsewhere (e.g. the integration bridge changed)."""
        if target != self.conn.target:
            log.info("connecting to switch", target=target if isinstance(target, str) else "custom")
            self.conn.set_target(target)

    def in_flight(self) -> int:
        """Number of puts whose barrier has not been answered yet."""
        return len(self._inflight)

    def stats(self) -> dict[str, int]:
        """Counters for memory/show-style diagnostics."""
        return {
            "installed_lflows": len(self.installed_lflows),
            "installed_pflows": len(self.installed_pflows),
            "groups": len(self.groups.existing),
            "meters": len(self.meters.existing),
            "flow_updates_in_flight": len(self._flow_updates),
            "tx_backlog_bytes": self.conn.tx_backlog_bytes(),
            "rejected_flows": len(self.rejected_flows),
            "connection_seqno": self.conn.seqno,
        }

    # ------------------------------------------------------------ loop
    def run(self) -> bool:
        """Advance the connection and state machine; True if (re)connected."""
        self.conn.run()
        reconnected = False
        if not self.conn.is_connected():
            return False
        if self._conn_seqno != self.conn.seqno:
            self._conn_seqno = self.conn.seqno
            reconnected = True
            self.state = S_NEW
            self.meter_support = None
            self._meter_xid = self._send(m.meter_features_request(self.conn.next_xid()))
            self._inflight.clear()
            self._forget_open_bundle()
            if self.ct_zones is not None:
                self.ct_zones.openflow_reconnected()
        progress = True
        i = 0
        while progress and i < 50:
            i += 1
            old = self.state
            self._run_state()
            msg = self.conn.recv()
            if msg is not None:
                self._recv_state(msg)
            progress = old != self.state or msg is not None
        self._immediate_wake = progress
        if self._open_bundle is not None:
            now = ovs.timeval.msec()
            if self.conn.has_backlog():
                self._open_used = now       # the switch is still reading it
            elif now - self._open_used >= STREAM_IDLE_MS:
                log.info("discarding an idle open bundle")
                self.discard_partial()
        if self._reset_pending:
            self._reset_pending = False
            self.conn.force_reconnect()
        return reconnected

    def wait(self, poller: ovs.poller.Poller) -> None:
        self.conn.wait(poller)
        if self._immediate_wake:
            poller.immediate_wake()
        elif self.state == S_WAIT_BEFORE_CLEAR and self._wait_expire:
            poller.timer_wait_until(self._wait_expire)

    def _send(self, msg: bytes) -> int:
        self.conn.send(msg)
        return int(m.HEADER.unpack_from(msg)[3])

    def _run_state(self) -> None:
        st = self.state
        if st == S_NEW:
            self._xid = self._send(m.tlv_table_request(self.conn.next_xid()))
            self.state = S_TLV_TABLE_REQUESTED
        elif st == S_WAIT_BEFORE_CLEAR:
            now = ovs.timeval.msec()
            if not self.wait_before_clear_ms or (self._wait_expire and now >= self._wait_expire):
                self._wait_expire = 0
                self.state = S_CLEAR_FLOWS
            elif not self._wait_expire:
                self._wait_expire = now + self.wait_before_clear_ms
        elif st == S_CLEAR_FLOWS:
            log.debug("clearing all flows")
            self.initial_clear = True
            self.installed_lflows.clear()
            self.installed_pflows.clear()
            self.groups.clear_existing()
            self.meters.clear_existing()
            self._flow_updates.clear()
            self.state = S_UPDATE_FLOWS
            self._immediate_wake = True

    def _recv_state(self, msg: bytes) -> None:
        st = self.state
        mtype = msg[1]
        xid = int(m.HEADER.unpack_from(msg)[3])
        if xid == self._meter_xid and mtype in (m.OFPT_MULTIPART_REPLY, m.OFPT_ERROR):
            max_meter = m.decode_meter_features_max_meter(msg) if mtype != m.OFPT_ERROR else 0
            self.meter_support = bool(max_meter)
            self._meter_xid = None
            return
        if st == S_TLV_TABLE_REQUESTED and xid == self._xid:
            if mtype == m.OFPT_EXPERIMENTER and m.nx_subtype(msg) == m.NXT_TLV_TABLE_REPLY:
                if self._process_tlv_reply(msg):
                    return
            elif mtype == m.OFPT_ERROR:
                log.error("switch refused to allocate Geneve option", error=m.decode_error(msg).name)
            else:
                log.error("unexpected reply to TLV table request", type=mtype)
            self.geneve_index = None
            self.state = S_WAIT_BEFORE_CLEAR
        elif st == S_TLV_TABLE_MOD_SENT and xid in (self._xid, self._xid2):
            if xid == self._xid2 and mtype == m.OFPT_BARRIER_REPLY:
                self.state = S_WAIT_BEFORE_CLEAR
            elif xid == self._xid and mtype == m.OFPT_ERROR:
                err = m.decode_error(msg)
                if err.experimenter == m.NX_VENDOR_ID and err.code in (m.NXTTMFC_ALREADY_MAPPED, m.NXTTMFC_DUP_ENTRY):
                    log.info("raced with another controller adding Geneve option; trying again", error=err.name)
                    self.state = S_NEW
                else:
                    log.error("error adding Geneve option", error=err.name)
                    self.geneve_index = None
                    self.state = S_WAIT_BEFORE_CLEAR
            else:
                log.error("unexpected reply to Geneve option allocation request", type=mtype)
                self.geneve_index = None
                self.state = S_WAIT_BEFORE_CLEAR
        elif st == S_UPDATE_FLOWS and mtype == m.OFPT_BARRIER_REPLY:
            self._barrier_reply(xid)
        else:
            self._recv_other(msg, mtype)

    def _process_tlv_reply(self, msg: bytes) -> bool:
        _, _, maps = m.decode_tlv_table_reply(msg)
        used = 0
        for tm in maps:
            if (tm.option_class, tm.option_type, tm.option_len) == (
                m.OVN_GENEVE_CLASS, m.OVN_GENEVE_TYPE, m.OVN_GENEVE_LEN
            ):
                if tm.index >= TUN_METADATA_NUM_OPTS:
                    log.error("Geneve option already in use with unsupported index", index=tm.index)
                    return False
                self.geneve_index = tm.index
                self.state = S_WAIT_BEFORE_CLEAR
                return True
            if tm.index < TUN_METADATA_NUM_OPTS:
                used |= 1 << tm.index
        free = [i for i in range(TUN_METADATA_NUM_OPTS) if not used & (1 << i)]
        if not free:
            log.error("no Geneve options free for use by OVN")
            return False
        self.geneve_index = free[0]
        tm = m.TlvMap(m.OVN_GENEVE_CLASS, m.OVN_GENEVE_TYPE, m.OVN_GENEVE_LEN, free[0])
        self._xid = self._send(m.tlv_table_mod(self.conn.next_xid(), m.NXTTMC_ADD, [tm]))
        self._xid2 = self._send(m.barrier_request(self.conn.next_xid()))
        self.state = S_TLV_TABLE_MOD_SENT
        return True

    def _barrier_reply(self, xid: int) -> None:
        ups = self._flow_updates
        if ups and ups[0][0] == xid:
            if ups[0][1] >= self.cur_cfg:
                self.cur_cfg = ups[0][1]
            ups.popleft()
        infl = self._inflight
        while infl and _xid_le(infl[0][0], xid):
            infl.popleft()
        if self.ct_zones is not None:
            self.ct_zones.barrier_acked(xid)

    def _recv_other(self, msg: bytes, mtype: int) -> None:
        if mtype == m.OFPT_ERROR:
            self._handle_error(msg)
        else:
            log.debug("OpenFlow packet ignored", type=mtype)

    def _describe_xid(self, xid: int | None) -> tuple[str, Any]:
        if xid is None:
            return "", None
        for _, table in [*self._inflight, (0, self._open_inflight)]:
            what = table.get(xid)
            if what is not None:
                if isinstance(what, Flow):
                    try:
                        return what.to_string(), what
                    except Exception:  # formatting must never break error handling
                        return repr(what), what
                return "%s %s" % what, what
        return "", None

    def _handle_error(self, msg: bytes) -> None:
        err = m.decode_error(msg)
        xid = int(m.HEADER.unpack_from(msg)[3])
        text, what = self._describe_xid(xid)
        if not text:
            text, what = self._describe_xid(err.offending_xid())
        name = err.name
        self.errors.append((name, text))
        del self.errors[:-100]
        if isinstance(what, Flow):
            self.rejected_flows[what.key_hash] = what
        elif isinstance(what, tuple) and what[0] == "group":
            self.rejected_groups.add(what[1])
        if not self._error_rl.allow():
            pass
        elif name.startswith("OFPBFC_"):  # bundle failed: a summary of the above
            log.info("OpenFlow error", error=name, type=err.type, code=err.code)
        else:
            log.warning("OpenFlow error", error=name, type=err.type, code=err.code, offending=text or None, xid=xid)
        if err.offending_type() == m.OFPT_METER_MOD or m.nx_subtype(err.data) in (
            m.NXT_CT_FLUSH, m.NXT_CT_FLUSH_ZONE
        ):
            # Meters and ct flushes live outside the bundle: nothing to resync
            # (flows using a missing meter fail and are quarantined on their own).
            return
        self._reset_pending = True

    # ------------------------------------------------------------- put
    @property
    def bundle_open(self) -> bool:
        """put_partial left the initial install's bundle open."""
        return self._open_bundle is not None and not self._open_adds_only

    def _forget_open_bundle(self) -> None:
        self._open_bundle = None
        self._open_inflight = {}
        self._open_adds_only = False
        self._open_tables = None

    def discard_partial(self) -> None:
        """Drop the open bundle; the next put installs everything again (an
        additions-only bundle: what it added)."""
        if self._open_bundle is None:
            return
        if self.conn.is_connected():
            self._send(m.bundle_ctrl(self.conn.next_xid(), self._open_bundle,
                                     m.OFPBCT_DISCARD_REQUEST, _BUNDLE_FLAGS))
        if self._open_adds_only:
            self._undo_additions()
            self._forget_open_bundle()
            return
        self._forget_open_bundle()
        self.installed_lflows.clear()
        self.installed_pflows.clear()
        self.groups.clear_existing()
        self.meters.clear_existing()
        self.initial_clear = True

    def put_partial(
        self,
        lflows: DesiredFlowTable,
        pflows: DesiredFlowTable,
        sb_meters: Mapping[str, MeterConfig] | None = None,
    ) -> bool:
        """Send the desired tables' contents so far into the initial
        install's bundle, left open (see the design note); True if sent."""
        if not self.can_put():
            return False
        if not self.initial_clear and (self._open_bundle is None or self._open_adds_only):
            return self._put_additions(lflows, pflows, sb_meters)
        msgs: list[bytes] = []
        inflight = self._open_inflight
        self._bundle_part(msgs, inflight, lflows, pflows, True, True, sb_meters)
        self.meters.sync()      # meter mods go out at once (outside the bundle)
        if msgs:
            self.n_partial_puts += 1
            self._open_used = ovs.timeval.msec()
            self.conn.send_many(msgs)
        lflows.change_tracked = True
        pflows.change_tracked = True
        return bool(msgs)

    def _put_additions(
        self,
        lflows: DesiredFlowTable,
        pflows: DesiredFlowTable,
        sb_meters: Mapping[str, MeterConfig] | None,
    ) -> bool:
        """put_partial after the initial install (see the design note)."""
        tables = [(d, i) for d, i in ((lflows, self.installed_lflows), (pflows, self.installed_pflows))
                  if not d.change_tracked or d.tracked or d.fresh]
        if not tables:
            return False
        conn = self.conn
        msgs = self.meters.messages_before_bundle(sb_meters or {}, False, conn.next_xid, adds_only=True)
        self.meters.sync()
        bundle_id = self._open_bundle
        opened_at = None
        if bundle_id is None:
            bundle_id = self._open_bundle = self._bundle_id
            self._bundle_id = (self._bundle_id + 1) & 0xFFFFFFFF
            self._open_adds_only = True
            self._open_tables = (lflows, pflows)
            opened_at = len(msgs)
            msgs.append(m.bundle_ctrl(conn.next_xid(), bundle_id, m.OFPBCT_OPEN_REQUEST, _BUNDLE_FLAGS))
        inflight = self._open_inflight
        n_before = len(inflight)
        self._add_new_groups(msgs, inflight, bundle_id)
        rejected = self.rejected_flows
        bundle_flow_mod = m.bundle_flow_mod
        next_xid = conn.next_xid

        def emit(cmd: int, flow: Flow) -> None:
            if rejected:
                bad = rejected.get(flow.key_hash)
                if bad is not None and bad.same_key(flow):
                    if bad.same_content(flow):
                        return  # still the flow OVS refused
                    del rejected[flow.key_hash]
            x = next_xid()
            msgs.append(bundle_flow_mod(x, bundle_id, _BUNDLE_FLAGS, cmd, flow.table, flow.priority,
                                        flow.cookie, flow.encode()))
            inflight[x] = flow
            if len(msgs) >= _STREAM_CHUNK:
                conn.send_many(msgs)
                msgs.clear()

        for desired, installed in tables:
            fresh = desired.fresh
            desired.fresh = []
            if fresh is not None:       # added since the last partial put
                add_new(desired, installed, emit, fresh)
            elif desired.change_tracked:
                add_new(desired, installed, emit, desired.tracked)
            else:
                # A recompute under way: the new keys among what it has built
                # so far, then tracking on; the next put compares the whole
                # table (`_compare_at_put`).
                add_new(desired, installed, emit, desired)
                desired.change_tracked = True
                if desired not in self._compare_at_put:
                    self._compare_at_put.append(desired)
        self.groups.sync()
        added = len(inflight) > n_before
        if added:
            self.n_partial_puts += 1
            self._open_used = ovs.timeval.msec()
        elif opened_at is not None:     # nothing to add: no bundle after all
            del msgs[opened_at]
            self._forget_open_bundle()
        if msgs:
            conn.send_many(msgs)
        return added

    def _undo_additions(self) -> None:
        """Take what an additions-only bundle added out of the installed
        tables and groups; its flows are tracked again for the next put."""
        assert self._open_tables is not None
        pairs = list(zip(self._open_tables, (self.installed_lflows, self.installed_pflows)))
        for what in self._open_inflight.values():
            if not isinstance(what, Flow):
                if what[0] == "group":
                    self.groups.remove_existing(what[1])
                continue
            for desired, installed in pairs:
                i = installed.lookup(what)
                if i is not None and i.flow is what:
                    for d in i.refs:
                        desired.tracked[d] = None
                    i.unlink_all()
                    installed.remove(i)
                    break
        for desired in self._compare_at_put:
            desired.untrack()       # back to a full compare at the next put
        self._compare_at_put = []

    def _add_new_groups(self, msgs: list[bytes], inflight: dict[int, Any], bundle_id: int) -> None:
        """Group adds of the desired groups not installed yet."""
        conn = self.conn
        for e in self.groups.uninstalled():
            if e.name in self.rejected_groups:
                continue
            spec = e.spec
            if spec is None:
                # Named by its ovs-ofctl text, as the C agent does: parse it once.
                try:
                    spec = e.spec = parse_group_spec(e.name)
                except Exception as exc:  # any parse failure: log, skip the group
                    if self._error_rl.allow():
                        log.error("new group", error=str(exc), group=e.name)
                    continue
            xids: list[int] = []

            def gen_xid() -> Any:
                while True:
                    x = conn.next_xid()
                    xids.append(x)
                    yield x

            for gm in m.group_mods(gen_xid(), m.OFPGC15_ADD, spec.type_code(), e.table_id, spec.wire_buckets(),
                                   spec.selection_method, spec.selection_method_param, spec.fields):
                msgs.append(m.bundle_add(bundle_id, gm, _BUNDLE_FLAGS))
            for x in xids:
                inflight[x] = ("group", e.name)

    def _bundle_part(
        self,
        msgs: list[bytes],
        inflight: dict[int, Any],
        lflows: DesiredFlowTable,
        pflows: DesiredFlowTable,
        lflows_changed: bool,
        pflows_changed: bool,
        sb_meters: Mapping[str, MeterConfig] | None,
    ) -> bool:
        """Meter mods, then group adds, flow mods and group deletes added to
        the (opened if need be) bundle `_open_bundle`; True if the bundle has
        content (then it must be committed), else it is closed again."""
        conn = self.conn
        initial = self.initial_clear
        msgs.extend(self.meters.messages_before_bundle(sb_meters or {}, initial, conn.next_xid))

        bundle_id = self._open_bundle
        was_open = bundle_id is not None
        if was_open:        # completing put_partial's bundle: every change counts
            lflows_changed = pflows_changed = True
        if bundle_id is None:
            bundle_id = self._open_bundle = self._bundle_id
            self._bundle_id = (self._bundle_id + 1) & 0xFFFFFFFF
            msgs.append(m.bundle_ctrl(conn.next_xid(), bundle_id, m.OFPBCT_OPEN_REQUEST, _BUNDLE_FLAGS))
        open_at = len(msgs)
        if initial:
            msgs.append(m.bundle_add(bundle_id, m.delete_all_flows(conn.next_xid()), _BUNDLE_FLAGS))
            msgs.append(m.bundle_add(bundle_id, m.delete_all_groups(conn.next_xid()), _BUNDLE_FLAGS))
            lflows.untrack()
            pflows.untrack()
            lflows_changed = pflows_changed = True
            self.initial_clear = False

        self._add_new_groups(msgs, inflight, bundle_id)

        rejected = self.rejected_flows
        bundle_flow_mod = m.bundle_flow_mod
        append = msgs.append
        next_xid = conn.next_xid
        ADD = m.OFPFC_ADD
        DEL = m.OFPFC_DELETE_STRICT

        streamed = False

        def emit(cmd: int, flow: Flow) -> None:
            if rejected:
                bad = rejected.get(flow.key_hash)
                if bad is not None and bad.same_key(flow):
                    if cmd == DEL:
                        del rejected[flow.key_hash]
                        return
                    if bad.same_content(flow):
                        return  # still the flow OVS refused
                    del rejected[flow.key_hash]
                    cmd = ADD
            x = next_xid()
            if cmd == DEL:
                body = flow.match.encode()
                cookie = 0
            else:
                body = flow.encode()
                cookie = flow.cookie if cmd == ADD else 0
            append(bundle_flow_mod(x, bundle_id, _BUNDLE_FLAGS, cmd, flow.table, flow.priority, cookie, body))
            inflight[x] = flow
            if len(msgs) >= _STREAM_CHUNK:
                stream()

        def stream() -> None:
            # A big put (the initial one: 165k flow mods at seed-500) goes to
            # the switch in chunks while it is being produced, still inside
            # the one ORDERED|ATOMIC bundle (committed at the end): OVS ingests
            # the bundle adds while we encode the rest, and the messages are
            # never all held at once.
            nonlocal streamed
            streamed = True
            conn.send_many(msgs)
            msgs.clear()

        for desired in self._compare_at_put:
            desired.untrack()       # see _put_additions
        self._compare_at_put = []
        lflows.fresh = pflows.fresh = None
        # A table with changes no put has sent is diffed whatever the caller
        # says (see the design note).
        lflows_changed = lflows_changed or _unsent(lflows)
        pflows_changed = pflows_changed or _unsent(pflows)
        skipped = self._skipped_last_time
        if lflows_changed or skipped:
            if lflows.change_tracked:
                update_by_track(lflows, self.installed_lflows, emit)
            else:
                update_by_compare(lflows, self.installed_lflows, emit)
        if pflows_changed or skipped:
            if pflows.change_tracked:
                update_by_track(pflows, self.installed_pflows, emit)
            else:
                update_by_compare(pflows, self.installed_pflows, emit)
        self._skipped_last_time = False

        for e in list(self.groups.unneeded()):
            x = conn.next_xid()
            append(m.bundle_add(bundle_id, m.delete_group(x, e.table_id), _BUNDLE_FLAGS))
            inflight[x] = ("group delete", e.name)
            self.groups.remove_existing(e)
        self.groups.sync()

        if was_open or streamed or len(msgs) > open_at:
            return True
        msgs.pop()          # the open request of a bundle with nothing in it
        self._open_bundle = None
        return False

    def put(
        self,
        lflows: DesiredFlowTable,
        pflows: DesiredFlowTable,
        req_cfg: int = 0,
        lflows_changed: bool = True,
        pflows_changed: bool = True,
        sb_meters: Mapping[str, MeterConfig] | None = None,
        lb_ct_flushes: Iterable[tuple[int, int, int, int, int]] = (),
    ) -> bool:
        """Bring the switch up to date with the desired tables; True if sent.

        `req_cfg` becomes `cur_cfg` once the barrier ending this put is
        answered.  `sb_meters` are the SB Meter rows (by name) for named
        meters.  `lb_ct_flushes` are (ip_proto, vip, vip_port, backend,
        backend_port) of removed load-balancer backends whose connections are
        flushed with NXT_CT_FLUSH (addresses as 128-bit ints, IPv4-mapped);
        pass them only when OVS supports it (3.1+).  A bundle left open by
        `put_partial` is completed and committed."""
        need_put = False
        if lflows_changed or pflows_changed or self._skipped_last_time or self.initial_clear \
                or self._open_bundle is not None or self._compare_at_put \
                or _unsent(lflows) or _unsent(pflows):
            need_put = True
            self._old_req_cfg = req_cfg
        elif req_cfg != self._old_req_cfg:
            if self.cur_cfg == self._old_req_cfg:
                if not self._flow_updates:
                    self.cur_cfg = req_cfg
                    self._old_req_cfg = req_cfg
            else:
                need_put = True
                self._old_req_cfg = req_cfg
        if not need_put:
            return False
        if not self.can_put():
            self._skipped_last_time = True
            return False
        self.n_puts += 1

        conn = self.conn
        msgs: list[bytes] = []

        if self.ct_zones is not None:
            for zone in self.ct_zones.take_queued_flushes():
                msgs.append(m.ct_flush_zone(conn.next_xid(), zone))

        inflight = self._open_inflight
        if self._bundle_part(msgs, inflight, lflows, pflows, lflows_changed, pflows_changed, sb_meters):
            assert self._open_bundle is not None
            msgs.append(m.bundle_ctrl(conn.next_xid(), self._open_bundle, m.OFPBCT_COMMIT_REQUEST, _BUNDLE_FLAGS))
        self._forget_open_bundle()
        msgs.extend(self.meters.messages_after_bundle(conn.next_xid))
        for proto, vip, vip_port, backend, backend_port in lb_ct_flushes:
            msgs.append(m.ct_flush_lb_backend(conn.next_xid(), proto, vip, vip_port, backend, backend_port))

        if msgs:
            bxid = conn.next_xid()
            msgs.append(m.barrier_request(bxid))
            self._inflight.append((bxid, inflight))
            conn.send_many(msgs)
            if self.ct_zones is not None:
                self.ct_zones.assign_barrier(bxid)
            ups = self._flow_updates
            while ups:
                last = ups[-1]
                if req_cfg < last[1]:
                    log.warning("req_cfg regressed", old=last[1], new=req_cfg)
                    ups.pop()
                    continue
                break
            if ups and ups[-1][1] == req_cfg:
                ups[-1][0] = bxid
            else:
                ups.append([bxid, req_cfg])
        elif self._flow_updates:
            self._flow_updates[-1][1] = req_cfg
        else:
            self.cur_cfg = req_cfg

        lflows.change_tracked = True
        pflows.change_tracked = True
        return bool(msgs)


def _unsent(desired: DesiredFlowTable) -> bool:
    """`desired` holds changes no put has diffed: tracked ones, or a whole
    table rebuilt since it was last compared (untracked)."""
    return bool(desired.tracked) or not desired.change_tracked


def _xid_le(a: int, b: int) -> bool:
    """a <= b for 32-bit wrapping xids."""
    return ((b - a) & 0xFFFFFFFF) < 0x80000000
