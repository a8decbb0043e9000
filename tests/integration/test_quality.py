"""The quality suite's figures on a checkpoint whose next-token distribution is set by hand
(:func:`tests.model_fixtures.unigram_checkpoint`: the same ``p`` at every step), so every
per-step figure is known exactly: the masks are read again by replaying each output through
a fresh matcher of the same engine, and ``mass_removed``, ``top_masked`` and
``logprob_per_token`` recomputed from them and ``p`` alone."""

from __future__ import annotations

import json
from pathlib import Path
import numpy as np
import pytest

import harness
from harness.config import RunConfig
from harness.store.run_store import RunStore
from tests.model_fixtures import small_tokenizer, unigram_checkpoint

SCHEMAS = "Github_easy---o4*"  # a glob the held-out side of the split still has


def _logits():
    tok = small_tokenizer()
    v = len(tok)
    logits = [0.0] * v
    # the top token is a letter no JSON document starts with, so the mask removes it at
    # the first step; '{' and '"' get weight too, so constrained outputs move on
    for piece, w in (("x", 4.0), ("{", 3.0), ('"', 2.5), ("}", 2.0), (":", 1.5), ("1", 1.0)):
        ids = tok.encode(piece, add_special_tokens=False)
        assert len(ids) == 1, piece
        logits[ids[0]] = w
    logits[tok.eos_token_id] = 1.0
    return logits


@pytest.fixture(scope="module")
def unigram_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("quality")
    logits = _logits()
    ck = unigram_checkpoint(d / "unigram", logits)
    run = harness.run(RunConfig(suite="quality", engines="llguidance,xgrammar", sample=2,
                                schemas=SCHEMAS, jobs=1,
                                options={"model": str(ck), "samples": 3, "max_tokens": 12}),
                      results=d / "results", reports=d / "reports")
    return run, ck, np.array(logits, dtype=np.float64)


def test_each_figure_is_the_hand_set_distributions(unigram_run):
    from engines.bitmask import allocate_bitmask
    from harness.measure.adapters import adapter, vocabulary
    from harness.model.decode import allowed_bits as _allowed

    run, ck, logits = unigram_run
    logp = logits - np.log(np.exp(logits - logits.max()).sum()) - logits.max()
    p = np.exp(logp)
    top = int(np.argmax(p))
    records = list(RunStore.open_readonly(run.path).records())
    assert {r["engine"] for r in records} == {"llguidance", "xgrammar"}
    checked_steps = 0
    for r in records:
        q = r["quality"]
        assert not q.get("compile_error"), q.get("compile_error")
        a = adapter(r["engine"], "default", run.meta()["config"]["tokenizer"])
        vocab = vocabulary()
        grammar = a.compile(_schema_text(r["case_id"]))
        for out in q["outputs"]:
            seq = out["tokens"] + ([ck_eos(ck)] if out["end"] == "eos" else [])
            assert len(seq) == out["steps"]
            # log-probability: the sum of log p over the tokens written, stop included
            assert out["logprob"] == pytest.approx(float(sum(logp[t] for t in seq)), abs=1e-4)
            if out["stream"] == "unconstrained":
                assert out["mass"] == [0.0] * out["steps"] and out["top_masked"] == 0
                continue
            m = grammar.matcher()
            bm = allocate_bitmask(vocab.size)
            masked_top = 0
            for i, t in enumerate(seq):
                m.fill_mask(bm)
                allowed = _allowed(bm, len(p), vocab.size)
                assert out["mass"][i] == pytest.approx(1.0 - float(p[allowed].sum()), abs=1e-5)
                masked_top += int(not allowed[top])
                assert allowed[t], (r["engine"], i, t)  # the token written was allowed
                assert m.commit(t)
                checked_steps += 1
            assert out["top_masked"] == masked_top
    assert checked_steps > 20
    # the summary's figures are the pooled means of the records'
    s = run.summary()["quality"]
    for row in s["rows"]:
        outs = [x for r in records for x in r["quality"]["outputs"]
                if x["temperature"] == 1.0 and (x["stream"] == "unconstrained") ==
                (row["stream"] == "unconstrained")
                and (row["stream"] == "unconstrained" or r["engine"] == row["stream"])]
        if row["stream"] == "unconstrained":  # one copy per schema, whichever job wrote it
            seen, uniq = set(), []
            for r in records:
                for x in r["quality"]["outputs"]:
                    key = (r["case_id"], x["temperature"], x["sample"])
                    if x["stream"] == "unconstrained" and x["temperature"] == 1.0 and key not in seen:
                        seen.add(key)
                        uniq.append(x)
            outs = uniq
        steps = sum(x["steps"] for x in outs)
        assert row["outputs"] == len(outs) == 2 * 3
        assert row["mass_removed"] == pytest.approx(sum(sum(x["mass"]) for x in outs) / steps, abs=1e-6)
        assert row["top_masked"] == pytest.approx(sum(x["top_masked"] for x in outs) / steps, abs=1e-6)
        assert row["logprob_per_token"] == pytest.approx(sum(x["logprob"] for x in outs) / steps, abs=1e-6)
        assert row["schema_valid"] == pytest.approx(sum(x["schema_valid"] for x in outs) / len(outs))
    rows = {r["stream"]: r for r in s["rows"]}
    assert rows["unconstrained"]["mass_removed"] == 0.0
    # the top token ('x') can never start a JSON document: the mask removed it at step 0
    assert rows["llguidance"]["mass_removed"] > 0.1 and rows["llguidance"]["top_masked"] > 0


def ck_eos(ck) -> int:
    from harness.model.checkpoint import load_checkpoint

    return load_checkpoint(str(ck)).eos_ids[0]


def _schema_text(case_id: str) -> str:
    from harness.suite.maskbench import parse_case, resolve_data_dir

    return parse_case(resolve_data_dir(None) / case_id).schema_text


def test_the_gate_holds_schema_valid_and_mass_removed_to_their_intervals(unigram_run):
    from harness.analysis.baseline import make_baseline
    from harness.analysis.gate import run_gate

    run, _, _ = unigram_run
    meta, records = run.meta(), list(RunStore.open_readonly(run.path).records())
    base = make_baseline(run.path)
    figs = base["figures"]
    assert set(figs) == {"unconstrained", "llguidance", "xgrammar"}
    assert not run_gate(base, meta, records, latency="off").failed  # itself: within
    # a baseline whose mass removed lies below the whole interval of the run's: the run
    # removes more of the model's probability than the baseline did, beyond its noise
    lo, hi = figs["llguidance"]["mass_removed"]["ci"]
    assert lo <= figs["llguidance"]["mass_removed"]["value"] <= hi
    figs["llguidance"]["mass_removed"]["value"] = lo - 0.01
    result = run_gate(base, meta, records, latency="off")
    failed = [(c.engine, c.name) for c in result.checks if c.status == "fail"]
    assert failed == [("llguidance", "mass_removed")]
    # and schema-valid down: a baseline above the run's whole interval
    figs["llguidance"]["mass_removed"]["value"] = (lo + hi) / 2
    figs["xgrammar"]["schema_valid"]["value"] = min(1.0, figs["xgrammar"]["schema_valid"]["ci"][1] + 0.01)
    if figs["xgrammar"]["schema_valid"]["ci"][1] < 1.0:
        result = run_gate(base, meta, records, latency="off")
        assert [(c.engine, c.name) for c in result.checks if c.status == "fail"] == [
            ("xgrammar", "schema_valid")]


def test_the_tiny_build_then_the_quality_suite_on_two_schemas(tmp_path):
    """End to end as a user runs it: ``harness model build --size tiny`` (a cache hit after
    the first build on a machine), then the quality suite on two of its held-out schemas
    through two engines, from the command line."""
    from tests.conftest import harness as cli

    b = cli("model", "build", "--size", "tiny", "--no-progress")
    assert b.returncode == 0, b.stderr[-2000:]
    folder = b.stdout.strip().splitlines()[-1]
    r = cli("run", "--suite", "quality", "--model", folder, "--engine", "xgrammar,llguidance",
            "--sample", "2", "--samples", "2", "--max-tokens", "24", "--no-progress",
            "--results", str(tmp_path / "results"), "--reports", str(tmp_path / "reports"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "quality: 2 held-out schema(s)" in r.stdout
    run_dir = next((tmp_path / "results").iterdir())
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["model"]["path"] == folder and meta["model"]["built_here"]
    held = set(json.loads((Path(folder) / "harness_model.json").read_text())["split"]["held_out"])
    records = list(RunStore.open_readonly(run_dir).records())
    assert {r["case_id"] for r in records} <= held and len({r["case_id"] for r in records}) == 2
    rows = {r["stream"]: r for r in json.loads((run_dir / "summary.json").read_text())["quality"]["rows"]}
    assert set(rows) == {"unconstrained", "xgrammar", "llguidance"}
    for name, row in rows.items():
        assert row["outputs"] == 2 * 2 and row["greedy"]["outputs"] == 2
        # a constrained output the engine ended is valid, or it is a false accept with its witness
        if name != "unconstrained":
            ended = [x for rec in records if rec["engine"] == name
                     for x in rec["quality"]["outputs"] if x["stream"] == "constrained"
                     and x["end"] == "eos"]
            bad = [x for x in ended if not x["schema_valid"]]
            assert row["false_accepts"] + row["greedy"]["false_accepts"] == len(bad)
    report = (tmp_path / "reports" / run_dir.name / "report.md").read_text()
    assert "Quality: what the mask does" in report
