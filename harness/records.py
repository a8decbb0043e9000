"""What flows down the data path, typed: the job payload a worker gets, the record it
returns, the run's metadata, and the summary (with its headline) derived from the records.

Each is a :class:`typing.TypedDict`: the JSON a run folder holds, with its keys and units
named once, from the first step (:mod:`harness.execution.session` builds the payloads) to
the report. The files carry a ``format`` version (:data:`RUN_FORMAT`, :data:`RECORD_FORMAT`,
:data:`SUMMARY_FORMAT`); :mod:`harness.store.run_store` reads and writes them, upgrading the
versions it knows and refusing any other with one line. Suites add keys of their own to a
record and to the summary: each suite declares them beside its code, in
``suites/<suite>/records.py``, as TypedDicts extending :class:`Record` and :class:`Summary`
(listed under :class:`Record`). This module imports nothing of the project (the data path
runs one way: the harness never imports a suite).
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["RECORD_FORMAT", "RUN_FORMAT", "SUMMARY_FORMAT", "RecordError", "check_record",
           "CasePayload", "EngineHeadline",
           "EngineRow", "Headline", "InstancePayload", "InstanceRecord", "JobPayload",
           "Record", "ReplayResult", "RunMeta", "Summary"]

#: ``run.json``'s format version.
RUN_FORMAT = 1
#: Each record's format version (2: the case id under ``case_id``; 1: ``schema_id``).
RECORD_FORMAT = 2
#: ``summary.json``'s format version (2: with ``headline``, the verdict model's; 1 had none
#: and is rebuilt from the records when read).
SUMMARY_FORMAT = 2


# ------------------------------------------------------------------ what a worker gets
class InstancePayload(TypedDict, total=False):
    """One instance of a case, as a job carries it."""

    index: int
    data: Any            # the JSON value
    label: bool          # the corpus's claim: valid or not
    text: str            # an exact text to replay instead of serialising ``data``


class CasePayload(TypedDict, total=False):
    """One case, as a job carries it (:meth:`harness.suite.Case.to_job`): everything a
    worker needs without reading a file."""

    suite: str
    case_id: str
    subset: str
    source: str
    schema_text: str     # exactly what engines are given
    instances: list[InstancePayload]
    resources: list[Any]  # (uri, schema) pairs ground truth may resolve ``$ref`` against
    default_draft: str
    format_assertion: bool
    expected_from: str   # "jsonschema" or "label"
    request: dict[str, Any]  # a serve suite request (stream, rate, mode, index, …)
    grammar: dict[str, Any]  # a grammar case: family, source dialect, every form


class EngineRow(TypedDict, total=False):
    """An engine row of the run as a job names it."""

    label: str           # ``name[:config][@env]``, as in records
    name: str
    config: str
    env: str | None
    options: dict[str, Any]


class JobPayload(TypedDict, total=False):
    """One (case, engine) job: what :mod:`harness.execution.worker` runs."""

    case: CasePayload
    engine: EngineRow
    serializations: list[str]
    primary: str
    segmentations: int
    timeout_s: float     # the job's wall-clock limit, s (--timeout)
    scratch: str | None  # a folder the session's jobs share on this machine, for caches
                         # whose entries are the same whoever makes them (removed at the
                         # session's end; None: no sharing)
    tokenizer: str
    options: dict[str, Any]  # the suite's run options (its ``run_options`` keys)
    job: str | None      # the suite's job, ``"module:function"`` (None: the replay)


# ------------------------------------------------------------------ what a worker returns
class ReplayResult(TypedDict, total=False):
    """One serialisation of one instance replayed token by token."""

    status: str          # accepted | rejected | no_eos | error
    n_tokens: int
    mask_ns: list[int]   # fill_mask per step, ns
    commit_ns: list[int]  # commit per step, ns
    reject_at: int       # the first token refused
    disagreement: str    # mask and commit (or EOS) disagree: an engine bug
    eos_mask_ns: int     # the mask filled at the end to read EOS, ns
    error: str           # status ``error``: what the engine raised
    reject_kind: str     # a false reject: unwritable | tokenization | undecided
    reachable_tokens: list[int]  # ``tokenization``: the accepted tokenisation
    reach_calls: int     # matcher calls the reachability search made
    reach_why: str       # ``undecided``: why
    same_as: str         # a serialisation spelling the same text: that one's replay
    seed: int            # a segmentation replay (``seg<k>``): its random tokenisation's seed
    of: str              # a segmentation replay: the serialisation whose text it re-tokenises


class InstanceRecord(TypedDict, total=False):
    """One instance in a record: the verdicts expected and the replays."""

    index: int
    label: bool
    truth: bool | None   # jsonschema's (or the grammar parser's) verdict
    expected: bool       # the verdict used: truth, the label where truth cannot decide
    label_disagrees: bool
    label_reason: str
    bad_instance: str    # the instance itself cannot be used (why)
    text: str            # the exact text replayed (an instance given as text)
    truth_error: str     # why ground truth could not decide (``truth`` is then None)
    results: dict[str, ReplayResult]  # serialisation → replay


class Record(TypedDict, total=False):
    """One line of ``records.jsonl``: one finished (case, engine) job.

    Times are integer nanoseconds unless the key says otherwise; a job that died has no
    ``instances``. A suite's job adds keys of its own, declared in ``suites/<suite>/records.py``
    (a TypedDict extending this one) with its summary's keys:

    ==============  =====================================  ===========================
    suite           record keys                            summary keys
    ==============  =====================================  ===========================
    batch           ``batch`` (BatchRecord)                ``batch`` (BatchSummary)
    churn           ``churn`` (ChurnRecord)                ``churn`` (ChurnSummary)
    drafts          ``drafts`` (DraftsRecord)              ``drafts`` (DraftsSummary)
    e2e             ``e2e``, ``outputs``, ``steps_ns`` …   ``engines[*].e2e``,
                    (E2ERecord)                            ``e2e_mask_bench`` (E2ESummary)
    fuzz            ``fuzz``, ``form`` (FuzzRecord)        ``engines[*].fuzz`` (FuzzEngineBlock)
    grammars        ``family``, ``form``, ``translation``  ``grammars``,
                    … (GrammarRecord)                      ``grammar_translation``
    hazards         ``hazard`` (HazardRecord)              ``hazards`` (HazardsSummary)
    jump_forward    ``jump_forward``, ``oracle``           ``jump_forward``
                    (JumpForwardRecord)                    (JumpForwardSummary)
    mask_diff       ``oracle``, ``form``, instances'       ``engines[*].mask_diff`` …,
                    ``mask_diff`` (MaskDiffRecord)         ``tokens`` (MaskDiffSummary)
    quality         ``quality`` (QualityRecord)            ``quality`` (QualitySummary)
    serve           ``serve`` (ServeRecord)                ``serve`` (ServeSummary)
    tools           ``tool_count``, ``cold_ns``, ``fuzz``  ``tools`` (ToolsSummary)
                    … (ToolsRecord)
    adversarial     (core keys only)                       ``adversarial`` (AdversarialSummary)
    ==============  =====================================  ===========================

    The harness reads two of them itself, by key and without their types:
    :mod:`harness.measure.tokens.findings` and ``explain`` read ``fuzz`` and the
    instances' ``mask_diff``."""

    format: int          # RECORD_FORMAT
    engine: str          # engine label, ``name[:config][@env]``
    case_id: str
    suite: str
    subset: str
    outcome: str         # one of harness.measure.outcomes.OUTCOMES
    error: str | None    # one line, for a compile error, a death or bad input (None: bad
                         # input whose loader gave no reason)
    phase: str           # where a job that died was
    engine_version: str | None  # None: the package's version is not known
    setup_ns: int        # building the worker's vocabulary and adapter (first job only);
                         # a job that died: the time before its own limit began
    compile_ns: int      # schema text → compiled grammar
    matcher_ns: int      # compiled grammar → its first matcher
    first_mask_ns: int   # that matcher's first fill_mask
    ttfm_ns: int         # schema text → first mask filled (a churn job that compiled
                         # nothing writes None: see ChurnRecord)
    busy_ns: int         # the worker's time on the job
    wall_ns: int         # the driver's time from dispatch to record
    started_at: float    # Unix time, s
    finished_at: float   # Unix time, s
    worker: int
    tokens: int          # TBM steps of the primary serialisation
    preempted: int       # involuntary context switches during those steps' replays (Linux)
    ttfm_preempted: int  # involuntary context switches between compile start and first mask
    accepts_invalid: bool  # a unit judged otherwise than by its instances accepted one
    instances: list[InstanceRecord]
    engine_stats: dict[str, Any]  # the engine's own statistics, where it has any
    stderr: str          # a job that died: the tail of its worker's stderr
    kept: dict[str, list[Any]]  # a job that died: what it had finished (executor.KEEP)
    host: str            # the Ray executor: the node that ran the job
    schema_text: str     # mask_diff and fuzz: the schema, for ``harness explain``
    schema_id: str       # format 1 only: the case id (upgrade_record renames it)


# ------------------------------------------------------------------ the run and its summary
class RunMeta(TypedDict, total=False):
    """``run.json``: what ran, where, on which commit."""

    format: int          # RUN_FORMAT
    run_id: str
    created_at: float    # seconds since the epoch (time.time())
    command: list[str]
    config: dict[str, Any]  # harness.config.RunConfig.to_dict()
    suite: dict[str, Any]   # the suite's describe()
    engines: list[dict[str, Any]]  # per row: engine, status, version, options, reason
    tokenizer: dict[str, Any]
    model: dict[str, Any]   # --model PATH: harness.model.Checkpoint.describe()
    limits: dict[str, Any]
    machine: dict[str, Any]
    python: str
    git_commit: str | None
    sessions: list[dict[str, Any]]  # started_at, ended_at, jobs, executor, argv


class EngineHeadline(TypedDict, total=False):
    """One engine row of the headline (:func:`harness.analysis.verdict.headline`)."""

    status: str          # run | not_run
    reason: str          # not_run: why
    n: int               # units, bad input apart
    bad_input: int
    outcomes: dict[str, int]
    finished: int        # units compiled and finished within the limits (coverage)
    accepts_invalid: int  # units that accepted something invalid (soundness)
    valid_rejected: dict[str, Any] | None  # {"n", "of", "kinds"} (strictness)
    tbm_us: dict[str, Any] | None  # p50, p99, over_1ms_share, steps
    ttfm_ms: dict[str, Any] | None  # percentiles with censoring (≥ limit)
    alerts: list[str]    # lines the verdict must print


class Headline(TypedDict, total=False):
    """``summary.json["headline"]``: every output reads the verdict from here."""

    unit: str
    units: str
    truth: str
    label_split: bool
    primary: str
    replay_table: bool
    engines: dict[str, EngineHeadline]


class Summary(TypedDict, total=False):
    """``summary.json`` (docs/metrics.md): the headline and the whole table per engine."""

    format: int          # SUMMARY_FORMAT
    run_id: str | None   # None: run.json named none
    suite: str | None
    primary_serialization: str
    serializations: list[str]
    headline: Headline
    engines: dict[str, dict[str, Any]]
    run: list[dict[str, Any]]
    parallel_efficiency: float | None
    wall_s: float


class RecordError(ValueError):
    """A record that is not one: a key every record has is missing or of the wrong type
    (one line naming the key)."""


#: The keys every record has, and their types.
_REQUIRED: dict[str, type | tuple[type, ...]] = {"engine": str, "case_id": str, "outcome": str}
#: Types of the other core keys, where present (None allowed).
_TYPES: dict[str, type | tuple[type, ...]] = {
    "format": int, "suite": str, "subset": str, "error": str, "phase": str,
    "compile_ns": (int, float), "ttfm_ns": (int, float), "busy_ns": (int, float),
    "wall_ns": (int, float), "tokens": int, "started_at": (int, float),
    "finished_at": (int, float), "instances": list}


def check_record(record: Record) -> Record:
    """``record`` when its core keys (:class:`Record`) are there and of their types; else
    :class:`RecordError`. Cheap: the store checks every record it writes."""
    if not isinstance(record, dict):
        raise RecordError(f"a record is a JSON object, not {type(record).__name__}")
    for key, kind in _REQUIRED.items():
        if not isinstance(record.get(key), kind):
            raise RecordError(f"record key {key!r} missing or not {_name(kind)}: "
                              f"{record.get(key)!r}")
    for key, kind in _TYPES.items():
        v = record.get(key)
        if v is not None and (not isinstance(v, kind) or isinstance(v, bool)):
            raise RecordError(f"record {record['case_id']!r} ({record['engine']}): key {key!r} "
                              f"is {type(v).__name__}, not {_name(kind)}")
    return record


def _name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in kind) if isinstance(kind, tuple) else kind.__name__
