"""The template matcher: the promises of :class:`engines.protocol.Matcher`, kept once.

Every engine-backed matcher keeps the same promises whatever its engine does: a caller's
bitmask is checked once per array object; a rejected token leaves the matcher *dead*
until :meth:`~TemplateMatcher.reset` (an all-zero mask, no EOS, no rollback), whether the
engine's own state is unchanged, sticky or broken; a stop id is never forwarded to the
engine (engines print warnings, raise, terminate or forget it for rollback) and is
accepted, changing nothing, exactly when the grammar can end; a rollback is checked
against the tokens committed since the last reset before the engine is touched.

:class:`BoundMatcher`
    the bitmask binding alone: :meth:`~BoundMatcher.fill_mask` checks a new bitmask
    (:func:`engines.bitmask.check_bitmask`), keeps it alive (and its address in ``_ptr``
    where the engine writes through a pointer), then calls ``_fill``. For an engine that
    keeps the rest of the contract itself (the reference engine).
:class:`TemplateMatcher`
    the binding, the dead flag, the stop-id commit and the rollback count, around the
    steps a subclass writes on its engine's own matcher:

    ======================  ==========================================================
    ``_fill(bitmask)``      write the live matcher's mask into the bound bitmask
    ``_advance(token_id)``  consume a token that is neither a stop id nor refused;
                            False when the engine refuses it
    ``_can_end()``          the grammar can end here (the engine's answer)
    ``_restart()``          the engine back at its start state
    ``_undo(n)``            roll the engine back by ``n`` (already checked; default:
                            ValueError, no rollback)
    ``_stop_allowed(id)``   whether committing stop id ``id`` is accepted (default:
                            ``_can_end()``)
    ======================  ==========================================================

    A step may kill the matcher (``self._dead = True``) when the engine reports an error.
    The built-in adapters' batch fillers read ``_dead`` too.
"""

from __future__ import annotations

import abc
from typing import ClassVar, Sequence

import numpy as np

from engines.bitmask import check_bitmask
from engines.protocol import Matcher, check_rollback

__all__ = ["BoundMatcher", "TemplateMatcher"]


class BoundMatcher(Matcher):
    """A matcher whose :meth:`fill_mask` checks each new bitmask object once.

    ``_words`` is the bitmask's length in words; after the first fill with a bitmask,
    ``_bm`` holds it, alive, so that ``_ptr``, its data address (kept where
    :attr:`by_pointer`), stays valid for engines that write through a raw pointer."""

    __slots__ = ("_words", "_bm", "_ptr")

    #: True: the engine writes the mask through a raw pointer, ``_ptr`` (taking it costs
    #: about a microsecond, once per bitmask object, inside the first timed mask).
    by_pointer: ClassVar[bool] = False

    def __init__(self, words: int) -> None:
        self._words = words
        self._bm: np.ndarray | None = None
        self._ptr = 0

    def fill_mask(self, bitmask: np.ndarray) -> None:
        if bitmask is not self._bm:
            self._bind(bitmask)
        self._fill(bitmask)

    def _bind(self, bitmask: np.ndarray) -> None:
        """Check ``bitmask`` (ValueError unless a C-contiguous 1-D int32 array of
        ``_words``: some engines would fill a strided view as if it were contiguous) and
        keep it and its address."""
        check_bitmask(bitmask, self._words)
        if self.by_pointer:
            self._ptr = bitmask.ctypes.data
        self._bm = bitmask

    @abc.abstractmethod
    def _fill(self, bitmask: np.ndarray) -> None:
        """Write the mask into the bound ``bitmask``."""


class TemplateMatcher(BoundMatcher):
    """The contract's bookkeeping around an engine's own matcher (see the module doc).

    ``stop_ids`` are the vocabulary's stop ids (``_stop``). ``nontext`` are the ids never
    forwarded to the engine: the stop ids and those refused outright (e.g. special ids an
    engine would print warnings for); default: the stop ids. Both are frozensets built
    once per adapter, not per matcher (a matcher's creation is timed). A token in neither
    goes to :meth:`_advance`. ``_n`` counts the tokens committed since the start or the
    last reset (stop ids are not counted: they change no state).
    """

    __slots__ = ("_stop", "_nontext", "_n", "_dead")

    def __init__(self, words: int, stop_ids: frozenset[int],
                 nontext: frozenset[int] | None = None) -> None:
        super().__init__(words)
        self._stop = stop_ids
        self._nontext = stop_ids if nontext is None else nontext
        self._n = 0
        self._dead = False

    # ---------------------------------------------------------------- the contract

    def fill_mask(self, bitmask: np.ndarray) -> None:
        """The engine's mask (:meth:`_fill`); all zeros on a dead matcher.

        Raises
        ------
        ValueError
            When ``bitmask`` is a new array object of another dtype, shape or layout."""
        if bitmask is not self._bm:
            self._bind(bitmask)
        if self._dead:
            bitmask.fill(0)
            return
        self._fill(bitmask)

    def commit(self, token_id: int) -> bool:
        """True when the token is accepted: a stop id exactly when :meth:`_stop_allowed`
        (the state is unchanged: the sequence is over), a refused id never, any other id
        when the engine's :meth:`_advance` takes it. False on a dead matcher and for every
        token it refuses, which leaves it dead."""
        # kept in one piece (a commit is timed per token); the batch fillers' halves,
        # _commit_outside and _engine_answered below, give the same answers
        if self._dead:
            return False
        if token_id in self._nontext:  # never forwarded to the engine
            if token_id in self._stop and self._stop_allowed(token_id):
                return True
        elif self._advance(token_id):
            self._n += 1
            return True
        self._dead = True
        return False

    def eos_allowed(self) -> bool:
        """False on a dead matcher, else the engine's :meth:`_can_end`."""
        return not self._dead and self._can_end()

    def rollback(self, n: int) -> None:
        """Undo the last ``n`` committed tokens through :meth:`_undo`.

        Raises
        ------
        ValueError
            Before the engine is touched, when ``n`` is negative, larger than the tokens
            committed since the last reset, or the matcher is dead
            (:func:`~engines.protocol.check_rollback`); from :meth:`_undo`, for an engine
            that cannot go back that far."""
        check_rollback(n, self._n, self._dead)
        if n:
            self._undo(n)
            self._n -= n

    def reset(self) -> None:
        """:meth:`_restart`, then alive with nothing committed."""
        self._restart()
        self._n = 0
        self._dead = False

    # ------------------------------------------------ batch commits (engines.batch)

    def _commit_outside(self, token_id: int) -> bool | None:
        """The first half of :meth:`commit`, for a batch filler that hands the engine's
        own matchers their tokens together: the answer when the engine is not asked (a
        dead matcher, a stop id, a refused id: the same answers and the same dead flag as
        :meth:`commit`), else None: the engine must advance ``token_id``, and its answer
        goes to :meth:`_engine_answered`."""
        if self._dead:
            return False
        if token_id in self._nontext:  # never forwarded to the engine
            if token_id in self._stop and self._stop_allowed(token_id):
                return True
            self._dead = True
            return False
        return None

    def _engine_answered(self, accepted: bool) -> bool:
        """The second half of :meth:`commit`: count an accepted token, or leave the
        matcher dead; returns ``accepted``."""
        if accepted:
            self._n += 1
            return True
        self._dead = True
        return False

    # --------------------------------------------------------------- engine steps

    @abc.abstractmethod
    def _advance(self, token_id: int) -> bool:
        """Consume one token (neither a stop id nor refused); False: the engine refuses
        it (the matcher is then dead, whatever state the engine is left in)."""

    @abc.abstractmethod
    def _can_end(self) -> bool:
        """True iff the grammar can end here (called on a live matcher only)."""

    @abc.abstractmethod
    def _restart(self) -> None:
        """The engine back at its start state (``_dead`` still says whether a token was
        rejected, for engines that cannot recover from it)."""

    def _undo(self, n: int) -> None:
        """Roll the engine back by ``n`` tokens (``0 < n <= _n``, alive); this default
        has no rollback."""
        raise ValueError(f"{type(self).__name__}: the engine cannot roll back")

    def _stop_allowed(self, token_id: int) -> bool:
        """Whether committing stop id ``token_id`` is accepted here: :meth:`_can_end`."""
        return self._can_end()

    # ------------------------------------------------------------------- helpers

    def _draft_ids(self, tokens: Sequence[int]) -> list[int]:
        """``tokens`` as ints, cut before the first id outside the bitmask (engines index
        their tables with it), for a :meth:`validate_draft` of the engine's own."""
        ids = [int(t) for t in tokens]
        limit = self._words * 32
        for i, t in enumerate(ids):
            if not 0 <= t < limit:
                return ids[:i]
        return ids
