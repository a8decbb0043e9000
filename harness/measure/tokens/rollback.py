"""The rollback check of the token-level suites: commit a valid instance, roll back k
tokens, replay them, and compare every mask bit for bit with the first pass (``mask-diff``
runs it on every accepted instance; ``harness explain`` runs it again on one)."""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from harness.measure.tokens.maskops import raw_digest

__all__ = ["rollback_checks"]


class RollbackCheck(TypedDict, total=False):
    """One ``rollback(k)`` check."""

    k: int               # tokens rolled back
    status: str          # identical | differs | refused
    at: int              # differs: the step whose mask differs (or whose token is refused)
    why: str
    error: str           # refused: what the engine raised (one line)


def rollback_checks(m, tokens: list[int], bm: np.ndarray, raw: list[str]) -> list[RollbackCheck]:
    """Commit all tokens, then for each k: ``rollback(k)`` and replay the last k tokens;
    every mask must equal (all bits) the one seen at the same step the first time."""
    n = len(tokens)
    for t in tokens:
        if not m.commit(t):
            return [{"k": 0, "status": "differs", "why": "the replay before rollback was refused"}]
    out: list[RollbackCheck] = []
    for k in sorted({1, 2, min(n, 8), n}):
        if k < 1 or k > n:
            continue
        try:
            m.rollback(k)
        except (ValueError, RuntimeError) as e:
            out.append({"k": k, "status": "refused", "error": " ".join(str(e).split())[:200]})
            continue
        r: RollbackCheck = {"k": k, "status": "identical"}
        for j in range(n - k, n + 1):
            m.fill_mask(bm)
            if raw_digest(bm) != raw[j]:
                r.update({"status": "differs", "at": j})
                break
            if j < n and not m.commit(tokens[j]):
                r.update({"status": "differs", "at": j,
                          "why": "replayed token refused after rollback"})
                break
        out.append(r)
        if r["status"] != "identical":
            break  # the matcher's state is no longer known: stop here
    return out
