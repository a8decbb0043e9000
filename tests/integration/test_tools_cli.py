"""The tools suite through the CLI on real engines and the corpus's real BFCL files:
records carry each engine's native form, the cold / warm / overlap compiles and the
verdicts; xgrammar's cache serves the warm compile; the console block, summary.json,
tools.json and the report's compile-vs-tools plot are written."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT, harness, read_records


def test_tools_run(tmp_path, corpus_dir):
    r = harness("run", "--suite", "tools", "--engine", "xgrammar,llguidance", "--data",
                str(corpus_dir), "--tool-counts", "1,10", "--sample", "4", "--tool-walks", "3",
                "--results", str(tmp_path / "results"), "--reports", str(tmp_path / "reports"),
                "--no-progress", timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, recs = read_records(tmp_path / "results")
    ids = {"llama3.1-required-1", "tool_call-required-10", "tool_call-auto-parallel-1",
           "llama3.1-auto-parallel-10"}
    assert {(x["engine"], x["case_id"]) for x in recs} == {
        (e, c) for e in ("xgrammar", "llguidance") for c in ids}
    for x in recs:
        assert x["outcome"] == "passing", (x["engine"], x["case_id"], x.get("error"))
        assert x["cold_ns"] > 0 and x["warm_ns"] > 0 and x["overlap_ns"] > 0
        assert len(x["fuzz"]["walks"]) == 3
        kinds = {i["kind"] for i in x["instances"]}
        assert {"valid", "wrong_name", "wrong_args", "truncated"} <= kinds
        assert any(i["call_spans"] for i in x["instances"])
    xg = [x for x in recs if x["engine"] == "xgrammar"]
    assert all(x["warm_hit"] for x in xg) and all("structural tag" in x["form"] for x in xg)
    assert all("lark" in x["form"] for x in recs if x["engine"] == "llguidance")
    summary = json.loads((run_dir / "summary.json").read_text())
    rows = {(row["engine"], row["tools"]) for row in summary["tools"]["compile"]}
    assert rows == {(e, n) for e in ("xgrammar", "llguidance") for n in (1, 10)}
    eng = {row["engine"]: row for row in summary["tools"]["engines"]}
    assert eng["xgrammar"]["false_rejects"] == 0 and eng["xgrammar"]["valid"] > 0
    # streaming parse events: every valid output's calls, the same steps on both engines
    # (one language), each engine's forced continuation agreeing with its mask
    ev = {row["engine"]: row for row in summary["tools"]["events"]}
    assert set(ev) == {"xgrammar", "llguidance"}
    for row in ev.values():
        assert row["calls"] > 0 and row["errors"] == 0
        assert row["agree_forced"] == [row["calls"], row["calls"]]
        assert row["name_decided"] <= row["name_written"] < row["required_complete"] < row["end"]
    steps = {e: sorted((x["case_id"], i["index"], json.dumps(i["calls"])) for x in recs
                       if x["engine"] == e for i in x["events"]) for e in ev}
    assert steps["xgrammar"] == steps["llguidance"]
    assert "streaming parse events" in r.stdout
    assert (run_dir / "tools.json").exists()
    assert "Tool calls: compile against the number of tools" in r.stdout
    report_dir = tmp_path / "reports" / run_dir.name
    report = (report_dir / "report.md").read_text()
    assert "Tool calls with many tools" in report and "tools_compile.png" in report
    assert any(p.stat().st_size > 1000 for p in report_dir.rglob("tools_compile.png"))
    table = subprocess.run([sys.executable, "benchmarks/results_table.py", str(run_dir)],
                           cwd=ROOT, capture_output=True, text=True)
    assert table.returncode == 0, table.stderr
    assert "## Tool-call runs" in table.stdout and "| xgrammar | 10 |" in table.stdout
    assert "## Streaming parse events" in table.stdout and "| ground truth |" in table.stdout
    assert "## Replay runs" not in table.stdout  # no replay rows for a suite with its own figures


def test_tools_options_refused_in_one_line(tmp_path, corpus_dir):
    r = harness("run", "--suite", "tools", "--engine", "xgrammar", "--data", str(corpus_dir),
                "--tool-formats", "xml", "--results", str(tmp_path / "results"), timeout=120)
    assert r.returncode != 0 and "known formats are" in r.stderr


def test_a_hanging_compile_is_a_timeout_row(tmp_path, corpus_dir):
    """outlines-core builds one DFA over 50 tools' argument regexes (about a minute here):
    past --timeout the worker is killed, the record says so, and the compile table counts
    it among the requests refused or died."""
    r = harness("run", "--suite", "tools", "--engine", "outlines", "--data", str(corpus_dir),
                "--tool-counts", "50", "--sample", "1", "--timeout", "4",
                "--results", str(tmp_path / "results"), "--no-progress", timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, recs = read_records(tmp_path / "results")
    assert [x["outcome"] for x in recs] == ["timeout"]
    summary = json.loads((run_dir / "summary.json").read_text())
    row, = summary["tools"]["compile"]
    assert row["tools"] == 50 and row["errors"] == 1 and row["cold_ms"] is None
    assert "timeout" in row["error"]


def test_the_model_outputs_get_their_events_too(tmp_path, corpus_dir):
    """``--model`` (the tiny build, a cache hit after the first): the checkpoint writes
    one greedy and ``--tool-instances`` sampled outputs per request under each engine's
    grammar; every valid one's calls get their events, on the checkpoint's tokenizer."""
    b = harness("model", "build", "--size", "tiny", "--no-progress")
    assert b.returncode == 0, b.stderr[-2000:]
    folder = b.stdout.strip().splitlines()[-1]
    r = harness("run", "--suite", "tools", "--model", folder, "--engine", "xgrammar",
                "--data", str(corpus_dir), "--tool-counts", "1", "--sample", "1",
                "--tool-walks", "0", "--tool-instances", "1", "--max-tokens", "48",
                "--results", str(tmp_path / "results"), "--reports", str(tmp_path / "reports"),
                "--no-progress", timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, recs = read_records(tmp_path / "results")
    (rec,) = recs
    model = [e for e in rec["events"] if e["source"] == "model"]
    assert [e["temperature"] for e in model] == [0.0, 1.0]
    for e in model:
        assert e["output_end"] in ("eos", "budget", "stuck", "refused")
        assert e["valid"] == ("calls" in e)  # a required call: a valid output holds one
    summary = json.loads((run_dir / "summary.json").read_text())
    (row,) = summary["tools"]["events_model"]
    assert row["outputs"] == [2, sum(e["valid"] for e in model)]
    assert "model's own outputs" in r.stdout
    bad = harness("run", "--suite", "tools", "--model", "micro", "--engine", "xgrammar",
                  "--data", str(corpus_dir), "--results", str(tmp_path / "r2"), timeout=120)
    assert bad.returncode != 0 and "a model with priors" in bad.stderr
