"""The main job end to end: real engines, the real Llama-3 vocabulary, real corpus files."""

from __future__ import annotations

import json

import pytest

from conftest import REAL_FILES, harness, harness_subprocess, link_real, read_records
from engines.testing import NullEngine
from harness.registry import ENGINES, EngineSpec, is_installed
from harness.execution import session as benchmark
from harness.analysis import metrics
from harness.report import console as table


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    data = tmp_path_factory.mktemp("corpus")
    link_real(data)
    results = tmp_path_factory.mktemp("results")
    reports = tmp_path_factory.mktemp("reports")
    # the one run through the installed command in its own process, as a user runs it
    out = harness_subprocess("run", "--suite", "jsonschemabench", "--engine", "all,xgrammar:compliant",
                  "--data", str(data), "--results", str(results), "--reports", str(reports),
                  "--jobs", "2", "--no-progress")
    return out, results, reports


def test_all_engines_ran_on_every_file(real_run):
    out, results, _ = real_run
    assert out.returncode == 0, out.stderr
    run_dir, recs = read_records(results)
    engines = {"xgrammar", "llguidance", "outlines", "xgrammar:compliant"}
    assert {(r["engine"], r["case_id"]) for r in recs} == {
        (e, f) for e in engines for f in REAL_FILES}
    for r in recs:
        assert r["outcome"] in ("passing", "validation_error", "invalidation_error",
                                "compile_error"), r.get("error")
        if r["outcome"] != "compile_error":
            assert r["ttfm_ns"] >= r["compile_ns"] > 0
            for inst in r["instances"]:
                assert set(inst["results"]) == {"ascii", "unicode", "compact", "compact_unicode"}
                res = inst["results"]["unicode"]  # the primary: replayed first, never "same_as"
                assert len(res["mask_ns"]) == len(res["commit_ns"]) > 0
                assert all(t > 0 for t in res["mask_ns"])


def test_run_metadata_and_summary(real_run):
    out, results, _ = real_run
    run_dir, recs = read_records(results)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["tokenizer"]["size"] == 128256 and meta["tokenizer"]["name"] == "llama3"
    versions = {e["engine"]: e["version"] for e in meta["engines"]}
    assert versions["xgrammar"] and versions["llguidance"] and versions["outlines"]
    summary = json.loads((run_dir / "summary.json").read_text())
    for label in ("xgrammar", "llguidance", "outlines", "xgrammar:compliant"):
        e = summary["engines"][label]
        assert sum(e["outcomes"].values()) == len(REAL_FILES)
        assert set(e["false_rejects"]) == {"ascii", "unicode", "compact", "compact_unicode"}
        # the summary's token count is the number of primary-serialisation steps recorded
        steps = sum(len(i["results"]["unicode"]["mask_ns"]) for r in recs
                    if r["engine"] == label for i in r.get("instances", ()) if "results" in i)
        assert e["tokens"] == steps
    # the console table shows MaskBench's rows
    for row in ("passing", "compile error", "timeout", "TBM p99.9", "masks > 1 ms",
                "TTFM p50 (ms)", "false rejects / valid [unicode]"):
        assert row in out.stdout


def test_report_with_plots(real_run):
    out, results, reports = real_run
    run_dir, _ = read_records(results)
    rep = reports / run_dir.name
    text = (rep / "report.md").read_text()
    assert "| metric |" in text and "TBM p99" in text
    for png in ("tbm.png", "ttfm.png"):
        assert f"![{png}]({png})" in text
        assert (rep / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_engines_command_lists_versions_and_configs():
    out = harness("engines")
    assert out.returncode == 0
    for name in ("xgrammar", "llguidance", "outlines"):
        line = next(l for l in out.stdout.splitlines() if l.startswith(name))
        assert "yes" in line
    assert "compliant" in out.stdout and "lenient" in out.stdout
    # every registered row, the hidden ones with why, the missing ones with how to install
    lines = out.stdout.splitlines()
    from harness.registry import ENGINES, EngineSpec, adapter_class

    for name in ENGINES.names():
        i = next(k for k, l in enumerate(lines) if l.split()[:1] == [name])
        cls = adapter_class(name)
        if cls.hidden:
            assert lines[i].split()[3] == "no" and f"hidden: {cls.hidden_reason}" in lines[i + 1]
        if not EngineSpec(name).installed():
            assert lines[i].split()[1] == "NO" and "install: " in "\n".join(lines[i + 1:i + 4])
        if cls.environment:  # a row that runs in its own Python environment says which
            assert f"runs in: environment {cls.environment}" in "\n".join(lines[i + 1:i + 4])


class GhostEngine(NullEngine):
    """A row whose engine package is absent."""

    name = "ghost"
    requires = "no_such_package_xyz"


def test_uninstalled_engine_is_reported_not_run(monkeypatch):
    monkeypatch.setitem(ENGINES._targets, "ghost", f"{__name__}:GhostEngine")
    assert not is_installed("ghost")
    status = benchmark.engine_status(EngineSpec("ghost"))
    assert status["status"] == "not_run" and "not installed" in status["reason"]
    meta = {"config": {"primary": "ascii", "serializations": ["ascii"]},
            "engines": [status]}
    summary = metrics.summarize([], meta)
    assert summary["engines"]["ghost"]["status"] == "not_run"
    text = table.render_text(summary)
    assert "not run" in text
