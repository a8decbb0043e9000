"""Suite ``quality``: what the mask does to what a model writes.

A model with priors (``--model``: a checkpoint folder, or ``build:default`` /
``build:tiny``, the model ``harness model build`` makes) writes outputs for held-out
schemas (a checkpoint built here records its split; any other checkpoint's training data
is unknown, and the run says so), unconstrained and through each engine row, with the same
seeds (:mod:`suites.quality.job`). summary.json's ``quality`` block has one row per stream:
validity, attempts and tokens per valid output, the probability mass the mask removed,
log-probability, runaways, non-canonical tokenisations, accuracy against BFCL's ground
truth (:mod:`suites.quality.summary`). See docs/quality.md.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.suite import JsonSchemaBenchView, SuiteError, VerdictModel
from harness.suite.maskbench import MaskBenchCorpus, resolve_data_dir, stratified_sample
from harness.suite.options import merged

NAME = "quality"


class QualitySuite(JsonSchemaBenchView):
    """Held-out JSONSchemaBench schemas, each written by the model in two streams."""

    name = NAME
    job = "suites.quality.job:run_quality_job"
    run_options = "suites.quality.options"
    summary_blocks = ("suites.quality.summary:summary_block",)
    report_sections = ("suites.quality.report:sec_quality",)
    gate_figures = "suites.quality.summary:gate_figures"
    verdict = VerdictModel(
        truth="jsonschema on each output the model wrote through the engine; an output the "
              "engine ended that jsonschema rejects is an invalidation error")
    uses_options = True
    replay_table = False  # its records hold generations, not token replays
    default_sample = 12
    smoke = {"sample": 1, "options": {"model": "build:tiny", "samples": 1, "max_tokens": 24}}

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        from harness.suite.model import CheckpointError, load_checkpoint
        from suites.quality.options import DEFAULTS

        o = merged(DEFAULTS, options)
        if not o.get("model"):
            raise SuiteError("the quality suite needs a model with priors: --model PATH (a "
                             "checkpoint folder) or --model build:default (the model "
                             "`harness model build` makes)")
        try:  # a folder: the run's configuration resolved build:default / build:tiny
            ckpt = load_checkpoint(str(o["model"]))
        except CheckpointError as e:
            raise SuiteError(str(e)) from None
        self.checkpoint = ckpt
        held = ckpt.held_out
        if sample is None and schemas is None:
            sample = self.default_sample
        everything = MaskBenchCorpus(data=data, subsets=subsets, schemas=schemas)
        names = everything.names
        if held is not None:
            names = [n for n in names if n in held]
        if sample is not None:
            names = stratified_sample(names, sample)
        if not names:
            raise SuiteError(f"no held-out schema of {ckpt.path} in "
                             f"{resolve_data_dir(data)} matches the selection")
        self.inner = everything
        self.inner.names = names
        self.held_out_known = held is not None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "model": self.checkpoint.describe(),
                "held_out": ("the checkpoint's own split: every schema here is held out"
                             if self.held_out_known else
                             "unknown: the checkpoint records no split, so these schemas "
                             "may have been trained on")}


#: The suite this package is.
SUITE = QualitySuite
