"""Executors: where a run's (case, engine) jobs execute.

An executor takes the jobs of a run (consumed lazily, in order) and makes sure each ends
as exactly one record appended to the run's store, by the driver, as it finishes. Two
exist:

``local`` (default)  :class:`harness.runner.Runner`: ``--jobs`` spawned worker processes
                     on this machine.
``ray``              :class:`harness.executor_ray.RayExecutor`: ``--jobs`` Ray actors
                     spread over a Ray cluster (``--ray-address``; none = start a local
                     Ray instance). Each actor holds a one-slot :class:`Runner`, so every
                     job still runs in its own spawned worker process on the Ray node
                     under the same wall-clock (SIGKILL) and address-space limits, and
                     dies the same classified death; the record travels back to the
                     driver, which alone writes ``records.jsonl``, so resume works as for
                     a local run (and a run may be resumed with the other executor).

The executor is a property of a session, not of the run: it is stored in the session's
entry of ``run.json``, not in the run's configuration.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Protocol

from harness.runner import Job, Runner
from harness.store import RunStore

EXECUTORS = ("local", "ray")


class ExecutorError(Exception):
    """An executor that cannot start (one-line message saying what to do)."""


class Executor(Protocol):
    def run(self, jobs: Iterable[Job]) -> None:
        """Run every job until each has a record in the store."""


def make_executor(name: str, store: RunStore, *, jobs: int, timeout_s: float,
                  memory_gib: float | None,
                  on_record: Callable[[dict[str, Any]], None] = lambda r: None,
                  ray_address: str | None = None) -> Executor:
    """The executor called ``name`` with ``jobs`` parallel slots, ``timeout_s`` seconds
    of wall clock per job and ``memory_gib`` GiB of address space per worker process."""
    if name == "local":
        if ray_address:
            raise ExecutorError("--ray-address needs --executor ray")
        return Runner(store, jobs=jobs, timeout_s=timeout_s, memory_gib=memory_gib,
                      on_record=on_record)
    if name == "ray":
        from harness.executor_ray import RayExecutor

        return RayExecutor(store, jobs=jobs, timeout_s=timeout_s, memory_gib=memory_gib,
                           on_record=on_record, address=ray_address)
    raise ExecutorError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}")
