"""Matchers: per-sequence configuration sets, masks, rollback.

:class:`MaskComputer` (one per compiled grammar and vocabulary, shared by its
matchers) computes exact token masks:

- for a configuration ``(state, stack)``, the tokens whose bytes keep ``state`` alive
  *without* leaving its rule are found by a vectorised trie walk
  (:meth:`~reference_engine.trie.TokenTrie.walk`) and cached per state as a packed
  bitmask: they are allowed whatever the stack holds;
- the walk also reports *exits* (trie nodes where the rule may end or call another
  rule); from each exit the stack is consulted (pop / push through
  :meth:`~reference_engine.pda.PDA.closure`) and the rest of the subtree is walked
  from the configurations found there, recursively. The result depends on the
  stack and is cached per ``(state, stack)``; stacks are hash-consed, so the same
  nesting reuses it.

This is exact by construction (every token is either walked byte by byte through
the automaton or pruned because a prefix is dead); ``brute_force_mask`` in the
tests re-derives masks token by token to check it.

:class:`GrammarMatcher` keeps one ``(configurations, accepting)`` entry per
committed token, so ``rollback(n)`` just drops entries (no recomputation).
"""

from __future__ import annotations

import numpy as np

from reference_engine.pda import PDA
from reference_engine.trie import TokenTrie


def words_for(vocab_size: int) -> int:
    return (vocab_size + 31) // 32


class MaskComputer:
    def __init__(self, pda: PDA, trie: TokenTrie, stop_ids=()):
        self.pda = pda
        self.trie = trie
        self.words = words_for(trie.vocab_size)
        self.stop_ids = tuple(stop_ids)
        self._root: dict[int, tuple[np.ndarray, list]] = {}
        self._ctx: dict[tuple[int, int], np.ndarray] = {}
        self._nbytes = self.words * 4

    def _pack(self, flags: np.ndarray) -> np.ndarray:
        """Packed int32 bitmask from a bool per token id."""
        out = np.zeros(self._nbytes, dtype=np.uint8)
        packed = np.packbits(flags, bitorder="little")
        out[: packed.size] = packed
        return out.view(np.int32)

    def root(self, state: int) -> tuple[np.ndarray, list]:
        """(packed bitmask of the tokens allowed from ``state`` inside its rule, exits)."""
        got = self._root.get(state)
        if got is None:
            nodes, exits = self.trie.walk(self.pda, state, 0)
            got = (self._pack(self.trie.token_flags(nodes)), exits)
            self._root[state] = got
        return got

    def context(self, state: int, stack: int) -> np.ndarray:
        """Token ids allowed from ``(state, stack)`` through rule ends and calls.

        Exits are grouped by (exit state, stack): the configurations that follow are
        the same for all of them, so their subtrees are walked together."""
        key = (state, stack)
        got = self._ctx.get(key)
        if got is not None:
            return got
        pda = self.pda
        child_count = self.trie._py_count
        parts: list[np.ndarray] = []
        seen: set = set()
        work: dict[tuple[int, int], list[int]] = {}
        for node, t in self.root(state)[1]:
            if child_count[node]:
                work.setdefault((t, stack), []).append(node)
        while work:
            (t, st), nodes = work.popitem()
            confs, _ = pda.closure(t, st)
            for s2, st2 in confs:
                if s2 == t and st2 == st:
                    continue  # the pure continuation, walked by the caller
                todo = []
                for node in nodes:
                    k = (node, s2, st2)
                    if k not in seen:
                        seen.add(k)
                        todo.append(node)
                if not todo:
                    continue
                alive, exits = self.trie.walk_many(pda, s2, todo)
                if alive.size:
                    parts.append(self.trie.tokens_at(alive))
                for n2, t2 in exits:
                    if child_count[n2]:
                        work.setdefault((t2, st2), []).append(n2)
        got = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
        self._ctx[key] = got
        return got

    def fill(self, configs: tuple, accept: bool, out: np.ndarray) -> None:
        if not configs:
            out.fill(0)
        else:
            first = True
            for s, st in configs:
                words, exits = self.root(s)
                if first:
                    out[:] = words
                    first = False
                else:
                    np.bitwise_or(out, words, out=out)
                if exits:
                    ids = self.context(s, st)
                    if ids.size:
                        np.bitwise_or.at(out, ids >> 5,
                                         (np.ones(1, np.uint32) << (ids & 31).astype(np.uint32))
                                         .view(np.int32))
        if accept:
            for t in self.stop_ids:
                v = 1 << (t & 31)
                out[t >> 5] |= v - (1 << 32) if v >= 1 << 31 else v

    def stats(self) -> dict:
        return {"root_cached": len(self._root), "ctx_cached": len(self._ctx),
                "root_bytes": sum(w.nbytes for w, _ in self._root.values())}


class GrammarMatcher:
    """One sequence: a stack of ``(configurations, accepting)`` per step."""

    __slots__ = ("pda", "masks", "tokens", "stop", "special", "_hist", "_dead")

    def __init__(self, pda: PDA, masks: MaskComputer, tokens, stop_ids=(), special_ids=()):
        self.pda = pda
        self.masks = masks
        self.tokens = tokens
        self.stop = frozenset(stop_ids)
        self.special = frozenset(special_ids) | self.stop
        self._hist: list[tuple[tuple, bool]] = [pda.initial()]
        self._dead = False

    @property
    def configurations(self) -> tuple:
        return self._hist[-1][0]

    def fill_mask(self, out: np.ndarray) -> None:
        if self._dead:
            out.fill(0)
            return
        configs, accept = self._hist[-1]
        self.masks.fill(configs, accept, out)

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
        res = self.pda.advance(configs, data)
        if res is None:
            self._dead = True
            return False
        self._hist.append(res)
        return True

    def accept_bytes(self, data: bytes) -> bool:
        """Advance by raw bytes (not a token; for tests and tools)."""
        if self._dead:
            return False
        res = self.pda.advance(self._hist[-1][0], data)
        if res is None:
            return False
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

    def reset(self) -> None:
        self._hist = [self.pda.initial()]
        self._dead = False
