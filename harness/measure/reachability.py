"""Two kinds of false reject: the engine cannot write the text, or only refused this tokenisation.

A replay feeds an engine one tokenisation of a valid text: the tokenizer's canonical one.
When the engine refuses it, two very different things may be wrong:

``unwritable``    no tokenisation of the text's bytes is accepted: at every way of cutting
                  them into tokens the mask excludes a token or EOS is refused at the end.
                  A model constrained by this engine can never write this valid string.
``tokenization``  this tokenisation is refused but another one is accepted (every token
                  mask-allowed and committed, EOS allowed at the end): the mask excludes a
                  valid next token, yet the string stays reachable. The accepted token ids
                  are kept as the witness (``reachable_tokens``).
``undecided``     the search spent its budget of engine calls (or the engine raised)
                  before it could say.

:func:`search` decides it from the engine's own state, never from a model of the grammar:
at byte position ``p`` the candidates are the vocabulary's ordinary tokens whose bytes
are a prefix of the rest and leave a rest that can still be spelled
(:meth:`harness.measure.segment.TokenIndex.lattice`), kept when the engine's mask allows
them; each is committed, searched from, and rolled back (``Matcher.rollback``; where the
engine refuses a rollback, a fresh matcher replays the path). Candidates are tried longest
first. A byte position from which the search failed once is never searched again: the
engines' states after a prefix depend on its bytes, not on how they were cut (true of
every engine here: their automata and parsers read bytes), so another path to the same
position fails the same way. Every ``fill_mask``, ``commit``, ``rollback`` and
``eos_allowed`` counts as one engine call against the budget, so the search always ends.

It runs only after a rejection, outside every timed region: the per-token replay loop
(:mod:`harness.measure.replay`) is untouched. :func:`classify` writes the outcome into a
replay result (``reject_kind``, ``reachable_tokens``, ``reach_calls``, ``reach_why``);
:class:`Budget` bounds the calls per instance and per job (and the job's seconds, so a
job never runs into its wall-clock limit because of the check).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.records import ReplayResult

__all__ = ["KINDS", "TOKENIZATION", "UNDECIDED", "UNWRITABLE", "Budget", "Reach",
           "classify", "search"]

UNWRITABLE = "unwritable"
TOKENIZATION = "tokenization"
UNDECIDED = "undecided"
#: the kinds, in the order they are reported
KINDS = (UNWRITABLE, TOKENIZATION, UNDECIDED)

#: engine calls one search may spend
CALLS_PER_INSTANCE = 20_000
#: engine calls all the searches of one job may spend together
CALLS_PER_JOB = 200_000
#: seconds all the searches of one job may spend together
SECONDS_PER_JOB = 15.0


class _OutOfBudget(Exception):
    pass


@dataclass
class Budget:
    """What the searches of one job may still spend (see the module constants)."""

    calls_per_instance: int = CALLS_PER_INSTANCE
    calls_left: int = CALLS_PER_JOB
    seconds_left: float = SECONDS_PER_JOB

    def exhausted(self) -> str | None:
        """Why no search may start any more (None: one may)."""
        if self.calls_left <= 0:
            return f"the job's budget of {CALLS_PER_JOB:,} engine calls is spent"
        if self.seconds_left <= 0:
            return f"the job's {SECONDS_PER_JOB:g} s for this check are spent"
        return None


@dataclass
class Reach:
    """The outcome of one :func:`search`."""

    kind: str
    #: the accepted tokenisation (``tokenization`` only)
    tokens: list[int] | None = None
    calls: int = 0
    why: str | None = None
    #: byte positions from which no accepted tokenisation goes on (memoised)
    dead_ends: set[int] = field(default_factory=set)


class _Walker:
    """A matcher along a path of committed tokens, counting engine calls."""

    def __init__(self, grammar, limit: int, deadline: float | None) -> None:
        self.grammar = grammar
        self.limit = limit
        self.deadline = deadline
        self.calls = 0
        self.path: list[int] = []
        self.m = grammar.matcher()

    def spend(self, n: int = 1) -> None:
        self.calls += n
        if self.calls > self.limit:
            raise _OutOfBudget(f"over the budget of {self.limit:,} engine calls")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _OutOfBudget("over the job's time for this check")

    def fill(self, bm: np.ndarray) -> None:
        self.spend()
        self.m.fill_mask(bm)

    def commit(self, tid: int) -> bool:
        self.spend()
        if self.m.commit(tid):
            self.path.append(tid)
            return True
        self._rebuild()  # the matcher is dead: back to the path's state
        return False

    def eos_allowed(self) -> bool:
        self.spend()
        return bool(self.m.eos_allowed())

    def undo(self) -> None:
        self.spend()
        self.path.pop()
        try:
            self.m.rollback(1)
        except (ValueError, RuntimeError):  # no rollback (or not this far): replay the path
            self._rebuild()

    def _rebuild(self) -> None:
        self.spend(1 + len(self.path))
        self.m = self.grammar.matcher()
        for t in self.path:
            if not self.m.commit(t):
                raise RuntimeError(f"a fresh matcher refused token {t} of a path the "
                                   "engine had accepted")


def search(grammar, vocab, text: str, bitmask: np.ndarray,
           limit: int = CALLS_PER_INSTANCE, seconds: float | None = None) -> Reach:
    """Is any tokenisation of ``text`` accepted by ``grammar``'s matchers (every token
    mask-allowed and committed, then EOS allowed)? At most ``limit`` engine calls and
    ``seconds`` (None: no limit) before it says ``undecided``. See the module docstring."""
    from harness.measure.segment import SegmentationError, token_index

    data = text.encode("utf-8")
    n = len(data)
    try:
        lattice = token_index(vocab).lattice(data)
    except SegmentationError as e:
        return Reach(UNWRITABLE, why=f"no ordinary tokens spell it: {e}")
    # numpy declares ndarray.__buffer__ for Python >= 3.12 only; an ndarray is a buffer
    words = memoryview(bitmask)  # type: ignore[arg-type]
    w = _Walker(grammar, limit, None if seconds is None else time.monotonic() + seconds)
    dead: set[int] = set()

    def allowed(pos: int) -> list[tuple[int, int]]:
        w.fill(bitmask)
        cands = [(length, tid) for length, tid in lattice[pos]
                 if pos + length not in dead and (words[tid >> 5] >> (tid & 31)) & 1]
        cands.sort(key=lambda c: -c[0])  # longest first
        return cands

    try:
        if n == 0:
            ok = w.eos_allowed()
            return Reach(TOKENIZATION if ok else UNWRITABLE, [] if ok else None, w.calls)
        # frames of the depth-first search: (byte position, its candidates, next to try)
        frames: list[list[Any]] = [[0, allowed(0), 0]]
        while frames:
            frame = frames[-1]
            pos, cands, k = frame
            if k >= len(cands):
                dead.add(pos)
                frames.pop()
                if frames:
                    w.undo()
                continue
            frame[2] = k + 1
            length, tid = cands[k]
            nxt = pos + length
            if nxt in dead or not w.commit(tid):
                continue
            if nxt == n:
                if w.eos_allowed():
                    return Reach(TOKENIZATION, list(w.path), w.calls, dead_ends=dead)
                dead.add(n)  # every path to the end ends in the same state
                w.undo()
                continue
            frames.append([nxt, allowed(nxt), 0])
        return Reach(UNWRITABLE, calls=w.calls, dead_ends=dead)
    except _OutOfBudget as e:
        return Reach(UNDECIDED, calls=w.calls, why=str(e))
    except Exception as e:  # an engine raising is a finding of its own, not a verdict
        return Reach(UNDECIDED, calls=w.calls,
                     why=" ".join(f"the engine raised {type(e).__name__}: {e}".split())[:300])


def classify(res: ReplayResult, grammar, vocab, text: str, bitmask: np.ndarray,
             budget: Budget) -> ReplayResult:
    """Write the kind of the false reject ``res`` (a replay result of the valid ``text``
    that was not accepted) into it: ``reject_kind``, ``reachable_tokens`` (the witness of
    ``tokenization``), ``reach_calls`` and, where there is one, ``reach_why``. Spends
    ``budget``. Returns ``res``."""
    spent = budget.exhausted()
    if spent is not None:
        res.update({"reject_kind": UNDECIDED, "reach_calls": 0, "reach_why": spent})
        return res
    t0 = time.monotonic()
    r = search(grammar, vocab, text, bitmask, min(budget.calls_per_instance, budget.calls_left),
               budget.seconds_left)
    budget.calls_left -= r.calls
    budget.seconds_left -= time.monotonic() - t0
    res["reject_kind"] = r.kind
    res["reach_calls"] = r.calls
    if r.tokens is not None and r.kind == TOKENIZATION:
        res["reachable_tokens"] = r.tokens
    if r.why:
        res["reach_why"] = r.why
    return res
