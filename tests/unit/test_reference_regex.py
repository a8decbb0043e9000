"""reference_engine.regex and .formats against Python's re and jsonschema's format
checker (the oracle), and the automata toolkit against brute force."""

from __future__ import annotations

import random
import re

import jsonschema
import pytest

import reference_helpers  # noqa: F401  (hypothesis storage outside the working tree)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_engine.automata import DFA
from reference_engine.formats import CHECKED, format_variants
from reference_engine.regex import RegexError, compile_dfa

PATTERNS = [
    r"^a+$", r"a", r"^\d{3}-\d{4}$", r"[^abc]x", r"(foo|bar)+baz$", r"^$", r"", r"a$\n",
    r"^[A-Za-z0-9._%+-]+@[a-z]+\.[a-z]{2,}$", r"x{2,3}y?", r"\s+", r"^\w+$", r"[\]a-]",
    r"a{,2}b", r"a{", r"a{1", r"(?:ab|a)c\Z", r"^(?P<n>ab)*$", r"\x41\u00e9[\0-\x1f]",
    r"[^\d\s]+$", r".", r"\.\*", r"^.{2,4}$", r"ab|^cd", r"(a|$)b", r"^[a-z]*(-[a-z]+)*$",
    r"\Aab?\Z", r"^(\([0-9]{3}\))?[0-9]{3}-[0-9]{4}$", r"[\W_]", r"^\S+$", r"a.c",
    r"^(a|b|ab)*c?$", r"[a-c\d]{2}$", r"(x|y|)z", r"^-?\d+(\.\d+)?$", r"\\", r"[$^]",
    r"^[^\n]*\n?$", r"\D\w", r"a*?b+?c??",
]
ALPHABET = "abcxyz019-_.@é٣ \n\t()]\\$^*ZA"


@pytest.mark.parametrize("pattern", PATTERNS)
def test_regex_search_matches_python(pattern):
    dfa_s = compile_dfa(pattern, "search")
    dfa_f = compile_dfa(pattern, "fullmatch")
    rx = re.compile(pattern)

    @settings(database=None, max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(alphabet=ALPHABET, max_size=10))
    def check(s):
        assert dfa_s.matches(s) == bool(rx.search(s)), (pattern, s)
        assert dfa_f.matches(s) == bool(rx.fullmatch(s)), (pattern, s)

    check()


def test_python_semantics_not_ecma():
    # $ matches before a final newline; \d is Unicode; . excludes only \n
    assert compile_dfa(r"^a$").matches("a\n")
    assert not compile_dfa(r"^a\Z").matches("a\n")
    assert compile_dfa(r"^\d$").matches("٣")
    assert compile_dfa(r"^.$").matches("\r")
    assert not compile_dfa(r"^.$").matches("\n")


@pytest.mark.parametrize("pattern,what", [
    (r"(?=a)b", "lookahead"), (r"(?<!a)b", "lookbehind"), (r"(a)\1", "backreference"),
    (r"\bx", "word boundary"), (r"a++", "possessive"), (r"(?i)a", "inline flag"),
    (r"(?>a)", "atomic"), (r"((", "invalid regex"),
])
def test_regex_refusals_name_the_construct(pattern, what):
    with pytest.raises(RegexError, match=what):
        compile_dfa(pattern)


@settings(database=None, max_examples=60, deadline=None)
@given(st.text(alphabet="ab", max_size=6), st.text(alphabet="ab", max_size=6))
def test_automata_ops_agree_with_sets(s1, s2):
    a = compile_dfa(r"^a+b*$")
    b = compile_dfa(r"ab")
    words = {s1, s2, "ab", "aab", "b", ""}
    for w in words:
        ina, inb = a.matches(w), b.matches(w)
        assert a.intersect(b).matches(w) == (ina and inb)
        assert a.minus(b).matches(w) == (ina and not inb)
        assert a.union(b).matches(w) == (ina or inb)
        assert a.complement().matches(w) == (not ina)


def test_length_oracle():
    d = compile_dfa(r"(ab)+", "fullmatch")
    lens = d.lengths()
    assert lens.feasible(0, 4, 4) and not lens.feasible(0, 3, 3)
    assert lens.feasible(0, 3, None) and not lens.feasible(0, 0, 1)
    assert DFA.universal().lengths().feasible(0, 5, 5)


@pytest.mark.parametrize("pattern", [
    r"(ab)+", r"a{2,5}", r"(?:\S+\s+){0,9}\S+", r"(aaa|aaaaa)+b?", r"x|yz{3}w*",
    r"[0-9]{3}-[0-9]{2}(-[a-f]{4})?", r"(a|bc)*d{0,3}", r"abc"])
def test_length_oracle_every_state_against_reachable_sets(pattern):
    """The oracle's linear-time bounds (shortest / longest accepted continuation)
    answer exactly as the lengths read off the sets reachable in k steps."""
    for mode in ("fullmatch", "search"):
        d = compile_dfa(pattern, mode)
        lens = d.lengths()
        K = 4 * d.n + 40
        for s in range(d.n):
            cur, acc = {s}, []
            for _ in range(K + 1):
                acc.append(any(d.finals[x] for x in cur))
                cur = {t for x in cur for _, _, t in d.edges[x]}
            for lo in range(0, 12):
                assert lens.feasible(s, lo, None) == any(acc[lo:]), (pattern, s, lo)
                for hi in range(lo, lo + 12):
                    assert lens.feasible(s, lo, hi) == any(acc[lo:hi + 1]), (pattern, s, lo, hi)
            assert lens.feasible(s, -3, 2) == any(acc[:3])


def test_format_tables_match_jsonschema():
    for cls, draft in [(jsonschema.Draft4Validator, "draft4"), (jsonschema.Draft6Validator, "draft6"),
                       (jsonschema.Draft7Validator, "draft7"),
                       (jsonschema.Draft201909Validator, "draft2019-09"),
                       (jsonschema.Draft202012Validator, "draft2020-12")]:
        assert set(cls.FORMAT_CHECKER.checkers) == CHECKED[draft], draft


SEEDS = {
    "date": ["2020-02-29", "2019-02-29", "2000-02-29", "1900-02-29", "0000-01-01", "2021-04-31",
             "9999-12-31", "0001-01-01"],
    "date-time": ["2020-02-29T23:59:59Z", "2020-02-29t23:59:59.123z", "2021-01-01T00:00:00+05:30",
                  "2021-01-01T24:00:00Z", "2021-13-01T00:00:00Z"],
    "time": ["23:59:59Z", "00:00:00.5+01:00", "12:00:00", "12:60:00Z"],
    "ipv4": ["1.2.3.4", "255.255.255.255", "256.1.1.1", "01.2.3.4", "0.0.0.0"],
    "ipv6": ["::", "::1", "1::", "fe80::1%eth0", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::",
             "::ffff:1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "1::2::3", ":1::2"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000"],
    "uri": ["http://a.b/c?d#e", "a:b", "mailto:x@y", "http://[::1]:80/", "//a", "http://a b"],
    "hostname": ["example.com", "a", "a-b.c", "-a.com", "a-.com", "a" * 63 + ".com", "a" * 64,
                 "example.com."],
    "email": ["a@b", "ab"],
}
MUT = list("0123456789abcdefABCDEF:-.TtZz+ /@%[]\n_é")


@pytest.mark.parametrize("fmt", sorted(SEEDS))
def test_formats_never_accept_what_jsonschema_rejects(fmt):
    fc = jsonschema.Draft202012Validator.FORMAT_CHECKER
    variants = format_variants(fmt)
    rng = random.Random(fmt)

    def mine(s: str) -> bool:
        cps = [ord(c) for c in s]
        return any(d.accepts(cps) and lo <= len(cps) and (hi is None or len(cps) <= hi)
                   for d, lo, hi in variants)

    pool = list(SEEDS[fmt])
    rejected_valid = 0
    for _ in range(1500):
        s = list(rng.choice(pool))
        for _ in range(rng.randint(0, 2)):
            i = rng.randint(0, len(s))
            op = rng.random()
            if op < 0.4 and s:
                s[min(i, len(s) - 1)] = rng.choice(MUT)
            elif op < 0.7:
                s.insert(i, rng.choice(MUT))
            elif s:
                del s[min(i, len(s) - 1)]
        s = "".join(s)
        ok = fc.conforms(s, fmt)
        got = mine(s)
        assert not (got and not ok), f"{fmt}: accepts {s!r} which jsonschema rejects"
        if ok and not got:
            rejected_valid += 1
        if ok and rng.random() < 0.3:
            pool.append(s)
    if fmt != "uuid":  # uuid: RFC 4122 form only (listed departure)
        assert rejected_valid == 0, f"{fmt}: {rejected_valid} valid strings rejected"
