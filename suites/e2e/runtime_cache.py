"""The per-process model cache: one runtime (random weights, seeded) built per worker and
reused by every job with the same options (see :mod:`suites.e2e.runtime`)."""

from __future__ import annotations

from typing import Any

from suites.e2e.records import E2EJobOptions
from suites.e2e.runtime import RUNTIMES

_CACHE: dict[tuple, Any] = {}


def runtime_key(opts: E2EJobOptions) -> tuple:
    # the batch is not part of the key: a torch runtime changes it on the same weights
    return (opts["runtime"], opts["model"], opts.get("quant"), opts.get("seed", 0),
            opts.get("device", "cpu"), opts.get("threads", 1), opts.get("dtype"),
            opts.get("n_ctx"), opts.get("graphs"))


def build_runtime(opts: E2EJobOptions):
    """A fresh runtime for the e2e options (``runtime``, ``model``, ``quant``, ``seed``,
    ``device``, ``batch``, ``threads``, ``dtype``, ``n_ctx``, ``graphs``). A torch runtime
    also measures the device's copy bandwidth once (the floor of its step)."""
    name = opts["runtime"]
    if name == "torch":
        from suites.e2e.protocol import copy_bandwidth
        from suites.e2e.runtime_torch import TorchRuntime

        rt = TorchRuntime(opts["model"], device=opts.get("device", "cpu"),
                          dtype=opts.get("dtype"), seed=opts.get("seed", 0),
                          batch=opts.get("batch", 1), threads=opts.get("threads", 1),
                          graphs=opts.get("graphs"))
        rt.copy_bandwidth = copy_bandwidth(rt.device)
        return rt
    if name in ("llamacpp", "llamacpp:eval"):
        from suites.e2e.runtime_llamacpp import LlamaCppRuntime

        if opts.get("batch", 1) != 1:
            raise ValueError("the llamacpp runtime runs batch 1 only (use --runtime torch)")
        if opts.get("device", "cpu") != "cpu":
            raise ValueError("the llamacpp runtime is built CPU-only here (use --runtime torch)")
        from harness.suite.serving import looks_like_checkpoint

        if looks_like_checkpoint(opts["model"]):
            raise ValueError(f"--model {opts['model']}: the llamacpp runtime runs the "
                             "random-weight sizes; decode a checkpoint with --runtime torch")
        return LlamaCppRuntime(opts["model"], quant=opts.get("quant") or "Q8_0",
                               seed=opts.get("seed", 0), threads=opts.get("threads", 1),
                               n_ctx=opts.get("n_ctx") or 4096)
    raise ValueError(f"unknown runtime {name!r}; known: {', '.join(RUNTIMES)}")


def get_runtime(opts: E2EJobOptions):
    """The cached runtime for these options (built on first use in this process)."""
    key = runtime_key(opts)
    rt = _CACHE.get(key)
    if rt is None:
        # one model per worker at a time: drop others before building (memory)
        _CACHE.clear()
        rt = _CACHE[key] = build_runtime(opts)
        warm_up(rt)
    batch = int(opts.get("batch", 1))
    if batch != rt.batch:
        if not hasattr(rt, "set_batch"):
            raise ValueError(f"the {rt.name} runtime runs batch {rt.batch} only "
                             "(use --runtime torch)")
        rt.set_batch(batch)  # the e2e protocol warms each batch size before timing it
    return rt


def warm_up(rt) -> None:
    """One short prefill and two steps, so that the first job's TTFT does not carry the
    runtime's one-time costs (lazy initialisation, buffer allocation). The step's
    stability is the protocol's business (:func:`suites.e2e.protocol.warm_up`)."""
    import torch

    with torch.inference_mode():
        n = int(getattr(rt, "vocab_size", 128256))  # ids inside a checkpoint's vocabulary
        rt.prefill([128000 % n, 1, 2, 3])
        rt.step([4] * rt.batch)
        rt.step([5] * rt.batch)
