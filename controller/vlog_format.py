"""Line patterns and syslog senders of :mod:`controller.vlog` (OVS vlog's
``PATTERN:`` language and ``--syslog-method``).

Design note
-----------
Pure pieces, no logging state: :func:`compile_pattern` turns a pattern such
as ``%D{%Y-%m-%dT%H:%M:%S.###Z}|%05N|%c%T|%p|%m`` into a list of pieces and
:func:`render_pattern` fills one in from a :class:`Record`.  Supported escapes
are OVS's: ``%A`` program, ``%B`` syslog priority, ``%c`` module, ``%d{FMT}`` /
``%D{FMT}`` local / UTC time (``#`` digits of the fraction of a second),
``%E`` host name, ``%m`` message, ``%N`` sequence number, ``%n`` newline,
``%p`` level, ``%P`` pid, ``%r`` ms since start, ``%t`` / ``%T`` subprogram
(the logging thread's name; ``%T`` shows ``(name)`` outside the main thread), ``%%``; each with optional ``-`` (left
justify), ``0`` (zero pad) and a width.  Unknown escapes stay as text.

Syslog senders: :class:`LibcSyslog` (syslog(3), the default) and
:class:`SocketSyslog` (``unix:PATH`` datagrams or ``udp:HOST:PORT``, with
OVS's RFC 3164 style prefix).
"""

from __future__ import annotations

import os
import socket
import syslog
import time
from dataclasses import dataclass
from typing import Any

DEFAULT_PATTERNS = (
    "%D{%Y-%m-%dT%H:%M:%SZ}|%05N|%c%T|%p|%m",          # console
    "ovs|%05N|%c%T|%p|%m",                              # syslog
    "%D{%Y-%m-%dT%H:%M:%S.###Z}|%05N|%c%T|%p|%m",      # file
)
SYSLOG_PREFIX = "<%B> %D{%h %e %T} %E %A:"
SYSLOG_FACILITIES = ("kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news",
                     "uucp", "clock", "authpriv", "ftp", "ntp", "audit", "alert", "clock2",
                     "local0", "local1", "local2", "local3", "local4", "local5", "local6",
                     "local7")

# One compiled piece: (conversion, left-justify, zero-pad, width, argument);
# conversion "" is a literal held in the argument.
Piece = tuple[str, bool, bool, int, str]
_CONVERSIONS = "ABcdDEmNnpPrtT%"


@dataclass(frozen=True)
class Record:
    """What a pattern can show about one message."""

    seq: int
    module: str
    level_name: str
    text: str
    now: float
    program: str
    priority: int       # facility * 8 + severity
    start: float        # process start time, for %r
    thread: str = ""    # name of the logging thread, "" for the main thread


def compile_pattern(pattern: str) -> list[Piece]:
    out: list[Piece] = []
    i, n, lit = 0, len(pattern), []
    while i < n:
        ch = pattern[i]
        if ch != "%" or i + 1 >= n:
            lit.append(ch)
            i += 1
            continue
        j = i + 1
        left = zero = False
        if pattern[j] == "-":
            left, j = True, j + 1
        if j < n and pattern[j] == "0":
            zero, j = True, j + 1
        k = j
        while k < n and pattern[k].isdigit():
            k += 1
        width = int(pattern[j:k]) if k > j else 0
        if k >= n or pattern[k] not in _CONVERSIONS:
            lit.append(pattern[i:k + 1])
            i = k + 1
            continue
        conv, arg = pattern[k], ""
        k += 1
        if conv in "dD" and k < n and pattern[k] == "{":
            end = pattern.find("}", k)
            if end > 0:
                arg, k = pattern[k + 1:end], end + 1
        if lit:
            out.append(("", False, False, 0, "".join(lit)))
            lit = []
        out.append((conv, left, zero, width, arg))
        i = k
    if lit:
        out.append(("", False, False, 0, "".join(lit)))
    return out


def format_time(fmt: str, now: float, utc: bool) -> str:
    """strftime, with each run of '#' replaced by that many fraction digits."""
    tm = time.gmtime(now) if utc else time.localtime(now)
    if "#" not in fmt:
        return time.strftime(fmt, tm)
    out = []
    digits = f"{now - int(now):.9f}"[2:]
    for i, chunk in enumerate(fmt.split("#")):
        if i:
            out.append(digits[0] if digits else "0")
            digits = digits[1:]
        if chunk:
            out.append(time.strftime(chunk, tm))
    return "".join(out)


def render_pattern(pieces: list[Piece], rec: Record) -> str:
    parts = []
    for conv, left, zero, width, arg in pieces:
        if conv == "":
            parts.append(arg)
            continue
        if conv == "m":
            value = rec.text
        elif conv == "c":
            value = rec.module
        elif conv == "p":
            value = rec.level_name
        elif conv == "N":
            value = str(rec.seq)
        elif conv in "dD":
            value = format_time(arg or "%Y-%m-%d %H:%M:%S", rec.now, conv == "D")
        elif conv == "A":
            value = rec.program
        elif conv == "B":
            value = str(rec.priority)
        elif conv == "E":
            value = socket.gethostname()
        elif conv == "P":
            value = str(os.getpid())
        elif conv == "r":
            value = str(int((rec.now - rec.start) * 1000))
        elif conv == "t":
            value = rec.thread or "main"
        elif conv == "n":
            value = "\n"
        elif conv == "%":
            value = "%"
        else:                   # "T": "(thread)" outside the main thread
            value = f"({rec.thread})" if rec.thread else ""
        if width and len(value) < width:
            value = value.ljust(width) if left else value.rjust(width, "0" if zero else " ")
        parts.append(value)
    return "".join(parts)


class Syslog:
    """Where syslog-destination messages go."""

    def send(self, rec: Record, message: str) -> None:
        raise NotImplementedError


class LibcSyslog(Syslog):
    """syslog(3), OVS's default method."""

    __slots__ = ("opened",)

    def __init__(self) -> None:
        self.opened: tuple[str, int] | None = None

    def send(self, rec: Record, message: str) -> None:
        key = (rec.program, rec.priority & ~7)
        if self.opened != key:
            syslog.openlog(key[0], syslog.LOG_NDELAY, key[1])
            self.opened = key
        syslog.syslog(rec.priority & 7, message)


class SocketSyslog(Syslog):
    """unix:PATH (datagram) or udp:HOST:PORT, with OVS's prefix."""

    __slots__ = ("sock", "address", "prefix")

    def __init__(self, method: str) -> None:
        kind, _, where = method.partition(":")
        self.address: Any
        if kind == "unix" and where:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.address = where
        elif kind == "udp" and ":" in where:
            host, _, port = where.rpartition(":")
            host = host.strip("[]")
            self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                                      socket.SOCK_DGRAM)
            self.address = (host, int(port))
        else:
            raise ValueError(f"unknown syslog method {method!r} "
                             "(use libc, unix:FILE or udp:IP:PORT)")
        self.sock.setblocking(False)
        self.prefix = compile_pattern(SYSLOG_PREFIX)

    def send(self, rec: Record, message: str) -> None:
        line = f"{render_pattern(self.prefix, rec)} {message}"
        try:
            self.sock.sendto(line.encode("utf-8", "replace"), self.address)
        except OSError:
            pass
