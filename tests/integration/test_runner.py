"""The runner's isolation and outcome classes, through the CLI, with the ``faulty``
test engine misbehaving on purpose (crash, hang, OOM, exit) beside well-behaved cases
and a malformed corpus file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, harness, read_records, write_case

VALID_AND_INVALID = [
    {"description": "valid", "valid": True, "data": {"a": 1}},
    {"description": "invalid", "valid": False, "data": 5},
]
ONLY_VALID = [{"description": "valid", "valid": True, "data": {"a": 1}}]

EXPECTED = {
    "Faulty---crash.json": ("crash", "SIGSEGV"),
    "Faulty---hang.json": ("timeout", "wall-clock limit"),
    "Faulty---oom.json": ("oom", "out of memory"),
    "Faulty---exit.json": ("crash", "exited with code 3"),
    "Faulty---compile_error.json": ("compile_error", "compile_error requested"),
    "Faulty---reject_all.json": ("validation_error", None),
    "Faulty---accept_all.json": ("invalidation_error", None),
    "Faulty---passing.json": ("passing", None),
}


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    data = tmp_path_factory.mktemp("corpus")
    for name in EXPECTED:
        mode = name.split("---")[1][:-5]
        tests = ONLY_VALID if mode == "passing" else VALID_AND_INVALID
        schema = {"type": "object", "x-faulty": "accept_all" if mode == "passing" else mode}
        write_case(data, name, schema, tests)
    (data / "Broken---truncated.json").write_text('{"schema": {"type": ')
    (data / "Broken---list.json").write_text("[1, 2, 3]")
    results = tmp_path_factory.mktemp("results")
    t0 = time.monotonic()
    out = harness("run", "--engine", "faulty", "--data", str(data), "--timeout", "3",
                  "--memory", "1", "--jobs", "2", "--results", str(results),
                  "--reports", str(tmp_path_factory.mktemp("reports")), "--no-progress")
    return out, results, time.monotonic() - t0


def test_each_outcome_class(faulty_run):
    out, results, _ = faulty_run
    assert out.returncode == 0, out.stderr
    run_dir, recs = read_records(results)
    by_id = {r["case_id"]: r for r in recs}
    for name, (outcome, fragment) in EXPECTED.items():
        rec = by_id[name]
        assert rec["outcome"] == outcome, (name, rec)
        if fragment:
            assert fragment in rec["error"], (name, rec["error"])
        assert rec["engine"] == "faulty"
    assert by_id["Faulty---hang.json"]["phase"] == "compile"


def test_hang_is_ended_at_the_limit(faulty_run):
    out, results, elapsed = faulty_run
    _, recs = read_records(results)
    hang = next(r for r in recs if r["case_id"] == "Faulty---hang.json")
    # bounded from where its own limit began: the worker's set-up before it is not the
    # job's, and a loaded machine stretches it
    assert 3.0 <= (hang["wall_ns"] - hang["setup_ns"]) / 1e9 < 20.0, hang
    assert elapsed < 120


def test_malformed_files_give_one_line_errors_and_the_run_goes_on(faulty_run):
    out, results, _ = faulty_run
    _, recs = read_records(results)
    bad = {r["case_id"]: r for r in recs if r["outcome"] == "bad_input"}
    assert set(bad) == {"Broken---truncated.json", "Broken---list.json"}
    assert "malformed JSON" in bad["Broken---truncated.json"]["error"]
    assert "not a MaskBench case" in bad["Broken---list.json"]["error"]
    err_lines = [l for l in out.stderr.splitlines() if "Broken---truncated.json" in l]
    assert len(err_lines) == 1 and "malformed JSON at line 1" in err_lines[0]
    # every other file still ran
    assert len(recs) == len(EXPECTED) + 2


def test_every_job_recorded_once_and_summary_written(faulty_run):
    out, results, _ = faulty_run
    run_dir, recs = read_records(results)
    keys = [(r["engine"], r["case_id"]) for r in recs]
    assert len(keys) == len(set(keys))
    summary = json.loads((run_dir / "summary.json").read_text())
    eng = summary["engines"]["faulty"]
    assert eng["outcomes"]["crash"] == 2 and eng["outcomes"]["timeout"] == 1
    assert eng["outcomes"]["oom"] == 1 and eng["outcomes"]["passing"] == 1
    assert set(eng["tbm_us"]) >= {"avg", "p50", "p90", "p99", "p99.9", "max", "over_1ms_share"}
    assert set(eng["ttfm_ms"]) >= {"p50", "p90", "p99", "max"}
    assert (run_dir / "records.parquet").is_file()
    meta = json.loads((run_dir / "run.json").read_text())
    for key in ("engines", "tokenizer", "limits", "machine", "git_commit", "command", "config"):
        assert key in meta
    assert meta["limits"]["timeout_s"] == 3.0 and meta["limits"]["memory_gib"] == 1.0
    assert "passing" in out.stdout and "faulty" in out.stdout


def _sleep_corpus(data: Path, n: int) -> None:
    for i in range(n):
        write_case(data, f"Sleep---s{i:02d}.json",
                   {"type": "object", "x-faulty": "sleep", "x-sleep": 0.4}, ONLY_VALID)


def test_resume_after_sigkill_loses_and_duplicates_nothing(tmp_path):
    data, results = tmp_path / "corpus", tmp_path / "results"
    _sleep_corpus(data, 10)
    cmd = [sys.executable, "-m", "harness.cli", "run", "--engine", "faulty,null",
           "--data", str(data), "--results", str(results), "--reports",
           str(tmp_path / "rep"), "--jobs", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    records = None
    while time.monotonic() < deadline:
        runs = list(results.glob("*/records.jsonl")) if results.exists() else []
        if runs and len(runs[0].read_bytes().splitlines()) >= 3:
            records = runs[0]
            break
        time.sleep(0.05)
    assert records is not None, "the run never wrote records"
    os.killpg(proc.pid, signal.SIGKILL)  # the runner and its workers, at once
    proc.wait()
    before = records.read_bytes().splitlines()
    assert 3 <= len(before) < 20
    # a crash mid-write leaves a torn last line: resume must skip it, with a warning
    with open(records, "ab") as f:
        f.write(b'{"engine": "faulty", "case_id": "Sleep---s0')
    out = harness("run", "--resume", str(records.parent), "--no-progress",
                  "--reports", str(tmp_path / "rep"))
    assert out.returncode == 0, out.stderr
    assert "corrupt line" in out.stderr
    recs = [json.loads(l) for l in records.read_text().splitlines()]
    keys = [(r["engine"], r["case_id"]) for r in recs]
    assert len(keys) == len(set(keys)) == 20
    assert all(r["outcome"] == "passing" for r in recs)
    # the records written before the kill are kept as they were
    assert [json.loads(l) for l in before] == recs[: len(before)]
    meta = json.loads((records.parent / "run.json").read_text())
    assert len(meta["sessions"]) == 2


def test_resume_refuses_changed_options(tmp_path):
    data, results = tmp_path / "corpus", tmp_path / "results"
    _sleep_corpus(data, 1)
    out = harness("run", "--engine", "null", "--data", str(data), "--results", str(results),
                  "--reports", str(tmp_path / "rep"), "--no-progress")
    assert out.returncode == 0, out.stderr
    run_dir = next(results.iterdir())
    out = harness("run", "--resume", str(run_dir), "--engine", "faulty", "--no-progress")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "engines='faulty'" in out.stderr


@pytest.mark.parametrize("args,fragment", [
    (["--engine", "nosuchengine"], "unknown engine 'nosuchengine'"),
    (["--engine", "xgrammar:nosuchconfig"], "unknown configuration 'nosuchconfig'"),
    (["--data", "/nonexistent/corpus"], "no jsonschemabench corpus at /nonexistent/corpus"),
    (["--tokenizer", "/etc/hostname"], "cannot load as a Hugging Face tokenizer.json"),
    (["--subset", "NoSuchSubset"], "unknown subset(s) NoSuchSubset"),
])
def test_bad_input_is_one_line(tmp_path, args, fragment):
    out = harness("run", *args, "--results", str(tmp_path), "--no-progress")
    assert out.returncode == 2
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and fragment in lines[0], out.stderr
    assert not any(tmp_path.iterdir())  # nothing half-created


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def test_killed_runner_leaves_no_hung_worker(tmp_path):
    data = tmp_path / "corpus"
    write_case(data, "Faulty---hang.json", {"x-faulty": "hang"}, ONLY_VALID)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", "--engine", "faulty", "--data", str(data),
         "--results", str(tmp_path / "res"), "--timeout", "600", "--no-progress"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and not workers:
        time.sleep(0.2)
        workers = [c for c in _children(proc.pid)
                   if b"multiprocessing" in Path(f"/proc/{c}/cmdline").read_bytes()]
    assert workers, "no worker started"
    time.sleep(2)  # let it reach the hang
    proc.kill()  # the runner alone, as an OOM killer or a cancelled CI job would
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{w}").exists() for w in workers):
        time.sleep(0.1)
    alive = [w for w in workers if Path(f"/proc/{w}").exists()
             and "Z" not in (Path(f"/proc/{w}/stat").read_text().rsplit(")", 1)[1].split()[0])]
    assert not alive, f"orphaned workers still running: {alive}"


def keeping_job(job, phase=lambda p, info=None: None):
    """A job that keeps two items, then hangs (``x-then``: ``hang``) or raises."""
    from harness.execution.executor import KEEP

    phase("groundtruth")
    phase(KEEP, {"rows": [1]})
    phase(KEEP, {"rows": [2], "other": ["x"]})
    if job["case"]["request"]["then"] == "hang":
        while True:
            time.sleep(1)
    raise RuntimeError("the engine blew up")


@pytest.mark.parametrize("then,outcome", [("hang", "timeout"), ("raise", "crash")])
def test_a_dead_job_keeps_what_it_finished(tmp_path, then, outcome):
    from harness.execution.executor import Job
    from harness.execution.local import LocalExecutor
    from harness.store.run_store import RunStore

    store = RunStore.create(tmp_path, "run", {"run_id": "run", "config": {}, "engines": [],
                                              "sessions": []})
    payload = {"engine": {"name": "null", "config": "default", "label": "null"},
               "case": {"case_id": "k", "request": {"then": then}}, "tokenizer": "llama3",
               "job": f"{Path(__file__).stem}:keeping_job"}
    LocalExecutor(store, jobs=1, timeout_s=2, memory_gib=0).run([Job("null", "k", "s", payload)])
    store.close()
    (rec,) = list(store.records())
    assert rec["outcome"] == outcome, rec
    assert rec["kept"] == {"rows": [1, 2], "other": ["x"]}, rec


def recycling_job(job, phase=lambda p, info=None: None):
    """A job that leaves a thread spinning, asks for a fresh worker, and reports its pid."""
    import threading

    from harness.execution.executor import RECYCLE

    phase("groundtruth")
    if job["case"]["request"]["spoil"]:
        threading.Thread(target=lambda: time.sleep(600), daemon=True).start()
        phase(RECYCLE)
    return {"engine": "null", "case_id": job["case"]["case_id"], "subset": "s",
            "outcome": "passing", "pid": os.getpid()}


def test_a_spoiled_worker_is_replaced_and_the_job_queued_behind_it_runs(tmp_path):
    from harness.execution.executor import Job
    from harness.execution.local import LocalExecutor
    from harness.store.run_store import RunStore

    store = RunStore.create(tmp_path, "run", {"run_id": "run", "config": {}, "engines": [],
                                              "sessions": []})

    def job(i: int, spoil: bool) -> Job:
        return Job("null", f"c{i}", "s", {
            "engine": {"name": "null", "config": "default", "label": "null"},
            "case": {"case_id": f"c{i}", "request": {"spoil": spoil}}, "tokenizer": "llama3",
            "job": f"{Path(__file__).stem}:recycling_job"})

    # as under the CLI (`harness ... | head`): a write to a worker that has just ended
    # must not kill the runner
    import signal

    before = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        LocalExecutor(store, jobs=2, timeout_s=30, memory_gib=0).run(
            [job(i, i % 3 == 1) for i in range(24)])
    finally:
        signal.signal(signal.SIGPIPE, before)
    store.close()
    recs = list(store.records())
    # every job once, none lost or doubled, each spoiled worker replaced after its job
    assert sorted(r["case_id"] for r in recs) == sorted(f"c{i}" for i in range(24))
    assert all(r["outcome"] == "passing" for r in recs), recs
    by = {r["case_id"]: r["pid"] for r in recs}
    spoiled = {by[f"c{i}"] for i in range(24) if i % 3 == 1}
    assert len(spoiled) == 8  # a fresh process after each
    for r in recs:  # no job ran in a spoiled process after the job that spoiled it
        if r["pid"] in spoiled and int(r["case_id"][1:]) % 3 != 1:
            last = next(x for x in recs if x["pid"] == r["pid"] and int(x["case_id"][1:]) % 3 == 1)
            assert r["started_at"] <= last["started_at"], (r, last)
