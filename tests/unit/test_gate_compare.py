"""harness gate --compare BASE=RUN: a run row judged against another baseline row."""

from __future__ import annotations

import pytest


def test_compare_renames_a_run_row_onto_a_baseline_row():
    from harness.analysis.gate import rename_rows

    recs = [{"engine": "xgrammar@vllm", "case_id": "a"}, {"engine": "xgrammar", "case_id": "a"},
            {"engine": "llguidance", "case_id": "a"}]
    meta = {"engines": [{"engine": "xgrammar@vllm", "version": "0.2.8"},
                        {"engine": "xgrammar", "version": "0.2.9"}]}
    out, m = rename_rows(recs, meta, ["xgrammar@vllm=xgrammar"])
    assert sorted(r["engine"] for r in out) == ["llguidance", "xgrammar@vllm"]
    assert m["engines"] == [{"engine": "xgrammar@vllm", "version": "0.2.9",
                             "compared_as": "xgrammar"}]
    with pytest.raises(ValueError, match="no row nope"):
        rename_rows(recs, meta, ["x=nope"])
    with pytest.raises(ValueError, match="BASE=RUN"):
        rename_rows(recs, meta, ["xgrammar"])
