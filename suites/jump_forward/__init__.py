"""Suite ``jump-forward``: the forced continuations engines offer for jump-forward decoding.

Cases are the ``jsonschemabench`` corpus's (``--data``, ``--subset``, ``--sample``,
``--schemas``; a 12-schema stratified sample when neither ``--sample`` nor ``--schemas``
is given: each job runs the pure-Python reference engine at every step). Each case keeps
its instances: the job (:mod:`suites.jump_forward.job`) walks the first
``--jf-instances`` valid ones token by token and, at every step, asks the engine for its
forced continuation (:meth:`engines.protocol.Matcher.forced_continuation`: xgrammar's
``find_jump_forward_string`` / ``find_jump_forward_tokens``, llguidance's
``compute_ff_bytes`` / ``compute_ff_tokens``) and the reference engine for the bytes the
schema really forces. The figures (:mod:`suites.jump_forward.summary`): the share of
output tokens that need no forward pass, continuations the grammar does not force, and
forced tokens that are not the canonical tokenisation of their bytes. Engines without a
jump-forward API are listed as not measured.
"""

from __future__ import annotations

from typing import Any

from harness.suite import JsonSchemaBenchView, VerdictModel

NAME = "jump-forward"
DEFAULT_SAMPLE = 12


class JumpForwardSuite(JsonSchemaBenchView):
    """Corpus schemas whose valid instances are walked with each engine's jump-forward."""

    name = NAME
    job = "suites.jump_forward.job:run_jump_forward_job"
    run_options = "suites.jump_forward.options"
    summary_blocks = ("suites.jump_forward.summary:summary_block",)
    report_sections = ("suites.jump_forward.report:sec_jump_forward",)
    verdict = VerdictModel(truth="the reference engine's exact forced bytes at each step")
    smoke = {"sample": 1, "options": {"jf_instances": 1}}
    keep_instances = True
    default_sample = DEFAULT_SAMPLE
    replay_table = False

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "suite": NAME}


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = JumpForwardSuite
