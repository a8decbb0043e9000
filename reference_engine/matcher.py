"""Matchers: per-sequence configuration sets, masks, rollback.

:class:`MaskComputer` (one per compiled grammar and vocabulary, shared by its
matchers) computes exact token masks with an **adaptive token mask cache**
(:mod:`reference_engine.maskcache` stores it):

- For each DFA state (an automaton node), the vocabulary is split once into tokens
  accepted whatever the stack holds (*context-independent accepted*), rejected whatever
  it holds (*context-independent rejected*) and the *context-dependent* rest. The split
  is one trie walk from the state (:meth:`~reference_engine.trie.TokenTrie.walk`)
  extended through calls (a push needs no stack: the walk follows it with a local
  stack of the return states it pushed) and through rule ends whose return state is
  known: a local frame, the single return state of a rule called from one place
  (:attr:`~reference_engine.pda.PDA.unique_return`), or the end of the document after
  a start rule nothing calls (the *context expansion*). Only a
  rule end that must pop a frame of the live stack leaves tokens context-dependent:
  those strictly below that trie node.
- At run time a configuration ``(state, stack)`` starts from the cached accepted set
  and checks only the context-dependent tokens against the live stack: pop the frame,
  walk the rest of those subtrees from the configurations found there
  (:meth:`MaskComputer.context`, cached per ``(context-dependent groups, stack)``).
- A single configuration whose node has no context-dependent tokens is written
  straight from the node's entry; any other composed mask (several configurations,
  or context-dependent tokens settled) is kept in a small LRU of dense bitmasks, so a
  revisited step is a dict lookup and a 16 KiB copy.

This is exact by construction (every token is either walked byte by byte through the
automaton or pruned because a prefix is dead); the tests re-derive masks token by
token from the live configurations to check it, bit for bit.

:class:`GrammarMatcher` keeps one ``(configurations, accepting)`` entry per
committed token, so ``rollback(n)`` just drops entries (no recomputation).
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict

import numpy as np

from reference_engine import keys as jkeys
from reference_engine.contexts import Contexts
from reference_engine.dupkeys import DuplicateKeyFilter
from reference_engine.encoding import START, json_string_end
from reference_engine.maskcache import (SORT_PACK_MAX, Census, NodeMask, WordSet, clear_ids,
                                        node_mask, node_mask_of_ids, node_mask_of_words,
                                        or_pairs, pack_flags, sorted_pairs)
from reference_engine.pda import PDA, any_passes, frame_param, frame_ret
from reference_engine.stack import EMPTY
from reference_engine.trie import TokenTrie, group_exits
from reference_engine.trie_walk import pair_differences, walk_roots

#: Frames the split may pop statically in a row (a guard: chains of single-site
#: rules are as deep as the grammar's nesting, far below this).
MAX_STATIC_POPS = 64
#: Composed masks of whole configuration sets (after the duplicate-key check, per tracker
#: state) kept (dense, 16 KiB each at 128k tokens).
FINAL_CACHE_SIZE = 512
#: Trie nodes (plus exits) the shared-subtree memo may hold per compiled grammar
#: (int32: 4 bytes each).
SUBTREE_MEMO_NODES = 8_000_000
#: A state's split is derived from another state's (see :meth:`MaskComputer._reference`)
#: when the first bytes they lead alike carry at least this many trie nodes below them
#: and at least DERIVE_RATIO times as many as the first bytes that differ.
DERIVE_MIN = 20_000
DERIVE_RATIO = 4
#: a split near a ``maxLength`` is derived from its unwindowed twin when at most this
#: many of the twin's tokens need reading byte by byte (a few microseconds each in
#: Python; a full walk costs ~10 ms), else walked (:meth:`MaskComputer._near_windowed`)
NEAR_BAND_MAX = 2_000
#: A split inside a string is derived from the split of a state of the same string
#: that no string of up to this many characters tells apart from it (see
#: :meth:`MaskComputer._pair_reference`) ...
PAIR_MIN_DIST = 2
#: ... when the walk of the two states side by side reads at most this many trie
#: nodes (a full walk of a string's content reads ~270,000), else walked in full
PAIR_WALK_MAX = 60_000
#: ... and from the reference of :meth:`MaskComputer._reference`, at most this many
#: (then its first bytes' subtrees are walked, :meth:`MaskComputer._derived`)
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


def words_for(vocab_size: int) -> int:
    """Number of int32 words of a bitmask over ``vocab_size`` tokens."""
    return (vocab_size + 31) // 32


class MaskComputer:
    """Exact masks for one compiled grammar and one vocabulary (shared by matchers)."""

    def __init__(self, pda: PDA, trie: TokenTrie, stop_ids=(), json_keys: bool = False,
                 key_floor: int | None = None):
        self.pda = pda
        self.trie = trie
        self.words = words_for(trie.vocab_size)
        self.stop_ids = tuple(stop_ids)
        self._nodes: dict[int, NodeMask] = {}
        self._census: dict[int, Census] = {}
        self._by_key: dict[frozenset, NodeMask] = {}
        self._shared = 0  # states served by another state's entry (see mask_key)
        #: the run-time half: context-dependent tokens settled against the live stack
        self.contexts = Contexts(pda, trie, self.words, self.node)
        # (bound once: fill calls it per configuration with context-dependent tokens)
        self._context = self.contexts.context
        self._final: OrderedDict = OrderedDict()
        self._lclosure: dict[tuple, tuple] = {}
        #: subtrees below the first byte, shared by the states that reach them
        #: (:meth:`~reference_engine.trie.TokenTrie.walk_root`), within a node budget
        self._sub: dict[tuple[int, int], tuple] = {}
        self._sub_budget = [SUBTREE_MEMO_NODES]
        self._stop_words: list[tuple[int, int]] = []
        for t in self.stop_ids:
            v = 1 << (t & 31)
            self._stop_words.append((t >> 5, v - (1 << 32) if v >= 1 << 31 else v))
        self.json_keys = json_keys
        #: objects holding this many keys may have run out of fresh ones (see
        #: :func:`~reference_engine.keys.fewest_extra_keys`); None: never
        self.key_floor = key_floor
        #: the duplicate-key rule (None without ``json_keys``)
        self.keys = DuplicateKeyFilter(pda, trie, self._nodes, key_floor) if json_keys else None
        #: the caches above, the automaton's lazy rows and its stack pool are shared by
        #: every matcher of the grammar: matchers used from several threads (a batch
        #: filled on a thread pool) take this lock around each mask and commit
        self.lock = threading.Lock()
        self.precomputed = 0  # nodes built by precompute (stats)
        self.warmed = 0  # contexts precompute walked past a key's end (stats)
        self.precompute_s = 0.0  # seconds it took
        self.derived = 0  # nodes whose split was derived from _reference's state (stats)
        self.windowed = 0  # nodes whose split was derived by a window's budget (stats)
        self.unwindowed = 0  # nodes whose split is their unwindowed twin's (stats)
        self.near_windowed = 0  # nodes derived from their twin near the maximum (stats)
        #: per budget, the packed tokens that begin at most that many string characters
        self._within: dict[int, np.ndarray] = {}
        #: (budget - reach, budget) -> token ids beginning more characters than the
        #: first and at most the second (:meth:`_near_windowed`)
        self._band: dict[tuple[int, int], np.ndarray] = {}
        self._near_twin: dict[int, int] = {}  # state -> the twin its split derives from
        self.pair_derived = 0  # nodes derived from a state of the same string (stats)
        self.pair_walked = 0  # of the pair walks tried, those too wide: walked in full
        #: per state, its string family (see _family_of): id and DFA state, or None
        self._family: dict[int, tuple[int, int] | None] = {}
        self._family_ids: dict[tuple, int] = {}
        self._family_frag: list[int] = []  # family id -> its fragment
        #: family id -> ([DFA state], [automaton state]) of the states split so far
        self._family_refs: dict[int, tuple[list[int], list[int]]] = {}
        self._levels: dict[int, np.ndarray] = {}  # fragment -> DFA.moore_levels
        #: the family arrays of the pair walk over every state so far (see _families)
        self._fam_arrays = (np.full(1024, -1, dtype=np.int32), np.zeros(1024, dtype=np.int32))
        self._fam_n = 0
        self._deriving = False
        kids = np.arange(trie.child_start[0], trie.child_start[0] + trie.child_count[0])
        self._root_kids = kids  # the trie's first-byte nodes
        self._root_bytes = trie.node_byte[kids]
        self._root_weight = trie.subtree[kids] + 1  # trie nodes at and below each

    # ------------------------------------------------------------ compile-time split
    def _local_closure(self, t: int, lst: tuple, k: int):
        """Byte-consuming configurations reachable from state ``t`` with the *local*
        stack ``lst`` (entries pushed inside the current token, top last: return states,
        and object frames as negative numbers) after ``k`` statically known frames of
        the real stack were popped; the final states from which a rule end must pop the
        real stack, and the states whose object guards need the frame on the real stack
        (both context-dependent); and whether a return was known statically."""
        key = (t, lst, k)
        got = self._lclosure.get(key)
        if got is not None:
            return got
        pda = self.pda
        confs: list[tuple[int, tuple, int]] = []
        pops: list[tuple[int, int]] = []
        guards: list[tuple[int, int]] = []
        moved = False
        seen = {key}
        work = [key]
        while work:
            s, l, kk = work.pop()
            local = bool(l) and l[-1] < -1  # the object frame is on the local stack
            if pda.has_bytes[s]:
                vg = pda.vguards[s]
                if vg is None:
                    confs.append((s, l, kk))
                elif local:
                    if any_passes(vg, frame_param(l[-1])):
                        confs.append((s, l, kk))
                else:
                    guards.append((s, kk))
            for r, ret in pda.state_calls[s]:
                new = (pda.entry_state[r], l + (ret,), kk)
                if new not in seen:
                    seen.add(new)
                    work.append(new)
            for g, tg in pda.state_guards[s]:
                if g.kind == "open":
                    new = (tg, l + (frame_ret(0),), kk)
                elif local:
                    entries = g.after(frame_param(l[-1]))
                    if entries is None:
                        continue
                    new = (tg, l[:-1] + entries, kk)
                else:
                    if (s, kk) not in guards:
                        guards.append((s, kk))
                    continue
                if new not in seen:
                    seen.add(new)
                    work.append(new)
            if pda.final[s]:
                if l:
                    new = (l[-1], l[:-1], kk)
                else:
                    r = pda.state_rule[s]
                    if r == 0 and not pda.call_sites[0]:
                        # the end of a start rule nothing calls: the stack is empty, the
                        # document ends here and nothing may follow (known statically)
                        moved = True
                        continue
                    u = pda.unique_return[r]
                    if u < 0 or kk >= MAX_STATIC_POPS:
                        pops.append((s, kk))
                        continue
                    moved = True
                    new = (u, (), kk + 1)
                if new not in seen:
                    seen.add(new)
                    work.append(new)
        # tuples: the memo lives as long as the grammar, and tuples of numbers drop out
        # of the cyclic collector's passes (three lists per entry were traversed each time)
        got = (tuple(confs), tuple(pops), tuple(guards), moved)
        self._lclosure[key] = got
        return got

    def mask_key(self, state: int):
        """A key equal for states whose masks are equal: the state's NFA items with
        each length counter that is far from its bound replaced by ``-1``.

        A counter ``cnt`` of a code-point fragment with window ``[lo, hi]`` only matters
        through the checks ``cnt >= lo`` and the remaining budget ``hi - cnt``. Within
        one token (at most ``trie.maxlen`` bytes, so at most that many characters) a
        counter with ``cnt >= lo`` and ``hi - cnt >= trie.maxlen + reach`` never meets
        the bound nor changes a feasibility answer (no live DFA state needs more than
        :attr:`~reference_engine.pda._FragClass.reach` characters to acceptance), so
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

    def _unwindowed_state(self, mkey: frozenset) -> int:
        """The state of :meth:`mask_key`'s items with each far counter's fragment item
        moved to the fragment's :meth:`~reference_engine.pda.PDA.unwindowed` twin at
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
        got = self._nodes.get(state)
        if got is not None:
            return got
        mkey = self.mask_key(state)
        if mkey != state:
            got = self._by_key.get(mkey)
            if got is not None:
                self._nodes[state] = got
                self._shared += 1
                return got
            twin = self._unwindowed_state(mkey)
            if twin >= 0:
                got = self.node(twin)
                self._nodes[state] = self._by_key[mkey] = got
                self.unwindowed += 1
                return got
        got = self._split(state)
        self._nodes[state] = got
        if mkey != state:
            self._by_key[mkey] = got
        fam = self._family_of(state)
        if fam is not None:
            ds, ss = self._family_refs.setdefault(fam[0], ([], []))
            ds.append(fam[1])
            ss.append(state)
        return got

    def precompute(self, budget_s: float) -> None:
        """Build ahead, at compile time, cache entries that nearly every decode of the
        grammar needs and that cost most on a first visit, for about ``budget_s``
        seconds at most (checked between entries, after the first; 0 builds nothing).
        In order: the first mask's nodes; the content state of each string (or other
        code-point fragment) that is not an object key, a wide node whose first walk
        covers most of the trie; each object's key position (after ``{"`` or ``, "``),
        wide where the object takes extra keys; the states the grammar's entry points
        lead to (rule entries, their return states and guard targets); the states past
        each object guard (after ``{``, a key, a separator); the key fragments alone
        (the key position of a one-key object); the states one and two JSON
        punctuation bytes on from all these (``":``, ``": "``, ``[{``, ...); then the
        positions inside each object's declared keys (``"first`` of ``firstName``,
        where a token often ends; wide where the object takes extra keys, and most of
        them derived from one reference split, see :meth:`_reference`); last, the
        walks past each built key's end into its value (:meth:`_warm_key_ends`).

        Masks are unchanged: each entry is what :meth:`node` would build on first
        use; only where its cost lands moves, from the first mask that needs it to
        the compile (TTFM). XGrammar precomputes every node at compile time; here
        the byte-level states a decode may reach (length counters, whitespace runs,
        partial characters, key prefixes) are too many to enumerate, so only these
        are. ``precomputed_nodes``, ``precomputed_key_ends`` and ``precompute_s`` (in
        :meth:`stats`) say what it did."""
        if budget_s <= 0:
            return
        t0 = time.perf_counter()
        deadline = t0 + budget_s
        pda = self.pda
        if any(fc.any_char_window for fc in pda.frag_class):
            self.trie.json_chars()  # for _windowed (once per vocabulary, ~0.1 s)
        entry_points = pda.entry_points
        built = 0

        def candidates():
            configs, _ = pda.initial()
            for s, _ in configs:
                yield s
            for f in range(len(pda.frag_class)):
                if f not in pda.key_frags:
                    yield pda.state_of((f, 0, START, 0, 0))
            # each object's key position (past a key's opening quote: every key's
            # first mask; wide where the object takes extra keys)
            key_positions = []
            for c in pda.key_choices:
                s = pda.state_of((c, 0))
                if s >= 0 and pda.has_bytes[s]:
                    t = pda.materialise(s)[0x22]
                    # (the state itself where only declared keys remain: its entry does
                    # not depend on the frame that decides whether it lives)
                    for kp in ((t,) if t >= 0 and pda.has_bytes[t] else self._through(t)):
                        key_positions.append(kp)
                        yield kp
            # past each object guard: the body after ``{`` or a separator, a member's
            # ``: value`` tail (past its key), the object's end
            after_guard = []
            for n in range(len(pda.eps)):
                if pda._guarded[n]:
                    for t, act in pda.eps[n]:
                        if act is not None:
                            after_guard.append(pda.state_of((t, 0)))
            yield from range(entry_points)
            yield from after_guard
            for f in sorted(pda.key_frags):  # a key position of an object with one key
                yield pda.state_of((f, 0, START, 0, 0))
            # then one and two JSON punctuation bytes on from what was built (after
            # ``{``, ``{"``, ``":``, ``, "``, ...), through calls and object guards
            frontier = list(self._nodes)
            seen = set(frontier)
            for _ in range(2):
                nxt = []
                for s in frontier:
                    row = pda.materialise(s)
                    for b in b'{}[],:" ':
                        for u in self._through(row[b]):
                            if u not in seen:
                                seen.add(u)
                                nxt.append(u)
                                yield u
                frontier = nxt
            # then the positions inside each object's declared keys, from its key
            # positions (a token often ends inside a key: ``"first`` + ``Name":``):
            # first their rows (walks below a key position go along the names, in
            # splits and, where the object's frame decides, in contexts), then entries
            inside: dict[int, None] = {}
            for kp in dict.fromkeys(key_positions):
                names = set()
                for it in pda.items[kp]:
                    if len(it) == 5:
                        names.update(pda.key_names.get(it[0], ()))
                for name in sorted(names):
                    if time.perf_counter() >= deadline:
                        return
                    u = kp
                    for b in json.dumps(name, ensure_ascii=False)[1:-1].encode():
                        u = pda.materialise(u)[b]
                        if u < 0:
                            break
                        inside[u] = None
            for u in inside:
                pda.materialise(u)
            yield from inside

        with self.lock:
            for s in candidates():
                if built and time.perf_counter() >= deadline:
                    break
                if s >= 0 and pda.has_bytes[s] and s not in self._nodes:
                    had = len(self._nodes)
                    self.node(s)
                    built += len(self._nodes) - had  # with a reference it derived from
            self._warm_key_ends(deadline)
        self.precomputed = built
        self.precompute_s = time.perf_counter() - t0

    def _warm_key_ends(self, deadline: float) -> None:
        """Walk, before the deadline, past the object guard of each built node whose
        context-dependent tokens all wait on its own object's frame (a key's end: ``"``,
        ``":``, ``": "``, ``":{"`` ... pass the member's guard and go on into its value):
        one :meth:`context` per node with a fresh frame (parameter 0, nothing below).

        That context itself is rarely asked for again, but the walks it makes (and the
        rows they build) depend on the states and trie nodes only (:meth:`_walk_tokens`
        memoises them so), and the live frames of a decode lead into the same ones.
        Without this, the first time each key ends in a decode builds them: the largest
        share of a decode's new contexts' cost. The fresh stack is a real stack of the
        automaton (an object frame where the node expects one), so the entry cached for
        it is exact like any other."""
        pool = self.pda.stacks
        fresh = pool.push(frame_ret(0), EMPTY)
        for s, nm in list(self._nodes.items()):
            if time.perf_counter() >= deadline:
                break
            if nm.guards and not nm.pops and all(k == 0 for k, _, _ in nm.guards):
                self.context(s, fresh)
                self.warmed += 1

    def _through(self, t: int) -> tuple[int, ...]:
        """The byte-reading states a byte leading to state ``t`` leaves the walk in,
        through calls and object guards (a frame pushed within the token), as far as
        they are known without the live stack."""
        if t < 0:
            return ()
        if not self.pda.exit_list[t]:
            return (t,)
        return tuple(c[0] for c in self._local_closure(t, (), 0)[0])

    def census(self, state: int) -> Census:
        """The :class:`Census` of ``state``'s split (for statistics; memoised). A split
        derived from an unwindowed twin near a ``maxLength`` reports the twin's (a walk
        from the state itself would make a state per count it reads, for statistics)."""
        got = self._census.get(state)
        if got is None:
            twin = self._near_twin.get(state)
            got = self._census[state] = (self.census(twin) if twin is not None
                                         else self._split(state, census=True))
        return got

    def _split(self, state: int, census: bool = False):
        """Split the vocabulary at ``state``: its :class:`NodeMask`, or with ``census``
        its :class:`Census` (the same walks, which by then hit the memos)."""
        if not census and not self._deriving:
            win = self._window_reference(state)
            if win is not None:
                return self._windowed(state, *win)
            near = self._near_window(state)
            if near is not None:
                return self._near_windowed(state, *near)
            ref = self._reference(state)
            if ref is not None:
                # the two walks side by side part only where a byte leads them apart
                # (along a declared key, say), usually well inside the first bytes'
                # subtrees; else those subtrees are walked whole
                got = self._pair_derived(state, ref[0], PAIR_REF_WALK_MAX)
                if got is None:
                    return self._derived(state, *ref)
                self.derived += 1
                return got
            q = self._pair_reference(state)
            if q is not None:
                got = self._pair_derived(state, q, PAIR_WALK_MAX)
                if got is not None:
                    return got
        got = self._walk_split(state, None, census)
        if census:
            return got
        return self._node_of_walk(*got)

    def _split_walked(self, state: int) -> NodeMask:
        """The split of ``state`` walked in full, derived from no other (for tests)."""
        return self._node_of_walk(*self._walk_split(state, None, False))

    def _node_of_walk(self, alive_nodes: np.ndarray, pops: tuple, guards: tuple) -> NodeMask:
        """The :class:`NodeMask` of a walked split (see :meth:`_walk_split`)."""
        if alive_nodes.size <= SORT_PACK_MAX:
            # a narrow position (most structural ones): its few tokens, not a pass over
            # the whole vocabulary
            return node_mask_of_ids(self.trie.tokens_at(np.unique(alive_nodes)), self.words,
                                    pops, guards)
        return node_mask(self.trie.token_flags(alive_nodes), self.words, pops, guards)

    def _string_item(self, state: int):
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

    def _window_reference(self, state: int):
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
        got = self._string_item(state)
        if got is None:
            return None
        (f, d, _, cnt, p), fc = got
        pda = self.pda
        if not fc.any_char_window or cnt <= fc.lo or pda.state_of(got[0]) != state:
            return None  # (the last: the state holds more than the string's own items)
        q = pda.state_of((f, d, START, fc.lo, p))
        return (q, fc.hi - cnt) if q >= 0 else None

    def _windowed(self, state: int, q: int, budget: int) -> NodeMask:
        """The split of ``state`` from its :meth:`_window_reference` ``q``: ``q``'s
        accepted tokens and context-dependent groups, less those that begin more than
        ``budget`` characters in the string (a group's tokens all begin as many as
        its node's path, the string having ended above it)."""
        nq = self.node(q)
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

    def _near_window(self, state: int):
        """``(twin state, budget, reach)`` for a position inside a JSON string under a
        length window, past the window's minimum but too near its maximum for
        :meth:`mask_key` to share it, read by an automaton of several states (one
        state: :meth:`_window_reference`); else None. The twin is the position with
        the fragment's :meth:`~reference_engine.pda.PDA.unwindowed` twin, the budget
        the characters left (``hi - cnt``), the reach the fragment's
        :attr:`~reference_engine.pda._FragClass.reach`."""
        got = self._string_item(state)
        if got is None:
            return None
        (f, d, _, cnt, p), fc = got
        pda = self.pda
        if (fc.hi is None or fc.enc != "json" or fc.any_char_window or cnt < fc.lo
                or pda.state_of(got[0]) != state):
            return None
        t = pda.state_of((pda.unwindowed(f), d, START, 0, p))
        return (t, fc.hi - cnt, fc.reach) if t >= 0 else None

    def _near_windowed(self, state: int, t: int, budget: int, reach: int) -> NodeMask:
        """The split of ``state`` from its twin ``t``'s (see :meth:`_near_window`).

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
        nt = self.node(t)
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
            return self._node_of_walk(*self._walk_split(state, None, False))
        self.near_windowed += 1
        self._near_twin[state] = t
        if sure < trie.maxlen:
            within = self._within.get(sure)
            if within is None:
                within = self._within[sure] = pack_flags(chars <= sure, words)
            w &= within
        tb = trie.token_bytes
        live = [i for i in band.tolist() if self._lives_in_string(state, tb[i])]
        if live:
            idx, val, _ = sorted_pairs(np.array(live, dtype=np.int64), words)
            w[idx] |= val

        def keep(ns: tuple) -> tuple:
            out = []
            for n in ns:
                c = trie.json_chars_node(n)
                if c <= sure or (c <= budget and self._lives_in_string(state, trie.node_path(n))):
                    out.append(n)
            return tuple(out)

        pops = tuple((k, x) for k, x in ((k, keep(ns)) for k, ns in nt.pops) if x)
        guards = tuple((k, sg, x) for k, sg, x in ((k, sg, keep(ns)) for k, sg, ns in nt.guards)
                       if x)
        return node_mask_of_words(w, pops, guards)

    def _lives_in_string(self, state: int, data: bytes) -> bool:
        """Whether the part of ``data`` read inside the JSON string (its closing quote
        included) keeps ``state``, a position in the string, alive."""
        got = self._string_item(state)
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

    def _reference(self, state: int):
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

    def _derived(self, state: int, q: int, differ: np.ndarray) -> NodeMask:
        """The split of ``state`` from the split of ``q``, the reference
        :meth:`_reference` chose, and a walk of the tokens beginning with the first
        bytes ``differ`` (their trie nodes) only: ``q``'s accepted set and
        context-dependent groups outside those subtrees, this walk's inside them."""
        self._deriving = True  # the reference gets a split of its own
        try:
            nq = self.node(q)
        finally:
            self._deriving = False
        trie, words = self.trie, self.words
        only = set(trie.node_byte[differ].tolist())
        alive_nodes, pops, guards = self._walk_split(state, only, False)
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

    def _family_of(self, state: int) -> tuple[int, int] | None:
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
                    fid = self._family_ids[key] = len(self._family_frag)
                    self._family_frag.append(f)
                got = (fid, d)
        self._family[state] = got
        return got

    def _families(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
            got = self._family_of(st)
            if got is not None:
                fam[st], famd[st] = got
        self._fam_n = n
        return fam, famd, np.array(self._family_frag + [0], dtype=np.int32)

    def _moore(self, f: int) -> np.ndarray:
        """Fragment ``f``'s DFA's :meth:`~reference_engine.automata.DFA.moore_levels`
        up to :data:`MOORE_LEVELS` (memoised)."""
        got = self._levels.get(f)
        if got is None:
            got = self._levels[f] = self.pda.frag_class[f].dfa.moore_levels(MOORE_LEVELS)
        return got

    def _pair_reference(self, state: int) -> int | None:
        """A state of ``state``'s string family (:meth:`_family_of`) split before,
        the one that the longest strings cannot tell apart from it (at least
        :data:`PAIR_MIN_DIST` characters); else None.

        Why: a pattern that counts (``^(?:\\S+\\s+){0,99}\\S+$`` counts words,
        ``[a-z_-]{1,255}`` characters) makes one DFA state per count, and each is a
        new position whose split is a full walk of the string's content (~7 ms, and
        a row built for every count it reads). Far from the bound, two counts differ
        only for strings longer than any token, or for the few tokens that hold many
        words: the split is the other count's but below the trie nodes where the two
        walks part (:meth:`_pair_derived`)."""
        fam = self._family_of(state)
        if fam is None:
            return None
        refs = self._family_refs.get(fam[0])
        if not refs:
            return None
        lev = self._moore(self._family_frag[fam[0]])
        ds = lev[:, refs[0]]
        eq = ds == lev[:, fam[1]][:, None]
        dist = np.where(eq.all(axis=0), lev.shape[0], eq.argmin(axis=0))
        i = int(dist.argmax())
        if int(dist[i]) < PAIR_MIN_DIST:
            return None
        return refs[1][i]

    def _pair_derived(self, state: int, q: int, limit: int) -> NodeMask | None:
        """The split of ``state`` from the split of ``q`` (:meth:`_pair_reference`):
        both states are walked over the trie side by side
        (:func:`~reference_engine.trie_walk.pair_differences`), which lists the nodes
        where they part (one dies or meets an exit, the other does not); outside
        those subtrees every token meets the same fate from both (same walk, same
        exits), inside them ``state``'s own walk decides. None if the side-by-side
        walk would read more than ``limit`` trie nodes. Without a string family in
        common, only the nodes where both reach one and the same state are pruned."""
        trie, pda, words = self.trie, self.pda, self.words
        fam = self._family_of(state)
        fq = self._family_of(q)
        if fam is not None and fq is not None and fam[0] == fq[0]:
            frag = self._family_frag[fam[0]]
            lev = self._moore(frag)
        else:
            frag, lev = -1, NO_LEVELS
        got = pair_differences(trie, pda, q, state,
                               self._families if frag >= 0 else _no_families, frag, lev, limit)
        if got is None:
            self.pair_walked += 1
            return None
        dn, ds = got
        self._deriving = True  # the reference gets a split of its own
        try:
            nq = self.node(q)
        finally:
            self._deriving = False
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
        alive, cd_exits, gd_exits, at_alive, _ = self._waves(exits)
        alive = [np.array(first + at_alive, dtype=np.int64), below] + alive
        self.pair_derived += 1
        return self._merged(nq, w, dn, np.concatenate(alive),
                            *self._exit_groups(cd_exits, gd_exits))

    def _walk_split(self, state: int, only, census: bool):
        """The walks of :meth:`_split` (of the tokens beginning with a byte of ``only``,
        or all): ``(alive trie nodes, pops, guards)``, or with ``census`` the
        :class:`Census`."""
        trie, pda = self.trie, self.pda
        nodes, exits = trie.walk_root(pda, state, self._sub, self._sub_budget, only)
        alive, cd_exits, gd_exits, at_alive, via_return = self._waves(exits)
        alive.insert(0, nodes)
        if at_alive:
            alive.append(np.array(at_alive, dtype=np.int64))
        alive_nodes = np.concatenate(alive) if len(alive) > 1 else alive[0]
        if census:
            return self._count(nodes, trie.token_flags(alive_nodes), len(alive) > 1, exits,
                               cd_exits, gd_exits, via_return)
        return (alive_nodes,) + self._exit_groups(cd_exits, gd_exits)

    def _exit_groups(self, cd_exits, gd_exits) -> tuple[tuple, tuple]:
        """``(pops, guards)`` of a split from its walk's context-dependent exits, grouped
        by frames popped statically (and guard state), for the run-time pop."""
        by_k: dict[int, list[int]] = {}
        for n, kk in cd_exits:
            by_k.setdefault(kk, []).append(n)
        by_g: dict[tuple[int, int], list[int]] = {}
        for n, kk, sg in gd_exits:
            by_g.setdefault((kk, sg), []).append(n)
        pops = tuple((kk, tuple(sorted(set(ns)))) for kk, ns in sorted(by_k.items()))
        guards = tuple((kk, sg, tuple(sorted(set(ns)))) for (kk, sg), ns in sorted(by_g.items()))
        return pops, guards

    def _waves(self, exits):
        """Follow the exits ``(nodes, states)`` of a split's walk through calls, rule
        ends known statically and guards of frames pushed inside the token, walking on
        below them, until only context-dependent exits are left. Returns ``(alive
        node arrays, context-dependent pops (node, frames popped), guards (node,
        frames popped, guard state), stop nodes alive whatever the frame, nodes where
        a single-site rule's return was used)``."""
        trie, pda = self.trie, self.pda
        count = trie._py_count
        stop = pda.stop_list
        alive: list[np.ndarray] = []
        kids = trie.child_count32
        cd_exits: list[tuple[int, int]] = []  # (trie node, frames popped statically)
        gd_exits: list[tuple[int, int, int]] = []  # (trie node, frames popped, guard state)
        at_alive: list[int] = []  # stop nodes whose tokens live whatever the frame
        via_return: list[int] = []  # trie nodes where a single-site rule's return was used
        work: dict[tuple, list[int]] = {}
        for t, ns in group_exits(exits, kids, pda.stopflag):
            work[(t, (), 0)] = ns
        seen: set = set()
        while work:
            # In waves: every walk the current work items call for goes into one
            # compiled walk, so the walks share its rounds of building new rows.
            wave, work = work, {}
            roots: list[int] = []
            states: list[int] = []
            spans: list[tuple[int, int, tuple, int]] = []  # (first root, end, l2, k2)
            for (t, lst, k), ns in wave.items():
                confs, pops, guards, lookahead = self._local_closure(t, lst, k)
                if lookahead:
                    via_return.extend(ns)
                for _, kk in pops:
                    cd_exits.extend((n, kk) for n in ns)
                for sg, kk in guards:
                    gd_exits.extend((n, kk, sg) for n in ns)
                is_stop = stop[t]
                if is_stop and (confs or pops or lookahead):
                    at_alive.extend(ns)
                for s2, l2, k2 in confs:
                    if not is_stop and s2 == t and l2 == lst and k2 == k:
                        continue  # the pure continuation: the walk that found the exit went on
                    todo = []
                    for n in ns:
                        key = (n, s2, l2, k2)
                        if count[n] and key not in seen:
                            seen.add(key)
                            todo.append(n)
                    if todo:
                        spans.append((len(roots), len(roots) + len(todo), l2, k2))
                        roots.extend(todo)
                        states.extend([s2] * len(todo))
            if not roots:
                continue
            a2, _, (en, es), e_off = walk_roots(trie, pda, roots, states, alive_by_root=False)
            if a2.size:
                alive.append(a2)
            for r0, r1, l2, k2 in spans:
                lo, hi = e_off[r0], e_off[r1]
                if lo < hi:
                    for t2, ns2 in group_exits((en[lo:hi], es[lo:hi]), kids, pda.stopflag):
                        work.setdefault((t2, l2, k2), []).extend(ns2)
        return alive, cd_exits, gd_exits, at_alive, via_return

    def _count(self, nodes, accepted, expanded: bool, exits, cd_exits, gd_exits,
               via_return) -> Census:
        """The :class:`Census` from a split's pieces (see :meth:`_split`): ``nodes``,
        the first walk's alive nodes; ``expanded``, whether walks went on from exits."""
        trie = self.trie
        cd = np.zeros(trie.vocab_size, dtype=bool)
        cd_nodes = sorted({n for n, _ in cd_exits} | {n for n, _, _ in gd_exits})
        if cd_nodes:
            cd[trie.tokens_below(cd_nodes)] = True
        if gd_exits:
            cd[trie.tokens_at(np.array(sorted({n for n, _, _ in gd_exits}), dtype=np.int64))] = True
        cd &= ~accepted
        # the split without any expansion: tokens below an exit would be context-dependent
        plain_exits = exits[0][trie.child_count32[exits[0]] > 0]
        plain_cd = np.zeros(trie.vocab_size, dtype=bool)
        if plain_exits.size:
            plain_cd[trie.tokens_below(plain_exits)] = True
        plain_cd &= ~(trie.token_flags(nodes) if expanded else accepted)
        moved_return = 0
        if via_return:
            la = np.zeros(trie.vocab_size, dtype=bool)
            la[trie.tokens_below(sorted(set(via_return)))] = True
            moved_return = int((la & plain_cd & ~cd).sum())
        n_cd = int(cd.sum())
        return Census(n_cd, max(0, int(plain_cd.sum()) - n_cd), moved_return)

    # ------------------------------------------------------------ run time
    def context(self, state: int, stack: int) -> WordSet:
        """Context-dependent tokens of ``state`` allowed with the live ``stack``
        (:meth:`~reference_engine.contexts.Contexts.context`)."""
        return self._context(state, stack)

    def fill(self, configs: tuple, accept: bool, out: np.ndarray,
             kstate: tuple | None = None) -> None:
        """Write the mask of a configuration set (and EOS if ``accept``) into ``out``;
        with the duplicate-key tracker's state ``kstate``, less the tokens the duplicate-key
        rule refuses (:meth:`~reference_engine.dupkeys.DuplicateKeyFilter.filter_mask`)."""
        if len(configs) == 1:
            # one configuration without context-dependent tokens: the node's own entry
            # is the mask (a memset and one store; not worth a composed copy)
            nm = self._nodes.get(configs[0][0])
            if nm is None:
                nm = self.node(configs[0][0])
            if not nm.pops and not nm.guards:
                nm.write(out)
                if accept:
                    for w, v in self._stop_words:
                        out[w] |= v
                if kstate is not None:
                    self.keys.filter_mask(configs, kstate, out)
                return
        key = (configs, accept, kstate)
        hit = self._final.get(key)
        if hit is not None:
            out[:] = hit
            return
        if not configs:
            out.fill(0)
        else:
            first = True
            for s, st in configs:
                nm = self._nodes.get(s)
                if nm is None:
                    nm = self.node(s)
                if first:
                    nm.write(out)
                    first = False
                else:
                    nm.merge(out)
                if nm.pops or nm.guards:
                    ws = self._context(s, st)
                    or_pairs(out, ws.idx, ws.val)
        if accept:
            for w, v in self._stop_words:
                out[w] |= v
        if kstate is not None:
            self.keys.filter_mask(configs, kstate, out)
        fc = self._final
        fc[key] = out.copy()
        if len(fc) > FINAL_CACHE_SIZE:
            fc.popitem(last=False)

    def key_allows(self, configs: tuple, kstate: tuple, data: bytes, after=None) -> bool:
        """The duplicate-key rule for ``data`` read from ``(configs, kstate)``
        (:meth:`~reference_engine.dupkeys.DuplicateKeyFilter.allows`; True without
        ``json_keys``)."""
        return True if self.keys is None else self.keys.allows(configs, kstate, data, after)

    def _walk_memo_bytes(self) -> int:
        """Bytes of the arrays the walk memos hold (the subtrees below first bytes, the
        context walks and their token ids; Python containers around them not counted)."""
        total = self.contexts.memo_bytes()
        for alive, (en, es) in self._sub.values():
            total += alive.nbytes + en.nbytes + es.nbytes
        return total

    def stats(self) -> dict:
        """Cache sizes and the vocabulary split, summed over the states visited.

        Bytes are numpy buffer sizes; ``dense_equiv_bytes`` is what one dense
        bitmask per state would take (states × words × 4 bytes)."""
        # one state per distinct entry (states may share one, see mask_key)
        first: dict[int, tuple[int, NodeMask]] = {}
        for st, nm in self._nodes.items():
            first.setdefault(id(nm), (st, nm))
        nodes = [nm for _, nm in first.values()]
        with self.lock:
            cens = [self.census(st) for st, _ in first.values()]
        fmt = {"dense": 0, "accepted": 0, "rejected": 0}
        for nm in nodes:
            fmt[nm.kind] += 1
        n = len(nodes)
        vocab = self.trie.vocab_size
        kf = self.keys
        ctx = self.contexts.entries()
        return {
            "nodes": n,
            "states_sharing_an_entry": self._shared,
            "node_formats": fmt,
            "node_cache_bytes": sum(nm.nbytes for nm in nodes),
            "dense_equiv_bytes": n * self.words * 4,
            "ctx_entries": len(ctx),
            # (an entry served to several stacks counted once)
            "ctx_cache_bytes": sum(w.nbytes for w in {id(w): w for w in ctx.values()}.values()),
            "ctx_shared": self.contexts.ctx_shared,
            "ctx_frame_shared": self.contexts.ctx_frame_shared,
            "final_entries": len(self._final),
            "final_cache_bytes": len(self._final) * self.words * 4,
            "walk_memo_bytes": self._walk_memo_bytes(),
            "ci_accepted_avg": (sum(nm.n_accepted for nm in nodes) / n) if n else 0.0,
            "ci_rejected_avg": (sum(vocab - nm.n_accepted - c.n_cd
                                    for nm, c in zip(nodes, cens)) / n) if n else 0.0,
            "cd_avg": (sum(c.n_cd for c in cens) / n) if n else 0.0,
            "cd_max": max((c.n_cd for c in cens), default=0),
            "expansion_moved_avg": (sum(c.moved for c in cens) / n) if n else 0.0,
            "expansion_moved_max": max((c.moved for c in cens), default=0),
            "expansion_nodes_moved": sum(1 for c in cens if c.moved),
            "lookahead_moved_avg": (sum(c.moved_return for c in cens) / n) if n else 0.0,
            "lookahead_nodes_moved": sum(1 for c in cens if c.moved_return),
            "precomputed_nodes": self.precomputed,
            "derived_nodes": self.derived,
            "window_derived_nodes": self.windowed,
            "unwindowed_nodes": self.unwindowed,
            "near_window_nodes": self.near_windowed,
            "pair_derived_nodes": self.pair_derived,
            "pair_walked_nodes": self.pair_walked,
            "precomputed_key_ends": self.warmed,
            "precompute_s": round(self.precompute_s, 4),
            "key_states": kf.states_cached() if kf is not None else 0,
            "key_checks": kf.key_checks if kf is not None else 0,
            "key_cleared": kf.key_cleared if kf is not None else 0,
        }


class GrammarMatcher:
    """One sequence: a stack of ``(configurations, accepting)`` per step."""

    __slots__ = ("pda", "masks", "tokens", "stop", "special", "_hist", "_dead", "_keys")

    def __init__(self, pda: PDA, masks: MaskComputer, tokens, stop_ids=(), special_ids=(),
                 json_keys: bool = False):
        self.pda = pda
        self.masks = masks
        self.tokens = tokens
        self.stop = frozenset(stop_ids)
        self.special = frozenset(special_ids) | self.stop
        self._hist: list[tuple[tuple, bool]] = [pda.initial()]
        self._dead = False
        #: duplicate-key tracker state per step, parallel to ``_hist`` (None: no check)
        self._keys: list[tuple] | None = [jkeys.START] if json_keys else None

    @property
    def configurations(self) -> tuple:
        return self._hist[-1][0]

    def fill_mask(self, out: np.ndarray) -> None:
        if self._dead:
            out.fill(0)
            return
        configs, accept = self._hist[-1]
        with self.masks.lock:
            self.masks.fill(configs, accept, out, None if self._keys is None else self._keys[-1])

    def keys_allow(self, data: bytes) -> bool:
        """Would ``data`` repeat no key of an open object? (the check the mask and the
        commit apply beside the automaton; for brute-force tests)"""
        if self._keys is None:
            return True
        with self.masks.lock:
            return self.masks.key_allows(self._hist[-1][0], self._keys[-1], data)

    def accept_token(self, token_id: int) -> bool:
        if self._dead:
            return False
        configs, accept = self._hist[-1]
        if token_id in self.special:
            if token_id in self.stop and accept:
                return True  # the sequence ends; nothing recorded
            self._dead = True
            return False
        data = self.tokens[token_id]
        if not data:
            self._dead = True
            return False
        with self.masks.lock:
            res = self.pda.advance(configs, data)
            if res is None:
                self._dead = True
                return False
            if self._keys is not None:
                kstate = self._keys[-1]
                ks = jkeys.step(kstate, data)
                # (where no dead end can arise, not repeating a key is all the rule asks)
                kf = self.masks.keys
                if ks is None or (not kf.close_only
                                  and not kf.allows(configs, kstate, data, res[0])):
                    self._dead = True  # repeats a key, or leaves only repeats to complete one
                    return False
                self._keys.append(ks)
        self._hist.append(res)
        return True

    def accept_bytes(self, data: bytes) -> bool:
        """Advance by raw bytes (not a token; for tests and tools)."""
        if self._dead:
            return False
        with self.masks.lock:
            res = self.pda.advance(self._hist[-1][0], data)
            if res is None:
                return False
            if self._keys is not None:
                if not self.masks.key_allows(self._hist[-1][0], self._keys[-1], data, res[0]):
                    return False
                self._keys.append(jkeys.step(self._keys[-1], data))
        self._hist.append(res)
        return True

    def is_accepting(self) -> bool:
        return not self._dead and self._hist[-1][1]

    def is_dead(self) -> bool:
        return self._dead

    def steps(self) -> int:
        return len(self._hist) - 1

    def rollback(self, n: int) -> None:
        if n < 0 or n > len(self._hist) - 1:
            raise ValueError(f"rollback({n}): {len(self._hist) - 1} steps to undo")
        if self._dead:
            raise ValueError("rollback on a dead matcher (a token was rejected); reset() it")
        if n:
            del self._hist[-n:]
            if self._keys is not None:
                del self._keys[-n:]

    def reset(self) -> None:
        self._hist = [self.pda.initial()]
        self._dead = False
        if self._keys is not None:
            self._keys = [jkeys.START]
