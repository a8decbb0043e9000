"""Suite ``grammars``: regular expressions, choices and context-free grammars, each case
one file of the grammar corpus (``suites/grammars/cases/*.toml``, read by
:mod:`harness.suite.grammar_corpus`, which other suites share).

Every (case, engine) job replays the case's instances token by token
(:mod:`suites.grammars.job`): the engine is given the first form, in the order
of its ``grammar_dialects``, that the case has; the expected verdict is the source form's
ground-truth parser's. The subsets are the families (``--subset regex,cfg``); ``--schemas``
globs case ids (``'cfg-sql*'``); ``--sample N`` is stratified over families; ``--data DIR``
reads case files from another folder. A file that cannot be used is one ``bad_input``
record naming it; the run goes on.
"""

from __future__ import annotations

from harness.suite import GrammarCorpus, VerdictModel

NAME = "grammars"


class Grammars(GrammarCorpus):
    """The grammar corpus, filtered by family (``--subset``), glob and stratified sample."""

    name = NAME
    job = "suites.grammars.job:run_grammar_job"
    summary_blocks = ("suites.grammars.summary:summary_block",)
    report_sections = ("suites.grammars.report:sec_grammars",)
    verdict = VerdictModel(unit="grammar case", units="grammar cases",
                           truth="the case's own parser (Python's re, lark)")
    smoke = {"sample": 2}


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = Grammars
