"""Faults, one test each, through the CLI as a user meets them (issue #7, part 2).

Covered here: a worker SIGKILLed from outside mid-job; a hung native call that holds the
GIL, ended by the wall limit; a full disk while records are written (a real, small tmpfs);
a complete but corrupt last line in ``records.jsonl`` skipped with a warning on resume.

Covered elsewhere, not repeated: the whole run SIGKILLed and resumed, with a torn last
line (``tests/integration/test_runner.py::test_resume_after_sigkill_loses_and_duplicates_nothing``);
a killed runner leaves no hung worker behind
(``tests/integration/test_runner.py::test_killed_runner_leaves_no_hung_worker``); a worker that
crashes, exits, runs out of memory or loops in Python (``tests/integration/test_runner.py::
test_each_outcome_class``).
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

from conftest import ROOT, harness, write_case
from harness.store.run_store import RECORD_FORMAT

ONLY_VALID = [{"description": "valid", "valid": True, "data": {"a": 1}}]


def _spawned_workers(pid: int) -> list[int]:
    """Children of ``pid`` that are multiprocessing (spawn) workers."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if ppid == pid and b"spawn_main" in cmd:
            out.append(int(d.name))
    return out


def _records(results: Path) -> list[dict]:
    (run,) = [p for p in results.iterdir() if p.is_dir()]
    return [json.loads(l) for l in (run / "records.jsonl").read_text().splitlines()]


def test_worker_sigkilled_mid_job_is_a_crash_and_the_run_goes_on(tmp_path):
    data, results = tmp_path / "corpus", tmp_path / "results"
    # sorted order: a quick job first (the worker's setup is then done), then a long one
    write_case(data, "A---quick.json", {"type": "object"}, ONLY_VALID)
    write_case(data, "B---long.json", {"x-faulty": "sleep", "x-sleep": 60}, ONLY_VALID)
    write_case(data, "C---after.json", {"type": "object"}, ONLY_VALID)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", "--engine", "faulty", "--data", str(data),
         "--results", str(results), "--reports", str(tmp_path / "rep"), "--no-progress"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            recs = list(results.glob("*/records.jsonl"))
            if recs and recs[0].read_text().count("\n") >= 1:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the first job never finished")
        time.sleep(1.0)  # the long job is now sleeping in compile
        (worker,) = _spawned_workers(proc.pid)
        os.kill(worker, signal.SIGKILL)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    by_id = {r["case_id"]: r for r in _records(results)}
    killed = by_id["B---long.json"]
    assert killed["outcome"] == "crash" and killed["phase"] == "compile"
    assert killed["error"] == "worker killed by SIGKILL during compile"
    # recorded at the kill, not at the 60 s sleep's end (counted from where the job's own
    # limit began: the worker's set-up before it is not the job's)
    assert (killed["wall_ns"] - killed["setup_ns"]) / 1e9 < 30, killed
    # a fresh worker took the next job
    assert by_id["C---after.json"]["outcome"] == "passing"
    assert by_id["C---after.json"]["worker"] == 0


def test_native_call_holding_the_gil_is_ended_by_the_wall_limit(tmp_path):
    data, results = tmp_path / "corpus", tmp_path / "results"
    write_case(data, "A---gil_hang.json", {"x-faulty": "gil_hang"}, ONLY_VALID)
    write_case(data, "B---after.json", {"type": "object"}, ONLY_VALID)
    t0 = time.monotonic()
    out = harness("run", "--engine", "faulty", "--data", str(data), "--timeout", "2",
                  "--results", str(results), "--reports", str(tmp_path / "rep"),
                  "--no-progress", timeout=120)
    elapsed = time.monotonic() - t0
    assert out.returncode == 0, out.stderr
    by_id = {r["case_id"]: r for r in _records(results)}
    hang = by_id["A---gil_hang.json"]
    assert hang["outcome"] == "timeout" and hang["phase"] == "compile", hang
    assert "wall-clock limit 2s passed during compile" in hang["error"]
    assert 2.0 <= (hang["wall_ns"] - hang["setup_ns"]) / 1e9 < 15.0, hang
    assert by_id["B---after.json"]["outcome"] == "passing"
    assert elapsed < 90


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                       capture_output=True, text=True)
    return r.returncode == 0


def test_full_disk_while_writing_records_is_one_line_and_resumable(tmp_path):
    mnt = tmp_path / "small"
    if not _mount_tmpfs(mnt, "48k"):
        pytest.skip("cannot mount a small tmpfs here (needs root and mount rights); "
                    "the full-disk check did not run")
    try:
        data, results = tmp_path / "corpus", mnt / "results"
        # each record holds per-token timings of a ~200-token instance, three
        # serialisations: a few KiB, so 48 KiB fills after a handful of jobs
        big = [{"description": "valid", "valid": True,
                "data": {"text": " ".join(f"w{i}" for i in range(150))}}]
        n = 40
        for i in range(n):
            write_case(data, f"Big---{i:02d}.json", {"type": "object"}, big)
        out = harness("run", "--engine", "null", "--data", str(data), "--results",
                      str(results), "--reports", str(tmp_path / "rep"), "--no-progress")
        assert out.returncode == 2, out.stderr
        lines = [l for l in out.stderr.splitlines() if l.strip()]
        assert len(lines) == 1, out.stderr
        assert "records.jsonl: cannot append a record (No space left on device)" in lines[0]
        assert "earlier records are intact" in lines[0] and "--resume" in lines[0]
        (run,) = [p for p in results.iterdir() if p.is_dir()]
        raw = (run / "records.jsonl").read_bytes()
        assert raw.endswith(b"\n")  # the partial line was cut away
        before = [json.loads(l) for l in raw.splitlines()]
        assert 0 < len(before) < n
        # free space, resume: every job exactly once, the earlier records unchanged
        subprocess.run(["mount", "-o", "remount,size=8m", str(mnt)], check=True)
        out = harness("run", "--resume", str(run), "--reports", str(tmp_path / "rep"),
                      "--no-progress")
        assert out.returncode == 0, out.stderr
        after = [json.loads(l) for l in (run / "records.jsonl").read_text().splitlines()]
        assert after[: len(before)] == before
        assert sorted(r["case_id"] for r in after) == [f"Big---{i:02d}.json" for i in range(n)]
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_corrupt_last_line_is_skipped_with_a_warning_on_resume(tmp_path):
    """What ``--resume`` does first (:meth:`RunStore.open`), on a real run folder: a
    whole line of garbage, newline and all (a crash after the file's size reached the
    disk but before its data did: not a torn line, a corrupt one) is dropped with one
    warning, the good lines are kept in order, and its job counts as not finished."""
    from harness.store.run_store import RunStore

    store = RunStore.create(tmp_path, "run", {"config": {}, "sessions": []})
    recs = [{"format": RECORD_FORMAT, "engine": "null", "case_id": f"Ok---{i}.json",
             "outcome": "passing"} for i in range(3)]
    for r in recs:
        store.append(r)
    store.close()
    path = store.records_path
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]) + b"\x00" * 40 + b"\n")
    with pytest.warns(UserWarning, match=r"skipped 1 corrupt line\(s\).*will run again"):
        reopened = RunStore.open(store.path)
    assert list(reopened.records()) == recs[:2]
    assert reopened.finished() == {("null", "Ok---0.json"), ("null", "Ok---1.json")}
    reopened.append(recs[2])  # the rerun's record lands on a fresh line
    reopened.close()
    assert [json.loads(l) for l in path.read_text().splitlines()] == recs


def test_a_job_recorded_twice_counts_once_by_its_first_record(tmp_path):
    """A runner that ran a job again (at-least-once delivery) leaves two records of it:
    every reader (summaries, reports, resume) sees the first, with one warning."""
    from harness.store.run_store import RunStore

    store = RunStore.create(tmp_path, "run", {"config": {}, "sessions": []})
    first = {"format": RECORD_FORMAT, "engine": "null", "case_id": "A.json",
             "outcome": "passing"}
    other = {**first, "case_id": "B.json"}
    again = {**first, "outcome": "timeout"}
    for r in (first, other, again):
        store.append(r)
    store.close()
    with pytest.warns(UserWarning, match=r"1 job\(s\) recorded twice"):
        got = list(RunStore.open_readonly(store.path).records())
    assert got == [first, other]
