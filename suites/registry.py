"""Suite registry: ``--suite NAME`` → a suite object that yields cases.

Every suite class takes the same selection options (``data``, ``subsets``, ``sample``,
``schemas``); modules are imported only when their suite is built.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from suites.base import SuiteError

#: suite name → "module:class"
_SUITE_CLASSES: dict[str, str] = {
    "jsonschemabench": "suites.jsonschemabench:JsonSchemaBench",
    "json-schema-test-suite": "suites.json_schema_test_suite:JsonSchemaTestSuite",
    "drift": "suites.drift:Drift",
    "e2e": "suites.e2e:E2ESuite",
    "mask-diff": "suites.token_suites:MaskDiffSuite",
    "fuzz": "suites.token_suites:FuzzSuite",
    "adversarial": "suites.adversarial:Adversarial",
}


def _factory(target: str) -> Callable[..., Any]:
    module, _, cls = target.partition(":")

    def build(**opts: Any):
        suite_cls = getattr(importlib.import_module(module), cls)
        return suite_cls(data=opts.get("data"), subsets=opts.get("subsets"),
                         sample=opts.get("sample"), schemas=opts.get("schemas"))

    return build


SUITES: dict[str, Callable[..., Any]] = {n: _factory(t) for n, t in _SUITE_CLASSES.items()}


def build_suite(name: str, **opts: Any):
    """Build the named suite; raises :class:`SuiteError` with a one-line message."""
    if name not in SUITES:
        raise SuiteError(f"unknown suite {name!r}; known: {', '.join(sorted(SUITES))}")
    return SUITES[name](**opts)
