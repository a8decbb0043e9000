"""The grammar suite through the CLI on real engines and real case files: a run over a
case folder with malformed files (one line each, the run goes on), a grammar an engine
cannot read (its compile error), a wrong translation kept out of the engine's false
rejects; ``mask-diff`` and ``fuzz`` with ``--corpus grammars``; the serve suite's grammar
workloads against the canned server."""

from __future__ import annotations

import json
import shutil

from harness.suite.grammar_corpus import CASES_DIR
from tests.conftest import harness, read_records

CANNED = '{"name": "canned", "tags": ["a", "b"], "count": 3}'
GOOD = ("regex-iso-date.toml", "choice-yes-no.toml", "cfg-arithmetic.toml")


def _folder(tmp_path):
    data = tmp_path / "cases"
    data.mkdir()
    for n in GOOD:
        shutil.copy(CASES_DIR / n, data / n)
    (data / "cfg-broken.toml").write_text('family = "cfg"\nlark = """unterminated\n')
    (data / "regex-wrong-translation.toml").write_text(
        'family = "regex"\nregex = \'\'\'[0-9]+\'\'\'\n[forms]\ngbnf = \'\'\'root ::= [0-9]*\'\'\'\n'
        '[instances]\nvalid = ["7", "42"]\ninvalid = ["", "x"]\n')
    return data


def test_grammars_run_with_malformed_files_and_a_wrong_translation(tmp_path):
    data = _folder(tmp_path)
    r = harness("run", "--suite", "grammars", "--engine", "xgrammar,outlines,reference",
                "--data", str(data), "--results", str(tmp_path / "results"),
                "--reports", str(tmp_path / "reports"), "--no-progress", "--jobs", "2",
                timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, recs = read_records(tmp_path / "results")
    by = {(x["engine"], x["case_id"]): x for x in recs}
    assert len(recs) == 3 * 5
    bad = by[("xgrammar", "cfg-broken")]
    assert bad["outcome"] == "bad_input" and bad["error"].startswith("cfg-broken.toml: not valid TOML")
    # outlines reads regexes only: the CFG is its compile error, not a crash
    ce = by[("outlines", "cfg-arithmetic")]
    assert ce["outcome"] == "compile_error" and "reads regex" in ce["error"]
    for eng in ("xgrammar", "reference"):
        for cid in ("regex-iso-date", "choice-yes-no", "cfg-arithmetic"):
            assert by[(eng, cid)]["outcome"] == "passing", (eng, cid, by[(eng, cid)].get("error"))
    assert by[("xgrammar", "cfg-arithmetic")]["form"] == "gbnf"
    assert by[("reference", "choice-yes-no")].get("form_derived") is True
    # the reference engine reads the wrong GBNF? No: it takes the regex form (first in its
    # order), so the translation defect shows only in the check; llamacpp-style readers of
    # gbnf are exercised through the summary's translation findings of the fuzz run below.
    summary = json.loads((run_dir / "summary.json").read_text())
    g = summary["grammars"]
    fams = {(row["family"], row["engine"]) for row in g["table"]}
    assert ("cfg", "outlines") in fams and ("regex", "xgrammar") in fams
    row = next(x for x in g["table"] if x == x and x["family"] == "cfg" and x["engine"] == "xgrammar")
    assert row["coverage"] == 1.0 and row["false_rejects"] == 0 and row["tbm_p50_us"] > 0
    assert "Grammars: family × engine" in r.stdout
    report = (tmp_path / "reports" / run_dir.name / "report.md").read_text()
    assert "Grammars: regex, choice and CFG" in report
    import subprocess
    import sys

    from tests.conftest import ROOT

    table = subprocess.run([sys.executable, "benchmarks/results_table.py", str(run_dir)],
                           cwd=ROOT, capture_output=True, text=True)
    assert table.returncode == 0, table.stderr
    assert "## Grammar runs" in table.stdout and "| cfg | outlines |" in table.stdout


def test_a_translation_defect_is_not_an_engine_false_accept(tmp_path):
    """llamacpp-free: the xgrammar row given a gbnf form that accepts "" (the source regex
    does not) is configured by a case without a regex form, so xgrammar takes the gbnf."""
    data = tmp_path / "cases"
    data.mkdir()
    (data / "cfg-digits.toml").write_text(
        'family = "cfg"\nlark = \'\'\'\nstart: /[0-9]+/\n\'\'\'\n[forms]\n'
        'gbnf = \'\'\'root ::= [0-9]*\'\'\'\n[instances]\nvalid = ["7", "42"]\ninvalid = ["", "x"]\n')
    r = harness("run", "--suite", "grammars", "--engine", "xgrammar", "--data", str(data),
                "--results", str(tmp_path / "results"), "--reports", str(tmp_path / "reports"),
                "--no-progress", timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, (rec,) = read_records(tmp_path / "results")
    assert rec["form"] == "gbnf" and rec["outcome"] == "passing"
    assert [t["text"] for t in rec["translation"]] == [""]
    assert all(i["text"] != "" for i in rec["instances"])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["grammars"]["false_accepts"] == []
    assert [t["text"] for t in summary["grammars"]["translation"]] == [""]
    assert "Translation defects (ours): 1" in r.stdout


def test_mask_diff_and_fuzz_on_the_grammar_corpus(tmp_path):
    for suite, extra in (("mask-diff", ["--diff-instances", "1"]),
                         ("fuzz", ["--walks", "3", "--walk-tokens", "64"])):
        res = tmp_path / suite
        r = harness("run", "--suite", suite, "--corpus", "grammars", "--engine",
                    "xgrammar,llguidance", "--schemas", "cfg-arithmetic", "--results", str(res),
                    "--reports", str(tmp_path / "reports"), "--no-progress", *extra, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        run_dir, recs = read_records(res)
        assert {x["engine"] for x in recs} == {"xgrammar", "llguidance"}
        for x in recs:
            assert x["outcome"] in ("passing", "invalidation_error", "validation_error"), x.get("error")
            assert x["form"] in ("gbnf", "lark")
        if suite == "mask-diff":
            for x in recs:
                (inst,) = x["instances"]
                assert x["oracle"]["status"] == "ok" and x["oracle"]["form"] == "gbnf"
                assert inst["mask_diff"]["diffs_total"] == 0, inst["mask_diff"]["diffs"][:3]
        else:
            walks = [w for x in recs for w in x["fuzz"]["walks"]]
            assert len(walks) == 6
            # a walk that ended on EOS was judged by the lark parser
            assert all(w["status"] in ("valid", "runaway", "dead_end") for w in walks), walks
            assert "Translation drift on the engines' outputs: 0" in r.stdout


def test_serve_grammar_workloads_against_the_canned_server(tmp_path):
    for workload in ("regex", "choice", "grammar"):
        res = tmp_path / workload
        r = harness("run", "--suite", "serve", "--launch", "canned", "--workload", workload,
                    "--requests", "3", "--rate", "inf", "--no-baseline", "--model", "micro",
                    "--results", str(res), "--reports", str(tmp_path / "reports"),
                    "--no-progress", timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        run_dir, recs = read_records(res)
        assert len(recs) == 4
        # the canary, in the workload's own kind: the canned server honours JSON consts
        # only, so its regex, menu and grammar canaries come back unconstrained
        canary = recs[0]["serve"]
        assert canary["canary"] and canary["kind"] == workload
        assert canary["verdict"] == "constraint_not_enforced"
        assert f"NOT ENFORCED: the canary of {workload}/rinf came back" in r.stdout
        recs = recs[1:]
        from harness.measure.languages import reader
        from harness.suite.grammar_corpus import load_corpus

        cases = {c.case_id: c for c in load_corpus()}
        for x in recs:
            s = x["serve"]
            assert s["kind"] == workload and s["constrained"]
            # the canned text (a JSON object) judged by the case's ground-truth parser: in
            # the language of cfg-json, in no regex or menu
            case = cases[s["source"]]
            truth = reader(case.source, case.forms[case.source])(CANNED)
            if truth:
                assert s["verdict"] == "ok"
            else:
                assert s["verdict"] == "constraint_not_enforced" and "not in the language" in s["why"]
