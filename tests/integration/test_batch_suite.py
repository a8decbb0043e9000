"""The batch suite end to end (in-process ``harness.run``, real corpus files): a planted
slow matcher (``null:slow``: every mask 2 ms busy with the GIL held) lowers the largest
batch hidden in the step's budget against the same engine without it; real engines go
through their own batch APIs with every check passing; summary.json, batch.json, the
console block, the report's plot and table, and the results table's section."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import harness
from harness.analysis.verdict import headline
from harness.registry import is_installed
from harness.store.run_store import RunStore
from tests.conftest import ROOT, link_real


def _run(tmp_path, engines, **options):
    data = tmp_path / "data"
    if not data.exists():
        link_real(data)
    return harness.run(harness.RunConfig(suite="batch", engines=engines, data=str(data),
                                         sample=2, options=options),
                       results=tmp_path / "results", reports=tmp_path / "reports")


def test_a_planted_slow_matcher_lowers_the_largest_hidden_batch(tmp_path):
    # null: a few µs per mask, so B=32 hides in 40 ms whatever the machine's load;
    # null:slow: 2 ms per mask, busy with the GIL held, so B=32 takes at least 64 ms a
    # step and cannot (the budget is wide so that no stall of a loaded machine decides)
    run = _run(tmp_path, ["null", "null:slow"], batch=[1, 8, 32], threads=[1],
               batch_steps=8, batch_instances=2, step_ms=40.0)
    summary = json.loads((run.path / "summary.json").read_text())
    h = summary["headline"]["engines"]
    assert h["null"]["hidden_batch"] == {"1": 32}
    assert h["null:slow"]["hidden_batch"]["1"] < 32
    assert h["null:slow"]["hidden_tok_s"]["1"] == h["null:slow"]["hidden_batch"]["1"] * 25.0
    assert headline(run.meta(), list(RunStore.open_readonly(run.path).records())) == \
        summary["headline"]
    over = {(x["engine"], x["threads"]): x for x in summary["batch"]["hidden"]}[("null:slow", 1)]
    assert over["first_over"] in (8, 32) and over["over"] > 40.0  # the p99 that broke it
    pts = {(p["engine"], p["batch"], p["threads"]): p for p in summary["batch"]["points"]}
    assert pts[("null:slow", 32, 1)]["grammar_ms"]["p50"] >= 64.0  # 32 masks of 2 ms
    assert pts[("null:slow", 32, 1)]["slowest_share"] < 0.1  # no one sequence is the step
    assert all(p["checks"] == dict.fromkeys(p["checks"], 0) for p in pts.values())
    assert json.loads((run.path / "batch.json").read_text())["hidden"] == summary["batch"]["hidden"]


@pytest.mark.skipif(not all(is_installed(e) for e in ("xgrammar", "llguidance", "outlines")),
                    reason="xgrammar, llguidance and outlines-core needed")
def test_real_engines_through_their_batch_apis(tmp_path):
    run = _run(tmp_path, ["xgrammar", "llguidance", "outlines"], batch=[1, 4], threads=[1, 2],
               batch_steps=6, batch_instances=2, same_schema=True)
    recs = list(RunStore.open_readonly(run.path).records())
    assert {(r["engine"], r["case_id"]) for r in recs} == {
        (e, c) for e in ("xgrammar", "llguidance", "outlines")
        for c in ("B1", "B1-same", "B4", "B4-same")}
    for r in recs:
        assert r["outcome"] == "passing", (r["engine"], r["case_id"], r["batch"]["points"])
        b = r["batch"]
        assert [p["threads"] for p in b["points"]] == [1, 2] and b["members"]
        for p in b["points"]:
            assert len(p["fill_ns"]) == 6 and min(p["fill_ns"]) > 0 and min(p["commit_ns"]) > 0
            assert p["sequences"] >= b["batch"] and sum(p["checks"].values()) == 0
    methods = {r["engine"]: (r["batch"]["points"][0]["method"],
                             r["batch"]["points"][0]["commit_method"]) for r in recs}
    assert methods["xgrammar"] == ("xgrammar BatchGrammarMatcher",
                                   "xgrammar BatchGrammarMatcher.batch_accept_token")
    assert methods["llguidance"] == ("llguidance fill_next_token_bitmask_par",
                                     "llguidance consume_token_par")
    assert methods["outlines"] == ("thread pool", "one by one")
    summary = json.loads((run.path / "summary.json").read_text())
    for eng in ("xgrammar", "llguidance", "outlines"):
        assert set(summary["headline"]["engines"][eng]["hidden_batch"]) == {"1", "2"}
    assert {p["workload"] for p in summary["batch"]["points"]} == {"mix", "same-schema"}
    report_dir = tmp_path / "reports" / run.path.name
    report = (report_dir / "report.md").read_text()
    assert "## Batch scaling: grammar time per decode step" in report
    assert "| largest hidden B |" in report and "![batch_scaling.png](batch_scaling.png)" in report
    assert (report_dir / "batch_scaling.png").stat().st_size > 5000
    assert (report_dir / "batch_scaling_same.png").stat().st_size > 5000
    table = subprocess.run([sys.executable, "benchmarks/results_table.py", str(run.path)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert table.returncode == 0, table.stderr
    assert "## Batch-scaling runs" in table.stdout
    assert sum(line.startswith("| ") and "xgrammar" in line
               for line in table.stdout.splitlines()) >= 2  # one row per thread count
