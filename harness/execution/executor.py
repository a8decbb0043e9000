"""Executors: where a run's (case, engine) jobs execute.

An executor takes the jobs of a run (consumed lazily, in order) and makes sure each ends
as exactly one record appended to the run's store, by the driver, as it finishes. Two
exist:

``local`` (default)  :class:`harness.execution.local.LocalExecutor`: ``--jobs`` spawned worker processes
                     on this machine.
``ray``              :class:`harness.execution.ray_cluster.RayExecutor`: ``--jobs`` Ray actors
                     spread over a Ray cluster (``--ray-address``; none = start a local
                     Ray instance). Each actor holds a one-slot :class:`LocalExecutor`, so every
                     job still runs in its own spawned worker process on the Ray node
                     under the same wall-clock (SIGKILL) and address-space limits, and
                     dies the same classified death; the record travels back to the
                     driver, which alone writes ``records.jsonl``, so resume works as for
                     a local run (and a run may be resumed with the other executor).

The executor is a property of a session, not of the run: it is stored in the session's
entry of ``run.json``, not in the run's configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Protocol

from harness.records import JobPayload, Record


EXECUTORS = ("local", "ray")

#: Phases a job reports through its worker's shared board; any other name travels as a
#: message. The board's slots: the phase's index in :data:`PHASES`, when the job's own
#: limit began (``time.monotonic()``, 0 = not yet: it begins at ``groundtruth``), the TTFM
#: (ns, -1 = not yet), reported with ``replay``, and which job of its worker they are of
#: (1 for its first job, 2 for its second...).
PHASES = ("dispatch", "setup", "groundtruth", "compile", "replay", "decode", "validate")
BOARD_PHASE, BOARD_LIMIT_FROM, BOARD_TTFM, BOARD_JOB = 0, 1, 2, 3
BOARD_SIZE = 4

#: The phase name a job reports what it has measured so far under: ``phase(KEEP,
#: {key: [items]})`` appends the items to the job's ``kept`` lists, which a record of its
#: death carries (``record["kept"]``), so that a job killed by its limit or its engine
#: loses nothing it had finished. A job that ends normally returns its record and the
#: kept lists are dropped.
KEEP = "keep"

#: The phase name a job reports when its process must not run another job (a thread it
#: abandoned still runs an engine call): ``phase(RECYCLE)``. The worker exits once the
#: job's record is sent; the runner replaces it, and a job already queued behind it runs
#: on the new worker.
RECYCLE = "recycle"

#: Extra time a job may spend building the worker's vocabulary/adapters before its own
#: limit starts (a fresh worker builds them on its first job of each engine).
SETUP_ALLOWANCE_S = 300.0


@dataclass
class Job:
    """One (case, engine) pair; ``payload`` is what the worker receives."""

    engine: str  # label, e.g. "xgrammar:compliant"
    case_id: str
    subset: str
    payload: JobPayload | None  # None: bad input, recorded without running
    load_error: str | None = None
    #: the Python environment its worker runs in (:mod:`harness.registry.environments`); None = ours
    env: str | None = None


class ExecutorError(Exception):
    """An executor that cannot start (one-line message saying what to do)."""


class Executor(Protocol):
    def run(self, jobs: Iterable[Job]) -> None:
        """Run every job until each has a record in the store."""


#: Shortest list of nanoseconds sent as a packed array (a short one pickles as fast as is).
_PACK_MIN = 32


def pack_timings(obj: Any) -> Any:
    """``obj`` (a record) with each long list of integer nanoseconds under a key ending in
    ``_ns`` as an ``array('q')``, in place: a worker pickles a packed array as one copy of
    its bytes, where a list of Python ints costs it a call per int (1.5 ms a record of a
    few thousand tokens on this machine, time the worker is not measuring).
    :func:`unpack_timings` undoes it on the runner's side."""
    from array import array

    if isinstance(obj, dict):
        for k, v in obj.items():
            if (isinstance(v, list) and len(v) >= _PACK_MIN and k.endswith("_ns")
                    and all(type(x) is int for x in v)):
                try:
                    obj[k] = array("q", v)
                except OverflowError:
                    pass
            elif isinstance(v, (dict, list)):
                pack_timings(v)
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, (dict, list)):
                pack_timings(v)
    return obj


def unpack_timings(obj: Any) -> Any:
    """:func:`pack_timings` undone, in place: every ``array`` is a list again."""
    from array import array

    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, array):
                obj[k] = v.tolist()
            elif isinstance(v, (dict, list)):
                unpack_timings(v)
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, (dict, list)):
                unpack_timings(v)
    return obj
