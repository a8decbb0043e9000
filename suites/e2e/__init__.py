"""Suite ``e2e``: JSONSchemaBench schemas generated through a real decode loop.

The cases are the ``jsonschemabench`` corpus's (same ``--data``, ``--subset``, ``--sample``,
``--schemas`` selection; a 40-schema stratified sample when neither ``--sample`` nor
``--schemas`` is given); the instances are dropped (nothing is replayed: the model generates).
Jobs are of kind ``e2e`` (:mod:`suites.e2e.job`).
"""

from __future__ import annotations

from harness.suite import JsonSchemaBenchView, VerdictModel

NAME = "e2e"
DEFAULT_SAMPLE = 40


class E2ESuite(JsonSchemaBenchView):
    name = NAME
    job = "suites.e2e.job:run_e2e_job"
    run_options = "suites.e2e.options"
    summary_blocks = ("suites.e2e.summary:summary_block",)
    report_sections = ("suites.e2e.report:sec_e2e",)
    keep_instances = False
    default_sample = DEFAULT_SAMPLE
    replay_table = False  # nothing is replayed: the suite's own table holds its figures
    verdict = VerdictModel(truth="jsonschema on the outputs of a real decode loop")
    smoke = {"sample": 1,
             "options": {"model": "micro", "runtime": "torch", "max_tokens": 8, "blocks": 1}}


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = E2ESuite
