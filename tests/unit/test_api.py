"""The library API: a validated RunConfig, harness.run → Run, versioned formats."""

from __future__ import annotations

import json

import pytest

import harness
from conftest import link_real
from harness.config import ConfigError, RunConfig
from harness.store.run_store import RECORD_FORMAT, RunStore, StoreError


@pytest.mark.parametrize("kwargs, message", [
    ({"suite": "nope"}, "unknown suite 'nope'"),
    ({"engines": "nope"}, "unknown engine 'nope'"),
    ({"engines": "xgrammar:nope"}, "unknown configuration 'nope' for engine 'xgrammar'"),
    ({"serializations": ["ascii", "ebcdic"]}, "serialisations must be among"),
    ({"serializations": ["ascii"], "primary": "unicode"}, "include the primary (unicode)"),
    ({"jobs": 0}, "--jobs must be ≥ 1"),
    ({"timeout_s": 0}, "--timeout > 0"),
    ({"sample": 0}, "--sample must be ≥ 1"),
    ({"sample": "most"}, "--sample must be ≥ 1 or 'all'"),
    ({"options": {"walks": 3}}, "suite 'jsonschemabench' has no option walks"),
])
def test_config_refuses_what_cannot_run(kwargs, message):
    with pytest.raises(ConfigError) as e:
        RunConfig(**kwargs)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_config_is_frozen_and_round_trips_through_run_json():
    c = RunConfig(suite="fuzz", engines=["llguidance", "xgrammar"], subsets="a,b",
                  options={"walks": 3})
    with pytest.raises(Exception):
        c.jobs = 2  # type: ignore[misc]
    assert c.engines == "llguidance,xgrammar" and c.subsets == ("a", "b")
    assert c.options["walks"] == 3 and c.options["walk_tokens"] == 384  # defaults filled
    d = c.to_dict()
    assert d["walks"] == 3 and d["subsets"] == ["a", "b"] and "options" not in d
    assert RunConfig.from_dict(d) == c
    # an older run.json held every suite's options: the other suites' keys are dropped
    assert RunConfig.from_dict({**RunConfig().to_dict(), "walks": 8, "model": "tiny"}) == RunConfig()


def test_sample_all_takes_every_file_where_a_suite_would_take_fewer(tmp_path):
    """``--sample all``: the hazards suite (default: 4 corpus schemas) takes every file of the
    folder; the command line reads it as the config does."""
    from harness.cli import build_parser
    from harness.registry import SUITES

    link_real(tmp_path, ("BFCL_parallel_multiple_142.json", "Github_easy---o43998.json",
                         "Glaiveai2K---calculate_area_5c088303.json", "JME_39.json",
                         "Github_easy---o10009.json"))
    args = build_parser().parse_args(["run", "--suite", "hazards", "--sample", "all"])
    assert args.sample == "all"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--sample", "many"])
    c = RunConfig(suite="hazards", subsets=["keywords"], sample="all", data=str(tmp_path))
    assert RunConfig.from_dict(c.to_dict()) == c
    suite = SUITES.load("hazards")(data=str(tmp_path), subsets=["keywords"], sample="all")
    corpus = [i for i in suite.case_ids() if i.startswith("keywords/corpus/")]
    assert len(corpus) == 5
    few = SUITES.load("hazards")(data=str(tmp_path), subsets=["keywords"])
    assert len([i for i in few.case_ids() if i.startswith("keywords/corpus/")]) == 4


def _run_folder(tmp_path, meta_extra=None, records=()):
    run = tmp_path / "r1"
    (run / "workers").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": "r1", "config": RunConfig().to_dict(),
                                              "engines": [], **(meta_extra or {})}))
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


def test_unversioned_files_read_as_version_1(tmp_path):
    old = {"engine": "null", "schema_id": "a.json", "subset": "x", "outcome": "passing"}
    store = RunStore.open_readonly(_run_folder(tmp_path, records=[old]))
    assert store.read_meta()["run_id"] == "r1"
    (rec,) = list(store.records())
    assert rec["case_id"] == "a.json" and "schema_id" not in rec
    assert rec["format"] == RECORD_FORMAT


@pytest.mark.parametrize("where", ["run.json", "records.jsonl", "summary.json"])
def test_unknown_format_versions_are_refused_in_one_line(tmp_path, where):
    rec = {"engine": "null", "case_id": "a.json", "subset": "x", "outcome": "passing",
           "format": 99 if where == "records.jsonl" else RECORD_FORMAT}
    run = _run_folder(tmp_path, {"format": 99} if where == "run.json" else None, [rec])
    if where == "summary.json":
        (run / "summary.json").write_text(json.dumps({"format": 99, "engines": {}}))
    with pytest.raises(StoreError) as e:
        r = harness.Run(run)
        r.meta()
        r.summary()
        list(r._store.records())
    assert where in str(e.value) and "format version 99" in str(e.value)
    assert "\n" not in str(e.value)


def test_run_in_process(tmp_path):
    data = tmp_path / "corpus"
    link_real(data)
    r = harness.run(harness.RunConfig(engines=["null"], data=str(data)),
                    results=tmp_path / "results", reports=tmp_path / "reports")
    assert isinstance(r, harness.Run) and r.path.parent == tmp_path / "results"
    s = r.summary()
    assert s["format"] == 2 and s["engines"]["null"]["status"] == "run"
    assert sum(s["engines"]["null"]["outcomes"].values()) == 3
    df = r.records()
    assert len(df) == 3 and set(df["case_id"]) == {p.name for p in data.iterdir()}
    assert len(r.instances()) > 0
    assert r.report().read_text().startswith("# Run ")
    recs = [json.loads(line) for line in (r.path / "records.jsonl").read_text().splitlines()]
    assert {x["format"] for x in recs} == {RECORD_FORMAT}
    assert json.loads((r.path / "run.json").read_text())["format"] == 1


def test_every_command_is_a_library_function(tmp_path):
    """summarize, make_report, baseline, gate and explain are the library's own functions (the CLI
    wraps them): on a tiny run each returns what the command prints or writes, and bad input
    is a one-line InputError."""
    data = tmp_path / "corpus"
    link_real(data)
    r = harness.run(harness.RunConfig(engines=["null"], data=str(data)),
                    results=tmp_path / "results", reports=tmp_path / "reports")
    s = harness.summarize(r.path, tmp_path / "again")
    assert s["headline"] == r.summary()["headline"]
    assert (tmp_path / "again" / "report.md").read_text().startswith("# Run ")
    html, md = harness.make_report([r.path, r.path], tmp_path / "cmp")
    assert html.name == "report.html" and "## Diff" in md.read_text()
    b = harness.baseline(r.path, tmp_path / "base.json")
    assert sum(len(v) for v in b["outcomes"].values()) == 3
    g = harness.gate(tmp_path / "base.json", r.path, latency="off")
    assert g.passed and g.exit_code == 0 and "GATE PASSED" in g.text
    with pytest.raises(harness.InputError, match="no token-level finding"):
        harness.explain(r.path, next(iter(data.iterdir())).name)
    with pytest.raises(harness.InputError, match="base.json"):
        harness.gate(tmp_path / "nope" / "base.json", r.path)
    assert len(str(pytest.raises(harness.InputError, harness.summarize,
                                 tmp_path / "no-run").value).splitlines()) == 1


def test_a_summary_of_an_older_format_is_rebuilt_from_the_records(tmp_path):
    """summary.json version 1 (before the headline) is not read as it is: the reader
    rebuilds it from records.jsonl, the source of truth, in the current format."""
    from harness.records import SUMMARY_FORMAT

    rec = {"engine": "null", "case_id": "a.json", "subset": "x", "outcome": "passing",
           "format": RECORD_FORMAT}
    run = _run_folder(tmp_path, records=[rec])
    (run / "summary.json").write_text(json.dumps({"format": 1, "engines": {}}))
    s = harness.Run(run).summary()
    assert s["format"] == SUMMARY_FORMAT and s["headline"]["engines"]["null"]["n"] == 1


def test_the_store_writes_records_only(tmp_path):
    """A record missing a key every record has, or holding a core key of the wrong type, is
    refused in one line before anything is written; the earlier records stay whole."""
    store = RunStore.create(tmp_path, "run", {"config": {}, "sessions": []})
    store.append({"engine": "e", "case_id": "a", "outcome": "passing", "ttfm_ns": 5})
    for bad, says in (({"engine": "e", "outcome": "passing"}, "'case_id' missing"),
                      ({"engine": "e", "case_id": "b", "outcome": "passing", "ttfm_ns": "5"},
                       "'ttfm_ns' is str, not int or float")):
        with pytest.raises(StoreError, match=says) as e:
            store.append(bad)
        assert "\n" not in str(e.value)
    store.close()
    assert [r["case_id"] for r in RunStore.open_readonly(tmp_path / "run").records()] == ["a"]
