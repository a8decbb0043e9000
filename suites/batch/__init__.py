"""Suite ``batch``: does the grammar still hide inside the decode step as the batch grows?

A server fills the masks of every constrained sequence in the batch and commits their
tokens at every step, on the host cores it has, before the next forward can start. One
case per batch size ``B`` (``--batch``, default 1, 8, 32, 128, 512): ``B`` concurrent
sequences, each following one valid instance of a corpus schema token by token, from the
``jsonschemabench`` corpus's stratified sample (``--sample``, default 16; ``--subset``,
``--schemas``). Slot ``i`` serves sample schema ``i mod n``, so schemas repeat only when
``B`` exceeds the sample, and its copies follow different instances where the schema has
them; a sequence that finishes (its stop token committed) is replaced at the next step by
a fresh one on the slot's next instance (steady state, as continuous batching runs).
``--same-schema`` adds, per size, a case of ``B`` copies of the sample's first schema.

Each (case, engine) job (:mod:`suites.batch.job`) runs the workload once per thread
count (``--threads``, default 1, 2, 4, … up to the cores present) through the engine's
own batch API behind :meth:`engines.protocol.EngineAdapter.batch_filler` (xgrammar's
``BatchGrammarMatcher``, llguidance's ``fill_next_token_bitmask_par`` and
``consume_token_par``; for the others a thread pool fills, commits go one by one) and
times, per step, the fill of all ``B`` masks, the commit of all ``B`` tokens, the
slowest sequence's own mask and the matchers of the sequences that joined (apart: a new
request's first wait is TTFM, not time between masks). Correctness stays on: every row must equal a twin matcher's own
one-by-one mask and allow the instance's next token, every commit must be accepted.

The verdict, per engine and thread count: the largest batch whose p99 grammar time per
step (fill + commit) stays within ``--step-ms`` (default 10 ms), and the throughput it
implies (sequences × steps per second).
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Mapping, Sequence

from harness.suite.options import merged
from harness.suite import Case, JsonSchemaBenchView, SuiteError, VerdictModel

NAME = "batch"
DEFAULT_SAMPLE = 16
#: the case id of a batch size and workload
MIX, SAME = "mix", "same-schema"


def case_id(batch: int, workload: str) -> str:
    """``B64`` (the sample's mix) or ``B64-same`` (one schema's copies)."""
    return f"B{batch}" if workload == MIX else f"B{batch}-same"


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_threads(n_cores: int) -> list[int]:
    """1, 2, 4, … up to ``n_cores``, and ``n_cores`` itself."""
    out, t = [], 1
    while t < n_cores:
        out.append(t)
        t *= 2
    return out + [max(1, n_cores)]


class BatchSuite(JsonSchemaBenchView):
    """One case per (batch size, workload); the sample's cases travel inside each."""

    name = NAME
    job = "suites.batch.job:run_batch_job"
    run_options = "suites.batch.options"
    summary_blocks = ("suites.batch.summary:summary_block",)
    report_sections = ("suites.batch.report:sec_batch",)
    verdict = VerdictModel(
        unit="batch size", units="batch sizes",
        truth="each sequence's valid instance and a twin matcher's one-by-one masks (every "
              "batch row equal to its own mask and allowing the next token, every commit "
              "accepted)",
        extra="suites.batch.summary:headline_extra")
    smoke = {"sample": 2, "options": {"batch": [1, 3], "threads": [1], "batch_steps": 6,
                                      "batch_instances": 2}}
    keep_instances = True
    default_sample = DEFAULT_SAMPLE
    uses_options = True
    replay_table = False

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        from suites.batch.options import DEFAULTS

        super().__init__(data=data, subsets=subsets, sample=sample, schemas=schemas)
        # validated below into sorted lists (``batch``, ``threads``): no longer the raw options
        o: dict[str, Any] = dict(merged(DEFAULTS, options))
        b = o["batch"]
        o["batch"] = sorted({int(x) for x in (b if isinstance(b, (list, tuple)) else [b])})
        if not o["batch"] or o["batch"][0] < 1:
            raise SuiteError(f"--batch: sizes must be >= 1, got {b!r}")
        o["threads"] = (sorted({int(t) for t in o["threads"]}) if o["threads"]
                        else default_threads(cores()))
        if o["threads"][0] < 1:
            raise SuiteError("--threads: thread counts must be >= 1")
        if not float(o["step_ms"]) > 0:
            raise SuiteError(f"--step-ms must be > 0, got {o['step_ms']!r}")
        for key in ("batch_steps", "batch_instances"):
            if int(o[key]) < 1:
                raise SuiteError(f"--{key.replace('_', '-')} must be at least 1")
        self.options = o
        self._cases: list[Case] | None = None

    def workloads(self) -> list[str]:
        return [MIX, SAME] if self.options["same_schema"] else [MIX]

    def _build(self) -> list[Case]:
        members = [c for c in self.inner.cases() if not c.load_error and c.instances]
        if not members:
            raise SuiteError("the batch suite found no usable schema with instances in its "
                             "selection")
        payloads = [m.to_job() for m in members]
        o = self.options
        out = []
        for b in o["batch"]:
            for w in self.workloads():
                out.append(Case(
                    suite=self.name, case_id=case_id(b, w), subset=w,
                    source=f"{len(members)} corpus schemas" if w == MIX else members[0].case_id,
                    schema_text=members[0].schema_text,
                    request={"batch": b, "workload": w, "threads": list(o["threads"]),
                             "members": payloads if w == MIX else payloads[:1]}))
        return out

    def cases(self) -> Iterator[Case]:
        if self._cases is None:
            self._cases = self._build()
        yield from self._cases

    def __len__(self) -> int:
        return len(self.options["batch"]) * len(self.workloads())

    def case_ids(self) -> list[str]:
        return [case_id(b, w) for b in self.options["batch"] for w in self.workloads()]

    def describe(self) -> dict[str, Any]:
        o = self.options
        return {**super().describe(), "suite": NAME, "batch": list(o["batch"]),
                "threads": list(o["threads"]), "step_ms": o["step_ms"],
                "step_source": o["step_source"], "same_schema": bool(o["same_schema"]),
                "batch_steps": o["batch_steps"], "cores": cores()}


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = BatchSuite
