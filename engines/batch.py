"""Batch steps: the masks of several sequences into the rows of one ``[B, W]`` bitmask,
and one token committed to each of them.

:class:`BatchFiller` is what :meth:`engines.protocol.EngineAdapter.batch_filler` returns
by default (a thread pool over :meth:`~engines.protocol.Matcher.fill_mask`, and
:meth:`~engines.protocol.Matcher.commit` one by one); engines with a native batch API return a
subclass, so that a caller never asks which engine it holds.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, Sequence

import numpy as np

__all__ = ["BatchFiller", "BatchMatcher", "default_fill_threads"]


class BatchMatcher(Protocol):
    """What a batch step asks of a matcher: the two methods of
    :class:`engines.protocol.Matcher` it calls. Named here rather than imported, so that
    this module sits below the protocol (which returns a :class:`BatchFiller`) with no
    import back up, not even a type-only one."""

    def fill_mask(self, bitmask: np.ndarray) -> None: ...

    def commit(self, token_id: int) -> bool: ...


class BatchFiller:
    """Fills the masks of several sequences into the rows of one ``[B, W]`` int32 bitmask
    (:meth:`fill`) and commits one token to each (:meth:`commit`).

    This default calls each matcher's :meth:`Matcher.fill_mask` on a thread pool of
    ``threads`` (the engines release the GIL while filling) and :meth:`Matcher.commit`
    one by one; an engine with a native batch API (xgrammar's ``BatchGrammarMatcher``,
    llguidance's ``fill_next_token_bitmask_par`` and ``consume_token_par``) overrides
    :meth:`EngineAdapter.batch_filler` with its own. ``method`` names what filled the
    masks, ``commit_method`` what committed the tokens.
    """

    method = "thread pool"
    commit_method = "one by one"

    def __init__(self, threads: int) -> None:
        self.threads = max(1, int(threads))
        self._pool = (ThreadPoolExecutor(self.threads, thread_name_prefix="fill")
                      if self.threads > 1 else None)
        self._rows: tuple[int, list[np.ndarray]] | None = None

    def _row_views(self, bitmask: np.ndarray) -> list[np.ndarray]:
        # the same row objects every step: adapters check a bitmask once per object
        if self._rows is None or self._rows[0] != id(bitmask):
            self._rows = (id(bitmask), [bitmask[i] for i in range(bitmask.shape[0])])
        return self._rows[1]

    def fill(self, matchers: Sequence[BatchMatcher], bitmask: np.ndarray,
             rows: Sequence[int]) -> None:
        """Write ``matchers[i]``'s mask into ``bitmask[rows[i]]`` for every ``i``."""
        views = self._row_views(bitmask)
        if self._pool is None or len(matchers) < 2:
            for m, r in zip(matchers, rows):
                m.fill_mask(views[r])
            return
        for _ in self._pool.map(lambda mr: mr[0].fill_mask(views[mr[1]]), zip(matchers, rows)):
            pass

    def commit(self, matchers: Sequence[BatchMatcher], tokens: Sequence[int]) -> list[bool]:
        """Commit ``tokens[i]`` to ``matchers[i]`` for every ``i``; each answer is what
        :meth:`Matcher.commit` answers (False: refused, the matcher is then dead).

        This default commits one by one on the calling thread, as a server's loop does: a
        commit costs about a microsecond and the engines without a batch API keep the GIL
        while committing, so a pool would only add its hand-offs (measured: 7 ms p99 for 64
        outlines-core commits on two threads against 0.1 ms in a loop)."""
        return [m.commit(int(t)) for m, t in zip(matchers, tokens)]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def default_fill_threads(batch: int) -> int:
    """Threads for a batch fill: one per sequence, at most one per CPU core."""
    return max(1, min(int(batch), os.cpu_count() or 1))
