"""Splits: the vocabulary divided per automaton state, cached for the grammar's life.

For each DFA state the vocabulary is split once into tokens accepted whatever the
stack holds, rejected whatever it holds, and the context-dependent rest, grouped by
the trie nodes where they wait on the stack (a :class:`NodeMask`). :class:`Splits`
owns that cache and decides how an entry is made, cheapest first:

1. shared with a state of the same :meth:`Splits.mask_key` (length counters far from
   their bounds behave alike), or with its :meth:`Splits.unwindowed_state` twin;
2. derived from another state's split (:mod:`reference_engine.derive`);
3. walked in full (:mod:`reference_engine.split_walk`).

Invariant: whichever way, the entry is the one the full walk gives (accepted set bit
for bit; context-dependent groups covering the same tokens), so masks do not depend
on the order in which states are met. Entries are never evicted: the matcher reads
``nodes`` directly on its hot path.
"""

from __future__ import annotations

from reference_engine.derive import Derivations
from reference_engine.maskcache import Census, NodeMask
from reference_engine.pda import PDA
from reference_engine.split_walk import SplitWalker
from reference_engine.trie import TokenTrie


class Splits:
    """The split cache of one compiled grammar and vocabulary (shared by its matchers,
    under the mask computer's lock)."""

    def __init__(self, pda: PDA, trie: TokenTrie, words: int):
        self.pda = pda
        self.trie = trie
        self.words = words
        #: state -> its split (several states may share one entry, see mask_key)
        self.nodes: dict[int, NodeMask] = {}
        self._census: dict[int, Census] = {}
        self._by_key: dict[frozenset, NodeMask] = {}
        self.shared = 0  # states served by another state's entry (see mask_key)
        self.unwindowed = 0  # nodes whose split is their unwindowed twin's (stats)
        self.walker = SplitWalker(pda, trie, words)
        self.derive = Derivations(pda, trie, words, self.walker, self.node)

    def mask_key(self, state: int) -> int | frozenset:
        """A key equal for states whose masks are equal: the state's NFA items with
        each length counter that is far from its bound replaced by ``-1``.

        A counter ``cnt`` of a code-point fragment with window ``[lo, hi]`` only matters
        through the checks ``cnt >= lo`` and the remaining budget ``hi - cnt``. Within
        one token (at most ``trie.maxlen`` bytes, so at most that many characters) a
        counter with ``cnt >= lo`` and ``hi - cnt >= trie.maxlen + reach`` never meets
        the bound nor changes a feasibility answer (no live DFA state needs more than
        :attr:`~reference_engine.fragments.FragClass.reach` characters to acceptance), so
        all such counters behave alike. Without this, a ``maxLength: 2048`` string
        costs one trie walk per position."""
        pda = self.pda
        far = self.trie.maxlen
        changed = False
        items = []
        for it in pda.items[state]:
            if len(it) == 5:
                f, d, dec, cnt, p = it
                fc = pda.frag_class[f]
                if fc.hi is not None and cnt >= fc.lo and fc.hi - cnt >= far + fc.reach:
                    it = (f, d, dec, -1, p)
                    changed = True
            items.append(it)
        return frozenset(items) if changed else state

    def unwindowed_state(self, mkey: frozenset) -> int:
        """The state of :meth:`mask_key`'s items with each far counter's fragment item
        moved to the fragment's :meth:`~reference_engine.nfa.NFA.unwindowed` twin at
        count 0 (or -1 for none: a key fragment's counter, left to its own walk).

        It has the same mask: with ``cnt >= lo`` both leave the string at the same
        bytes (the window's minimum is met), and no token reaches the maximum or
        changes a feasibility answer (see :meth:`mask_key`); the item set stays
        closed, since a far counter may end the string exactly where its twin may."""
        pda = self.pda
        items = []
        for it in mkey:
            if len(it) == 5 and it[3] == -1:
                f, d, dec, _, p = it
                if f in pda.key_frags:
                    return -1
                it = (pda.unwindowed(f), d, dec, 0, p)
            items.append(it)
        return pda._intern(frozenset(items))

    def node(self, state: int) -> NodeMask:
        """The cached three-way split of the vocabulary at ``state`` (built on first use)."""
        got = self.nodes.get(state)
        if got is not None:
            return got
        mkey = self.mask_key(state)
        if mkey != state:
            got = self._by_key.get(mkey)
            if got is not None:
                self.nodes[state] = got
                self.shared += 1
                return got
            twin = self.unwindowed_state(mkey)
            if twin >= 0:
                got = self.node(twin)
                self.nodes[state] = self._by_key[mkey] = got
                self.unwindowed += 1
                return got
        got = self._split(state)
        self.nodes[state] = got
        if mkey != state:
            self._by_key[mkey] = got
        self.derive.note_split(state)
        return got

    def census(self, state: int) -> Census:
        """The :class:`Census` of ``state``'s split (for statistics; memoised). A split
        derived from an unwindowed twin near a ``maxLength`` reports the twin's (a walk
        from the state itself would make a state per count it reads, for statistics)."""
        got = self._census.get(state)
        if got is None:
            twin = self.derive.near_twin.get(state)
            got = self._census[state] = (self.census(twin) if twin is not None
                                         else self.walker.walk_split(state, None, True))
        return got

    def _split(self, state: int) -> NodeMask:
        """A new split of ``state``: derived where :meth:`Derivations.derive` can, else
        walked in full."""
        got = self.derive.derive(state)
        if got is not None:
            return got
        return self.walker.node_of_walk(*self.walker.walk_split(state, None, False))
