"""Conformance suites (json-schema-test-suite, drift), the conformance views and
token-boundary robustness (non-canonical segmentations), on small real inputs with verdicts
checked against jsonschema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import harness, read_records
from suites.drift import summary as conformance
from suites.json_schema_test_suite import summary as keywords
from harness.analysis import metrics
from harness.measure.groundtruth import GroundTruth, offline_registry, parse_instance_text
from harness.measure.segment import SegmentationError, TokenIndex, segmentation, segmentations
from engines.vocab import Vocabulary, load_vocabulary
from harness.suite import Case, Instance, SuiteError
from suites.drift import Drift, probe_id
from suites.drift.probes import AXES, GROUPS
from suites.json_schema_test_suite import JsonSchemaTestSuite, resolve_data_dir, split_case_id

JSTS_FILES = ("draft2020-12/minLength", "draft7/refRemote", "draft7/boolean_schema")
DRIFT_AXES = ("additional_properties", "duplicate_keys", "number_forms")
FAST_ENGINES = "xgrammar,llguidance"


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary("llama3")


# ----------------------------------------------------------------- the drift catalogue
def test_catalogue_verdicts_agree_with_jsonschema():
    """Every probe's verdict is jsonschema's on the strict parse of its text; where there is
    no value (not JSON, duplicate keys) the catalogue says invalid."""
    seen = set()
    for g in GROUPS:
        assert g["axis"] in AXES
        truth = GroundTruth(g["schema"], offline_registry(g["resources"].items()))
        for p in g["probes"]:
            pid = f"{g['axis']}/{g['name']}/{p['id']}"
            assert pid not in seen, pid
            seen.add(pid)
            value, why = parse_instance_text(p["text"])
            if why:
                assert p["valid"] is False, pid
                assert g["axis"] != "duplicate_keys" or why.startswith("duplicate"), pid
            else:
                assert truth.verdict(value) == (p["valid"], None), pid
    assert 60 <= len(seen) <= 200
    for axis in AXES:  # each axis both ways
        probes = [p for g in GROUPS if g["axis"] == axis for p in g["probes"]]
        assert {p["valid"] for p in probes} == {True, False}, axis


def test_axes_documented():
    readme = (Path(__file__).resolve().parents[2] / "docs" / "suites.md").read_text()
    for axis in AXES:
        assert f"`{axis}`" in readme, axis
    for axis in ("additional_properties", "whitespace", "property_order",
                 "pattern_anchoring", "ignored_keywords"):
        assert axis in AXES


def test_strict_parse():
    assert parse_instance_text('{"a": 1}') == ({"a": 1}, None)
    for bad in ('{"a": 1, "a": 2}', "NaN", "042", '"a\nb"', '{"a":\u00a01}'):
        value, why = parse_instance_text(bad)
        assert value is None and why


def test_drift_selection():
    d = Drift(subsets=["whitespace", "remote_ref"])
    assert {c.subset for c in d.cases()} == {"whitespace", "remote_ref"}
    case = next(c for c in d.cases() if c.subset == "remote_ref")
    assert case.resources and all(u.startswith("http://localhost:1234/") for u, _ in case.resources)
    job = case.to_job()
    assert all(isinstance(i["text"], str) for i in job["instances"])
    assert "$schema" not in case.schema_text
    assert probe_id(case.case_id, 0).startswith("remote_ref/")
    with pytest.raises(SuiteError, match="unknown drift axis"):
        Drift(subsets=["nope"])
    assert len(Drift(sample=12)) == 12 and len({c.subset for c in Drift(sample=12).cases()}) == 12


# ------------------------------------------------------------------- the test suite
def test_jsts_suite_cases():
    s = JsonSchemaTestSuite(subsets=["draft7/type"])
    cases = list(s.cases())
    assert cases[0].case_id == "draft7/type.json#0" and cases[0].subset == "draft7"
    assert cases[0].meta["keyword"] == "type" and cases[0].default_draft == "draft7"
    assert cases[0].expected_from == "label" and not cases[0].format_assertion
    assert len(cases[0].resources) > 50  # every file under remotes/
    assert split_case_id("draft2020-12/optional/format/date.json#3") == (
        "draft2020-12", "optional/format/date", 3)
    fmt = JsonSchemaTestSuite(subsets=["draft2020-12/optional/format/date"])
    assert all(c.format_assertion and c.subset == "draft2020-12/optional/format" for c in fmt.cases())
    req = JsonSchemaTestSuite(subsets=["draft7/required"])
    assert all(c.subset == "draft7" for c in req.cases())
    whole = JsonSchemaTestSuite(subsets=["draft2020-12"])
    assert {c.split("/", 1)[0] for c in whole.case_ids()} == {"draft2020-12"}
    assert any("/optional/format/" in c for c in whole.case_ids())
    with pytest.raises(SuiteError, match="unknown subset"):
        JsonSchemaTestSuite(subsets=["draft3"])
    glob = JsonSchemaTestSuite(schemas="draft7/ref*.json#0")
    assert sorted(glob.case_ids()) == ["draft7/ref.json#0", "draft7/refRemote.json#0"]


def test_jsts_data_resolution(monkeypatch, tmp_path):
    root = resolve_data_dir(None)
    monkeypatch.setenv("HARNESS_DATA", str(root.parent))
    assert resolve_data_dir(None) == root
    monkeypatch.setenv("HARNESS_DATA", str(root))
    assert resolve_data_dir(None) == root
    with pytest.raises(SuiteError, match="no JSON Schema Test Suite"):
        resolve_data_dir(str(tmp_path))


def test_default_draft_for_ground_truth():
    """A draft7 schema without $schema is judged by Draft 7 (``dependencies`` applies; in
    2020-12 it is an unknown keyword)."""
    schema = {"dependencies": {"a": ["b"]}}
    assert GroundTruth(schema, default_draft="draft7").verdict({"a": 1}) == (False, None)
    assert GroundTruth(schema).verdict({"a": 1}) == (True, None)
    fmt = {"format": "date"}
    assert GroundTruth(fmt).verdict("nope") == (False, None)
    assert GroundTruth(fmt, format_assertion=False).verdict("nope") == (True, None)


@pytest.fixture(scope="module")
def jsts_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("jsts-results")
    reports = tmp_path_factory.mktemp("jsts-reports")
    out = harness("run", "--suite", "json-schema-test-suite", "--engine", FAST_ENGINES,
                  "--subset", ",".join(JSTS_FILES), "--results", str(results),
                  "--reports", str(reports), "--no-progress")
    return out, results


def test_jsts_run_end_to_end(jsts_run):
    out, results = jsts_run
    assert out.returncode == 0, out.stderr[-2000:]
    run_dir, recs = read_records(results)
    suite = JsonSchemaTestSuite(subsets=list(JSTS_FILES))
    cases = {c.case_id: c for c in suite.cases()}
    assert {(r["engine"], r["case_id"]) for r in recs} == {
        (e, c) for e in FAST_ENGINES.split(",") for c in cases}
    for r in recs:
        case = cases[r["case_id"]]
        validator = {"draft7": jsonschema.Draft7Validator,
                     "draft2020-12": jsonschema.Draft202012Validator}[case.default_draft]
        registry = offline_registry(case.resources, case.default_draft)
        assert r["outcome"] in ("passing", "validation_error", "invalidation_error", "compile_error")
        for inst, src in zip(r["instances"], case.instances):
            # the suite's verdict, which jsonschema (remote refs resolved offline) confirms
            assert inst["expected"] == src.label_valid
            assert inst["truth"] == validator(case.schema, registry=registry).is_valid(src.data)
            assert not inst.get("label_disagrees")
    table = json.loads((run_dir / "keywords.json").read_text())
    assert set(table) == {"draft2020-12", "draft7"}
    assert set(table["draft7"]) == {"refRemote", "boolean_schema"}
    for draft, rows in table.items():
        for kw, cells in rows.items():
            n = sum(len(c.instances) for c in cases.values() if split_case_id(c.case_id)[:2] == (draft, kw))
            for eng, cell in cells.items():
                assert cell["instances"] == n
                assert n == sum(cell[k] for k in ("passed", "false_accept", "false_reject",
                                                  "compile_error", "died", "unserialisable"))
    # remote refs: llguidance never fetches (compile error); nothing passes by accident
    assert table["draft7"]["refRemote"]["llguidance"]["compile_error"] > 0
    md = keywords.render_keyword_markdown(table)
    assert "| keyword | xgrammar | llguidance |" in md and "| refRemote |" in md
    assert "json-schema-test-suite: instances passed per engine" in out.stdout


# ----------------------------------------------------------------------- drift runs
@pytest.fixture(scope="module")
def drift_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("drift-results")
    reports = tmp_path_factory.mktemp("drift-reports")
    out = harness("run", "--suite", "drift", "--engine", FAST_ENGINES + ",xgrammar:compliant",
                  "--subset", ",".join(DRIFT_AXES), "--results", str(results),
                  "--reports", str(reports), "--no-progress")
    return out, results


def test_drift_run_end_to_end(drift_run):
    out, results = drift_run
    assert out.returncode == 0, out.stderr[-2000:]
    run_dir, recs = read_records(results)
    groups = {f"{g['axis']}/{g['name']}": g for g in GROUPS}
    for r in recs:
        g = groups[r["case_id"]]
        for inst in r["instances"]:
            probe = g["probes"][inst["index"]]
            assert inst["text"] == probe["text"]
            assert inst["expected"] == probe["valid"]
            if r["outcome"] != "compile_error":
                assert set(inst["results"]) == {"text"}
    drift = json.loads((run_dir / "drift.json").read_text())
    assert set(drift) == {"xgrammar", "llguidance", "xgrammar:compliant"}
    for eng, axes in drift.items():
        assert set(axes) == set(DRIFT_AXES)
        assert set(axes.values()) <= set(conformance.VERDICTS)
    # engine facts (shared/docs/engines.md): xgrammar's strict_mode forbids undeclared
    # properties the spec allows; llguidance follows the spec's default
    assert drift["xgrammar"]["additional_properties"] == "stricter"
    assert drift["llguidance"]["additional_properties"] == "agrees"
    # the matrix agrees with the records it is built from
    assert conformance.drift_matrix(recs) == drift
    pairs = conformance.drift_pairs(recs)
    pair = next(p for p in pairs if set(p["engines"]) == {"xgrammar", "llguidance"})
    assert any(d["probe"] == "additional_properties/open/extra-property" for d in pair["probes"])
    assert "drift: engine × axis" in out.stdout and "engine pairs that accept" in out.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["serializations"] == ["text"]
    e = summary["engines"]["llguidance"]
    assert e["valid_instances"]["text"] + e["invalid_instances"]["text"] > 0


def _rec(engine, case, outcome, insts):
    return {"engine": engine, "case_id": case, "suite": "drift", "subset": case.split("/")[0],
            "outcome": outcome,
            "instances": [{"index": i, "expected": exp, "text": "x",
                           "results": {"text": {"status": "accepted" if acc else "rejected"}}}
                          for i, (exp, acc) in enumerate(insts)]}


def test_drift_verdict_classes():
    ap, ws = "additional_properties/open", "whitespace/object-with-array"
    recs = [
        _rec("A", ap, "passing", [(True, True), (True, True), (False, False)]),
        _rec("B", ap, "validation_error", [(True, True), (True, False), (False, False)]),
        _rec("C", ap, "invalidation_error", [(True, True), (True, True), (False, True)]),
        _rec("D", ap, "validation_error", [(True, True), (True, False), (False, True)]),
        _rec("E", ap, "compile_error", [(True, True), (True, True), (False, False)]),
        _rec("A", ws, "passing", [(True, True)]),
    ]
    m = conformance.drift_matrix(recs)
    assert m["A"] == {"additional_properties": "agrees", "whitespace": "agrees"}
    assert [m[e]["additional_properties"] for e in "BCDE"] == ["stricter", "looser", "mixed", "refuses"]
    pairs = {tuple(p["engines"]): p for p in conformance.drift_pairs(recs)}
    assert pairs["A", "B"]["probes"][0]["probe"] == "additional_properties/open/extra-property"
    assert ("A", "E") not in pairs  # a refusal is not a different language
    assert "A vs B" in conformance.render_pairs_markdown(list(pairs.values()))
    assert "| additional_properties | agrees |" in conformance.render_drift_markdown(
        conformance.drift_details(recs))


# ---------------------------------------------------------- token-boundary robustness
TEXTS = ('{"name": "Alice", "age": 30}', '"Zoë 😀 «x»"', '[1, 2.5e-3, {"k": "a\\nb"}]',
         "0", '{"long": "' + "abcdefghij" * 30 + '"}')


def test_llama3_has_every_single_byte(vocab):
    assert TokenIndex(vocab).missing_bytes == []


def test_segmentation_property(vocab):
    for text in TEXTS:
        data = text.encode()
        canonical = vocab.encode(text)
        seqs = segmentations(vocab, text, range(20))
        for seed, seq in enumerate(seqs):
            assert b"".join(vocab.tokens[t] for t in seq) == data
            assert not set(seq) & (set(vocab.special_ids) | set(vocab.stop_ids))
            assert seq == segmentation(vocab, text, seed)  # reproducible from its seed
            if len(data) > 1:
                assert seq != canonical
        if len(data) > 1:
            assert len({tuple(s) for s in seqs}) > 1
    one = segmentation(vocab, "0", 7)
    assert one == vocab.encode("0")  # a single byte has one tokenisation


def test_unsegmentable_vocabulary_raises():
    toks = [b"a", b"b", b"ab", b"<eos>"]
    v = Vocabulary("tiny", toks, frozenset({3}), (3,), None, encoder=lambda s: [2] if s == "ab" else [])
    assert segmentation(v, "ab", 0) == [0, 1]
    with pytest.raises(SegmentationError):
        segmentation(v, "abc", 0)


@pytest.mark.parametrize("engine", ["xgrammar", "llguidance"])
def test_engines_accept_non_canonical_tokenisations(vocab, engine):
    pytest.importorskip(engine)
    from harness.registry import EngineSpec

    schema = json.dumps({"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name", "age"], "additionalProperties": False})
    cg = EngineSpec(engine).build(vocab).compile(schema)
    for text in ('{"name": "Alice", "age": 30}', '{"name":"Bob Smith","age":-7,"tags":["x","yz"]}'):
        for seq in segmentations(vocab, text, range(10)):
            m = cg.matcher()
            assert all(m.commit(t) for t in seq) and m.eos_allowed(), (engine, text, seq)


def test_worker_segmentation_replays_and_summary(vocab):
    pytest.importorskip("llguidance")
    from harness.execution.worker import run_job

    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
              "required": ["a"]}
    case = Case("test", "seg-case", "s", "-", schema, json.dumps(schema), (
        Instance(0, {"a": 12345, "b": "hello world"}, True),
        Instance(1, {"a": "x"}, False),
        Instance(2, None, True, text='{"a":1,  "b": "q"}')))
    job = {"engine": {"name": "llguidance", "config": "default", "label": "llguidance"},
           "case": case.to_job(), "tokenizer": "llama3", "serializations": ["ascii", "compact"],
           "primary": "ascii", "segmentations": 3}
    rec = run_job(job)
    assert rec["outcome"] == "passing"
    valid, invalid, exact = rec["instances"]
    assert {k for k in valid["results"] if k.startswith("seg")} == {"seg0", "seg1", "seg2"}
    assert not any(k.startswith("seg") for k in invalid["results"])  # valid instances only
    assert set(exact["results"]) == {"text", "seg0", "seg1", "seg2"}
    for inst, text in ((valid, json.dumps({"a": 12345, "b": "hello world"})),
                       (exact, '{"a":1,  "b": "q"}')):
        for k in ("seg0", "seg1", "seg2"):
            res = inst["results"][k]
            assert set(res) <= {"status", "n_tokens", "reject_at", "seed", "of", "disagreement"}
            assert res["status"] == "accepted"
            assert res["n_tokens"] == len(segmentation(vocab, text, res["seed"]))
    assert valid["results"]["seg0"]["of"] == "ascii" and exact["results"]["seg0"]["of"] == "text"
    seg = metrics.segmentation_counts([rec], "llguidance", "ascii")
    assert seg == {"replays": 6, "rejected": 0, "rejected_canonical_accepted": 0}
    meta = {"config": {"primary": "ascii", "serializations": ["ascii", "compact"]},
            "engines": [{"engine": "llguidance", "status": "run"}]}
    summary = metrics.summarize([rec], meta)
    assert summary["engines"]["llguidance"]["segmentation"]["replays"] == 6
    assert summary["serializations"] == ["ascii", "compact", "text"]
    assert summary["engines"]["llguidance"]["valid_instances"]["text"] == 1
