"""The serve suite's blocks, typed: ``record["serve"]`` (one request of a stream sent to an
OpenAI-compatible server, :mod:`suites.serve.executor`) and ``summary["serve"]``
(:mod:`suites.serve.summary`). Times are milliseconds (``_ms``) or seconds (``_s``)."""

from __future__ import annotations

from typing import Any, TypedDict

from harness.suite import Record, Summary

__all__ = ["CanarySummary", "MsStats", "ServeBlock", "ServeRecord", "ServeSummary",
           "ServeSummaryBlock", "StreamMetrics"]


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
    # with a checkpoint (--model PATH), a JSON request's answer as
    # harness.suite.measure.validity_figures reads it:
    parse_valid: bool    # strict JSON
    schema_valid: bool   # jsonschema accepts the whole text
    name_match: bool | None  # BFCL: the function name equals the reference answer's
    args_matched: int    # BFCL: reference arguments with an equal value
    args_total: int      # BFCL: the reference answer's arguments


class ServeRecord(Record, total=False):
    """A serve request's record: the core keys plus its block."""

    serve: ServeBlock


class MsStats(TypedDict):
    """Mean and percentiles of request times, ms, over ``n`` values."""

    mean: float
    p50: float
    p99: float
    n: int


class StreamMetrics(TypedDict):
    """One stream's metrics, constrained or unconstrained (its canary excluded); rates
    per second of the stream's span."""

    requests: int
    completed: int
    span_s: float
    request_throughput: float | None
    output_throughput: float | None   # tokens/s
    goodput: float | None             # good requests/s
    good: int
    goodput_failures: dict[str, int]  # GOODPUT_CHECKS key → requests
    output_tokens: int
    ttft: MsStats | None
    tpot: MsStats | None
    itl: MsStats | None
    e2el: MsStats | None
    per_token_unresolved: int         # requests whose token times arrived bunched
    constrained: int
    schemas: int
    valid: int
    invalid: int
    runaways: int
    runaway_whitespace_share: float | None
    refusals: int
    refusal_messages: list[str]
    crashes: int


class CanarySummary(TypedDict, total=False):
    """A stream's canary in a word, with the text."""

    verdict: str         # enforced | NOT ENFORCED | refused | runaway | no answer
    text: str
    why: str
    error: str | None
    server_log: str


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
