"""The runner: schedules (case, engine) jobs onto isolated worker processes.

It knows jobs, not engines. Each worker is a spawned process with an address-space
limit; each job has a wall-clock limit enforced from here (SIGKILL, so even a native
call that holds the GIL ends). A worker that dies is replaced and its job gets a
``timeout`` / ``oom`` / ``crash`` record; the run goes on. Every finished job is
appended to the store at once, so a killed run resumes losing and duplicating nothing.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any, Callable, Iterable

from harness.measure import outcomes
from harness.execution.executor import (BOARD_JOB, BOARD_LIMIT_FROM, BOARD_PHASE, BOARD_SIZE,
                                        BOARD_TTFM, KEEP, PHASES, RECYCLE, SETUP_ALLOWANCE_S,
                                        Job,
                                        unpack_timings)
from harness.store.run_store import RunStore
from harness.records import Record

#: A job is sent to a busy worker ahead of time (its pipe holds it until the worker is
#: free) only when its pickled payload is at most this many bytes: a pipe holds 64 KiB, and
#: a larger send would block the runner while the worker is still busy.
PIPELINE_MAX_BYTES = 16 * 1024

#: How often the runner reads the board of a worker whose job is still in setup, s.
BOARD_POLL_S = 0.1

_OOM_MARKERS = ("memory allocation of", "bad_alloc", "MemoryError", "Cannot allocate memory",
                "out of memory")


@dataclass
class _Slot:
    index: int
    log_path: str
    process: Any = None
    conn: Any = None
    #: the worker's phase board (see :func:`harness.execution.worker.worker_main`)
    board: Any = None
    job: Job | None = None
    #: the next job, already in the worker's pipe: it starts as soon as ``job`` ends
    queued: Job | None = None
    #: jobs sent to this worker process, and which of them ``job`` is (its board says
    #: which job its values are of)
    sent: int = 0
    seq: int = 0
    started: float = 0.0
    deadline: float = 0.0
    phase: str = ""
    log_offset: int = 0
    ttfm_ns: int | None = None
    started_at: float = 0.0
    #: the job's own time limit has begun (setup is over), and when (monotonic s)
    limit_begun: bool = False
    limit_from: float = 0.0
    #: the Python environment the slot's worker runs in (None: the harness's own)
    env: str | None = None
    #: what the current job has kept so far (:data:`harness.execution.executor.KEEP`)
    kept: dict[str, list[Any]] = field(default_factory=dict)


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


@dataclass
class LocalExecutor:
    """Runs jobs with ``jobs`` workers, ``timeout_s`` per job and ``memory_gib`` per worker."""

    store: RunStore
    jobs: int = 1
    timeout_s: float = 60.0
    memory_gib: float | None = 8.0
    on_record: Callable[[Record], None] = lambda r: None
    _ctx: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._ctx = mp.get_context("spawn")
        # finished records wait here while the next jobs are dispatched: a worker never
        # idles while the driver writes
        self._ready: list[Record] = []
        # jobs that were queued on a worker that died first: they run again
        self._retry: list[Job] = []
        self._slots = [
            _Slot(i, str(self.store.worker_log(i))) for i in range(max(1, self.jobs))
        ]

    # -- worker lifecycle -----------------------------------------------------------
    def _start(self, slot: _Slot, env: str | None = None) -> None:
        from harness.registry.environments import spawn_in
        from harness.execution.worker import worker_main

        parent, child = self._ctx.Pipe()
        slot.board = self._ctx.RawArray("d", BOARD_SIZE)
        slot.board[BOARD_TTFM] = -1.0
        slot.sent = slot.seq = 0
        proc = self._ctx.Process(
            target=worker_main, args=(child, self.memory_gib, slot.log_path, slot.board),
            name=f"harness-worker-{slot.index}", daemon=True,
        )
        with spawn_in(env):
            proc.start()
        child.close()
        slot.process, slot.conn, slot.env = proc, parent, env

    def _stop(self, slot: _Slot, kill: bool = False) -> None:
        if slot.process is None:
            return
        if kill and slot.process.is_alive():
            os.kill(slot.process.pid, signal.SIGKILL)
        slot.process.join(timeout=5)
        if slot.process.is_alive():
            slot.process.kill()
            slot.process.join()
        slot.conn.close()
        slot.process = slot.conn = None

    def _log_tail(self, slot: _Slot, limit: int = 2000) -> str:
        try:
            if os.path.getsize(slot.log_path) <= slot.log_offset:
                return ""  # nothing written during this job: no need to open the log
            with open(slot.log_path, "rb") as f:
                f.seek(slot.log_offset)
                data = f.read()
        except OSError:
            return ""
        text = data.decode("utf-8", "replace").strip()
        return text[-limit:]

    def _dispatch(self, slot: _Slot, job: Job) -> bool:
        """Send ``job`` to the slot's worker: at once when it is idle, or queued behind its
        current job when the payload is small (so that the worker goes from one job to the
        next without waiting for the runner). False when it could not be queued."""
        if slot.job is not None:
            if job.env != slot.env:
                return False  # it needs a worker of another environment: when one is idle
            data = pickle.dumps(job.payload, protocol=pickle.HIGHEST_PROTOCOL)
            if len(data) > PIPELINE_MAX_BYTES:
                return False
            try:
                slot.conn.send_bytes(data)
            except OSError:  # the worker has just ended (recycled, or died): not queued
                return False
            slot.queued = job
            slot.sent += 1
            return True
        if slot.process is not None and slot.env != job.env:
            self._close_slot(slot)  # an idle worker of another environment
        if slot.process is None or not slot.process.is_alive():
            self._start(slot, job.env)
        self._begin(slot, job)
        try:
            slot.conn.send(job.payload)
        except OSError:  # it ended before its first job: a fresh worker takes the job
            slot.job = None
            self._stop(slot, kill=True)
            self._retry.append(job)
            return True
        slot.sent += 1
        slot.seq = slot.sent
        return True

    def _begin(self, slot: _Slot, job: Job) -> None:
        """``job`` is now the slot's current job: its clock and limits start."""
        try:
            slot.log_offset = os.path.getsize(slot.log_path)
        except OSError:
            slot.log_offset = 0
        slot.job, slot.phase, slot.ttfm_ns, slot.limit_begun = job, "dispatch", None, False
        slot.kept = {}
        slot.started = time.monotonic()
        slot.started_at = time.time()
        slot.deadline = slot.started + SETUP_ALLOWANCE_S + self.timeout_s

    def _read_board(self, slot: _Slot) -> None:
        """The current job's phase, limit and TTFM as its worker last reported them, when the
        board is of that job (the worker may not have read it yet, or may have begun its
        queued job already)."""
        b = slot.board
        if b is None or int(b[BOARD_JOB]) != slot.seq:
            return
        code = int(b[BOARD_PHASE])
        if code > 0:  # 0 = the job has just begun: keep what messages said
            slot.phase = PHASES[code]
        if b[BOARD_LIMIT_FROM] > 0:  # its own limit runs from groundtruth
            slot.deadline = b[BOARD_LIMIT_FROM] + self.timeout_s
            slot.limit_begun, slot.limit_from = True, float(b[BOARD_LIMIT_FROM])
        if b[BOARD_TTFM] >= 0:
            slot.ttfm_ns = int(b[BOARD_TTFM])

    # -- records ----------------------------------------------------------------------
    def _base(self, job: Job) -> Record:
        return {"engine": job.engine, "case_id": job.case_id, "subset": job.subset}

    def _finish(self, slot: _Slot, record: Record, death: bool = False) -> None:
        job = slot.job
        if death:
            assert job is not None  # a worker dies running a job
            rec: Record = {**self._base(job), **record}
        else:
            rec = record
        rec["wall_ns"] = int((time.monotonic() - slot.started) * 1e9)
        rec["started_at"] = round(slot.started_at, 3)
        rec["finished_at"] = round(time.time(), 3)
        rec["worker"] = slot.index
        if death and slot.ttfm_ns is not None:
            rec["ttfm_ns"] = slot.ttfm_ns  # compiled before it died
        if death and slot.kept:
            rec["kept"] = slot.kept  # what it had finished before it died
        if death and slot.limit_begun and "setup_ns" not in rec:
            # the time before the job's own limit began (a fresh worker's set-up, which on
            # a loaded machine can take longer than the limit): wall_ns - setup_ns is the
            # time the job spent under its limit
            rec["setup_ns"] = max(0, int((slot.limit_from - slot.started) * 1e9))
        stderr = self._log_tail(slot)
        if stderr:
            rec["stderr"] = stderr
        slot.job = None
        self._ready.append(rec)
        if slot.queued is not None:
            if death:  # its payload died in the worker's pipe: it runs again elsewhere
                self._retry.append(slot.queued)
            else:  # the worker has started it already
                self._begin(slot, slot.queued)
                slot.seq += 1
            slot.queued = None

    def _flush_ready(self) -> None:
        """Store the finished records (after the freed slots got their next jobs)."""
        while self._ready:
            rec = self._ready.pop(0)
            self.store.append(rec)
            self.on_record(rec)

    def _death(self, slot: _Slot, reason: str | None = None) -> None:
        """The worker of ``slot`` died or was killed; record why and drop it."""
        self._read_board(slot)
        proc = slot.process
        proc.join(timeout=5)
        code = proc.exitcode
        tail = self._log_tail(slot)
        rec: Record
        if reason == "timeout":
            rec = {"outcome": outcomes.TIMEOUT,
                   "error": f"wall-clock limit {self.timeout_s:g}s passed during {slot.phase}"}
        elif any(m in tail for m in _OOM_MARKERS):
            rec = {"outcome": outcomes.OOM,
                   "error": f"out of memory (limit {self.memory_gib} GiB) during {slot.phase}"}
        elif code is not None and code < 0:
            rec = {"outcome": outcomes.CRASH,
                   "error": f"worker killed by {_signal_name(-code)} during {slot.phase}"}
        else:
            rec = {"outcome": outcomes.CRASH,
                   "error": f"worker exited with code {code} during {slot.phase}"}
        rec["phase"] = slot.phase
        self._finish(slot, rec, death=True)
        self._stop(slot)

    # -- main loop ------------------------------------------------------------------------
    def run(self, jobs: Iterable[Job], keep_workers: bool = False) -> None:
        """Run every job (consumed lazily, in order) until all have records.

        ``keep_workers``: leave idle workers running afterwards (their vocabulary and
        adapters stay built) for the next call; :meth:`close` stops them. A worker still
        busy when this returns by an exception is killed either way."""
        queue = iter(jobs)
        more = True
        # a write to a worker that has just ended must be an error to handle, never the
        # end of the run: the CLI restores SIGPIPE's default (for `harness ... | head`)
        pipe = _ignore_sigpipe()
        try:
            held: Job | None = None  # a job too large to queue, waiting for an idle worker
            while more or held or self._retry or any(s.job for s in self._slots):
                for slot in self._slots:
                    while (slot.job is None or slot.queued is None) and (more or held or self._retry):
                        if held is not None and slot.job is not None:
                            break  # only an idle worker takes it
                        job, held = (held, None) if held is not None else (
                            self._retry.pop(0) if self._retry else next(queue, None), None)
                        if job is None:
                            more = False
                            break
                        if job.payload is None:  # bad input: recorded, never run
                            self._ready.append({**self._base(job), "outcome": outcomes.BAD_INPUT,
                                                "error": job.load_error})
                            continue
                        if not self._dispatch(slot, job):
                            held = job
                            break
                self._flush_ready()
                busy = [s for s in self._slots if s.job is not None]
                if not busy:
                    continue
                for s in busy:
                    self._read_board(s)
                now = time.monotonic()
                timeout = max(0.0, min(s.deadline for s in busy) - now)
                if not all(s.limit_begun for s in busy):
                    # a job still in setup: its own limit begins when its board says so,
                    # which sends no message; look again soon
                    timeout = min(timeout, BOARD_POLL_S)
                waitables = {s.conn: s for s in busy}
                waitables.update({s.process.sentinel: s for s in busy})
                ready = wait(list(waitables), timeout=timeout)
                for obj in ready:
                    slot = waitables[obj]
                    if slot.job is None:
                        continue
                    self._drain(slot)
                now = time.monotonic()
                for slot in busy:
                    if slot.job is not None and now >= slot.deadline:
                        self._read_board(slot)  # a limit that began late moves the deadline
                    if slot.job is not None and now >= slot.deadline:
                        self._drain(slot)  # what it kept (or finished) before the limit
                    if slot.job is not None and now >= slot.deadline:
                        os.kill(slot.process.pid, signal.SIGKILL)
                        self._death(slot, "timeout")
        finally:
            failing = sys.exc_info()[0] is not None
            try:  # what finished before an interruption is kept
                self._flush_ready()
            except Exception:
                if not failing:  # else the error already in flight is the one to show
                    raise
            for slot in self._slots:
                if slot.process is not None and (slot.job is not None or not keep_workers):
                    self._close_slot(slot)
            _restore_sigpipe(pipe)

    def _close_slot(self, slot: _Slot) -> None:
        try:
            slot.conn.send(None)
        except (OSError, ValueError):
            pass
        self._stop(slot, kill=slot.job is not None)
        slot.job = None

    def close(self) -> None:
        """Stop every worker (after ``run(..., keep_workers=True)``)."""
        for slot in self._slots:
            if slot.process is not None:
                self._close_slot(slot)

    def _drain(self, slot: _Slot) -> None:
        """Read every message the worker has sent; handle its death if it died."""
        try:
            while slot.job is not None and slot.conn.poll():
                kind, payload = slot.conn.recv()
                if kind == KEEP:
                    for key, items in payload.items():
                        slot.kept.setdefault(key, []).extend(items)
                elif kind == "phase":
                    slot.phase, info = payload
                    if slot.phase == "replay":
                        slot.ttfm_ns = info
                    if slot.phase == "groundtruth":  # setup done: the job's own limit starts
                        slot.deadline = time.monotonic() + self.timeout_s
                        slot.limit_begun = True
                elif kind == "done":
                    self._finish(slot, unpack_timings(payload))
                elif kind == RECYCLE:
                    # the worker ends after its last job: the jobs sent behind it (the one
                    # now current, one queued since) never started there: they run again
                    for j in (slot.job, slot.queued):
                        if j is not None:
                            self._retry.append(j)
                    slot.job = slot.queued = None
                    self._stop(slot)
                    return
                elif kind == "died":
                    self._read_board(slot)
                    payload["phase"] = slot.phase
                    self._finish(slot, payload, death=True)
                    self._stop(slot)
                    return
        except (EOFError, OSError):
            pass
        if slot.job is not None and not slot.process.is_alive():
            self._death(slot)


def _ignore_sigpipe() -> Any:
    """SIGPIPE ignored (a write to a closed pipe raises instead), from the main thread only;
    returns what to restore (None: nothing was changed)."""
    import threading

    if not hasattr(signal, "SIGPIPE") or threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGPIPE, signal.SIG_IGN)


def _restore_sigpipe(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGPIPE, previous)


def outcome_counts(records: Iterable[Record]) -> Counter:
    return Counter(r["outcome"] for r in records)
