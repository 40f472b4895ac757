"""Logging in the style of OVS vlog, built on structlog.

Design note
-----------
Every event is one line, formatted like the C daemons' log files::

    2026-11-30T05:15:49.123Z|00001|binding|INFO|Claiming lport X for this chassis. lport=X

i.e. ``timestamp|sequence|module|LEVEL|event`` followed by the event's extra
key=value pairs. There are three destinations, as in OVS: ``console``
(stderr), ``file`` (``--log-file``, created mode 0640) and ``syslog``
(``--syslog-method``: libc by default, or ``unix:PATH`` / ``udp:IP:PORT``;
messages at INFO and above by default, as the C daemons). Each destination
has a pattern (``vlog/set PATTERN:file:...``, ``vlog/list-pattern``) in OVS's
``%``-escape language; the default patterns are rendered by a fast path.

Levels are kept per module and per destination, as OVS does (``vlog/set``,
``-vbinding:file:dbg``). Each module holds one precomputed number, the most
verbose level any open destination wants, so a filtered-out call costs one
attribute compare and no structlog processing.

structlog is configured globally when this module is imported, so code that
must not import ``controller`` (``ofctrl``, ``physical``) can simply use
``structlog.get_logger("ofctrl")`` (or ``structlog.get_logger(module="ofctrl")``)
and still get this format and these levels. Dotted names keep their last part
(``ofctrl.conn`` -> ``conn``).

Repeated warnings go through a :class:`RateLimiter`
(``log.warn_rl(rl, "event", ...)``), which, like OVS, reports how many
messages it dropped once it lets one through again; ``vlog/disable-rate-limit
[MODULE]...`` turns that off per module.

The ``ovs`` Python library logs through its own ``ovs.vlog``;
:func:`bridge_ovs_library` routes those messages (``reconnect``, ``jsonrpc``,
``stream``...) into this module with C's module names and levels.

Module state (levels, the log file, the sequence number) is process-global,
like OVS vlog; writes are serialised by a lock.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, MutableMapping
from typing import IO, Any

import structlog
from structlog.typing import EventDict, WrappedLogger

from controller.vlog_format import (DEFAULT_PATTERNS, SYSLOG_FACILITIES, SYSLOG_PREFIX,
                                    LibcSyslog, Piece, Record, SocketSyslog, Syslog,
                                    compile_pattern, render_pattern)

# OVS order: a larger number is more verbose.
OFF, EMER, ERR, WARN, INFO, DBG = range(6)
LEVEL_NAMES = ("OFF", "EMER", "ERR", "WARN", "INFO", "DBG")
_LEVEL_BY_NAME = {name.lower(): i for i, name in enumerate(LEVEL_NAMES)}
_LEVEL_BY_NAME.update({"debug": DBG, "warning": WARN, "error": ERR, "critical": EMER,
                       "emergency": EMER, "err": ERR, "warn": WARN})

DESTINATIONS = ("console", "syslog", "file")
CONSOLE, SYSLOG, FILE = range(3)
_DEFAULT_LEVELS = [INFO, INFO, INFO]     # OVS defaults: every destination at INFO
# syslog severity of each level (OFF never reaches it)
_SYSLOG_SEVERITY = (7, 0, 3, 4, 6, 7)
# structlog method name -> OVS level
_METHOD_LEVEL = {
    "debug": DBG, "dbg": DBG, "info": INFO, "msg": INFO, "warning": WARN, "warn": WARN,
    "error": ERR, "err": ERR, "exception": ERR, "critical": EMER, "emer": EMER,
    "fatal": EMER,
}

# Modules of the C ovn-controller and of this project that exist from the start,
# so that `-vbinding:dbg` / `vlog/set` work before the module logs anything.
# The list is the C ovn-controller 23.03.1's `vlog/list` plus ours.
KNOWN_MODULES = (
    "acl_log", "actions", "backtrace", "binding", "bundle", "chassis", "command_line",
    "conntrack", "conntrack_tp", "coverage", "ct_dpif", "daemon", "daemon_unix",
    "dns_resolve", "dpdk", "dpif", "dpif_lookup_autovalidator", "dpif_lookup_generic",
    "dpif_mfex_extract_study", "dpif_netdev", "dpif_netdev_extract", "dpif_netdev_impl",
    "dpif_netdev_lookup", "dpif_netlink", "dpif_netlink_rtnl", "encaps", "entropy", "expr",
    "extend_table", "fatal_signal", "features", "flow", "ha_chassis", "hmap", "if_status",
    "inc_proc_eng", "ipf", "jsonrpc", "lb", "ldata", "lflow", "lflow_cache", "lockfile",
    "lport", "mac_learn", "main", "memory", "memory_trim", "meta_flow", "native_tnl",
    "netdev", "netdev_linux", "netdev_offload", "netdev_offload_tc", "netdev_vport",
    "netlink", "netlink_conntrack", "netlink_devlink", "netlink_notifier", "netlink_socket",
    "nx_match", "odp_execute", "odp_execute_impl", "odp_util", "ofctrl", "ofp_actions",
    "ofp_bundle", "ofp_connection", "ofp_errors", "ofp_flow", "ofp_group", "ofp_match",
    "ofp_meter", "ofp_monitor", "ofp_msgs", "ofp_packet", "ofp_port", "ofp_protocol",
    "ofp_queue", "ofp_table", "ofp_util", "ovn_bfd", "ovn_util", "ovs_numa", "ovs_rcu",
    "ovs_replay", "ovs_router", "ovs_thread", "ovsdb_cs", "ovsdb_error", "ovsdb_idl",
    "ovsport", "ox_stat", "patch", "physical", "pinctrl", "pmd_perf", "poll_loop",
    "port_mirror", "process", "rconn", "reconnect", "resource_dep", "route_table", "sha1",
    "signals", "socket_util", "socket_util_unix", "stopwatch", "stream", "stream_fd",
    "stream_replay", "stream_ssl", "stream_tcp", "stream_unix", "svec", "tc", "timeval",
    "unixctl", "userspace_tso", "util", "uuid", "vconn", "vconn_stream", "vif_plug",
    "vif_plug_dummy", "vif_plug_provider", "vif_plug_representor", "vlog",
    # ours
    "ofctrl_seqno", "ct_zone", "nb_cfg",
)


def level_from_name(name: str) -> int:
    """'info' / 'INFO' / 'dbg' / 'debug' -> level number; ValueError if unknown."""
    try:
        return _LEVEL_BY_NAME[name.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown log level {name!r}") from None


def module_name(name: str | None) -> str:
    """Normalise a logger name to a vlog module name."""
    if not name:
        return "main"
    return name.rsplit(".", 1)[-1]


class _Module:
    """Levels of one vlog module; `max_level` is what the hot path compares."""

    __slots__ = ("name", "levels", "max_level", "rate_limited")

    def __init__(self, name: str, levels: Iterable[int]) -> None:
        self.name = name
        self.levels = list(levels)
        self.max_level = OFF
        self.rate_limited = True
        self.recompute()

    def recompute(self) -> None:
        active = max(self.levels[CONSOLE], self.levels[SYSLOG])
        if _STATE.log_file is not None:
            active = max(active, self.levels[FILE])
        self.max_level = active


def _program() -> str:
    from controller import version
    return version.PROGRAM


def set_syslog_method(method: str | None) -> None:
    """--syslog-method=(libc|unix:FILE|udp:IP:PORT); None or "libc" = syslog(3)."""
    _STATE.syslog = LibcSyslog() if not method or method == "libc" else SocketSyslog(method)


def add_syslog_target(target: str) -> None:
    """--syslog-target=HOST:PORT: also send syslog messages there over UDP."""
    _STATE.syslog_targets.append(SocketSyslog(f"udp:{target}"))


class _State:
    __slots__ = ("modules", "log_file", "log_path", "seq", "lock", "console", "patterns",
                 "compiled", "facility", "syslog", "syslog_targets", "start")

    def __init__(self) -> None:
        self.modules: dict[str, _Module] = {}
        self.log_file: IO[str] | None = None
        self.log_path: str | None = None
        self.seq = 0
        # reentrant: a fatal-signal handler may log while the main thread holds it
        self.lock = threading.RLock()
        # None means "whatever sys.stderr is at write time" (pytest capture friendly).
        self.console: IO[str] | None = None
        self.patterns = list(DEFAULT_PATTERNS)
        # None = the default pattern of that destination (fast path)
        self.compiled: list[list[Piece] | None] = [None, None, None]
        self.facility = "daemon"
        self.syslog: Syslog = LibcSyslog()
        self.syslog_targets: list[Syslog] = []       # --syslog-target=HOST:PORT
        self.start = time.time()


_STATE = _State()


def _module(name: str) -> _Module:
    mod = _STATE.modules.get(name)
    if mod is None:
        mod = _Module(name, _DEFAULT_LEVELS)
        _STATE.modules[name] = mod
    return mod


def _source_module_names() -> list[str]:
    """Stems of our source files: `structlog.get_logger(__name__)` in any of them
    names a module that `-v`/`vlog/set` must know before its first event."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    names = []
    for pkg in ("controller", "controller/lflow", "ofctrl", "physical"):
        try:
            entries = os.listdir(os.path.join(root, pkg))
        except OSError:
            continue
        for entry in entries:
            stem, ext = os.path.splitext(entry)
            if ext == ".py" and not stem.startswith("_"):
                names.append(stem)
            elif ext == "" and os.path.isdir(os.path.join(root, pkg, entry)) \
                    and not entry.startswith(("_", ".")):
                names.append(entry)
    return names


for _name in (*KNOWN_MODULES, *_source_module_names()):
    _module(_name)


# --------------------------------------------------------------------------- output


def _format_value(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if text == "" or any(c in text for c in ' ="\n\t|'):
        return json.dumps(text)
    return text


def _format_exc(exc_info: Any) -> str:
    """The traceback of `exc_info` as text ("" when there is none)."""
    if exc_info is True:
        exc_info = sys.exc_info()
    elif isinstance(exc_info, BaseException):
        exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
    if not isinstance(exc_info, tuple) or exc_info[0] is None:
        return ""
    return "".join(traceback.format_exception(*exc_info)).rstrip()


def _timestamp(now: float, millis: bool = True) -> str:
    secs = int(now)
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))
    return f"{base}.{int((now - secs) * 1000):03d}Z" if millis else base + "Z"


def _render(_logger: WrappedLogger, method_name: str, event_dict: EventDict) -> Any:
    """Final structlog processor: build the vlog line; the sink decides where it goes."""
    level = event_dict.pop("_vlog_level", None)
    if level is None:
        level = _METHOD_LEVEL.get(method_name, INFO)
    mod_name = module_name(event_dict.pop("module", None))
    event = event_dict.pop("event", "")
    exc_info = event_dict.pop("exc_info", None)
    parts = [str(event)]
    for key, value in event_dict.items():
        parts.append(f"{key}={_format_value(value)}")
    trace: tuple[str, ...] = ()
    if exc_info:
        # A traceback follows its event as ERR records of the same module, one
        # per line, each with the full vlog prefix (so every line of the log
        # still parses, and grepping for |ERR| finds the whole traceback).
        trace = tuple(ln for ln in _format_exc(exc_info).splitlines() if ln.strip())
    return (), {"module": mod_name, "level": level, "text": " ".join(parts), "trace": trace}


class _Sink:
    """The wrapped logger: every method writes one rendered line."""

    __slots__ = ("module",)

    def __init__(self, module: str | None = None) -> None:
        self.module = module

    def _write(self, *, module: str, level: int, text: str, trace: tuple[str, ...] = ()) -> None:
        self._record(module, level, text)
        for line in trace:
            self._record(module, ERR, line)

    def _record(self, module: str, level: int, text: str) -> None:
        mod = _module(module)
        levels = mod.levels
        to_console = level <= levels[CONSOLE]
        to_file = _STATE.log_file is not None and level <= levels[FILE]
        to_syslog = level <= levels[SYSLOG]
        if not (to_console or to_file or to_syslog):
            return
        thread = threading.current_thread()
        sub = "" if thread is threading.main_thread() else thread.name
        field = f"{module}({sub})" if sub else module           # "%c%T"
        with _STATE.lock:
            _STATE.seq += 1
            seq = _STATE.seq
            now = time.time()
            compiled = _STATE.compiled
            rec: Record | None = None
            if any(p is not None for p in compiled) or to_syslog:
                rec = Record(seq, module, LEVEL_NAMES[level], text, now, _program(),
                             SYSLOG_FACILITIES.index(_STATE.facility) * 8
                             + _SYSLOG_SEVERITY[level], _STATE.start, sub)
            if to_console:
                pat = compiled[CONSOLE]
                if pat is None or rec is None:
                    line = (f"{_timestamp(now, False)}|{seq:05d}|{field}|"
                            f"{LEVEL_NAMES[level]}|{text}\n")
                else:
                    line = render_pattern(pat, rec) + "\n"
                stream = _STATE.console or sys.stderr
                try:
                    stream.write(line)
                    stream.flush()
                except (OSError, ValueError):
                    pass
            if to_file and _STATE.log_file is not None:
                pat = compiled[FILE]
                if pat is None or rec is None:
                    line = (f"{_timestamp(now)}|{seq:05d}|{field}|"
                            f"{LEVEL_NAMES[level]}|{text}\n")
                else:
                    line = render_pattern(pat, rec) + "\n"
                try:
                    _STATE.log_file.write(line)
                    _STATE.log_file.flush()
                except (OSError, ValueError):
                    pass
            if to_syslog and rec is not None:
                pat = compiled[SYSLOG]
                msg = (f"ovs|{seq:05d}|{field}|{LEVEL_NAMES[level]}|{text}" if pat is None
                       else render_pattern(pat, rec))
                for dest in (_STATE.syslog, *_STATE.syslog_targets):
                    try:
                        dest.send(rec, msg)
                    except (OSError, ValueError):
                        pass

    debug = dbg = info = msg = warning = warn = error = err = critical = emer = _write
    exception = fatal = log = _write


# --------------------------------------------------------------------------- rate limiting


class RateLimiter:
    """Token bucket for repeated messages: `per_minute` on average, bursts of `burst`.

    `allow()` says whether to emit now. The number of messages refused since the
    last allowed one is kept so the next emitted message can report it.
    """

    __slots__ = ("per_second", "burst", "_tokens", "_last", "_dropped",
                 "_first_drop", "_last_drop", "_clock")

    def __init__(self, per_minute: float = 5, burst: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.per_second = per_minute / 60.0
        self.burst = float(burst if burst is not None else max(1, int(per_minute)))
        self._clock = clock
        self._tokens = self.burst
        self._last = clock()
        self._dropped = 0
        self._first_drop = 0.0
        self._last_drop = 0.0

    def allow(self) -> bool:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.per_second)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        if self._dropped == 0:
            self._first_drop = now
        self._dropped += 1
        self._last_drop = now
        return False

    @property
    def dropped(self) -> int:
        return self._dropped

    def take_dropped(self) -> tuple[int, float, float] | None:
        """(count, seconds between first drop and now, seconds since last drop) and reset."""
        if not self._dropped:
            return None
        now = self._clock()
        result = (self._dropped, now - self._first_drop, now - self._last_drop)
        self._dropped = 0
        return result


# --------------------------------------------------------------------------- loggers


class VlogLogger(structlog.BoundLoggerBase):
    """structlog bound logger with a per-module level check up front."""

    def __init__(self, logger: WrappedLogger, processors: Iterable[Any],
                 context: MutableMapping[str, Any]) -> None:
        name = context.get("module") or getattr(logger, "module", None)
        mod = module_name(name)
        ctx = context if isinstance(context, dict) else dict(context)
        if ctx.get("module") != mod:
            ctx = dict(ctx)
            ctx["module"] = mod
        super().__init__(logger, processors, ctx)
        self._mod = _module(mod)

    def is_enabled(self, level: int) -> bool:
        return level <= self._mod.max_level

    def _emit(self, level: int, event: str | None, kw: dict[str, Any]) -> None:
        kw["_vlog_level"] = level
        self._proxy_to_logger(LEVEL_NAMES[level].lower(), event, **kw)

    def debug(self, event: str | None = None, **kw: Any) -> None:
        if DBG <= self._mod.max_level:
            self._emit(DBG, event, kw)

    def info(self, event: str | None = None, **kw: Any) -> None:
        if INFO <= self._mod.max_level:
            self._emit(INFO, event, kw)

    def warning(self, event: str | None = None, **kw: Any) -> None:
        if WARN <= self._mod.max_level:
            self._emit(WARN, event, kw)

    def error(self, event: str | None = None, **kw: Any) -> None:
        if ERR <= self._mod.max_level:
            self._emit(ERR, event, kw)

    def critical(self, event: str | None = None, **kw: Any) -> None:
        if EMER <= self._mod.max_level:
            self._emit(EMER, event, kw)

    def exception(self, event: str | None = None, **kw: Any) -> None:
        if ERR <= self._mod.max_level:
            kw.setdefault("exc_info", True)
            self._emit(ERR, event, kw)

    def log(self, level: int, event: str | None = None, **kw: Any) -> None:
        if level <= self._mod.max_level and level > OFF:
            self._emit(level, event, kw)

    # OVS spellings
    dbg = debug
    warn = warning
    err = error
    emer = critical
    msg = info

    def log_rl(self, rl: RateLimiter, level: int, event: str | None = None,
               **kw: Any) -> None:
        """Log unless `rl` says the message is too frequent (VLOG_*_RL)."""
        if level > self._mod.max_level or level <= OFF:
            return
        if not self._mod.rate_limited:
            self._emit(level, event, kw)
            return
        if not rl.allow():
            return
        dropped = rl.take_dropped()
        if dropped is not None:
            count, span, since = dropped
            self._emit(level, f"Dropped {count} log messages in last {span:.0f} seconds "
                       f"(most recently, {since:.0f} seconds ago) due to excessive rate", {})
        self._emit(level, event, kw)

    def dbg_rl(self, rl: RateLimiter, event: str | None = None, **kw: Any) -> None:
        self.log_rl(rl, DBG, event, **kw)

    def info_rl(self, rl: RateLimiter, event: str | None = None, **kw: Any) -> None:
        self.log_rl(rl, INFO, event, **kw)

    def warn_rl(self, rl: RateLimiter, event: str | None = None, **kw: Any) -> None:
        self.log_rl(rl, WARN, event, **kw)

    def err_rl(self, rl: RateLimiter, event: str | None = None, **kw: Any) -> None:
        self.log_rl(rl, ERR, event, **kw)


_PROCESSORS: list[Any] = [structlog.contextvars.merge_contextvars, _render]


def _logger_factory(*args: Any) -> _Sink:
    return _Sink(str(args[0]) if args and args[0] is not None else None)


def _configure_structlog() -> None:
    structlog.configure(
        processors=_PROCESSORS,
        wrapper_class=VlogLogger,
        logger_factory=_logger_factory,
        cache_logger_on_first_use=True,
    )


_configure_structlog()


def get_logger(module: str, **initial: Any) -> VlogLogger:
    """The logger of a vlog module (e.g. "binding"); extra kw are bound context."""
    mod = module_name(module)
    context: dict[str, Any] = {"module": mod}
    context.update(initial)
    return VlogLogger(_Sink(mod), _PROCESSORS, context)


# --------------------------------------------------------------------------- levels


def set_level(module: str, level: int | str, destination: str = "any") -> None:
    """Set `module`'s level ("any" = every module) for one destination or all."""
    lvl = level_from_name(level) if isinstance(level, str) else int(level)
    if not OFF <= lvl <= DBG:
        raise ValueError(f"log level out of range: {level!r}")
    dest = destination.lower()
    if dest == "any":
        dests = list(range(len(DESTINATIONS)))
    elif dest in DESTINATIONS:
        dests = [DESTINATIONS.index(dest)]
    else:
        raise ValueError(f'unknown destination "{destination}"')
    mod = module.lower()
    if mod == "any":
        targets = list(_STATE.modules.values())
        for d in dests:
            _DEFAULT_LEVELS[d] = lvl
    else:
        if mod not in _STATE.modules:
            raise ValueError(f'no destination, level, or module "{module}"')
        targets = [_STATE.modules[mod]]
    for m in targets:
        for d in dests:
            m.levels[d] = lvl
        m.recompute()


def set_pattern(destination: str, pattern: str) -> None:
    dest = destination.strip().lower()
    if dest == "any":
        dests = list(range(len(DESTINATIONS)))
    elif dest in DESTINATIONS:
        dests = [DESTINATIONS.index(dest)]
    else:
        raise ValueError(f'unknown destination "{destination}"')
    with _STATE.lock:
        for d in dests:
            _STATE.patterns[d] = pattern
            _STATE.compiled[d] = None if pattern == DEFAULT_PATTERNS[d] \
                else compile_pattern(pattern)


def set_facility(name: str) -> None:
    fac = name.strip().lower()
    if fac not in SYSLOG_FACILITIES:
        raise ValueError("invalid facility")
    _STATE.facility = fac


def apply_spec(spec: str) -> None:
    """Apply one OVS-style spec, with C's error texts: words separated by ':'
    or spaces, each a destination (console/syslog/file/any), a level
    (off/emer/err/warn/info/dbg) or a module name (or any); e.g. "console:off",
    "binding:file:dbg", "dbg".  An empty spec means "dbg for everything", as
    plain `-v` does.  "PATTERN:DESTINATION:PATTERN" sets a destination's line
    pattern, "FACILITY:NAME" the syslog facility."""
    head, _, rest = spec.partition(":")
    if head.strip().lower() == "pattern":
        dest, sep, pattern = rest.partition(":")
        if not dest.strip():
            raise ValueError("missing destination")
        set_pattern(dest, pattern if sep else DEFAULT_PATTERNS[_destination_index(dest)])
        return
    if head.strip().lower() == "facility":
        set_facility(rest)
        return
    module, destination, level = "any", "any", DBG
    for word in spec.replace(",", ":").replace(" ", ":").split(":"):
        w = word.strip().lower()
        if not w:
            continue
        if w in DESTINATIONS:
            destination = w
        elif w in _LEVEL_BY_NAME:
            level = _LEVEL_BY_NAME[w]
        elif w == "any":
            continue
        elif w in _STATE.modules:
            module = w
        else:
            raise ValueError(f'no destination, level, or module "{word.strip()}"')
    set_level(module, level, destination)


def _destination_index(destination: str) -> int:
    dest = destination.strip().lower()
    if dest not in DESTINATIONS:
        raise ValueError(f'unknown destination "{destination}"')
    return DESTINATIONS.index(dest)


def set_rate_limit(modules: Iterable[str], enabled: bool) -> None:
    """vlog/enable-rate-limit, vlog/disable-rate-limit: no module (or "any") = all."""
    names = [m.strip().lower() for m in modules]
    if not names or "any" in names:
        targets = list(_STATE.modules.values())
    else:
        targets = []
        for name in names:
            if name not in _STATE.modules:
                raise ValueError("unknown module")
            targets.append(_STATE.modules[name])
    for m in targets:
        m.rate_limited = enabled


def list_levels() -> str:
    """Text of `vlog/list`, laid out as the C daemons do."""
    lines = ["                 console    syslog    file",
             "                 -------    ------    ------"]
    for name in sorted(_STATE.modules):
        mod = _STATE.modules[name]
        lv = mod.levels
        line = (f"{name:<16}  {LEVEL_NAMES[lv[CONSOLE]]:>4}       {LEVEL_NAMES[lv[SYSLOG]]:>4}"
                f"       {LEVEL_NAMES[lv[FILE]]:>4}")
        if not mod.rate_limited:
            line += "    (rate limiting disabled)"
        lines.append(line)
    return "\n".join(lines) + "\n"


def list_patterns() -> str:
    """Text of `vlog/list-pattern`."""
    lines = ["         prefix                            format",
             "         ------                            ------"]
    for label, d, prefix in (("SYSLOG", SYSLOG, SYSLOG_PREFIX), ("CONSOLE", CONSOLE, "none"),
                             ("FILE", FILE, "none")):
        lines.append(f"{label:<9}{prefix:<34}{_STATE.patterns[d]}")
    return "\n".join(lines) + "\n"


def get_levels(module: str) -> dict[str, str]:
    """{"console": "INFO", "syslog": "ERR", "file": "INFO"} for one module."""
    mod = _STATE.modules[module_name(module)]
    return {d: LEVEL_NAMES[mod.levels[i]] for i, d in enumerate(DESTINATIONS)}


# --------------------------------------------------------------------------- setup


def open_log_file(path: str) -> None:
    """Start (or switch) logging to `path` (append; created mode 0640 as C)."""
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    new = open(fd, "a", encoding="utf-8", buffering=1)
    with _STATE.lock:
        old, _STATE.log_file, _STATE.log_path = _STATE.log_file, new, path
    if old is not None:
        old.close()
    for m in _STATE.modules.values():
        m.recompute()
    get_logger("vlog").info(f"opened log file {path}")


def reopen_log_file() -> None:
    """`vlog/reopen`: reopen the same path (after log rotation)."""
    if _STATE.log_path is not None:
        open_log_file(_STATE.log_path)


def close_log_file() -> None:
    """`vlog/close`."""
    with _STATE.lock:
        old, _STATE.log_file = _STATE.log_file, None
    if old is not None:
        old.close()
    for m in _STATE.modules.values():
        m.recompute()


def log_file_path() -> str | None:
    return _STATE.log_path


def set_console(stream: IO[str] | None) -> None:
    """Console stream; None = the current sys.stderr at each write."""
    _STATE.console = stream


def setup(log_file: str | None = None, specs: Iterable[str] = ()) -> None:
    """Configure from command-line options: `--log-file` and each `-v` spec, in order."""
    _configure_structlog()
    bridge_ovs_library()
    if log_file:
        open_log_file(log_file)
    for spec in specs:
        apply_spec(spec)


def reset() -> None:
    """Back to defaults (tests): no log file, default levels, sequence 0."""
    _configure_structlog()
    close_log_file()
    _DEFAULT_LEVELS[:] = [INFO, INFO, INFO]
    for m in _STATE.modules.values():
        m.levels = list(_DEFAULT_LEVELS)
        m.rate_limited = True
        m.recompute()
    _STATE.patterns[:] = DEFAULT_PATTERNS
    _STATE.compiled[:] = [None, None, None]
    _STATE.facility = "daemon"
    _STATE.syslog = LibcSyslog()
    _STATE.syslog_targets = []
    _STATE.seq = 0
    _STATE.console = None
    _STATE.log_path = None


# --------------------------------------------------------------------------- ovs library

# Python ovs module names -> the C module that prints the same messages.
_OVS_LIBRARY_MODULES = {"idl": "ovsdb_idl", "fatal-signal": "fatal_signal",
                        "unixctl_server": "unixctl", "unixctl_client": "unixctl"}
_OVS_LIBRARY_LEVELS = {"emer": EMER, "err": ERR, "warn": WARN, "info": INFO, "dbg": DBG}


def _ovs_library_log(self: Any, level: str, message: str, **kwargs: Any) -> None:
    lvl = _OVS_LIBRARY_LEVELS.get(level.lower(), DBG)
    module = _OVS_LIBRARY_MODULES.get(self.name, self.name)
    # The C reconnect FSM logs a failed connection attempt at INFO (its
    # "info level"); the Python port says WARN.
    if module == "reconnect" and lvl == WARN and " attempt failed (" in message:
        lvl = INFO
    get_logger(module).log(lvl, message)


def bridge_ovs_library() -> None:
    """Send the ovs library's log messages (reconnect, jsonrpc, stream, ...)
    through this module, under C's module names."""
    import ovs.vlog
    ovs.vlog.Vlog._Vlog__log = _ovs_library_log
