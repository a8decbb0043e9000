"""The decode loop of a model with priors: one output, token by token, with a grammar's
mask applied before the draw (the quality and tools suites).

At every step the model's own distribution ``p = softmax(logits)`` (temperature 1,
nothing removed) is what is read: the probability outside the mask (``mass``), whether
``argmax p`` is masked (``top_masked``), ``log p`` of the token written. Then the token is
drawn: the mask first (every token outside it at ``-inf``), then the temperature, top-k
and top-p, then a draw from the output's own seeded generator (greedy: the arg max). The
mask goes first because a filter applied before it can leave nothing the grammar allows
and because the temperature must rescale the distribution the grammar leaves.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

__all__ = ["allowed_bits", "decode", "draw", "load_model"]


@functools.lru_cache(maxsize=2)
def load_model(folder: str) -> Any:
    """The checkpoint's torch model (cached: a worker loads each checkpoint once)."""
    from harness.model.checkpoint import load_checkpoint

    return load_checkpoint(folder).model()


def allowed_bits(bitmask: np.ndarray, width: int, vocab_size: int) -> np.ndarray:
    """The bitmask's bits as a bool array of ``width`` (the model's logits; ids past the
    tokenizer's are never allowed)."""
    bits = np.unpackbits(bitmask.view(np.uint8), bitorder="little")[:vocab_size].astype(bool)
    if width > vocab_size:
        bits = np.concatenate([bits, np.zeros(width - vocab_size, dtype=bool)])
    return bits[:width]


def draw(logits, temperature: float, top_k: int, top_p: float, gen) -> int:
    """One token from masked logits (``-inf`` outside the mask): temperature, then top-k,
    then top-p, then a draw (greedy when ``temperature`` is 0)."""
    import torch

    if temperature <= 0:
        return int(torch.argmax(logits))
    z = logits / temperature
    if top_k and top_k < z.numel():
        kth = torch.topk(z, top_k).values[-1]
        z = torch.where(z < kth, torch.full_like(z, -math.inf), z)
    if top_p < 1.0:
        sz, idx = torch.sort(z, descending=True)
        cum = torch.softmax(sz, -1).cumsum(-1)
        drop = cum - torch.softmax(sz, -1) > top_p  # keep the smallest prefix reaching top_p
        z = z.clone()
        z[idx[drop]] = -math.inf
    probs = torch.softmax(z, -1)
    return int(torch.multinomial(probs, 1, generator=gen))


def decode(model, prompt: list[int], *, stop_ids, max_tokens: int, temperature: float,
           top_k: int = 0, top_p: float = 1.0, seed: int = 0, matcher=None, bitmask=None,
           vocab_size: int | None = None) -> dict[str, Any]:
    """One output of ``model`` after ``prompt`` (token ids), under ``matcher``'s mask when
    given: ``{"tokens" (the stop token excluded), "end", "mass", "top_masked", "logprob",
    "steps"}``. ``end``: ``eos`` (a stop token), ``budget`` (``max_tokens`` written: a
    runaway), ``stuck`` (the mask allows nothing), ``refused`` (the engine refused a
    token its own mask allowed)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    ids = torch.tensor([prompt], dtype=torch.long)
    past = None
    tokens: list[int] = []
    mass: list[float] = []
    top_masked = 0
    logprob = 0.0
    end = "budget"
    stops = set(stop_ids)
    with torch.no_grad():
        for _ in range(max_tokens):
            out = model(input_ids=ids, past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[0, -1].float()
            logp = torch.log_softmax(logits, -1)
            if matcher is not None:
                matcher.fill_mask(bitmask)
                width = logits.numel()
                allowed = torch.from_numpy(allowed_bits(bitmask, width, vocab_size or width))
                if not bool(allowed.any()):
                    end = "stuck"
                    break
                p_in = float(torch.exp(logp[allowed]).sum())
                mass.append(max(0.0, 1.0 - p_in))
                top_masked += int(not bool(allowed[int(torch.argmax(logits))]))
                masked = torch.where(allowed, logits, torch.full_like(logits, -math.inf))
            else:
                mass.append(0.0)
                masked = logits
            t = draw(masked, temperature, top_k, top_p, gen)
            logprob += float(logp[t])
            if matcher is not None and not matcher.commit(t):
                end = "refused"
                break
            if t in stops:
                end = "eos"
                break
            tokens.append(t)
            ids = torch.tensor([[t]], dtype=torch.long)
    return {"tokens": tokens, "end": end, "mass": mass, "top_masked": top_masked,
            "logprob": logprob, "steps": len(mass)}
