"""The lexer's fast path (one regex match per common token) and
``tokenize`` must give exactly what the general scanner gives: the same
tokens, starts and ends, on random texts built from pieces near the
boundaries of each token kind."""

from __future__ import annotations

import random

from controller.lflow import lexer as lx

_PIECES = (
    list("0123456789abcdefxXgGzZ_.:/-=<>!&|(){}[],;\"\\ $@^*\n\t")
    + ["::", "..", "...", "1.2.3.4", "255.255.255.255", "256.1.1.1", "01.2.3.4",
       "10.0.0.", "ff:ff:ff:ff:ff:ff", "0a:1b:2c:3d:4e:5f", "a:b:c:d:e:f",
       "fe80::1", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9",
       "::", "/0", "/24", "/32", "/33", "/64", "/128", "/129", "/024",
       "0x1f", "0X", "18446744073709551615", "18446744073709551616", "007",
       '"abc"', '"a\\"b"', '"\\u0041"', "//c\n", "/* x */", "/*", "é", "\x80",
       "ip4.src", "eth.dst", "reg0[1..3]", "dead", "beef:", "$set", "@pg", "^tpl"]
)

Scan = list[tuple[int, str | None, int, int, int, int, int]]


def _scan(lex: object, text: str) -> Scan:
    out: Scan = []
    pos = 0
    while len(out) < 1000:
        tok, start, pos = lex(text, pos)  # type: ignore[operator]
        out.append((tok.type, tok.s, tok.value, tok.mask, tok.format, start, pos))
        if tok.type == lx.T_END:
            break
    return out


def _texts(seed: int, count: int) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(_PIECES) for _ in range(rnd.randint(1, 8)))
            for _ in range(count)]


def test_fast_path_matches_general_scanner() -> None:
    for text in _texts(1, 30000):
        assert _scan(lx.lex_token, text) == _scan(lx._lex_general, text), text


def test_tokenize_matches_lex_token() -> None:
    for text in _texts(2, 30000):
        want = [t[:5] for t in _scan(lx.lex_token, text)[:-1]]
        got = [(t.type, t.s, t.value, t.mask, t.format) for t in lx.tokenize(text)]
        assert got == want, text


def test_fast_path_constants() -> None:
    tok, start, end = lx.lex_token('  10.1.2.0/24 x', 0)
    assert (tok.type, tok.value, tok.mask, tok.format, start, end) == (
        lx.T_MASKED_INTEGER, 0x0a010200, 0xffffff00, lx.F_IPV4, 2, 13)
    tok, start, end = lx.lex_token(' "lsp-1";', 0)
    assert (tok.type, tok.s, start, end) == (lx.T_STRING, "lsp-1", 1, 8)
    tok, _, _ = lx.lex_token("fe80::1/64", 0)
    assert (tok.type, tok.value, tok.mask) == (
        lx.T_MASKED_INTEGER, 0xfe80 << 112, ((1 << 64) - 1) << 64)
    tok, _, _ = lx.lex_token("0a:1b:2c:3d:4e:5f", 0)
    assert (tok.type, tok.value, tok.format) == (lx.T_INTEGER, 0x0a1b2c3d4e5f, lx.F_ETHERNET)


def test_lexer_stream_matches_lex_token() -> None:
    for text in _texts(3, 5000):
        want = _scan(lx.lex_token, text)
        lexer = lx.Lexer(text)
        assert (lexer.start, lexer.pos) == (-1, 0)
        assert lexer.lookahead() == want[0][0]
        for k, (kind, s, value, mask, fmt, start, end) in enumerate(want + want[-1:]):
            assert lexer.get() == kind, text
            tok = lexer.token
            assert (tok.s, tok.value, tok.mask, tok.format) == (s, value, mask, fmt), text
            assert (lexer.start, lexer.pos) == (start, end), text
            assert lexer.lookahead() == want[min(k + 1, len(want) - 1)][0], text


def test_syntax_error_names_the_current_token() -> None:
    lexer = lx.Lexer("a == 10.0.0.1 /* c */ b")
    for _ in range(4):
        lexer.get()
    lexer.syntax_error("expecting `;'")
    assert lexer.error == "Syntax error at `b' expecting `;'."
