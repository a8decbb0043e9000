"""The runtime interface the decode loop sees, and the per-process model cache.

A runtime holds one model and ``batch`` sequences:

``prefill(ids) -> logits``     start every sequence of the batch on the same prompt ``ids``;
                               returns the next-token logits, a float32 torch tensor [B, V]
``step(tokens) -> logits``     feed one token per sequence; returns the next logits [B, V]

The logits tensor may be a view of the runtime's own buffer (llama.cpp): it is valid until
the next call, and the loop masks it in place. Weights are random, seeded, and made once per
worker process: :func:`suites.e2e.runtime_cache.get_runtime` caches runtimes by
(runtime, size, quant, seed, device, threads); a torch runtime switches batch size on the
same weights.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch


class RuntimeUnavailable(Exception):
    """The runtime's package is not installed (the message says how to get it)."""


class Runtime(Protocol):
    name: str
    vocab_size: int
    batch: int
    device: str

    def prefill(self, ids: list[int]) -> torch.Tensor: ...

    def step(self, tokens: list[int]) -> torch.Tensor: ...

    def describe(self) -> dict[str, Any]: ...


RUNTIMES = ("torch", "llamacpp", "llamacpp:eval")
