"""Suite jump-forward: the engines' forced continuations (real engines, the real Llama-3
vocabulary), the reference engine's exact forced bytes, and the job's classification and
simulation on hand-made inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engines.bitmask import allocate_bitmask
from engines.token_bytes import encode_exact, utf8_complete
from suites.jump_forward.summary import NOT_MEASURED, jump_forward_rows
from suites.jump_forward.job import (_Oracle, classify_step, conflicts_with,
                                              noncanonical, simulate)
from harness.measure.tokens.oracle import Budget
from harness.registry import EngineSpec
from engines.vocab import load_vocabulary

CONST = json.dumps({"type": "object", "properties": {"a": {"const": "xyz"}}, "required": ["a"],
                    "additionalProperties": False})


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary("llama3")


@pytest.fixture(scope="module")
def engines(vocab):
    return {(name, config): EngineSpec(name, config).build(vocab, **kw) for name, config, kw in (
        ("reference", "compact", {}), ("reference", "default", {"max_ws": None}),
        ("xgrammar", "default", {}), ("llguidance", "default", {}))}


def _at(matcher, vocab, text: str):
    for t in vocab.encode(text):
        assert matcher.commit(t), text
    return matcher


def test_reference_forced_bytes_compact(engines, vocab):
    m = engines[("reference", "compact")].compile(CONST).matcher()
    # compact: no whitespace; keys and strings may hold escapes (\u0061 is "a"), so inside
    # them nothing is forced
    assert m.forced_continuation()[0] == b'{"'
    b, ids = _at(m, vocab, '{"a').forced_continuation()
    assert b == b'":"' and b.startswith(b"".join(vocab.tokens[i] for i in ids))
    bm0, bm1 = allocate_bitmask(vocab.size), allocate_bitmask(vocab.size)
    m.reset()
    _at(m, vocab, '{"a":"xyz')
    m.fill_mask(bm0)
    b, ids = m.forced_continuation()
    assert b == b'"}'
    # nothing can follow '"}' here: the canonical token of the forced bytes is kept
    assert ids == vocab.encode('"}')
    m.fill_mask(bm1)
    assert np.array_equal(bm0, bm1)  # state unchanged
    assert m.commit(ids[0]) and m.eos_allowed()
    assert m.forced_continuation() == (b"", [])  # complete: nothing forced
    assert not m.commit(vocab.encode("x")[0])  # dead
    assert m.forced_continuation() == (b"", [])


def test_reference_drops_a_token_a_longer_allowed_one_extends(engines, vocab):
    a = engines[("reference", "default")]
    m = _at(a.compile(CONST).matcher(), vocab, '{"a": "xyz')
    # '"' is forced, but '",' / '"}' (longer tokens starting with it) are allowed there
    assert m.forced_continuation() == (b'"', [])
    m = _at(a.compile(json.dumps({"type": "null"})).matcher(), vocab, "n")
    b, ids = m.forced_continuation()
    assert b == b"ull" and b"".join(vocab.tokens[i] for i in ids) == b"ull"


@pytest.mark.parametrize("name", ["xgrammar", "llguidance"])
def test_peer_forced_continuations(engines, vocab, name):
    m = engines[(name, "default")].compile(CONST).matcher()
    assert m.forced_continuation()[0] == b"{"  # no leading whitespace in these engines
    b, ids = _at(m, vocab, '{"a": "').forced_continuation()
    assert b == b'xyz"'
    assert ids and b.startswith(b"".join(vocab.tokens[i] for i in ids))
    # the call leaves the state as it was
    assert m.commit(vocab.encode("xyz")[0])
    assert not m.commit(vocab.encode("}")[0])
    assert m.forced_continuation() == (b"", [])  # dead


def test_no_api_is_none(vocab):
    try:
        a = EngineSpec("outlines").build(vocab)
    except Exception as e:  # not installed here
        pytest.skip(str(e))
    assert a.compile(CONST).matcher().forced_continuation() is None


def test_classify_step():
    yes, no, unknown = (lambda d: True), (lambda d: False), (lambda d: None)
    assert classify_step(b"", b"abc", no) == "none"
    assert classify_step(b"abc", b"abc", no) == "exact"
    assert classify_step(b"ab", b"abc", no) == "short"
    assert classify_step(b"ab", b"", yes) == "unforced"
    assert classify_step(b"ab", b"", no) == "wrong"
    assert classify_step(b"abcd", b"abc", no) == "wrong"  # past the forced bytes, not viable
    assert classify_step(b"abcd", b"abc", yes) == "unforced"
    assert classify_step(b"ab", b"x", unknown) == "unchecked"
    assert classify_step(b"ab", None, yes) == "unchecked"


def test_noncanonical_and_exact_encoding(vocab):
    ll, o = vocab.encode("ll")[0], vocab.encode("o")[0]
    assert vocab.encode("llo") != [ll, o]
    assert noncanonical(vocab, [ll, o]) and not noncanonical(vocab, vocab.encode("llo"))
    assert not noncanonical(vocab, [])
    e = "é".encode()
    assert utf8_complete(b"h" + e[:1]) == b"h" and utf8_complete(b"h" + e) == b"h" + e
    ids = encode_exact(vocab, e[1:] + b"x")  # starts inside a character
    assert b"".join(vocab.tokens[i] for i in ids) == e[1:] + b"x"


def test_conflicts_with(vocab):
    first = np.fromiter((t[0] if t else -1 for t in vocab.tokens), np.int16, vocab.size)
    ids = lambda *ts: np.array([vocab.encode(t)[0] for t in ts])  # noqa: E731
    assert not conflicts_with(b'a"', ids("a"), False, vocab, first)
    assert conflicts_with(b'a"', ids("a", "b"), False, vocab, first)
    assert conflicts_with(b'a"', ids("a"), True, vocab, first)  # EOS allowed
    assert conflicts_with(b'xyz"', ids("xy", "xz"), False, vocab, first)  # 'xz' does not fit
    assert not conflicts_with(b"", ids("b"), True, vocab, first)


def test_simulate(engines, vocab):
    text = b'{"a": "xyz"}'
    g = engines[("xgrammar", "default")].compile(CONST)
    m = g.matcher()
    sim = simulate(m, lambda pos: m.forced_continuation()[1], text, vocab)
    assert sim["status"] == "done" and m.eos_allowed()
    assert sim["free"] > 0 and sim["share"] == sim["free"] / (sim["free"] + sim["passes"])
    # no jump-forward: every token is a forward pass, the canonical tokenisation
    m = g.matcher()
    sim = simulate(m, lambda pos: [], text, vocab)
    assert (sim["free"], sim["passes"], sim["share"]) == (0, len(vocab.encode(text.decode())), 0.0)
    # an offer that does not continue the text is not taken
    m = g.matcher()
    sim = simulate(m, lambda pos: vocab.encode("q"), text, vocab)
    assert sim["diverged"] == sim["passes"] and sim["free"] == 0
    # a text outside the language: the model's token is rejected, the walk ends
    m = g.matcher()
    sim = simulate(m, lambda pos: [], b'{"b": 1}', vocab)
    assert sim["status"] == "rejected" and sim["rejected_jump"] is False


def test_oracle_viability(engines, vocab):
    ref = engines[("reference", "default")]
    g = ref.compile(CONST)
    om = _at(g.matcher(), vocab, '{"a": "')
    o = _Oracle(Budget(30), {}, vocab)
    o.grammar = g
    bm0, bm1 = allocate_bitmask(vocab.size), allocate_bitmask(vocab.size)
    om.fill_mask(bm0)
    assert o.viable(om, b'xyz"') is True
    assert o.viable(om, b'xyz"}') is True
    assert o.viable(om, b"xyq") is False
    assert o.viable(om, b"q") is False
    assert o.viable(om, b'\\u0078') is True  # an escape spells the same string
    om.fill_mask(bm1)
    assert np.array_equal(bm0, bm1)  # the checks leave the oracle where it was


def test_rows_not_measured_and_pooled_share():
    inst = {"index": 0, "status": "accepted", "steps": 10, "counts": {"wrong": 1, "unforced": 2},
            "offered_steps": 4, "oracle_forced_steps": 2, "token_steps": 2, "noncanonical": 1,
            "mask_conflict": 0, "ff_ns": [1000, 3000], "mask_ns": [2000],
            "sim": {"status": "done", "free": 3, "passes": 7},
            "oracle_sim": {"status": "done", "free": 0, "passes": 10},
            "evidence": {"wrong": [{"step": 3, "prefix": "{", "offered": "x", "oracle": ""}]}}
    recs = [
        {"engine": "x", "case_id": "A---1.json", "subset": "A", "suite": "jump-forward",
         "outcome": "invalidation_error", "oracle": {"status": "ok"},
         "jump_forward": {"api": True, "instances": [inst]}},
        {"engine": "x", "case_id": "B---1.json", "subset": "B", "suite": "jump-forward",
         "outcome": "passing", "oracle": {"status": "timeout"},
         "jump_forward": {"api": True, "instances": [
             {**inst, "sim": {"status": "done", "free": 1, "passes": 1}, "evidence": {}},
             # a rejected walk: its steps count, its partial share does not
             {**inst, "status": "rejected", "evidence": {},
              "sim": {"status": "rejected", "free": 9, "passes": 1}}]}},
        {"engine": "o", "case_id": "A---1.json", "subset": "A", "suite": "jump-forward",
         "outcome": "passing", "jump_forward": {"api": None, "instances": [
             {"index": 0, "status": "accepted"}]}},
    ]
    block = jump_forward_rows(recs)
    rows = {(r["engine"], r["subset"]): r for r in block["rows"]}
    assert set(rows) == {("x", "A"), ("x", "B"), ("x", "all")}  # never a row for "o"
    assert block["not_measured"] == [{"engine": "o", "reason": NOT_MEASURED}]
    assert rows[("x", "all")]["jf_share"] == pytest.approx(4 / 12)  # pooled, not averaged
    assert rows[("x", "A")]["jf_share"] == pytest.approx(0.3)
    assert rows[("x", "all")]["wrong"] == 3 and rows[("x", "all")]["no_oracle"] == 1
    assert rows[("x", "B")]["rejected"] == 1 and rows[("x", "B")]["steps"] == 20
    assert rows[("x", "A")]["noncanonical"] == 0.5 and rows[("x", "A")]["ff_us"] == 2.0
    assert block["evidence"]["wrong"][0]["case_id"] == "A---1.json"
