"""The adversarial suite: the catalogue is what it says (depths, sizes, labels that
jsonschema agrees with), and a real run classifies every case and reports it."""

from __future__ import annotations

import json

import pytest

from conftest import harness, read_records
from harness.measure.groundtruth import GroundTruth
from suites.adversarial import FAMILIES, FAMILY_BY_NAME, Adversarial, family_size, make_case
from harness.suite import SuiteError


def _depth(node, keys=("properties", "items", "oneOf")) -> int:
    """Nesting depth of schema keywords that hold subschemas (iterative)."""
    best, stack = 0, [(node, 0)]
    while stack:
        n, d = stack.pop()
        best = max(best, d)
        if isinstance(n, dict):
            for k, v in n.items():
                if k == "properties":
                    stack.extend((s, d + 1) for s in v.values())
                elif k == "items":
                    stack.append((v, d + 1))
                elif k == "oneOf":
                    stack.extend((s, d) for s in v)  # the branch's own keyword counts
    return best


def test_catalogue_has_the_families_and_sizes_the_issue_asks_for():
    for fam in ("nesting_object", "nesting_array", "nesting_oneof"):
        assert FAMILY_BY_NAME[fam].sizes == (8, 16, 32, 64)
    assert {10_000, 100_000} <= set(FAMILY_BY_NAME["enum"].sizes)
    assert 100_000 in FAMILY_BY_NAME["max_length"].sizes
    assert max(FAMILY_BY_NAME["schema_bytes"].sizes) == 4 << 20
    assert {"pattern_nested_quantifier", "pattern_dfa_blowup", "ref_chain", "ref_depth"} \
        <= set(FAMILY_BY_NAME)


@pytest.mark.parametrize("fam", [f.name for f in FAMILIES])
def test_each_case_is_its_size_and_its_labels_agree_with_jsonschema(fam):
    family = FAMILY_BY_NAME[fam]
    for size in family.sizes:
        case = make_case(family, size)
        assert family_size(case.case_id) == (fam, size)
        assert case.meta["family"] == fam and case.meta["size"] == size
        assert json.loads(case.schema_text) == case.schema
        if fam.startswith("nesting_"):
            assert _depth(case.schema) == size
        elif fam == "enum":
            assert len(set(case.schema["enum"])) == size
        elif fam == "schema_bytes":
            assert size <= len(case.schema_text.encode()) < size + 400
        elif fam == "max_length":
            assert case.schema["maxLength"] == size
        elif fam == "ref_chain":
            assert len(case.schema["$defs"]) == size
        labels = {i.label_valid for i in case.instances}
        assert labels == {True, False}, (case.case_id, "a valid and an invalid instance")
        truth = GroundTruth(case.schema)
        for inst in case.instances:
            assert truth.verdict(inst.data) == (inst.label_valid, None), (case.case_id, inst.index)


def test_selection_and_one_line_errors():
    s = Adversarial(subsets=["enum", "max_length"], sample=4)
    assert sorted(s.case_ids()) == ["enum/1000", "enum/10000", "max_length/10", "max_length/1000"]
    assert Adversarial(schemas="nesting_*/64").case_ids() == [
        "nesting_object/64", "nesting_array/64", "nesting_oneof/64"]
    d = Adversarial(subsets=["ref_depth"]).describe()
    assert d["cases"] == {f"ref_depth/{n}": ["ref_depth", n, "instance depth"] for n in (8, 32, 128)}
    with pytest.raises(SuiteError, match="unknown adversarial family/families nope; available: "):
        Adversarial(subsets=["nope"])
    with pytest.raises(SuiteError, match="reads no corpus; drop --data /x"):
        Adversarial(data="/x")


def test_run_classifies_every_case_and_reports_cost_against_size(tmp_path):
    results, reports = tmp_path / "results", tmp_path / "reports"
    out = harness("run", "--suite", "adversarial", "--engine", "xgrammar,llguidance",
                  "--subset", "nesting_oneof", "--timeout", "20", "--memory", "4",
                  "--jobs", "2", "--results", str(results), "--reports", str(reports),
                  "--no-progress")
    assert out.returncode == 0, out.stderr
    run_dir, recs = read_records(results)
    cases = Adversarial(subsets=["nesting_oneof"]).case_ids()
    assert sorted((r["engine"], r["case_id"]) for r in recs) == sorted(
        (e, c) for e in ("xgrammar", "llguidance") for c in cases)
    from suites.adversarial.summary import CLASSES, case_class, class_counts
    from suites.adversarial.report import rows
    from harness.report.model import load_run

    for r in recs:
        assert case_class(r["outcome"]) in CLASSES, r
        # within the limits: the job ended by itself or was ended at the wall limit
        assert r["wall_ns"] / 1e9 < 20 + 300, r
    data = rows(load_run(run_dir))
    counts = class_counts(data)
    assert {e: sum(c.values()) for e, c in counts.items()} == {"xgrammar": 4, "llguidance": 4}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["adversarial"] == {e: {c: counts[e].get(c, 0) for c in CLASSES}
                                      for e in counts}
    assert "adversarial cases per class:" in out.stdout
    measured = [d for d in data if d["class"] == "measured"]
    assert measured and all(d["ttfm_ms"] > 0 and d["mask_p50_us"] > 0 for d in measured)
    assert sorted(d["size"] for d in data if d["engine"] == "xgrammar") == [8, 16, 32, 64]
    md = (reports / run_dir.name / "report.md").read_text()
    assert "## Adversarial schemas" in md and "| engine | measured | compile error |" in md
    for png in ("adversarial_ttfm.png", "adversarial_mask.png"):
        assert (reports / run_dir.name / png).read_bytes()[:4] == b"\x89PNG"
    html = (reports / run_dir.name / "report.html").read_text()
    assert "Adversarial schemas" in html
