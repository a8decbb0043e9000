"""Splits derived from another state's split instead of walked in full.

A full split (:meth:`~reference_engine.split_walk.SplitWalker.walk_split`) walks the
whole trie from a state: milliseconds for a position inside a string. Many states
differ from one already split in a way that decides the fate of few tokens, and
:class:`Derivations` builds their splits from that other state's, walking only where
the two may part:

- *window* (:meth:`Derivations.window_reference`): inside a plain string under a
  ``maxLength``, past its minimum: the reference count's split less the tokens that
  begin more characters than the budget left;
- *near window* (:meth:`Derivations.near_window`): the same near the maximum for a
  patterned string: the unwindowed twin's split, the tokens in the band between sure
  and impossible read byte by byte;
- *reference* (:meth:`Derivations.reference`): a state whose row sends most first
  bytes (by trie weight) where another state's does: that state's split, with the
  first bytes that differ walked;
- *pair* (:meth:`Derivations.pair_reference`): a state of a string family split
  before that no short string tells apart: both walked side by side
  (:func:`~reference_engine.trie_walk.pair_differences`), only the subtrees where they
  part walked from the state itself.

Invariant: every derived split equals the full walk's, bit for bit, in accepted set
and context-dependent groups up to their grouping (the tests compare them). A
reference's own split is always walked or derived by another rule (``deriving``),
never derived from the state being derived, so the recursion ends.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from reference_engine.encoding import START, json_string_end
from reference_engine.maskcache import (SORT_PACK_MAX, NodeMask, clear_ids, node_mask_of_words,
                                        pack_flags, sorted_pairs)
from reference_engine.pda import PDA
from reference_engine.split_walk import SplitWalker
from reference_engine.trie import TokenTrie
from reference_engine.trie_walk import pair_differences, walk_roots

#: A state's split is derived from another state's (see :meth:`Derivations.reference`)
#: when the first bytes they lead alike carry at least this many trie nodes below them
#: and at least DERIVE_RATIO times as many as the first bytes that differ.
DERIVE_MIN = 20_000
DERIVE_RATIO = 4
#: a split near a ``maxLength`` is derived from its unwindowed twin when at most this
#: many of the twin's tokens need reading byte by byte (a few microseconds each in
#: Python; a full walk costs ~10 ms), else walked (:meth:`Derivations.from_near_window`)
NEAR_BAND_MAX = 2_000
#: A split inside a string is derived from the split of a state of the same string
#: that no string of up to this many characters tells apart from it (see
#: :meth:`Derivations.pair_reference`) ...
PAIR_MIN_DIST = 2
#: ... when the walk of the two states side by side reads at most this many trie
#: nodes (a full walk of a string's content reads ~270,000), else walked in full
PAIR_WALK_MAX = 60_000
#: ... and from the reference of :meth:`Derivations.reference`, at most this many
#: (then its first bytes' subtrees are walked, :meth:`Derivations.from_reference`)
PAIR_REF_WALK_MAX = 20_000
#: Levels of bounded equivalence computed per string automaton: the pair walk prunes
#: subtrees up to this height by them (1,800 of the 275,000 nodes of Llama-3's trie
#: are taller; each level costs a pass over the automaton)
MOORE_LEVELS = 32
#: what the pair walk gets for two states of no common string family (no prune by
#: levels, family arrays never read)
NO_LEVELS = np.zeros((1, 1), dtype=np.int32)
_NO_FAMILY = np.zeros(1, dtype=np.int32)


def _no_families() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _NO_FAMILY, _NO_FAMILY, _NO_FAMILY


class Derivations:
    """The derived splits of one compiled grammar and vocabulary: which other state a
    state's split may come from, and the derivation itself (with its counters)."""

    def __init__(self, pda: PDA, trie: TokenTrie, words: int, walker: SplitWalker,
                 node: Callable[[int], NodeMask]):
        self.pda = pda
        self.trie = trie
        self.words = words
        self.walker = walker
        #: the (cached) split of a state, for references (the split cache's ``node``)
        self._node = node
        #: set while a reference's own split is built: it is not derived in turn from
        #: :meth:`reference` or :meth:`pair_reference` (see :meth:`derive`)
        self.deriving = False
        self.derived = 0  # nodes whose split was derived from reference()'s state (stats)
        self.windowed = 0  # nodes whose split was derived by a window's budget (stats)
        self.near_windowed = 0  # nodes derived from their twin near the maximum (stats)
        self.pair_derived = 0  # nodes derived from a state of the same string (stats)
        self.pair_walked = 0  # of the pair walks tried, those too wide: walked in full
        #: per budget, the packed tokens that begin at most that many string characters
        self._within: dict[int, np.ndarray] = {}
        #: (budget - reach, budget) -> token ids beginning more characters than the
        #: first and at most the second (:meth:`from_near_window`)
        self._band: dict[tuple[int, int], np.ndarray] = {}
        self.near_twin: dict[int, int] = {}  # state -> the twin its split derives from
        #: per state, its string family (see family_of): id and DFA state, or None
        self._family: dict[int, tuple[int, int] | None] = {}
        self._family_ids: dict[tuple, int] = {}
        self.family_frag: list[int] = []  # family id -> its fragment
        #: family id -> ([DFA state], [automaton state]) of the states split so far
        self._family_refs: dict[int, tuple[list[int], list[int]]] = {}
        self._levels: dict[int, np.ndarray] = {}  # fragment -> DFA.moore_levels
        #: the family arrays of the pair walk over every state so far (see families)
        self._fam_arrays = (np.full(1024, -1, dtype=np.int32), np.zeros(1024, dtype=np.int32))
        self._fam_n = 0
        kids = np.arange(trie.child_start[0], trie.child_start[0] + trie.child_count[0])
        self._root_kids = kids  # the trie's first-byte nodes
        self._root_bytes = trie.node_byte[kids]
        self._root_weight = trie.subtree[kids] + 1  # trie nodes at and below each

    def derive(self, state: int) -> NodeMask | None:
        """The split of ``state`` derived from another state's, trying in turn a
        window's reference, a near window's twin, the first-byte reference and a
        state of the same string family; None where none applies (or while a
        reference's own split is built): then it is walked in full."""
        if self.deriving:
            return None
        win = self.window_reference(state)
        if win is not None:
            return self.from_window(state, *win)
        near = self.near_window(state)
        if near is not None:
            return self.from_near_window(state, *near)
        ref = self.reference(state)
        if ref is not None:
            # the two walks side by side part only where a byte leads them apart
            # (along a declared key, say), usually well inside the first bytes'
            # subtrees; else those subtrees are walked whole
            got = self.from_pair(state, ref[0], PAIR_REF_WALK_MAX)
            if got is None:
                return self.from_reference(state, *ref)
            self.derived += 1
            return got
        q = self.pair_reference(state)
        if q is not None:
            return self.from_pair(state, q, PAIR_WALK_MAX)
        return None

    def note_split(self, state: int) -> None:
        """Record that ``state`` has a split of its own now: a pair reference for the
        later states of its string family."""
        fam = self.family_of(state)
        if fam is not None:
            ds, ss = self._family_refs.setdefault(fam[0], ([], []))
            ds.append(fam[1])
            ss.append(state)

    def string_item(self, state: int):
        """``(item, fragment class)`` of a position between characters inside a string
        (not an object key) whose state holds one fragment item: every other item only
        reads the string's closing quote, and nothing leaves the state but bytes (no
        rule end, call or guard); else None. (Callers check, last, that the state is
        that item's closure: ``state_of`` may make a state.)"""
        pda = self.pda
        if pda.final[state] or pda.state_calls[state] or pda.state_guards[state]:
            return None  # some way on does not go through the closing quote
        frag = None
        for it in pda.items[state]:
            if len(it) == 5:
                if frag is not None:
                    return None
                frag = it
            elif any(m != 1 << 0x22 for m, _ in pda.byte_edges[it[0]]):
                return None  # not the string's closing quote alone
        if frag is None or frag[2] != START or frag[0] in pda.key_frags:
            return None
        return frag, pda.frag_class[frag[0]]

    def window_reference(self, state: int):
        """``(reference state, budget)`` for a position inside a JSON string under a
        length window that any character may fill (``maxLength`` on a plain string),
        with more characters read than the window's minimum; else None.

        From such a position a token lives iff it lives from the same position with
        the minimum's count (the reference) and the characters it begins inside the
        string, up to its closing quote, fit in the ``budget`` left
        (:meth:`~reference_engine.trie.TokenTrie.json_chars`): with a one-state
        automaton the count is all the window reads, and past the closing quote both
        positions go on alike. Without this, each count is its own full walk (a
        ``maxLength: 50`` string costs fifty, each about as dear as the string's
        first)."""
        got = self.string_item(state)
        if got is None:
            return None
        (f, d, _, cnt, p), fc = got
        pda = self.pda
        if not fc.any_char_window or cnt <= fc.lo or pda.state_of(got[0]) != state:
            return None  # (the last: the state holds more than the string's own items)
        q = pda.state_of((f, d, START, fc.lo, p))
        return (q, fc.hi - cnt) if q >= 0 else None

    def from_window(self, state: int, q: int, budget: int) -> NodeMask:
        """The split of ``state`` from its :meth:`window_reference` ``q``: ``q``'s
        accepted tokens and context-dependent groups, less those that begin more than
        ``budget`` characters in the string (a group's tokens all begin as many as
        its node's path, the string having ended above it)."""
        nq = self._node(q)
        trie = self.trie
        self.windowed += 1
        if budget >= trie.maxlen:
            return nq  # no token begins more characters than it has bytes
        within = self._within.get(budget)
        if within is None:
            within = self._within[budget] = pack_flags(trie.json_chars() <= budget, self.words)
        w = np.empty(self.words, dtype=np.int32)
        nq.write(w)
        w &= within

        def keep(ns: tuple) -> tuple:
            return tuple(n for n in ns if trie.json_chars_node(n) <= budget)

        pops = tuple((k, x) for k, x in ((k, keep(ns)) for k, ns in nq.pops) if x)
        guards = tuple((k, sg, x) for k, sg, x in ((k, sg, keep(ns)) for k, sg, ns in nq.guards)
                       if x)
        return node_mask_of_words(w, pops, guards)

    def near_window(self, state: int):
        """``(twin state, budget, reach)`` for a position inside a JSON string under a
        length window, past the window's minimum but too near its maximum for
        :meth:`~reference_engine.splits.Splits.mask_key` to share it, read by an
        automaton of several states (one state: :meth:`window_reference`); else None.
        The twin is the position with the fragment's
        :meth:`~reference_engine.nfa.NFA.unwindowed` twin, the budget the characters
        left (``hi - cnt``), the reach the fragment's
        :attr:`~reference_engine.fragments.FragClass.reach`."""
        got = self.string_item(state)
        if got is None:
            return None
        (f, d, _, cnt, p), fc = got
        pda = self.pda
        if (fc.hi is None or fc.enc != "json" or fc.any_char_window or cnt < fc.lo
                or pda.state_of(got[0]) != state):
            return None
        t = pda.state_of((pda.unwindowed(f), d, START, 0, p))
        return (t, fc.hi - cnt, fc.reach) if t >= 0 else None

    def from_near_window(self, state: int, t: int, budget: int, reach: int) -> NodeMask:
        """The split of ``state`` from its twin ``t``'s (see :meth:`near_window`).

        A token lives from ``state`` only if it lives from the twin (the same string
        without the maximum; the minimum is met), and then iff every prefix of what it
        reads in the string, ``k`` characters begun (a partial one counts) into DFA
        state ``q``, fits: ``k + shortest(q) <= budget``. Past the closing quote both
        go on alike, from one and the same state. So a token of the twin that begins
        at most ``budget - reach`` characters lives, one that begins more than
        ``budget`` dies, and the few between are read byte by byte from ``state``;
        likewise the trie nodes of the twin's context-dependent groups (walked in
        full instead where more than :data:`NEAR_BAND_MAX` tokens would be read).
        Without this, each count near a ``maxLength`` of a patterned string is its own
        full walk (making a new state per count it reads)."""
        nt = self._node(t)
        trie, words = self.trie, self.words
        chars = trie.json_chars()
        w = np.empty(words, dtype=np.int32)
        nt.write(w)
        sure = budget - reach
        band = self._band.get((sure, budget))
        if band is None:
            band = self._band[(sure, budget)] = np.flatnonzero((chars > sure) & (chars <= budget))
        if band.size:
            band = band[((w[band >> 5] >> (band & 31)) & 1).astype(bool)]
        if band.size > NEAR_BAND_MAX:
            # a small budget in free text: thousands of short tokens to read one by one
            return self.walker.node_of_walk(*self.walker.walk_split(state, None, False))
        self.near_windowed += 1
        self.near_twin[state] = t
        if sure < trie.maxlen:
            within = self._within.get(sure)
            if within is None:
                within = self._within[sure] = pack_flags(chars <= sure, words)
            w &= within
        tb = trie.token_bytes
        live = [i for i in band.tolist() if self.lives_in_string(state, tb[i])]
        if live:
            idx, val, _ = sorted_pairs(np.array(live, dtype=np.int64), words)
            w[idx] |= val

        def keep(ns: tuple) -> tuple:
            out = []
            for n in ns:
                c = trie.json_chars_node(n)
                if c <= sure or (c <= budget and self.lives_in_string(state, trie.node_path(n))):
                    out.append(n)
            return tuple(out)

        pops = tuple((k, x) for k, x in ((k, keep(ns)) for k, ns in nt.pops) if x)
        guards = tuple((k, sg, x) for k, sg, x in ((k, sg, keep(ns)) for k, sg, ns in nt.guards)
                       if x)
        return node_mask_of_words(w, pops, guards)

    def lives_in_string(self, state: int, data: bytes) -> bool:
        """Whether the part of ``data`` read inside the JSON string (its closing quote
        included) keeps ``state``, a position in the string, alive."""
        got = self.string_item(state)
        if got is not None and self.pda.state_of(got[0]) == state:
            # the string's own item alone: read off its fragment's rows
            (_, d, dec, cnt, _), fc = got
            return fc.lives(d, dec, cnt, data[:json_string_end(data)])
        pda = self.pda
        rows = pda.rows
        s = state
        for b in data[:json_string_end(data)]:
            row = rows[s]
            if row is None:
                row = pda.materialise(s)
            s = row[b]
            if s < 0:
                return False
        return True

    def reference(self, state: int):
        """``(reference state, first-byte trie nodes that differ)``, or None.

        Tokens beginning with byte ``b`` meet the same fate from two states whose rows
        send ``b`` to the same state: the same walk below it, the same exits, the same
        context-dependent groups. A key prefix of an object that takes extra keys
        (``"first`` where ``firstName`` is declared) sends nearly every first byte where
        the extra keys' content state does, and its split is that state's except below
        the few bytes that go on along a declared key or end it; likewise other states
        whose row agrees with the state most of their bytes lead to. The reference is
        that state, when the first bytes on which the rows agree carry most of the trie
        (:data:`DERIVE_MIN`, :data:`DERIVE_RATIO`)."""
        pda = self.pda
        if pda.rows[state] is None:
            pda.materialise(state)
        t = pda.table[state][self._root_bytes]
        live = t >= 0
        w = self._root_weight
        if int(w[live].sum()) < DERIVE_MIN:
            return None
        vals, inv = np.unique(t[live], return_inverse=True)
        q = int(vals[np.argmax(np.bincount(inv, weights=w[live]))])
        if q == state or not pda.has_bytes[q]:
            return None
        if pda.rows[q] is None:
            pda.materialise(q)
        differ = t != pda.table[q][self._root_bytes]
        same = int(w[live & ~differ].sum())
        if same < DERIVE_MIN or same < DERIVE_RATIO * int(w[live & differ].sum()):
            return None
        return q, self._root_kids[differ]

    def from_reference(self, state: int, q: int, differ: np.ndarray) -> NodeMask:
        """The split of ``state`` from the split of ``q``, the reference
        :meth:`reference` chose, and a walk of the tokens beginning with the first
        bytes ``differ`` (their trie nodes) only: ``q``'s accepted set and
        context-dependent groups outside those subtrees, this walk's inside them."""
        self.deriving = True  # the reference gets a split of its own
        try:
            nq = self._node(q)
        finally:
            self.deriving = False
        trie, words = self.trie, self.words
        only = set(trie.node_byte[differ].tolist())
        alive_nodes, pops, guards = self.walker.walk_split(state, only, False)
        w = np.empty(words, dtype=np.int32)
        nq.write(w)
        if differ.size:
            gone = np.concatenate([trie.tokens_under(int(c)) for c in differ])
            clear_ids(w, gone)
        self.derived += 1
        return self._merged(nq, w, differ, alive_nodes, pops, guards)

    def _merged(self, nq: NodeMask, w: np.ndarray, parted: np.ndarray,
                alive_nodes: np.ndarray, pops: tuple, guards: tuple) -> NodeMask:
        """A derived split: the reference's ``nq`` (its accepted set in ``w``, the
        tokens at and below the ``parted`` trie nodes cleared from it) with the walk
        of those subtrees from the state itself (``alive_nodes``, ``pops``,
        ``guards``): the walk's accepted tokens added, the reference's
        context-dependent groups kept outside those subtrees and the walk's own
        added."""
        trie, words = self.trie, self.words
        if alive_nodes.size > SORT_PACK_MAX:  # (a wide walk: no sort of its ids)
            w |= pack_flags(trie.token_flags(alive_nodes), words)
        elif alive_nodes.size:
            idx, val, _ = sorted_pairs(trie.tokens_at(np.unique(alive_nodes)), words)
            w[idx] |= val
        lo, hi = trie.sub_lo[parted], trie.sub_hi[parted]

        def outside(ns: tuple) -> tuple:
            a = np.array(ns, dtype=np.int64)
            x = trie.sub_lo[a]
            inside = ((x[:, None] >= lo) & (x[:, None] < hi)).any(axis=1)
            return tuple(a[~inside].tolist()) if inside.any() else ns

        pops = tuple((k, ns) for k, ns in ((k, outside(ns)) for k, ns in nq.pops) if ns) + pops
        guards = tuple((k, sg, ns) for k, sg, ns in
                       ((k, sg, outside(ns)) for k, sg, ns in nq.guards) if ns) + guards
        return node_mask_of_words(w, pops, guards)

    def family_of(self, state: int) -> tuple[int, int] | None:
        """``(family id, DFA state)`` of a position inside a string (a value's, not a
        key's) read by a DFA without a length window still to meet (no ``maxLength``;
        ``minLength`` met): one fragment item ``(f, d, dec, cnt, p)``, ``d`` a DFA
        state, with whatever other items (those reading the closing quote). States
        alike in all but ``d`` are one family: a string's language from them is the
        DFA's from ``d``, then the same continuation. Else None."""
        got = self._family.get(state, False)
        if got is not False:
            return got
        pda = self.pda
        frag = None
        for it in pda.items[state]:
            if len(it) == 5:
                if frag is not None:
                    frag = None
                    break
                frag = it
        got = None
        if frag is not None:
            f, d, dec, cnt, p = frag
            fc = pda.frag_class[f]
            if (d.__class__ is int and d >= 0 and fc.hi is None and cnt >= fc.lo
                    and f not in pda.key_frags):
                key = (f, dec, cnt, p, pda.items[state] - {frag})
                fid = self._family_ids.get(key)
                if fid is None:
                    fid = self._family_ids[key] = len(self.family_frag)
                    self.family_frag.append(f)
                got = (fid, d)
        self._family[state] = got
        return got

    def families(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(family id or -1, DFA state, family id -> fragment)`` per automaton state,
        as arrays covering every state made so far (for :func:`pair_differences`)."""
        pda = self.pda
        fam, famd = self._fam_arrays
        n = pda.n_states
        if n > fam.size:
            size = max(n, 2 * fam.size)
            fam = np.concatenate([fam, np.full(size - fam.size, -1, dtype=np.int32)])
            famd = np.concatenate([famd, np.zeros(size - famd.size, dtype=np.int32)])
            self._fam_arrays = (fam, famd)
        for st in range(self._fam_n, n):
            got = self.family_of(st)
            if got is not None:
                fam[st], famd[st] = got
        self._fam_n = n
        return fam, famd, np.array(self.family_frag + [0], dtype=np.int32)

    def moore(self, f: int) -> np.ndarray:
        """Fragment ``f``'s DFA's :meth:`~reference_engine.automata.DFA.moore_levels`
        up to :data:`MOORE_LEVELS` (memoised)."""
        got = self._levels.get(f)
        if got is None:
            got = self._levels[f] = self.pda.frag_class[f].dfa.moore_levels(MOORE_LEVELS)
        return got

    def pair_reference(self, state: int) -> int | None:
        """A state of ``state``'s string family (:meth:`family_of`) split before,
        the one that the longest strings cannot tell apart from it (at least
        :data:`PAIR_MIN_DIST` characters); else None.

        Why: a pattern that counts (``^(?:\\S+\\s+){0,99}\\S+$`` counts words,
        ``[a-z_-]{1,255}`` characters) makes one DFA state per count, and each is a
        new position whose split is a full walk of the string's content (~7 ms, and
        a row built for every count it reads). Far from the bound, two counts differ
        only for strings longer than any token, or for the few tokens that hold many
        words: the split is the other count's but below the trie nodes where the two
        walks part (:meth:`from_pair`)."""
        fam = self.family_of(state)
        if fam is None:
            return None
        refs = self._family_refs.get(fam[0])
        if not refs:
            return None
        lev = self.moore(self.family_frag[fam[0]])
        ds = lev[:, refs[0]]
        eq = ds == lev[:, fam[1]][:, None]
        dist = np.where(eq.all(axis=0), lev.shape[0], eq.argmin(axis=0))
        i = int(dist.argmax())
        if int(dist[i]) < PAIR_MIN_DIST:
            return None
        return refs[1][i]

    def from_pair(self, state: int, q: int, limit: int) -> NodeMask | None:
        """The split of ``state`` from the split of ``q`` (:meth:`pair_reference`):
        both states are walked over the trie side by side
        (:func:`~reference_engine.trie_walk.pair_differences`), which lists the nodes
        where they part (one dies or meets an exit, the other does not); outside
        those subtrees every token meets the same fate from both (same walk, same
        exits), inside them ``state``'s own walk decides. None if the side-by-side
        walk would read more than ``limit`` trie nodes. Without a string family in
        common, only the nodes where both reach one and the same state are pruned."""
        trie, pda, words = self.trie, self.pda, self.words
        fam = self.family_of(state)
        fq = self.family_of(q)
        if fam is not None and fq is not None and fam[0] == fq[0]:
            frag = self.family_frag[fam[0]]
            lev = self.moore(frag)
        else:
            frag, lev = -1, NO_LEVELS
        got = pair_differences(trie, pda, q, state,
                               self.families if frag >= 0 else _no_families, frag, lev, limit)
        if got is None:
            self.pair_walked += 1
            return None
        dn, ds = got
        self.deriving = True  # the reference gets a split of its own
        try:
            nq = self._node(q)
        finally:
            self.deriving = False
        w = np.empty(words, dtype=np.int32)
        nq.write(w)
        if not dn.size:
            self.pair_derived += 1
            return nq
        clear_ids(w, np.concatenate([trie.tokens_under(int(c)) for c in dn]))
        exitflag, stopflag = pda.exit_list, pda.stop_list
        first: list[int] = []  # the nodes where they part, alive from ``state``
        ex_n: list[int] = []
        ex_s: list[int] = []
        roots: list[int] = []
        states: list[int] = []
        count = trie._py_count
        for c, t in zip(dn.tolist(), ds.tolist()):
            if t < 0:
                continue
            if exitflag[t]:
                ex_n.append(c)
                ex_s.append(t)
                if stopflag[t]:
                    continue
            first.append(c)
            if count[c]:
                roots.append(c)
                states.append(t)
        below, _, (en, es), _ = walk_roots(trie, pda, roots, states, grouped=False)
        exits = (np.concatenate([np.array(ex_n, dtype=np.int32), en]),
                 np.concatenate([np.array(ex_s, dtype=np.int32), es]))
        alive, cd_exits, gd_exits, at_alive, _ = self.walker.waves(exits)
        alive = [np.array(first + at_alive, dtype=np.int64), below] + alive
        self.pair_derived += 1
        return self._merged(nq, w, dn, np.concatenate(alive),
                            *self.walker.exit_groups(cd_exits, gd_exits))
