"""The churn suite's blocks, typed: ``record["churn"]`` (one job: a Zipf stream of
requests through the engine's compile cache, :mod:`suites.churn.job`) and
``summary["churn"]`` (:mod:`suites.churn.summary`). Times are integer nanoseconds in the
record, milliseconds (``_ms``) or seconds (``_s``) in the summary."""

from __future__ import annotations

from typing import TypedDict

from harness.suite import Record, Summary

__all__ = ["ChurnBlock", "ChurnRecord", "ChurnRequest", "ChurnRow", "ChurnSummary",
           "ChurnSummaryBlock", "MsStats"]


class ChurnRequest(TypedDict, total=False):
    """One request of the stream."""

    i: int               # its place in the stream
    rank: int            # the schema's Zipf rank (its key in the case's pool)
    repeat: bool         # the rank came earlier in the stream
    compile_ns: int      # schema text → compiled grammar (or the cache's copy)
    ttft_ns: int         # schema text → first mask filled (the time to first token's share)
    error: str           # the engine refused the schema (one line)
    hit: bool            # the cache did not grow: served from it (engines that report size)


class ChurnBlock(TypedDict, total=False):
    """``record["churn"]``."""

    exponent: float      # the Zipf exponent of the stream
    has_cache: bool      # the engine has a compile cache
    cache: str           # the cache, in words
    requests: list[ChurnRequest]
    cache_bytes: int | None  # the cache's size after the stream (None: not reported)


class ChurnRecord(Record, total=False):
    """A churn job's record: the core keys plus its block. Its ``ttfm_ns`` is the first
    compiled request's TTFT, None when no request compiled (Record types it ``int``: the
    readers of TTFM skip None)."""

    churn: ChurnBlock


class MsStats(TypedDict):
    """Mean and percentiles of request times, ms (None: no request)."""

    mean: float | None
    p50: float | None
    p99: float | None


class ChurnRow(TypedDict, total=False):
    """One (engine, exponent) row of the summary; None: the job died or refused."""

    engine: str
    exponent: float
    requests: int | None
    distinct: int | None     # distinct schemas requested
    repeats: float | None    # share of the compiled requests that repeat a schema
    hit_rate: float | None   # share of compiled requests served from the cache
    has_cache: bool | None
    cache: str | None
    ttft_ms: MsStats
    new_ms: MsStats          # first requests of a schema
    repeat_ms: MsStats       # repeated requests
    total_s: float | None    # the stream's total TTFT, s
    errors: int | str | None  # refused requests; a dead job: its outcome
    error: str | None        # a dead job: its error


class ChurnSummaryBlock(TypedDict):
    """``summary["churn"]``."""

    rows: list[ChurnRow]


class ChurnSummary(Summary, total=False):
    """``summary.json`` of a churn run."""

    churn: ChurnSummaryBlock
