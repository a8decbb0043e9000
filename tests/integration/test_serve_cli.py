"""The serve suite through the CLI against the canned server (a real process on 127.0.0.1
streaming a fixed text, no model): whole runs, a refusal, a server crash mid-stream and
its restart, a killed run that leaves no server and resumes without loss."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, link_real, write_case
from tests.unit.test_serve import _gone


def _run(tmp_path, *args, data=None):
    from tests.conftest import harness

    data = data or tmp_path / "data"
    if not data.exists():
        link_real(data)
    return harness("run", "--suite", "serve", "--data", str(data), "--results",
                   str(tmp_path / "results"), "--reports", str(tmp_path / "reports"),
                   "--no-progress", *args, timeout=300)


def test_serve_run_against_a_launched_canned_server(tmp_path):
    """A whole run: both streams per rate, a refusal recorded and the run going on, the
    canned text judged against every schema (it ignores constraints: not enforced), no server
    left behind."""
    from tests.conftest import read_records

    data = tmp_path / "data"
    link_real(data)
    write_case(data, "refused.json", {"title": "refuse-me", "type": "object"}, [])
    r = _run(tmp_path, "--launch", "canned", "--rate", "50,inf", "--model", "micro", data=data)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, recs = read_records(tmp_path / "results")
    # 4 requests × 2 streams × 2 rates, and each constrained stream's canary first
    assert len(recs) == 4 * 2 * 2 + 2 and len({r["case_id"] for r in recs}) == 18
    canaries = [r for r in recs if r["serve"].get("canary")]
    assert [c["case_id"] for c in canaries] == ["maskbench/r50/c/canary", "maskbench/rinf/c/canary"]
    assert all(c["serve"]["verdict"] == "ok" for c in canaries)  # canned honours a const
    by = {(r["serve"]["mode"], r["serve"]["source"]): r for r in recs if "/rinf/" in r["case_id"]}
    refused = by[("c", "refused.json")]
    assert refused["outcome"] == "compile_error" and "HTTP 400" in refused["error"]
    # the refusal carries the server's own log line of that moment, and says where it is
    assert refused["serve"]["server_log"].startswith("ERROR canned: schema refused")
    assert refused["serve"]["server_log_path"].endswith("servers/canned.log")
    assert by[("u", "refused.json")]["outcome"] == "passing"  # unconstrained: no schema sent
    verdicts = {r["serve"]["verdict"] for r in recs if r["serve"]["mode"] == "c"}
    assert "constraint_not_enforced" in verdicts  # the canned text fits no corpus schema
    summary = json.loads((run_dir / "summary.json").read_text())
    s = summary["serve"]["streams"]["canned"]["maskbench/rinf"]
    assert s["constrained"]["refusals"] == 1 and s["unconstrained"]["completed"] == 4
    if s["ratio"]["itl"] is not None:
        assert s["constrained"]["itl"]["p50"] > 1.0  # paced at 2 ms
    else:  # on a loaded machine tokens arrive bunched: left out, and the ratio says why
        assert "ITL:" in s["ratio_why"]["itl"], s["ratio_why"]
    assert "serving benchmark" in r.stdout and "refused: HTTP 400" in r.stdout
    # random weights (a size, not a checkpoint): no validity and accuracy figures
    assert "quality" not in s and not any("schema_valid" in x["serve"] for x in recs)
    assert "validity and accuracy" not in r.stdout
    assert "server log: ERROR canned: schema refused" in r.stdout
    # the headline counts the constrained requests (not the unconstrained twins, not the
    # canaries) and says in words that the canned text breaks the constraint
    head = summary["headline"]["engines"]["canned"]
    assert (head["n"], head["requests"], head["schemas"]) == (8, 8, 4)
    assert head["not_enforced"] == 6 and head["outputs"] == 6  # 2 refusals, 6 answers
    assert "canned: NOT ENFORCED: 6 of 6 constrained outputs break the constraint" in r.stdout
    assert "goodput: 0 of 4 requests good; 1 not answered" in r.stdout
    servers = json.loads((run_dir / "servers" / "servers.json").read_text())
    assert servers[0]["pid"] and _gone(servers[0]["pid"])
    report = (tmp_path / "reports" / run_dir.name / "report.md").read_text()
    assert "Serving benchmark" in report and "constrained / unconstrained" in report.lower()
    table = subprocess.run([sys.executable, "benchmarks/results_table.py", str(run_dir)],
                           cwd=ROOT, capture_output=True, text=True)
    assert table.returncode == 0, table.stderr
    assert "## Serving runs" in table.stdout and "## Replay runs" not in table.stdout
    assert sum(1 for x in table.stdout.splitlines() if x.startswith("| ") and "| canned |" in x) == 4


def test_a_checkpoint_s_served_outputs_get_the_quality_suite_s_validity_figures(tmp_path):
    """--model PATH (a checkpoint): each served JSON output, constrained and unconstrained, is
    judged for the validity and accuracy figures of the quality suite's standalone rows,
    BFCL outputs matched to the case's reference answer; the canned text (``{"name":
    "canned", ...}``) meets only the bare object schema, and names the function ``name``."""
    from harness.suite.measure import validity_figures, wilson
    from suites.serve.summary import validity_outputs
    from tests.conftest import read_records
    from tests.model_fixtures import random_checkpoint

    ckpt = random_checkpoint(tmp_path / "model")
    data = tmp_path / "data"
    link_real(data, names=("BFCL_java_0.json", "Github_easy---o43998.json"))
    write_case(data, "BFCL_test_0.json", {"type": "object"},
               [{"description": "reference", "valid": True, "data": {"name": {"x": 1}}}])
    r = _run(tmp_path, "--launch", "canned", "--model", str(ckpt), data=data)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, recs = read_records(tmp_path / "results")
    by = {(x["serve"]["mode"], x["serve"]["source"]): x["serve"] for x in recs
          if not x["serve"].get("canary")}
    assert len(by) == 6
    for mode in ("c", "u"):
        assert by[(mode, "Github_easy---o43998.json")]["schema_valid"] is False
        assert "args_total" not in by[(mode, "Github_easy---o43998.json")]
        assert {k: by[(mode, "BFCL_test_0.json")][k] for k in (
            "parse_valid", "schema_valid", "name_match", "args_matched", "args_total")} == {
            "parse_valid": True, "schema_valid": True, "name_match": True,
            "args_matched": 0, "args_total": 1}
        java = by[(mode, "BFCL_java_0.json")]
        assert (java["schema_valid"], java["name_match"], java["args_total"]) == (False, False, 2)
    assert by[("c", "BFCL_test_0.json")]["verdict"] == "ok"  # the server verdict, reused
    assert not any("schema_valid" in x["serve"] for x in recs if x["serve"].get("canary"))
    summary = json.loads((run_dir / "summary.json").read_text())
    q = summary["serve"]["streams"]["canned"]["maskbench/rinf"]["quality"]
    tokens = sum(x["tokens"] for x in by.values() if x["mode"] == "c")
    for mode in ("constrained", "unconstrained"):
        f = q[mode]
        assert (f["outputs"], f["parse_valid"], f["schema_valid"]) == (3, 1.0, 0.333333)
        assert f["schema_valid_ci"] == wilson(1, 3) and f["attempts_per_valid"] == 3.0
        assert f["runaway"] == 0.0 and f["tokens_per_valid"] == tokens
        assert f["accuracy"] == {"outputs": 2, "name": 0.5, "arguments": 0.0}
        assert f["bfcl"] == {"outputs": 2, "p": 0.5, "p10": 0.000977, "p50": 0.0}
        mine = [x for x in recs if x["serve"]["mode"] == mode[0]]
        assert f == validity_figures(validity_outputs(mine))
    assert "validity and accuracy (model with priors)" in r.stdout
    line = next(x for x in r.stdout.splitlines() if x.startswith("canned  maskbench/rinf  c    "
                                                                 "       3"))
    assert line.split()[4:] == ["33.3%", "100.0%", "3.00", "50.0%", "/", "0.0%",
                                f"{tokens:.1f}", "0.0%"]
    assert "canned maskbench/rinf c: p per call on BFCL 50.0% (2 outputs)" in r.stdout
    report = (tmp_path / "reports" / run_dir.name / "report.md").read_text()
    assert "Validity and accuracy (model with priors)" in report and "(a checkpoint)" in report


def test_a_form_the_server_ignores_is_caught_by_the_canary_and_fails_the_gate(tmp_path):
    """The old guided_json field, which new servers (and the canned one) silently ignore:
    the canary's const comes back as free text, the verdict says NOT ENFORCED in words, and
    the gate fails on it whatever the baseline says."""
    from tests.conftest import harness, read_records

    r = _run(tmp_path, "--launch", "canned", "--sample", "3", "--request-form", "guided_json",
             "--no-baseline")
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, recs = read_records(tmp_path / "results")
    canary = next(x for x in recs if x["serve"].get("canary"))
    assert canary["serve"]["verdict"] == "constraint_not_enforced"
    assert "is not the const" in canary["serve"]["why"]
    assert "the canary came back unconstrained" in r.stderr  # said at once, as it happened
    assert "NOT ENFORCED: the canary of maskbench/rinf came back unconstrained" in r.stdout
    assert "maskbench/rinf canary: NOT ENFORCED" in r.stdout
    base = tmp_path / "base.json"
    assert harness("baseline", str(run_dir), "-o", str(base)).returncode == 0
    gate = harness("gate", "--baseline", str(base), str(run_dir))
    assert gate.returncode == 1, gate.stdout
    assert "VERDICT    canned" in gate.stdout and "NOT ENFORCED" in gate.stdout


def test_serve_needs_a_server():
    from harness.config import ConfigError, RunConfig

    from tests.conftest import harness

    r = harness("run", "--suite", "serve", "--sample", "1", "--no-progress")
    assert r.returncode != 0 and "--launch" in r.stderr and "--server" in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 3
    with pytest.raises(ConfigError, match="--launch"):
        RunConfig.from_dict({"suite": "e2e", "launch": True}, strict=True)


def test_server_crash_mid_stream_is_recorded_and_the_server_restarted(tmp_path):
    """SIGKILL the launched server mid-stream: its requests in flight become server-crash
    records, the harness starts it again, and every request ends as exactly one record."""
    from tests.conftest import read_records

    env_results = tmp_path / "results"
    data = tmp_path / "data"
    link_real(data)
    cmd = [sys.executable, "-m", "harness.cli", "run", "--suite", "serve", "--launch",
           "canned:slow", "--data", str(data), "--requests", "12", "--rate", "inf",
           "--concurrency", "2", "--no-baseline", "--model", "micro", "--no-progress",
           "--results", str(env_results), "--reports", str(tmp_path / "reports")]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    killed = None
    end = time.monotonic() + 120
    while time.monotonic() < end and killed is None:
        runs = list(env_results.glob("*/records.jsonl")) if env_results.exists() else []
        if runs and len(runs[0].read_text().splitlines()) >= 2:
            servers = json.loads((runs[0].parent / "servers" / "servers.json").read_text())
            killed = servers[0]["pid"]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err[-2000:]
    run_dir, recs = read_records(env_results)
    assert len(recs) == 13 and len({r["case_id"] for r in recs}) == 13  # the canary first
    crashed = [r for r in recs if r["serve"]["verdict"] == "server_crash"]
    assert crashed and all("killed by SIGKILL" in r["error"] for r in crashed)
    servers = json.loads((run_dir / "servers" / "servers.json").read_text())
    assert servers[0]["starts"] == 2 and servers[0]["pid"] != killed
    assert "starting it again" in err


def test_killed_run_leaves_no_server_and_resumes_without_loss(tmp_path):
    """SIGKILL the whole run mid-stream: no server process is left (checked by PID), and
    --resume sends only the requests that have no record, each once."""
    from tests.conftest import harness, read_records

    results = tmp_path / "results"
    data = tmp_path / "data"
    link_real(data)
    cmd = [sys.executable, "-m", "harness.cli", "run", "--suite", "serve", "--launch",
           "canned:slow", "--data", str(data), "--requests", "10", "--rate", "inf",
           "--concurrency", "1", "--model", "micro", "--no-progress",
           "--results", str(results), "--reports", str(tmp_path / "reports")]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    end = time.monotonic() + 120
    while time.monotonic() < end:
        runs = list(results.glob("*/records.jsonl")) if results.exists() else []
        if runs and len(runs[0].read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    run_dir = runs[0].parent
    pid = json.loads((run_dir / "servers" / "servers.json").read_text())[0]["pid"]
    end = time.monotonic() + 15
    while time.monotonic() < end and not _gone(pid):
        time.sleep(0.2)
    assert _gone(pid)
    before = len((run_dir / "records.jsonl").read_text().splitlines())
    assert 3 <= before < 21
    r = harness("run", "--resume", str(run_dir), "--no-progress", "--reports",
                str(tmp_path / "reports"), timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    _, recs = read_records(results)
    ids = [x["case_id"] for x in recs]
    assert len(ids) == 21 and len(set(ids)) == 21  # 2 streams of 10 and the canary
