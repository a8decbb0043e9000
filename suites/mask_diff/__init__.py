"""Suite ``mask-diff``: corpus cases checked at the token level against the reference engine.

Its cases are the ``jsonschemabench`` corpus's, or with ``--corpus grammars`` the grammar
corpus's (regexes, choices and CFGs, judged by their ground-truth parsers), with the same
``--data``, ``--subset``, ``--sample``, ``--schemas`` selection as ``fuzz``
(:class:`harness.suite.TokenSuite`); a 12-case stratified sample when neither ``--sample``
nor ``--schemas`` is given. ``mask-diff`` keeps each case's instances (its jobs diff the
valid ones, :mod:`suites.mask_diff.job`).
"""

from __future__ import annotations

from harness.suite import TokenSuite, VerdictModel


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
