"""The jump-forward suite through the CLI on real engines and real corpus files: xgrammar
and llguidance offer forced continuations that are checked against the reference engine;
outlines, which has no jump-forward API, shows as not measured (never as zeros); the
console table, summary.json block, jump_forward.json and the report section are written."""

from __future__ import annotations

import json

from tests.conftest import harness, link_real, read_records


def test_jump_forward_run(tmp_path):
    data = tmp_path / "data"
    link_real(data)
    r = harness("run", "--suite", "jump-forward", "--engine", "xgrammar,llguidance,outlines",
                "--data", str(data), "--jf-instances", "1", "--results", str(tmp_path / "results"),
                "--reports", str(tmp_path / "reports"), "--no-progress", timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, recs = read_records(tmp_path / "results")
    assert len(recs) == 9
    for x in recs:
        assert x["outcome"] in ("passing", "validation_error", "invalidation_error",
                                "compile_error"), x.get("error")
    measured = [x for x in recs if x["engine"] in ("xgrammar", "llguidance")
                and x["outcome"] != "compile_error"]
    assert measured
    for x in measured:
        jf = x["jump_forward"]
        assert jf["api"] is True and x["oracle"]["status"] in ("ok", "refused", "timeout")
        for inst in jf["instances"]:
            assert inst["steps"] == sum(inst["counts"].values()) == len(inst["ff_ns"])
            if inst["status"] == "accepted":
                assert inst["steps"] == inst["n_tokens"] + 1
                sim = inst["sim"]
                assert sim["status"] == "done" and 0 <= sim["share"] <= 1
    # engines offer continuations, and every offer was checked against the oracle
    assert sum(i["offered_steps"] for x in measured for i in x["jump_forward"]["instances"]) > 0
    assert all(i["counts"]["unchecked"] == 0 for x in measured if x["oracle"]["status"] == "ok"
               for i in x["jump_forward"]["instances"])
    for x in recs:
        if x["engine"] == "outlines" and x["outcome"] != "compile_error":
            assert x["jump_forward"]["api"] is None
            assert all("sim" not in i for i in x["jump_forward"]["instances"])

    summary = json.loads((run_dir / "summary.json").read_text())
    block = summary["jump_forward"]
    rows = {(row["engine"], row["subset"]): row for row in block["rows"]}
    assert {"xgrammar", "llguidance"} == {e for e, _ in rows}
    assert rows[("xgrammar", "all")]["jf_share"] > 0
    assert rows[("llguidance", "all")]["steps"] > 0
    assert {"engine": "outlines", "reason": "no jump-forward API: not measured"} in block["not_measured"]
    assert json.loads((run_dir / "jump_forward.json").read_text()) == block
    assert "Jump-forward: forced continuations" in r.stdout
    assert "outlines" in r.stdout and "no jump-forward API: not measured" in r.stdout

    report_dir = tmp_path / "reports" / run_dir.name
    report = (report_dir / "report.md").read_text()
    assert "## Jump-forward: forced continuations" in report
    assert "no jump-forward API: not measured" in report and "jump_forward.png" in report
    assert any(p.stat().st_size > 1000 for p in report_dir.rglob("jump_forward.png"))
