"""benchmarks/reference_perf.py on a real two-schema harness run (reference beside
llguidance): the side-by-side table, the cache memory figures and the target lines."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("reference_perf", ROOT / "benchmarks" / "reference_perf.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_reference_perf_prints_side_by_side(tmp_path, capsys):
    pytest.importorskip("llguidance")
    perf = _load()
    run = perf.run_harness(2, 1, "reference,llguidance", tmp_path / "results", 60)
    assert perf.print_report(run, per_schema=True) == 0
    out = capsys.readouterr().out
    records = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    ref = [r for r in records if r["engine"] == "reference" and r.get("engine_stats")]
    assert ref, "no reference record carries engine_stats"
    assert "ref / llguidance" in out and "TBM avg (µs)" in out
    assert "dense only (nodes × 16 KiB)" in out
    for r in ref:  # the per-schema line shows the record's own figures
        s = r["engine_stats"]
        assert f"{s['dense_equiv_bytes'] / 1024:,.0f}" in out
    assert out.count("met") >= 6 and "zero validation/invalidation errors" in out
