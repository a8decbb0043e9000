"""Suite ``churn``: the compile cache under schema churn.

One case per Zipf exponent (``--zipf 1.0,0``): a stream of ``--churn-requests`` requests
whose schemas repeat with a Zipf distribution over a pool of distinct schemas (rank ``k``
drawn with probability ∝ ``1 / k**s``); exponent ``0`` means every request brings a new
schema. The pool is made from the ``jsonschemabench`` corpus's stratified sample
(``--sample``, default 40; ``--subset``, ``--schemas``): pool entry ``k`` is sample schema
``k mod n`` made unique (:func:`harness.suite.unique_schema`), so that repeats are exactly
the ranks drawn twice. Each (stream, engine) job replays the stream through one
long-lived compiler with the engine's own cache on
(:meth:`engines.protocol.EngineAdapter.cached_compiler`,
:mod:`suites.churn.job`): per request, the compile (or cache hit) and the first
mask, i.e. the TTFT a request would see from the grammar. Streams are seeded (``--churn-seed``):
every engine sees the same one.

The question it answers is the seed's: one schema served a billion times favours a
precomputed cache, ten thousand ad-hoc schemas an hour favour lazy masks.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from harness.suite.options import merged
from harness.suite import Case, JsonSchemaBenchView, SuiteError, VerdictModel

NAME = "churn"
DEFAULT_SAMPLE = 40


def zipf_ranks(n: int, exponent: float, seed: int) -> list[int]:
    """``n`` ranks in ``[0, n)``: Zipf with ``exponent`` over ``n`` items (rank ``k`` with
    probability ∝ ``1/(k+1)**exponent``), seeded; ``exponent == 0``: ``0, 1, …, n-1``
    (every request new)."""
    if exponent < 0:
        raise ValueError(f"Zipf exponent must be >= 0, got {exponent}")
    if exponent == 0:
        return list(range(n))
    w = 1.0 / np.arange(1, n + 1, dtype=float) ** exponent
    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.choice(n, size=n, p=w / w.sum())]


def label(exponent: float) -> str:
    return f"zipf{exponent:g}"


class ChurnSuite(JsonSchemaBenchView):
    """Zipf streams over the corpus sample, one case per exponent."""

    name = NAME
    job = "suites.churn.job:run_churn_job"
    run_options = "suites.churn.options"
    summary_blocks = ("suites.churn.summary:summary_block",)
    report_sections = ("suites.churn.report:sec_churn",)
    verdict = VerdictModel(unit="request stream", units="request streams",
                           truth="every request of the stream compiled (refusals and deaths "
                                 "are the stream's outcome)")
    smoke = {"sample": 3,
             "options": {"zipf": [1.0], "churn_requests": 6}}
    keep_instances = False
    default_sample = DEFAULT_SAMPLE
    uses_options = True
    replay_table = False

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        from suites.churn.options import DEFAULTS

        super().__init__(data=data, subsets=subsets, sample=sample, schemas=schemas)
        self.options = merged(DEFAULTS, options)
        if int(self.options["churn_requests"]) < 1:
            raise SuiteError("--churn-requests must be at least 1")
        self._cases: list[Case] | None = None

    def _build(self) -> list[Case]:
        from harness.suite import unique_schema

        base = [c for c in self.inner.cases() if not c.load_error]
        if not base:
            raise SuiteError("the churn suite found no usable schema in its selection")
        o = self.options
        n = int(o["churn_requests"])
        out = []
        for s in o["zipf"]:
            s = float(s)
            ranks = zipf_ranks(n, s, int(o["churn_seed"]))
            pool = {str(k): json.dumps(unique_schema(base[k % len(base)].schema, k))
                    for k in sorted(set(ranks))}
            out.append(Case(suite=self.name, case_id=label(s), subset=label(s),
                            source=f"{len(base)} corpus schemas",
                            schema_text=pool[str(ranks[0])],
                            request={"exponent": s, "ranks": ranks, "pool": pool,
                                     "sources": [base[k % len(base)].case_id for k in ranks]}))
        return out

    def cases(self) -> Iterator[Case]:
        if self._cases is None:
            self._cases = self._build()
        yield from self._cases

    def __len__(self) -> int:
        return len(self.options["zipf"])

    def case_ids(self) -> list[str]:
        return [label(float(s)) for s in self.options["zipf"]]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "suite": NAME, "zipf": list(self.options["zipf"]),
                "churn_requests": self.options["churn_requests"], "seed": self.options["churn_seed"]}


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = ChurnSuite
