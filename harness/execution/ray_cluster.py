"""The ``ray`` executor: a run's jobs spread over a Ray cluster, isolation unchanged.

``--jobs N`` Ray actors (one CPU each) are started anywhere in the cluster. Each actor
holds a one-slot :class:`harness.execution.local.LocalExecutor`: the job runs in a spawned worker process
on the actor's node, under the run's wall-clock limit (SIGKILL from the actor, so a hung
native call ends even when it holds the GIL) and address-space limit, and a death is
classified exactly as on a local run. The worker stays up between jobs (its vocabulary
and engine adapters are built once per actor, as once per local worker). The record
comes back to the driver, which alone appends it to ``records.jsonl``: a killed driver
leaves the same store as a killed local run, and ``--resume`` continues it (with either
executor). Nothing from the run folder or the corpus is needed on the nodes: a job's
payload carries its schema text and instances; the nodes need the harness, its engines
and the tokenizer installed (``bash setup.sh``).

Ray is optional (``pip install 'grammar-harness[ray]'``); without it ``--executor ray``
stops with a one-line message saying how to install it.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.measure import outcomes
from harness.execution.executor import SETUP_ALLOWANCE_S, ExecutorError, Job
from harness.execution.local import LocalExecutor
from harness.store.run_store import RunStore
from harness.records import Record

INSTALL_HINT = ("--executor ray needs Ray, which is not installed: "
                ".venv/bin/pip install 'ray==2.60.0' (or pip install -e '.[ray]')")

#: Seconds past an actor's own limit (setup allowance + job limit) after which the driver
#: gives up on it (an actor that lost its node, or a Ray worker that cannot start).
DRIVER_GRACE_S = 120.0


def require_ray():
    """The ``ray`` module, or :class:`ExecutorError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ExecutorError(INSTALL_HINT) from None
    return ray


class _Sink:
    """What a :class:`LocalExecutor` needs of a store, kept on the actor: records in memory,
    worker logs in a private temporary folder on the node."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        self.records: list[Record] = []

    def append(self, record: Record) -> None:
        self.records.append(record)

    def worker_log(self, slot: int) -> Path:
        return self.folder / f"worker-{slot}.log"


class JobSlot:
    """The body of a Ray actor: one isolated worker process, one job at a time."""

    def __init__(self, timeout_s: float, memory_gib: float | None, index: int,
                 scratch: str | None = None) -> None:
        self.index = index
        self.host = platform.node()
        # the worker logs go in a folder of the run's own (``scratch``, which the driver
        # removes on its node at the end), so that a killed actor leaves nothing behind
        if scratch is not None:
            os.makedirs(scratch, exist_ok=True)
        self.sink = _Sink(tempfile.mkdtemp(prefix="harness-ray-", dir=scratch))
        self.runner = LocalExecutor(self.sink, jobs=1, timeout_s=timeout_s,  # type: ignore[arg-type]
                             memory_gib=memory_gib)

    def run(self, job: Job) -> Record:
        """Run ``job`` in this actor's worker process; its one record (``worker`` = the
        actor's index, ``host`` = the node's name)."""
        self.sink.records.clear()
        self.runner.run([job], keep_workers=True)
        record = self.sink.records[-1]
        record["worker"] = self.index
        record["host"] = self.host
        return record

    def close(self) -> None:
        self.runner.close()
        shutil.rmtree(self.sink.folder, ignore_errors=True)


class RayExecutor:
    """Runs jobs on ``jobs`` Ray actors; records are written here, on the driver."""

    def __init__(self, store: RunStore, *, jobs: int, timeout_s: float,
                 memory_gib: float | None,
                 on_record: Callable[[Record], None] = lambda r: None,
                 address: str | None = None) -> None:
        self.ray = require_ray()
        self.store, self.jobs, self.timeout_s = store, max(1, jobs), timeout_s
        self.memory_gib, self.on_record, self.address = memory_gib, on_record, address
        self._started_ray = False

    def _connect(self) -> None:
        ray = self.ray
        if ray.is_initialized():  # the caller's own Ray (e.g. a test's ray.init)
            return
        try:
            # ERROR: Ray's start-up INFO/WARNING lines would interleave with the run's own
            # one-line messages; its logs stay in /tmp/ray/session_*/logs
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR)
        except Exception as e:  # ConnectionError, ValueError, RuntimeError, ...
            where = f"at {self.address}" if self.address else "locally"
            msg = " ".join(str(e).split())[:200]
            raise ExecutorError(f"cannot start or reach Ray {where} ({type(e).__name__}: "
                                f"{msg}); start a cluster with `ray start --head` and pass "
                                "--ray-address HOST:6379") from None
        self._started_ray = True

    def _record(self, rec: Record) -> None:
        self.store.append(rec)
        self.on_record(rec)

    def run(self, jobs: Iterable[Job]) -> None:
        """Run every job (consumed lazily, in order) until each has a record."""
        ray = self.ray
        self._connect()
        actor_cls = ray.remote(num_cpus=1, max_restarts=0)(JobSlot)
        scratch = os.path.join(tempfile.gettempdir(),
                               f"harness-ray-{os.getpid()}-{uuid.uuid4().hex[:8]}")

        def new_actor(i: int):
            return actor_cls.remote(self.timeout_s, self.memory_gib, i, scratch)

        actors = {i: new_actor(i) for i in range(self.jobs)}
        free = list(range(self.jobs))[::-1]
        inflight: dict[Any, tuple[int, Job, float]] = {}
        limit = SETUP_ALLOWANCE_S + self.timeout_s + DRIVER_GRACE_S
        queue = iter(jobs)
        more = True
        try:
            while more or inflight:
                while free and more:
                    job = next(queue, None)
                    if job is None:
                        more = False
                        break
                    if job.payload is None:  # bad input: recorded, never run
                        self._record({"engine": job.engine, "case_id": job.case_id,
                                      "subset": job.subset, "outcome": outcomes.BAD_INPUT,
                                      "error": job.load_error})
                        continue
                    i = free.pop()
                    inflight[actors[i].run.remote(job)] = (i, job, time.monotonic())
                if not inflight:
                    continue
                wait_s = max(0.1, min(t for _, _, t in inflight.values()) + limit
                             - time.monotonic())
                done, _ = ray.wait(list(inflight), num_returns=1, timeout=wait_s)
                for ref in done:
                    i, job, _ = inflight.pop(ref)
                    try:
                        rec = ray.get(ref)
                    except ray.exceptions.RayError as e:  # the actor (or its node) died
                        rec = self._lost(job, f"Ray actor lost: {_one_line(e)}")
                        ray.kill(actors[i], no_restart=True)
                        actors[i] = new_actor(i)
                    self._record(rec)
                    free.append(i)
                now = time.monotonic()
                for ref, (i, job, t0) in list(inflight.items()):
                    if now - t0 > limit:  # the actor's own SIGKILL should have fired long ago
                        inflight.pop(ref)
                        ray.kill(actors[i], no_restart=True)
                        actors[i] = new_actor(i)
                        self._record(self._lost(job, f"Ray actor gave no answer within "
                                                     f"{limit:g}s; killed", outcomes.TIMEOUT))
                        free.append(i)
        finally:
            # busy actors are killed at once (their workers die with them); idle ones
            # are asked to stop their workers first
            self._shutdown(list(actors.values()), graceful=not inflight)
            shutil.rmtree(scratch, ignore_errors=True)

    @staticmethod
    def _lost(job: Job, error: str, outcome: str = outcomes.CRASH) -> Record:
        return {"engine": job.engine, "case_id": job.case_id, "subset": job.subset,
                "outcome": outcome, "error": error, "phase": "ray"}

    def _shutdown(self, actors: list[Any], graceful: bool = True) -> None:
        ray = self.ray
        if graceful:
            try:
                ray.get([a.close.remote() for a in actors], timeout=30)
            except Exception:  # noqa: BLE001 - an actor already dead: killed below anyway
                pass
        for a in actors:
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
        if self._started_ray:
            ray.shutdown()


def _one_line(e: BaseException, limit: int = 300) -> str:
    s = " ".join(f"{type(e).__name__}: {e}".split())
    return s if len(s) <= limit else s[: limit - 1] + "…"
