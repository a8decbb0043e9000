"""The example suite of ``docs/writing-a-suite.md`` (``docs/example_suite/``), registered
the way a third-party suite is and run end to end through :func:`harness.run` with real
engines: what the guide shows works as shown."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import harness
from harness.config import RunConfig
from harness.registry import SUITES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "example_suite"


@pytest.fixture
def max_length_suite():
    SUITES.register("max-length", "docs.example_suite:SUITE")
    yield
    SUITES.unregister("max-length")


def test_the_example_is_small_and_imports_only_the_suite_api():
    files = sorted(EXAMPLE.glob("*.py"))
    assert sum(len(f.read_text().splitlines()) for f in files) < 150
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                top = node.module.split(".")[0]
                if top in ("harness", "engines", "suites", "docs"):
                    assert node.module.startswith(("harness.suite", "engines.protocol",
                                                   "docs.example_suite")), (f, node.module)


def test_the_example_suite_runs_end_to_end(max_length_suite, tmp_path):
    config = RunConfig(suite="max-length", engines="llguidance,reference", sample=2,
                       jobs=1, timeout_s=120, options={"max_lengths": [3, 8, 64]})
    assert config.suite_class.__name__ == "MaxLength"
    texts: list[str] = []
    run = harness.run(config, results=tmp_path / "results", reports=tmp_path / "reports",
                      echo=texts.append)
    records = [json.loads(line) for line in (run.path / "records.jsonl").read_text().splitlines()]
    # sample 2 of the three sizes, two engines: four jobs, each replaying three instances
    assert sorted((r["engine"], r["case_id"]) for r in records) == [
        (e, f"max_length/{n}") for e in ("llguidance", "reference") for n in (3, 8)]
    for r in records:
        assert r["suite"] == "max-length" and r["outcome"] == "passing", r
        assert [i["expected"] for i in r["instances"]] == [True, False, False]
    block = run.summary()["max_length"]
    assert block == {e: {"outcomes": {"3": "passing", "8": "passing"}, "largest_held": 8}
                     for e in ("llguidance", "reference")}
    assert any("llguidance holds maxLength up to 8" in t for t in texts)
    assert run.summary()["headline"]["unit"] == "schema"
    report = (run.reports / "report.md").read_text()
    assert "maxLength held" in report and "maxLength 8" in report


def test_the_example_suite_refuses_a_selection_it_cannot_make(max_length_suite):
    from harness.suite import SuiteError, build_suite

    with pytest.raises(SuiteError, match="no max-length case matches"):
        build_suite("max-length", schemas="nothing*", options={})
