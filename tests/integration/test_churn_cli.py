"""The churn suite through the CLI on real engines and real corpus files: xgrammar's cache
serves the repeats of a Zipf stream and nothing of a stream of new schemas; llguidance has
no compile cache (hit rate 0); the table, churn.json and the report's crossover plot are written."""

from __future__ import annotations

import json

from tests.conftest import harness, link_real, read_records


def test_churn_run(tmp_path):
    data = tmp_path / "data"
    link_real(data)
    r = harness("run", "--suite", "churn", "--engine", "xgrammar,llguidance", "--data", str(data),
                "--churn-requests", "16", "--zipf", "1.5,0", "--results", str(tmp_path / "results"),
                "--reports", str(tmp_path / "reports"), "--no-progress", timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, recs = read_records(tmp_path / "results")
    assert {(x["engine"], x["case_id"]) for x in recs} == {
        (e, c) for e in ("xgrammar", "llguidance") for c in ("zipf1.5", "zipf0")}
    by = {(x["engine"], x["case_id"]): x["churn"] for x in recs}
    x_rep, x_new = by[("xgrammar", "zipf1.5")], by[("xgrammar", "zipf0")]
    assert x_rep["has_cache"] and not by[("llguidance", "zipf1.5")]["has_cache"]
    # every request of the new-schema stream grows the cache; repeats are served from it
    assert not any(q.get("hit") for q in x_new["requests"])
    repeats = [q for q in x_rep["requests"] if q["repeat"] and "error" not in q]
    assert repeats and all(q["hit"] for q in repeats)
    assert all(not q["hit"] for q in x_rep["requests"] if not q["repeat"] and "error" not in q)
    summary = json.loads((run_dir / "summary.json").read_text())
    rows = {(row["engine"], row["exponent"]): row for row in summary["churn"]["rows"]}
    assert rows[("llguidance", 1.5)]["hit_rate"] == 0.0
    assert rows[("xgrammar", 0.0)]["hit_rate"] == 0.0 and rows[("xgrammar", 1.5)]["hit_rate"] > 0
    assert (run_dir / "churn.json").exists()
    assert "Compile cache under schema churn" in r.stdout
    report_dir = tmp_path / "reports" / run_dir.name
    report = (report_dir / "report.md").read_text()
    assert "Compile cache under schema churn" in report and "churn.png" in report
    assert any(p.stat().st_size > 1000 for p in report_dir.rglob("churn.png"))
