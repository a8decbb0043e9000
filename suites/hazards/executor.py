"""The hazards suite's executor: standalone rows to worker processes, served rows to
servers, and a "not measured" record for every hazard that does not concern a row.

A row is *served* when its adapter is a serving engine (``vllm:BACKEND`` launched with
``--launch``, ``external`` with ``--server URL``): it takes the server hazards
(``hostile_request``, ``bad_tool``, ``reasoning``; :mod:`suites.hazards.served`), sent
by this process to the server it starts, probes and stops as the serve suite does
(:class:`harness.suite.serving.RowServers`: 127.0.0.1, a log per row, stopped by PID,
restarted after a crash). Every other row is *standalone*: its jobs go to the run's
worker pool (:class:`harness.execution.local.LocalExecutor`, ``--jobs``, ``--timeout``,
``--memory``), one process per job's lifetime limits, so a crash or a hang is that job's
outcome. Each job ends as exactly one record, appended as it finishes.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Iterable

from harness.suite import RunConfig
from harness.suite import Job
from harness.suite import outcomes
from harness.suite import Record
from harness.suite import RunStore

log = logging.getLogger("harness")

#: The hazards a served row takes.
SERVED = ("hostile_request", "bad_tool", "reasoning")


def is_served(engine_name: str) -> bool:
    """True for a serving engine's row (its requests go to a server)."""
    from harness.suite import adapter_class

    return bool(getattr(adapter_class(engine_name), "serving_engine", False))


class HazardsExecutor:
    """Runs the hazards suite's jobs (see the module docstring)."""

    def __init__(self, store: RunStore, config: RunConfig,
                 on_record: Callable[[Record], None] = lambda r: None) -> None:
        from suites.hazards.options import DEFAULTS

        self.store = store
        self.config = config
        self.on_record = on_record
        self.o = {**DEFAULTS, **{k: v for k, v in config.options.items() if k in DEFAULTS}}

    def _append(self, rec: Record) -> None:
        self.store.append(rec)
        self.on_record(rec)

    def _not_measured(self, job: Job, why: str) -> None:
        from suites.hazards import hazard_of

        self._append({"engine": job.engine, "case_id": job.case_id, "subset": job.subset,
                      "suite": "hazards", "outcome": outcomes.PASSING,
                      "hazard": {"name": hazard_of(job.case_id), "not_measured": why}})

    def run(self, jobs: Iterable[Job]) -> None:
        from suites.hazards import hazard_of

        local: list[Job] = []
        served: dict[str, list[Job]] = {}
        for job in jobs:
            if job.payload is None:
                self._append({"engine": job.engine, "case_id": job.case_id,
                              "subset": job.subset, "outcome": outcomes.BAD_INPUT,
                              "error": job.load_error})
                continue
            hazard = hazard_of(job.case_id)
            if is_served(job.payload["engine"]["name"]):
                if hazard in SERVED:
                    served.setdefault(job.engine, []).append(job)
                else:
                    self._not_measured(job, "an engine hazard: measured on standalone rows "
                                            "(--engine NAME), not through a server")
            elif hazard == "hostile_request":
                self._not_measured(job, "a server hazard: run it with --launch "
                                        "ENGINE:BACKEND or --server URL")
            else:
                local.append(job)
        if local:
            from harness.suite import make_executor

            make_executor("local", self.store, jobs=self.config.jobs,
                          timeout_s=self.config.timeout_s, memory_gib=self.config.memory_gib,
                          on_record=self.on_record).run(local)
        for label, row_jobs in served.items():
            self._run_served(row_jobs)

    def _run_served(self, jobs: list[Job]) -> None:
        """One served row: its server opened once (launched, or the URL's), each hazard
        job sent in turn, the server closed at the end."""
        from pathlib import Path

        from harness.suite.serving import RowServers, ServerUnavailable
        from suites.hazards.served import run_served

        servers = RowServers(Path(self.store.path), self.config.tokenizer, self.config.options)
        try:
            try:
                target = servers.open(jobs[0].payload["engine"])
            except ServerUnavailable as e:  # no server to measure: said in every cell, run goes on
                log.warning("%s: %s", jobs[0].engine, e)
                for job in jobs:
                    self._not_measured(job, f"no server to measure: {e}")
                return
            for job in jobs:
                t0 = time.perf_counter_ns()
                try:
                    rec = run_served(servers, target, job, self.o)
                except Exception as e:  # a hazard's own failure: recorded, the row goes on
                    from engines.protocol import one_line

                    log.warning("%s %s: %s", job.engine, job.case_id, one_line(e, 300))
                    rec = {"engine": job.engine, "case_id": job.case_id,
                           "subset": job.subset, "suite": "hazards",
                           "outcome": outcomes.CRASH,
                           "error": f"the hazard's driver failed: {one_line(e, 300)}",
                           "hazard": {"name": job.case_id.split('/')[0],
                                      "verdict": "error", "witness": one_line(e, 200)}}
                rec["busy_ns"] = time.perf_counter_ns() - t0
                self._append(rec)
        finally:
            servers.close()

