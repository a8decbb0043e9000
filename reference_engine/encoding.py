"""Byte-by-byte decoders from bytes to code points: UTF-8 text, and the content of a
JSON string (RFC 8259: raw UTF-8 except control characters, ``"`` and ``\\``; short
escapes; ``\\uXXXX`` with hex digits in either case; non-BMP characters as a
surrogate pair of escapes).

A decoder state is ``START`` (0, between characters) or a small tuple describing a
partial character. :func:`step` consumes one byte and returns ``("c", cp)`` when a
character is complete, ``("p", state)`` when more bytes are needed, or ``None``.
:func:`candidates` gives the code points a partial state may still become, as
intervals, so that a caller can prune partial characters that cannot lead anywhere.

Lone surrogate escapes (``\\uD800`` without its pair, or a lone ``\\uDC00``) are
rejected: decoded strings are sequences of Unicode scalar values (a listed departure
from RFC 8259, whose grammar allows them).
"""

from __future__ import annotations

from functools import lru_cache

START = 0
ESC = 1

_MIN = {2: 0x80, 3: 0x800, 4: 0x10000}
_MAX = {2: 0x7FF, 3: 0xFFFF, 4: 0x10FFFF}
_SHORT = {0x22: 0x22, 0x5C: 0x5C, 0x2F: 0x2F, 0x62: 0x08, 0x66: 0x0C, 0x6E: 0x0A,
          0x72: 0x0D, 0x74: 0x09}
_HEXVAL = {c: int(chr(c), 16) for c in b"0123456789abcdefABCDEF"}
SCALARS = ((0, 0xD7FF), (0xE000, 0x10FFFF))


def _minus_surrogates(lo: int, hi: int) -> list[tuple[int, int]]:
    out = []
    if lo <= min(hi, 0xD7FF):
        out.append((lo, min(hi, 0xD7FF)))
    if max(lo, 0xE000) <= hi:
        out.append((max(lo, 0xE000), hi))
    return out


@lru_cache(maxsize=1 << 16)
def candidates(state) -> tuple[tuple[int, int], ...]:
    """Code points a partial decoder state can still complete to (ascending intervals;
    cached, so the result is a tuple)."""
    return tuple(_candidates(state))


def _candidates(state) -> list[tuple[int, int]]:
    if state == ESC:
        return list(SCALARS)
    kind = state[0]
    if kind == "8":
        _, need, v, length = state
        lo = max(v << (6 * need), _MIN[length])
        hi = min(((v + 1) << (6 * need)) - 1, _MAX[length])
        return _minus_surrogates(lo, hi) if lo <= hi else []
    if kind == "u":
        _, k, v = state
        sh = 4 * (4 - k)
        lo, hi = v << sh, ((v + 1) << sh) - 1
        out = _minus_surrogates(lo, hi)
        hlo, hhi = max(lo, 0xD800), min(hi, 0xDBFF)
        if hlo <= hhi:
            out.append((0x10000 + ((hlo - 0xD800) << 10), 0x10000 + ((hhi - 0xD800) << 10) + 0x3FF))
        return out
    if kind in ("p", "q"):
        base = 0x10000 + ((state[1] - 0xD800) << 10)
        return [(base, base + 0x3FF)]
    if kind == "l":
        _, hi_s, k, v = state
        base = 0x10000 + ((hi_s - 0xD800) << 10)
        sh = 4 * (4 - k)
        lo, hi = max(v << sh, 0xDC00), min(((v + 1) << sh) - 1, 0xDFFF)
        if lo > hi:
            return []
        return [(base + lo - 0xDC00, base + hi - 0xDC00)]
    raise AssertionError(state)


def _lead(b: int):
    if 0xC2 <= b <= 0xDF:
        return ("p", ("8", 1, b & 0x1F, 2))
    if 0xE0 <= b <= 0xEF:
        return ("p", ("8", 2, b & 0x0F, 3))
    if 0xF0 <= b <= 0xF4:
        return ("p", ("8", 3, b & 0x07, 4))
    return None


def _cont(state, b: int):
    if not 0x80 <= b <= 0xBF:
        return None
    _, need, v, length = state
    v = (v << 6) | (b & 0x3F)
    if need == 1:
        if v < _MIN[length] or 0xD800 <= v <= 0xDFFF:
            return None
        return ("c", v)
    st = ("8", need - 1, v, length)
    return ("p", st) if candidates(st) else None


def step_utf8(state, b: int):
    if state == START:
        if b < 0x80:
            return ("c", b)
        return _lead(b)
    return _cont(state, b)


def step_json(state, b: int):
    if state == START:
        if b < 0x20 or b == 0x22:
            return None
        if b == 0x5C:
            return ("p", ESC)
        if b < 0x80:
            return ("c", b)
        return _lead(b)
    if state == ESC:
        if b in _SHORT:
            return ("c", _SHORT[b])
        if b == 0x75:  # u
            return ("p", ("u", 0, 0))
        return None
    kind = state[0]
    if kind == "8":
        return _cont(state, b)
    if kind == "u":
        h = _HEXVAL.get(b)
        if h is None:
            return None
        _, k, v = state
        v = v * 16 + h
        if k < 3:
            st = ("u", k + 1, v)
            return ("p", st) if candidates(st) else None
        if 0xD800 <= v <= 0xDBFF:
            return ("p", ("p", v))
        if 0xDC00 <= v <= 0xDFFF:
            return None
        return ("c", v)
    if kind == "p":
        return ("p", ("q", state[1])) if b == 0x5C else None
    if kind == "q":
        return ("p", ("l", state[1], 0, 0)) if b == 0x75 else None
    if kind == "l":
        h = _HEXVAL.get(b)
        if h is None:
            return None
        _, hi_s, k, v = state
        v = v * 16 + h
        if k < 3:
            st = ("l", hi_s, k + 1, v)
            return ("p", st) if candidates(st) else None
        if not 0xDC00 <= v <= 0xDFFF:
            return None
        return ("c", 0x10000 + ((hi_s - 0xD800) << 10) + (v - 0xDC00))
    raise AssertionError(state)


STEPS = {"json": step_json, "utf8": step_utf8}

_CONT_BYTES = bytes(range(0x80, 0xC0))


def _json_string_scan(data: bytes) -> tuple[int | None, int]:
    """``(characters begun, bytes read)`` reading ``data`` as JSON string content from
    between characters, up to its first unescaped ``"`` (included in the bytes read)
    or its end; the characters are None, and the bytes end at the byte refused, if the
    decoder refuses one."""
    q = data.find(b'"')
    part = data if q < 0 else data[:q]
    if b"\\" not in part:
        # no escape: every byte but a UTF-8 continuation byte begins a character
        return len(part.translate(None, _CONT_BYTES)), len(data) if q < 0 else q + 1
    st = START
    n = 0
    for i, b in enumerate(data):
        if st == START:
            if b == 0x22:
                return n, i + 1
            n += 1
        r = step_json(st, b)
        if r is None:
            return None, i + 1
        st = START if r[0] == "c" else r[1]
    return n, len(data)


def json_chars_started(data: bytes) -> int | None:
    """How many characters JSON string content begins while reading ``data`` from
    between characters, up to its first unescaped ``"`` (where the string ends) or its
    end: a character left partial counts, as a length window counts it (a partial
    character lives only if one more fits). None if ``data`` cannot be read so."""
    return _json_string_scan(data)[0]


def json_string_end(data: bytes) -> int:
    """The length of the part of ``data`` read as JSON string content from between
    characters, its closing ``"`` included (``len(data)`` if the string goes on)."""
    return _json_string_scan(data)[1]


@lru_cache(maxsize=1 << 16)
def moves(enc: str, state) -> tuple:
    """``((byte, step result), ...)`` for every byte that ``step`` does not refuse from
    decoder ``state`` (cached: automaton rows ask for the same decoder states again and
    again, once per code-point DFA state)."""
    step = STEPS[enc]
    out = []
    for b in range(256):
        r = step(state, b)
        if r is not None:
            out.append((b, r))
    return tuple(out)


def encode_json_content(text: str, ascii_only: bool = False) -> bytes:
    """One spelling of ``text`` as JSON string content (for tests and examples)."""
    import json

    s = json.dumps(text, ensure_ascii=ascii_only)
    return s[1:-1].encode("utf-8", "surrogatepass")
