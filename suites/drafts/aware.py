"""Grammar-aware drafting: does a drafter that proposes only valid tokens raise acceptance?

With ``--model`` (a checkpoint with priors) as the target, each drafts job also decodes the
schema's prompt greedily under the engine's grammar with speculation, once per drafter:

``forced``         the tokens the engine forces (``Matcher.forced_continuation``, its
                   jump-forward API), up to ``k``; nothing when nothing is forced.
``enumerate``      the tokens the mask alone leaves one choice for (a chain), then, where
                   the mask allows at most ``k`` tokens, all of them as one tree level
                   (siblings: the target checks them in the same pass).
``prompt_lookup``  the tokens that follow the longest recent suffix of the output (3, 2,
                   then 1 token) in the prompt (the schema's text: its property names
                   first, as they come in the prompt), up to ``k``, cut at the first token
                   the mask forbids.
``model``          a small draft model (``--draft-model``, e.g. ``harness model build
                   --size draft``: the tiny shape on the target's tokenizer) writing ``k``
                   greedy tokens under the mask; ``model_unmasked`` the same without the
                   mask (its first invalid token ends the draft, refused).

One target step: the drafter proposes (advancing the main matcher through the draft and
keeping its mask at each position), the target scores the prompt, the output and the
draft in one forward pass, and the tokens are accepted while each equals the target's
greedy choice under that position's mask; the first that does not is replaced by the
target's choice (the *bonus* token, always written). The rejected tail is rolled back on
the main matcher (a *rollback*); a twin matcher, which only ever commits the tokens
written, must then have the same mask bit for bit (a *wrong state* otherwise). Greedy
speculation is lossless: every drafter's output must equal the plain greedy output
(``lossless``).

Per drafter: ``accept_len`` (draft tokens accepted per target step), target steps per
output token, rollbacks, wrong states, and a ``speedup`` modelled from costs measured in
the job: ``tokens × (t_step(1) + mask)`` over ``Σ steps (t_step(m) + draft + m × mask)``,
with ``t_step(m)`` the target's forward pass over ``m`` new tokens with its KV cache
(measured for each ``m`` used, fastest of :data:`REPEATS`), ``draft`` the drafter's own
time that step (matcher calls included; a draft model's passes at its own measured
one-token KV-cache step) and ``mask`` the engine's mean ``fill_mask``.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np

__all__ = ["DRAFTERS", "REPEATS", "speculate"]

#: drafters, in table order (the ``model`` ones need ``--draft-model``)
DRAFTERS = ("none", "forced", "enumerate", "prompt_lookup", "model", "model_unmasked")
#: timed forward passes per size (the fastest is kept)
REPEATS = 3


def _bits(bm: np.ndarray, width: int) -> np.ndarray:
    return np.unpackbits(bm.view(np.uint8), bitorder="little")[:width].astype(bool)


def _greedy(logits: np.ndarray, allowed: np.ndarray) -> int:
    z = np.where(allowed[: logits.size], logits[: allowed.size], -np.inf)
    return int(np.argmax(z))


class _Target:
    """The target model: logits after a prefix, and timed KV-cache forward passes."""

    def __init__(self, model: Any, prompt: list[int]) -> None:
        import torch

        self.model, self.prompt, self.torch = model, prompt, torch

    def logits(self, tokens: list[int], last: int) -> np.ndarray:
        """The logits after each of the ``last`` + 1 last positions of prompt + tokens."""
        torch = self.torch
        with torch.no_grad():
            ids = torch.tensor([self.prompt + tokens], dtype=torch.long)
            out = self.model(input_ids=ids).logits[0, -(last + 1):].float().numpy()
        return out

    def step_ns(self, m: int) -> int:
        """One forward pass over ``m`` new tokens after the prompt (KV cache): ns."""
        torch = self.torch
        best = None
        with torch.no_grad():
            past = self.model(input_ids=torch.tensor([self.prompt]),
                              use_cache=True).past_key_values
            new = torch.tensor([self.prompt[-1:] * m], dtype=torch.long)
            for _ in range(REPEATS):
                kv = copy.deepcopy(past)  # a fresh cache each time: the pass extends it
                t0 = time.perf_counter_ns()
                self.model(input_ids=new, past_key_values=kv, use_cache=True)
                dt = time.perf_counter_ns() - t0
                best = dt if best is None else min(best, dt)
        return int(best or 0)


def _lookup(out: list[int], prompt: list[int], k: int) -> list[int]:
    """The ``k`` prompt tokens after the longest suffix of ``out`` (3, 2, 1 tokens) found
    in ``prompt`` (its last occurrence: the schema is at the prompt's end)."""
    for n in (3, 2, 1):
        if len(out) < n:
            continue
        tail = out[-n:]
        for i in range(len(prompt) - n, -1, -1):
            if prompt[i:i + n] == tail and i + n < len(prompt):
                return prompt[i + n:i + n + k]
    return []


def speculate(grammar: Any, target: _Target, vocab_size: int, stop_ids: frozenset[int],
              drafter: str, k: int, budget: int, bitmask: np.ndarray,
              draft_model: _Target | None = None) -> dict[str, Any]:
    """One greedy output under ``grammar`` with ``drafter`` (see the module docstring):
    ``{"tokens", "end", "steps", "accepted", "drafted", "siblings", "rollbacks",
    "wrong_states", "wrong", "draft_ns", "mask_ns", "sizes"}`` (``sizes``: forward-pass
    size → steps of that size; ``wrong``: the first wrong states, each with the step, the
    draft, how much was rolled back, the token ids only one of the two masks allows and
    the last tokens written)."""
    clock = time.perf_counter_ns
    main, twin = grammar.matcher(), grammar.matcher()
    bm2 = bitmask.copy()
    out: list[int] = []
    steps = accepted = drafted = siblings = rollbacks = wrong = 0
    draft_ns = mask_ns = masks = forwards = 0
    sizes: dict[int, int] = {}
    evidence: list[dict[str, Any]] = []
    end = "budget"
    while len(out) < budget:
        # -- propose: the draft, the main matcher's mask before each draft token
        t0, m0 = clock(), mask_ns
        draft: list[int] = []
        tree: list[int] = []  # enumerate: the last level's siblings
        masks_at: list[np.ndarray] = []

        def mask_now() -> np.ndarray:
            nonlocal mask_ns, masks
            t = clock()
            main.fill_mask(bitmask)
            mask_ns += clock() - t
            masks += 1
            return _bits(bitmask, vocab_size)

        allowed = mask_now()
        masks_at.append(allowed)
        if drafter == "forced":
            fc = main.forced_continuation()
            want = list(fc[1])[:k] if fc else []
        elif drafter == "prompt_lookup":
            want = _lookup(out, target.prompt, k)
        else:
            want = []
        committed = 0  # draft tokens committed on the main matcher
        while len(draft) < k:
            if drafter in ("model", "model_unmasked") and draft_model is not None:
                t1 = clock()
                z = draft_model.logits(out + draft, 0)[-1]
                forwards += 1
                draft_ns -= clock() - t1  # its forward passes are costed per pass, below
                t = _greedy(z, allowed) if drafter == "model" else int(np.argmax(z))
                if t in stop_ids:
                    break
                if t >= allowed.size or not allowed[t]:  # unmasked: invalid, proposed, refused
                    draft.append(t)
                    break
            elif drafter == "enumerate":
                ids = np.flatnonzero(allowed)
                if len(ids) == 1 and int(ids[0]) not in stop_ids:
                    t = int(ids[0])
                else:
                    if 1 < len(ids) <= k:
                        tree = [int(i) for i in ids]
                    break
            elif len(draft) < len(want):
                t = int(want[len(draft)])
                if t in stop_ids or not allowed[t]:
                    break
            else:
                break
            if not main.commit(t):
                break
            draft.append(t)
            committed += 1
            allowed = mask_now()
            masks_at.append(allowed)
        draft_ns += clock() - t0 - (mask_ns - m0)  # the masks are costed per position
        # -- verify: one pass over the draft (and the tree's siblings)
        logits = target.logits(out + draft, len(draft))
        size = len(draft) + 1 + max(0, len(tree) - 1)
        sizes[size] = sizes.get(size, 0) + 1
        steps += 1
        drafted += len(draft)
        siblings += len(tree)
        a = 0
        while a < committed and draft[a] == _greedy(logits[a], masks_at[a]):
            a += 1
        choice = _greedy(logits[a], masks_at[a])
        if a < len(draft):
            rollbacks += 1
        if a < committed:
            try:
                main.rollback(committed - a)
            except ValueError as e:  # an engine that cannot roll back
                end = f"no rollback: {e}"[:200]
                break
        accepted += a
        written = draft[:a] + [choice]
        if a == len(draft) and tree and choice in tree and choice not in stop_ids:
            # a sibling of the tree level is the target's choice: the same pass scored the
            # position after it too, so the step writes one more token
            accepted += 1
            if not main.commit(choice):
                end = "refused"
                break
            after = target.logits(out + draft + [choice], 0)[-1]
            main.fill_mask(bitmask)
            choice = _greedy(after, _bits(bitmask, vocab_size))
            written.append(choice)
        if len(out) + len(written) >= budget and not any(t in stop_ids for t in written):
            out += written[:budget - len(out)]  # the budget ends every output alike
            break
        done = choice in stop_ids
        if not done and not main.commit(choice):
            end = "refused"
            break
        for t in written:
            if t in stop_ids:
                break
            if not twin.commit(t):
                end = "refused by the twin"
                break
        out += [t for t in written if t not in stop_ids]
        if done:
            end = "eos"
            break
        main.fill_mask(bitmask)
        twin.fill_mask(bm2)
        if not np.array_equal(bitmask, bm2):
            wrong += 1
            if len(evidence) < 3:
                a_bits, b_bits = _bits(bitmask, vocab_size), _bits(bm2, vocab_size)
                evidence.append({"at": len(out), "draft": draft, "accepted": a,
                                 "rolled_back": len(draft) - a,
                                 "main_only": np.flatnonzero(a_bits & ~b_bits)[:8].tolist(),
                                 "twin_only": np.flatnonzero(b_bits & ~a_bits)[:8].tolist(),
                                 "written": out[-12:]})
    return {"tokens": out, "end": end, "steps": steps, "accepted": accepted,
            "drafted": drafted, "siblings": siblings, "rollbacks": rollbacks,
            "wrong_states": wrong, "wrong": evidence, "draft_ns": draft_ns,
            "draft_forwards": forwards,
            "mask_ns": mask_ns // masks if masks else 0, "sizes": sizes}


def run_drafters(grammar: Any, model: Any, prompt: list[int], vocab_size: int,
                 stop_ids: frozenset[int], k: int, budget: int, bitmask: np.ndarray,
                 draft_model: Any = None) -> dict[str, Any]:
    """Every drafter of :data:`DRAFTERS` on one prompt, with the modelled speedups
    (``none``: plain greedy decoding, one token per target step, the baseline; the
    ``model`` drafters only with ``draft_model``, whose forward passes are costed at its
    own measured one-token step)."""
    target = _Target(model, prompt)
    drafter_model = _Target(draft_model, prompt) if draft_model is not None else None
    runs = {d: speculate(grammar, target, vocab_size, stop_ids, d, k, budget, bitmask,
                         drafter_model)
            for d in DRAFTERS if drafter_model is not None or not d.startswith("model")}
    step = {m: target.step_ns(m) for m in sorted({m for r in runs.values() for m in r["sizes"]}
                                                 | {1})}
    draft_step = drafter_model.step_ns(1) if drafter_model is not None else 0
    for r in runs.values():
        r["draft_ns"] += r["draft_forwards"] * draft_step
    base = runs["none"]
    n = max(1, len(base["tokens"]) + (base["end"] == "eos"))
    base_ns = n * (step[1] + base["mask_ns"])
    for r in runs.values():
        r["lossless"] = r["tokens"] == base["tokens"] and r["end"] == base["end"]
    for r in runs.values():
        spec_ns = sum(step[m] * c for m, c in r["sizes"].items()) + r["draft_ns"] \
            + r["mask_ns"] * sum(m * c for m, c in r["sizes"].items())
        r["speedup"] = base_ns / spec_ns if spec_ns else None
        r["output_tokens"] = len(r["tokens"]) + (r["end"] == "eos")
        r["tokens"] = len(r["tokens"])
    return {"k": k, "step_ns": {str(m): v for m, v in step.items()},
            "draft_step_ns": draft_step or None, "drafters": runs}
