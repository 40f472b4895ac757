"""``ovn-controller-py ctl COMMAND [ARG...]``: talk to a running agent.

Finds the control socket by itself: ``--socket PATH`` if given, else, for
NAME in (this program's name, ``ovn-controller-py``, ``ovn-controller``), the
pid in ``$OVN_RUNDIR/NAME.pid`` -> ``NAME.<pid>.ctl`` (or ``NAME.ctl``),
else the newest ``NAME.<pid>.ctl`` whose process is alive.
Any agent command works (``ctl loop-stats --json``, ``ctl ct-zone-list``).
"""

from __future__ import annotations

import glob
import os
import sys
from typing import Sequence

import ovs.unixctl.server

from controller import version


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _names() -> list[str]:
    names: list[str] = []
    for name in (version.PROGRAM, version.PACKAGE, version.C_PROGRAM):
        if name not in names:
            names.append(name)
    return names


def find_socket(rundir: str | None = None) -> str | None:
    rundir = rundir or os.environ.get("OVN_RUNDIR", "/var/run/ovn")
    for name in _names():
        try:
            with open(os.path.join(rundir, f"{name}.pid"), encoding="ascii") as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if _alive(pid):
            for path in (os.path.join(rundir, f"{name}.{pid}.ctl"),
                         os.path.join(rundir, f"{name}.ctl")):
                if os.path.exists(path):
                    return path
    best: tuple[float, str] | None = None
    for name in _names():
        for path in glob.glob(os.path.join(rundir, f"{name}.*.ctl")):
            try:
                pid = int(os.path.basename(path).split(".")[-2])
            except ValueError:
                continue
            if not _alive(pid):
                continue
            mtime = os.path.getmtime(path)
            if best is None or mtime > best[0]:
                best = (mtime, path)
    return best[1] if best else None


def call(path: str, command: str, args: list[str]) -> tuple[int, str]:
    """Run one command; returns (exit status, text)."""
    error, client = ovs.unixctl.server.UnixctlClient.create(path)
    if error:
        return 1, f"cannot connect to {path}: {os.strerror(error)}\n"
    try:
        error, err, result = client.transact(command, args)
    finally:
        client.close()
    if error:
        return 1, f"{path}: transaction error: {os.strerror(error)}\n"
    if err is not None:
        return 2, err if err.endswith("\n") else err + "\n"
    return 0, result or ""


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    sock = None
    if len(args) >= 2 and args[0] == "--socket":
        sock = args[1]
        args = args[2:]
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(f"usage: {version.PROGRAM} ctl [--socket PATH] COMMAND [ARG...]\n"
                         "  e.g. loop-stats [--json], inc-engine/show-stats, ct-zone-list\n")
        return 0 if args else 2
    path = sock or find_socket()
    if path is None:
        sys.stderr.write(f"{version.PROGRAM} ctl: no running {version.PROGRAM} control socket found "
                         "(set OVN_RUNDIR or use --socket)\n")
        return 1
    rc, text = call(path, args[0], args[1:])
    (sys.stdout if rc == 0 else sys.stderr).write(text)
    return rc
