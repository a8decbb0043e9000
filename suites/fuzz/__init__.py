"""Suite ``fuzz``: seeded random walks under each engine's mask, every output judged.

Its cases are the ``jsonschemabench`` corpus's, or with ``--corpus grammars`` the grammar
corpus's (:class:`harness.suite.TokenSuite`: the same selection as ``mask-diff``; a
12-case stratified sample by default), without their instances: the engine generates
(:mod:`suites.fuzz.job`).
"""

from __future__ import annotations

from harness.suite import TokenSuite, VerdictModel


class FuzzSuite(TokenSuite):
    """Seeded random walks under each engine's mask, outputs validated."""

    name = "fuzz"
    job = "suites.fuzz.job:run_fuzz_job"
    run_options = "suites.fuzz.options"
    summary_blocks = ("suites.fuzz.summary:summary_block",
                      "suites.grammars.summary:translation_block")
    report_sections = ("suites.fuzz.report:sec_fuzz",)
    verdict = VerdictModel(truth="jsonschema on the engine's own random walks under its mask")
    smoke = {"sample": 1, "options": {"walks": 2, "walk_tokens": 64}}
    keep_instances = False


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = FuzzSuite
