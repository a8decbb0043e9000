"""Contexts: a split's context-dependent tokens settled against the live stack.

A state's split (:mod:`reference_engine.splits`) leaves some tokens
*context-dependent*: below a trie node where the walk meets a rule end that must pop a
frame of the real stack, or an object guard that needs the real frame. At run time,
for a configuration ``(state, stack)``, :meth:`Contexts.context` pops or tests the live
stack at those nodes and walks the subtrees below them from the configurations found
there, giving the context-dependent tokens that live (a :class:`WordSet`).

Invariants:

- An entry depends on the split's context-dependent groups (``pops`` and ``guards``)
  and on the stack only: states with equal groups share entries (``groups id``).
- It depends on the stack only down to the deepest stack node the computation touched
  (:meth:`~reference_engine.closure.Configurations.closure_low`): any stack with the
  same top entries down to there gets the same entry; stacks whose top entries differ
  only in object frames get it too where those frames give the same outcome to every
  read the computation made of them (:class:`~reference_engine.frames.FrameReads`).
- The walks it makes depend on (state, trie nodes) only, not on the stack: they are
  memoised apart from the entries (within :data:`CONTEXT_WALK_MEMO`), so a new object
  frame (a new stack per member read) leads back into walks already made.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from reference_engine.maskcache import NodeMask, WordSet, word_set
from reference_engine.frames import FrameReads, frame_ret
from reference_engine.pda import PDA
from reference_engine.stack import EMPTY
from reference_engine.trie import TokenTrie, group_exits
from reference_engine.trie_walk import walk_roots

#: Marks a context work item at a *stop* node (see :meth:`Contexts.context`).
STOP = 2
#: Token ids, exits and nodes (about 8 bytes each) the memo of :meth:`Contexts.context`'s
#: walks may hold per compiled grammar.
CONTEXT_WALK_MEMO = 4_000_000
#: Entries of :meth:`Contexts.context` kept per (groups, top entries that are no
#: frames), each with the outcomes of the frame reads it was computed from
FRAME_SHAPE_ENTRIES = 8
#: a frame entry in those top entries (frame parameters left out)
_FRAME = frame_ret(0)


def _frame_shape(entries: tuple) -> tuple:
    """Stack ``entries`` with each object frame's parameter left out (see FrameReads)."""
    return tuple([e if e >= -1 else _FRAME for e in entries])


class Contexts:
    """The run-time half of the mask cache for one compiled grammar and vocabulary:
    entries per ``(state, stack)`` and the walks they are made of."""

    def __init__(self, pda: PDA, trie: TokenTrie, words: int,
                 node: Callable[[int], NodeMask]):
        self.pda = pda
        self.trie = trie
        self.words = words
        #: the split of a state (the split cache's ``node``)
        self._node = node
        #: (state, stack) -> the entry
        self._ctx: dict[tuple[int, int], WordSet] = {}
        #: per state, the id of its split's context-dependent groups (equal groups,
        #: equal ids: :meth:`context` reads nothing else of the state)
        self._groups_id: dict[int, int] = {}
        self._groups_ids: dict[tuple, int] = {}
        #: (groups id, stack) -> the entry of :meth:`context`
        self._ctx_groups: dict[tuple[int, int], WordSet] = {}
        #: groups id -> entries read -> those top entries -> the entry of :meth:`context`
        self._ctx_tops: dict[int, dict[int, dict[tuple, WordSet]]] = {}
        #: groups id -> entries read -> those top entries with their frames left out ->
        #: [(frame reads and their outcomes, the entry of :meth:`context`)]
        self._ctx_frames: dict[int, dict[int, dict[tuple, list]]] = {}
        self.ctx_frame_shared = 0  # of ctx_shared, served by another frame's entry
        self.ctx_shared = 0  # contexts served by another stack's entry (stats)
        #: walks of :meth:`context` (see _walk_tokens) and token ids at stop nodes
        #: (see _ids_at), within one budget of stored entries
        self._cwalk: dict[tuple, tuple] = {}
        self._cids: dict[tuple, np.ndarray] = {}
        self._cwalk_budget = CONTEXT_WALK_MEMO

    def entries(self) -> dict[tuple[int, int], WordSet]:
        """The entries made so far, per ``(state, stack)`` (shared ones repeated)."""
        return self._ctx

    def memo_bytes(self) -> int:
        """Bytes of the arrays the walk memos hold (containers not counted)."""
        total = 0
        for ids, groups in self._cwalk.values():
            total += ids.nbytes + 8 * sum(len(ns) for _, _, ns in groups)
        total += sum(ids.nbytes for ids in self._cids.values())
        return total

    def context(self, state: int, stack: int) -> WordSet:
        """Context-dependent tokens of ``state`` allowed with the live ``stack``.

        Each context-dependent trie node pops the live stack (after the frames the
        split already popped statically); the subtrees below it are walked from the
        configurations found there, grouped per (state, stack) so that equal
        continuations are walked once. Cached per ``(state, stack)``; shared with
        every state whose split has the same context-dependent groups (``pops`` and
        ``guards``: all the computation reads of the state; the counts of a
        ``maxLength`` string far from its bounds share one split), and with every
        stack whose top entries are the same down to the deepest stack node the
        computation touched
        (:meth:`~reference_engine.closure.Configurations.closure_low`): below it
        nothing was read, so the same computation would follow (the same object
        nested at another place, or reached with other frames further down). Stacks
        whose top entries differ only in object frames share it too where those
        frames give the same outcomes to every read the computation made of them
        (:class:`~reference_engine.frames.FrameReads`: a member's value inside an
        object with other members seen before it)."""
        key = (state, stack)
        got = self._ctx.get(key)
        if got is not None:
            return got
        nm = self._node(state)
        # the computation reads the split's context-dependent groups and the stack,
        # nothing else of the state: states whose splits have equal groups (the counts
        # of a maxLength string far from its bounds, derived splits that keep their
        # reference's groups) share their entries
        gid = self._groups_id.get(state)
        if gid is None:
            gid = self._groups_id[state] = self._groups_ids.setdefault(
                (nm.pops, nm.guards), len(self._groups_ids))
        gkey = (gid, stack)
        got = self._ctx_groups.get(gkey)
        if got is not None:
            self._ctx[key] = got
            self.ctx_shared += 1
            return got
        got = self._context_of_another_stack(gid, stack)
        if got is not None:
            self._ctx[key] = self._ctx_groups[gkey] = got
            self.ctx_shared += 1
            return got
        pda = self.pda
        pool = pda.stacks
        ret, parent, depth = pool.ret, pool.parent, pool.depth
        low = depth[stack]  # the deepest stack node this computation touches
        parts: list[np.ndarray] = []
        # work: (state, stack, popped) -> chunks of trie nodes (each a sorted tuple of
        # distinct nodes); ``popped``: the configuration was reached by a pop, so
        # nothing below these nodes has been walked from it yet
        work: dict[tuple[int, int, bool], list[tuple[int, ...]]] = {}
        for k, ns in nm.pops:
            st = stack
            for _ in range(k):
                if st == EMPTY:
                    break
                st = parent[st]
            if st == EMPTY:
                low = 0  # (its end was read)
                continue  # the document ends here: nothing may follow
            work.setdefault((ret[st], parent[st], True), []).append(ns)
        for k, sg, ns in nm.guards:
            # an object guard (or a frame-dependent state) with the frame on the live
            # stack: the tokens ending here live iff the configuration does; those
            # below are walked from what it leads to
            st = stack
            for _ in range(k):
                st = parent[st]
            work.setdefault((sg, st, STOP), []).append(ns)
        # what the walks read of the live stack's frames (see FrameReads)
        cf = pda.configs
        rec = cf.frame_reads = FrameReads(pool, stack)
        try:
            low = self._context_waves(work, parts, low)
        finally:
            cf.frame_reads = None
        ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        got = word_set(ids, self.words)
        self._ctx[key] = self._ctx_groups[gkey] = got
        if low > 0:
            # nothing at or below depth ``low - 1`` was read: any stack with the same
            # top entries down to depth ``low`` gets this entry (equal computations)
            k = depth[stack] - low + 1
            ents = pool.entries(stack, k)
            self._ctx_tops.setdefault(gid, {}).setdefault(k, {})[ents] = got
            if not rec.opaque:
                cands = self._ctx_frames.setdefault(gid, {}).setdefault(k, {}).setdefault(
                    _frame_shape(ents), [])
                if len(cands) < FRAME_SHAPE_ENTRIES:
                    cands.append((tuple(rec.reads.items()), got))
        return got

    def _context_of_another_stack(self, gid: int, stack: int) -> WordSet | None:
        """An entry of :meth:`context` computed for the groups ``gid`` with another
        stack from which the computation would be the same: one whose top entries, as
        many as that computation read, are ``stack``'s, or differ from them in object
        frames only that give the outcomes that computation read of them (another set
        of members seen: see :class:`~reference_engine.frames.FrameReads`). None if none."""
        pool = self.pda.stacks
        tops = self._ctx_tops.get(gid)
        if tops is not None:
            for k, entries in tops.items():
                got = entries.get(pool.entries(stack, k))
                if got is not None:
                    return got
        shapes = self._ctx_frames.get(gid)
        if shapes is not None:
            viable = self.pda.viable_entry
            for k, table in shapes.items():
                ents = pool.entries(stack, k)
                for reads, got in table.get(_frame_shape(ents), ()):
                    if FrameReads.holds(reads, ents, viable):
                        self.ctx_frame_shared += 1
                        return got
        return None

    def _context_waves(self, work: dict, parts: list, low: int) -> int:
        """The walks of :meth:`context` from its first ``work`` items, in waves: the
        tokens found go to ``parts``; returns the depth of the deepest stack node read
        (``low`` or less)."""
        pda = self.pda
        # configuration -> nodes walked from it (a tuple until it is met again)
        seen: dict[tuple[int, int], tuple[int, ...] | set[int]] = {}
        memo = self._cwalk
        while work:
            # in waves, as in the split's walk: the walks one wave needs share one compiled walk
            wave, work = work, {}
            calls: list[tuple[int, int, tuple[int, ...]]] = []  # (state, stack, nodes)
            for (t, st, popped), chunks in wave.items():
                nodes = chunks[0] if len(chunks) == 1 else tuple(sorted(set().union(*chunks)))
                confs, acc = pda.closure(t, st)
                t_low = pda.closure_low(t, st)
                if t_low < low:
                    low = t_low
                if popped == STOP and (confs or acc):
                    parts.append(self._ids_at(nodes))
                for s2, st2 in confs:
                    if not popped and s2 == t and st2 == st:
                        continue  # the pure continuation, walked by the walk that found the exit
                    done = seen.get((s2, st2))
                    if done is None:
                        todo = seen[(s2, st2)] = nodes
                    else:
                        if done.__class__ is tuple:
                            done = seen[(s2, st2)] = set(done)
                        if done.isdisjoint(nodes):
                            # the usual case (a stop's frontier one byte further on
                            # is all new): a pass in C, not one in Python per node
                            todo = nodes
                        else:
                            todo = tuple([n for n in nodes if n not in done])
                            if not todo:
                                continue
                        done.update(todo)
                    calls.append((s2, st2, todo))
            # most walks are memoised: look them up here, one compiled walk for the rest
            got = [memo.get((s2, todo)) for s2, _, todo in calls]
            if None in got:
                got = self._walk_tokens([(s2, todo) for s2, _, todo in calls])
            for (s2, st2, _), (ids, groups) in zip(calls, got):
                if ids.size:
                    parts.append(ids)
                for t2, kind, ns2 in groups:
                    work.setdefault((t2, st2, kind), []).append(ns2)
        return low

    def _ids_at(self, nodes: tuple[int, ...]) -> np.ndarray:
        """Token ids ending at ``nodes`` (sorted, distinct), memoised like the walks."""
        got = self._cids.get(nodes)
        if got is None:
            got = self.trie.tokens_at(np.array(nodes, dtype=np.int64))
            self._remember(self._cids, nodes, got, got.size + len(nodes))
        return got

    def _remember(self, memo: dict, key, value, entries: int) -> None:
        """Keep ``value`` in one of the context memos if their shared budget allows."""
        cost = entries + 16
        if self._cwalk_budget >= cost:
            self._cwalk_budget -= cost
            memo[key] = value

    def _walk_tokens(self, walks: list[tuple[int, tuple[int, ...]]]) -> list[tuple]:
        """For each ``(state, nodes)`` of ``walks`` (nodes sorted, distinct): the tokens
        alive below ``nodes`` from ``state``, and the walk's exits that :meth:`context`
        follows, grouped as ``(state, STOP or False, nodes)`` (stop states, and exits
        with children; nodes as sorted tuples). The walks not memoised yet run as one
        compiled walk. Memoised: a walk depends on the state and the nodes only, while
        :meth:`context` is keyed by the live stack, and a new object frame (one per
        member read) makes a new stack that usually leads back into the same few walks."""
        memo = self._cwalk
        out = [memo.get(w) for w in walks]
        todo: dict[tuple, list[int]] = {}  # walk -> where it is asked for
        for i, got in enumerate(out):
            if got is None:
                todo.setdefault(walks[i], []).append(i)
        if not todo:
            return out
        trie, pda = self.trie, self.pda
        roots: list[int] = []
        states: list[int] = []
        for state, nodes in todo:
            roots.extend(nodes)
            states.extend([state] * len(nodes))
        alive, a_off, (en, es), e_off = walk_roots(trie, pda, roots, states)
        stop = pda.stop_list
        r0 = 0
        for walk, where in todo.items():
            r1 = r0 + len(walk[1])
            a = alive[a_off[r0]:a_off[r1]]
            ids = trie.tokens_at(a) if a.size else np.zeros(0, dtype=np.int64)
            lo, hi = e_off[r0], e_off[r1]
            groups = tuple((t2, STOP if stop[t2] else False, ns)
                           for t2, ns in group_exits((en[lo:hi], es[lo:hi]),
                                                     trie.child_count32, pda.stopflag))
            got = (ids, groups)
            for i in where:
                out[i] = got
            self._remember(memo, walk, got, ids.size + (hi - lo) + len(walk[1]))
            r0 = r1
        return out

