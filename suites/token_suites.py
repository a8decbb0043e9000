"""Suites ``mask-diff`` and ``fuzz``: JSONSchemaBench schemas checked at the token level.

Both take their cases from the ``jsonschemabench`` corpus (same ``--data``, ``--subset``,
``--sample``, ``--schemas`` selection; a 12-schema stratified sample when neither
``--sample`` nor ``--schemas`` is given: these jobs run the pure-Python reference engine or
hundreds of masked walks per schema). ``mask-diff`` keeps each case's instances (its jobs
diff the valid ones, :mod:`harness.measure.tokens.maskdiff_job`); ``fuzz`` drops them (the engine
generates, :mod:`harness.measure.tokens.fuzz_job`).
"""

from __future__ import annotations

from suites.jsonschemabench import JsonSchemaBenchView

DEFAULT_SAMPLE = 12


class _TokenSuite(JsonSchemaBenchView):
    default_sample = DEFAULT_SAMPLE


class MaskDiffSuite(_TokenSuite):
    """Token-level mask diff against the reference engine; EOS, rollback, tightness."""

    name = "mask-diff"
    job = "harness.measure.tokens.maskdiff_job:run_mask_diff_job"
    run_options = "harness.measure.tokens.options"
    summary_blocks = ("harness.measure.tokens.summary:summary_block",)
    report_sections = ("harness.report.sections.tokens:sec_mask_diff",
                       "harness.report.sections.tokens:sec_tightness")


class FuzzSuite(_TokenSuite):
    """Seeded random walks under each engine's mask, outputs validated."""

    name = "fuzz"
    job = "harness.measure.tokens.fuzz_job:run_fuzz_job"
    run_options = "harness.measure.tokens.options"
    summary_blocks = ("harness.measure.tokens.summary:summary_block",)
    report_sections = ("harness.report.sections.tokens:sec_fuzz",)
    keep_instances = False
