"""Token-level conformance: the ``mask-diff`` and ``fuzz`` suites (issue 4, parts 4–8).

- :mod:`.maskops`       bitmask ↔ token-id sets, per-vocabulary token classes, digests
- :mod:`.policy`        the seeded length-aware sampling policy and the walk under a mask
- :mod:`.oracle`        the reference engine as oracle, with a per-job time budget
- :mod:`.maskdiff_job`  worker job kind ``mask-diff``: mask diff against the reference
                        engine, witnesses, EOS and rollback checks, allowed-set sizes
- :mod:`.fuzz_job`      worker job kind ``fuzz``: seeded random walks under the mask
- :mod:`.options`       the ``harness run`` flags of both suites
- :mod:`.summary`       summary.json blocks and console text, from records alone
- :mod:`.findings`      every finding of a record, as one flat list (report, explain)

The report sections are :mod:`suites.mask_diff.report`; ``harness explain`` is
:mod:`harness.cli.explain`.
"""
