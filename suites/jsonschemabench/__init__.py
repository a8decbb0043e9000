"""Suite ``jsonschemabench``: the MaskBench form of JSONSchemaBench, read in place.

The corpus reader (file format, ``--data`` / ``$HARNESS_DATA`` location, subsets, the
stratified ``--sample``) is :mod:`harness.suite.maskbench`, shared with the suites that take
the same cases under their own name; this suite is that reader with its verdict: every
labelled instance of every selected schema replayed through each engine.
"""

from __future__ import annotations

from harness.suite import MaskBenchCorpus, VerdictModel


class JsonSchemaBench(MaskBenchCorpus):
    """The corpus as cases, filtered by subset, glob and deterministic sample."""

    verdict = VerdictModel(
        truth="jsonschema on the corpus's labelled instances (the label only where jsonschema "
              "cannot decide)", label_split=True)
    smoke = {"sample": 2}


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = JsonSchemaBench
