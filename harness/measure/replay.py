"""The per-token replay loop: the only hot path of the harness.

Per step: time ``fill_mask`` and ``commit`` separately with ``perf_counter_ns``; the
token must be set in the mask AND accepted by the commit. Nothing else happens between
the two clock reads of a timed region; the bookkeeping (list appends, one bit test)
is what ``benchmarks/overhead.py`` measures as the harness's own per-token cost.
"""

from __future__ import annotations

import json
import resource
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from engines.protocol import Matcher
from harness.records import ReplayResult

#: The three serialisations of an instance. ``unicode`` is MaskBench's own choice.
SERIALIZATIONS: dict[str, Callable[[Any], str]] = {
    "ascii": lambda d: json.dumps(d, allow_nan=False),
    "unicode": lambda d: json.dumps(d, ensure_ascii=False, allow_nan=False),
    "compact": lambda d: json.dumps(d, separators=(",", ":"), allow_nan=False),
    # what llguidance's CI replays and XGrammar's own tests write
    "compact_unicode": lambda d: json.dumps(d, separators=(",", ":"), ensure_ascii=False,
                                            allow_nan=False),
}

# Replay statuses.
ACCEPTED = "accepted"      # every token in the mask and committed, then EOS allowed
REJECTED = "rejected"      # some token not in the mask or refused by commit
NO_EOS = "no_eos"          # every token passed but EOS is not allowed at the end
ERROR = "error"            # the engine raised while replaying


@dataclass
class Replay:
    """What one tokenised instance did against one matcher.

    ``mask_ns[i]`` / ``commit_ns[i]``: nanoseconds of the mask fill before token ``i``
    and of committing token ``i``; only steps actually taken are listed (a replay stops
    at the first rejected token, as MaskBench does). ``eos_mask_ns``: the mask fill
    after the last token (the step at which a model would sample EOS).
    """

    status: str
    n_tokens: int
    mask_ns: list[int] = field(default_factory=list)
    commit_ns: list[int] = field(default_factory=list)
    reject_at: int | None = None
    eos_mask_ns: int | None = None
    #: "mask_only" (token in mask, commit refused), "commit_only" (commit took a token
    #: the mask forbids), "eos" (stop bit in mask disagrees with eos_allowed()).
    disagreement: str | None = None
    error: str | None = None

    def to_json(self) -> ReplayResult:
        d: ReplayResult = {"status": self.status, "n_tokens": self.n_tokens,
                           "mask_ns": self.mask_ns, "commit_ns": self.commit_ns}
        d.update(self.verdict_keys(timings=True))
        return d

    def verdict_keys(self, timings: bool = False) -> ReplayResult:
        """The optional keys of a replay result, each only where set and in the records'
        order: ``reject_at``, ``eos_mask_ns`` (only with ``timings``), ``disagreement``,
        ``error``."""
        d: ReplayResult = {}
        if self.reject_at is not None:
            d["reject_at"] = self.reject_at
        if timings and self.eos_mask_ns is not None:
            d["eos_mask_ns"] = self.eos_mask_ns
        if self.disagreement is not None:
            d["disagreement"] = self.disagreement
        if self.error is not None:
            d["error"] = self.error
        return d


def replay(matcher: Matcher, tokens: list[int], bitmask: np.ndarray,
           stop_ids: tuple[int, ...]) -> Replay:
    """Replay ``tokens`` through ``matcher`` and check EOS at the end."""
    clock = time.perf_counter_ns
    fill = matcher.fill_mask
    commit = matcher.commit
    # numpy declares ndarray.__buffer__ for Python >= 3.12 only; an ndarray is a buffer
    words = memoryview(bitmask)  # type: ignore[arg-type]
    mask_ns: list[int] = []
    commit_ns: list[int] = []
    add_mask = mask_ns.append
    add_commit = commit_ns.append
    out = Replay(ACCEPTED, len(tokens), mask_ns, commit_ns)
    try:
        for i, tid in enumerate(tokens):
            t0 = clock()
            fill(bitmask)
            t1 = clock()
            ok = commit(tid)
            t2 = clock()
            add_mask(t1 - t0)
            add_commit(t2 - t1)
            if not ok or not (words[tid >> 5] >> (tid & 31)) & 1:
                in_mask = bool((words[tid >> 5] >> (tid & 31)) & 1)
                out.status, out.reject_at = REJECTED, i
                if in_mask != bool(ok):
                    out.disagreement = "mask_only" if in_mask else "commit_only"
                return out
        t0 = clock()
        fill(bitmask)
        out.eos_mask_ns = clock() - t0
        eos_in_mask = any((words[s >> 5] >> (s & 31)) & 1 for s in stop_ids)
        eos_ok = matcher.eos_allowed()
        if eos_in_mask != eos_ok:
            out.disagreement = "eos"
        if not eos_ok:
            out.status = NO_EOS
    except Exception as e:  # an engine bug surfaced as an exception: a finding, not a crash
        out.status = ERROR
        out.error = " ".join(f"{type(e).__name__}: {e}".split())[:300]
    return out


def preemptions() -> int | None:
    """Involuntary context switches of the calling thread so far (Linux; None elsewhere).

    A switch while a timed step runs stretches that step by the time the thread waits for
    a CPU (a scheduler slice, milliseconds): the machine's time, not the engine's. Read
    before and after a job's timed replays (never inside the loop: it is a system call),
    the difference bounds how many of their steps hold such a wait; a record keeps it as
    ``preempted`` and :func:`harness.measure.figures.preemption` judges a percentile by it.
    """
    who = getattr(resource, "RUSAGE_THREAD", None)
    return None if who is None else resource.getrusage(who).ru_nivcsw
