"""The fuzz suite's blocks, typed: ``record["fuzz"]`` (one job: seeded walks under the
engine's own mask, :mod:`suites.fuzz.job`) and the per-engine block
``summary["engines"][label]["fuzz"]`` (:mod:`suites.fuzz.summary`)."""

from __future__ import annotations

from typing import Any, TypedDict

from harness.suite import Record

__all__ = ["FuzzBlock", "FuzzEngineBlock", "FuzzRecord", "FuzzWalk", "TranslationDrift"]


class TranslationDrift(TypedDict):
    """A grammar form's reader that disagrees with the ground truth on a walk's text."""

    dialect: str
    verdict: bool | None
    truth: bool | None
    text: str


class FuzzWalk(TypedDict, total=False):
    """One walk: tokens sampled under the mask until EOS, a dead end or the budget."""

    seed: int
    walk: int            # its index in the job
    n_tokens: int
    tokens: list[int]
    ns: int              # the walk's time, ns
    status: str          # valid | invalid | undecided | dialect | dead_end | runaway |
                         # commit_refused | error
    why: str
    construct: str       # dialect: the construct whose reading explains the output
    probe: dict[str, Any]  # dialect: harness.measure.dialect.ConstructProbe.explain's answer
    dialect_probe: dict[str, Any]  # invalid, dialect-sensitive: the probe that did not explain it
    translation: list[TranslationDrift]
    ws_share: float      # runaway: share of whitespace-only tokens


class FuzzBlock(TypedDict):
    """``record["fuzz"]``."""

    walks: list[FuzzWalk]
    budget: int          # tokens a walk may take


class FuzzRecord(Record, total=False):
    """A fuzz job's record: the core keys, the form the engine was given and the block."""

    form: str | None
    fuzz: FuzzBlock


class FuzzEngineBlock(TypedDict, total=False):
    """``summary["engines"][label]["fuzz"]``: counts of schemas and of walks per status."""

    schemas: int
    walks: int
    valid: int
    invalid: int
    undecided: int
    dialect: int
    dead_end: int
    runaway: int
    commit_refused: int
    error: int
    schemas_invalid: int  # schemas with an invalid walk
    runaway_ws_share: float | None  # mean whitespace share of the runaways
