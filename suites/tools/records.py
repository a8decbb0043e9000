"""The tools suite's record keys and summary block, typed: a tools job (one tool-call
request compiled into the engine's native form, its instances replayed and seeded walks
judged, :mod:`suites.tools.job`) adds top-level keys to the record (``tool_count``,
``cold_ns`` … and ``fuzz``); ``summary["tools"]`` (:mod:`suites.tools.summary`). Times
are integer nanoseconds in the record, milliseconds (``_ms``) or microseconds (``_us``)
in the summary."""

from __future__ import annotations

from typing import Any, TypedDict

from harness.suite import InstanceRecord, Record, Summary

__all__ = ["CallEvents", "CallSpan", "ToolsCompileRow", "ToolsEngineRow", "ToolsEvents", "ToolsEventsRow", "ToolsEvidence", "ToolsFuzzBlock",
           "ToolsInstance", "ToolsJudgement", "ToolsRecord", "ToolsSummary",
           "ToolsSummaryBlock", "ToolsWalk"]


class CallSpan(TypedDict):
    """A tool call found in an output: its tool and its character span."""

    name: str
    start: int
    end: int


class ToolsJudgement(TypedDict, total=False):
    """An output judged against the request (:class:`suites.tools.truth.ToolTruth`)."""

    valid: bool | None   # None: undecided
    kind: str            # invalid: envelope | name | arguments | mode | truncated …
    why: str
    calls: list[CallSpan]


class ToolsInstance(InstanceRecord, total=False):
    """An instance of a tools record (always an exact text, replayed as ``text``)."""

    kind: str            # valid, or which invalid kind (the corpus's)
    why: str             # invalid: the judge's reason
    call_spans: list[list[int]]  # token ranges [start, end) inside tool calls


class ToolsWalk(TypedDict, total=False):
    """One seeded walk after the call's start."""

    walk: int
    seed: int
    status: str          # valid | invalid | undecided | prefix_refused | a walk status
    why: str | None
    kind: str | None     # invalid: what the judge found wrong
    text: str            # invalid: the output (first 2,000 characters)
    n_tokens: int
    ns: int              # the walk's time, ns


class ToolsFuzzBlock(TypedDict):
    """``record["fuzz"]`` of a tools job."""

    walks: list[ToolsWalk]
    budget: int          # tokens a walk may take
    prefix: str          # the text the walks start after


class CallEvents(TypedDict, total=False):
    """One call's streaming parse events, in decode steps (:mod:`suites.tools.events`)."""

    name: str
    name_decided: int          # from the engine's mask
    name_decided_forced: int | None  # from its forced continuation (None: no such API)
    name_written: int
    required_complete: int
    call_end: int
    lead_tokens: int           # end - required_complete


class ToolsEvents(TypedDict, total=False):
    """``record["events"]`` item: one valid instance's calls and what the routes cost."""

    index: int
    source: str                # truth: a ground-truth output; model: the checkpoint's
    temperature: float         # model: 0 (greedy) or 1
    output_end: str            # model: how the output ended (eos, budget, stuck, refused)
    valid: bool                # model: the ground truth's verdict (events only when valid)
    text: str                  # model: the output (its first 400 characters)
    digest: str                # model: sha256 of the output text (engines' outputs differ
                               # where their languages do: compared only where equal)
    calls: list[CallEvents]
    end: int                   # the stop token's step (tokens + 1)
    steps: int                 # steps scanned (each call's name region)
    mask_ns: int | None        # mean fill_mask per scanned step, ns
    set_ns: int | None         # mean name-set read from the mask per scanned step, ns
    forced: bool               # the engine has a forced-continuation API
    forced_ns: int | None      # mean forced_continuation call per scanned step, ns
    error: str                 # the engine refused a token of the valid output


class ToolsRecord(Record, total=False):
    """A tools job's record: the core keys (instances typed above) plus its own."""

    tool_count: int      # tools in the request
    tool_format: str     # the output format (harness tool_calls.FORMATS)
    mode: str            # the tool choice
    form: str | None     # the engine's native form (None: it has none)
    cold_ns: int         # first compile of the request
    warm_ns: int         # the same request again, through the engine's cache
    warm_hit: bool       # the cache did not grow on the warm compile
    warm_error: str
    overlap_ns: int      # a request sharing tools with this one
    overlap_shared: int | None  # tools shared
    overlap_error: str
    cache: str           # the compile cache, in words
    fuzz: ToolsFuzzBlock
    events: list[ToolsEvents]


class ToolsCompileRow(TypedDict):
    """One (engine, number of tools) row: medians over its cases, ms."""

    engine: str
    tools: int
    cases: int
    cold_ms: float | None
    warm_ms: float | None
    warm_hit: float | None     # share of warm compiles served from the cache
    overlap_ms: float | None
    ttfm_ms: float | None
    errors: int
    error: str | None          # the first error


class ToolsEvidence(TypedDict, total=False):
    """A false reject or false accept, for the report."""

    case_id: str
    kind: str
    status: str
    why: str | None
    text: str            # the first 400 characters


class ToolsEngineRow(TypedDict):
    """One engine row: verdicts, TBM by segment and the walks over all its cases."""

    engine: str
    form: str
    cases: int
    refused: int
    valid: int
    false_rejects: int
    invalid: dict[str, int]        # invalid kind → instances
    false_accepts: dict[str, int]  # invalid kind → accepted
    tbm_text_us: float | None      # median TBM outside calls
    tbm_call_us: float | None      # median TBM inside calls
    walks: dict[str, int]          # status → walks
    p_call: float | None           # share of decided walks that are valid calls
    p_50_calls: float | None       # that share to the 50th power
    evidence: list[ToolsEvidence]


class ToolsEventsRow(TypedDict):
    """One engine's streaming parse events (:func:`suites.tools.summary.event_rows`):
    medians in decode steps over the calls of the valid instances."""

    engine: str
    calls: int
    errors: int                 # instances whose replay the engine refused
    outputs: list[int] | None   # model: [outputs written, valid ones]; truth: None
    name_decided: float | None
    name_written: float | None
    required_complete: float | None
    end: float | None
    lead_tokens: float | None
    lead_tokens_mean: float | None
    lead_ms: float | None       # mean lead tokens × the e2e suite's TPOT, ms
    lead_share: float | None    # lead tokens / steps, over every call
    agree_ref: list[int] | None     # [calls whose name_decided = the reference's, calls]
    agree_forced: list[int] | None  # [forced route = mask route, calls]; None: no API
    forced_us: float | None     # forced_continuation per step, µs
    mask_us: float | None       # fill_mask per step, µs
    read_us: float | None       # the name set read from the mask (harness, Python), µs


class ToolsSummaryBlock(TypedDict, total=False):
    """``summary["tools"]``."""

    compile: list[ToolsCompileRow]
    engines: list[ToolsEngineRow]
    events: list[ToolsEventsRow]        # the ground-truth outputs
    events_model: list[ToolsEventsRow]  # the checkpoint's own outputs (--model)
    tpot: dict[str, Any] | None  # the TPOT lead_ms uses: {"ms": {engine: ms},
                                 # "default_ms", "source"}


class ToolsSummary(Summary, total=False):
    """``summary.json`` of a tools run."""

    tools: ToolsSummaryBlock
