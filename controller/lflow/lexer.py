"""Lexer for the OVN logical-flow match and action language (OVN 23.03 lib/lex.c).

Public API
----------
Token kinds are small ints, module constants ``T_END``, ``T_ID``, ``T_STRING``,
``T_INTEGER``, ``T_MASKED_INTEGER``, ``T_MACRO`` (``$name``), ``T_PORT_GROUP``
(``@name``), ``T_TEMPLATE`` (``^name``), ``T_ERROR`` and the punctuation kinds
``T_LPAREN`` ... ``T_HYPHEN`` (see ``TOKEN_NAMES``).  Integer formats are
``F_DECIMAL``, ``F_HEXADECIMAL``, ``F_IPV4``, ``F_IPV6``, ``F_ETHERNET``.

``Token`` (``type``, ``s``, ``value``, ``mask``, ``format``): ``s`` holds the text
of ID/STRING/MACRO/PORT_GROUP/TEMPLATE tokens and the message of ERROR tokens;
``value``/``mask`` are Python ints (up to 1024 bits, like OVS ``mf_subvalue``).
Tokens are immutable by convention (punctuation tokens are shared singletons).

``Lexer(text)`` mirrors OVS ``struct lexer``:

* ``get()`` advances to the next token (must be called once before the first
  token is examined, as ``lexer_get()``) and returns its type;
  ``token`` is the current token; ``lookahead()`` peeks at the next type.
* ``match(kind)``, ``match_id(name)``, ``match_string(s)``, ``force_match(kind)``,
  ``force_end()``, ``is_int()``, ``get_int()``, ``force_int()``.
* ``error`` is ``None`` or the first error message; ``set_error(msg)`` and
  ``syntax_error(msg)`` record one (keeping the first, and preferring a lexical
  error token), e.g. "Syntax error at `next' expecting end of input.";
  ``steal_error()`` returns and clears it.

``format_token(token)`` renders a token the way ``lex_token_format()`` does
(re-lexable); ``format_value(value, fmt)`` formats an integer in a lex format.
``parse_template_string(text, template_vars, refs)`` expands ``^name``
templates (unknown names expand to ``name``).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping, MutableSet

# Token kinds.
T_END = 0
T_ID = 1
T_STRING = 2
T_INTEGER = 3
T_MASKED_INTEGER = 4
T_MACRO = 5
T_PORT_GROUP = 6
T_TEMPLATE = 7
T_ERROR = 8
T_LPAREN = 9
T_RPAREN = 10
T_LCURLY = 11
T_RCURLY = 12
T_LSQUARE = 13
T_RSQUARE = 14
T_EQ = 15
T_NE = 16
T_LT = 17
T_LE = 18
T_GT = 19
T_GE = 20
T_LOG_NOT = 21
T_LOG_AND = 22
T_LOG_OR = 23
T_ELLIPSIS = 24
T_COMMA = 25
T_SEMICOLON = 26
T_EQUALS = 27
T_EXCHANGE = 28
T_DECREMENT = 29
T_COLON = 30
T_HYPHEN = 31

TOKEN_NAMES = (
    "END", "ID", "STRING", "INTEGER", "MASKED_INTEGER", "MACRO", "PORT_GROUP",
    "TEMPLATE", "ERROR", "LPAREN", "RPAREN", "LCURLY", "RCURLY", "LSQUARE",
    "RSQUARE", "EQ", "NE", "LT", "LE", "GT", "GE", "LOG_NOT", "LOG_AND",
    "LOG_OR", "ELLIPSIS", "COMMA", "SEMICOLON", "EQUALS", "EXCHANGE",
    "DECREMENT", "COLON", "HYPHEN",
)

PUNCT_TEXT: dict[int, str] = {
    T_END: "$", T_LPAREN: "(", T_RPAREN: ")", T_LCURLY: "{", T_RCURLY: "}",
    T_LSQUARE: "[", T_RSQUARE: "]", T_EQ: "==", T_NE: "!=", T_LT: "<",
    T_LE: "<=", T_GT: ">", T_GE: ">=", T_LOG_NOT: "!", T_LOG_AND: "&&",
    T_LOG_OR: "||", T_ELLIPSIS: "..", T_COMMA: ",", T_SEMICOLON: ";",
    T_EQUALS: "=", T_EXCHANGE: "<->", T_DECREMENT: "--", T_COLON: ":",
    T_HYPHEN: "-",
}

# Integer formats.
F_DECIMAL = 0
F_HEXADECIMAL = 1
F_IPV4 = 2
F_IPV6 = 3
F_ETHERNET = 4

_FORMAT_NAMES = ("decimal", "hexadecimal", "IPv4", "IPv6", "Ethernet")

# Values wider than this fall back to hexadecimal when formatted.
_FORMAT_LIMIT = {
    F_DECIMAL: 1 << 64, F_IPV4: 1 << 32, F_IPV6: 1 << 128, F_ETHERNET: 1 << 48,
}

SUBVALUE_BITS = 1024


def format_name(fmt: int) -> str:
    """Name of a lex format as OVS lex_format_to_string() gives it."""
    return _FORMAT_NAMES[fmt]


class Token:
    """One lexical token (see module docstring)."""

    __slots__ = ("type", "s", "value", "mask", "format")

    def __init__(self, type: int, s: str | None = None, value: int = 0,
                 mask: int = 0, format: int = F_DECIMAL) -> None:
        self.type = type
        self.s = s
        self.value = value
        self.mask = mask
        self.format = format

    def __repr__(self) -> str:
        return f"Token({TOKEN_NAMES[self.type]}, {format_token(self)!r})"


_END_TOKEN = Token(T_END)
_PUNCT_TOKENS: dict[str, Token] = {}
for _kind, _text in PUNCT_TEXT.items():
    if _kind != T_END:
        _PUNCT_TOKENS[_text] = Token(_kind)


# ---------------------------------------------------------------------------
# Formatting.

def _ipv6_str(value: int) -> str:
    return socket.inet_ntop(socket.AF_INET6, value.to_bytes(16, "big"))


def _ipv4_str(value: int) -> str:
    return f"{value >> 24}.{(value >> 16) & 0xff}.{(value >> 8) & 0xff}.{value & 0xff}"


def _mac_str(value: int) -> str:
    h = f"{value:012x}"
    return f"{h[0:2]}:{h[2:4]}:{h[4:6]}:{h[6:8]}:{h[8:10]}:{h[10:12]}"


def format_value(value: int, fmt: int) -> str:
    """Formats 'value' in lex format 'fmt' (as lex_token_format_value())."""
    if fmt == F_DECIMAL:
        return str(value)
    if fmt == F_HEXADECIMAL:
        return f"0x{value:x}" if value else "0"
    if fmt == F_IPV4:
        return _ipv4_str(value)
    if fmt == F_IPV6:
        return _ipv6_str(value)
    return _mac_str(value)


def effective_format(tok: Token) -> int:
    """The format a token is really printed in (hex if it does not fit)."""
    fmt = tok.format
    limit = _FORMAT_LIMIT.get(fmt)
    if limit is None:
        return fmt
    if tok.value >= limit or (tok.type == T_MASKED_INTEGER and tok.mask >= limit):
        return F_HEXADECIMAL
    return fmt


def cidr_bits(mask: int, width: int) -> int:
    """Prefix length if 'mask' (of 'width' bits) is a CIDR mask, else -1."""
    inv = ~mask & ((1 << width) - 1)
    if inv & (inv + 1):
        return -1
    return width - inv.bit_length()


def json_escape(s: str) -> str:
    """Quotes 's' as OVS json_string_escape() does."""
    out = ['"']
    for c in s:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c < " ":
            out.append(_CTRL_ESCAPES.get(c) or f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


_CTRL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def format_token(tok: Token) -> str:
    """Formats 'tok' as lex_token_format() does."""
    t = tok.type
    if t == T_ID:
        return tok.s or ""
    if t == T_INTEGER:
        return format_value(tok.value, effective_format(tok))
    if t == T_MASKED_INTEGER:
        fmt = effective_format(tok)
        head = format_value(tok.value, fmt) + "/"
        if fmt == F_IPV4:
            n = cidr_bits(tok.mask, 32)
            if n >= 0:
                return head + str(n)
        elif tok.format == F_IPV6:
            n = cidr_bits(tok.mask, 128)
            if n >= 0 and tok.mask < (1 << 128):
                return head + str(n)
        return head + format_value(tok.mask, fmt)
    if t == T_STRING:
        return json_escape(tok.s or "")
    if t == T_ERROR:
        return "error(" + json_escape(tok.s or "") + ")"
    if t == T_MACRO:
        return "$" + (tok.s or "")
    if t == T_PORT_GROUP:
        return "@" + (tok.s or "")
    if t == T_TEMPLATE:
        return "^" + (tok.s or "")
    return PUNCT_TEXT[t]


# ---------------------------------------------------------------------------
# Scanning.

_WS = " \t\n\r\v\f"
_ID_RE = re.compile(r"[A-Za-z_.][A-Za-z0-9_.]*")
_IDN_RE = re.compile(r"[A-Za-z0-9_.]*")
# Identifier that cannot be mistaken for a number: either starts with g-z/G-Z/_
# or a hex-letter start whose leading hex-digit run is not followed by ':'.
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_HEX2 = r"[0-9a-fA-F]{2}"
# The numeric token cannot go on (see _num_extent) after a mask: no
# alphanumeric, ':' or single '.'; after a value also no '/'.
_MASK_END = r"(?![A-Za-z0-9:]|\.(?!\.))"
_VALUE_END = r"(?![A-Za-z0-9:/]|\.(?!\.))"
# One match of this regex is one token of the common kinds, each exactly as
# the general scanner below would produce it; anything else (comments,
# errors, masked or unusual constants, escaped strings, sigils) does not
# match and takes the general path.
_FAST_RE = re.compile(
    r"[ \t\n\r\v\f]*+(?:"
    # Identifier that cannot be mistaken for a number: either starts with
    # g-z/G-Z/_ or a hex-letter start whose leading hex-digit run is not
    # followed by ':'.
    r"(?P<id>[g-zG-Z_][A-Za-z0-9_.]*+|[a-fA-F][0-9a-fA-F]*+(?!:)[A-Za-z0-9_.]*+)"
    r"|(?P<op>==|!=|<=|>=|<->|&&|\|\||\.\.|--|[(){}\[\],;<>!=-]|:(?!:))"
    # Plain decimal (< 2**64, no leading zero).
    r"|(?P<dec>(?:[1-9][0-9]{0,18}|0)" + _VALUE_END + ")"
    # Quoted string without escapes.
    r'|"(?P<str>[^"\\]*+)"'
    # IPv4 address as inet_pton() accepts it, optionally with a prefix length.
    r"|(?P<ip4>(?:" + _OCTET + r"\.){3}" + _OCTET + ")"
    r"(?:/(?P<plen4>3[0-2]|[12]?[0-9])" + _MASK_END + "|" + _VALUE_END + ")"
    # Ethernet address of two-digit groups.
    r"|(?P<mac>" + _HEX2 + "(?::" + _HEX2 + "){5})" + _VALUE_END +
    # IPv6 candidate (hex digits and colons; inet_pton() decides),
    # optionally with a prefix length.
    r"|(?P<ip6>[0-9a-fA-F]*+:[0-9a-fA-F:]*+)"
    r"(?:/(?P<plen6>12[0-8]|1[01][0-9]|[1-9]?[0-9])" + _MASK_END
    + r"|(?![G-Zg-z/]|\.(?!\.)))"
    r"|(?P<end>)\Z)")
_ID_OP_RE = re.compile(
    r"(?P<id>[g-zG-Z_][A-Za-z0-9_.]*+|[a-fA-F][0-9a-fA-F]*+(?!:)[A-Za-z0-9_.]*+)"
    r"|(?P<op>==|!=|<=|>=|<->|&&|\|\||\.\.|--|[(){}\[\],;<>!=-]|:(?!:))")
_HEXRUN_RE = re.compile(r"[0-9a-fA-F]*")
_MAC_RE = re.compile(r"([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+):"
                     r"([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)")


_NUM_EXTENT_RE = re.compile(r"[A-Za-z0-9:]*(?:\.(?!\.)(?:[A-Za-z0-9]|\.(?!\.))*)?")


def _num_extent(text: str, pos: int) -> int:
    """End of the numeric token starting at 'pos': alphanumerics, ':' until a
    dot has been seen, and '.' unless followed by another '.'."""
    m = _NUM_EXTENT_RE.match(text, pos)
    assert m is not None
    return m.end()


def _parse_integer_core(text: str, pos: int) -> tuple[Token, int]:
    end = _num_extent(text, pos)
    word = text[pos:end]
    n = len(word)
    if not n:
        return Token(T_ERROR, "Integer constant expected."), end
    if n == 17:
        m = _MAC_RE.fullmatch(word)
        if m:
            v = 0
            for g in m.groups():
                v = (v << 8) | (int(g, 16) & 0xff)
            return Token(T_INTEGER, value=v, format=F_ETHERNET), end
    if word.isdigit():
        if word[0] == "0" and n > 1:
            return Token(T_ERROR, "Decimal constants must not have leading zeros."), end
        v = int(word)
        if v >= 1 << 64:
            return Token(T_ERROR, "Decimal constants must be less than 2**64."), end
        return Token(T_INTEGER, value=v, format=F_DECIMAL), end
    if word[0] == "0" and word[1] in "xX":
        if n <= 2:
            return Token(T_ERROR, f"Hex digits expected following 0{word[1]}."), end
        digits = word[2:]
        if _HEXRUN_RE.fullmatch(digits) is None:
            return Token(T_ERROR, "Invalid syntax in hexadecimal constant."), end
        v = int(digits, 16)
        if v >= 1 << SUBVALUE_BITS:
            return Token(T_ERROR, "Hexadecimal constant requires more than "
                         f"{SUBVALUE_BITS} bits."), end
        return Token(T_INTEGER, value=v, format=F_HEXADECIMAL), end
    if n < 46:
        try:
            b = socket.inet_pton(socket.AF_INET, word)
            return Token(T_INTEGER, value=int.from_bytes(b, "big"), format=F_IPV4), end
        except OSError:
            pass
        try:
            b = socket.inet_pton(socket.AF_INET6, word)
            return Token(T_INTEGER, value=int.from_bytes(b, "big"), format=F_IPV6), end
        except OSError:
            pass
    return Token(T_ERROR, "Invalid numeric constant."), end


def _parse_integer(text: str, pos: int) -> tuple[Token, int]:
    tok, end = _parse_integer_core(text, pos)
    if tok.type != T_INTEGER or end >= len(text) or text[end] != "/":
        return tok, end
    mtok, end = _parse_integer_core(text, end + 1)
    if mtok.type == T_ERROR:
        return mtok, end
    fmt = tok.format
    mfmt = mtok.format
    if fmt == mfmt:
        mask = mtok.value
    elif fmt == F_IPV4 and mfmt == F_DECIMAL and mtok.value <= 32:
        bits = mtok.value
        mask = ((1 << bits) - 1) << (32 - bits)
    elif fmt == F_IPV6 and mfmt == F_DECIMAL and mtok.value <= 128:
        bits = mtok.value
        mask = ((1 << bits) - 1) << (128 - bits)
    elif fmt == F_DECIMAL and mfmt == F_HEXADECIMAL and tok.value == 0:
        fmt = F_HEXADECIMAL
        mask = mtok.value
    else:
        return Token(T_ERROR, "Value and mask have incompatible formats."), end
    return Token(T_MASKED_INTEGER, value=tok.value & mask, mask=mask, format=fmt), end


_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f",
                   "n": "\n", "r": "\r", "t": "\t"}


def json_unescape(body: str) -> tuple[bool, str]:
    """Unescapes a quoted-string body as OVS json_string_unescape().

    Returns (True, text) or (False, error message)."""
    if "\\" not in body and '"' not in body:
        return True, body
    out: list[str] = []
    i = 0
    n = len(body)
    if n and body[-1] == "\\":
        return False, "quoted string may not end with backslash"
    while i < n:
        c = body[i]
        if c == '"':
            return False, 'quoted string may not include unescaped "'
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        i += 2
        simple = _SIMPLE_ESCAPES.get(e)
        if simple is not None:
            out.append(simple)
            continue
        if e != "u":
            return False, f"bad escape \\{e}"
        hex4 = body[i:i + 4]
        if len(hex4) < 4:
            return False, "quoted string ends within \\u escape"
        if not all(h in "0123456789abcdefABCDEF" for h in hex4):
            return False, "malformed \\u escape"
        c0 = int(hex4, 16)
        if c0 == 0:
            return False, "null bytes not supported in quoted strings"
        i += 4
        if 0xd800 <= c0 < 0xdc00:
            if body[i:i + 2] != "\\u":
                return False, "malformed escaped surrogate pair"
            hex4 = body[i + 2:i + 6]
            if len(hex4) < 4 or not all(h in "0123456789abcdefABCDEF" for h in hex4):
                return False, "malformed \\u escape"
            c1 = int(hex4, 16)
            if not 0xdc00 <= c1 < 0xe000:
                return False, ("second half of escaped surrogate pair is not "
                               "trailing surrogate")
            i += 6
            c0 = 0x10000 + ((c0 - 0xd800) << 10) + (c1 - 0xdc00)
        out.append(chr(c0))
    return True, "".join(out)


def _parse_string(text: str, pos: int) -> tuple[Token, int]:
    i = pos + 1
    n = len(text)
    while True:
        if i >= n:
            return Token(T_ERROR, "Input ends inside quoted string."), i
        c = text[i]
        if c == '"':
            ok, s = json_unescape(text[pos + 1:i])
            return Token(T_STRING if ok else T_ERROR, s), i + 1
        if c == "\\":
            i += 2 if i + 1 < n else 1
        else:
            i += 1


def _parse_sigil(text: str, pos: int, kind: int, sigil: str) -> tuple[Token, int]:
    m = _ID_RE.match(text, pos + 1)
    if m is None:
        return Token(T_ERROR, f"`{sigil}' must be followed by a valid identifier."), pos + 1
    return Token(kind, m.group()), m.end()


_AF_INET6 = socket.AF_INET6
_inet_pton = socket.inet_pton
_inet_aton = socket.inet_aton
_from_bytes = int.from_bytes


# Where a constant's token starts: (group, characters before it).
_START_GROUP: dict[str | None, tuple[str, int]] = {"dec": ("dec", 0), "str": ("str", 1), "mac": ("mac", 0), "ip4": ("ip4", 0),
                "plen4": ("ip4", 0), "ip6": ("ip6", 0), "plen6": ("ip6", 0)}


def _constant(m: re.Match[str], g: str | None) -> Token | None:
    """The token of a _FAST_RE match 'm' of a constant kind 'g' (not id, op
    or end), or None if the general scanner must decide."""
    if g == "dec":
        return Token(T_INTEGER, None, int(m.group(g)))
    if g == "str":
        return Token(T_STRING, m.group(g))
    if g == "mac":
        return Token(T_INTEGER, None, int(m.group(g).replace(":", ""), 16), 0, F_ETHERNET)
    if g == "ip4":
        return Token(T_INTEGER, None, _from_bytes(_inet_aton(m.group(g)), "big"), 0, F_IPV4)
    if g == "plen4":
        v = _from_bytes(_inet_aton(m.group("ip4")), "big")
        bits = int(m.group(g))
        mask = ((1 << bits) - 1) << (32 - bits)
        return Token(T_MASKED_INTEGER, None, v & mask, mask, F_IPV4)
    word = m.group("ip6")
    if len(word) >= 46:
        return None
    try:
        v = _from_bytes(_inet_pton(_AF_INET6, word), "big")
    except OSError:
        return None
    if g == "ip6":
        return Token(T_INTEGER, None, v, 0, F_IPV6)
    bits = int(m.group("plen6"))
    mask = ((1 << bits) - 1) << (128 - bits)
    return Token(T_MASKED_INTEGER, None, v & mask, mask, F_IPV6)


def lex_token(text: str, pos: int) -> tuple[Token, int, int]:
    """Scans one token of 'text' from 'pos'.

    Returns (token, start, end): 'start' is where the token begins after
    white space and comments, 'end' where the next scan starts."""
    m = _FAST_RE.match(text, pos)
    if m is not None:
        g = m.lastgroup
        if g == "id":
            a, b = m.span(g)
            return Token(T_ID, text[a:b]), a, b
        if g == "op":
            a, b = m.span(g)
            return _PUNCT_TOKENS[text[a:b]], a, b
        if g == "end":
            return _END_TOKEN, m.end(), m.end()
        tok = _constant(m, g)
        if tok is not None:
            sg, back = _START_GROUP[g]
            return tok, m.start(sg) - back, m.end()
    return _lex_general(text, pos)


def _lex_general(text: str, pos: int) -> tuple[Token, int, int]:
    """lex_token() for any input, without the fast path."""
    n = len(text)
    while pos < n and text[pos] in _WS:
        pos += 1
    start = pos
    if pos >= n:
        return _END_TOKEN, start, pos
    c = text[pos]
    if c == "/":
        nxt = text[pos + 1] if pos + 1 < n else ""
        if nxt == "/":
            nl = text.find("\n", pos)
            return _lex_general(text, n if nl < 0 else nl)
        if nxt == "*":
            i = pos + 2
            while True:
                if i >= n or text[i] == "\n":
                    return Token(T_ERROR, "`/*' without matching `*/'."), start, i
                if text[i] == "*" and i + 1 < n and text[i + 1] == "/":
                    return _lex_general(text, i + 2)
                i += 1
        return (Token(T_ERROR, "`/' is only valid as part of `//' or `/*'."),
                start, pos + 1)
    m = _ID_OP_RE.match(text, pos)
    if m is not None:
        if m.lastgroup == "id":
            return Token(T_ID, m.group()), start, m.end()
        return _PUNCT_TOKENS[m.group()], start, m.end()
    if c.isdigit() and c.isascii() or c == ":":
        tok, end = _parse_integer(text, pos)
        return tok, start, end
    if c in "abcdefABCDEF":
        # Hex-digit run followed by ':' is a MAC or IPv6 address.
        tok, end = _parse_integer(text, pos)
        return tok, start, end
    if c == '"':
        tok, end = _parse_string(text, pos)
        return tok, start, end
    if c == "$":
        tok, end = _parse_sigil(text, pos, T_MACRO, "$")
        return tok, start, end
    if c == "@":
        tok, end = _parse_sigil(text, pos, T_PORT_GROUP, "@")
        return tok, start, end
    if c == "^":
        tok, end = _parse_sigil(text, pos, T_TEMPLATE, "^")
        return tok, start, end
    if c == "&":
        return Token(T_ERROR, "`&' is only valid as part of `&&'."), start, pos + 1
    if c == "|":
        return Token(T_ERROR, "`|' is only valid as part of `||'."), start, pos + 1
    if c == ".":
        return (Token(T_ERROR, "`.' is only valid as part of `..' or a number."),
                start, pos + 1)
    if c.isascii() and c.isprintable():
        return Token(T_ERROR, f"Invalid character `{c}' in input."), start, pos + 1
    b = c.encode("utf-8", "surrogatepass")[0]
    signed = b - 256 if b >= 128 else b
    return Token(T_ERROR, f"Invalid byte 0x{signed} in input."), start, pos + 1


class Lexer:
    """Token stream over one input string (see module docstring).

    The whole text is tokenised up front (``tokenize``); ``start`` and
    ``pos`` (where the current token begins and where the next scan would
    start) are only needed for error messages: the spans are scanned on the
    first use of either."""

    __slots__ = ("text", "token", "error", "_toks", "_i", "_last", "_spans")

    def __init__(self, text: str) -> None:
        self.text = text
        self.token: Token = _END_TOKEN
        self.error: str | None = None
        toks = tokenize(text)
        toks.append(_END_TOKEN)
        self._toks = toks
        self._i = -1
        self._last = len(toks) - 1
        self._spans: list[tuple[int, int]] | None = None

    def _span(self) -> tuple[int, int]:
        spans = self._spans
        if spans is None:
            # Every token's (start, end), scanned once on first need.
            spans = self._spans = [(-1, 0)]
            pos = 0
            for _ in range(self._last + 1):
                _tok, start, pos = lex_token(self.text, pos)
                spans.append((start, pos))
        return spans[self._i + 1]

    @property
    def start(self) -> int:
        """Where the current token begins (-1 before the first get())."""
        return self._span()[0]

    @property
    def pos(self) -> int:
        """Where the scan for the next token starts."""
        return self._span()[1]

    def get(self) -> int:
        """Advances to the next token and returns its type."""
        i = self._i
        if i < self._last:
            i = self._i = i + 1
        tok = self.token = self._toks[i]
        return tok.type

    def lookahead(self) -> int:
        """Type of the token after the current one."""
        i = self._i
        return self._toks[i + 1 if i < self._last else i].type

    def match(self, kind: int) -> bool:
        if self.token.type == kind:
            self.get()
            return True
        return False

    def force_match(self, kind: int) -> bool:
        if kind == T_END:
            return self.force_end()
        if self.token.type == kind:
            self.get()
            return True
        self.syntax_error(f"expecting `{PUNCT_TEXT.get(kind, TOKEN_NAMES[kind])}'")
        return False

    def match_id(self, name: str) -> bool:
        tok = self.token
        if tok.type == T_ID and tok.s == name:
            self.get()
            return True
        return False

    def match_string(self, s: str) -> bool:
        tok = self.token
        if tok.type == T_STRING and tok.s == s:
            self.get()
            return True
        return False

    def is_int(self) -> bool:
        tok = self.token
        return (tok.type == T_INTEGER and tok.format == F_DECIMAL
                and tok.value <= 0x7fffffff)

    def get_int(self) -> int | None:
        if self.is_int():
            v = self.token.value
            self.get()
            return v
        return None

    def force_int(self) -> int | None:
        v = self.get_int()
        if v is None:
            self.syntax_error("expecting small integer")
        return v

    def force_end(self) -> bool:
        if self.token.type == T_END:
            return True
        self.syntax_error("expecting end of input")
        return False

    def _error_handled(self) -> bool:
        if self.error is not None:
            return True
        if self.token.type == T_ERROR:
            self.error = self.token.s
            return True
        return False

    def set_error(self, message: str) -> None:
        """Records 'message' as the error unless an error is already known."""
        if not self._error_handled():
            self.error = message

    def syntax_error(self, message: str | None = None) -> None:
        """Records "Syntax error at `TOKEN' MESSAGE." (as lexer_syntax_error)."""
        if self._error_handled():
            return
        parts = ["Syntax error"]
        if self.token.type == T_END:
            parts.append(" at end of input")
        else:
            start, pos = self._span()
            if start >= 0:
                parts.append(f" at `{self.text[start:pos]}'")
        if message:
            parts.append(" " + message)
        parts.append(".")
        self.error = "".join(parts)

    def steal_error(self) -> str | None:
        err = self.error
        self.error = None
        return err


def tokenize(text: str) -> list[Token]:
    """All tokens of 'text' up to (not including) the end token."""
    out: list[Token] = []
    append = out.append
    punct = _PUNCT_TOKENS
    pos = 0
    while True:
        # Consecutive _FAST_RE matches, then one token from the general
        # scanner where none matches.
        m = None
        # (Pattern.scanner: CPython's matcher that resumes where it stopped.)
        for m in iter(_FAST_RE.scanner(text, pos).match, None):  # type: ignore[attr-defined]
            g = m.lastgroup
            if g == "id":
                append(Token(T_ID, m.group(g)))
            elif g == "op":
                append(punct[m.group(g)])
            elif g == "end":
                return out
            else:
                tok = _constant(m, g)
                if tok is None:
                    pos = m.start()
                    break
                append(tok)
        else:
            if m is not None:
                pos = m.end()
        tok, _, pos = _lex_general(text, pos)
        if tok.type == T_END:
            return out
        append(tok)


def parse_template_string(text: str, template_vars: Mapping[str, str],
                          refs: MutableSet[str] | None = None) -> str:
    """Expands every ``^name`` in 'text' (lexer_parse_template_string()).

    Text without ``^`` is returned unchanged; otherwise the whole string is
    re-tokenised and re-formatted (tokens joined without separators, as OVS
    does).  Names used are added to 'refs'."""
    if "^" not in text:
        return text
    out: list[str] = []
    pos = 0
    while True:
        tok, _, pos = lex_token(text, pos)
        if tok.type == T_END:
            break
        if tok.type == T_TEMPLATE:
            name = tok.s or ""
            out.append(template_vars.get(name, name))
            if refs is not None:
                refs.add(name)
        else:
            out.append(format_token(tok))
    return "".join(out)
