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

from harness.suite.engines import bitmask_words

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
        # the 32 one-bit words (bit 31 is the sign bit of an int32)
        self._one_bit = torch.tensor([np.int32(np.uint32(1 << j)) for j in range(32)],
                                     dtype=torch.int32, device=device)
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
    """The harness's fallback kernel: logits[b, i] = -inf where bit i of row b is clear.
    On a device: the packed mask goes over from pinned memory without waiting, and three
    kernels (bit test against the 32 one-bit words, compare, ``masked_fill_``) apply it."""
    V = logits.shape[-1]
    if logits.device.type == "cpu":
        # invert the 4,008 words, not the 128,256 unpacked bytes
        np.invert(bm.np, out=bm._inv)
        bits = np.unpackbits(bm._inv.view(np.uint8), axis=-1, count=V, bitorder="little")
        logits.masked_fill_(torch.from_numpy(bits).view(torch.bool), float("-inf"))
    else:
        apply_words(logits, bm.to_device(), bm._one_bit)


def apply_words(logits: torch.Tensor, words: torch.Tensor, one_bit: torch.Tensor) -> None:
    """The device half of :func:`apply_shared` on tensors of one device (any: tested on
    CPU): ``words`` [B, W] int32, ``one_bit`` the 32 one-bit int32 words."""
    V = logits.shape[-1]
    hidden = (words.unsqueeze(-1) & one_bit).view(words.shape[0], -1)[:, :V] == 0
    logits.masked_fill_(hidden, float("-inf"))


def engine_kernel(engine_name: str) -> Callable | None:
    """The engine's own kernel (:meth:`engines.protocol.EngineAdapter.mask_kernel`) over a
    :class:`Bitmask`, or None."""
    from harness.suite import RegistryError, adapter_class

    try:
        kernel = adapter_class(engine_name).mask_kernel()
    except RegistryError:
        return None
    except ImportError:
        return None
    if kernel is None:
        return None

    def apply(logits: torch.Tensor, bm: Bitmask) -> None:
        kernel(logits, bm.to_device())
    return apply


def apply_kernel(engine_name: str, mode: str = "auto", device: str = "cpu",
                 timings_us: dict[str, float | None] | None = None) -> tuple[str, Callable]:
    """(kernel label, function(logits [B, V] float32, Bitmask)) for an engine and mode.

    ``engine`` takes the engine's own kernel where it has one. ``auto`` on a GPU takes the
    faster of the engine's kernel and the shared one by ``timings_us`` (device µs per call
    at the decode's batch size, keys ``engine:NAME`` and ``shared``: the e2e suite's
    microbenchmark, :mod:`suites.e2e.maskbench`); without timings, the engine's
    kernel where its adapter prefers it on GPUs
    (:attr:`engines.protocol.EngineAdapter.prefer_own_kernel_on_gpu`). ``auto`` on a CPU takes
    the shared kernel: with real (sparse) masks over 128,256 ids an engine's CPU kernel cost
    several times the shared one (``benchmarks/e2e_overhead.py`` prints both)."""
    if mode not in APPLY_MODES:
        raise ValueError(f"unknown apply mode {mode!r}; known: {', '.join(APPLY_MODES)}")
    own = mode == "engine"
    if mode == "auto" and not str(device).startswith("cpu"):
        t = timings_us or {}
        mine, shared = t.get(f"engine:{engine_name}"), t.get("shared")
        if mine is not None and shared is not None:
            own = mine < shared
        else:
            from harness.suite import RegistryError, adapter_class

            try:
                own = adapter_class(engine_name).prefer_own_kernel_on_gpu
            except RegistryError:
                own = False
    if own:
        apply = engine_kernel(engine_name)
        if apply is not None:
            return f"{engine_name}.apply_token_bitmask_inplace", apply
    return "shared", apply_shared


class Sampler:
    """Temperature, then top-p, then a seeded draw from the distribution (greedy at
    temperature 0), on the logits' device.

    The draw is an inverse CDF with one uniform per sequence and step. The uniforms come
    from a CPU generator seeded with ``seed`` and reach the device in one copy per
    :meth:`start` (a decode's budget at once), so a step's draw is device work only and
    the same seed gives the same tokens on any device and either schedule.
    :meth:`draw` returns the ids on the device without waiting for them; :meth:`fetch`
    brings them to the host: the step's one synchronisation."""

    def __init__(self, temperature: float = 1.0, top_p: float = 1.0, seed: int = 0,
                 device: str = "cpu") -> None:
        self.seed = int(seed)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.device = device
        self.gen = torch.Generator(device="cpu")
        self.gen.manual_seed(int(seed))
        self._u: torch.Tensor | None = None  # [steps, B] uniforms on the device
        self._n = 0
        self._host: torch.Tensor | None = None  # pinned [B] ids (CUDA)
        self._done: torch.cuda.Event | None = None
        self._staged: torch.Tensor | None = None  # ids of a CPU draw

    def start(self, batch: int, steps: int, device: str | None = None) -> None:
        """Draw the uniforms of ``steps`` steps of ``batch`` sequences (outside the timed
        steps)."""
        device = device or self.device
        u = torch.rand((max(1, int(steps)), int(batch)), generator=self.gen,
                       dtype=torch.float64)
        self._u = u.to(device=device)
        self._n = 0

    def _uniform(self, batch: int, device) -> torch.Tensor:
        if self._u is None or self._n >= self._u.shape[0] or self._u.shape[1] != batch:
            self.start(batch, 64, str(device))
        u = self._u[self._n]
        self._n += 1
        return u.unsqueeze(-1)

    def draw(self, logits: torch.Tensor) -> torch.Tensor:
        """Token ids [B] (int64, on the logits' device), queued, not waited for."""
        if self.temperature <= 0:
            return logits.argmax(-1)
        if self.temperature != 1.0:
            logits = logits / self.temperature
        u = self._uniform(logits.shape[0], logits.device)
        if self.top_p < 1.0:
            srt, idx = torch.sort(logits, dim=-1, descending=True)
            probs = torch.softmax(srt, dim=-1)
            drop = (torch.cumsum(probs, dim=-1) - probs) > self.top_p
            srt = srt.masked_fill(drop, float("-inf"))
            choice = self._search(torch.softmax(srt, dim=-1), u)
            return idx.gather(-1, choice.unsqueeze(-1)).squeeze(-1)
        return self._search(torch.softmax(logits, dim=-1), u)

    @staticmethod
    def _search(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        # Inverse CDF with one seeded uniform per row: torch.multinomial (and exponential_)
        # draw a random number per vocabulary entry, which at 128,256 ids costs more than
        # the forward pass of the tiny model. side="right" never lands on a
        # zero-probability (masked) id.
        cdf = torch.cumsum(probs, dim=-1)
        idx = torch.searchsorted(cdf, u.to(cdf.dtype) * cdf[:, -1:], right=True)
        return idx.clamp_(max=probs.shape[-1] - 1).squeeze(-1)

    def stage(self, ids: torch.Tensor) -> None:
        """Queue the drawn ids' copy to the host (pinned) and mark its end: work queued
        after this (the next forward) does not delay :meth:`collect`."""
        if ids.device.type == "cuda":
            if self._host is None or self._host.shape[0] != ids.shape[0]:
                self._host = torch.empty(ids.shape[0], dtype=torch.long, pin_memory=True)
                self._done = torch.cuda.Event()
            self._host.copy_(ids, non_blocking=True)
            self._done.record()
            self._staged: torch.Tensor | None = None
        else:
            self._staged = ids

    def collect(self) -> list[int]:
        """The staged ids on the host: the step's one wait."""
        if self._staged is not None:
            return self._staged.tolist()
        self._done.synchronize()
        return self._host.tolist()

    def fetch(self, ids: torch.Tensor) -> list[int]:
        """The drawn ids on the host (:meth:`stage` then :meth:`collect`)."""
        self.stage(ids)
        return self.collect()

    def __call__(self, logits: torch.Tensor) -> list[int]:
        return self.fetch(self.draw(logits))
