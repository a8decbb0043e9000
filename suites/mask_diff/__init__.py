"""Suite ``mask-diff`` (and the base of ``fuzz``): corpus cases checked at the token level.

Both take their cases from the ``jsonschemabench`` corpus, or with ``--corpus grammars``
from the grammar corpus (:mod:`suites.grammars`: regexes, choices and CFGs, judged by
their ground-truth parsers), with the same ``--data``, ``--subset``, ``--sample``,
``--schemas`` selection; a 12-case stratified sample when neither ``--sample`` nor
``--schemas`` is given (these jobs run the pure-Python reference engine or hundreds of
masked walks per case). ``mask-diff`` keeps each case's instances (its jobs diff the valid
ones, :mod:`suites.mask_diff.job`); ``fuzz`` drops them (the engine
generates, :mod:`suites.fuzz.job`).
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from harness.suite import Case, SuiteError, VerdictModel
from suites.jsonschemabench import JsonSchemaBenchView

DEFAULT_SAMPLE = 12
#: ``--corpus`` values
CORPORA = ("jsonschemabench", "grammars")


class TokenSuite(JsonSchemaBenchView):
    default_sample = DEFAULT_SAMPLE
    uses_options = True

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None,
                 options: dict[str, Any] | None = None) -> None:
        corpus = (options or {}).get("corpus") or "jsonschemabench"
        if corpus not in CORPORA:
            raise SuiteError(f"unknown --corpus {corpus!r}; known: {', '.join(CORPORA)}")
        self.corpus = corpus
        if corpus == "jsonschemabench":
            super().__init__(data=data, subsets=subsets, sample=sample, schemas=schemas)
            return
        from suites.grammars import Grammars

        if sample is None and schemas is None:
            sample = self.default_sample
        g = Grammars(data=data, subsets=subsets, sample=sample, schemas=schemas,
                     suite_name=self.name)
        g.keep_instances = self.keep_instances
        self.inner = g

    def cases(self) -> Iterator[Case]:
        if self.corpus == "jsonschemabench":
            yield from super().cases()
        else:
            yield from self.inner.cases()


class MaskDiffSuite(TokenSuite):
    """Token-level mask diff against the reference engine; EOS, rollback, tightness."""

    name = "mask-diff"
    job = "suites.mask_diff.job:run_mask_diff_job"
    run_options = "suites.mask_diff.options"
    summary_blocks = ("suites.mask_diff.summary:summary_block",
                      "suites.grammars.summary:translation_block")
    report_sections = ("suites.mask_diff.report:sec_mask_diff",
                       "suites.mask_diff.report:sec_tightness")
    verdict = VerdictModel(truth="the reference engine's masks, step by step (a witness "
                                 "completed to a document and judged by jsonschema)")
    smoke = {"sample": 1, "options": {"diff_instances": 1}}


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = MaskDiffSuite
