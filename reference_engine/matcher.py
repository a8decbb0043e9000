"""Matchers: per-sequence configuration sets, masks, rollback.

:class:`MaskComputer` (one per compiled grammar and vocabulary, shared by its
matchers) computes exact token masks with an **adaptive token mask cache**
(:mod:`reference_engine.maskcache` stores it). It composes four parts, one idea each:

- :mod:`reference_engine.splits` (with :mod:`~reference_engine.split_walk` and
  :mod:`~reference_engine.derive`): for each DFA state (an automaton node), the
  vocabulary split once into tokens accepted whatever the stack holds
  (*context-independent accepted*), rejected whatever it holds (*context-independent
  rejected*) and the *context-dependent* rest: one trie walk from the state extended
  through calls, local frames and statically known returns (the *context
  expansion*), or derived from another state's split. Only a rule end that must pop a
  frame of the live stack, or an object guard that needs the live frame, leaves tokens
  context-dependent.
- :mod:`reference_engine.contexts`: at run time a configuration ``(state, stack)``
  starts from the cached accepted set and checks only the context-dependent tokens
  against the live stack (:meth:`MaskComputer.context`, cached per
  ``(context-dependent groups, stack)`` and shared between stacks alike in what the
  computation read).
- :mod:`reference_engine.dupkeys`: the duplicate-key rule, applied to a finished mask.
- :mod:`reference_engine.precompute`: the entries most decodes need, built at compile
  time within a budget.

:meth:`MaskComputer.fill` writes a single configuration whose node has no
context-dependent tokens straight from the node's entry; any other composed mask
(several configurations, or context-dependent tokens settled) is kept in a small LRU
of dense bitmasks, so a revisited step is a dict lookup and a 16 KiB copy.

This is exact by construction (every token is either walked byte by byte through the
automaton or pruned because a prefix is dead); the tests re-derive masks token by
token from the live configurations to check it, bit for bit.

:class:`GrammarMatcher` keeps one ``(configurations, accepting)`` entry per
committed token, so ``rollback(n)`` just drops entries (no recomputation).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

import numpy as np

from reference_engine import keys as jkeys
from reference_engine.contexts import Contexts
from reference_engine.dupkeys import DuplicateKeyFilter
from reference_engine.maskcache import Census, NodeMask, WordSet, or_pairs
from reference_engine.pda import PDA
from reference_engine.precompute import build_nodes, warm_key_ends
from reference_engine.splits import Splits
from reference_engine.trie import TokenTrie

#: Composed masks of whole configuration sets (after the duplicate-key check, per tracker
#: state) kept (dense, 16 KiB each at 128k tokens).
FINAL_CACHE_SIZE = 512


def words_for(vocab_size: int) -> int:
    """Number of int32 words of a bitmask over ``vocab_size`` tokens."""
    return (vocab_size + 31) // 32


class MaskComputer:
    """Exact masks for one compiled grammar and one vocabulary (shared by matchers): the
    split cache, the contexts and the duplicate-key filter composed into :meth:`fill`."""

    def __init__(self, pda: PDA, trie: TokenTrie, stop_ids=(), json_keys: bool = False,
                 key_floor: int | None = None):
        self.pda = pda
        self.trie = trie
        self.words = words_for(trie.vocab_size)
        self.stop_ids = tuple(stop_ids)
        #: the compile-time half: a split per automaton state
        self.splits = Splits(pda, trie, self.words)
        # (the cache dict and node() bound once: fill reads them per configuration)
        self._nodes: dict[int, NodeMask] = self.splits.nodes
        self._node = self.splits.node
        #: the run-time half: context-dependent tokens settled against the live stack
        self.contexts = Contexts(pda, trie, self.words, self._node)
        self._context = self.contexts.context
        self._final: OrderedDict = OrderedDict()
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

    # ------------------------------------------------------------ compile time
    def node(self, state: int) -> NodeMask:
        """The cached three-way split of the vocabulary at ``state`` (built on first use;
        :meth:`~reference_engine.splits.Splits.node`)."""
        return self._node(state)

    def mask_key(self, state: int) -> int | frozenset:
        """A key equal for states whose masks are equal
        (:meth:`~reference_engine.splits.Splits.mask_key`)."""
        return self.splits.mask_key(state)

    def census(self, state: int) -> Census:
        """The :class:`Census` of ``state``'s split, for statistics
        (:meth:`~reference_engine.splits.Splits.census`)."""
        return self.splits.census(state)

    def precompute(self, budget_s: float) -> None:
        """Build ahead, at compile time, the cache entries nearly every decode of the
        grammar needs (:mod:`reference_engine.precompute`), for about ``budget_s``
        seconds at most (checked between entries, after the first; 0 builds nothing).
        Masks are unchanged; ``precomputed_nodes``, ``precomputed_key_ends`` and
        ``precompute_s`` (in :meth:`stats`) say what it did."""
        if budget_s <= 0:
            return
        t0 = time.perf_counter()
        deadline = t0 + budget_s
        if any(fc.any_char_window for fc in self.pda.frag_class):
            self.trie.json_chars()  # for window derivations (once per vocabulary, ~0.1 s)
        with self.lock:
            built = build_nodes(self.splits, deadline)
            self.warmed += warm_key_ends(self.splits, self.contexts, deadline)
        self.precomputed = built
        self.precompute_s = time.perf_counter() - t0

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
                nm = self._node(configs[0][0])
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
                    nm = self._node(s)
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
        return self.splits.walker.memo_bytes() + self.contexts.memo_bytes()

    def stats(self) -> dict:
        """Cache sizes and the vocabulary split, summed over the states visited.

        Bytes are numpy buffer sizes; ``dense_equiv_bytes`` is what one dense
        bitmask per state would take (states × words × 4 bytes)."""
        # one state per distinct entry (states may share one, see mask_key)
        sp = self.splits
        first: dict[int, tuple[int, NodeMask]] = {}
        for st, nm in self._nodes.items():
            first.setdefault(id(nm), (st, nm))
        nodes = [nm for _, nm in first.values()]
        with self.lock:
            cens = [sp.census(st) for st, _ in first.values()]
        fmt = {"dense": 0, "accepted": 0, "rejected": 0}
        for nm in nodes:
            fmt[nm.kind] += 1
        n = len(nodes)
        vocab = self.trie.vocab_size
        kf = self.keys
        dv = sp.derive
        ctx = self.contexts.entries()
        return {
            "nodes": n,
            "states_sharing_an_entry": sp.shared,
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
            "derived_nodes": dv.derived,
            "window_derived_nodes": dv.windowed,
            "unwindowed_nodes": sp.unwindowed,
            "near_window_nodes": dv.near_windowed,
            "pair_derived_nodes": dv.pair_derived,
            "pair_walked_nodes": dv.pair_walked,
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
