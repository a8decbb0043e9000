"""The decode loop: forward → mask → apply → temperature/top-p → sample → commit.

One loop for every runtime that exposes ``prefill`` / ``step`` (torch, llama.cpp's eval
path). Per step it records, in ns: ``forward`` (the runtime's step), ``mask`` (every
sequence's ``fill_mask``), ``apply`` (the kernel on the logits), ``sample`` (temperature,
top-p, draw; the token ids reach the host) and ``commit`` (every sequence's ``commit``),
and ``step``: the wall time from one sampled token to the next (the TPOT sample).

Schedules:

``serial``      commit(t-1) → forward(t-1) → mask(t) → apply → sample(t)
``overlapped``  commit(t-1) + mask(t) on a CPU thread *while* forward(t-1) runs (both need
                only token t-1; the engines and the runtimes release the GIL), then
                apply → sample; ``wait`` is the time the main thread waited for the mask after
                its forward pass ended (XGrammar's design).

Ends of a sequence: a stop token sampled while the engine allows it (``eos``); the token
budget spent without a stop token (``runaway``); no token allowed at all (``dead_end``); a
token the mask allowed but the matcher refused on commit (``rejected``); a stop token the
mask allowed but ``eos_allowed()`` denies (``eos_refused``); a sampled token outside the
mask (``mask_leak``: the apply kernel failed). Without matchers the loop is the
unconstrained baseline of the same runtime, sampler and budget. With a batch, the masks of
the batch's sequences are filled together by the engine's batch filler (xgrammar's
``BatchGrammarMatcher``, llguidance's ``fill_next_token_bitmask_par``, else a thread pool).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from harness.measure.e2e.sampling import Bitmask, Sampler

COMPONENTS = ("forward", "mask", "apply", "sample", "commit", "wait", "step")

_now = time.perf_counter_ns


@dataclass
class Sequence_:
    tokens: list[int] = field(default_factory=list)  # generated, stop token excluded
    stop: str | None = None  # eos | runaway | dead_end | rejected | eos_refused | mask_leak
    stop_token: int | None = None
    first_ns: int | None = None  # time of the first token, from the loop's start
    last_ns: int | None = None  # time of the last token (stop token included)
    n_emitted: int = 0  # tokens sampled, stop token included

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "stop": self.stop, "stop_token": self.stop_token,
                "n_emitted": self.n_emitted,
                "tpot_ns": ((self.last_ns - self.first_ns) // (self.n_emitted - 1)
                            if self.n_emitted > 1 else None)}


@dataclass
class LoopResult:
    schedule: str
    constrained: bool
    prompt_tokens: int
    prefill_ns: int
    ttft_ns: int  # loop start → first token of the batch (add compile for the job's TTFT)
    sequences: list[Sequence_]
    steps: dict[str, list[int]]
    total_ns: int

    def to_json(self) -> dict[str, Any]:
        return {"schedule": self.schedule, "constrained": self.constrained,
                "prompt_tokens": self.prompt_tokens, "prefill_ns": self.prefill_ns,
                "ttft_ns": self.ttft_ns, "total_ns": self.total_ns,
                "sequences": [s.to_json() for s in self.sequences],
                "steps": {k: v for k, v in self.steps.items() if v}}


@torch.inference_mode()
def decode(runtime, prompt: Sequence[int], *, stop_ids: Sequence[int], max_tokens: int,
           sampler: Sampler, matchers: list | None = None, bitmask: Bitmask | None = None,
           apply: Callable[[torch.Tensor, Bitmask], None] | None = None,
           overlap: bool = False, executor: ThreadPoolExecutor | None = None,
           filler: Any = None) -> LoopResult:
    """Generate up to ``max_tokens`` tokens (stop token included) for each of the runtime's
    ``batch`` sequences from ``prompt``. Constrained when ``matchers`` (one per sequence,
    fresh) are given, with ``bitmask`` and ``apply``. With ``batch > 1`` the masks of the
    live sequences are filled together by ``filler`` (the engine's
    :meth:`~engines.base.EngineAdapter.batch_filler`; a thread pool when none is given)."""
    B = runtime.batch
    constrained = matchers is not None
    if constrained:
        assert len(matchers) == B and bitmask is not None and apply is not None
    stops = frozenset(stop_ids)
    seqs = [Sequence_() for _ in range(B)]
    active = [True] * B
    steps: dict[str, list[int]] = {k: [] for k in COMPONENTS}
    sync = getattr(runtime, "sync", None)
    rows = bitmask.rows if constrained else None
    pad = next(iter(stop_ids))
    if overlap and executor is None:
        executor = ThreadPoolExecutor(1, thread_name_prefix="mask")
        own_executor = True
    else:
        own_executor = False

    own_filler = False
    if constrained and B > 1 and filler is None:
        from engines.base import BatchFiller, default_fill_threads

        filler, own_filler = BatchFiller(default_fill_threads(B)), True

    def fill_all() -> int:
        t = _now()
        if B == 1:
            if active[0]:
                matchers[0].fill_mask(rows[0])
        else:
            live = [b for b in range(B) if active[b]]
            for b in range(B):
                if not active[b]:
                    rows[b].fill(-1)  # finished rows: anything (their samples are ignored)
            if live:
                filler.fill([matchers[b] for b in live], bitmask.np, live)
        return _now() - t

    def commit_all(toks: list[int]) -> int:
        t = _now()
        for b in range(B):
            if active[b]:
                s = seqs[b]
                if not matchers[b].commit(toks[b]):
                    s.tokens.pop()
                    s.stop, s.stop_token = "rejected", toks[b]
                    active[b] = False
        return _now() - t

    def commit_and_fill(toks: list[int]) -> tuple[int, int]:
        c = commit_all(toks)
        return c, fill_all()

    def take(toks: list[int], now: int) -> None:
        """Record sampled tokens; end sequences on stop tokens / dead ends / leaks."""
        for b in range(B):
            if not active[b]:
                continue
            s, t = seqs[b], toks[b]
            if constrained and not bitmask.allowed(b, t):
                s.stop, s.stop_token, active[b] = ("dead_end" if bitmask.empty(b)
                                                   else "mask_leak"), t, False
                continue
            s.n_emitted += 1
            if s.first_ns is None:
                s.first_ns = now
            s.last_ns = now
            if t in stops:
                if constrained and not matchers[b].eos_allowed():
                    s.stop = "eos_refused"
                else:
                    s.stop = "eos"
                s.stop_token, active[b] = t, False
            else:
                s.tokens.append(t)

    def apply_and_sample(logits) -> tuple[list[int], int]:
        """Mask the logits (constrained), sample; (token per sequence, time of the draw)."""
        if constrained:
            t = _now()
            apply(logits, bitmask)
            steps["apply"].append(_now() - t)
        t = _now()
        out = sampler(logits)
        t_tok = _now()
        steps["sample"].append(t_tok - t)
        return out, t_tok

    t_start = _now()
    logits = runtime.prefill(list(prompt))
    if sync:
        sync()
    t_pf = _now()
    prefill_ns = t_pf - t_start
    if constrained:
        steps["mask"].append(fill_all())
    toks, t_tok = apply_and_sample(logits)
    steps["forward"].append(prefill_ns)
    take(toks, t_tok - t_start)
    ttft_ns = t_tok - t_start
    n = 1
    try:
        while any(active):
            if n >= max_tokens:
                for b in range(B):
                    if active[b]:
                        seqs[b].stop, active[b] = "runaway", False
                break
            feed = [toks[b] if active[b] else pad for b in range(B)]
            t0 = _now()
            if constrained and overlap:
                fut = executor.submit(commit_and_fill, feed)
                logits = runtime.step(feed)
                if sync:
                    sync()
                t1 = _now()
                c_ns, m_ns = fut.result()
                t2 = _now()
                steps["forward"].append(t1 - t0)
                steps["wait"].append(t2 - t1)
                steps["commit"].append(c_ns)
                steps["mask"].append(m_ns)
                if not any(active):  # every sequence ended on a rejected commit
                    break
            else:
                if constrained:
                    steps["commit"].append(commit_all(feed))
                    if not any(active):
                        break
                t1 = _now()
                logits = runtime.step(feed)
                if sync:
                    sync()
                t2 = _now()
                steps["forward"].append(t2 - t1)
                if constrained:
                    steps["mask"].append(fill_all())
            toks, t_tok = apply_and_sample(logits)
            steps["step"].append(t_tok - t0)
            take(toks, t_tok - t_start)
            n += 1
    finally:
        if own_executor:
            executor.shutdown(wait=True)
        if own_filler:
            filler.close()
    return LoopResult("overlapped" if overlap and constrained else "serial", constrained,
                      len(prompt), prefill_ns, ttft_ns, seqs, steps, _now() - t_start)
