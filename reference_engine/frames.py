"""Object frames: how an object's members seen ride on the stack, and who reads them.

An object body's parameter (which declared members it has seen, and where needed
extra-member counts: see :class:`~reference_engine.nfa._ObjectLogic`) is kept in a
*frame* entry on the configuration's stack, not in the automaton's states, so the
states of a body are shared by every set of members seen. This module holds the
frame's encoding (:func:`frame_ret` / :func:`frame_param`: frames are the stack entries
below -1), the guard edges that read or rewrite it (:class:`Guard`), and the record of
what one computation read of a live stack's frames (:class:`FrameReads`), which lets
a cached context serve another stack whose frames answer those reads alike.

Invariant: a guard is a pure function of the frame's parameter, so any read can be
replayed against another frame (:meth:`FrameReads.holds`).
"""

from __future__ import annotations

from typing import Callable

from reference_engine.stack import StackPool


class Guard:
    """An epsilon edge of an object body that reads or rewrites the object's frame.

    The object's parameter (the members seen, see :class:`_ObjectLogic`) lives in a
    *frame* on the stack, not in the automaton states, so that the states of a body
    are shared by every set of members seen (a 50-member object has a few hundred
    states, not one set per member added). ``kind``: ``open`` pushes a frame holding
    0 (the body starts), ``set`` replaces the top frame's parameter ``p`` by
    ``act(p)``, ``close`` pops it (the body ends); ``act`` returning None blocks the
    edge. ``total``: ``act`` never blocks (it only rewrites the parameter), so the
    states before the guard live whatever the frame holds. ``keeps``: ``act`` returns
    ``p`` itself or None (it only decides; the frame is the same node after it)."""

    __slots__ = ("kind", "act", "label", "total", "keeps")

    def __init__(self, kind: str, act: Callable[[int], int | None] | None, label: str,
                 total: bool = False, keeps: bool = False):
        self.kind = kind
        self.act = act
        self.label = label
        self.total = total
        self.keeps = keeps

    def __call__(self, p: int) -> int | None:
        return self.act(p)

    def after(self, p: int) -> tuple[int, ...] | None:
        """The stack entries that replace the top frame (parameter ``p``) once the
        guard is passed: none for ``close``, the new frame for ``set``; None if it
        blocks. (``open`` reads no frame: it pushes ``frame_ret(0)``.)"""
        p2 = self.act(p)
        if p2 is None:
            return None
        return () if self.kind == "close" else (frame_ret(p2),)

    def __repr__(self) -> str:
        return f"Guard({self.label})"


OPEN = Guard("open", None, "open")


def frame_ret(p: int) -> int:
    """The stack entry of an object frame with parameter ``p`` (return states are
    ``>= 0``, the empty stack's sentinel is -1)."""
    return -2 - p


def frame_param(ret: int) -> int:
    return -2 - ret


def any_passes(guards: tuple, p: int) -> bool:
    """Does one of ``guards`` let a frame with parameter ``p`` through?"""
    return any(g.act(p) is not None for g in guards)


class FrameReads:
    """What one computation from a live stack read of that stack's object frames.

    The automaton reads a frame's parameter in two places only: a guard passed with
    the frame on top (:meth:`~reference_engine.closure.Configurations.pass_guard`)
    and a stop's viability (:meth:`~reference_engine.closure.Configurations.viable`);
    :meth:`~reference_engine.closure.Configurations.closure` reports each read (its
    memo keeps them with its entries). Each read of a frame of the live stack is kept as ``(index from
    the top, guard or guards tuple) -> outcome``. A frame pushed inside the computation
    (an ``open`` guard, and what follows from it) is the same whatever the live stack
    holds. A frame a guard rewrites from a live one (``add``: a derived frame) holds a
    value the reads kept do not fix: reading it, or a rewrite that lands on a frame of
    the live stack itself, makes the computation ``opaque``.

    Otherwise the computation depends on the live stack through these outcomes and its
    entries that are no frames only: from any stack with the same entries that are no
    frames, down to as deep as it went, and frames giving the same outcomes, it would
    take the same steps (equal configurations met again merge in one and split in the
    other, which changes what is walked twice, not what is found)."""

    __slots__ = ("pool", "top", "path", "reads", "derived", "opaque")

    def __init__(self, pool: StackPool, stack: int) -> None:
        self.pool = pool
        self.top = pool.depth[stack]
        self.path = [stack]  # the live stack's nodes from the top down, as far as read
        self.reads: dict[tuple[int, object], bool] = {}
        self.derived: set[int] = set()
        self.opaque = False

    def _index(self, st: int) -> int:
        """``st``'s index from the top of the live stack, -1 if it is not one of its nodes."""
        i = self.top - self.pool.depth[st]
        if i < 0:
            return -1
        path, parent = self.path, self.pool.parent
        while len(path) <= i:
            path.append(parent[path[-1]])
        return i if path[i] == st else -1

    def note(self, st: int, query, result) -> None:
        """A read of the frame atop ``st``: ``query`` a :class:`Guard` (``result``: the
        stack after it, None if it blocks) or a guards tuple (``result``: viable)."""
        if self.opaque:
            return
        if st in self.derived:
            self.opaque = True
            return
        i = self._index(st)
        if i < 0:
            return  # a frame pushed inside the computation
        if query.__class__ is Guard:
            self.reads[(i, query)] = result is not None
            if result is not None and query.kind == "set" and not query.keeps:
                if self._index(result) >= 0:
                    self.opaque = True  # the rewrite landed on a frame of the live stack
                else:
                    self.derived.add(result)
        else:
            self.reads[(i, query)] = result

    @staticmethod
    def holds(reads: tuple, entries: tuple, viable) -> bool:
        """Do the frames among ``entries`` (a stack's top entries, top first) give the
        outcomes ``reads`` (:attr:`reads`' items) kept? ``viable(guards, entry)``."""
        for (i, q), out in reads:
            if q.__class__ is Guard:
                if (q.act(frame_param(entries[i])) is not None) != out:
                    return False
            elif viable(q, entries[i]) != out:
                return False
        return True
