"""Suite churn: the Zipf streams and the figures, on the real corpus and real engines."""

from __future__ import annotations

import numpy as np
import pytest

from suites.churn.summary import churn_rows
from suites.churn import ChurnSuite, zipf_ranks


def test_zipf_ranks():
    assert zipf_ranks(50, 0, seed=1) == list(range(50))  # 0: every request new
    r1 = zipf_ranks(400, 1.2, seed=3)
    assert r1 == zipf_ranks(400, 1.2, seed=3) and r1 != zipf_ranks(400, 1.2, seed=4)
    counts = np.bincount(r1, minlength=400)
    assert counts[0] > counts[10] > 0 and len(set(r1)) < 400  # a heavy head, repeats
    assert len(set(zipf_ranks(400, 0.3, seed=3))) > len(set(r1))  # flatter: more distinct
    with pytest.raises(ValueError):
        zipf_ranks(5, -1, seed=0)


def test_streams_are_unique_schemas_per_rank(corpus_dir):
    s = ChurnSuite(data=str(corpus_dir), sample=4, options={"zipf": [1.0, 0.0],
                                                            "churn_requests": 30})
    cases = {c.case_id: c for c in s.cases()}
    assert set(cases) == {"zipf1", "zipf0"}
    new = cases["zipf0"].request
    assert new["ranks"] == list(range(30)) and len(set(new["pool"].values())) == 30
    rep = cases["zipf1"].request
    assert len(rep["pool"]) == len(set(rep["ranks"])) < 30


def test_churn_rows_from_records():
    def q(i, rank, repeat, ns, hit=None, error=None):
        d = {"i": i, "rank": rank, "repeat": repeat, "ttft_ns": ns}
        if hit is not None:
            d["hit"] = hit
        if error:
            d["error"] = error
        return d

    recs = [{"engine": "a", "churn": {"exponent": 1.0, "has_cache": True, "cache": "x",
                                      "requests": [q(0, 0, False, 4e6, False), q(1, 0, True, 1e5, True),
                                                   q(2, 1, False, 2e6, False), q(3, 1, True, 0, error="e")]}},
            {"engine": "b", "churn": {"exponent": 1.0, "has_cache": False, "cache": "none",
                                      "requests": [q(0, 0, False, 1e6), q(1, 0, True, 1e6)]}}]
    a, b = churn_rows(recs)
    assert (a["requests"], a["distinct"], a["errors"]) == (4, 2, 1)
    assert a["hit_rate"] == pytest.approx(1 / 3) and a["repeats"] == pytest.approx(1 / 3)
    assert a["repeat_ms"]["mean"] == pytest.approx(0.1) and a["new_ms"]["mean"] == pytest.approx(3.0)
    assert b["hit_rate"] == 0.0 and b["repeats"] == 0.5  # no cache: repeats compile again


def test_a_job_that_died_is_a_row_that_says_so():
    from suites.churn.summary import table_rows

    rows = churn_rows([{"engine": "slow", "case_id": "zipf0.5", "outcome": "timeout",
                        "error": "wall-clock limit 60s passed during compile"}])
    assert [(r["engine"], r["exponent"], r["errors"]) for r in rows] == [("slow", 0.5, "timeout")]
    assert table_rows(rows)[0][-1] == "timeout"
