"""The decode loop: forward → mask → apply → temperature/top-p → sample → commit.

One loop for every runtime that exposes ``prefill`` / ``step`` (torch, llama.cpp's eval
path). Per step it records, in ns: ``forward`` (the runtime's step), ``mask`` (every
sequence's ``fill_mask``), ``apply`` (the kernel on the logits, the mask's copy to the device
included), ``sample`` (temperature, top-p, draw), ``commit`` (every sequence's ``commit``),
``wait`` (overlapped: the time the forward's end waited for the mask) and ``step``: the wall
time from one sampled token on the host to the next (the TPOT sample). On CUDA the device
components (``forward``, ``wait``, ``apply``, ``sample``, and ``gap``: the device idle between
one step's draw and the next forward) are read from CUDA events recorded around each part,
all read once after the decode, so timing adds no synchronisation; ``mask`` and ``commit``
are host times (``time.perf_counter_ns``) of the engine's calls.

Schedules:

``serial``      commit(t-1) → forward(t-1) → mask(t) → apply → sample(t): the mask waits for
                the forward (on CUDA the loop synchronises after it)
``overlapped``  commit(t-1) + mask(t) on a CPU thread *while* forward(t-1) runs (both need
                only token t-1; the engines and the runtimes release the GIL), then
                apply → sample (XGrammar's design). With an asynchronous runtime (the torch
                runtime on CUDA) it is also *pipelined*: the draw stays on the device and
                feeds the next forward directly (``step_device``), which is queued right
                behind the draw, before the host has the ids; the ids' copy to the host is
                queued first, so the host gets them as soon as the draw ends, and commits
                and fills the next mask while that forward runs. The device then never waits
                for the host unless the mask is late (``wait``).

The unconstrained baseline runs the same schedule without matchers (no mask, no apply).

Ends of a sequence: a stop token sampled while the engine allows it (``eos``); the token
budget spent without a stop token (``runaway``); no token allowed at all (``dead_end``); a
token the mask allowed but the matcher refused on commit (``rejected``); a stop token the
mask allowed but ``eos_allowed()`` denies (``eos_refused``); a sampled token outside the
mask (``mask_leak``: the apply kernel failed). With a batch, the masks of the batch's
sequences are filled together by the engine's batch filler (xgrammar's
``BatchGrammarMatcher``, llguidance's ``fill_next_token_bitmask_par``, else a thread pool).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from suites.e2e.records import LoopJson, SequenceJson
from suites.e2e.sampling import Bitmask, Sampler

COMPONENTS = ("forward", "mask", "apply", "sample", "commit", "wait", "step", "gap")

_now = time.perf_counter_ns


@dataclass
class Sequence_:
    tokens: list[int] = field(default_factory=list)  # generated, stop token excluded
    stop: str | None = None  # eos | runaway | dead_end | rejected | eos_refused | mask_leak
    stop_token: int | None = None
    first_ns: int | None = None  # time of the first token, from the loop's start
    last_ns: int | None = None  # time of the last token (stop token included)
    n_emitted: int = 0  # tokens sampled, stop token included

    def to_json(self) -> SequenceJson:
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

    def to_json(self) -> LoopJson:
        return {"schedule": self.schedule, "constrained": self.constrained,
                "prompt_tokens": self.prompt_tokens, "prefill_ns": self.prefill_ns,
                "ttft_ns": self.ttft_ns, "total_ns": self.total_ns,
                "sequences": [s.to_json() for s in self.sequences],
                "steps": {k: v for k, v in self.steps.items() if v}}


class _Events:
    """CUDA events of one decode, per token: f0/f1 around the forward that produced it,
    a0/a1 around the apply, s1 after the draw. Elapsed times are read after the decode."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.rows: list[dict[str, Any]] = []

    def new(self) -> dict[str, Any]:
        row: dict[str, Any] = {}
        self.rows.append(row)
        return row

    def mark(self, row: dict[str, Any] | None, key: str) -> None:
        if self.on and row is not None:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            row[key] = e

    @staticmethod
    def _ns(a, b) -> int | None:
        return None if a is None or b is None else int(a.elapsed_time(b) * 1e6)

    def components(self, constrained: bool) -> dict[str, list[int]]:
        """Per drawn token: forward (not for the prefill's token), wait, apply, sample; per
        step: gap (the previous draw's end → this forward's start). A forward queued for a
        token that was never drawn (the sequences had ended) is left out."""
        out: dict[str, list[int]] = {"forward": [], "wait": [], "apply": [], "sample": [],
                                     "gap": []}
        ns = self._ns
        prev = None
        for r in self.rows:
            if "s1" not in r:
                continue
            if "f0" in r:
                out["forward"].append(ns(r["f0"], r["f1"]))
                if constrained:
                    out["wait"].append(ns(r["f1"], r["a0"]))
                if prev is not None:
                    out["gap"].append(ns(prev["s1"], r["f0"]))
            if constrained:
                out["apply"].append(ns(r["a0"], r["a1"]))
            out["sample"].append(ns(r["a1"], r["s1"]))
            prev = r
        return {k: [x for x in v if x is not None] for k, v in out.items()}


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
    :meth:`~engines.protocol.EngineAdapter.batch_filler`; a thread pool when none is given)."""
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
    if overlap and constrained and executor is None:
        executor = ThreadPoolExecutor(1, thread_name_prefix="mask")
        own_executor = True
    else:
        own_executor = False

    own_filler = False
    if constrained and B > 1 and filler is None:
        from harness.suite.engines import BatchFiller, default_fill_threads

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

    cuda = str(getattr(runtime, "device", "cpu")).startswith("cuda")
    ev = _Events(cuda)
    # pipelined: the runtime queues work and returns (CUDA) and takes device ids
    pipelined = bool(overlap and getattr(runtime, "asynchronous", False)
                     and hasattr(runtime, "step_device"))
    if hasattr(sampler, "start"):
        sampler.start(B, max_tokens, str(getattr(runtime, "device", "cpu")))
    prep = getattr(runtime, "prepare", None)
    if prep is not None:  # KV capacity and the captured step, before the clock starts
        prep(len(prompt), max_tokens)

    def post(logits, row) -> Any:
        """Apply (constrained) and draw: the ids stay on the device, nothing waits."""
        if constrained:
            ev.mark(row, "a0")
            t = _now()
            apply(logits, bitmask)
            steps["apply"].append(_now() - t)
        ev.mark(row, "a1")
        t = _now()
        ids = sampler.draw(logits)
        ev.mark(row, "s1")
        sampler.stage(ids)
        steps["sample"].append(_now() - t)
        return ids

    def collect() -> tuple[list[int], int]:
        t = _now()
        out = sampler.collect()
        t_tok = _now()
        if not cuda:  # the draw ran on the host: its time is the sample's
            steps["sample"][-1] += t_tok - t
        return out, t_tok

    t_start = _now()
    logits = runtime.prefill(list(prompt))
    if sync:
        sync()
    t_pf = _now()
    prefill_ns = t_pf - t_start
    if constrained:
        steps["mask"].append(fill_all())
    row = ev.new()
    ids = post(logits, row)
    nxt, fwd_ns = None, 0  # fwd_ns: host time of the queued forward (synchronous runtimes)
    if pipelined and max_tokens > 1:
        nxt = ev.new()
        ev.mark(nxt, "f0")
        t = _now()
        logits = runtime.step_device(ids)
        fwd_ns = _now() - t
        ev.mark(nxt, "f1")
    toks, t_tok = collect()
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
            if pipelined:
                # the forward of this token is already queued (or running) on the device
                row = nxt
                if not cuda:
                    steps["forward"].append(fwd_ns)
                if constrained:
                    # on this thread: the host is free while the device runs the forward
                    c_ns, m_ns = commit_and_fill(feed)
                    steps["commit"].append(c_ns)
                    steps["mask"].append(m_ns)
                    if not any(active):  # every sequence ended on a rejected commit
                        break
            elif constrained and overlap:
                fut = executor.submit(commit_and_fill, feed)
                row = ev.new()
                ev.mark(row, "f0")
                logits = runtime.step(feed)
                ev.mark(row, "f1")
                if sync:
                    sync()
                t1 = _now()
                c_ns, m_ns = fut.result()
                t2 = _now()
                if not cuda:
                    steps["forward"].append(t1 - t0)
                    steps["wait"].append(t2 - t1)
                steps["commit"].append(c_ns)
                steps["mask"].append(m_ns)
                if not any(active):
                    break
            else:
                if constrained:
                    steps["commit"].append(commit_all(feed))
                    if not any(active):
                        break
                row = ev.new()
                t1 = _now()
                ev.mark(row, "f0")
                logits = runtime.step(feed)
                ev.mark(row, "f1")
                if sync:
                    sync()  # serial: the mask waits for the forward
                if not cuda:
                    steps["forward"].append(_now() - t1)
                if constrained:
                    steps["mask"].append(fill_all())
            ids = post(logits, row)
            if pipelined and n + 1 < max_tokens:
                nxt = ev.new()
                ev.mark(nxt, "f0")
                t = _now()
                logits = runtime.step_device(ids)  # queued behind the draw
                fwd_ns = _now() - t
                ev.mark(nxt, "f1")
            toks, t_tok = collect()
            steps["step"].append(t_tok - t0)
            take(toks, t_tok - t_start)
            n += 1
    finally:
        if pipelined and sync:
            sync()  # a forward queued for a token nobody will take
        if own_executor:
            executor.shutdown(wait=True)
        if own_filler:
            filler.close()
    if cuda:
        if sync:
            sync()
        dev = ev.components(constrained)
        # the device's own times replace the host's for the device parts; the prefill's
        # forward (host time, a TTFT part) stays first
        steps["forward"] = steps["forward"][:1] + dev["forward"][:len(dev["forward"])]
        # rows made for a forward whose token was never drawn carry no sample
        steps["apply"], steps["sample"] = dev["apply"], dev["sample"]
        steps["wait"] = dev["wait"] if (constrained and overlap) else []
        steps["gap"] = dev["gap"]
    return LoopResult("overlapped" if overlap and constrained else "serial", constrained,
                      len(prompt), prefill_ns, ttft_ns, seqs, steps, _now() - t_start)
