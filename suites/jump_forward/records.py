"""The jump-forward suite's blocks, typed: ``record["jump_forward"]`` and
``record["oracle"]`` (one job: forced continuations offered by the engine against the
reference engine's forced bytes, :mod:`suites.jump_forward.job`) and
``summary["jump_forward"]`` (:mod:`suites.jump_forward.summary`). Times are integer
nanoseconds in the record, microseconds (``_us``) in the summary; shares are of steps."""

from __future__ import annotations

from typing import Any, TypedDict

from harness.suite import Record, Summary

__all__ = ["JumpForwardBlock", "JumpForwardInstance", "JumpForwardOracle", "JumpForwardRecord",
           "JumpForwardRow", "JumpForwardSim", "JumpForwardSummary", "JumpForwardSummaryBlock",
           "NotMeasured"]


class JumpForwardSim(TypedDict, total=False):
    """Jump-forward decoding of an instance's text (:func:`suites.jump_forward.job.simulate`):
    counts of tokens, offsets in bytes."""

    status: str          # done | rejected
    reject_at: int       # rejected: the byte offset
    rejected_jump: bool  # rejected: the token came from a forced continuation
    rejected_tokens: list[int]  # the forced tokens from the rejected one on
    free: int            # tokens committed without a forward pass
    passes: int          # tokens the model produced
    jumps: int           # forced continuations taken
    diverged: int        # offers whose bytes do not continue the text
    share: float | None  # free / (free + passes); None for an empty text


class JumpForwardInstance(TypedDict, total=False):
    """One instance replayed (with the engine's forced continuations where it has the API)."""

    index: int
    serialization: str
    n_tokens: int
    bytes: int           # the text's length, bytes
    status: str          # the replay's: accepted | rejected | no_eos | error
    reject_at: int       # rejected: the step
    oracle_rejected_at: int  # a valid instance the oracle refused: its bug
    steps: int
    counts: dict[str, int]  # per step kind: offered, wrong, unforced, short, exact …
    offered_steps: int   # steps with a continuation offered
    offered_bytes: int
    oracle_forced_steps: int  # steps the spec forces
    oracle_forced_bytes: int
    oracle_token_steps: int   # forced steps whose bytes are one token
    token_steps: int
    mask_conflict: int   # offers that contradict the engine's own mask
    noncanonical: int    # offers in a non-canonical tokenisation
    token_mismatch: int
    ff_ns: list[int]     # forced-continuation calls, ns
    mask_ns: list[int]   # mask fills, ns
    evidence: dict[str, list[dict[str, Any]]]  # wrong | mask_conflict | noncanonical → steps
    sim: JumpForwardSim  # the generation simulated with the engine's continuations
    oracle_sim: JumpForwardSim  # the same with the reference engine's forced bytes


class JumpForwardBlock(TypedDict):
    """``record["jump_forward"]``."""

    api: bool | None     # the engine has a forced-continuation API (None: it has not)
    instances: list[JumpForwardInstance]


class JumpForwardOracle(TypedDict, total=False):
    """``record["oracle"]``: the reference engine as the spec of forced bytes."""

    engine: str
    options: dict[str, Any]
    status: str          # ok | refused | timeout
    error: str
    compile_ns: int


class JumpForwardRecord(Record, total=False):
    """A jump-forward job's record: the core keys plus its blocks."""

    jump_forward: JumpForwardBlock
    oracle: JumpForwardOracle


class JumpForwardRow(TypedDict, total=False):
    """One (engine, subset) row; ``subset == "all"``: the engine over every subset."""

    engine: str
    subset: str
    cases: int
    compile_errors: int
    instances: int
    rejected: int
    no_oracle: int
    steps: int
    offered: float | None       # share of steps with a continuation offered
    spec_forced: float | None   # share of steps the spec forces
    spec_bytes: float | None    # bytes the spec forces per forced step
    spec_tokens: float | None
    jf_share: float | None      # share of output tokens needing no forward pass
    spec_share: float | None    # the same under the spec's forced bytes
    free_tokens: int
    passes: int
    wrong: int
    unforced: int
    short: int
    exact: int
    unchecked: int
    conflicts: int
    token_steps: int
    noncanonical: float | None
    noncanonical_steps: int
    token_mismatch: int
    ff_us: float | None         # mean forced-continuation call, µs
    mask_us: float | None       # mean mask fill, µs


class NotMeasured(TypedDict):
    """An engine without the API (or with no schema compiled), and why."""

    engine: str
    reason: str


class JumpForwardSummaryBlock(TypedDict):
    """``summary["jump_forward"]``."""

    rows: list[JumpForwardRow]
    not_measured: list[NotMeasured]
    evidence: dict[str, list[dict[str, Any]]]  # wrong | mask_conflict | noncanonical


class JumpForwardSummary(Summary, total=False):
    """``summary.json`` of a jump-forward run."""

    jump_forward: JumpForwardSummaryBlock
