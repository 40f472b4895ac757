"""OVSDB connections of the agent: the local OVS database and the Southbound.

Design note
-----------
Each database is one :class:`IdlLoop`: an ``ovs.db.idl.Idl`` subclass
(:class:`TrackedIdl`) whose ``notify()`` feeds a
:class:`controller.ovsdb.tracking.ChangeTracker`, plus the transaction discipline
of the C ``ovsdb_idl_loop``: at most one transaction in flight; a new one is
opened at the start of an iteration only when the previous one finished, and
committed at the end of the iteration.  The outcome of the last commit is
kept so the main loop can force a recompute after a failure.

Only the tables and columns the agent reads are registered.  When the IDL
throws its replica away (reconnect without ``monitor_cond_since`` history it
replaces ``table.rows`` without any notification) the loop notices that the
row dictionaries changed identity and sets ``tracker.reset``; the daemon
then rebuilds its indexes and forces a full recompute.  Any (re)connection,
visible as a change of the session seqno or of ``cond_seqno`` going back to
0, is reported by :meth:`IdlLoop.run` as ``reconnected``.

Failed commits never retry in a hot loop: after an error (a constraint
violation, say, that no amount of retrying fixes) the next transaction is
opened only after an exponential :class:`CommitBackoff` delay (250 ms
doubling up to 8 s, reset by a success), and after ``try again`` only once
the replica changed since the commit was prepared (the ``skip_seqno`` rule
of the C ``ovsdb_idl_loop``).  No transaction is opened before the IDL is
monitoring (it could only answer ``try again``).  A failed commit forces no
recompute: the rows of :data:`REPLAY_TABLES` it wrote are handed to the next
engine run as tracked updates (once a new transaction can be opened), so the
incremental handlers that wrote them write them again; everything else the
agent writes is re-derived from the replica every iteration.

A reconnection whose ``monitor_cond_since`` resumes (the server still knows
our last transaction id) keeps the replica and delivers what was missed as
ordinary tracked changes: no recompute.  Only a replica that had to be thrown
away (``reset``) needs one.

A big update notification (the rows a monitor condition change brings: the
25k Logical_Flow rows of seed-500 at once) is applied in slices, one per
``run`` (:class:`TrackedIdl`, ``UPDATE_CHUNK_ROWS``), so that one iteration
never parses it whole: the first slice has every other table and the
Logical_Flow deletions, the next ones the Logical_Flow inserts and updates
(nothing refers to Logical_Flow rows, so no slice refers to a row of a later
one).  Until the last slice, :meth:`IdlLoop.has_deferred` is True (the daemon
installs nothing, the conditions are not settled: the server's reply to the
condition change is read only after the last slice), the last-transaction id
stays the one before the update (a reconnection asks for all of it again)
and the loop wakes at once; a reconnection drops the slices left and
monitors from scratch.

The SB conditional monitoring of OVN 23.03 (``update_sb_monitors``) is the
pure function :func:`sb_monitor_conditions`; :meth:`IdlLoop.set_conditions`
applies it and returns the condition seqno to wait for.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from typing import Any, Iterable, Mapping

import ovs.db.idl
import ovs.jsonrpc
import ovs.poller
import ovs.stream
import structlog

from controller.diag.coverage import COVERAGE, count_txn_status
from controller.ovsdb import idl_update, json_stream
from controller.ovsdb.tracking import (
    ROW_CREATE,
    ROW_DELETE,
    ROW_UPDATE,
    ChangeTracker,
    TableChanges,
)
from controller.vlog import RateLimiter

log = structlog.get_logger("ovsdb_idl")
json_stream.install()       # ovs.jsonrpc parses on the stdlib JSON decoder
_rl_txn = RateLimiter(per_minute=1, burst=5)     # as the C IDL's other_rl

COMMIT_BACKOFF_INITIAL_MS = 250
# Tables whose rows, written by a failed commit, are replayed as tracked
# updates: the engine writes them incrementally (binding claims, ``up``).
REPLAY_TABLES = frozenset(("Port_Binding",))
COMMIT_BACKOFF_MAX_MS = 8000

OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
SB_SCHEMA = "/usr/share/ovn/ovn-sb.ovsschema"

# Local OVS database: table -> columns the agent reads or writes.
OVS_COLUMNS: dict[str, list[str]] = {
    "Open_vSwitch": ["external_ids", "other_config", "bridges", "datapaths",
                     "iface_types", "datapath_types", "ovs_version"],
    "Bridge": ["name", "ports", "fail_mode", "other_config", "external_ids",
               "datapath_type", "protocols"],
    "Port": ["name", "interfaces", "external_ids"],
    "Interface": ["name", "type", "options", "external_ids", "ofport",
                  "ofport_request", "status", "mtu", "bfd", "bfd_status", "error"],
    "Datapath": ["capabilities"],
    "Flow_Sample_Collector_Set": ["id", "bridge", "ipfix", "external_ids"],
    # Only for the engine's OVS_qos node (a change recomputes runtime_data, as C).
    "QoS": ["type"],
    # PKI for ssl: remotes (controller.ovsdb.stream_ssl)
    "SSL": ["private_key", "certificate", "ca_cert", "bootstrap_ca_cert"],
}

# Southbound tables monitored (all columns unless listed in SB_OMIT).
SB_TABLES: tuple[str, ...] = (
    "SB_Global", "Chassis", "Chassis_Private", "Encap", "Address_Set",
    "Port_Group", "Multicast_Group", "Datapath_Binding", "Logical_DP_Group",
    "Port_Binding", "MAC_Binding", "Static_MAC_Binding", "Logical_Flow",
    "DHCP_Options", "DHCPv6_Options", "DNS", "Load_Balancer", "FDB", "Meter",
    "Meter_Band", "HA_Chassis_Group", "HA_Chassis", "Gateway_Chassis",
    "Chassis_Template_Var", "IP_Multicast", "Controller_Event", "IGMP_Group",
    "Service_Monitor", "BFD", "Mirror",
)
SB_OMIT: dict[str, tuple[str, ...]] = {
    "SB_Global": ("external_ids",),
    "Logical_Flow": ("external_ids",),
}

# Tables whose monitor condition follows the local state (23.03 §5).
SB_CONDITIONAL_TABLES: tuple[str, ...] = (
    "Port_Binding", "Logical_Flow", "Logical_DP_Group", "MAC_Binding",
    "Multicast_Group", "DNS", "Controller_Event", "IP_Multicast",
    "IGMP_Group", "Chassis_Private", "Chassis_Template_Var",
)

Condition = list[Any]


def _load_schema_json(path: str) -> dict[str, Any]:
    import json
    with open(path, encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def ovs_schema_helper(path: str = OVS_SCHEMA) -> ovs.db.idl.SchemaHelper:
    helper = ovs.db.idl.SchemaHelper(location=path)
    for table, cols in OVS_COLUMNS.items():
        helper.register_columns(table, cols)
    return helper


def sb_schema_helper(path: str = SB_SCHEMA) -> ovs.db.idl.SchemaHelper:
    schema = _load_schema_json(path)
    helper = ovs.db.idl.SchemaHelper(schema_json=schema)
    for table in SB_TABLES:
        tschema = schema["tables"].get(table)
        if tschema is None:
            continue
        omit = SB_OMIT.get(table, ())
        cols = [c for c in tschema["columns"] if c not in omit]
        helper.register_columns(table, cols)
    return helper


# Rows of one update notification applied per IDL run (see the design note).
UPDATE_CHUNK_ROWS = 1000


def _split_update(table_updates: dict[str, Any], rows: int) -> list[dict[str, Any]] | None:
    """Slices of one update2/update3 ``table_updates`` (see the design note),
    or None when it is small enough to be applied at once."""
    lflows = table_updates.get("Logical_Flow")
    if not isinstance(lflows, dict) or len(lflows) <= rows:
        return None
    first: dict[str, Any] = {t: u for t, u in table_updates.items() if t != "Logical_Flow"}
    first["Logical_Flow"] = {u: r for u, r in lflows.items()
                             if isinstance(r, dict) and "delete" in r}
    rest = [(u, r) for u, r in lflows.items() if u not in first["Logical_Flow"]]
    out = [first]
    for i in range(0, len(rest), rows):
        out.append({"Logical_Flow": dict(rest[i:i + rows])})
    return out


class TrackedIdl(ovs.db.idl.Idl):  # type: ignore[misc]
    """An IDL whose row notifications are collected into a ChangeTracker."""

    def __init__(self, remote: str, helper: ovs.db.idl.SchemaHelper,
                 tracker: ChangeTracker, probe_interval: int | None = None,
                 leader_only: bool = False) -> None:
        super().__init__(remote, helper, probe_interval=probe_interval,
                         leader_only=leader_only)
        self.tracker = tracker
        # The OVS 3.1 Python IDL ignores "monitor_canceled" (sent to a
        # db-change-aware client when its database is converted or removed):
        # its replica would silently stop following the server.  The
        # notification is noticed here and acted on by IdlLoop.run().
        self.monitor_canceled = False
        # Slices of a big update still to apply (design note), the session
        # seqno they belong to, and whether this run applied one already.
        self.deferred: list[Any] = []
        self._deferred_seqno = -1
        self._slice_taken = False
        self.chunk_rows = UPDATE_CHUNK_ROWS
        recv = self._session.recv
        sess = self._session

        def recv_watching() -> Any:
            if self.deferred and sess.get_seqno() != self._deferred_seqno:
                self.deferred = []          # that connection is gone
            if self.deferred:
                if self._slice_taken:
                    return None             # the next slice in the next run
                self._slice_taken = True
                return self.deferred.pop(0)
            msg = recv()
            if msg is None or msg.type != ovs.jsonrpc.Message.T_NOTIFY:
                return msg
            if msg.method == "monitor_canceled":
                self.monitor_canceled = True
            elif msg.method in ("update2", "update3") and len(msg.params) in (2, 3) \
                    and isinstance(msg.params[-1], dict):
                parts = _split_update(msg.params[-1], self.chunk_rows)
                if parts is not None:
                    self.deferred = [self._part(msg, p, i == len(parts) - 1)
                                     for i, p in enumerate(parts)]
                    self._deferred_seqno = sess.get_seqno()
                    self._slice_taken = True
                    return self.deferred.pop(0)
            return msg
        self._session.recv = recv_watching

    def _part(self, msg: Any, table_updates: dict[str, Any], last: bool) -> Any:
        params = list(msg.params)
        params[-1] = table_updates
        if len(params) == 3 and not last:
            params[1] = self.last_id        # not caught up until the last slice
        return ovs.jsonrpc.Message(msg.type, msg.method, params, msg.result, msg.error,
                                   msg.id)

    def run(self) -> Any:
        self._slice_taken = False
        return super().run()

    # The library's private row update steps, faster (controller.ovsdb.idl_update).
    def _Idl__row_update(self, table: Any, row: Any, row_json: dict[str, Any]) -> bool:
        return idl_update.row_update(self, table, row, row_json)

    def _Idl__apply_diff(self, table: Any, row: Any, row_diff: dict[str, Any]) -> Any:
        return idl_update.apply_diff(self, table, row, row_diff)

    def _Idl__add_default(self, table: Any, row_update: dict[str, Any]) -> None:
        idl_update.add_default(self, table, row_update)

    def restart_fsm(self) -> None:
        if self.deferred:
            # Reconnected with slices of an update unapplied: monitor from
            # scratch (the replica is replaced, the agent recomputes).
            self.deferred = []
            self.last_id = str(uuidlib.UUID(int=0))
        super().restart_fsm()

    def notify(self, event: str, row: Any, updates: Any = None) -> None:
        table = row._table.name
        if event == ovs.db.idl.ROW_CREATE:
            self.tracker.record(table, ROW_CREATE, row)
        elif event == ovs.db.idl.ROW_UPDATE:
            old = updates.__dict__.get("_data") if updates is not None else None
            self.tracker.record(table, ROW_UPDATE, row, dict(old) if old else {})
        elif event == ovs.db.idl.ROW_DELETE:
            self.tracker.record(table, ROW_DELETE, row)


class RunResult:
    __slots__ = ("changed", "reconnected", "reset")

    def __init__(self, changed: bool, reconnected: bool, reset: bool) -> None:
        self.changed = changed
        self.reconnected = reconnected
        self.reset = reset


class CommitBackoff:
    """Delay before the next transaction after failed commits: doubles per
    consecutive failure up to a cap, cleared by a success."""

    __slots__ = ("initial_ms", "max_ms", "delay_ms", "retry_at")

    def __init__(self, initial_ms: int = COMMIT_BACKOFF_INITIAL_MS,
                 max_ms: int = COMMIT_BACKOFF_MAX_MS) -> None:
        self.initial_ms = initial_ms
        self.max_ms = max_ms
        self.delay_ms = 0
        self.retry_at: float | None = None      # time.monotonic() seconds

    def failed(self, now: float) -> None:
        self.delay_ms = min(self.max_ms, max(self.initial_ms, self.delay_ms * 2))
        self.retry_at = now + self.delay_ms / 1000.0

    def succeeded(self) -> None:
        self.delay_ms = 0
        self.retry_at = None

    def ready(self, now: float) -> bool:
        return self.retry_at is None or now >= self.retry_at

    def wait(self, poller: ovs.poller.Poller, now: float) -> None:
        if self.retry_at is not None and now < self.retry_at:
            poller.timer_wait(max(1, int((self.retry_at - now) * 1000) + 1))


class IdlLoop:
    """One database connection with change tracking and a transaction loop."""

    def __init__(self, name: str, remote: str, helper: ovs.db.idl.SchemaHelper,
                 probe_interval: int | None = None, leader_only: bool = False) -> None:
        self.name = name
        self.remote = remote
        self.tracker = ChangeTracker(())
        self.idl = TrackedIdl(remote, helper, self.tracker, probe_interval, leader_only)
        for name in self.idl.tables:
            self.tracker.tables.setdefault(name, TableChanges(name))
        self.txn: ovs.db.idl.Transaction | None = None          # open this iteration
        self.committing: ovs.db.idl.Transaction | None = None   # in flight
        self.last_commit_status: str | None = None
        self.commit_failed = False
        self._session_seqno: int | None = None
        self._rows_ids: dict[str, int] = {}
        self._cond_seqno = 0
        self._connected_once = False
        self._next_cond: dict[str, Condition] = {}
        self.backoff = CommitBackoff()
        self._precommit_seqno = 0
        self._skip_seqno: int | None = None
        self._resyncing = False      # reconnected, new monitor not yet in place
        self._committing_rows: list[tuple[str, uuidlib.UUID]] = []
        self.replay: list[tuple[str, uuidlib.UUID]] = []   # written by failed commits

    # -- access -------------------------------------------------------
    def table(self, name: str) -> Mapping[uuidlib.UUID, Any]:
        rows: Mapping[uuidlib.UUID, Any] = self.idl.tables[name].rows
        return rows

    def first(self, name: str) -> Any | None:
        for row in self.idl.tables[name].rows.values():
            return row
        return None

    def has_table(self, name: str) -> bool:
        return name in self.idl.tables

    @property
    def connected(self) -> bool:
        return bool(self.idl._session.is_connected())

    @property
    def has_ever_connected(self) -> bool:
        return bool(self.idl.has_ever_connected())

    @property
    def cond_seqno(self) -> int:
        return int(self.idl.cond_seqno)

    def set_probe_interval(self, ms: int) -> None:
        if ms and ms < 1000:
            ms = 1000
        rc = self.idl._session.reconnect
        if rc.get_probe_interval() != ms:
            rc.set_probe_interval(ms)

    # -- loop ---------------------------------------------------------
    def run(self) -> RunResult:
        """Process incoming messages; open this iteration's transaction.

        Must be called once per iteration before anything reads the tables.
        """
        assert self.txn is None, "previous iteration did not call commit()"
        seq_before = self.idl.change_seqno
        self.idl.run()
        if self.idl.monitor_canceled:
            # Monitor again on a fresh session (at once: no backoff); the new
            # monitor replaces the replica in one update, so the installed
            # flows stay until the recompute that follows replaces them.
            self.idl.monitor_canceled = False
            log.info(f"{self.remote}: {self.name} monitor canceled by the server "
                     "(database converted?), monitoring again")
            self.idl._session.reset_backoff()
            self.idl.force_reconnect()
        # A new session once connected again (each failed connection attempt
        # in between also moves the session seqno: not a reconnection).
        reconnected = False
        if self.connected:
            sess_seqno = self.idl._session.get_seqno()
            COVERAGE.inc("stream_open", sess_seqno != self._session_seqno)  # a new connection
            if self._session_seqno is not None and sess_seqno != self._session_seqno:
                reconnected = True
            self._session_seqno = sess_seqno
        reset = False
        for name, table in self.idl.tables.items():
            ident = id(table.rows)
            old = self._rows_ids.get(name)
            if old is not None and old != ident:
                reset = True
            self._rows_ids[name] = ident
        if reset:
            self.tracker.reset = True
        # cond_seqno goes back to 0 when the IDL starts a fresh monitor (the
        # same reconnection when the session already reported it).
        if self.idl.cond_seqno < self._cond_seqno and not self._resyncing:
            reconnected = True
        self._cond_seqno = self.idl.cond_seqno
        self._resyncing = (self._resyncing or reconnected) \
            and self.idl.state != self.idl.IDL_S_MONITORING
        # Transaction bookkeeping (ovsdb_idl_loop_run).
        if self.committing is not None:
            status = self.committing.commit()
            count_txn_status(status)
            if status != ovs.db.idl.Transaction.INCOMPLETE:
                self._finish_commit(self.committing, status, self._committing_rows)
        if self.committing is None and self.connected and self.idl.has_ever_connected() \
                and self.idl.state == self.idl.IDL_S_MONITORING \
                and self.idl.change_seqno != self._skip_seqno \
                and self.backoff.ready(time.monotonic()):
            self._skip_seqno = None
            self.txn = ovs.db.idl.Transaction(self.idl)
            self._replay_failed_rows()
        return RunResult(self.idl.change_seqno != seq_before, reconnected, reset)

    def _replay_failed_rows(self) -> None:
        """Rows a failed commit wrote become tracked updates of this iteration
        (no old values: nothing changed in the replica), so the engine
        handlers that wrote them consider them again."""
        for table, u in self.replay:
            row = self.idl.tables[table].rows.get(u) if table in self.idl.tables else None
            if row is not None:
                self.tracker.record(table, ROW_UPDATE, row, {})
        self.replay = []

    def _finish_commit(self, txn: ovs.db.idl.Transaction, status: str,
                       rows: list[tuple[str, uuidlib.UUID]]) -> None:
        T = ovs.db.idl.Transaction
        self.last_commit_status = status
        self.commit_failed = status not in (T.SUCCESS, T.UNCHANGED)
        self._committing_rows = []
        self.committing = None
        if not self.commit_failed:
            self.backoff.succeeded()
            return
        self.replay.extend(r for r in rows if r[0] in REPLAY_TABLES)
        if status == T.TRY_AGAIN:
            # Retry once the replica moved past what the commit was built on.
            self._skip_seqno = self._precommit_seqno
        else:
            self.backoff.failed(time.monotonic())
            log.warn_rl(_rl_txn, f"transaction error: {txn.get_error()}")

    def commit(self) -> str | None:
        """Commit the transaction opened by run() (if any); never blocks.

        Returns the immediate status, or None when no transaction was open.
        A commit that is still in flight is polled by the next run().
        """
        txn = self.txn
        self.txn = None
        if txn is None:
            return None
        self._precommit_seqno = self.idl.change_seqno
        rows = [(r._table.name, r.uuid) for r in getattr(txn, "_txn_rows", {}).values()]
        status: str = txn.commit()
        count_txn_status(status)
        if status == ovs.db.idl.Transaction.INCOMPLETE:
            self.committing = txn
            self._committing_rows = rows
        else:
            self._finish_commit(txn, status, rows)
        return status

    def has_deferred(self) -> bool:
        """Part of an update is still to be applied (see the design note)."""
        return bool(self.idl.deferred)

    def wait(self, poller: ovs.poller.Poller) -> None:
        self.idl.wait(poller)
        if self.idl.deferred:
            poller.immediate_wake()
        if self.committing is not None:
            self.committing.wait(poller)
        self.backoff.wait(poller, time.monotonic())

    def clear_tracked(self) -> None:
        self.tracker.clear()

    def force_reconnect(self) -> None:
        self.idl.force_reconnect()

    def set_remote(self, remote: str) -> bool:
        """Point the session at another remote (``ovsdb_idl_set_remote``),
        keeping the replica: the monitor on the new server replaces it in one
        update (or, for the same database, ``monitor_cond_since`` sends only
        what changed).  False for passive remotes (a new IdlLoop is needed)."""
        sess = self.idl._session
        new = self.idl._parse_remotes(remote)
        if any(ovs.stream.PassiveStream.is_valid_name(r) for r in new + list(sess.remotes)):
            return False
        sess.remotes = new
        sess.next_remote = 0
        sess.pick_remote()
        sess.reset_backoff()
        sess.force_reconnect()
        self.remote = remote
        return True

    def close(self) -> None:
        if self.txn is not None:
            self.txn.abort()
            self.txn = None
        self.idl.close()

    # -- conditional monitoring ----------------------------------------
    def conditions_settled(self) -> bool:
        """True once the server has acknowledged every monitor condition we
        set (nothing requested in flight, nothing new waiting to be sent)."""
        idl = self.idl
        if idl.state != idl.IDL_S_MONITORING or idl.cond_changed or idl.deferred:
            return False
        return not any(t.condition_state.requested is not None
                       or t.condition_state.new is not None for t in idl.tables.values())

    def set_conditions(self, conditions: Mapping[str, Condition]) -> int:
        """Apply monitor conditions; returns the cond seqno at which they hold.

        (The Python IDL's own return value of ``cond_change`` is unreliable, so
        the expectation is computed here like ``ovsdb_idl_set_condition``.)
        """
        tables = self.idl.tables.values()
        in_flight = any(t.condition_state.requested is not None for t in tables)
        for table, cond in conditions.items():
            if table in self.idl.tables:
                self.idl.cond_change(table, cond)
        pending_new = any(t.condition_state.new is not None for t in tables)
        return int(self.idl.cond_seqno) + int(in_flight) + int(pending_new)


def _uuid_atom(u: uuidlib.UUID) -> list[str]:
    return ["uuid", str(u)]


def sb_monitor_conditions(chassis_name: str | None,
                          chassis_uuid: uuidlib.UUID | None,
                          local_lports: Iterable[str],
                          local_datapaths: Iterable[uuidlib.UUID],
                          monitor_all: bool) -> dict[str, Condition]:
    """The SB monitor conditions of ``update_sb_monitors`` (OVN 23.03).

    A condition is a list of OVSDB clauses combined with OR; ``[True]`` matches
    every row and ``[False]`` none.
    """
    every: Condition = [True]
    if monitor_all:
        return {t: list(every) for t in SB_CONDITIONAL_TABLES}
    pb: Condition = [["type", "==", "patch"], ["type", "==", "chassisredirect"],
                     ["type", "==", "external"]]
    lf: Condition = []
    mb: Condition = []
    mg: Condition = []
    dns: Condition = []
    ce: Condition = []
    ipm: Condition = []
    igmp: Condition = []
    chprv: Condition = []
    tv: Condition = []
    if chassis_uuid is not None and chassis_name is not None:
        ch = _uuid_atom(chassis_uuid)
        pb.append(["chassis", "==", ch])
        pb.append(["requested_chassis", "==", ch])
        pb.append(["options", "includes", ["map", [["l2gateway-chassis", chassis_name]]]])
        pb.append(["options", "includes", ["map", [["l3gateway-chassis", chassis_name]]]])
        ce.append(["chassis", "==", ch])
        igmp.append(["chassis", "==", ch])
        chprv.append(["name", "==", chassis_name])
        tv.append(["chassis", "==", chassis_name])
    else:
        chprv = [True]
        pb.append(["type", "==", "l2gateway"])
        pb.append(["type", "==", "l3gateway"])
    for name in sorted(set(local_lports)):
        pb.append(["logical_port", "==", name])
        pb.append(["parent_port", "==", name])
    dps = sorted(set(local_datapaths), key=str)
    for dp in dps:
        a = _uuid_atom(dp)
        pb.append(["datapath", "==", a])
        lf.append(["logical_datapath", "==", a])
        mb.append(["datapath", "==", a])
        mg.append(["datapath", "==", a])
        dns.append(["datapaths", "includes", ["set", [a]]])
        ipm.append(["datapath", "==", a])
    if dps:
        lf.append(["logical_dp_group", "!=", ["set", []]])
    return {
        "Port_Binding": pb, "Logical_Flow": lf or [False],
        "Logical_DP_Group": list(every), "MAC_Binding": mb or [False],
        "Multicast_Group": mg or [False], "DNS": dns or [False],
        "Controller_Event": ce or [False], "IP_Multicast": ipm or [False],
        "IGMP_Group": igmp or [False], "Chassis_Private": chprv or [False],
        "Chassis_Template_Var": tv or [False],
    }


def default_ovs_remote() -> str:
    import os
    rundir = os.environ.get("OVS_RUNDIR", "/var/run/openvswitch")
    return f"unix:{rundir}/db.sock"


def open_ovs(remote: str | None = None) -> IdlLoop:
    loop = IdlLoop("OVS", remote or default_ovs_remote(), ovs_schema_helper(),
                   probe_interval=0, leader_only=False)
    from controller.ovsdb import stream_ssl
    stream_ssl.use_ovs_ssl_table(lambda: loop.first("SSL") if loop.has_table("SSL") else None)
    return loop


def open_sb(remote: str, probe_interval: int | None) -> IdlLoop:
    return IdlLoop("OVNSB", remote, sb_schema_helper(),
                   probe_interval=probe_interval, leader_only=False)


def default_sb_probe_interval(remote: str) -> int:
    """5 s for tcp/ssl remotes, disabled for unix sockets (set_idl_probe_interval)."""
    first = remote.split(",")[0].strip()
    return 0 if first.startswith(("unix:", "punix:")) else 5000
