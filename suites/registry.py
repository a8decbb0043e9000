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


SUITES: dict[str, Callable[..., Any]] = {"jsonschemabench": _jsonschemabench}


def build_suite(name: str, **opts: Any):
    """Build the named suite; raises :class:`SuiteError` with a one-line message."""
    if name not in SUITES:
        raise SuiteError(f"unknown suite {name!r}; known: {', '.join(sorted(SUITES))}")
    return SUITES[name](**opts)
