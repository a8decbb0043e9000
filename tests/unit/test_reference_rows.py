"""Rows of code-point fragments between characters (``_FragClass._row_start``, built
from the DFA's edge intervals and per-lead-byte verdicts) against the byte-by-byte
rule (``_FragClass._row_bytes``, every byte through the decoder), on the string
automata of real schemas: JSON string content and UTF-8 text, with and without a
length window, at counts near and far from its bounds."""

from __future__ import annotations

import pytest

from reference_engine import compile_json_schema, compile_regex
from reference_engine.encoding import START
from reference_engine.pda import PDA, _FragClass

SCHEMAS = {
    "free string": {"type": "string"},
    "window": {"type": "string", "minLength": 2, "maxLength": 5},
    "pattern": {"type": "string", "pattern": "^[a-zé日]{1,3}-[0-9]+$"},
    "date-time": {"type": "string", "format": "date-time"},
    "enum keys": {"type": "object", "properties": {"ä": {}, "b": {}, "日本": {}},
                  "additionalProperties": False},
    "email": {"type": "string", "format": "email", "maxLength": 40},
}


def by_byte(row: tuple) -> dict[int, tuple]:
    out = {}
    for succ, mask, bs in row:
        assert mask == sum(1 << b for b in bs)
        for b in bs:
            assert b not in out
            out[b] = succ
    return out


def fresh(fc: _FragClass) -> _FragClass:
    return _FragClass(fc.dfa, fc.enc, fc.lo, fc.hi)


def check_class(fc: _FragClass) -> int:
    checked = 0
    counts = [0]
    if fc.windowed:
        counts = sorted({0, 1, fc.lo, max(fc.lo - 1, 0), fc.cap, max(fc.cap - 1, 0)})
    for d in range(fc.dfa.n):
        for cnt in counts:
            cnt1 = min(cnt + 1, fc.cap) if fc.windowed else 0
            ccnt = cnt if fc.windowed else 0
            fast = fresh(fc)._row_start(d, cnt, cnt1, ccnt)
            slow = fresh(fc)._row_bytes(d, START, cnt, cnt1, ccnt)
            assert by_byte(fast) == by_byte(slow), (d, cnt)
            checked += 1
    return checked


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_start_rows_equal_byte_by_byte_rows(name):
    pda = PDA(compile_json_schema(SCHEMAS[name]))
    classes = {id(fc): fc for fc in pda.frag_class}
    assert classes, "the schema has no code-point fragment to test"
    assert sum(check_class(fc) for fc in classes.values()) > 0


def test_start_rows_of_utf8_text():
    pda = PDA(compile_regex(r"[a-zé]{2,6}(日|本)?x"))
    classes = {id(fc): fc for fc in pda.frag_class}
    assert any(fc.enc == "utf8" for fc in classes.values())
    assert sum(check_class(fc) for fc in classes.values()) > 0
