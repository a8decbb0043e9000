"""A seeded, length-aware sampling policy and the random walk under an engine's mask.

The policy knows nothing of JSON Schema; it reads only the engine's mask and what each
token does to a 3-state JSON scanner (outside strings / in a string / after a backslash;
:class:`~harness.measure.tokens.maskops.TokenClasses`), tracked along the walk. Its *pressure*
``p = min(1, n / (budget / 2))`` grows with the number of tokens ``n`` emitted so far:

1. if the mask allows EOS, stop with probability ``max(p, 0.05)``;
2. with probability ``p``, prefer tokens that close structures: in a string, allowed tokens
   that leave it (those that also close a container first); outside strings, allowed tokens
   that close a container, else separators (``,`` ``:``: the value ends), else non-blank
   ones that open neither a string nor a container;
   outside strings, opening a string comes before other tokens when the schema has names,
   and a string just opened then spells one of the schema's names (property names, string
   enum values) that the mask allows, token by token (objects that accept any key can only
   be closed once their required keys are there);
3. otherwise pick uniformly among allowed non-whitespace tokens, except with probability
   ``WS_SHARE`` (0.1) uniformly among all allowed tokens (whitespace included).

So walks wander early and close structures as the budget runs out, even where an engine
allows any token inside strings (a closing bracket inside a string closes nothing); one that
still reaches the budget is a *runaway* (the engine kept allowing only tokens that do not
end the document, e.g. endless whitespace or digits). Every draw comes from one ``numpy.random.Generator`` seeded per
walk, so the record's seed and the engine reproduce the walk exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence, TypedDict

import numpy as np

from engines.protocol import Matcher
from harness.measure.tokens.maskops import ESC, IN, OUT, TokenClasses

# Walk statuses
DONE = "done"          # the policy chose EOS (the output is then validated)
DEAD_END = "dead_end"  # the mask allowed nothing (no token, no EOS) before acceptance
RUNAWAY = "runaway"    # the token budget ran out without EOS
REFUSED = "commit_refused"  # the engine refused a token its own mask allowed
ERROR = "error"        # the engine raised

#: share of draws that may pick a whitespace-only token (step 3 of the policy)
WS_SHARE = 0.1


class WalkJson(TypedDict, total=False):
    """A walk as JSON."""

    status: str          # done | dead_end | runaway | commit_refused | error
    tokens: list[int]
    why: str


@dataclass
class Walk:
    """One walk: ``tokens`` are the ids the policy committed (the prefix excluded)."""

    status: str
    tokens: list[int] = field(default_factory=list)
    why: str | None = None

    def to_json(self) -> WalkJson:
        d: WalkJson = {"status": self.status, "tokens": self.tokens}
        if self.why:
            d["why"] = self.why
        return d


def choose(allowed: np.ndarray, eos: bool, n: int, budget: int, tc: TokenClasses,
           rng: np.random.Generator, state: int = OUT, spelling: bool = False) -> int | None:
    """The next token id under the policy, or None for EOS (``allowed``: bool per id;
    ``state``: the JSON scanner state of the text so far, :data:`~maskops.OUT` / ``IN`` /
    ``ESC``; ``spelling``: the schema has names the walk may spell, so opening a string
    comes before whole quoted tokens). Returns -1 when nothing is allowed at all."""
    p = pressure(n, budget)
    if eos and rng.random() < max(p, 0.05):
        return None
    if rng.random() < p and state != ESC:
        end, delta = tc.end[state], tc.delta[state]
        close = allowed & (end == OUT) & (delta < 0)
        if state == IN:  # leave the string, closing containers after it if possible
            prefs: tuple[np.ndarray | None, ...] = (close, allowed & (end == OUT) & (delta <= 0))
        else:  # close a container; else end the value (a separator); else open a string
            # (a name is then spelled in it) rather than take a whole quoted token ("",
            # "#": junk keys); else a token that opens nothing (numbers, literals)
            flat = allowed & (end == OUT) & (delta == 0)
            opens = allowed & tc.opener & (delta == 0) if spelling else None
            prefs = (close, flat & tc.separator, opens, flat & ~tc.space)
        for mask in prefs:
            if mask is None:
                continue
            cand = np.flatnonzero(mask)
            if cand.size:
                return int(cand[rng.integers(cand.size)])
    # whitespace-only tokens are a third of the Llama-3 tokens a JSON gap allows: drawn
    # uniformly they would fill every document with blanks, so they get WS_SHARE of draws
    cand = np.flatnonzero(allowed & ~tc.space) if rng.random() >= WS_SHARE else np.empty(0, int)
    if not cand.size:
        cand = np.flatnonzero(allowed)
    if not cand.size:
        return None if eos else -1
    return int(cand[rng.integers(cand.size)])


def pressure(n: int, budget: int) -> float:
    """The policy's pressure after ``n`` of ``budget`` tokens: 0 → 1 at half the budget."""
    return min(1.0, n / max(1.0, budget / 2))


def scan(tc: TokenClasses, tokens: Sequence[int]) -> tuple[int, int]:
    """JSON scanner state and container depth after ``tokens`` (from the start)."""
    state, depth = OUT, 0
    for t in tokens:
        state, depth = tc.advance(state, depth, t)
    return state, depth


def schema_names(tc: TokenClasses, schema_text: str) -> list[list[int]]:
    """The schema's property names (``properties`` keys, ``required`` entries) and string
    ``enum``/``const`` values, each as its token ids followed by the closing quote's: what
    a string just opened may spell (a key the schema requires, a value it enumerates)."""
    import json

    names: set[str] = set()

    def visit(node) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                names.update(k for k in props if isinstance(k, str))
            for key in ("required", "enum"):
                if isinstance(node.get(key), list):
                    names.update(x for x in node[key] if isinstance(x, str))
            if isinstance(node.get("const"), str):
                names.add(node["const"])
            for v in node.values():
                visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)

    try:
        visit(json.loads(schema_text))
    except ValueError:
        return []
    quote = tc.vocab.encode('"')
    out = []
    for name in sorted(names):  # sorted: the same seed picks the same name on every run
        body = json.dumps(name)[1:-1]
        out.append((tc.vocab.encode(body) if body else []) + quote)
    return out


def walk(matcher: Matcher, bitmask: np.ndarray, tc: TokenClasses, rng: np.random.Generator,
         budget: int, prefix: Sequence[int] = (), names: list[list[int]] | None = None) -> Walk:
    """Extend ``matcher`` (``prefix`` already committed) under its own mask until EOS, a
    dead end, or ``budget`` tokens in all (the prefix included). ``names``: see
    :func:`schema_names`; under pressure, a string just opened spells one of them whose
    first token the mask allows (for keys the engine restricts, only declared ones), token
    by token while the mask allows it."""
    out = Walk(RUNAWAY)
    n = len(prefix)
    state, depth = scan(tc, prefix)
    fresh = False
    plan: list[int] = []
    opener = tc.opener
    assert opener is not None, "TokenClasses.of sets every class"
    try:
        while n < budget:
            matcher.fill_mask(bitmask)
            eos = tc.eos(bitmask)
            allowed = tc.allowed(bitmask)
            tid: int | None = None
            if plan and allowed[plan[0]]:
                tid = plan.pop(0)
            else:
                plan = []
                if fresh and names and rng.random() < pressure(n, budget):
                    cands = [seq for seq in names if allowed[seq[0]]]
                    if cands:
                        plan = list(cands[rng.integers(len(cands))])
                        tid = plan.pop(0)
                if tid is None:
                    tid = choose(allowed, eos, n, budget, tc, rng, state, bool(names))
            if tid is None:
                out.status = DONE
                return out
            if tid < 0:
                out.status = DEAD_END
                out.why = f"empty mask after {n} tokens"
                return out
            out.tokens.append(tid)
            before = state
            state, depth = tc.advance(state, depth, tid)
            fresh = before == OUT and bool(opener[tid])
            if not matcher.commit(tid):
                out.status, out.why = REFUSED, f"token {tid} was in the mask, commit refused it"
                return out
            n += 1
        # the budget is spent: a model would be cut off here, even where EOS is allowed now
        out.why = f"no EOS within {budget} tokens"
    except Exception as e:  # an engine bug surfaced as an exception: a finding
        out.status, out.why = ERROR, " ".join(f"{type(e).__name__}: {e}".split())[:300]
    return out
