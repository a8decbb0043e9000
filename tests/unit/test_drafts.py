"""Suite drafts: ``Matcher.validate_draft`` on every installed real engine (native draft
APIs and the token-by-token default), the draft plan and the figures."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engines.bitmask import allocate_bitmask
from engines.protocol import Matcher
from harness import registry
from suites.drafts.summary import draft_rows, summary_block
from suites.drafts.job import _corrupt_token, plan_drafts
from engines.vocab import load_vocabulary

ENGINES = ["xgrammar", "llguidance", "outlines", "reference", "llamacpp-gbnf"]
SCHEMA = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}},
                     "required": ["a"], "additionalProperties": False})
TEXT = '{"a": 12}'


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary("llama3")


_built: dict[str, object] = {}


@pytest.fixture(scope="module", params=ENGINES)
def grammar(request, vocab):
    name = request.param
    if not registry.is_installed(name):
        pytest.skip(f"{name} not installed")
    if name not in _built:
        _built[name] = registry.EngineSpec(name, "default").build(vocab).compile(SCHEMA)
    return _built[name]


def mask(m: Matcher, vocab) -> np.ndarray:
    bm = allocate_bitmask(vocab.size)
    m.fill_mask(bm)
    return bm


def forbidden(bm: np.ndarray, vocab, avoid=()) -> int:
    """A regular token the mask forbids (the first in id order not in ``avoid``)."""
    for t in range(vocab.size):
        if t not in vocab.special_ids and t not in avoid and not (int(bm[t >> 5]) >> (t & 31)) & 1:
            return t
    raise AssertionError("the mask forbids nothing")


def test_corrupt_token_gives_exactly_its_position(grammar, vocab):
    toks = vocab.encode(TEXT)
    ref = grammar.matcher()
    masks = []
    for t in toks:
        masks.append(mask(ref, vocab))
        assert ref.commit(t)
    m = grammar.matcher()
    before = mask(m, vocab)
    assert m.validate_draft(toks) == len(toks)
    for c in range(len(toks)):
        bad = forbidden(masks[c], vocab, avoid=toks)
        draft = toks[:c] + [bad] + toks[c + 1:]
        assert m.validate_draft(draft) == c, (c, bad)
        assert np.array_equal(mask(m, vocab), before)  # the state is unchanged, every bit
    assert m.validate_draft([]) == 0


def test_validate_from_the_middle_leaves_the_state(grammar, vocab):
    toks = vocab.encode(TEXT)
    m, fresh = grammar.matcher(), grammar.matcher()
    for t in toks[:3]:
        assert m.commit(t) and fresh.commit(t)
    assert m.validate_draft(toks[3:]) == len(toks) - 3
    assert np.array_equal(mask(m, vocab), mask(fresh, vocab))
    assert m.commit(toks[3])  # still usable: the next real token is accepted


def test_stop_token_counts_and_ends_the_draft(grammar, vocab):
    toks = vocab.encode(TEXT)
    eos, other = vocab.stop_ids[0], vocab.stop_ids[-1]
    space = vocab.encode(" ")[0]
    m = grammar.matcher()
    assert m.validate_draft(toks + [eos]) == len(toks) + 1
    # nothing after the stop token: not whitespace, not another stop, not a new document
    assert m.validate_draft(toks + [eos, space]) == len(toks) + 1
    assert m.validate_draft(toks + [other, eos]) == len(toks) + 1
    assert m.validate_draft(toks + [eos, toks[0]]) == len(toks) + 1
    # a stop where the grammar cannot end is refused like any other token
    assert m.validate_draft(toks[:-1] + [eos]) == len(toks) - 1
    assert m.validate_draft([eos]) == 0
    # at the end (llguidance has stopped by itself there): the stop alone, then nothing
    for t in toks:
        assert m.commit(t)
    assert m.validate_draft([eos]) == 1
    assert m.validate_draft([eos, space, eos]) == 1
    assert m.validate_draft([space]) in (0, 1)  # trailing whitespace: the engine's choice
    assert m.eos_allowed()


def test_dead_matcher_accepts_nothing(grammar, vocab):
    toks = vocab.encode(TEXT)
    m = grammar.matcher()
    assert not m.commit(toks[1])  # 'a' cannot start the object
    assert m.validate_draft(toks) == 0


def test_draft_api_is_named(grammar):
    api = type(grammar.matcher()).draft_api
    assert isinstance(api, str) and api


def test_default_is_token_by_token(vocab):
    for name in ("outlines", "reference"):
        if not registry.is_installed(name):
            continue
        m = registry.EngineSpec(name, "default").build(vocab).compile(SCHEMA).matcher()
        assert type(m).validate_draft is Matcher.validate_draft
        assert type(m).draft_api == "token by token"
    assert Matcher.draft_api == "token by token"


def test_native_apis_are_named(vocab):
    from engines.llguidance_engine import LLGuidanceMatcher
    from engines.xgrammar_engine import XGrammarMatcher

    assert "traverse_draft_tree" in XGrammarMatcher.draft_api
    assert "validate_tokens" in LLGuidanceMatcher.draft_api


def test_plan_is_seeded_and_in_range():
    a = plan_drafts(40, [1, 4, 8], 4, seed=0, case_id="x.json", instance=0)
    assert a == plan_drafts(40, [1, 4, 8], 4, seed=0, case_id="x.json", instance=0)
    assert a != plan_drafts(40, [1, 4, 8], 4, seed=1, case_id="x.json", instance=0)
    for k in (1, 4, 8):
        ds = [d for d in a if d["k"] == k]
        assert [d["kind"] for d in ds] == ["corrupt"] * 4 + ["clean", "past_end"]
        assert all(0 <= d["p"] <= 40 - k for d in ds if d["kind"] != "past_end")
        assert all(0 <= d["c"] < k for d in ds if d["kind"] == "corrupt")
        end = ds[-1]
        assert end["j"] == k // 2 and end["p"] == 40 - k // 2
    # an instance shorter than k: only the past-the-end draft
    assert [d["kind"] for d in plan_drafts(3, [8], 2, 0, "x", 0)] == ["past_end"]


def test_corrupt_token_is_forbidden_and_seeded(vocab):
    special = np.zeros(vocab.size, dtype=bool)
    special[list(vocab.special_ids)] = True
    bm = allocate_bitmask(vocab.size)
    bm[:] = -1
    bm[10 >> 5] &= ~np.int32(1 << 10)  # only token 10 forbidden (and no instance token)
    t, src = _corrupt_token(bm, [5, 6], vocab, special, np.random.default_rng(0))
    assert (t, src) == (10, "vocabulary")
    bm[6 >> 5] &= ~np.int32(1 << 6)
    t, src = _corrupt_token(bm, [5, 6], vocab, special, np.random.default_rng(0))
    assert (t, src) == (6, "instance")  # the instance's own forbidden token first


def test_rows_and_console_from_records(tmp_path):
    def d(k, kind, exp, got, v=1000, s=2000, **kw):
        return {"k": k, "kind": kind, "expected": exp, "got": got, "validate_ns": v,
                "steps_ns": s, **kw}

    recs = [
        {"engine": "a", "case_id": "s1", "suite": "drafts", "outcome": "passing",
         "drafts": {"api": "native", "failures": [], "notes": [],
                    "rows": [d(1, "corrupt", 0, 0), d(4, "clean", 4, 4, rollback="checked"),
                             d(4, "past_end", 3, 3, v=3000, s=3000)]}},
        {"engine": "b", "case_id": "s1", "suite": "drafts", "outcome": "invalidation_error",
         "drafts": {"api": "token by token", "notes": [],
                    "failures": [{"instance": 0, "kind": "past_end", "k": 4, "p": 8, "j": 2,
                                  "draft": [1, 2, 3, 4], "expected": 3, "got": 4,
                                  "after_stop": 1}],
                    "rows": [d(4, "past_end", 3, 4, after_stop=1),
                             d(4, "corrupt", 2, 1, mismatch=True), d(1, "clean", 1, None, error=True)]}},
        {"engine": "b", "case_id": "s2", "suite": "drafts", "outcome": "compile_error",
         "drafts": {"api": None, "rows": [], "failures": [], "notes": []}},
        {"engine": "b", "case_id": "s3", "suite": "drafts", "outcome": "crash"},
    ]
    a, b = draft_rows(recs)
    assert (a["engine"], a["drafts"], a["wrong_length"], a["rollback"]) == ("a", 3, 0, "checked")
    assert a["per_k"]["4"]["validate_us"] == pytest.approx(2.0)
    # two drafts of length 4: too few for a ratio, which says why instead of a figure
    assert a["per_k"]["4"]["ratio"] is None
    assert "2 sample(s), fewer than 3" in a["per_k"]["4"]["ratio_why"]
    three = [*recs[0]["drafts"]["rows"], d(4, "corrupt", 1, 1, v=2500, s=2500)]
    a3 = draft_rows([{**recs[0], "drafts": {**recs[0]["drafts"], "rows": three}}])[0]
    assert a3["per_k"]["4"]["ratio"] == pytest.approx(2.5 / 2.5)
    assert (b["schemas"], b["compiled"], b["died"], b["drafts"]) == (3, 1, 1, 3)
    assert (b["wrong_length"], b["short"], b["long"]) == (2, 1, 1)
    assert (b["rollback_mismatch"], b["after_stop"], b["errors"]) == (1, 1, 1)
    summary: dict = {}
    text = summary_block(summary, {}, recs, tmp_path)
    assert text.startswith("Speculative drafts") and "token by token" in text
    assert "1 token(s) accepted after the stop" in text
    assert summary["drafts"]["rows"][1]["engine"] == "b"
    assert json.loads((tmp_path / "drafts.json").read_text())[0]["api"] == "native"
    assert summary_block({}, {}, [{"engine": "x", "suite": "churn"}], None) is None
