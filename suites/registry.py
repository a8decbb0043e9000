"""Suite registry: ``--suite NAME`` → a suite object that yields cases."""

from __future__ import annotations

from typing import Any, Callable

from suites.base import SuiteError


def _jsonschemabench(**opts: Any):
    from suites.jsonschemabench import JsonSchemaBench

    return JsonSchemaBench(
        data=opts.get("data"),
        subsets=opts.get("subsets"),
        sample=opts.get("sample"),
        schemas=opts.get("schemas"),
    )


def _json_schema_test_suite(**opts: Any):
    from suites.json_schema_test_suite import JsonSchemaTestSuite

    return JsonSchemaTestSuite(
        data=opts.get("data"),
        subsets=opts.get("subsets"),
        sample=opts.get("sample"),
        schemas=opts.get("schemas"),
    )


def _drift(**opts: Any):
    from suites.drift import Drift

    return Drift(subsets=opts.get("subsets"), sample=opts.get("sample"),
                 schemas=opts.get("schemas"), data=opts.get("data"))


def _e2e(**opts: Any):
    from suites.e2e import E2ESuite

    return E2ESuite(data=opts.get("data"), subsets=opts.get("subsets"),
                    sample=opts.get("sample"), schemas=opts.get("schemas"))


def _adversarial(**opts: Any):
    from suites.adversarial import Adversarial

    return Adversarial(subsets=opts.get("subsets"), sample=opts.get("sample"),
                       schemas=opts.get("schemas"), data=opts.get("data"))


def _mask_diff(**opts: Any):
    from suites.token_suites import MaskDiffSuite

    return MaskDiffSuite(data=opts.get("data"), subsets=opts.get("subsets"),
                         sample=opts.get("sample"), schemas=opts.get("schemas"))


def _fuzz(**opts: Any):
    from suites.token_suites import FuzzSuite

    return FuzzSuite(data=opts.get("data"), subsets=opts.get("subsets"),
                     sample=opts.get("sample"), schemas=opts.get("schemas"))


SUITES: dict[str, Callable[..., Any]] = {
    "jsonschemabench": _jsonschemabench,
    "json-schema-test-suite": _json_schema_test_suite,
    "drift": _drift,
    "e2e": _e2e,
    "mask-diff": _mask_diff,
    "fuzz": _fuzz,
    "adversarial": _adversarial,
}


def build_suite(name: str, **opts: Any):
    """Build the named suite; raises :class:`SuiteError` with a one-line message."""
    if name not in SUITES:
        raise SuiteError(f"unknown suite {name!r}; known: {', '.join(sorted(SUITES))}")
    return SUITES[name](**opts)
