"""Duplicate object keys in the reference engine (``reference_engine/keys.py``).

Declared keys are tracked by the automaton; keys matched only by
``additionalProperties`` / ``patternProperties`` are checked by the matcher's key
tracker, in the mask and in the commit alike. These tests use the real Llama-3
vocabulary and compare masks with a brute-force simulation of every id (automaton
plus duplicate-key check) at the steps that matter.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import reference_helpers as H
from engines.bitmask import allocate_bitmask
from engines.protocol import CompileError
from reference_engine import keys as K

#: the fuzz suite's finding: the inner object allows extra keys
IDTAG = {"type": "object", "properties": {"idTagInfo": {"type": "object",
                                                        "properties": {"status": {"type": "string"}}}}}


def _allowed(m, bm, t: int) -> bool:
    m.fill_mask(bm)
    return bool(bm[t >> 5] >> (t & 31) & 1)


def _dup_step(g, text: str, brute: bool = True):
    """Replay ``text`` token by token; at every step check that the mask agrees with the
    commit on the next token (and, at the rejected step, with the full brute force).
    Returns (byte offset, bytes) of the rejected token, or None if all were committed."""
    v = H.vocab()
    m = g.matcher()
    bm = allocate_bitmask(v.size)
    pos = 0
    for t in v.encode(text):
        in_mask = _allowed(m, bm, t)
        if not in_mask and brute:
            assert (bm == H.full_brute_force(g.compiled, m._m)).all(), text
        assert m.commit(t) == in_mask, (text, pos, v.tokens[t])
        if not in_mask:
            return pos, v.tokens[t]
        pos += len(v.tokens[t])
    assert m.eos_allowed(), text
    return None


@pytest.mark.parametrize("text", [
    '{"idTagInfo": {"idTagInfo": 1, "idTagInfo": 2}}',
    '{"idTagInfo": {"x": 1, "y": 2, "x": 3}}',
    '{"idTagInfo": {"x":1,"x":2}}',
    # escaped spellings of the same key, either way round
    '{"idTagInfo": {"x": 1, "\\u0078": 2}}',
    '{"idTagInfo": {"\\u0078": 1, "x": 2}}',
    '{"idTagInfo": {"idTagInfo": 1, "idTagInf\\u006f": 2}}',
    '{"idTagInfo": {"a/b": 1, "a\\/b": 2}}',
    '{"idTagInfo": {"\\"q": 1, "\\u0022q": 2}}',
    # keys with an escaped quote or backslash, repeated
    '{"idTagInfo": {"q\\"": 1, "q\\"": 2}}',
    '{"idTagInfo": {"q\\\\": 1, "q\\\\": 2}}',
    # the repeated key after a nested object closes
    '{"idTagInfo": {"x": {"x": 1, "y": {}}, "y": [1, {"x": 2}], "x": 3}}',
])
def test_duplicate_extra_key_rejected_by_mask_and_commit(text):
    g = H.adapter().compile(json.dumps(IDTAG))
    got = _dup_step(g, text)
    assert got is not None, text
    pos, tok = got
    # the rejected token is the one that closes the repeated key
    second = text.encode().rfind(b'":')
    assert pos <= second < pos + len(tok), (text, pos, tok)


@pytest.mark.parametrize("text", [
    '{"idTagInfo": {"x": 1, "y": 2, "xx": 3, "X": 4}}',
    '{"idTagInfo": {"status": "a", "idTagInfo": 1, "x": {"x": {"x": 1}}}}',
    '{"idTagInfo": {"a": [{"a": 1}, {"a": 2}], "b": {"a": 1}}}',
    '{"idTagInfo": {"\\u0078y": 1, "x": 2, "y\\u0078": 3}}',
])
def test_distinct_extra_keys_still_pass(text):
    g = H.adapter().compile(json.dumps(IDTAG))
    assert _dup_step(g, text, brute=False) is None
    assert H.replay(g, text)[:2] == (True, True)


def test_duplicate_keys_in_free_objects_and_patterns():
    """``{}`` (any object) and ``patternProperties`` regions: repeats rejected in the
    same region and across regions; the compact configuration too."""
    pat = {"type": "object", "properties": {"id": {"type": "integer"}},
           "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": {"type": "string"}}
    for config in ("default", "compact"):
        sep = ", " if config == "default" else ","
        col = ": " if config == "default" else ":"
        g = H.adapter(config).compile(json.dumps(pat))
        ok = "{" + sep.join([f'"id"{col}1', f'"x-a"{col}2', f'"b"{col}"s"', f'"x-b"{col}3']) + "}"
        assert _dup_step(g, ok, brute=False) is None
        for dup in (f'"x-a"{col}4', f'"b"{col}"t"', f'"x\\u002da"{col}5'):
            bad = ok[:-1] + sep + dup + "}"
            assert _dup_step(g, bad, brute=(config == "default")) is not None, bad
    g = H.adapter().compile(json.dumps({"type": "object"}))
    assert _dup_step(g, '{"a": 1, "b": {"a": 2}}', brute=False) is None
    assert _dup_step(g, '{"a": 1, "b": {"a": 2}, "a": 3}') is not None


def test_rollback_restores_the_seen_keys():
    v = H.vocab()
    g = H.adapter().compile(json.dumps(IDTAG))
    m = g.matcher()
    bm = allocate_bitmask(v.size)
    head = v.encode('{"idTagInfo": {"x": 1')
    for t in head:
        assert m.commit(t)
    tail = v.encode(', "y": 2')
    for t in tail:
        assert m.commit(t)
    again = v.encode(', "y"')
    m2 = g.matcher()
    for t in head + tail:
        m2.commit(t)
    assert not all(m2.commit(t) for t in again)  # "y" is seen
    m.rollback(len(tail))  # forget "y" ...
    for t in again:  # ... so it is allowed again, in the mask and the commit
        assert _allowed(m, bm, t)
        assert m.commit(t)
    m.rollback(len(again))
    x_again = v.encode(', "x"')  # "x" is still seen
    results = []
    for t in x_again:
        in_mask = _allowed(m, bm, t)
        ok = m.commit(t)
        assert ok == in_mask
        results.append(ok)
        if not ok:
            break
    assert not all(results)
    m.reset()
    for t in v.encode('{"idTagInfo": {"y": 1, "x": 2}}'):
        assert m.commit(t)
    assert m.eos_allowed()


def test_mask_equals_full_brute_force_at_key_positions():
    """Bit for bit over all 128,256 ids where the check matters: inside a key that
    could repeat one, right after a separator, right after a nested object."""
    v = H.vocab()
    g = H.adapter().compile(json.dumps(IDTAG))
    text = '{"idTagInfo": {"x": {"x": 1}, "idTagInfo": 1, "st": 2, "s'
    m = g.matcher()
    bm = allocate_bitmask(v.size)
    ids = v.encode(text)
    checked = 0
    pos = 0
    for i, t in enumerate(ids):
        pos += len(v.tokens[t])
        assert m.commit(t)
        tail = text.encode()[:pos]
        if tail.endswith((b', "', b'}', b', ', b'"s', b'"st')) or i == len(ids) - 1:
            m.fill_mask(bm)
            assert (bm == H.full_brute_force(g.compiled, m._m)).all(), tail
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("key", ['q"', 'q\\', 'q="'])
def test_escaped_tokens_that_close_a_seen_key_are_refused(key):
    """Inside a key prefix (``"q``) whose seen completion holds an escaped character,
    the tokens that begin with the rest of that key, escape and closing quote included
    (``\\""``, ``\\\\"``, ``=\\""``...), repeat it: refused in the mask, bit for bit as
    the brute force says, where the first member allows them."""
    v = H.vocab()
    g = H.adapter().compile(json.dumps(IDTAG))
    bm = allocate_bitmask(v.size)
    rest = json.dumps(key)[2:].encode()  # after '"q': the escaped rest and the quote
    closing = [t for t in range(v.size)
               if v.tokens[t] in (rest, rest + b":", rest + b": ", rest + b'":')]
    assert closing, rest
    for prefix, repeat in (('{"idTagInfo": {"q', False),
                           ('{"idTagInfo": {' + json.dumps(key) + ': 1, "q', True)):
        m = g.matcher()
        for t in v.encode(prefix):
            assert m.commit(t), prefix
        m.fill_mask(bm)
        assert (bm == H.full_brute_force(g.compiled, m._m)).all(), prefix
        for t in closing:
            assert bool(bm[t >> 5] >> (t & 31) & 1) != repeat, (prefix, v.tokens[t])


def test_tracker_unit():
    s = K.step(K.START, b'{"a": "x\\"y\\\\", "b": [{"a": 1}], "c')
    assert s is not None and s[2] == K.KEY and s[4] == b"c"
    assert s[0] == (frozenset({"a", "b"}),)
    assert K.step(s, b'": 1, "a"') is None
    assert K.step(s, b'\\u0061"') is not None  # "ca" is new
    assert K.step(K.START, b'{"\\ud83d\\ude00": 1, "\xf0\x9f\x98\x80"') is None
    assert K.step(K.START, b'["a", "a", {"a": "a"}]') is not None


def test_finite_extra_key_languages_never_run_out():
    """``^(a|b)$`` under ``additionalProperties: false`` allows four keys (``a``,
    ``b``, and with Python's ``$`` ``a\\n``, ``b\\n``): once all four are seen, the
    ``,`` the automaton still allows would lead nowhere, so it leaves the mask and the
    commit refuses it; ``}`` stays. Before that, ``,`` stays allowed."""
    from reference_engine.keys import fewest_extra_keys

    v = H.vocab()
    schema = {"type": "object", "patternProperties": {"^(a|b)$": {"type": "integer"}},
              "additionalProperties": False}
    g = H.adapter().compile(json.dumps(schema))
    assert fewest_extra_keys(g.compiled.pda.grammar) == 4
    assert g.compiled.masks.key_floor == 4
    comma, close = v.encode(",")[0], v.encode("}")[0]
    m, bm = _mask_of(g, '{"a": 1, "b\\n": 2, "a\\n": 3')
    assert bm[comma >> 5] >> (comma & 31) & 1
    m, bm = _mask_of(g, '{"a": 1, "b\\n": 2, "a\\n": 3, "b": 4')
    assert not bm[comma >> 5] >> (comma & 31) & 1
    assert bm[close >> 5] >> (close & 31) & 1
    assert not m.commit(comma)
    m, bm = _mask_of(g, '{"a": 1, "b\\n": 2, "a\\n": 3, "')
    for tok, want in (("a", 0), ("b", 1)):  # a and a\\n are seen, b is not
        t = v.encode(tok)[0]
        assert bm[t >> 5] >> (t & 31) & 1 == want, tok
    # nested: the inner object runs out, the outer one goes on
    outer = {"type": "object", "additionalProperties": schema}
    g = H.adapter().compile(json.dumps(outer))
    text = '{"x": {"a": 1, "b": 2, "a\\n": 3, "b\\n": 4}, "y": {"a": 1}}'
    assert _dup_step(g, text, brute=False) is None
    _mask_of(g, '{"x": {"a": 1, "b": 2, "a\\n": 3, "b\\n": 4}')
    # a huge finite language (24 hex digits) compiles; its floor is never reached
    g = H.adapter().compile(json.dumps({"type": "object", "patternProperties": {
        "^[A-Fa-f0-9]{24}$": {}}, "additionalProperties": False}))
    assert g.compiled.masks.key_floor > 10 ** 20
    assert _dup_step(g, '{"%s": 1, "%s": 2}' % ("a" * 24, "b" * 24), brute=False) is None


def test_a_single_extra_key():
    """``^a\\Z`` allows one key: after it no ``,``; at ``{`` the full brute force
    covers tokens that would close the key and add a ``,`` at once."""
    v = H.vocab()
    g = H.adapter().compile(json.dumps({"type": "object", "patternProperties": {"^a\\Z": {}},
                                        "additionalProperties": False}))
    assert g.compiled.masks.key_floor == 1
    _mask_of(g, "{")
    _mask_of(g, '{"')
    m, bm = _mask_of(g, '{"a": 1')
    comma, close = v.encode(",")[0], v.encode("}")[0]
    assert not bm[comma >> 5] >> (comma & 31) & 1
    assert bm[close >> 5] >> (close & 31) & 1
    assert _dup_step(g, '{"a": 1}', brute=False) is None


def test_min_properties_beyond_finitely_many_extra_keys_is_refused():
    """The automaton counts extra keys as unlimited towards ``minProperties``; with
    four possible keys, ``minProperties: 5`` would end in a dead end: refused."""
    schema = {"type": "object", "patternProperties": {"^(a|b)$": {}},
              "additionalProperties": False, "minProperties": 5}
    with pytest.raises(CompileError, match="minProperties 5 .*patternProperties"):
        H.adapter().compile(json.dumps(schema))
    g = H.adapter().compile(json.dumps({**schema, "minProperties": 4}))
    assert _dup_step(g, '{"a": 1, "b": 2, "a\\n": 3, "b\\n": 4}', brute=False) is None


def _mask_of(g, text: str):
    v = H.vocab()
    m = g.matcher()
    for t in v.encode(text):
        assert m.commit(t), text
    bm = allocate_bitmask(v.size)
    m.fill_mask(bm)
    assert (bm == H.full_brute_force(g.compiled, m._m)).all(), text
    return m, bm


def test_no_dead_end_where_a_key_prefix_has_finitely_many_completions():
    """An infinite extra-key language may still have prefixes with finitely many
    completions (``abc`` after ``a`` under ``^(abc|x.*)$``; Python's ``$`` lets
    ``a\\n`` end a key under ``^[ab]+$``): once those keys are all seen, a token that
    leads into such a prefix is out of the mask and refused by the commit."""
    v = H.vocab()
    g = H.adapter().compile(json.dumps(
        {"type": "object", "patternProperties": {"^(abc|x.*)$": {}}, "additionalProperties": False}))
    head = '{"abc": 1, "abc\\n": 2, '
    m, bm = _mask_of(g, head)
    for tok, want in ((' "a', False), ('"a', False), ('"x', True), ('"', True)):
        ids = v.encode(tok)
        if len(ids) != 1:
            continue
        t = ids[0]
        assert bool(bm[t >> 5] >> (t & 31) & 1) == want, tok
        assert m.commit(t) == want, tok
        if want:
            m.rollback(1)
        else:
            m = _mask_of(g, head)[0]
    m, bm = _mask_of(g, head + '"')
    for tok in ("a", "ab", "abc"):
        t = v.encode(tok)
        if len(t) == 1:
            assert not bm[t[0] >> 5] >> (t[0] & 31) & 1, tok
    assert _dup_step(g, head + '"abc": 3}') is not None
    assert _dup_step(g, head + '"xa": 3}', brute=False) is None
    # only the one-completion prefix is cut, after "a" the key can still go on
    g = H.adapter().compile(json.dumps(
        {"type": "object", "patternProperties": {"^[ab]+$": {}}, "additionalProperties": False}))
    m, bm = _mask_of(g, '{"a": 1, "a\\n": 2, "a')
    nl = v.encode('\\n')
    if len(nl) == 1:
        assert not bm[nl[0] >> 5] >> (nl[0] & 31) & 1
        assert not m.commit(nl[0])
    assert _dup_step(g, '{"a": 1, "a\\n": 2, "ab": 3}', brute=False) is None


def test_infinite_extra_key_languages_compile_and_walk():
    """Extra keys with infinitely many completions after every prefix compile (also
    when one region alone would be finite), and seeded walks that prefer short keys
    never meet an empty mask and never repeat a key."""
    v = H.vocab()
    bm = allocate_bitmask(v.size)
    schemas = [
        {"type": "object", "patternProperties": {"^(abc|x.*)$": {"type": "integer"}}},
        {"type": "object", "patternProperties": {"^[ab]+$": {"type": "integer"}},
         "additionalProperties": False, "maxProperties": 6},
    ]
    rng = random.Random(7)
    for schema in schemas:
        g = H.adapter().compile(json.dumps(schema))
        for _ in range(3):
            m = g.matcher()
            out = b""
            for step in range(80):
                m.fill_mask(bm)
                ids = np.flatnonzero(np.unpackbits(bm.view(np.uint8), bitorder="little")[: v.size])
                assert ids.size, (schema, out)
                allowed = [t for t in ids.tolist() if t not in v.stop_ids]
                if not allowed:
                    break
                short = [t for t in allowed if len(v.tokens[t].strip()) <= 2]
                t = rng.choice(short or allowed)
                assert m.commit(t)
                out += v.tokens[t]
            if step < 79:
                pairs = json.loads(out.decode(), object_pairs_hook=lambda p: p)
                assert len({k for k, _ in pairs}) == len(pairs), out


#: patternProperties with the default additionalProperties (o14390's shape)
HEX_KEYS = {"type": "object", "patternProperties": {"^[a-fA-F0-9]+$": {"type": "integer"}}}


def test_repeats_only_close_reads_the_union_of_an_objects_extra_keys():
    """The dead-end searches are skipped iff every object's extra keys, taken together,
    have infinitely many completions after every prefix: the hex region alone has
    ``ab\\n`` with one completion, the other region continues it; without that region
    (``additionalProperties: false``) the prefix can run out."""
    def close_only(schema) -> bool:
        return K.repeats_only_close(H.adapter().compile(json.dumps(schema)).compiled.pda.grammar)

    assert close_only(HEX_KEYS)
    assert close_only(IDTAG)
    assert not close_only({**HEX_KEYS, "additionalProperties": False})
    assert not close_only({"type": "object", "patternProperties": {"^(abc|x.*)$": {}},
                           "additionalProperties": False})


def _plain_key_check(pda, configs, kstate, data: bytes) -> bool:
    """The duplicate-key rule read straight from its definition, without the matcher's
    shortcuts: no key of the token's objects repeats, and a key left open keeps a fresh
    completion."""
    ks = K.step(kstate, data)
    if ks is None:
        return False
    if K.suspect(ks):
        res = pda.advance(configs, data)
        return res is None or K.has_fresh_completion(pda, res[0], ks)
    return True


@pytest.mark.parametrize("schema,text", [
    (IDTAG, '{"idTagInfo": {"x": {"x": 1, "y": "a\\"b"}, "y": [1, {"x": 2}], "z": "q", "x'),
    (IDTAG, '{"idTagInfo": {"name": 1, "st": 2, "name'),
    ({"type": "object", "properties": {"a": {"type": "object"}}},
     '{"a": {"k": {"k": "}, \\"k\\""}, "k2": 1}, "k": 1, "a'),
    ({"type": "object", "properties": {"name": {"type": "string"}}},
     '{"name": "n", "e": "x\\\\", "e'),
    # a pattern region with one-completion prefixes (Python's ``$``: ``ab\n``) beside
    # the default additionalProperties: only the union of the regions is infinite
    # from every prefix, and the shortcut takes it
    (HEX_KEYS, '{"ab": 1, "ab\\n": 2, "x": 3, "ab'),
])
def test_key_check_shortcuts_agree_with_the_plain_rule(schema, text):
    """At every step, for every token with a quote (the only ones the rule can refuse
    outside a key being read) and every token continuing a key: the mask after the key
    check equals "the automaton allows it and the plain rule allows it". The matcher's
    shortcuts (declared keys left to the object frames, only tokens that can close or
    write a seen key checked, no dead-end search where extra keys are infinite) must
    not change a bit."""
    v = H.vocab()
    g = H.adapter().compile(json.dumps(schema))
    m = g.matcher()
    inner = m._m
    pda = g.compiled.pda
    bm = allocate_bitmask(v.size)
    quoted = [t for t, d in enumerate(v.tokens) if d and b'"' in d and t not in v.special_ids]
    plain_ids = [t for t, d in enumerate(v.tokens[:6000]) if d and t not in v.special_ids]
    refused = 0
    ids = v.encode(text)
    for step in range(len(ids) + 1):
        m.fill_mask(bm)
        got = H.mask_ids(bm, v.size)
        configs = inner._hist[-1][0]
        kstate = inner._keys[-1]
        for c in quoted + plain_ids:
            data = v.tokens[c]
            alive = pda.advance(configs, data) is not None
            want = alive and _plain_key_check(pda, configs, kstate, data)
            refused += alive and not want
            assert (c in got) == want, (text, data)
        if step < len(ids):
            assert m.commit(ids[step])
    assert refused, "the texts are chosen so that the rule refuses some token"
