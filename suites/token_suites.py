"""Suites ``mask-diff`` and ``fuzz``: JSONSchemaBench schemas checked at the token level.

Both take their cases from the ``jsonschemabench`` corpus (same ``--data``, ``--subset``,
``--sample``, ``--schemas`` selection; a 12-schema stratified sample when neither
``--sample`` nor ``--schemas`` is given: these jobs run the pure-Python reference engine or
hundreds of masked walks per schema). ``mask-diff`` keeps each case's instances (its jobs
diff the valid ones, :mod:`harness.tokens.maskdiff_job`); ``fuzz`` drops them (the engine
generates, :mod:`harness.tokens.fuzz_job`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Sequence

from suites.base import Case
from suites.jsonschemabench import JsonSchemaBench

DEFAULT_SAMPLE = 12


class _TokenSuite:
    name = ""
    job_kind = ""
    keep_instances = True

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
            yield dataclasses.replace(c, suite=self.name,
                                      instances=c.instances if self.keep_instances else ())

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "suite": self.name, "source_suite": self.inner.name}


class MaskDiffSuite(_TokenSuite):
    """Token-level mask diff against the reference engine; EOS, rollback, tightness."""

    name = "mask-diff"
    #: the worker job kind for this suite's cases (harness.worker.JOB_KINDS)
    job_kind = "mask-diff"


class FuzzSuite(_TokenSuite):
    """Seeded random walks under each engine's mask, outputs validated."""

    name = "fuzz"
    job_kind = "fuzz"
    keep_instances = False
