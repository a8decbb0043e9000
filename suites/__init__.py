"""Suites: each turns its source (a corpus read in place, or cases it generates) into cases,
and declares what the harness does with them (:class:`suites.base.SuiteBase`).

:data:`SUITES` declares the built-in suites; :mod:`harness.registry` loads them beside
third-party suites registered through the entry point group ``grammar_harness.suites``.
"""

#: ``--suite`` name → ``"module:Class"``.
SUITES: dict[str, str] = {
    "jsonschemabench": "suites.jsonschemabench:JsonSchemaBench",
    "json-schema-test-suite": "suites.json_schema_test_suite:JsonSchemaTestSuite",
    "drift": "suites.drift:Drift",
    "e2e": "suites.e2e:E2ESuite",
    "mask-diff": "suites.token_suites:MaskDiffSuite",
    "fuzz": "suites.token_suites:FuzzSuite",
    "adversarial": "suites.adversarial:Adversarial",
    "serve": "suites.serve:ServeSuite",
    "grammars": "suites.grammars:Grammars",
    "churn": "suites.churn:ChurnSuite",
    "drafts": "suites.drafts:DraftsSuite",
    "jump-forward": "suites.jump_forward:JumpForwardSuite",
    "tools": "suites.tools:ToolsSuite",
}
