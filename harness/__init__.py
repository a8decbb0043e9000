"""grammar-harness: a benchmark and conformance harness for grammar-constrained decoding.

Library use::

    import harness
    r = harness.run(harness.RunConfig(engines=["llguidance"], sample=6))
    r.summary()     # summary.json as a dict
    r.records()     # one row per (engine, case) job, a pandas DataFrame
    r.report()      # the Markdown report's path

Every command is a function here first, the CLI a wrapper around it: :func:`run`,
:func:`summarize`, :func:`make_report` (``harness report``), :func:`baseline`, :func:`gate`,
:func:`explain`.

The sub-packages follow the data path (``docs/architecture.md``): ``vocab`` → ``measure`` →
``execution`` → ``store`` → ``analysis`` → ``report``, with ``cli`` on top and
``registry`` naming the plug-ins. Names are imported on first use, so that importing one
stage (e.g. :mod:`engines.vocab` from an engine adapter) imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.api import (GateOutcome, InputError, Run, baseline, default_reports,
                             default_results, explain, gate, make_report, run, summarize)
    from harness.config import ConfigError, RunConfig

__all__ = ["ConfigError", "GateOutcome", "InputError", "Run", "RunConfig", "baseline",
           "default_reports", "default_results", "explain", "gate", "make_report", "run",
           "summarize"]

_LAZY = {**{n: "harness.api" for n in ("GateOutcome", "InputError", "Run", "baseline",
                                        "default_reports", "default_results", "explain", "gate",
                                        "make_report", "run", "summarize")},
         "RunConfig": "harness.config", "ConfigError": "harness.config"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
