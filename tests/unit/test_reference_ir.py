"""reference_engine: IR printer, GBNF parser, numbers, PDA basics (no vocabulary)."""

from __future__ import annotations

import json
import random
import re

import pytest

from reference_engine import ir
from reference_engine import numbers as N
from reference_engine.gbnf import GbnfError, parse_gbnf
from reference_engine.json_schema import compile_schema
from reference_engine.pda import PDA, GrammarError

SMALL = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
    },
    "required": ["name"],
    "additionalProperties": False,
}

EXPECTED = '''\
# draft draft2020-12; whitespace flexible (max 32 per gap); property order any
root                 ::= ws root_value ws
ws                   ::= [\\t\\n\\r ]{0,32}
root_value           ::= root_value.object
root_value.object    ::= "{" ws <members, any order, each at most once, separated by ws "," ws; key-value ws ":" ws:
      ( "\\"" <json-chars "name"> "\\"" ) : root_value.name (required)
      ( "\\"" <json-chars "age"> "\\"" ) : root_value.age
      ( "\\"" <json-chars "tags"> "\\"" ) : root_value.tags
    > ws "}"
root_value.name      ::= "\\"" <json-chars any length 0..8> "\\""
root_value.age       ::= <bytes digits 0..> | "-" <bytes digits 0..0> | ( <bytes digits 0.. (at most 15 digits)> | "-" <bytes digits 0..0 (at most 15 digits)> ) "." "0"+
root_value.tags      ::= "[" ws "]" | "[" ws root_value.tags.item ( ws "," ws root_value.tags.item )? ws "]"
root_value.tags.item ::= "\\"" <json-chars "a"> "\\"" | "\\"" <json-chars "b"> "\\""
'''


def test_printer_small_schema():
    text = ir.format_grammar(compile_schema(SMALL))
    assert text == EXPECTED, text


def test_printer_expression_forms():
    e = ir.seq(ir.lit("a"), ir.alt(ir.lit("b"), ir.star(ir.byteclass(b"xy"))), ir.rep(ir.Ref("r"), 2, 5))
    assert ir.format_expr(e) == '"a" ( "b" | [xy]* ) r{2,5}'


SQL = r'''
# a tiny SQL subset
root ::= "SELECT " cols " FROM " name (" WHERE " cond)?
cols ::= name ("," " "? name)*
  | "*"
name ::= [a-zA-Z_] [a-zA-Z0-9_]{0,30}
cond ::= name " = " ( [0-9]+ | "'" [^']* "'" ) (" AND " cond)?
'''


@pytest.mark.parametrize("text,ok", [
    ("SELECT * FROM t", True),
    ("SELECT a, b FROM t WHERE x = 3 AND y = 'é'", True),
    ("SELECT a,b FROM t", True),
    ("SELECT FROM t", False),
    ("SELECT a FROM t WHERE", False),
    ("SELECT a FROM t WHERE x = 'unterminated", False),
])
def test_gbnf_sql(text, ok):
    pda = PDA(parse_gbnf(SQL))
    assert pda.accepts(text.encode()) == ok


def test_gbnf_roundtrip_print_and_recursion():
    g = parse_gbnf('root ::= "(" root ")" root | ""')
    assert ir.format_grammar(g) == 'root ::= "(" root ")" root | ""\n'
    pda = PDA(g)
    for s, ok in [("", True), ("()", True), ("(())()", True), ("(()", False), (")(", False)]:
        assert pda.accepts(s.encode()) == ok, s


def test_gbnf_errors():
    with pytest.raises(GrammarError, match="left recursion"):
        PDA(parse_gbnf('root ::= root "a" | "b"'))
    with pytest.raises(GbnfError, match="undefined rule"):
        parse_gbnf('root ::= foo')
    with pytest.raises(GbnfError, match="unterminated"):
        parse_gbnf('root ::= "abc')


def _spelling(rng: random.Random) -> str:
    sign = "-" if rng.random() < 0.4 else ""
    ip = rng.choice(["0", str(rng.randint(1, 9)), str(rng.randint(10, 999)), str(rng.randint(1000, 10**6))])
    r = rng.random()
    if r < 0.35:
        return sign + ip
    if r < 0.7:
        return sign + ip + "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 4)))
    m = str(rng.randint(1, 9)) + ("." + str(rng.randint(0, 999)) if rng.random() < 0.5 else "")
    if rng.random() < 0.15:
        m = "0" + (".000" if rng.random() < 0.5 else "")
    return sign + m + rng.choice("eE") + rng.choice(["", "+", "-"]) + rng.choice(
        ["0", "00", "1", "2", "05", "10", "400", "330", "324", "308", "309"])


_NORMAL = re.compile(r"-?(0(\.0+)?|[1-9](\.\d+)?)[eE][+-]?\d+")


@pytest.mark.parametrize("lo,hi", [((0, False), None), ((0, True), None), (None, (100, False)),
                                   ((0.1, True), (1e300, False)), (None, (2**60 + 1, True)),
                                   ((-5, False), (5, True)), ((1.5, False), (2.25, True)),
                                   ((-0.001, True), (0, False))])
def test_numbers_bounds_exact(lo, hi):
    rng = random.Random(str((lo, hi)))
    low, up = ([lo] if lo else []), ([hi] if hi else [])
    number = ir.to_dfa(N.number_type(low, up))
    integer = ir.to_dfa(N.integer_type(low, up, dot_zero=True))
    for _ in range(2500):
        s = _spelling(rng)
        v = json.loads(s)
        in_range = not ((lo and (v < lo[0] or (lo[1] and v == lo[0])))
                        or (hi and (v > hi[0] or (hi[1] and v == hi[0]))))
        spelled_ok = "e" not in s.lower() or bool(_NORMAL.fullmatch(s))
        assert number.accepts(s.encode()) == (in_range and spelled_ok), s
        int_spelling = isinstance(v, int) or (re.fullmatch(r"-?\d{1,15}\.0+", s) is not None)
        assert integer.accepts(s.encode()) == (in_range and int_spelling), s


def test_numbers_equal():
    for val in (0, 1, -3, 2.5, 100, 1e-05, 123.0):
        d = ir.to_dfa(N.number_equal(val, True, True))
        rng = random.Random(str(val))
        for _ in range(800):
            s = _spelling(rng)
            ok = json.loads(s) == val and ("e" not in s.lower() or bool(_NORMAL.fullmatch(s)))
            assert d.accepts(s.encode()) == ok, (val, s)
        assert d.accepts(json.dumps(val).encode())
