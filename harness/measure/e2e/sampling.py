"""Mask application and sampling, shared by every runtime of the decode loop.

Order per step (the seed's requirement): mask applied to the raw logits first, then
temperature and top-p on the masked logits, then a seeded draw.

Apply kernels (``apply``):

``engine``  the engine's own torch kernel: ``xgrammar.apply_token_bitmask_inplace``,
            ``llguidance.torch.apply_token_bitmask_inplace`` (a ``torch.compile`` kernel: its
            first call compiles), ``outlines_core.kernels.torch.apply_token_bitmask_inplace``
``shared``  the harness's fallback: bits unpacked with numpy (CPU) or torch bit ops (CUDA),
            then ``masked_fill_``
``auto``    (default) xgrammar's kernel for xgrammar on GPUs, the shared kernel otherwise
            (xgrammar's CPU kernel is ~4x slower than the shared one with real masks)
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from engines.base import bitmask_words

APPLY_MODES = ("auto", "engine", "shared")


class Bitmask:
    """A [B, W] int32 bitmask the engines fill (numpy rows) and the kernels read (torch).

    The numpy rows are made once so that adapters see the same array object every step.
    On CUDA the host buffer is pinned and copied to the device before each apply."""

    def __init__(self, batch: int, vocab_size: int, device: str = "cpu") -> None:
        self.batch, self.vocab_size, self.device = batch, vocab_size, device
        self.words = bitmask_words(vocab_size)
        host = torch.zeros((batch, self.words), dtype=torch.int32)
        if device != "cpu":
            host = host.pin_memory()
        self.host = host
        self.np = host.numpy()
        self.rows = [self.np[i] for i in range(batch)]
        self.dev = host if device == "cpu" else torch.zeros_like(host, device=device)
        self._bit = torch.arange(32, dtype=torch.int32, device=device)
        self._inv = np.empty_like(self.np)

    def to_device(self) -> torch.Tensor:
        if self.device != "cpu":
            self.dev.copy_(self.host, non_blocking=True)
        return self.dev

    def allowed(self, b: int, token: int) -> bool:
        return bool((int(self.np[b, token >> 5]) >> (token & 31)) & 1)

    def empty(self, b: int) -> bool:
        return not self.np[b].any()

    def count(self, b: int) -> int:
        return int(np.unpackbits(self.np[b].view(np.uint8))[: self.vocab_size].sum())


def apply_shared(logits: torch.Tensor, bm: Bitmask) -> None:
    """The harness's fallback kernel: logits[b, i] = -inf where bit i of row b is clear."""
    V = logits.shape[-1]
    if logits.device.type == "cpu":
        # invert the 4,008 words, not the 128,256 unpacked bytes
        np.invert(bm.np, out=bm._inv)
        bits = np.unpackbits(bm._inv.view(np.uint8), axis=-1, count=V, bitorder="little")
        logits.masked_fill_(torch.from_numpy(bits).view(torch.bool), float("-inf"))
    else:
        dev = bm.to_device()
        bits = ((dev.unsqueeze(-1) >> bm._bit) & 1).view(dev.shape[0], -1)[:, :V]
        logits.masked_fill_(bits == 0, float("-inf"))


def _engine_kernel(engine_name: str) -> Callable | None:
    """The engine's own kernel (:meth:`engines.base.EngineAdapter.mask_kernel`) over a
    :class:`Bitmask`, or None."""
    from harness.registry import RegistryError, adapter_class

    try:
        kernel = adapter_class(engine_name).mask_kernel()
    except RegistryError:
        return None
    if kernel is None:
        return None

    def apply(logits: torch.Tensor, bm: Bitmask) -> None:
        kernel(logits, bm.to_device())
    return apply


def apply_kernel(engine_name: str, mode: str = "auto",
                 device: str = "cpu") -> tuple[str, Callable]:
    """(kernel label, function(logits [B, V] float32, Bitmask)) for an engine and mode.

    ``engine`` takes the engine's own kernel where it has one; ``auto`` takes it only on a
    GPU and only for engines that prefer it there
    (:attr:`engines.base.EngineAdapter.prefer_own_kernel_on_gpu`): on a CPU a sparse mask
    over 128,256 ids costs such a kernel several times the shared one
    (``benchmarks/e2e_overhead.py`` prints both)."""
    if mode not in APPLY_MODES:
        raise ValueError(f"unknown apply mode {mode!r}; known: {', '.join(APPLY_MODES)}")
    own = mode == "engine"
    if mode == "auto" and not str(device).startswith("cpu"):
        from harness.registry import RegistryError, adapter_class

        try:
            own = adapter_class(engine_name).prefer_own_kernel_on_gpu
        except RegistryError:
            own = False
    if own:
        apply = _engine_kernel(engine_name)
        if apply is not None:
            return f"{engine_name}.apply_token_bitmask_inplace", apply
    return "shared", apply_shared


class Sampler:
    """Temperature, then top-p, then a seeded draw from the distribution (greedy at
    temperature 0)."""

    def __init__(self, temperature: float = 1.0, top_p: float = 1.0, seed: int = 0,
                 device: str = "cpu") -> None:
        self.seed = int(seed)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(int(seed))

    def __call__(self, logits: torch.Tensor) -> list[int]:
        if self.temperature <= 0:
            return logits.argmax(-1).tolist()
        if self.temperature != 1.0:
            logits = logits / self.temperature
        if self.top_p < 1.0:
            srt, idx = torch.sort(logits, dim=-1, descending=True)
            probs = torch.softmax(srt, dim=-1)
            drop = (torch.cumsum(probs, dim=-1) - probs) > self.top_p
            srt = srt.masked_fill(drop, float("-inf"))
            choice = torch.tensor(self._draw(torch.softmax(srt, dim=-1)),
                                  device=idx.device).unsqueeze(-1)
            return idx.gather(-1, choice).squeeze(-1).tolist()
        return self._draw(torch.softmax(logits, dim=-1))

    def _draw(self, probs: torch.Tensor) -> list[int]:
        # Inverse CDF with one seeded uniform per row: torch.multinomial (and exponential_)
        # draw a random number per vocabulary entry, which at 128,256 ids costs more than
        # the forward pass of the tiny model. side="right" never lands on a
        # zero-probability (masked) id.
        cdf = torch.cumsum(probs, dim=-1)
        u = torch.rand((probs.shape[0], 1), generator=self.gen, device=probs.device,
                       dtype=cdf.dtype)
        idx = torch.searchsorted(cdf, u * cdf[:, -1:], right=True)
        return idx.clamp_(max=probs.shape[-1] - 1).squeeze(-1).tolist()
