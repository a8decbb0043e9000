"""The hazards suite's blocks, typed: ``record["hazard"]`` (one job: one hazard probed on
one engine row, :mod:`suites.hazards.job`, or through a server,
:mod:`suites.hazards.served`) and ``summary["hazards"]`` (:mod:`suites.hazards.summary`).
Each hazard adds keys of its own to the block, beside the common ones typed here; its
module (``suites/hazards/<hazard>.py``) says what they mean."""

from __future__ import annotations

from typing import Any, TypedDict

from harness.suite import Record, Summary

__all__ = ["AtlasCell", "AtlasEngine", "AtlasExample", "HazardBlock", "HazardCell",
           "HazardRecord", "HazardRow", "HazardsSummary", "HazardsSummaryBlock", "KeywordAtlas",
           "KeywordVerdict", "WhitespaceRun", "WhitespaceWalk"]


class WhitespaceRun(TypedDict, total=False):
    """The longest whitespace run an engine allows at one position kind."""

    run: int             # whitespace tokens in a row
    capped: bool         # the run reached the cap: unbounded
    error: str           # the engine refused the text before the position
    skip: str            # the oracle allows no whitespace here


class WhitespaceWalk(TypedDict, total=False):
    """The whitespace hazard's walk over the position kinds (:mod:`suites.hazards.whitespace`)."""

    positions: dict[str, WhitespaceRun]
    longest: int | None  # the longest run over the positions
    unbounded: list[str]  # the position kinds where the run reached the cap
    text: str            # the walk in words (describe)
    error: str           # the bounded setting did not compile or build
    setting: str | None  # the bounding setting


class HazardBlock(TypedDict, total=False):
    """``record["hazard"]``: the common keys of every hazard's block."""

    name: str            # the hazard (suites.hazards.HAZARDS)
    verdict: str         # the hazard's own verdict words (kept, ignored, leaks, bounded …)
    witness: str         # the evidence, in one line
    not_measured: str    # why the row could not be probed
    form: str            # the engine's native form the probe compiled (tool calls, reasoning)
    error: str
    # keywords
    rows: list[dict[str, Any]]  # one per node × keyword (harness.measure.keywords.judge_node)
    source: str | None
    nodes: int           # nodes judged
    reused: int          # of them, judged before in the run (the same node and engine)
    abandoned: bool      # a compile ran past its budget and was left running: the nodes
                         # after it are undecided, and the worker was replaced
    plan_s: float        # seconds making the instances (jsonschema, hypothesis)
    judge_s: float       # seconds on the engine (compiles, replays, reachability searches)
    # padded_vocab
    vocab: str           # the tokenizer whose padded vocabulary was probed
    # padded_vocab (suites.hazards.padding): token ids at or past the tokenizer's size
    n: int               # the tokenizer's size
    width: int           # the padded width probed
    logit_words: int     # 32-bit words of a mask over the padded logits
    engine_words: int    # words the engine writes
    api: str | None      # the engine's padded-vocabulary API
    states: dict[str, dict[str, Any]]  # probed state's name →: leaked, leaked_written, examples …
    note: str
    # whitespace: the walk with the engine's default settings and with its bounding setting
    default: WhitespaceWalk
    bounded: WhitespaceWalk | bool  # whitespace: a walk; reasoning: the length bound held
    setting: str | None  # whitespace: the bounding setting
    # bad_tool (suites.hazards.tools)
    tools: int
    bad_schema: str
    alone: Any           # the bad tool's verdict alone
    bad_valid_call_accepted: bool
    # reasoning (suites.hazards.reasoning)
    valid_status: str    # the replay of a valid answer
    invalid_status: str  # the replay of an invalid one
    enforced: bool
    leak: bool
    leak_witness: str
    free_text_us: float | None  # mask time per token in the free text, µs
    answer_us: float | None
    too_long_chars: int


class HazardRecord(Record, total=False):
    """A hazards job's record: the core keys plus its block."""

    hazard: HazardBlock


class HazardCell(TypedDict, total=False):
    """One (hazard, engine) cell of the table."""

    verdict: str
    witness: str | None
    text: str            # the cell as printed


class HazardRow(TypedDict):
    """One hazard of the table."""

    hazard: str
    number: int
    title: str
    concerns: str
    cells: dict[str, HazardCell]  # engine row → cell


class KeywordVerdict(TypedDict, total=False):
    """A keyword's worst verdict on one engine, with where it was seen."""

    verdict: str
    witness: str | None
    case: str
    path: str | None


class AtlasExample(TypedDict):
    """The first occurrence of one verdict in an atlas cell."""

    case: str            # the corpus file
    path: str            # JSON pointer of the node
    witness: str | None  # ignored / misread: the instance
    why: str | None      # refused: the engine's error; undecided: why


class AtlasCell(TypedDict):
    """One keyword on one engine over the corpus."""

    counts: dict[str, int]  # verdict → occurrences (node × keyword)
    examples: dict[str, AtlasExample]  # verdict → its first occurrence


class AtlasEngine(TypedDict):
    """One engine's share of the atlas."""

    schemas: int         # corpus schemas with a record
    died: int            # of them, whose job died (no verdict for the nodes it had not
                         # finished; those it had are counted, ``died_rows`` of them)
    died_example: str | None
    died_rows: int       # occurrences judged by jobs that died before they ended
    nodes: int           # nodes judged
    reused: int          # of them, rows reused from the run's memo (same node, engine)
    plan_s: float        # seconds making instances
    judge_s: float       # seconds on the engine


class KeywordAtlas(TypedDict):
    """``summary["hazards"]["atlas"]``: :func:`suites.hazards.summary.keyword_atlas`."""

    engines: list[str]
    keywords: list[str]
    cells: dict[str, dict[str, AtlasCell]]  # engine → keyword → cell
    engine: dict[str, AtlasEngine]


class HazardsSummaryBlock(TypedDict):
    """``summary["hazards"]``."""

    engines: list[str]
    rows: list[HazardRow]
    keywords: dict[str, dict[str, KeywordVerdict]]  # engine → keyword → verdict
    atlas: KeywordAtlas


class HazardsSummary(Summary, total=False):
    """``summary.json`` of a hazards run."""

    hazards: HazardsSummaryBlock
