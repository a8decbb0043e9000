"""``harness run --suite e2e`` through the CLI: records, summary.json's e2e block, the table."""

from __future__ import annotations

import json

import pytest

from harness.registry import is_installed
from tests.conftest import harness, link_real, read_records

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not is_installed("xgrammar"), reason="xgrammar not installed")
def test_cli_e2e_run(tmp_path):
    data = tmp_path / "data"
    link_real(data, names=("Glaiveai2K---calculate_area_5c088303.json",))
    res = tmp_path / "results"
    p = harness("run", "--suite", "e2e", "--engine", "xgrammar", "--data", str(data),
                "--model", "micro", "--runtime", "torch", "--max-tokens", "12", "--overlap",
                "--no-graphs",
                "--results", str(res), "--reports", str(tmp_path / "reports"), "--no-progress")
    assert p.returncode == 0, p.stderr[-3000:]
    run, recs = read_records(res)
    assert len(recs) == 1
    r = recs[0]
    assert r["outcome"] in ("passing", "invalidation_error"), r.get("error")
    assert r["e2e_config"]["runtime"] == "torch" and r["e2e_config"]["overlap"] is True
    assert r["e2e"]["schedule"] == "overlapped"
    meta = json.loads((run / "run.json").read_text())
    assert meta["config"]["model"] == "micro" and meta["config"]["max_tokens"] == 12
    block = json.loads((run / "summary.json").read_text())["engines"]["xgrammar"]["e2e"]
    for k in ("ttft_ms", "tpot_ms", "tpot_unconstrained_ms", "tpot_ratio", "invalid_outputs",
              "runaways"):
        assert k in block, k
    assert block["tpot_ms"] > 0 and block["ttft_ms"] > 0
    assert "end to end" in p.stdout and "xgrammar" in p.stdout
    # the protocol's figures: warm-up, interleaved pairs, the ratio as the rules allow it
    # (one schema: too few pairs for an interval), the harness's share, the components
    assert r["protocol"]["warmup"]["1"]["steps"] > 0
    assert [bl["mode"] for bl in r["protocol"]["blocks"]["1"]] == ["constrained",
                                                                   "unconstrained"] * 2
    assert block["tpot_ratio"] is None and "too few samples" in block["tpot_ratio_note"]
    assert 0 < block["harness_share"] < 1 and block["shares"]["forward"]["share"] > 0
    for want in ("warm-up at batch 1: first", "over 2 AB pairs", "harness's share",
                 "components of the constrained step", "floor: ", "CUDA graphs off",
                 "SM clock before/after each block: not available (CPU run)", "mask apply"):
        assert want in p.stdout, want
    report = (tmp_path / "reports" / run.name / "report.md").read_text()
    assert "Interleaved blocks" in report and "Mask-apply microbenchmark" in report
