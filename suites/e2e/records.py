"""The e2e suite's record keys and summary blocks, typed: an e2e job (a model decoding
under the engine's masks, beside the same decode unconstrained: in process,
:mod:`suites.e2e.job`; through a server, :mod:`suites.e2e.server_job`; or vLLM offline,
:mod:`suites.e2e.vllm_job`) adds ``e2e`` and its step timings to the record; the summary
adds ``summary["engines"][label]["e2e"]`` and ``summary["e2e_mask_bench"]``
(:mod:`suites.e2e.summary`). Times are integer nanoseconds (``_ns``) in the record,
``_us`` / ``_ms`` in the summary."""

from __future__ import annotations

from typing import Any, TypedDict

from harness.suite import Record, Summary

__all__ = ["BatchFigures", "ComponentShare", "CopyBandwidth", "E2EBlock", "E2EConfig",
           "E2EJobOptions", "E2EOutput", "E2ERecord", "E2ESummary", "Floor", "GraphCapture",
           "LoopJson", "MaskBench", "ProtocolSummary", "RatioInterval", "RuntimeWarmUp",
           "SequenceJson", "StepClock", "StepShares", "StepStat", "VocabCheck", "WarmUp"]


class SequenceJson(TypedDict):
    """One decoded sequence (:class:`suites.e2e.loop.Sequence_`)."""

    tokens: list[int]    # generated, the stop token excluded
    stop: str | None     # eos | runaway | dead_end | rejected | eos_refused | mask_leak
    stop_token: int | None
    n_emitted: int       # tokens sampled, the stop token included
    tpot_ns: int | None  # mean time per token after the first, ns


class LoopJson(TypedDict):
    """One decode loop (:class:`suites.e2e.loop.LoopResult`); times in ns."""

    schedule: str
    constrained: bool
    prompt_tokens: int
    prefill_ns: int
    ttft_ns: int         # loop start → the batch's first token
    total_ns: int
    sequences: list[SequenceJson]
    steps: dict[str, list[int]]  # step component → per step, ns


class WarmUp(TypedDict, total=False):
    """The protocol's warm-up of one batch size (:func:`suites.e2e.protocol.warm_up`)."""

    steps: int           # decode steps run until the step time was stable (or the cap)
    s: float             # its wall time, s
    stable: bool
    max_steps: int       # the cap
    window_ms: list[float]  # mean step per window, ms
    first: bool          # the first warm-up of that batch size in this process


class CopyBandwidth(TypedDict):
    """The device's copy bandwidth (:func:`suites.e2e.protocol.copy_bandwidth`)."""

    gb_per_s: float
    bytes: int
    reps: int
    method: str


class VocabCheck(TypedDict):
    """llama.cpp's vocabulary compared with the harness's, token by token."""

    n_vocab: int
    checked: int         # ordinary tokens compared
    mismatches: int
    first: list[int]     # the first ids that differ


class GraphCapture(TypedDict):
    """A CUDA graph captured for one (batch size, length bucket)."""

    batch: int
    bucket: int
    s: float             # the capture's time, s


class RuntimeWarmUp(TypedDict):
    """A first warm-up as the torch runtime keeps it."""

    batch: int
    steps: int
    s: float
    stable: bool


class E2EJobOptions(TypedDict, total=False):
    """A job's options with their defaults (:data:`suites.e2e.job.E2E_DEFAULTS`) resolved
    (:func:`suites.e2e.job.resolve_options`): the run options plus the runtime's own."""

    runtime: str         # auto | llamacpp | llamacpp:eval | torch | a serving route
    model: str
    quant: str           # llamacpp only
    dtype: str | None    # torch only
    max_tokens: int
    batch: int           # the primary batch size (resolved; a list as given)
    batches: list[int]   # every batch size, the primary first (resolved)
    overlap: bool
    device: str
    seed: int
    temperature: float
    top_p: float
    threads: int
    apply: str
    server: str | None
    graphs: bool | None
    blocks: int
    mask_bench: str


class StepStat(TypedDict):
    """One step component over the decode steps, µs."""

    p50: float
    p99: float
    mean: float


class RatioInterval(TypedDict, total=False):
    """A ratio of mean step times with its 95% bootstrap interval (value None: too few
    samples or under the timer's resolution, ``note`` says which)."""

    value: float | None
    ci: list[float]      # [low, high]
    resolved: bool       # the interval is within the module's RESOLVED of the value
    pairs: int
    steps: list[int]     # [A steps, B steps]
    note: str


class ComponentShare(TypedDict, total=False):
    """A step component's mean and share of the mean step."""

    mean_us: float | None
    share: float | None
    below_resolution: bool
    overlap_us: float    # ``other``: how far the timed components overlap the step


class StepShares(TypedDict, total=False):
    """The components of the mean step in one mode's blocks (empty: no steps)."""

    step_us: float
    steps: int
    components: dict[str, ComponentShare]
    engine_exposed_us: float   # the engine's time on the critical path
    harness_us: float
    harness_share: float


class BatchFigures(TypedDict, total=False):
    """One batch size's figures in an engine's e2e summary block (ms unless named)."""

    tpot_ms: float | None
    tpot_unconstrained_ms: float | None
    tpot_ratio: float | None
    tpot_ratio_ci: list[float] | None
    tpot_ratio_resolved: bool | None
    tpot_ratio_note: str | None
    pairs: int | None
    steps: list[int]     # [constrained, unconstrained] steps
    interference: float | None  # the forward pass constrained / unconstrained
    interference_ci: list[float] | None
    interference_resolved: bool | None
    interference_note: str | None
    constrained: StepShares
    unconstrained: StepShares
    harness_share: float | None
    harness_share_unconstrained: float | None
    fill: str | None     # how the masks were filled at that size


class StepClock(TypedDict):
    """The GPU clock read during the blocks."""

    source: str | None
    sm_mhz_min: float | None
    sm_mhz_max: float | None
    reads: int


class ProtocolSummary(TypedDict):
    """The measurement protocol over an engine's records."""

    by_batch: dict[str, BatchFigures]
    warmup: dict[str, dict[str, object]]  # batch size → first warm-ups and re-warm counts
    clock: StepClock
    resolution_ns: dict[str, float]       # step (host) and component (device) clocks


class Floor(TypedDict):
    """The memory-bandwidth floor of a decode step against the measured step."""

    weight_bytes_per_step: int
    copy_gb_per_s: float
    floor_ms: float
    batch: int | None
    step_ms: float | None
    forward_ms: float | None
    step_over_floor: float | None
    graphs: bool | None
    graphs_error: str | None
    device: str | None
    gpu: str | None


class MaskBench(TypedDict):
    """The mask-kernel microbenchmark (:func:`suites.e2e.maskbench.run`): its settings and
    one row per (kernel, batch size) with its timings."""

    info: dict[str, object] | None  # device, vocab, batches, n, warm-up, timer resolution …
    rows: list[dict[str, object]]   # kernel, batch, the timings (µs) or an error


class E2EBlock(TypedDict, total=False):
    """``record["e2e"]``: the job's headline figures (the in-process decode fills them all;
    a server or vLLM job those it can see)."""

    schedule: str        # how the mask and the forward pass are scheduled (or ``server``)
    api: str             # the engine's integration path (loop, logits processor, openai:…)
    apply_kernel: str | None
    prompt_tokens: int
    ttft_ns: float       # compile + matcher + prefill + first step
    ttft_unconstrained_ns: float
    prefill_ns: float
    tpot_ns: float | None  # mean step over the primary batch size's blocks
    tpot_p50_ns: float | None
    tpot_p99_ns: float | None
    tpot_unconstrained_ns: float | None
    tpot_unconstrained_p50_ns: float | None
    tpot_unconstrained_p99_ns: float | None
    tpot_ratio: float | None  # constrained / unconstrained TPOT
    steps_us: dict[str, StepStat]  # per step component
    steps_unconstrained_us: dict[str, StepStat]
    outputs: int
    eos: int             # outputs ended by EOS
    valid_outputs: int
    invalid_outputs: int
    unknown_outputs: int
    runaways: int
    dead_ends: int
    rejected: int
    eos_refused: int
    mask_leaks: int
    tokens: int
    unconstrained_tokens: int
    processor_calls: int
    tokens_sampled: int
    fill: str
    apply_timings_us: dict[str, float | None]
    by_batch: list[dict[str, Any]]  # the same figures per further batch size


class E2EOutput(TypedDict, total=False):
    """One sequence of the constrained decode."""

    stop: str            # eos | runaway | dead_end | rejected | eos_refused | mask_leak
    n_tokens: int
    stop_token: int | None
    text: str            # the first 400 bytes, decoded
    valid: bool | None   # eos: the output checked (harness.measure.validate.check_output)
    why: str
    witness: list[int]   # the token sequence that went wrong


class E2EConfig(TypedDict):
    """``record["e2e_config"]`` of a vLLM job."""

    runtime: str
    backend: str
    model: str
    max_tokens: int
    batch: int


class E2ERecord(Record, total=False):
    """An e2e job's record: the core keys plus its own."""

    e2e: E2EBlock
    e2e_config: E2EConfig
    outputs: list[E2EOutput]
    steps_ns: dict[str, list[int]]  # step component → per step, ns
    steps_unconstrained_ns: dict[str, list[int]]
    steps_by_batch_ns: dict[str, dict[str, list[int]]]  # batch size → step | unconstrained
    protocol: dict[str, Any]  # the measurement protocol: blocks per batch size, warm-ups
    mask_bench: MaskBench
    server: dict[str, Any]  # a server job: constrained and unconstrained streams, verdict


class E2ESummary(Summary, total=False):
    """``summary.json`` of an e2e run (each engine's ``e2e`` block is in
    ``summary["engines"][label]``, :func:`suites.e2e.summary.e2e_block`)."""

    e2e_mask_bench: MaskBench
