"""Grammar-aware drafting (suites.drafts.aware) with a model with priors as the target:
the tiny build, and a draft model built on its tokenizer (a short build). Greedy
speculation must be lossless for every drafter, the twin matcher must agree after every
step, and the figures must be what the records say."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT, harness, read_records


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    b = harness("model", "build", "--size", "tiny", "--no-progress")
    assert b.returncode == 0, b.stderr[-2000:]
    target = b.stdout.strip().splitlines()[-1]
    from harness.training.build import build_model

    draft = build_model("draft", out=tmp_path_factory.mktemp("draft") / "m", steps=3,
                        progress=False, target=target, echo=lambda s: None)
    return target, str(draft)


def test_every_drafter_is_lossless_and_the_table_is_the_records(models, tmp_path, corpus_dir):
    target, draft = models
    r = harness("run", "--suite", "drafts", "--model", target, "--draft-model", draft,
                "--engine", "xgrammar,llguidance", "--data", str(corpus_dir), "--schemas",
                "BFCL_simple_1*", "--sample", "2", "--draft-k", "4", "--draft-positions", "1",
                "--draft-instances", "1", "--max-tokens", "24", "--results",
                str(tmp_path / "results"), "--reports", str(tmp_path / "reports"),
                "--no-progress", timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    run_dir, recs = read_records(tmp_path / "results")
    from suites.drafts.aware import DRAFTERS
    from suites.drafts.summary import speculative_rows

    for rec in recs:
        runs = rec["speculative"]["drafters"]
        assert list(runs) == list(DRAFTERS)
        base = runs["none"]
        assert base["steps"] == base["output_tokens"] and base["accepted"] == 0
        for d, x in runs.items():
            # greedy speculation writes what plain greedy decoding writes
            assert x["lossless"] and x["tokens"] == base["tokens"], (rec["engine"], d, x)
            assert x["accepted"] <= x["drafted"] + x["siblings"]
            assert x["steps"] + x["accepted"] >= x["output_tokens"] - 1
            assert x["wrong_states"] == len(x["wrong"]) or len(x["wrong"]) == 3
        # masked drafts are valid: a masked model draft is never refused for validity
        assert runs["model"]["draft_forwards"] > 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["drafts"]["speculative"] == json.loads(json.dumps(speculative_rows(recs)))
    assert "Grammar-aware drafting" in r.stdout
    report = (tmp_path / "reports" / run_dir.name / "report.md").read_text()
    assert "Grammar-aware drafting" in report
    import subprocess
    import sys

    table = subprocess.run([sys.executable, "benchmarks/results_table.py", str(run_dir)],
                           cwd=ROOT, capture_output=True, text=True)
    assert table.returncode == 0, table.stderr
    assert "## Grammar-aware drafting" in table.stdout and "| prompt_lookup |" in table.stdout


def test_a_draft_model_on_another_tokenizer_is_refused(models, tmp_path, corpus_dir):
    target, _ = models
    other = tmp_path / "other"
    other.mkdir()
    (other / "tokenizer.json").write_text("{}")
    r = harness("run", "--suite", "drafts", "--model", target, "--draft-model", str(other),
                "--engine", "xgrammar", "--data", str(corpus_dir), "--results",
                str(tmp_path / "r"), timeout=120)
    assert r.returncode != 0 and "its tokenizer is not the target's" in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2
