"""Suite batch: the steady-state workload plan, the verdict (largest hidden batch), the
options, and the checks that catch a fast wrong batch path (a real engine's grammar with a
filler that sets one bit too many or commits without asking the engine)."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from engines.batch import BatchFiller
from harness.registry import EngineSpec, is_installed
from suites.batch import BatchSuite, default_threads
from suites.batch.job import _run_point, slot_instance, slot_member, start_offset
from suites.batch.options import add_run_arguments, config_from_args, step_from_run
from suites.batch.summary import hidden, point_rows


def test_slots_spread_schemas_then_instances():
    # B <= n: every slot a different schema
    assert len({slot_member(s, 8) for s in range(8)}) == 8
    # B > n: the copies of a schema start on different instances where it has enough
    firsts = {}
    for s in range(24):
        firsts.setdefault(slot_member(s, 8), []).append(slot_instance(s, 0, 8, 5))
    assert all(len(set(v)) == 3 for v in firsts.values())
    # every slot cycles through all its schema's instances
    assert {slot_instance(3, k, 8, 4) for k in range(4)} == {0, 1, 2, 3}


def test_start_offsets_are_seeded_and_in_range():
    offs = [start_offset(0, 64, s, 30) for s in range(64)]
    assert offs == [start_offset(0, 64, s, 30) for s in range(64)]
    assert all(0 <= o < 30 for o in offs) and len(set(offs)) > 10
    assert offs != [start_offset(1, 64, s, 30) for s in range(64)]


def test_default_threads_go_up_to_the_cores():
    assert default_threads(1) == [1]
    assert default_threads(2) == [1, 2]
    assert default_threads(16) == [1, 2, 4, 8, 16]
    assert default_threads(6) == [1, 2, 4, 6]


def _row(engine, b, t, p99, batch_path=0, workload="mix"):
    return {"engine": engine, "workload": workload, "batch": b, "threads": t,
            "grammar_ms": {"p99": p99}, "batch_path": batch_path}


def test_largest_hidden_batch():
    rows = [_row("a", 1, 1, 0.1), _row("a", 8, 1, 2.0), _row("a", 64, 1, 12.0),
            _row("a", 1, 2, 0.1), _row("a", 8, 2, 1.0), _row("a", 64, 2, 6.0),
            _row("b", 1, 1, 11.0), _row("b", 8, 1, 9.0),  # not even B=1: 0, never 8
            _row("c", 1, 1, 0.1), _row("c", 64, 1, 0.1),  # 8 not measured: stops at 1
            _row("d", 1, 1, 0.1), _row("d", 8, 1, 0.1, batch_path=2)]
    rows.append({"engine": "c", "workload": "mix", "batch": 8, "threads": None,
                 "failed": "timeout"})
    hs = {(h["engine"], h["threads"]): h for h in hidden(rows, [1, 8, 64], 10.0)}
    assert (hs[("a", 1)]["largest"], hs[("a", 1)]["first_over"]) == (8, 64)
    assert hs[("a", 1)]["ceiling_tok_s"] == 800.0 and hs[("a", 1)]["p99_ms"] == 2.0
    assert hs[("a", 2)]["largest"] == 64 and hs[("a", 2)]["first_over"] is None
    assert hs[("b", 1)]["largest"] == 0 and hs[("b", 1)]["over"] == 11.0
    assert (hs[("c", 1)]["largest"], hs[("c", 1)]["over"]) == (1, "timeout")
    assert (hs[("d", 1)]["largest"], hs[("d", 1)]["over"]) == (1, "batch path wrong")
    # a tighter budget lowers it
    assert {h["largest"] for h in hidden(rows[:3], [1, 8, 64], 1.0)} == {1}


def test_point_rows_from_a_record():
    point = {"threads": 2, "method": "m", "commit_method": "c", "oversubscribed": False,
             "fill_ns": [1_000_000, 3_000_000], "commit_ns": [1_000_000, 1_000_000],
             "join_ns": [0, 4000], "joined": [0, 2], "slowest_ns": [500_000, 3_000_000],
             "solo_ns": [2_000_000, 3_000_000],
             "checks": {"batch_forbids": 0, "batch_allows": 1, "refused_valid": 2,
                        "commit_mismatch": 0}}
    rec = {"engine": "x", "case_id": "B4", "batch": {"batch": 4, "workload": "mix",
                                                    "step_ms": 10.0, "points": [point]}}
    died = {"engine": "x", "case_id": "B16", "outcome": "timeout", "subset": "mix"}
    r, d = point_rows([rec, died])
    assert r["grammar_ms"]["max"] == 4.0 and r["grammar_ms"]["p50"] == 3.0
    assert r["join_us"] == 2.0 and r["joins_per_step"] == 1.0
    assert r["slowest_share"] == pytest.approx((0.5 + 1.0) / 2)
    assert r["speedup"] == pytest.approx((2.0 + 1.0) / 2)
    assert r["batch_path"] == 1 and r["grammar_tok_s"] == pytest.approx(4 / 3e-3)
    assert (d["batch"], d["threads"], d["failed"]) == (16, None, "timeout")


def test_step_ms_from_an_e2e_run(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"engines": {
        "a": {"e2e": {"tpot_unconstrained_ms": 30.0}}, "b": {"e2e": {"tpot_unconstrained_ms": 20.0}},
        "c": {"status": "not_run"}}}))
    assert step_from_run(str(tmp_path)) == 30.0  # the median of the rows (upper of two)
    p = argparse.ArgumentParser(exit_on_error=False)
    add_run_arguments(p)
    args = p.parse_args(["--step-ms", str(tmp_path), "--batch", "1,8", "--threads", "2,1"])
    assert config_from_args(args) == {"step_ms": 30.0, "step_source": str(tmp_path),
                                      "batch": [1, 8], "threads": [1, 2]}
    assert config_from_args(p.parse_args(["--step-ms", "7.5"]))["step_ms"] == 7.5
    with pytest.raises(argparse.ArgumentError, match="neither a number"):
        p.parse_args(["--step-ms", str(tmp_path / "nowhere")])
    with pytest.raises(argparse.ArgumentError, match="> 0"):
        p.parse_args(["--step-ms", "0"])


def test_cases_per_size_and_workload(corpus_dir):
    s = BatchSuite(data=str(corpus_dir), sample=3,
                   options={"batch": [8, 1], "threads": [1], "same_schema": True})
    cases = list(s.cases())
    assert [c.case_id for c in cases] == s.case_ids() == ["B1", "B1-same", "B8", "B8-same"]
    assert len(cases[2].request["members"]) == 3 and len(cases[3].request["members"]) == 1
    assert cases[3].request["members"][0]["case_id"] == cases[2].request["members"][0]["case_id"]
    assert cases[0].request["threads"] == [1] and cases[2].request["batch"] == 8


# ---- a fast wrong batch path is caught (real engine, real vocabulary, real corpus text)

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
          "required": ["name"]}
DOCS = ['{"name": "Ada", "n": 3}', '{"name": "Lovelace"}']


class _ExtraBit(BatchFiller):
    """Fills through the default path, then allows one more token in every row."""

    def fill(self, matchers, bitmask, rows):
        super().fill(matchers, bitmask, rows)
        bitmask[:, 0] |= 1 << 3


class _NoCommit(BatchFiller):
    """Answers True without advancing the engine."""

    def commit(self, matchers, tokens):
        return [True] * len(matchers)


@pytest.fixture(scope="module")
def members():
    if not is_installed("xgrammar"):
        pytest.skip("xgrammar not installed")
    from engines.vocab import load_vocabulary

    vocab = load_vocabulary("llama3")
    g = EngineSpec("xgrammar").build(vocab).compile(json.dumps(SCHEMA))
    return vocab, [{"case_id": "s", "grammar": g, "compile_ns": 1, "instance_ids": [0, 1],
                    "instances": [vocab.encode(d) + [vocab.eos_id] for d in DOCS]}]


@pytest.mark.parametrize("filler,kind", [(BatchFiller, None), (_ExtraBit, "batch_allows"),
                                         (_NoCommit, None)])
def test_wrong_batch_paths_are_caught(members, filler, kind):
    from engines.bitmask import bitmask_words

    vocab, mem = members
    f = filler(1)
    try:
        p = _run_point(mem, f, 3, 12, 0, bitmask_words(vocab.size), lambda *a: None, None)
    finally:
        f.close()
    assert len(p["fill_ns"]) == 12 and all(t > 0 for t in p["fill_ns"])
    bad = {k: v for k, v in p["checks"].items() if v}
    if filler is BatchFiller:
        assert not bad and p["finished"] > 0 and p["sequences"] > 3
    elif kind:
        assert bad.get(kind, 0) > 0 and p["evidence"][0]["check"] == kind
    else:
        # the engine never advanced: its rows stop matching the twins' masks
        assert bad.get("batch_forbids", 0) + bad.get("batch_allows", 0) > 0


def test_an_engine_with_nothing_measured_has_a_row_that_says_why():
    rows = [{"engine": "slow", "workload": "mix", "batch": b, "threads": None,
             "failed": "timeout"} for b in (1, 8)] + [_row("a", 1, 1, 0.1)]
    hs = hidden(rows, [1, 8], 10.0)
    h = next(h for h in hs if h["engine"] == "slow")
    assert (h["threads"], h["largest"], h["first_over"], h["over"]) == (None, None, 1, "timeout")
