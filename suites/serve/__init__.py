"""Suite ``serve``: a serving benchmark against OpenAI-compatible servers.

Its cases are **requests**: for each request rate of the sweep, a constrained stream (``c``)
and, with the baseline on, the same stream unconstrained (``u``: same prompts, seeds and
arrival times). Every constrained stream begins with a *canary* (:func:`canary`): one
request whose constraint an unconstrained model cannot meet by chance, sent alone; an HTTP
200 that does not meet it proves the request form is not enforced, whatever the stream's
own outputs happen to be. Case ids read ``WORKLOAD/rRATE/MODE/INDEX`` (``maskbench/r4/c/0007``), so a
killed run resumes request by request. The schemas come from the ``jsonschemabench``
corpus's stratified sample (``--sample``, default 40; ``--subset``, ``--schemas``), shaped
by the workload:

``json``         the first sampled schema, every request (the compile cache's best case)
``json-unique``  every request a new schema: the sampled ones in turn, each made unique
                 by an optional property of its own (defeats any compile cache keyed on
                 the schema)
``maskbench``    each sampled schema in turn
``mix``          as ``maskbench``, with only ``--structured-ratio`` of the requests
                 constrained (seeded choice), the rest plain chat
``regex``        the grammar corpus's regex cases in turn (:mod:`suites.grammars`), sent as
                 the server's regex field (vLLM ``structured_outputs.regex``)
``choice``       its choice menus, as the choice field
``grammar``      its CFG cases, as the grammar field with the GBNF form (vLLM's
                 ``structured_outputs.grammar`` reads GBNF-style EBNF)

Outputs of the grammar workloads are judged by the case's ground-truth parser. A BFCL
schema's request carries its reference answer (``request["bfcl_answer"]``, the case's valid
instance): with a checkpoint (``--model PATH``) each JSON output is also matched to it.

Requests run through :class:`suites.serve.executor.ServeExecutor`, not the worker
pool: the executor starts the servers (``--launch``) or drives ``--server URL``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Iterator, Mapping, Sequence

from harness.suite import (Case, GrammarCorpus, JsonSchemaBenchView, SuiteError, VerdictModel,
                           unique_schema)

NAME = "serve"
DEFAULT_SAMPLE = 40
#: grammar workload → (the grammar corpus's family, the form its request field carries)
GRAMMAR_WORKLOADS = {"regex": ("regex", "regex"), "choice": ("choice", "choice"),
                     "grammar": ("cfg", "gbnf")}


def arrival_times(n: int, rate: float, burstiness: float = 1.0, seed: int = 0) -> list[float]:
    """Send times of ``n`` requests, seconds from the stream's start (the first at 0).

    vLLM's ``benchmark_serving`` convention: at ``rate`` requests per second the gaps are
    gamma-distributed with shape ``burstiness`` and mean ``1 / rate`` (shape 1: a Poisson
    process; below 1 burstier, above 1 more regular); ``rate = inf`` sends all at once.
    Seeded, so a stream and its unconstrained twin see the same arrivals."""
    import numpy as np

    if n <= 0:
        return []
    if math.isinf(rate):
        return [0.0] * n
    if rate <= 0 or burstiness <= 0:
        raise ValueError(f"rate and burstiness must be > 0, got {rate}, {burstiness}")
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=n - 1)
    return [0.0] + [float(x) for x in np.cumsum(gaps)]


#: The case-id tail of a stream's canary request (``maskbench/rinf/c/canary``).
CANARY = "canary"


def canary(stream: str, kind: str, seed: int = 0) -> dict[str, Any]:
    """The canary of a constrained stream: a constraint an unconstrained model cannot meet by
    chance, in the stream's own kind, and the outputs that meet it.

    A seeded random 16-letter string ``s`` (a different one per stream): kind ``json`` asks
    for the schema ``{"const": s}`` (met by the JSON string ``"s"``); ``regex`` for the
    pattern ``s``; ``choice`` for one of ``s`` and a second such string; ``grammar`` for
    the GBNF grammar ``root ::= "s"``. ``accept`` lists the texts that meet it (for json,
    the JSON values)."""
    import random

    rng = random.Random(f"{seed}/{stream}")
    s, t = ("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(16))
            for _ in range(2))
    value: Any = {"json": {"const": s}, "regex": s, "choice": [s, t],
                  "grammar": f'root ::= "{s}"'}[kind]
    return {"kind": kind, "value": value, "accept": [s, t] if kind == "choice" else [s]}


def canary_case(src: Case, suite: str, stream: str, rate: str, kind: str, seed: int) -> Case:
    """The first request of a constrained stream: its canary (:func:`canary`), sent alone
    before the stream's own requests; its case id is ``STREAM/c/canary``."""
    c = canary(stream, kind, seed)
    schema = c["value"] if kind == "json" else None
    req = {"stream": stream, "rate": rate, "mode": "c", "index": -1, "arrival_s": 0.0,
           "source": CANARY, "constrained": True, "kind": kind, "canary": c}
    return dataclasses.replace(src, suite=suite, case_id=f"{stream}/c/{CANARY}", subset=CANARY,
                               schema=schema, schema_text=json.dumps(schema),
                               instances=(), request=req, grammar=None)


def rate_label(rate: str | float) -> str:
    v = float(rate)
    return "inf" if math.isinf(v) else f"{v:g}"


class ServeSuite(JsonSchemaBenchView):
    name = NAME
    executor = "suites.serve.executor:ServeExecutor"
    run_options = "suites.serve.options"
    summary_blocks = ("suites.serve.summary:summary_block",)
    report_sections = ("suites.serve.report:sec_serve",)
    verdict = VerdictModel(unit="served request", units="served requests",
                           truth="the server's output (HTTP 200) judged by jsonschema or the "
                                 "grammar's parser",
                           units_from="suites.serve.summary:is_verdict_unit",
                           extra="suites.serve.summary:headline_extra")
    smoke = {"sample": 3, "options": {"launch": True, "max_tokens": 16}}
    keep_instances = False
    default_sample = DEFAULT_SAMPLE
    uses_options = True
    replay_table = False

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        from suites.serve.options import DEFAULTS, WORKLOADS

        self.options = {**DEFAULTS, **{k: v for k, v in (options or {}).items()
                                       if v is not None}}
        o = self.options
        if o["workload"] not in WORKLOADS:
            raise SuiteError(f"unknown workload {o['workload']!r}; known: {', '.join(WORKLOADS)}")
        if o["workload"] in GRAMMAR_WORKLOADS:
            family = GRAMMAR_WORKLOADS[o["workload"]][0]
            if o["form"] == "response_format":
                raise SuiteError(f"the {o['workload']} workload needs --request-form "
                                 "structured_outputs or guided_json (response_format carries "
                                 "JSON schemas only)")
            if subsets:
                raise SuiteError(f"--subset does not apply to the {o['workload']} workload "
                                 f"(its cases are the grammar corpus's {family} family)")
            # the grammar workloads read the grammar corpus, which the view uses the same way
            # (cases, case_ids, describe, len)
            self.inner = GrammarCorpus(subsets=[family], schemas=schemas,  # type: ignore[assignment]
                                       sample=self.default_sample
                                       if sample is None and schemas is None else sample)
        else:
            super().__init__(data=data, subsets=subsets, sample=sample, schemas=schemas)
        if options is not None and not o["launch"] and not o["server"]:
            raise SuiteError("the serve suite needs --launch ENGINE:BACKEND (the harness "
                             "starts the server, e.g. vllm:xgrammar) or --server URL")
        if not 0.0 <= float(o["structured_ratio"]) <= 1.0:
            raise SuiteError(f"--structured-ratio must be in [0, 1], got {o['structured_ratio']}")
        self._requests: list[Case] | None = None

    def _build(self) -> list[Case]:
        import numpy as np

        from harness.suite.measure import bfcl_reference

        o = self.options
        base = [c for c in self.inner.cases()]
        good = [c for c in base if not c.load_error]
        if not good:
            raise SuiteError("the serve suite found no usable schema in its selection")
        n = int(o["requests"] or len(base))
        workload = o["workload"]
        out: list[Case] = []
        modes = ["c", "u"] if o["baseline"] else ["c"]
        rng = np.random.default_rng(int(o["seed"]))
        constrained = (rng.random(n) < float(o["structured_ratio"])) if workload == "mix" \
            else np.ones(n, dtype=bool)
        kind = workload if workload in GRAMMAR_WORKLOADS else "json"
        for rate in o["rates"]:
            r = rate_label(rate)
            offsets = arrival_times(n, float(rate), float(o["burstiness"]), int(o["seed"]))
            stream = f"{workload}/r{r}"
            out.append(canary_case(good[0], self.name, stream, r, kind, int(o["seed"])))
            for mode in modes:
                for i in range(n):
                    src = good[0] if workload == "json" else (base[i % len(base)])
                    schema, text = src.schema, src.schema_text
                    if workload == "json-unique" and not src.load_error:
                        schema = unique_schema(src.schema, i)
                        text = json.dumps(schema)
                    cid = f"{workload}/r{r}/{mode}/{i:04d}"
                    req = {"stream": f"{workload}/r{r}", "rate": r, "mode": mode, "index": i,
                           "arrival_s": round(offsets[i], 6), "source": src.case_id,
                           "constrained": bool(mode == "c" and constrained[i]),
                           "kind": o["workload"] if o["workload"] in GRAMMAR_WORKLOADS
                           else "json"}
                    ref = bfcl_reference(src.subset, [x.to_job() for x in src.instances])
                    if ref is not None:  # BFCL: the answer a checkpoint's output is matched to
                        req["bfcl_answer"] = ref
                    out.append(dataclasses.replace(src, suite=self.name, case_id=cid,
                                                   schema=schema, schema_text=text,
                                                   instances=(), request=req))
        return out

    def requests(self) -> list[Case]:
        if self._requests is None:
            self._requests = self._build()
        return self._requests

    def __len__(self) -> int:
        return len(self.requests())

    def case_ids(self) -> list[str]:
        return [c.case_id for c in self.requests()]

    def cases(self) -> Iterator[Case]:
        yield from self.requests()

    def describe(self) -> dict[str, Any]:
        o = self.options
        return {**self.inner.describe(), "suite": self.name, "source_suite": self.inner.name,
                "workload": o["workload"], "rates": list(o["rates"]),
                "requests_per_stream": int(o["requests"] or len(self.inner)),
                "streams": len(o["rates"]) * (2 if o["baseline"] else 1),
                "canaries": len(o["rates"])}


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = ServeSuite
