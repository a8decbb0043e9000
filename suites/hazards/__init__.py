"""Suite ``hazards``: failures users of constrained decoding hit in production, one verdict
per (hazard, engine).

Six hazards (:data:`HAZARDS`), each a yes/no or a number per engine with its witness:

1. ``hostile_request`` (served): hostile requests against a live server, then an ordinary
   one; does the server refuse, accept, crash or hang, and does it stay up
   (:mod:`suites.hazards.served`).
2. ``bad_tool``: a tool-call request with ten ordinary tools and one the engine cannot
   compile (:mod:`suites.hazards.tools`); standalone and served.
3. ``keywords``: each constraining keyword kept, ignored or refused, with a witness
   instance (the keyword judge :mod:`harness.measure.keywords`, shared with ``harness lint``): one probe schema per keyword
   (``keywords/probe/<kw>``) and the corpus sample's schemas (``keywords/corpus/<file>``).
4. ``padded_vocab``: an LM head wider than the tokenizer (:mod:`suites.hazards.padding`),
   per vocabulary (``padded_vocab/llama3``, ``padded_vocab/qwen2``).
5. ``whitespace``: the longest whitespace run allowed at each position kind, and with
   the engine's bounding setting (:mod:`suites.hazards.whitespace`).
6. ``reasoning``: a free-text reasoning section then the schema
   (:mod:`suites.hazards.reasoning`); standalone and served.

Every case runs against every engine row: standalone rows (``--engine``) in worker
processes under the run's limits (:mod:`suites.hazards.job`), served rows (``--launch
ENGINE:BACKEND``, ``--server URL``) through :class:`suites.hazards.executor.HazardsExecutor`,
which also records, for a hazard that does not concern a row, why it is not measured.
``--subset`` picks hazards by name; ``--sample`` (default 4) and ``--schemas`` select the
corpus schemas of hazard 3 (``jsonschemabench``; without the corpus, the probes alone).
"""

from __future__ import annotations

import fnmatch
import json
import logging
from typing import Any, Iterator, Mapping, Sequence

from harness.suite.options import merged
from harness.suite import Case, SuiteBase, SuiteError, VerdictModel

NAME = "hazards"
SOURCE = "suites/hazards"
DEFAULT_SAMPLE = 4

#: hazard name → (number, title, concerns: "engine" | "server" | "both")
HAZARDS: dict[str, tuple[int, str, str]] = {
    "hostile_request": (1, "a hostile request must not take the server down", "server"),
    "bad_tool": (2, "one bad tool among many", "both"),
    "keywords": (3, "keywords silently ignored", "engine"),
    "padded_vocab": (4, "padded vocabularies", "engine"),
    "whitespace": (5, "endless whitespace", "engine"),
    "reasoning": (6, "reasoning before the answer", "both"),
}

log = logging.getLogger("harness")


def hazard_of(case_id: str) -> str:
    """The hazard a case id belongs to (its first path part)."""
    return case_id.split("/", 1)[0]


def _case(cid: str, hazard: str, schema: Any = None, **request: Any) -> Case:
    text = json.dumps(schema) if schema is not None else "{}"
    return Case(suite=NAME, case_id=cid, subset=hazard, source=request.pop("source", SOURCE),
                schema=schema if schema is not None else {}, schema_text=text,
                request={"hazard": hazard, **request})


class Hazards(SuiteBase):
    """The six hazards' cases (see the module docstring)."""

    name = NAME
    job = "suites.hazards.job:run_hazard_job"
    executor = "suites.hazards.executor:HazardsExecutor"
    run_options = "suites.hazards.options"
    summary_blocks = ("suites.hazards.summary:summary_block",)
    report_sections = ("suites.hazards.report:sec_hazards",)
    verdict = VerdictModel(unit="hazard check", units="hazard checks",
                           truth="jsonschema (keywords), the tokenizer's size (padding), the "
                                 "reference engine (whitespace), the request's schemas (tools, "
                                 "reasoning) and the server's answers and /health",
                           units_from="suites.hazards.summary:is_verdict_unit")
    smoke = {"subsets": ["whitespace", "reasoning"], "options": {"launch": True}}
    uses_options = True
    replay_table = False

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        from suites.hazards.options import DEFAULTS

        self.options = merged(DEFAULTS, options)
        wanted = list(subsets or [])
        unknown = [s for s in wanted if s not in HAZARDS]
        if unknown:
            raise SuiteError(f"unknown hazard(s) {', '.join(unknown)}; known: "
                             f"{', '.join(HAZARDS)}")
        self.hazards = [h for h in HAZARDS if not wanted or h in wanted]
        self.data, self.sample, self.schemas = data, sample, schemas
        self.corpus_note: str | None = None
        self._cases: list[Case] | None = None

    def _corpus(self) -> list[Case]:
        from harness.suite import MaskBenchCorpus

        try:
            inner = MaskBenchCorpus(data=self.data, sample=self.sample or DEFAULT_SAMPLE)
        except SuiteError as e:
            self.corpus_note = f"corpus schemas not probed: {e}"
            log.warning("hazards: %s", self.corpus_note)
            return []
        out = []
        for c in inner.cases():
            if c.load_error:
                continue
            out.append(_case(f"keywords/corpus/{c.case_id}", "keywords", c.schema,
                             source=c.source))
        return out

    def _build(self) -> list[Case]:
        from harness.suite.measure import keywords
        from suites.hazards.padding import PADDINGS

        out: list[Case] = []
        for h in self.hazards:
            if h == "keywords":
                out += [_case(f"keywords/probe/{pid}", h, s, probe=pid)
                        for pid, s in keywords.PROBES.items()]
                out += self._corpus()
            elif h == "padded_vocab":
                out += [_case(f"padded_vocab/{v}", h, vocab=v) for v in PADDINGS]
            else:
                out.append(_case(h, h))
        if self.schemas:
            out = [c for c in out if fnmatch.fnmatch(c.case_id, self.schemas)]
        if not out:
            raise SuiteError("no hazard case matches the selection")
        return out

    def cases(self) -> Iterator[Case]:
        if self._cases is None:
            self._cases = self._build()
        yield from self._cases

    def __len__(self) -> int:
        return len(list(self.cases()))

    def case_ids(self) -> list[str]:
        return [c.case_id for c in self.cases()]

    def describe(self) -> dict[str, Any]:
        ids = self.case_ids()
        return {"suite": NAME, "data": SOURCE, "hazards": self.hazards, "selected": len(ids),
                "sample": self.sample or DEFAULT_SAMPLE, "schemas": self.schemas,
                "corpus_note": self.corpus_note,
                "hazard_titles": {h: list(HAZARDS[h]) for h in self.hazards}}


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = Hazards
