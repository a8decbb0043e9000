"""Every suite's headline is its records': for each registered suite, a tiny run (the
suite's declared ``smoke``) whose ``summary.json["headline"]`` must equal the headline
recomputed from ``records.jsonl`` by the one function every output reads, and must count
its units exactly as the records say (the corpus-label split only where the suite's
verdict model applies it)."""

from __future__ import annotations

import json

import pytest

import harness
from harness.analysis.verdict import headline, is_unit, model_of, unit_outcome
from harness.registry import SUITES
from harness.report import console
from harness.store.run_store import RunStore


@pytest.mark.slow
@pytest.mark.parametrize("name", SUITES.names())
def test_the_headline_recomputed_from_the_records_is_the_summarys(name, tmp_path):
    cls = SUITES.load(name)
    assert cls.smoke is not None, f"suite {name} declares no smoke run (SuiteBase.smoke)"
    # a suite with its own executor drives servers: the canned test server stands in
    engines = ["canned"] if cls.executor else ["llguidance"]
    run = harness.run(harness.RunConfig(suite=name, engines=engines, **cls.smoke),
                      results=tmp_path / "results", reports=tmp_path / "reports")
    summary = json.loads((run.path / "summary.json").read_text())
    meta = run.meta()
    records = list(RunStore.open_readonly(run.path).records())
    assert records, f"the {name} smoke run recorded nothing"
    assert headline(meta, records) == summary["headline"]

    model = model_of(meta)
    primary = summary["headline"]["primary"]
    for eng, h in summary["headline"]["engines"].items():
        units = [r for r in records if r["engine"] == eng and is_unit(r, model)]
        assert sum(h["outcomes"].values()) == len(units) == h["n"] + h["bad_input"]
        moved = [r["case_id"] for r in units if unit_outcome(r, model, primary) != r["outcome"]]
        # nothing is moved out of a headline unless the corpus-label split applies
        assert not moved or model.label_split, (name, moved)
        assert sorted(moved) == summary["engines"][eng].get("label_outcome_changes", [])
        assert summary["engines"][eng]["outcomes"] == h["outcomes"]
        # the console shows the same figures and every alert
        text = console.render_text(summary)
        assert console.verdict_cells(h)[0] in text
        for alert in h["alerts"]:
            assert alert in text
    report = (tmp_path / "reports" / run.path.name / "report.md").read_text()
    assert "## Verdict" in report
