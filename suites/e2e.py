"""Suite ``e2e``: JSONSchemaBench schemas generated through a real decode loop.

The cases are the ``jsonschemabench`` corpus's (same ``--data``, ``--subset``, ``--sample``,
``--schemas`` selection; a 40-schema stratified sample when neither ``--sample`` nor
``--schemas`` is given); the instances are dropped (nothing is replayed: the model generates).
Jobs are of kind ``e2e`` (:mod:`harness.e2e.job`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Sequence

from suites.base import Case
from suites.jsonschemabench import JsonSchemaBench

NAME = "e2e"
DEFAULT_SAMPLE = 40


class E2ESuite:
    name = NAME
    #: the worker job kind for this suite's cases (harness.worker.JOB_KINDS)
    job_kind = "e2e"

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None) -> None:
        if sample is None and schemas is None:
            sample = DEFAULT_SAMPLE
        self.inner = JsonSchemaBench(data=data, subsets=subsets, sample=sample, schemas=schemas)

    def __len__(self) -> int:
        return len(self.inner)

    def case_ids(self) -> list[str]:
        return self.inner.case_ids()

    def cases(self) -> Iterator[Case]:
        for c in self.inner.cases():
            yield dataclasses.replace(c, suite=NAME, instances=())

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "suite": NAME, "source_suite": self.inner.name}
