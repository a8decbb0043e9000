"""The mask-diff suite's blocks, typed: each instance's ``mask_diff`` block and the
record's ``oracle`` (one job: an engine's masks step by step against the reference
engine's exact ones, :mod:`suites.mask_diff.job`); the per-engine blocks
``summary["engines"][label]["mask_diff" | "eos_rollback" | "tightness"]`` and the top-level
``summary["tokens"]`` (:mod:`suites.mask_diff.summary`, whose docstring says what each
figure means). Steps count tokens; times are integer nanoseconds."""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from harness.suite import InstanceRecord, Record, Summary

__all__ = ["EarlyEos", "EosRollbackBlock", "MaskDiffBlock", "MaskDiffEngineBlock",
           "MaskDiffEos", "MaskDiffInstance", "MaskDiffOracle", "MaskDiffRecord",
           "MaskDiffStep", "MaskDiffSummary", "NoOraclePair", "RollbackCheck",
           "TightnessBlock", "TightnessPair", "TokensSummaryBlock", "Witness"]


class MaskDiffStep(TypedDict, total=False):
    """A step where the engine's mask differs from the oracle's (the first MAX_DIFFS)."""

    step: int
    over: int            # tokens the spec allows that the engine forbids
    under: int           # tokens the spec forbids that the engine allows
    over_ids: list[int]
    over_ws: int         # of ``over``, whitespace-only tokens
    under_ids: list[int]
    under_ws: int
    eos: str             # over | under: the stop bit differs
    # working keys of the job, dropped before the record is written: the candidate
    # tokens of the witness draw
    _over: np.ndarray
    _under: np.ndarray


class Witness(TypedDict, total=False):
    """A differing step completed to a document (under the engine's or the oracle's mask)."""

    step: int
    verdict: str | None  # false_accept | invalid | valid | oracle_timeout | a walk status
    token: int           # the differing token taken
    seed: int
    attempts: int
    tokens: list[int]    # the whole token sequence
    why: str | None


class EarlyEos(TypedDict):
    """EOS allowed on a prefix that is no valid document."""

    step: int
    why: str | None


class MaskDiffEos(TypedDict):
    """Where the stop bit was checked on the instance's prefixes."""

    early: list[EarlyEos]
    refused: list[int]   # steps where EOS was refused on a valid document
    allowed_at: list[int]


class RollbackCheck(TypedDict, total=False):
    """One ``rollback(k)`` check (harness.measure.tokens.rollback)."""

    k: int
    status: str          # identical | differs | refused
    at: int              # differs: the first step that differs
    why: str
    error: str


class MaskDiffBlock(TypedDict, total=False):
    """An instance's ``mask_diff`` block."""

    tokens: list[int]
    sizes: list[int]     # allowed tokens per step, EOS counting as one
    oracle_sizes: list[int | None]  # the oracle's (None: no oracle at that step)
    digests: list[str]   # per step, a digest of the mask (compared between engines)
    diffs: list[MaskDiffStep]
    diffs_total: int     # differing steps, also those past MAX_DIFFS
    counts: dict[str, int]  # over_steps, under_steps (and *_ws_only_steps), eos_over, eos_under
    eos: MaskDiffEos
    oracle_rejected_at: int  # a valid instance the oracle refused: its bug
    serialization: str
    witnesses: list[Witness]
    over_witnesses: list[Witness]
    rollback: list[RollbackCheck]
    _raw: list[str]      # working: per step, the raw mask (rollback checks), not written


class MaskDiffInstance(InstanceRecord, total=False):
    """An instance of a mask-diff record."""

    ser: str             # the serialisation replayed (``text``: an exact text)
    mask_diff: MaskDiffBlock


class MaskDiffOracle(TypedDict, total=False):
    """``record["oracle"]``: the reference engine as oracle for this case."""

    engine: str
    options: dict[str, Any]
    status: str          # ok | refused | timeout
    form: str | None
    error: str
    compile_ns: int


class MaskDiffRecord(Record, total=False):
    """A mask-diff job's record: the core keys (its instances typed above), the oracle,
    the form the engine was given and the job's token options."""

    schema_text: str
    token_options: dict[str, Any]
    form: str | None
    oracle: MaskDiffOracle


class MaskDiffEngineBlock(TypedDict, total=False):
    """``summary["engines"][label]["mask_diff"]``: counts (see the summary's docstring)."""

    schemas: int
    schemas_oracle: int
    schemas_no_oracle: int
    instances: int
    steps: int
    over_steps: int
    over_ws_only_steps: int
    under_steps: int
    under_ws_only_steps: int
    eos_over: int
    eos_under: int
    witnesses: dict[str, int]       # verdict → count
    over_witnesses: dict[str, int]
    schemas_false_accept: int
    false_rejects: int
    oracle_rejected: int
    diff_steps_not_kept: int


class EosRollbackBlock(TypedDict, total=False):
    """``summary["engines"][label]["eos_rollback"]``: counts of steps and checks."""

    eos_early: int
    eos_refused: int
    rollback_checks: int
    rollback_identical: int
    rollback_differs: int
    rollback_refused: int


class TightnessBlock(TypedDict, total=False):
    """``summary["engines"][label]["tightness"]``: how many tokens the masks allow."""

    steps: int
    k: int
    forced_share: float | None  # steps with exactly one allowed token
    le_k_share: float | None    # steps with at most k
    median_size: float | None


class TightnessPair(TypedDict):
    """Two engines over the steps both reached on the same instance: shares of steps."""

    engines: list[str]
    steps: int
    size_differs: float | None
    forced_differs: float | None
    le_k_differs: float | None


class NoOraclePair(TypedDict):
    """Two engines compared with each other where no oracle ran."""

    engines: list[str]
    steps: int
    mask_differs: int
    schemas: int
    first: tuple[str, int, int] | None  # (case, instance, step) of the first difference


class TokensSummaryBlock(TypedDict, total=False):
    """``summary["tokens"]`` (see the summary's docstring)."""

    k: int
    tightness_subsets: dict[str, dict[str, TightnessBlock]]  # subset → engine → figures
    tightness_schemas: dict[str, dict[str, TightnessBlock]]  # case → engine → figures
    tightness_pairs: list[TightnessPair]
    no_oracle_pairs: list[NoOraclePair]


class MaskDiffSummary(Summary, total=False):
    """``summary.json`` of a mask-diff run."""

    tokens: TokensSummaryBlock

