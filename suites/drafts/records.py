"""The drafts suite's blocks, typed: ``record["drafts"]`` (one job: speculative drafts
validated against the engine's own replay, :mod:`suites.drafts.job`) and
``summary["drafts"]`` (:mod:`suites.drafts.summary`). Times are integer nanoseconds in
the record, microseconds (``_us``) in the summary; positions count tokens."""

from __future__ import annotations

from typing import TypedDict

from harness.suite import Record, Summary

__all__ = ["DraftCompact", "DraftFailure", "DraftNote", "DraftPlan", "DraftRow", "DraftsBlock",
           "DraftsEngineRow", "DraftsPerK", "DraftsRecord", "DraftsSummary",
           "DraftsSummaryBlock"]


class DraftPlan(TypedDict, total=False):
    """One draft of an instance, engine-independent (:func:`suites.drafts.job.plan_drafts`)."""

    kind: str            # corrupt | clean | past_end
    k: int               # draft length
    p: int               # start position in the instance's tokens
    c: int               # corrupt: the corrupted position in the draft
    j: int               # past_end: instance tokens before the stop token


class DraftRow(DraftPlan, total=False):
    """One draft as checked: its plan, what the engine did and the evidence of a failure."""

    instance: int        # the instance's index
    expected: int        # tokens the engine should accept
    got: int             # tokens ``validate_draft`` accepted
    validate_ns: int     # the best ``validate_draft`` time
    steps_ns: int        # the best time of the same tokens as single steps
    after_stop: int      # tokens accepted after the stop token
    rollback: str        # checked | unsupported
    mismatch: str        # a state or mask that differs from a fresh replay (why)
    unstable: list[int]  # two repeats accepted different lengths
    corrupt_from: str    # where the corrupt token came from
    draft: list[int]     # the draft's token ids
    error: str           # the engine raised (one line)


class DraftCompact(TypedDict, total=False):
    """A draft as the record keeps every one (``mismatch`` and ``error`` as flags)."""

    k: int
    kind: str
    expected: int
    got: int
    validate_ns: int
    steps_ns: int
    after_stop: int
    rollback: str
    ok: bool
    mismatch: bool
    error: bool


class DraftNote(TypedDict):
    """An instance left out, and why."""

    instance: int
    note: str


class DraftsBlock(TypedDict):
    """``record["drafts"]``."""

    api: str             # the engine's draft API, in words
    rows: list[DraftCompact]
    failures: list[DraftRow]  # the failing drafts with their evidence (at most MAX_EVIDENCE)
    notes: list[DraftNote]


class DraftsRecord(Record, total=False):
    """A drafts job's record: the core keys plus its block."""

    drafts: DraftsBlock


class DraftsPerK(TypedDict):
    """One draft length of an engine row (medians over its drafts; None without data)."""

    drafts: int
    validate_us: float | None
    steps_us: float | None
    ratio: float | None       # validate / steps
    ratio_why: str | None     # why there is no ratio


class DraftFailure(DraftRow, total=False):
    """A failing draft in the summary, with its case."""

    case_id: str


class DraftsEngineRow(TypedDict):
    """One engine of ``summary["drafts"]["rows"]``: counts of drafts unless named."""

    engine: str
    api: str | None
    schemas: int
    compiled: int
    died: int
    drafts: int
    wrong_length: int
    short: int
    long: int
    rollback_mismatch: int
    after_stop: int      # tokens accepted after a stop, summed
    errors: int
    rollback: str        # unsupported | checked | –
    per_k: dict[str, DraftsPerK]  # draft length (as text) → its figures
    failures: list[DraftFailure]


class DraftsSummaryBlock(TypedDict):
    """``summary["drafts"]``."""

    rows: list[DraftsEngineRow]


class DraftsSummary(Summary, total=False):
    """``summary.json`` of a drafts run."""

    drafts: DraftsSummaryBlock
