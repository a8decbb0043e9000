"""Splits inside a length-windowed JSON string derived from the window's minimum
(``Derivations.window_reference`` / ``from_window``): under ``maxLength`` on a plain
string, a token lives at count ``c`` iff it lives at the minimum's count and the
characters it begins in the string (escapes, multi-byte and partial characters,
surrogate pairs; up to its closing quote) fit in ``maxLength - c``. Each derived split
must equal the split walked in full (accepted tokens and context-dependent groups), and
masks built from them must equal the brute force, on the real Llama-3 vocabulary."""

from __future__ import annotations

import json

import jsonschema
import pytest

import reference_helpers as H
from harness.registry import EngineSpec
from reference_engine.encoding import START, json_chars_started
from test_reference_derive import _accepted, _groups, replay_checking_new_nodes

SCHEMA = {"type": "object",
          "properties": {"short": {"type": "string", "maxLength": 5},
                         "name": {"type": "string", "minLength": 2, "maxLength": 14},
                         "tags": {"type": "array", "items": {"type": "string", "maxLength": 40}},
                         "code": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 6}},
          "additionalProperties": False}
DOCS = [{"short": "ab\"c", "name": "Zoë \\u00e9 日本", "tags": ["x" * 40, "😀\n\t" * 5, ""],
         "code": "abc"},
        {"name": "é\u00e9é\u00e9\\\\\\\"\"é", "tags": ["\ud83d\ude00" * 10, "a/b\\/c"],
         "short": "😀😀😀😀😀"}]


def _lazy():
    return EngineSpec("reference", "default").build(H.vocab(), precompute_s=0.0, warm_s=0.0)


@pytest.mark.parametrize("data, n", [
    (b"abc", 3), (b'ab"cd', 2), (b'"', 0), (b'\\n"x', 1), (b"\\u00e9z", 2),
    (b"\\ud83d\\ude00a\"", 2), (b"\\ud83d", 1), (b"\\", 1), (b"\xc3\xa9x", 2), (b"\xc3", 1),
    (b'a\\"b"c', 3), (b"\\x", None)])
def test_characters_begun(data, n):
    assert json_chars_started(data) == n


def test_windowed_splits_equal_full_splits_and_masks_stay_exact():
    g = _lazy().compile(json.dumps(SCHEMA))
    mc, pda = g.compiled.masks, g.compiled.pda
    texts = [json.dumps(doc, ensure_ascii=a) for doc in DOCS for a in (True, False)]
    checked = replay_checking_new_nodes(g, texts, lambda: mc.splits.derive.windowed, 8)
    assert checked >= 4, checked
    # every windowed position, derived, against the same split walked in full
    derived: dict[int, int] = {}  # per maxLength
    for f, fc in enumerate(pda.frag_class):
        if fc.hi is None:
            continue
        derived.setdefault(fc.hi, 0)
        for cnt in range(fc.hi + 1):
            s = pda.state_of((f, 0, START, cnt, 0))
            ref = mc.splits.derive.window_reference(s) if s >= 0 else None
            if ref is None:
                continue
            got = mc.splits.derive.from_window(s, *ref)
            full = mc.splits.walker.walked(s)
            assert (_accepted(got, mc.words) == _accepted(full, mc.words)).all(), (fc.hi, cnt)
            assert _groups(got) == _groups(full), (fc.hi, cnt)
            derived[fc.hi] += 1
    # every count above the minimum: short (1..5), name (3..14), tags (1..40, in the
    # first item and the next); not the pattern's (its automaton has more than one state)
    assert derived == {5: 5, 14: 12, 40: 80, 6: 0}, derived
    assert g.stats()["window_derived_nodes"] == mc.splits.derive.windowed > 0


TWIN_SCHEMA = {"type": "object",
               "properties": {
                   "words": {"type": "string", "pattern": "^(?:\\S+\\s+){0,40}\\S+$",
                             "maxLength": 300},
                   "text": {"type": "string", "minLength": 3, "maxLength": 400},
                   "either": {"anyOf": [{"type": "string", "pattern": "^[a-z ]*$",
                                         "maxLength": 250},
                                        {"type": "string", "pattern": "^[A-Z ]*!$",
                                         "minLength": 2, "maxLength": 260}]},
                   "items": {"type": "array",
                             "items": {"type": "string", "pattern": "^[^x]*(x[^x]*){0,9}$",
                                       "maxLength": 200}}},
               "additionalProperties": False}
TWIN_DOCS = [{"words": "We are looking for participants who have experience with digital "
                       "products, and are comfortable providing feedback on them: "
                       "every week, by phone or in person, for\u00a0a year",
              "text": "Zoë \u00e9 日本 \"quoted\" " * 6,
              "either": "HELLO THERE WORLD!",
              "items": ["a long item with x and x " * 3, "none here", "😀\n\t" * 9]},
             {"either": "lower case only " * 5, "words": "one\ttwo\n\nthree  four é",
              "items": []}]


def test_far_counters_take_their_unwindowed_twins_split_exactly():
    """A state whose counters are all far from their bounds takes the split of its
    twin without the window (:meth:`PDA.unwindowed`): equal to the split walked in
    full from the state itself, and masks equal to the brute force."""
    g = _lazy().compile(json.dumps(TWIN_SCHEMA))
    mc, pda = g.compiled.masks, g.compiled.pda
    texts = [json.dumps(doc, ensure_ascii=a) for doc in TWIN_DOCS for a in (True, False)]
    checked = replay_checking_new_nodes(g, texts, lambda: mc.splits.unwindowed, 10)
    assert checked >= 6, checked
    twinned = [s for s in list(mc._nodes)
               if mc.mask_key(s) != s and mc.splits.unwindowed_state(mc.mask_key(s)) >= 0]
    assert len(twinned) >= 8, len(twinned)
    # several automata (more than one state: no window reference) and two fragments
    # in one state (the anyOf) among them
    many = [s for s in twinned if any(len(it) == 5 and pda.frag_class[it[0]].dfa.n > 1
                                      for it in pda.items[s])]
    assert len(many) >= 4
    assert any(sum(len(it) == 5 for it in pda.items[s]) == 2 for s in twinned)
    for s in twinned[:6] + many[:6]:
        got = mc.node(s)
        full = mc.splits.walker.walked(s)
        assert (_accepted(got, mc.words) == _accepted(full, mc.words)).all(), s
        assert _groups(got) == _groups(full), s
    assert g.stats()["unwindowed_nodes"] == mc.splits.unwindowed > 0


NEAR_SCHEMA = {"type": "object",
               "properties": {
                   "words": {"type": "array",
                             "items": {"type": "string", "pattern": "^(?:\\S+\\s+){0,9}\\S+$",
                                       "maxLength": 60}},
                   "code": {"type": "string", "pattern": "^[a-z]+-[0-9]{2}$", "minLength": 4,
                            "maxLength": 12},
                   "tail": {"type": "string", "pattern": "x[^x]*$", "maxLength": 140}},
               "additionalProperties": False}
NEAR_DOCS = [{"words": ["We are looking for participants who have experience", "a b",
                        "é\u00a0ü\u3000日本語 ok", "x" * 60, "one two\tthree\nfour five six seven "
                        "eight nine ten"[:60].strip()],
              "code": "abcdefghi-42", "tail": "ab\"c\\\\x" + "y" * 60 + " \"\u2028 "},
             {"code": "ab-01", "words": ["\ud83d\ude00" * 20, "q"], "tail": "x"}]


def test_near_the_maximum_splits_derive_from_the_twin_exactly(monkeypatch):
    """Past the minimum but near the maximum, a patterned string's split is its
    twin's (no window) less the tokens and group nodes that begin too many
    characters, those within the automaton's reach of the budget read byte by byte:
    equal to the split walked in full at every count, and masks equal the brute force."""
    import reference_engine.derive as M
    # with the default cap a small budget in free text is walked instead (a test below);
    # here every near split is derived, however many tokens it reads byte by byte
    monkeypatch.setattr(M, "NEAR_BAND_MAX", 1 << 30)
    g = _lazy().compile(json.dumps(NEAR_SCHEMA))
    mc, pda = g.compiled.masks, g.compiled.pda
    texts = [json.dumps(doc, ensure_ascii=a) for doc in NEAR_DOCS for a in (True, False)]
    for doc in NEAR_DOCS:
        jsonschema.validate(doc, NEAR_SCHEMA)
    checked = replay_checking_new_nodes(g, texts, lambda: mc.splits.derive.near_windowed, 10)
    assert checked >= 6, checked
    seen = {}
    for s in list(mc._nodes):
        near = mc.splits.derive.near_window(s) if isinstance(s, int) else None
        if near is None:
            continue
        (f, d, _, cnt, _), = [it for it in pda.items[s] if len(it) == 5]
        seen.setdefault(pda.frag_class[f].hi, set()).add(near[2])
        got = mc.splits.derive.from_near_window(s, *near)
        full = mc.splits.walker.walked(s)
        assert (_accepted(got, mc.words) == _accepted(full, mc.words)).all(), (s, near)
        assert _groups(got) == _groups(full), (s, near)
    # the three windows, with reaches 1 (a word), 4 (``a-42`` from the start) and 1 (``x``)
    assert seen == {60: {1}, 12: {4}, 140: {1}}, seen
    # and every count of one word state, from the minimum to the maximum
    f = next(f for f, fc in enumerate(pda.frag_class) if fc.hi == 60)
    n = 0
    for cnt in range(0, 61):
        s = pda.state_of((f, 1, START, cnt, 0))
        near = mc.splits.derive.near_window(s) if s >= 0 else None
        if near is not None:
            got = mc.splits.derive.from_near_window(s, *near)
            full = mc.splits.walker.walked(s)
            assert (_accepted(got, mc.words) == _accepted(full, mc.words)).all(), cnt
            assert _groups(got) == _groups(full), cnt
            n += 1
    assert n >= 50, n
    assert g.stats()["near_window_nodes"] == mc.splits.derive.near_windowed > 0


def test_string_liveness_read_off_the_fragment_equals_the_automatons_walk():
    """``_FragClass.lives`` (what ``_near_windowed`` asks of the tokens near the
    budget) answers as feeding the same bytes to the automaton from the string's
    state does, closing quote included: at every count of each windowed string, for
    tokens of the vocabulary that begin or end inside a string (escapes, multi-byte
    and partial characters, quotes), cut where the string ends."""
    from reference_engine.encoding import json_string_end

    g = _lazy().compile(json.dumps(NEAR_SCHEMA))
    mc, pda = g.compiled.masks, g.compiled.pda
    tb = mc.trie.token_bytes
    sample = [t for t in tb[::211] if t] + [b'"', b'a"', b'\\"', b'\\u00e9"', b"\xc3",
                                          b"\xc3\xa9\"", b" ", b"  \"", b"\\", b'"}']
    pairs = checked = alive = 0
    for f, fc in enumerate(pda.frag_class):
        if fc.hi is None:
            continue
        for d in range(fc.dfa.n):
            for cnt in range(0, fc.hi + 1, 3):
                s = pda.state_of((f, d, START, cnt, 0))
                if s < 0 or mc.splits.derive.string_item(s) is None:
                    continue
                for data in sample:
                    part = data[:json_string_end(data)]
                    st, ok = s, True
                    for b in part:
                        st = pda.materialise(st)[b]
                        if st < 0:
                            ok = False
                            break
                    assert fc.lives(d, START, cnt, part) == ok, (f, d, cnt, data)
                    assert mc.splits.derive.lives_in_string(s, data) == ok, (f, d, cnt, data)
                    checked += 1
                    alive += ok
                pairs += 1
    assert pairs >= 40 and checked > 20_000 and 0 < alive < checked, (pairs, checked, alive)


def test_near_the_maximum_with_a_wide_band_walks_instead():
    """Where more than NEAR_BAND_MAX of the twin's tokens would be read byte by byte
    (a free-text pattern a few characters from its maximum), the split is walked: it
    is not counted as derived, and it equals the full walk."""
    g = _lazy().compile(json.dumps(NEAR_SCHEMA))
    mc, pda = g.compiled.masks, g.compiled.pda
    f = next(f for f, fc in enumerate(pda.frag_class) if fc.hi == 60)
    s = pda.state_of((f, 1, START, 57, 0))  # three characters left in a word
    near = mc.splits.derive.near_window(s)
    assert near is not None and near[1] == 3
    before = mc.splits.derive.near_windowed
    got = mc.splits.derive.from_near_window(s, *near)
    assert mc.splits.derive.near_windowed == before and s not in mc.splits.derive.near_twin
    full = mc.splits.walker.walked(s)
    assert (_accepted(got, mc.words) == _accepted(full, mc.words)).all()
    assert _groups(got) == _groups(full)
