"""The two kinds of false reject and the dialect-difference probe.

- :func:`harness.measure.reachability.search` on a small exact matcher whose mask drops
  chosen tokens: another tokenisation found (with its witness), none (unwritable), the
  budget (undecided), an engine without rollback, the memo keeping an exponential number
  of tokenisations to a few calls;
- on outlines-core (the real engine, Llama-3 vocabulary): ``(?:a|ab)`` cannot write
  ``ab``; ``#7fAcfe`` of the hex-colour case is refused in its canonical tokenisation and
  accepted in another, whose tokens replay to acceptance;
- the construct probe: XGrammar's ASCII ``\\d`` explains its refusal of ``٣``;
  outlines-core reads ``\\d`` as Unicode, so its refusal of ``٣႘`` is not explained (an
  ordinary false reject); the regex rewrite itself;
- the counts in ``summary.json`` and the console row.
"""

from __future__ import annotations

import numpy as np
import pytest

from engines.bitmask import allocate_bitmask
from engines.protocol import CompiledGrammar, EngineUnavailable, Matcher
from harness.measure import reachability
from harness.measure.reachability import TOKENIZATION, UNDECIDED, UNWRITABLE, search
from harness.measure.replay import replay
from engines.vocab import Vocabulary

# -------------------------------------------------------------- a small exact matcher

TOKS = [b"a", b"b", b"ab", b"ba", b"abab", b"<eos>"]
EOS = 5


def _greedy(text: str) -> list[int]:
    data, out, i = text.encode(), [], 0
    by = {t: k for k, t in enumerate(TOKS[:EOS])}
    while i < len(data):
        for n in (4, 2, 1):
            if data[i:i + n] in by:
                out.append(by[data[i:i + n]])
                i += n
                break
    return out


VOCAB = Vocabulary("tiny", TOKS, frozenset({EOS}), (EOS,), None, _greedy)


class _Exact(Matcher):
    """The language ``words``, byte-exact, except that the mask (and the commit) drop
    token ``t`` after prefix ``p`` where ``blocked(p, t)``."""

    def __init__(self, words, blocked, rollback=True):
        self.words, self.blocked, self.can_rollback = words, blocked, rollback
        self.path: list[bytes] = []
        self.dead = False

    def _prefix(self) -> bytes:
        return b"".join(self.path)

    def _ok(self, tid: int) -> bool:
        p = self._prefix()
        return tid != EOS and not self.blocked(p, tid) and any(
            w.startswith(p + TOKS[tid]) for w in self.words)

    def fill_mask(self, bitmask):
        bitmask[:] = 0
        for t in range(len(TOKS)):
            if (self._ok(t) if t != EOS else self.eos_allowed()) and not self.dead:
                bitmask[t >> 5] |= 1 << (t & 31)

    def commit(self, tid):
        if self.dead or not self._ok(tid):
            self.dead = True
            return False
        self.path.append(TOKS[tid])
        return True

    def eos_allowed(self):
        return not self.dead and self._prefix() in self.words

    def rollback(self, n):
        if not self.can_rollback:
            raise ValueError("no rollback")
        del self.path[len(self.path) - n:]

    def reset(self):
        self.path, self.dead = [], False


class _Grammar(CompiledGrammar):
    def __init__(self, *args, **kw):
        self.args, self.kw, self.made = args, kw, 0

    def matcher(self):
        self.made += 1
        return _Exact(*self.args, **self.kw)


def _bm():
    return np.zeros(1, np.int32)


def _accepts(grammar, tokens) -> bool:
    return replay(grammar.matcher(), tokens, _bm(), (EOS,)).status == "accepted"


def test_another_tokenisation_is_found_with_its_witness():
    g = _Grammar({b"abab"}, lambda p, t: t == 4)  # the canonical "abab" token is dropped
    assert VOCAB.encode("abab") == [4] and not _accepts(g, [4])
    r = search(g, VOCAB, "abab", _bm())
    assert r.kind == TOKENIZATION
    assert b"".join(TOKS[t] for t in r.tokens) == b"abab" and _accepts(g, r.tokens)
    assert r.tokens == [2, 2]  # longest candidates first


def test_no_tokenisation_is_unwritable_and_eos_counts():
    # "ab" whole is dropped, and after "a" nothing may follow: no way to write "ab"
    g = _Grammar({b"ab"}, lambda p, t: t == 2 or p == b"a")
    assert search(g, VOCAB, "ab", _bm()).kind == UNWRITABLE
    # every token passes but the grammar never ends there
    g = _Grammar({b"abab!"}, lambda p, t: False)
    assert search(g, VOCAB, "abab", _bm()).kind == UNWRITABLE


def test_a_path_through_another_byte_position_is_found():
    # after "ab" every token is dropped, but "a" "ba" "b" never stops at byte 2
    g = _Grammar({b"abab"}, lambda p, t: p == b"ab" or t == 4)
    r = search(g, VOCAB, "abab", _bm())
    assert r.kind == TOKENIZATION and r.tokens == [0, 3, 1]


def test_without_rollback_a_fresh_matcher_replays_the_path():
    g = _Grammar({b"abab"}, lambda p, t: p == b"ab" or t == 4, rollback=False)
    r = search(g, VOCAB, "abab", _bm())
    assert r.kind == TOKENIZATION and r.tokens == [0, 3, 1] and g.made > 1


def test_the_budget_makes_it_undecided_and_the_memo_keeps_it_small():
    text = "ab" * 30
    # the last token is always dropped: exponentially many tokenisations, all refused
    g = _Grammar({text.encode()}, lambda p, t: len(p) + len(TOKS[t]) == len(text))
    r = search(g, VOCAB, text, _bm())
    assert r.kind == UNWRITABLE and r.calls < 1000
    r = search(g, VOCAB, text, _bm(), limit=10)
    assert r.kind == UNDECIDED and "budget" in r.why and r.calls <= 11


def test_classify_writes_the_kind_and_spends_the_job_budget():
    g = _Grammar({b"abab"}, lambda p, t: t == 4)
    budget = reachability.Budget()
    before = budget.calls_left
    res = reachability.classify({"status": "rejected"}, g, VOCAB, "abab", _bm(), budget)
    assert res["reject_kind"] == TOKENIZATION and res["reachable_tokens"] == [2, 2]
    assert budget.calls_left == before - res["reach_calls"] > 0
    budget.calls_left = 0
    res = reachability.classify({"status": "rejected"}, g, VOCAB, "abab", _bm(), budget)
    assert res["reject_kind"] == UNDECIDED and "budget" in res["reach_why"]


# -------------------------------------------------------------- real engines

@pytest.fixture(scope="module")
def llama3():
    from engines.vocab import load_vocabulary

    return load_vocabulary("llama3")


def _adapter(name, vocab):
    from harness import registry

    try:
        return registry.EngineSpec(name, "default").build(vocab)
    except EngineUnavailable:
        pytest.skip(f"{name} not installed")


@pytest.fixture(scope="module")
def outlines(llama3):
    return _adapter("outlines", llama3)


def _target(case_id):
    from harness.measure.target import GrammarTarget
    from harness.suite.grammar_corpus import to_case
    from harness.suite.grammar_corpus import CASES_DIR, load_file

    return GrammarTarget(to_case(load_file(CASES_DIR / f"{case_id}.toml")[0]).to_job())


def test_outlines_cannot_write_ab_under_a_or_ab(outlines, llama3):
    g = outlines.compile_grammar("regex", "(?:a|ab)")
    bm = allocate_bitmask(llama3.size)
    assert replay(g.matcher(), llama3.encode("ab"), bm, llama3.stop_ids).status == "rejected"
    assert search(g, llama3, "ab", bm).kind == UNWRITABLE
    assert search(g, llama3, "a", bm).kind == TOKENIZATION  # (the search accepts "a")


def test_outlines_refuses_a_tokenisation_of_a_reachable_colour(outlines, llama3):
    t = _target("regex-hex-colour")
    g = t.compile(outlines)
    bm = allocate_bitmask(llama3.size)
    canonical = llama3.encode("#7fAcfe")
    assert replay(g.matcher(), canonical, bm, llama3.stop_ids).status == "rejected"
    res = reachability.classify({}, g, llama3, "#7fAcfe", bm, reachability.Budget())
    assert res["reject_kind"] == TOKENIZATION
    witness = res["reachable_tokens"]
    assert witness != canonical
    assert b"".join(llama3.tokens[i] for i in witness) == "#7fAcfe".encode()
    assert replay(g.matcher(), witness, bm, llama3.stop_ids).status == "accepted"


def test_construct_alone_explains_xgrammar_but_not_outlines(outlines, llama3):
    from harness.measure.dialect import ConstructProbe

    xgrammar = _adapter("xgrammar", llama3)
    bm = allocate_bitmask(llama3.size)
    t = _target("regex-dialect-unicode-digits")
    assert t.dialect_construct == "\\d"
    # XGrammar's \d is ASCII: it refuses ٣ alone, which predicts its verdict
    t.compile(xgrammar)
    why = ConstructProbe(xgrammar, t, llama3, bm, reachability.Budget()).explain("7٣", False)
    assert why["explained"] is True and why["predicted"] is False and why["chars"] == {"٣": False}
    # outlines-core's \d is Unicode: ٣ and ႘ each alone are accepted, so "٣႘" is
    # predicted valid; its refusal is an ordinary false reject, not a dialect difference
    t.compile(outlines)
    probe = ConstructProbe(outlines, t, llama3, bm, reachability.Budget())
    why = probe.explain("٣႘", False)
    assert why["explained"] is False and why["predicted"] is True and why["chars"] == {}
    assert probe.engine_accepts("٣") and probe.engine_accepts("႘")


def test_the_rewrite_reads_the_construct_as_the_engine_does():
    from harness.measure.dialect import predicted_verdict, substitute

    assert substitute(r"\d+", r"\d", {"٣", "7"}) == "[7٣]+"
    assert substitute(r"\d+", r"\d", set()) == "(?!)+"
    assert substitute(r"[\d.]x\\d", r"\d", {"7"}) == r"[7.]x\\d"
    assert substitute(r"[^\d]", r"\d", set()) == "(?s:.)"
    assert substitute(r"a.b[.]", ".", {"-"}) == r"a[\-]b[.]"
    assert predicted_verdict(r"\d+", r"\d", "7٣", {"7": True, "٣": False}) is False
    assert predicted_verdict(r"\d+", r"\d", "7٣", {"7": True, "٣": True}) is True


def test_a_bad_dialect_construct_is_one_line_naming_the_file(tmp_path):
    from harness.suite.grammar_corpus import CorpusError, load_file

    p = tmp_path / "regex-x.toml"
    p.write_text("family = 'regex'\ndialect_sensitive = 'x'\ndialect_construct = '\\p'\n"
                 "regex = 'a+'\n")
    with pytest.raises(CorpusError, match="regex-x.toml: dialect_construct must be one"):
        load_file(p)
    p.write_text("family = 'regex'\ndialect_sensitive = 'x'\ndialect_construct = '\\w'\n"
                 "regex = 'a+'\n")
    with pytest.raises(CorpusError, match="does not occur"):
        load_file(p)


# -------------------------------------------------------------- counts

def test_summary_counts_the_kinds_and_the_console_names_them():
    from harness.analysis.metrics import summarize
    from harness.analysis.rejects import describe
    from harness.report.console import render_text

    def inst(kind, expected=True, status="rejected", **kw):
        res = {"status": status, "mask_ns": [1], "commit_ns": [1]}
        if kind:
            res["reject_kind"] = kind
        return {"index": 0, "label": expected, "truth": expected, "expected": expected,
                "results": {"ascii": res}, **kw}

    recs = [{"engine": "e", "case_id": "c1", "outcome": "validation_error", "instances": [
                inst("unwritable"), inst("tokenization"), inst("tokenization"),
                inst(None), inst(None, status="accepted"),
                inst("undecided", label_disagrees=True)]},  # counted apart, as the headline
            {"engine": "e", "case_id": "c2", "outcome": "timeout"}]
    meta = {"config": {"suite": "jsonschemabench", "primary": "ascii",
                       "serializations": ["ascii"]},
            "engines": [{"engine": "e", "status": "run"}]}
    s = summarize(recs, meta)
    e = s["engines"]["e"]
    assert e["false_reject_kinds"] == {"unwritable": 1, "tokenization": 2, "undecided": 0,
                                       "unchecked": 1}
    assert sum(e["false_reject_kinds"].values()) == e["false_rejects"]["ascii"] == 4
    assert describe(e["false_reject_kinds"]) == ("cannot write 1 / tokenisation refused 2 / "
                                                 "undecided 0 / unchecked 1")
    text = render_text(s)
    assert "false rejects: cannot write / tokenisation refused / undecided" in text
    assert "1 / 2 / 0 + 1 unchecked" in text


def test_grammar_block_counts_kinds_and_keeps_unexplained_dialect_cases_as_errors():
    from suites.grammars.summary import summary_block

    def inst(text, kind=None, **kw):
        res = {"status": "rejected", "mask_ns": [1], "commit_ns": [1]}
        if kind:
            res["reject_kind"] = kind
        if kind == "tokenization":
            res["reachable_tokens"] = [1, 2]
        return {"index": 0, "label": True, "truth": True, "expected": True, "text": text,
                "results": {"text": res}, **kw}

    recs = [{"engine": "o", "case_id": "regex-d", "family": "regex", "form": "regex",
             "outcome": "validation_error", "ttfm_ns": 1,
             "instances": [inst("ab", "unwritable"), inst("#7f", "tokenization"),
                           inst("٣႘", "unwritable", dialect_probe={
                               "construct": "\\d", "explained": False,
                               "why": "\\d read as the engine reads it predicts valid"})],
             "dialect": [{"text": "x²", "truth": True, "status": "rejected", "construct": "\\w",
                          "probe": {"chars": {"²": False}}}]}]
    summary: dict = {}
    text = summary_block(summary, {}, recs)
    b = summary["grammars"]
    assert b["false_reject_kinds"]["o"] == {"unwritable": 2, "tokenization": 1,
                                            "undecided": 0, "unchecked": 0}
    assert b["table"][0]["false_rejects"] == 3 and b["table"][0]["dialect"] == 1
    assert [x["text"] for x in b["dialect_not_explained"]] == ["٣႘"]
    assert "o: cannot write 2 / tokenisation refused 1 / undecided 0" in text
    assert "2 / 1 / 0" in text and "accepted as [1, 2]" in text
    assert "(the construct alone: ² refused)" in text
