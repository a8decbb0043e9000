"""The adversarial suite's summary block, typed: ``summary["adversarial"]``
(:func:`suites.adversarial.summary.extend`). Its records are the core records."""

from __future__ import annotations

from harness.suite import Summary

__all__ = ["AdversarialSummary"]


class AdversarialSummary(Summary, total=False):
    """``summary.json`` of an adversarial run."""

    adversarial: dict[str, dict[str, int]]  # engine → case class → cases
