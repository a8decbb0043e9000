"""The drafts suite through the CLI on real engines and real corpus files: every draft of
xgrammar (traverse_draft_tree) and llguidance (validate_tokens) is accepted exactly as far
as it should be, masks after rollback equal a fresh replay's, nothing is accepted after a
stop token; the records, summary.json, drafts.json, the console table and the report's
"Speculative drafts" section are written."""

from __future__ import annotations

import json

from tests.conftest import harness, link_real, read_records


def test_drafts_run(tmp_path):
    data = tmp_path / "data"
    link_real(data)
    r = harness("run", "--suite", "drafts", "--engine", "xgrammar,llguidance", "--data", str(data),
                "--draft-k", "1,4,8", "--draft-positions", "3", "--draft-seed", "5",
                "--results", str(tmp_path / "results"), "--reports", str(tmp_path / "reports"),
                "--no-progress", timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, recs = read_records(tmp_path / "results")
    assert len(recs) == 6 and {x["engine"] for x in recs} == {"xgrammar", "llguidance"}
    for x in recs:
        assert x["outcome"] == "passing", (x["engine"], x["case_id"], x["drafts"]["failures"])
        rows = x["drafts"]["rows"]
        kinds = {(d["k"], d["kind"]) for d in rows}
        # per k: corrupt, clean and past-the-end drafts (every file's instances are long enough)
        assert {(k, kind) for k in (1, 4, 8) for kind in ("corrupt", "clean", "past_end")} <= kinds
        assert sum(d["kind"] == "corrupt" for d in rows) >= 3 * 3
        assert all(d["ok"] and d["got"] == d["expected"] for d in rows)
        assert all(d["validate_ns"] > 0 and d["steps_ns"] > 0 for d in rows)
        assert any(d.get("rollback") == "checked" for d in rows)
    apis = {x["engine"]: x["drafts"]["api"] for x in recs}
    assert "traverse_draft_tree" in apis["xgrammar"] and "validate_tokens" in apis["llguidance"]
    summary = json.loads((run_dir / "summary.json").read_text())
    rows = {row["engine"]: row for row in summary["drafts"]["rows"]}
    for eng in ("xgrammar", "llguidance"):
        row = rows[eng]
        assert row["schemas"] == row["compiled"] == 3 and row["drafts"] >= 3 * 3 * 5
        assert (row["wrong_length"], row["rollback_mismatch"], row["after_stop"],
                row["errors"]) == (0, 0, 0, 0)
        assert set(row["per_k"]) == {"1", "4", "8"}
        assert all(v["validate_us"] > 0 and v["ratio"] > 0 for v in row["per_k"].values())
    assert json.loads((run_dir / "drafts.json").read_text()) == summary["drafts"]["rows"]
    assert "Speculative drafts" in r.stdout and "k=8: validate / steps µs (ratio)" in r.stdout
    report = (tmp_path / "reports" / run_dir.name / "report.md").read_text()
    assert "## Speculative drafts" in report and "traverse\\_draft\\_tree" in report
