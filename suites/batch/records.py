"""The batch suite's blocks, typed: ``record["batch"]`` (one job: a batch of sequences of
member schemas stepped together through the engine's batch filler, per thread count,
:mod:`suites.batch.job`) and ``summary["batch"]`` (:mod:`suites.batch.summary`). Times
are integer nanoseconds in the record (per step: lists, one value a step),
milliseconds (``_ms``) or microseconds (``_us``) in the summary."""

from __future__ import annotations

from typing import Any, TypedDict

from harness.suite import Record, Summary

__all__ = ["BatchBlock", "BatchHidden", "BatchMember", "BatchPoint", "BatchPointRow",
           "BatchRecord", "BatchRefused", "BatchSummary", "BatchSummaryBlock", "GrammarMs"]


class BatchMember(TypedDict, total=False):
    """A member schema of the batch."""

    case_id: str
    instances: int       # instances its sequences replay
    rejected_instances: list[Any]  # instances left out (the engine refused them alone)
    cached: bool         # compiled by an earlier job of this worker
    compile_ns: int


class BatchRefused(TypedDict, total=False):
    """A member schema the engine refused."""

    case_id: str
    why: str


class BatchPoint(TypedDict, total=False):
    """One (batch size, thread count) point: per step lists and the checks."""

    threads: int
    method: str          # the batch filler's fill method
    commit_method: str
    oversubscribed: bool  # more threads than cores
    fill_ns: list[int]   # the batch fill, per step
    commit_ns: list[int]
    join_ns: list[int]   # sequences joining, per step
    joined: list[int]    # sequences joined, per step
    slowest_ns: list[int]  # the slowest single sequence's mask, per step
    solo_ns: list[int]   # the sequences' masks one by one, per step
    checks: dict[str, int]  # batch_allows, batch_forbids, refused_valid, commit_mismatch
    evidence: list[dict[str, Any]]  # the first failed checks (check, case_id, position …)
    sequences: int
    finished: int
    retired: int
    tokens: int


class BatchBlock(TypedDict):
    """``record["batch"]``."""

    batch: int           # sequences stepped together
    workload: str
    step_ms: float       # the step budget the summary judges against, ms
    cores: int
    warmup: int          # steps before the timed ones
    members: list[BatchMember]
    refused: list[BatchRefused]
    points: list[BatchPoint]


class BatchRecord(Record, total=False):
    """A batch job's record: the core keys plus its block."""

    batch: BatchBlock


class GrammarMs(TypedDict):
    """Grammar time per step (fill + commit), ms."""

    p50: float
    p99: float
    max: float
    mean: float


class BatchPointRow(TypedDict, total=False):
    """One (engine, workload, B, T) row; ``threads`` None: a job that died or compiled
    nothing (its outcome in ``failed``)."""

    engine: str
    workload: str | None
    batch: int
    threads: int | None
    failed: str | None
    error: str | None
    steps: int
    grammar_ms: GrammarMs
    fill_p99_ms: float
    commit_p99_ms: float
    slowest_share: float | None   # median slowest sequence / whole fill
    speedup: float | None         # median one-by-one / batch fill
    join_us: float | None
    joins_per_step: float
    grammar_tok_s: float | None   # tokens per second the grammar alone allows
    checks: dict[str, int]
    batch_path: int               # failed checks of the batch path
    method: str
    commit_method: str | None
    oversubscribed: bool
    step_ms: float
    cores: int | None
    schemas: int
    left_out: int


class BatchHidden(TypedDict):
    """The largest batch whose p99 grammar time stays within the step budget."""

    engine: str
    workload: str
    threads: int | None
    step_ms: float
    largest: int | None
    p99_ms: float | None
    ceiling_tok_s: float | None
    first_over: int | None        # the first batch size over the budget
    over: Any                     # its p99 (ms), or why it failed


class BatchSummaryBlock(TypedDict):
    """``summary["batch"]`` (and ``batch.json``)."""

    points: list[BatchPointRow]
    hidden: list[BatchHidden]
    step_ms: float
    sizes: list[int]
    step_source: str | None


class BatchSummary(Summary, total=False):
    """``summary.json`` of a batch run."""

    batch: BatchSummaryBlock
