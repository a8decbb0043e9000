"""Batch mask filling (engines' native batch APIs behind ``EngineAdapter.batch_filler``) and
``--batch 1,N`` sweeps of the e2e suite, on the real Llama-3 vocabulary."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engines.batch import BatchFiller
from engines.bitmask import allocate_bitmask, bitmask_words
from harness.registry import EngineSpec, is_installed
from engines.vocab import load_vocabulary
from tests.conftest import harness, link_real, read_records

ENGINES = [e for e in ("xgrammar", "llguidance", "outlines") if is_installed(e)]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
          "required": ["name"]}


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary("llama3")


def _advance(vocab, matcher, text: str) -> None:
    for t in vocab.encode(text):
        assert matcher.commit(t), text


@pytest.mark.parametrize("engine", ENGINES)
def test_batch_fill_equals_one_by_one(engine, vocab):
    """Rows filled together equal each matcher's own mask, for matchers at different
    states, with a dead matcher (all-zero row) and rows given out of order."""
    adapter = EngineSpec(engine).build(vocab)
    g = adapter.compile(json.dumps(SCHEMA))
    ms = [g.matcher() for _ in range(4)]
    _advance(vocab, ms[1], '{"name": "ab')
    _advance(vocab, ms[2], '{"name": "x", "n": 1')
    assert not ms[3].commit(vocab.encode("[")[0])  # dead: '[' cannot start the object
    bm = np.full((5, bitmask_words(vocab.size)), 7, dtype=np.int32)
    filler = adapter.batch_filler(2)
    try:
        filler.fill(ms, bm, [4, 2, 0, 1])
    finally:
        filler.close()
    assert (bm[3] == 7).all()  # a row not asked for is untouched
    one = allocate_bitmask(vocab.size)
    for m, row in zip(ms, [4, 2, 0, 1]):
        m.fill_mask(one)
        assert np.array_equal(one, bm[row]), (engine, row, filler.method)
    assert not bm[1].any()  # the dead matcher
    assert bm[4].any() and not np.array_equal(bm[4], bm[2])
    if engine in ("xgrammar", "llguidance"):
        assert type(filler) is not BatchFiller  # the engine's own batch API


@pytest.mark.parametrize("engine", ENGINES + ["reference"])
@pytest.mark.parametrize("threads", [1, 2])
def test_batch_commit_answers_as_one_by_one(engine, threads, vocab):
    """``BatchFiller.commit`` (xgrammar ``batch_accept_token``, llguidance
    ``consume_token_par``, else one by one) answers as ``Matcher.commit`` does, token by
    token, on twins at the same states: an accepted token, a refused one (the matcher is
    then dead), a stop id where the grammar can end and where it cannot, a special id, a
    dead matcher; and the states after it give the same masks."""
    adapter = EngineSpec(engine).build(vocab)
    g = adapter.compile(json.dumps(SCHEMA))
    stop = vocab.eos_id
    special = next(t for t in sorted(vocab.special_ids) if t not in vocab.stop_ids)
    prefixes = ['{"name": "ab', '{"name": "ab', '{"name": "x"}', '{"name": "x"',
                '{"name": "x"', '{"name": "x", "n": 1']
    tokens = [vocab.encode("c")[0], vocab.encode("\n")[0], stop, stop, special,
              vocab.encode("2")[0]]
    batch, alone = [g.matcher() for _ in prefixes], [g.matcher() for _ in prefixes]
    for ms in (batch, alone):
        for m, text in zip(ms, prefixes):
            _advance(vocab, m, text)
        assert not ms[4].commit(vocab.encode("[")[0])  # dead before the batch commit
    filler = adapter.batch_filler(threads)
    try:
        got = filler.commit(batch, tokens)
    finally:
        filler.close()
    want = [m.commit(t) for m, t in zip(alone, tokens)]
    assert got == want == [True, False, True, False, False, True], (engine, filler.commit_method)
    one, two = allocate_bitmask(vocab.size), allocate_bitmask(vocab.size)
    for a, b in zip(batch, alone):
        a.fill_mask(one)
        b.fill_mask(two)
        assert np.array_equal(one, two)
        assert a.eos_allowed() == b.eos_allowed()
    assert not batch[1].commit(vocab.encode("a")[0])  # refused in the batch: dead since
    assert not batch[3].commit(vocab.encode("}")[0])  # a refused stop id kills it too
    if engine in ("xgrammar", "llguidance"):
        assert filler.commit_method != BatchFiller.commit_method


def test_reference_batch_fill_from_threads_on_a_fresh_grammar(vocab):
    """The reference engine fills a batch from a thread pool; its compiled trie walk runs
    without the GIL while other threads build the same grammar's automaton rows and cache
    nodes. Rows filled concurrently on a fresh grammar equal masks filled one at a time
    on a second, separately compiled copy."""
    adapter = EngineSpec("reference").build(vocab)
    schema = json.dumps({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 40}, "tags": {"type": "array", "items": {
            "enum": ["ä", "b", "日本"]}}, "n": {"type": "integer", "minimum": -3}},
        "required": ["name"]})
    doc = '{"name": "Zoë ab", "tags": ["日本", "b"], "n": 12}'
    toks = vocab.encode(doc)
    cuts = [0, 1, 2, 3, 5, 8, 11, 14, len(toks) - 1]
    fresh, ref = adapter.compile(schema), adapter.compile(schema)
    batch, alone = [fresh.matcher() for _ in cuts], [ref.matcher() for _ in cuts]
    for ms in (batch, alone):
        for m, k in zip(ms, cuts):
            for t in toks[:k]:
                assert m.commit(t)
    bm = np.zeros((len(cuts), bitmask_words(vocab.size)), dtype=np.int32)
    filler = adapter.batch_filler(4)
    try:
        filler.fill(batch, bm, list(range(len(cuts))))
    finally:
        filler.close()
    one = allocate_bitmask(vocab.size)
    for i, m in enumerate(alone):
        m.fill_mask(one)
        assert np.array_equal(one, bm[i]), cuts[i]
        assert one.any()


@pytest.mark.slow
@pytest.mark.skipif(not is_installed("llguidance"), reason="llguidance not installed")
def test_cli_batch_sweep(tmp_path):
    data = tmp_path / "data"
    link_real(data, names=("Glaiveai2K---calculate_area_5c088303.json",))
    res, rep = tmp_path / "results", tmp_path / "reports"
    p = harness("run", "--suite", "e2e", "--engine", "llguidance", "--data", str(data),
                "--model", "micro", "--runtime", "torch", "--max-tokens", "10",
                "--batch", "1,3", "--results", str(res), "--reports", str(rep), "--no-progress")
    assert p.returncode == 0, p.stderr[-3000:]
    run, recs = read_records(res)
    r = recs[0]
    pts = r["e2e"]["by_batch"]
    assert [pt["batch"] for pt in pts] == [1, 3]
    assert "fill_next_token_bitmask_par" in pts[1]["fill"]
    assert all(pt["tpot_ns"] > 0 and pt["tpot_unconstrained_ns"] > 0 for pt in pts)
    assert len(r["steps_by_batch_ns"]["3"]["step"]) > 0
    block = json.loads((run / "summary.json").read_text())["engines"]["llguidance"]["e2e"]
    assert set(block["by_batch"]) == {"1", "3"} and block["by_batch"]["3"]["tpot_ms"] > 0
    assert "batch   3" in p.stdout
    assert (rep / run.name / "e2e_tpot_batch.png").stat().st_size > 1000
    assert "TPOT against batch" in (rep / run.name / "report.md").read_text()
    s = harness("summary", str(run), "--output", str(tmp_path / "again"))
    assert s.returncode == 0 and "end to end" in s.stdout


def test_batch_flag_rejects_bad_sizes(tmp_path):
    p = harness("run", "--suite", "e2e", "--engine", "llguidance", "--batch", "2,0")
    assert p.returncode == 2 and "--batch" in p.stderr
