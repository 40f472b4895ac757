"""``ovn-appctl`` commands of the agent (23.03 names and reply formats).

Design note
-----------
Commands are registered once with ``ovs.unixctl`` (a process-global table)
and dispatch to the :class:`Agent` interface below, which the daemon
implements; the server socket is ``--unixctl`` or ``$OVN_RUNDIR/NAME.<pid>.ctl``
(NAME: the pidfile's name, see ``controller.cli.default_unixctl``) so
``ovn-appctl -t NAME`` finds it like the C daemon's.  Reply texts that scripts parse (``inc-engine/
show-stats``, ``stopwatch/show``, ``coverage/show``, ``ct-zone-list``,
``connection-status``, ``version``) keep the C format.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Protocol

import ovs.unixctl
import ovs.unixctl.server

from controller import version, vlog
from controller.diag.coverage import COVERAGE
from controller.version import OVN_VERSION


class Agent(Protocol):
    """What the commands need from the running daemon."""

    engine: Any
    loop_stats: Any
    stopwatches: Any
    coverage: Any
    paused: bool

    def request_exit(self, restart: bool) -> None: ...
    def sb_connected(self) -> bool: ...
    def ct_zone_list(self) -> str: ...
    def dump_local_bindings(self) -> str: ...
    def memory_report(self) -> str: ...
    def force_recompute(self) -> None: ...
    def set_delay_nb_cfg_report(self, seconds: int) -> None: ...
    def wake(self) -> None: ...
    def ignore_startup_delay(self) -> None: ...
    def lflow_cache_stats(self) -> str: ...
    def lflow_cache_flush(self) -> None: ...
    def conj_ids_dump(self) -> str: ...
    def extend_table_list(self, which: str) -> str: ...
    def sb_cluster_state_reset(self) -> None: ...
    def inject_pkt(self, microflow: str) -> str | None: ...
    def local_template_vars(self) -> dict[str, str]: ...


def version_reply() -> str:
    """C's two lines (ovn-kubernetes parses them), then ours."""
    return version.appctl_version_text()


Handler = Callable[[Any, list[str], Any], None]


def _wrap(fn: Callable[..., str | None]) -> Handler:
    def cb(conn: Any, argv: list[str], agent: Any) -> None:
        try:
            out = fn(agent, *argv)
        except CommandError as e:
            conn.reply_error(str(e))
            return
        conn.reply(out if out is not None else "")
    return cb


class CommandError(Exception):
    pass


def _exit(agent: Agent, *args: str) -> None:
    if args and args[0] != "--restart":
        raise CommandError(f"unknown option {args[0]}")
    agent.request_exit(restart=bool(args))


def _loop_stats(agent: Agent, *args: str) -> str:
    if args and args[0] != "--json":
        raise CommandError(f"unknown option {args[0]}")
    return str(agent.loop_stats.json() if args else agent.loop_stats.text())


def _show_stats(agent: Agent, *args: str) -> str:
    return str(agent.engine.show_stats(*args))


def _clear_stats(agent: Agent) -> str:
    agent.engine.clear_stats()
    restart = getattr(agent, "restart_profile", None)
    if restart is not None:
        restart()       # OVN_CONTROLLER_PY_PROFILE: profile from here on
    return ""


def _recompute(agent: Agent) -> str:
    agent.force_recompute()
    return ""


def _compute_log_timeout(agent: Agent, ms: str) -> str:
    try:
        agent.engine.compute_log_timeout_ms = int(ms)
    except ValueError:
        raise CommandError(f"invalid timeout {ms!r}") from None
    return ""


def _stopwatch_show(agent: Agent, *args: str) -> str:
    out = agent.stopwatches.show(args[0] if args else None)
    if out is None:
        raise CommandError("No such stopwatch")
    return str(out)


def _stopwatch_reset(agent: Agent, *args: str) -> str:
    agent.stopwatches.reset(args[0] if args else None)
    return ""


def _coverage_read(agent: Agent, name: str) -> str:
    v = agent.coverage.read(name)
    if v is None:
        raise CommandError("No such counter")
    return f"{v}\n"


def _pause(agent: Agent) -> str:
    agent.paused = True
    return ""


def _resume(agent: Agent) -> str:
    agent.paused = False
    agent.wake()
    return ""


def _delay_nb_cfg(agent: Agent, secs: str) -> str:
    try:
        n = int(secs)
    except ValueError:
        raise CommandError(f"invalid delay {secs!r}") from None
    agent.set_delay_nb_cfg_report(n)
    return f"delay nb_cfg report for {n} seconds." if n else "no delay for nb_cfg report."


def _lflow_cache_flush(agent: Agent) -> str:
    agent.lflow_cache_flush()
    return ""


def _vlog_set(agent: Agent, *specs: str) -> str:
    for spec in specs or ("",):      # no spec: everything to dbg, as C
        try:
            vlog.apply_spec(spec)
        except ValueError as e:
            raise CommandError(str(e)) from None
    return ""


def _vlog_rate_limit(enabled: bool) -> Callable[..., str]:
    def command(agent: Agent, *modules: str) -> str:
        try:
            vlog.set_rate_limit(modules, enabled)
        except ValueError as e:
            raise CommandError(str(e)) from None
        return ""
    return command


def _vlog_reopen(agent: Agent) -> str:
    vlog.reopen_log_file()
    return ""


def _vlog_close(agent: Agent) -> str:
    vlog.close_log_file()
    return ""


def _inject_pkt(agent: Agent, microflow: str) -> str:
    error = agent.inject_pkt(microflow)
    if error is not None:
        raise CommandError(error)
    return ""


def _dump_local_template_vars(agent: Agent) -> str:
    tvars = agent.local_template_vars()
    return "Local template vars:\n" + "".join(
        f"name: '{name}' value: '{tvars[name]}'\n" for name in sorted(tvars))


def _list_commands(agent: Agent) -> str:
    out = ["The available commands are:"]
    for name in sorted(ovs.unixctl.commands):
        out.append(f"  {name:<23} {ovs.unixctl.commands[name].usage}")
    return "\n".join(out) + "\n"


_library_process_command = ovs.unixctl.server.UnixctlConnection._process_command


def _process_command(conn: Any, request: Any) -> None:
    """The library's dispatch, with C's reply to an unknown command."""
    if request.method not in ovs.unixctl.commands:
        conn._request_id = request.id
        conn.reply_error(f'"{request.method}" is not a valid command (use "list-commands" '
                         "to see a list of valid commands)")
    else:
        _library_process_command(conn, request)
    # Counted after the reply, so a command does not see itself (as in C).
    COVERAGE.inc("unixctl_received"); COVERAGE.inc("unixctl_replied")  # noqa: E702


ovs.unixctl.server.UnixctlConnection._process_command = _process_command


# name -> (usage, min args, max args, function(agent, *argv))
COMMANDS: dict[str, tuple[str, int, int, Callable[..., str | None]]] = {
    "exit": ("", 0, 1, _exit),
    "loop-stats": ("[--json]", 0, 1, _loop_stats),
    "connection-status": ("", 0, 0,
                          lambda a: "connected" if a.sb_connected() else "not connected"),
    "version": ("", 0, 0, lambda a: version_reply()),
    "recompute": ("[deprecated]", 0, 0, _recompute),
    "inc-engine/recompute": ("", 0, 0, _recompute),
    "inc-engine/show-stats": ("", 0, 2, _show_stats),
    "inc-engine/clear-stats": ("", 0, 0, _clear_stats),
    "inc-engine/compute-log-timeout": ("", 1, 1, _compute_log_timeout),
    "ct-zone-list": ("", 0, 0, lambda a: a.ct_zone_list()),
    "stopwatch/show": ("[NAME]", 0, 1, _stopwatch_show),
    "stopwatch/reset": ("[NAME]", 0, 1, _stopwatch_reset),
    "coverage/show": ("", 0, 0, lambda a: a.coverage.show()),
    "coverage/read-counter": ("COUNTER", 1, 1, _coverage_read),
    "memory/show": ("", 0, 0, lambda a: a.memory_report()),
    "debug/dump-local-bindings": ("", 0, 0, lambda a: a.dump_local_bindings()),
    "debug/pause": ("", 0, 0, _pause),
    "debug/resume": ("", 0, 0, _resume),
    "debug/status": ("", 0, 0, lambda a: "paused" if a.paused else "running"),
    "debug/delay-nb-cfg-report": ("SECONDS", 1, 1, _delay_nb_cfg),
    "debug/ignore-startup-delay": ("", 0, 0, lambda a: a.ignore_startup_delay() or ""),
    "lflow-cache/show-stats": ("", 0, 0, lambda a: a.lflow_cache_stats()),
    "lflow-cache/flush": ("", 0, 0, _lflow_cache_flush),
    "flush-lflow-cache": ("[deprecated]", 0, 0, _lflow_cache_flush),
    "debug/dump-local-template-vars": ("", 0, 0, _dump_local_template_vars),
    "debug/dump-lflow-conj-ids": ("", 0, 0, lambda a: a.conj_ids_dump()),
    "group-table-list": ("", 0, 0, lambda a: a.extend_table_list("group")),
    "meter-table-list": ("", 0, 0, lambda a: a.extend_table_list("meter")),
    "vlog/set": ("{spec | PATTERN:destination:pattern}", 0, 32, _vlog_set),
    "vlog/list": ("", 0, 0, lambda a: vlog.list_levels()),
    "vlog/list-pattern": ("", 0, 0, lambda a: vlog.list_patterns()),
    "vlog/enable-rate-limit": ("[module]...", 0, 32, _vlog_rate_limit(True)),
    "vlog/disable-rate-limit": ("[module]...", 0, 32, _vlog_rate_limit(False)),
    "vlog/reopen": ("", 0, 0, _vlog_reopen),
    "vlog/close": ("", 0, 0, _vlog_close),
    "list-commands": ("", 0, 0, _list_commands),
    "sb-cluster-state-reset": ("", 0, 0, lambda a: a.sb_cluster_state_reset() or ""),
    "inject-pkt": ("MICROFLOW", 1, 1, _inject_pkt),
}


def default_socket_path(pid: int | None = None) -> str:
    rundir = os.environ.get("OVN_RUNDIR", "/var/run/ovn")
    return os.path.join(rundir,
                        f"{version.PROGRAM}.{pid if pid is not None else os.getpid()}.ctl")


def register(agent: Agent) -> None:
    ovs.unixctl.commands.pop("help", None)      # the library's; C has list-commands only
    for name, (usage, lo, hi, fn) in COMMANDS.items():
        ovs.unixctl.commands.pop(name, None)
        ovs.unixctl.command_register(name, usage, lo, hi, _wrap(fn), agent)


def create_server(agent: Agent, path: str | None) -> ovs.unixctl.server.UnixctlServer:
    register(agent)
    sock = os.path.abspath(path) if path else default_socket_path()
    os.makedirs(os.path.dirname(sock), exist_ok=True)
    if os.path.exists(sock):
        os.unlink(sock)
    error, server = ovs.unixctl.server.UnixctlServer.create(sock, version=OVN_VERSION)
    if error:
        raise OSError(error, f"could not initialize control socket {sock}")
    os.chmod(sock, 0o750)         # as the C daemons' control sockets
    COVERAGE.inc("pstream_open")
    return server
