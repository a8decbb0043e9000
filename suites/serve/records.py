"""The serve suite's blocks, typed: ``record["serve"]`` (one request of a stream sent to an
OpenAI-compatible server, :mod:`suites.serve.executor`) and ``summary["serve"]``
(:mod:`suites.serve.summary`). Times are milliseconds (``_ms``) or seconds (``_s``)."""

from __future__ import annotations

from typing import Any, TypedDict

from harness.suite import Record, Summary

__all__ = ["ServeBlock", "ServeRecord", "ServeSummary", "ServeSummaryBlock"]


class ServeBlock(TypedDict, total=False):
    """``record["serve"]``: one request and what the server did with it."""

    stream: str          # the stream the request belongs to
    rate: float          # the stream's request rate, requests/s
    mode: str
    index: int           # the request's place in its stream
    constrained: bool
    form: str            # how the schema was sent (response_format, …)
    kind: str
    source: str
    status: int          # the HTTP status (0: no answer)
    sent_s: float | None  # when it was sent, from the stream's start, s
    arrival_s: float     # when the stream's schedule says it arrives, s
    ttft_ms: float | None
    e2el_ms: float | None  # end to end latency
    tpot_ms: float | None  # time per output token after the first
    itl_ms: list[float]  # inter-token latencies
    tokens: int
    finish_reason: str | None
    text: str            # the first 300 characters of the answer
    server_log: str      # a failed request: the server's log line about it
    server_log_path: str
    verdict: str         # ok | invalid | refused | runaway | server_crash | …
    why: str
    error: str | None
    whitespace_share: float | None  # finish_reason length: share of whitespace
    canary: bool         # a canary request (does the server enforce the constraint at all?)


class ServeRecord(Record, total=False):
    """A serve request's record: the core keys plus its block."""

    serve: ServeBlock


class ServeSummaryBlock(TypedDict, total=False):
    """``summary["serve"]``."""

    streams: dict[str, Any]  # engine → stream → constrained / unconstrained metrics, ratios
    versions: dict[str, Any]  # the servers' and engines' versions (versions_block)
    servers: list[dict[str, Any]]  # servers/servers.json: engine, version, starts, ready time
    form: str | None
    model: str | None
    max_tokens: int | None


class ServeSummary(Summary, total=False):
    """``summary.json`` of a serve run."""

    serve: ServeSummaryBlock
