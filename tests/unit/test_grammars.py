"""The grammar corpus and the grammar route of every engine adapter.

- every instance label of the corpus is re-checked by its ground-truth parser (Python's re,
  lark Earley, menu membership), and every translation by its own reader;
- the checker catches a mislabelled instance and a wrong translation (the check can fail);
- each adapter on a regex, a choice and a CFG case of the corpus: accept, reject, EOS,
  rollback, on the real Llama-3 vocabulary; a grammar an engine cannot read is its
  CompileError.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engines.bitmask import allocate_bitmask
from engines.protocol import CompileError, EngineUnavailable
from harness import registry
from harness.measure.languages import ReaderError, reader
from harness.measure.replay import replay
from harness.measure.target import GrammarTarget
from harness.suite.grammar_corpus import to_case
from suites.grammars import Grammars
from scripts.grammar_cases.check import check_case, main as check_main
from harness.suite.grammar_corpus import (CASES_DIR, CorpusError, case_files, gbnf_literal,
                                          load_corpus, load_file, regex_escape)

CASES = [c for c in load_corpus() if not isinstance(c, CorpusError)]
BY_ID = {c.case_id: c for c in CASES}


def test_every_corpus_file_loads():
    bad = [str(c) for c in load_corpus() if isinstance(c, CorpusError)]
    assert bad == []


def test_corpus_size_and_families():
    fams = {}
    for c in CASES:
        fams[c.family] = fams.get(c.family, 0) + 1
    assert len(CASES) >= 40, fams
    assert fams["regex"] >= 15 and fams["choice"] >= 5 and fams["cfg"] >= 12, fams
    # the SQL series: one grammar at three sizes of its injected column alternation
    assert {c.size for c in CASES if c.case_id.startswith("cfg-sql")} >= {10, 100, 1000}
    # choice menus from 2 to 10,000 entries
    sizes = sorted(len(c.forms["choice"]) for c in CASES if c.family == "choice")
    assert sizes[0] <= 2 and sizes[-1] >= 10_000


@pytest.mark.parametrize("case_id", sorted(BY_ID))
def test_labels_and_translations_agree_with_ground_truth(case_id):
    case = BY_ID[case_id]
    r = check_case(case)
    assert r.lines() == []
    labels = {lab for _, lab in case.instances}
    assert labels == {True, False}, "every case needs valid and invalid instances"


def _write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text, encoding="utf-8")
    return p


def test_checker_catches_a_mislabelled_instance_and_a_bad_translation(tmp_path, capsys):
    p = _write(tmp_path, "regex-x.toml", '''family = "regex"
regex = \'\'\'[0-9]+\'\'\'
[forms]
gbnf = \'\'\'root ::= [0-9]*\'\'\'
[instances]
valid = ["12", "x"]
invalid = ["", "3"]
''')
    (case,) = load_file(p)
    r = check_case(case)
    assert {t for t, _, _ in r.mislabelled} == {"x", "3"}
    # the GBNF form accepts "" where the source does not
    assert [(d, t) for d, t, _, _ in r.translation] == [("gbnf", "")]
    assert check_main([str(p)]) == 1
    assert "mislabelled instance 'x'" in capsys.readouterr().out


def test_malformed_files_give_one_line_naming_them(tmp_path):
    _write(tmp_path, "a-good.toml", 'family = "choice"\nchoices = ["a"]\n'
                                    '[instances]\nvalid = ["a"]\ninvalid = ["b"]\n')
    _write(tmp_path, "b-badtoml.toml", 'family = "regex\n')
    _write(tmp_path, "c-nosource.toml", 'family = "cfg"\n')
    _write(tmp_path, "d-family.toml", 'family = "sql"\n')
    _write(tmp_path, "e-inject.toml", 'family = "cfg"\nlark = "start: \\"a\\""\n'
                                      '[inject]\nplaceholder = "X"\nprefix = "c"\nsizes = [2]\n')
    errs = [str(e) for e in load_corpus(tmp_path) if isinstance(e, CorpusError)]
    assert [e.split(":")[0] for e in errs] == ["b-badtoml.toml", "c-nosource.toml",
                                               "d-family.toml", "e-inject.toml"]
    assert all("\n" not in e for e in errs)
    cases = list(Grammars(data=str(tmp_path)).cases())
    assert [c.load_error is None for c in cases] == [True, False, False, False, False]


def test_readers_refuse_unbuildable_grammars():
    with pytest.raises(ReaderError):
        reader("regex", "((")
    with pytest.raises(ReaderError):
        reader("lark", "start: undefined_rule")
    with pytest.raises(ReaderError):
        reader("gbnf", "root ::= root \"a\" | \"b\"")  # left recursion
    with pytest.raises(ReaderError):
        reader("lark", 'start: "a"\n%ignore " "')
    with pytest.raises(ReaderError, match="self-contained"):
        reader("lark", 'start: WORD\n%import common.WORD')


def test_escaping_round_trips_through_every_reader():
    menu = ['say "hi"', "C:\\path", "tab\there", "naïve", "日本", "🙂", "a|b", "(x)", "/", "\x7f"]
    for item in menu:
        assert reader("regex", regex_escape(item))(item)
        assert reader("gbnf", "root ::= " + gbnf_literal(item))(item)
        assert not reader("gbnf", "root ::= " + gbnf_literal(item))(item + "x")


def test_inject_sizes_share_instances():
    sql = sorted((c for c in CASES if c.case_id.startswith("cfg-sql")), key=lambda c: c.size)
    assert [c.size for c in sql][:3] == [10, 100, 1000]
    assert len(sql[2].forms["gbnf"]) > 50 * len(sql[0].forms["gbnf"]) / 10


# -- adapters ---------------------------------------------------------------------------

ENGINES = ["xgrammar", "llguidance", "outlines", "reference", "llamacpp-gbnf"]
#: one case of each family (all in the corpus)
REGEX, CHOICE, CFG = "regex-iso-date", "choice-yes-no", "cfg-arithmetic"


@pytest.fixture(scope="module")
def vocab():
    from engines.vocab import load_vocabulary

    return load_vocabulary("llama3")


@pytest.fixture(scope="module")
def adapters(vocab):
    out = {}
    for name in ENGINES:
        try:
            out[name] = registry.EngineSpec(name, "default").build(vocab)
        except EngineUnavailable:
            out[name] = None
    return out


def _target(case_id):
    return GrammarTarget(to_case(BY_ID[case_id]).to_job())


def _run(adapter, vocab, case_id, text):
    g = _target(case_id).compile(adapter)
    bm = allocate_bitmask(vocab.size)
    return replay(g.matcher(), vocab.encode(text), bm, vocab.stop_ids).status


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("case_id,valid,invalid,prefix", [
    (REGEX, "2024-02-29", "2024-13-01", "2024-02-"),
    (CHOICE, "yes", "nope", "ye"),
    (CFG, "(1+2)*-3", "(1+2", "(1+"),
])
def test_adapter_accepts_rejects_and_checks_eos(adapters, vocab, name, case_id, valid, invalid,
                                                 prefix):
    a = adapters[name]
    if a is None:
        pytest.skip(f"{name} not installed")
    if name == "outlines" and case_id == CFG:
        with pytest.raises(CompileError, match="regular expressions only|reads regex"):
            _target(case_id).compile(a)
        return
    assert _run(a, vocab, case_id, valid) == "accepted"
    assert _run(a, vocab, case_id, invalid) in ("rejected", "no_eos")
    # a valid prefix is not acceptance: EOS must be refused there
    assert _run(a, vocab, case_id, prefix) == "no_eos"


@pytest.mark.parametrize("name", [e for e in ENGINES if e != "llamacpp-gbnf"])
@pytest.mark.parametrize("case_id,text", [(REGEX, "2024-02-29"), (CHOICE, "yes"),
                                          (CFG, "12/(3-4)*-5")])
def test_adapter_rollback_gives_identical_masks(adapters, vocab, name, case_id, text):
    a = adapters[name]
    if a is None:
        pytest.skip(f"{name} not installed")
    try:
        g = _target(case_id).compile(a)
    except CompileError:
        assert name == "outlines" and case_id == CFG
        return
    toks = vocab.encode(text)
    m = g.matcher()
    bm = allocate_bitmask(vocab.size)
    seen = []
    for t in toks:
        m.fill_mask(bm)
        seen.append(bm.copy())
        assert m.commit(t)
    k = len(toks)
    m.rollback(k)
    for j, t in enumerate(toks):
        m.fill_mask(bm)
        assert np.array_equal(bm, seen[j]), f"mask {j} differs after rollback({k})"
        assert m.commit(t)
    assert m.eos_allowed()


def test_engine_without_a_form_it_reads_is_a_compile_error(adapters):
    a = adapters["outlines"]
    if a is None:
        pytest.skip("outlines not installed")
    with pytest.raises(CompileError, match="reads regex; this cfg case has forms in"):
        _target(CFG).compile(a)


def test_form_order_and_derived_forms(adapters):
    t = _target(CHOICE)
    for name, want in [("xgrammar", "regex"), ("llguidance", "regex"), ("reference", "regex")]:
        if adapters[name] is not None:
            t.compile(adapters[name])
            assert (t.form, t.derived) == (want, True)
    t = _target(CFG)
    if adapters["llguidance"] is not None:
        t.compile(adapters["llguidance"])
        assert (t.form, t.derived) == ("lark", False)


def test_family_table_counts_deaths_and_keeps_findings_apart():
    from suites.grammars.summary import false_accepts, family_table, false_rejects

    def rec(engine, cid, outcome, status=None, expected=True, **kw):
        r = {"engine": engine, "case_id": cid, "outcome": outcome, **kw}
        if status is not None:
            r.update(family="regex", form="regex", ttfm_ns=2_000_000, instances=[
                {"text": "x", "expected": expected, "results": {"text": {
                    "status": status, "mask_ns": [1000, 3000], "commit_ns": [0, 0]}}}])
        return r

    recs = [rec("a", "c1", "passing", "accepted"),
            rec("a", "c2", "invalidation_error", "accepted", expected=False),
            rec("b", "c1", "timeout"),  # the runner's record of a dead job: no family
            rec("b", "c2", "validation_error", "rejected",
                dialect=[{"text": "y", "truth": True, "status": "rejected", "construct": "\\d"}])]
    rows = {r["engine"]: r for r in family_table(recs)}
    assert (rows["a"]["cases"], rows["a"]["compiled"], rows["a"]["false_accepts"]) == (2, 2, 1)
    assert (rows["b"]["cases"], rows["b"]["compiled"], rows["b"]["deaths"]) == (2, 1, 1)
    assert rows["b"]["false_rejects"] == 1 and rows["b"]["dialect"] == 1
    assert rows["a"]["tbm_p50_us"] == 2.0 and rows["a"]["ttfm_p50_ms"] == 2.0
    assert [x["case"] for x in false_accepts(recs)] == ["c2"]
    assert [(x["engine"], x["case"]) for x in false_rejects(recs)] == [("b", "c2")]
