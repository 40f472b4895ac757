"""JSON-RPC message framing on the standard library's JSON decoder.

Design note
-----------
``ovs.jsonrpc.Connection.recv`` feeds the text it receives to an
``ovs.json.Parser`` until the parser has one complete value.  The library has
two: a compiled one (``ovs._json``) and a pure-Python state machine that
lexes one character per Python call.  The compiled one links all of
libopenvswitch with OpenSSL, libunbound, libbpf and friends: loading it costs
~3.4 MiB of the imports' peak RSS, ~1.1 MiB of a detached small agent's (after
the fork only the library pages it touches count; issue 16).
The Python one is far too slow for a Southbound dump.

:class:`FramedParser` is a third: it only finds where a top-level value ends
and lets :class:`json.JSONDecoder` (C-accelerated, part of the interpreter)
decode it in one pass.  Per chunk, with C-speed string operations only:

* the text inside strings is left out: escaped backslashes are dropped (in
  pairs, left to right, as the escapes read), then escaped quotes; every
  quote left opens or closes a string, so the pieces of ``split('"')``
  alternate between outside and inside.  Whether the chunk ends inside a
  string, or right after a backslash there, is kept for the next chunk, so no
  text is scanned twice;
* what is left is JSON punctuation, numbers and literals: the nesting depth
  changes by the counts of openers minus closers;
* a value is complete when the depth is back to zero at the chunk's end, or
  inside the chunk where a closer is followed (after blanks) by an opener:
  ``}{`` / ``]{`` cannot occur inside valid JSON (values are separated by
  commas), only between two top-level values.

Then the buffered text is decoded; :meth:`FramedParser.feed` returns how
many characters of its last chunk belong to the value, as the library's
parsers do, and the rest stays in the connection's input for the next
message's parser.  A value that does not start with ``{`` or ``[`` (never a
JSON-RPC message) is decoded at once, and what the decoder rejects (bad
syntax, ``NaN``/``Infinity``, nesting too deep) becomes the error string
``finish()`` returns, which ``ovs.jsonrpc`` turns into a protocol error and a
reconnect, as with the other parsers.

:func:`install` makes ``ovs.json.Parser()`` (what ``jsonrpc`` calls) return a
:class:`FramedParser` and sets ``ovs.json.PARSER`` to the Python flavour
(``jsonrpc`` then counts characters, not bytes), through ``Parser.__new__``;
``Parser(check_trailer=True)`` (``ovs.json.from_string``/``from_file``: the
agent's OVS schema) builds the compiled parser where it is loaded (tests,
tools), else a :class:`WholeTextParser` (the stdlib decoder on the whole
text; the library's Python parser takes ~0.1 s for vswitch.ovsschema).
:mod:`controller.lazy_modules` keeps ``ovs._json`` from loading in the agent.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import ovs.json

_BOUNDARY = re.compile(r"[}\]]\s*[{\[]")
_BLANKS = " \t\r\n"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid literal {name}")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


class FramedParser:
    """One top-level JSON value from a stream of text chunks (see module doc)."""

    __slots__ = ("_chunks", "_buffered", "_depth", "_started", "_in_string", "_escape",
                 "_result", "done")

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._buffered = 0           # characters in _chunks
        self._depth = 0
        self._started = False        # the value's first character was seen
        self._in_string = False      # the last chunk ended inside a string...
        self._escape = False         # ...right after a backslash
        self._result: Any = None
        self.done = False

    def feed(self, s: str) -> int:
        """Take `s`; the number of its characters used (all unless the value ends in it)."""
        if self.done or not s:
            return 0
        pos = 0
        if not self._started:
            pos = len(s) - len(s.lstrip(_BLANKS))
            if pos == len(s):
                self._chunks.append(s)
                self._buffered += len(s)
                return len(s)
            self._started = True
            if s[pos] not in "{[":
                return self._decode(s)
        structural = self._outside_strings(s, pos)
        if structural is None:       # all of `s` is inside one string
            self._chunks.append(s)
            self._buffered += len(s)
            return len(s)
        self._depth += (structural.count("{") + structural.count("[")
                        - structural.count("}") - structural.count("]"))
        if self._depth <= 0 or _BOUNDARY.search(structural) is not None:
            return self._decode(s)
        self._chunks.append(s)
        self._buffered += len(s)
        return len(s)

    def _outside_strings(self, s: str, pos: int) -> str | None:
        """The text of `s[pos:]` outside strings; None if all of it is inside one."""
        if self._escape:             # the previous chunk ended in "\": skip the escaped char
            pos += 1
            self._escape = False
        t = s[pos:] if pos else s
        if "\\" in t:
            t = t.replace("\\\\", "")  # escaped backslashes, paired left to right
            if t.endswith("\\"):
                self._escape = True
                t = t[:-1]
            t = t.replace('\\"', "")  # escaped quotes: every quote left is a delimiter
        parts = t.split('"')
        inside = self._in_string
        if len(parts) % 2 == 0:      # an odd number of quotes
            self._in_string = not inside
        if inside and len(parts) == 1:
            return None
        return "".join(parts[1::2] if inside else parts[::2])

    def _decode(self, s: str) -> int:
        """Decode the buffered text plus `s`; characters of `s` used."""
        before = self._buffered
        text = "".join(self._chunks) + s if self._chunks else s
        self._chunks = []
        self.done = True
        start = len(text) - len(text.lstrip(_BLANKS))
        try:
            self._result, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError) as e:
            self._result = f"syntax error: {e}"
            return len(s)
        if end < before:             # cannot happen for valid input
            self._result = "syntax error: value ended in an earlier chunk"
            return len(s)
        return end - before

    def is_done(self) -> bool:
        return self.done

    def finish(self) -> Any:
        """The value, or an error string (as ``ovs.json.Parser.finish``)."""
        if not self.done:
            if not self._started:
                return "empty input stream"
            return "unexpected end of input"
        return self._result


_LIBRARY_PARSER = ovs.json.Parser


def _new_parser(cls: type, *args: Any, **kwargs: Any) -> Any:
    if cls is not _LIBRARY_PARSER:
        return object.__new__(cls)
    if not kwargs.get("check_trailer", args[0] if args else False):
        return FramedParser()       # not a cls instance: Parser.__init__ is not run
    compiled = sys.modules.get("ovs._json")   # None where blocked (the agent)
    if compiled is not None:
        return compiled.Parser(*args, **kwargs)
    return WholeTextParser()


class WholeTextParser:
    """``Parser(check_trailer=True)`` without ``ovs._json``: the whole text is
    one value (``ovs.json.from_file`` of a schema), decoded by the stdlib."""

    __slots__ = ("_chunks",)

    def __init__(self) -> None:
        self._chunks: list[str] = []

    def feed(self, s: str) -> int:
        self._chunks.append(s)
        return len(s)

    def is_done(self) -> bool:
        return False

    def finish(self) -> Any:
        text = "".join(self._chunks)
        if not text.strip(_BLANKS):
            return "empty input stream"
        try:
            return _DECODER.decode(text)
        except (ValueError, RecursionError) as e:
            return f"syntax error: {e}"


def install() -> None:
    """``ovs.json.Parser()`` -> :class:`FramedParser` (see module doc); idempotent."""
    ovs.json.PARSER = ovs.json.PARSER_PY
    _LIBRARY_PARSER.__new__ = staticmethod(_new_parser)  # type: ignore[assignment]
