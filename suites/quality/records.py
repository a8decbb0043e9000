"""What the ``quality`` suite writes: one record per (held-out schema, engine row) with the
outputs of both streams (unconstrained, and through the row's engine), and the summary's
``quality`` block (one row per stream)."""

from __future__ import annotations

from typing import TypedDict

from harness.suite import Record, Summary


class QualityOptions(TypedDict, total=False):
    model: str | None
    samples: int
    max_tokens: int
    temperature: float
    top_k: int
    top_p: float
    seed: int


class FalseAccept(TypedDict, total=False):
    """A constrained output the engine ended (EOS under its mask) that jsonschema rejects."""

    case_id: str
    temperature: float
    sample: int
    witness: str          # the output text (escaped by every renderer)
    error: str            # jsonschema's first error, one line
    replay: str           # the replay of its canonical tokenisation: accepted | rejected
    agrees: bool          # the replay accepts it too (else the two verdicts disagree)


class Output(TypedDict, total=False):
    """One generated output of one stream.

    Per-step figures are under the model's own distribution at temperature 1 before any
    mask (``p``): ``mass`` the probability outside the mask at each step (0 when
    unconstrained), ``top_masked`` the steps whose most likely token was masked,
    ``logprob`` the sum of ``log p`` of the tokens written (nats)."""

    stream: str           # unconstrained | constrained
    temperature: float    # 1.0, or 0.0 for greedy
    sample: int
    seed: int
    tokens: list[int]     # the output's tokens, the stop token excluded
    text: str
    end: str              # eos | budget (a runaway) | stuck (nothing allowed) | refused (commit refused)
    parse_valid: bool
    schema_valid: bool
    error: str            # jsonschema's first error (schema-invalid outputs)
    steps: int            # decode steps (tokens written + the stop token, if any)
    mass: list[float]     # per step: the model's probability outside the mask
    top_masked: int
    logprob: float
    whitespace_tokens: int  # tokens whose text is whitespace only
    noncanonical: bool    # the tokens differ from the tokenizer's encoding of the text
    name_match: bool | None      # BFCL: the function name equals the reference's
    args_matched: int            # BFCL: reference arguments with an equal value
    args_total: int              # BFCL: the reference's arguments


class QualityBlock(TypedDict, total=False):
    model: dict               # the checkpoint's describe()
    prompt_tokens: int
    compile_error: str        # the engine refused the schema (its stream is empty)
    outputs: list[Output]
    false_accepts: list[FalseAccept]


class QualityRecord(Record, total=False):
    quality: QualityBlock


class StreamFigures(TypedDict, total=False):
    """One stream at one temperature: shares are fractions of its outputs (0..1)."""

    outputs: int
    parse_valid: float | None
    schema_valid: float | None
    schema_valid_ci: list[float] | None   # 95% Wilson interval of schema_valid
    attempts_per_valid: float | None      # 1 / schema_valid; None when nothing was valid
    tokens_per_valid: float | None        # every token written / valid outputs
    mass_removed: float | None            # mean over steps of the probability outside the mask
    mass_removed_ci: list[float] | None   # 95% bootstrap interval over schemas
    top_masked: float | None              # share of steps whose top token was masked
    logprob_per_token: float | None       # mean log p per token written (nats)
    logprob_valid_unconstrained: float | None  # the same over the unconstrained valid outputs
    logprob_gap: float | None             # logprob_per_token - logprob_valid_unconstrained
    runaway: float | None                 # share of outputs that hit the token budget
    runaway_whitespace: float | None      # whitespace share of the runaways' tokens
    noncanonical: float | None
    accuracy: dict | None                 # BFCL: {"name", "arguments", "outputs"}; None: no reference
    bfcl: dict | None                     # {"p", "p10", "p50", "outputs"}: p per call on BFCL
    false_accepts: int
    mass_by_position: list[float | None]  # mean mass removed at output positions 0, 1, ...


class QualityRow(StreamFigures, total=False):
    stream: str                  # unconstrained | the engine row
    greedy: StreamFigures
    compile_errors: int          # schemas the engine refused
    witnesses: list[FalseAccept]
    disagreements: list[FalseAccept]


class QualitySummaryBlock(TypedDict, total=False):
    model: dict
    schemas: int
    samples: int
    max_tokens: int
    rows: list[QualityRow]
    notes: list[str]


class QualitySummary(Summary, total=False):
    quality: QualitySummaryBlock
