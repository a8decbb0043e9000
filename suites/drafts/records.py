"""The drafts suite's blocks, typed: ``record["drafts"]`` (one job: speculative drafts
validated against the engine's own replay, :mod:`suites.drafts.job`) and
``summary["drafts"]`` (:mod:`suites.drafts.summary`). Times are integer nanoseconds in
the record, microseconds (``_us``) in the summary; positions count tokens."""

from __future__ import annotations

from typing import Any, TypedDict

from harness.suite import Record, Summary

__all__ = ["DrafterRun", "DraftCompact", "DraftFailure", "DraftNote", "DraftPlan", "DraftRow", "DraftsBlock",
           "DraftsEngineRow", "DraftsPerK", "DraftsRecord", "DraftsSummary",
           "DraftsSummaryBlock", "SpeculativeBlock", "SpeculativeRow"]


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


class DrafterRun(TypedDict, total=False):
    """One drafter's greedy output with speculation (:func:`suites.drafts.aware.speculate`)."""

    tokens: int              # output tokens (the stop token excluded)
    output_tokens: int       # with the stop token when the output ended
    end: str                 # eos | budget | refused | no rollback: …
    steps: int               # target forward passes
    accepted: int            # draft tokens accepted (tree siblings included)
    drafted: int             # draft tokens proposed (the chain)
    siblings: int            # tree tokens proposed (enumerate)
    rollbacks: int           # steps whose draft tail was rolled back
    wrong_states: int        # steps after which the main matcher's mask differed from the twin's
    wrong: list[dict[str, Any]]  # the first of them: step, draft, rolled back, the ids only
                                 # main's / only the twin's mask allows, the last tokens
    draft_ns: int            # the drafter's own time, all steps, ns (its model's passes
                             # at draft_step_ns each)
    draft_forwards: int      # draft-model forward passes
    mask_ns: int             # mean fill_mask, ns
    sizes: dict[str, int]    # tokens scored per forward pass → steps
    lossless: bool           # the output equals plain greedy decoding's
    speedup: float | None    # modelled: plain greedy time / speculative time


class SpeculativeBlock(TypedDict):
    """``record["speculative"]``: every drafter on the schema's prompt (``--model``)."""

    k: int                   # the draft length
    step_ns: dict[str, int]  # the target's forward pass over m new tokens (KV cache), ns
    draft_step_ns: int | None  # the draft model's one-token pass (KV cache), ns
    drafters: dict[str, DrafterRun]


class SpeculativeRow(TypedDict):
    """One (engine, drafter) row of grammar-aware drafting over the run's schemas."""

    engine: str
    drafter: str
    schemas: int
    steps_per_token: float | None   # target steps / output tokens, all schemas
    accept_len: float | None        # accepted draft tokens / target steps
    drafted_per_step: float | None  # proposed (chain + tree) / target steps
    acceptance: float | None        # accepted / proposed
    speedup: float | None           # median modelled speedup over the schemas
    rollbacks: int
    wrong_states: int
    lossless: list[int]             # [schemas whose output equals plain greedy, schemas]
    wrong_example: dict[str, Any] | None  # the first wrong state, with its case


class DraftsRecord(Record, total=False):
    """A drafts job's record: the core keys plus its block."""

    drafts: DraftsBlock
    speculative: SpeculativeBlock


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


class DraftsSummaryBlock(TypedDict, total=False):
    """``summary["drafts"]``."""

    rows: list[DraftsEngineRow]
    speculative: list[SpeculativeRow]  # grammar-aware drafting (--model)


class DraftsSummary(Summary, total=False):
    """``summary.json`` of a drafts run."""

    drafts: DraftsSummaryBlock
