"""Storage of the adaptive token mask cache: one entry per automaton node (DFA state).

A node's entry holds its *context-independent accepted* tokens in whichever of three
formats is smallest for its density (the other context-independent tokens are
rejected; the context-dependent ones are cleared and settled at run time):

``dense``     the packed bitmask, ``words`` int32 (16,032 bytes at 128,256 tokens);
``accepted``  a sparse list of the words of that bitmask that are not all zeros, as
              (word index, 32 bits) pairs: 6 bytes per pair (uint16 index + int32);
``rejected``  a sparse list of the words that are not all ones (the accepted set is
              everything else): the same pairs, for nearly-full masks.

A pair list of set bits is a token-id list grouped by word, so clustered token ids (as
in a sorted vocabulary) cost less than 4 bytes each; filling a mask from it is a memset
and one fancy-index store, never a loop over tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

#: bytes of one sparse (word index, word) pair
PAIR_BYTES = 6
#: token-id lists up to this long are packed into pairs by sorting them; longer ones
#: through a vocabulary-sized flag array (a fixed cost of a few hundred microseconds)
SORT_PACK_MAX = 4096


def pack_flags(flags: np.ndarray, words: int) -> np.ndarray:
    """Packed little-endian int32 bitmask of ``words`` words from a bool per token id."""
    out = np.zeros(words * 4, dtype=np.uint8)
    packed = np.packbits(flags, bitorder="little")
    out[: packed.size] = packed
    return out.view(np.int32)


def _index_dtype(words: int):
    return np.uint16 if words <= 0xFFFF else np.int32


@dataclass(frozen=True)
class WordSet:
    """A token set as the (word index, bits) pairs of its non-zero words."""

    idx: np.ndarray
    val: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.idx.nbytes + self.val.nbytes)


@njit(cache=True, nogil=True)
def _pairs(ids):
    # one pass over the sorted ids: numpy's unique + reduceat cost tens of microseconds
    # in call overhead on the short lists most contexts produce
    ids = np.sort(ids)
    n = ids.shape[0]
    idx = np.empty(n, dtype=np.int64)
    val = np.empty(n, dtype=np.uint32)
    m = 0
    distinct = 0
    prev = -1
    for i in range(n):
        t = ids[i]
        if t == prev:
            continue
        prev = t
        distinct += 1
        w = t >> 5
        b = np.uint32(1) << np.uint32(t & 31)
        if m > 0 and idx[m - 1] == w:
            val[m - 1] |= b
        else:
            idx[m] = w
            val[m] = b
            m += 1
    return idx[:m], val[:m], distinct


@njit(cache=True, nogil=True)
def _or_pairs(out, idx, val):
    for i in range(idx.shape[0]):
        out[idx[i]] |= val[i]


def or_pairs(out: np.ndarray, idx: np.ndarray, val: np.ndarray) -> None:
    """``out[idx] |= val`` for (word index, bits) pairs with distinct indices (compiled:
    numpy's fancy-indexed update costs a few microseconds of temporaries per call)."""
    if idx.size:
        _or_pairs(out, idx, val)


@njit(cache=True, nogil=True)
def _clear_ids(out, ids):
    n = 0
    for t in ids:
        w = t >> 5
        b = np.int32(1) << np.int32(t & 31)
        if out[w] & b:
            out[w] &= ~b
            n += 1
    return n


def clear_ids(out: np.ndarray, ids: np.ndarray) -> int:
    """Clear token ``ids`` (int64) from the bitmask ``out``; returns how many were set."""
    return int(_clear_ids(out, ids)) if ids.size else 0


def sorted_pairs(ids: np.ndarray, words: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(word indices, words, distinct ids)`` of token ``ids`` (duplicates allowed):
    the non-zero words of their bitmask, ascending, without building the bitmask."""
    if ids.size == 0:
        return np.zeros(0, dtype=_index_dtype(words)), np.zeros(0, dtype=np.int32), 0
    idx, val, n = _pairs(ids.astype(np.int64, copy=False))
    return idx.astype(_index_dtype(words)), val.view(np.int32), int(n)


def word_set(ids: np.ndarray, words: int) -> WordSet:
    """The :class:`WordSet` of token ``ids`` (duplicates allowed)."""
    if ids.size == 0:
        return WordSet(np.zeros(0, dtype=_index_dtype(words)), np.zeros(0, dtype=np.int32))
    if ids.size <= SORT_PACK_MAX:
        idx, val, _ = sorted_pairs(ids, words)
        return WordSet(idx, val)
    flags = np.zeros(words * 32, dtype=bool)
    flags[ids] = True
    w = pack_flags(flags, words)
    nz = np.flatnonzero(w)
    return WordSet(nz.astype(_index_dtype(words)), w[nz])


@dataclass(frozen=True)
class NodeMask:
    """The cached split of the vocabulary at one node.

    ``kind``: ``dense`` | ``accepted`` | ``rejected`` (see the module docstring);
    ``words`` (dense) or ``idx``/``val`` (sparse) hold the context-independent accepted
    set. ``pops``: ``(k, trie nodes)`` groups — the context-dependent tokens are those
    strictly below these trie nodes, where a rule ends and the live stack must be
    popped after ``k`` frames already known statically. ``guards``: ``(k, state, trie
    nodes)`` groups — tokens ending at or below these nodes, where ``state`` (after
    ``k`` static pops) meets an object guard or needs the object frame to live, are
    settled against the frame on the live stack. ``n_accepted``: tokens accepted
    context-independently. (How many tokens are context-dependent, and how many context
    expansion moved, is a :class:`Census`, counted only when statistics are asked for.)"""

    kind: str
    words: np.ndarray | None
    idx: np.ndarray | None
    val: np.ndarray | None
    pops: tuple
    n_accepted: int
    guards: tuple = ()

    @property
    def nbytes(self) -> int:
        """Bytes of the stored mask (numpy buffers)."""
        if self.kind == "dense":
            return int(self.words.nbytes)
        return int(self.idx.nbytes + self.val.nbytes)

    def write(self, out: np.ndarray) -> None:
        """Overwrite ``out`` with the context-independent accepted set."""
        if self.kind == "dense":
            out[:] = self.words
        elif self.kind == "accepted":
            out.fill(0)
            out[self.idx] = self.val
        else:
            out.fill(-1)
            out[self.idx] = self.val

    def merge(self, out: np.ndarray) -> None:
        """``out |= `` the context-independent accepted set."""
        if self.kind == "dense":
            np.bitwise_or(out, self.words, out=out)
        elif self.kind == "accepted":
            or_pairs(out, self.idx, self.val)
        else:
            keep = out[self.idx] | self.val
            out.fill(-1)
            out[self.idx] = keep


def node_mask(accepted: np.ndarray, words: int, pops: tuple, guards: tuple = ()) -> NodeMask:
    """Store a node's split (``accepted``: bool per token id, the context-independently
    accepted tokens) in the smallest of the three formats."""
    return node_mask_of_words(pack_flags(accepted, words), pops, guards, int(accepted.sum()))


def node_mask_of_words(w: np.ndarray, pops: tuple, guards: tuple = (),
                       n_acc: int | None = None) -> NodeMask:
    """:func:`node_mask` from the packed bitmask ``w`` (int32 words, kept if dense) of
    the accepted tokens, ``n_acc`` of them (counted if None)."""
    words = w.size
    if n_acc is None:
        n_acc = int(np.bitwise_count(w.view(np.uint32)).sum())
    nz = np.flatnonzero(w)
    not_full = np.flatnonzero(w != -1)
    dense_b = words * 4
    acc_b = nz.size * PAIR_BYTES
    rej_b = not_full.size * PAIR_BYTES
    dt = _index_dtype(words)
    if acc_b <= rej_b and acc_b < dense_b:
        return NodeMask("accepted", None, nz.astype(dt), w[nz].copy(), pops, n_acc, guards)
    if rej_b < dense_b:
        return NodeMask("rejected", None, not_full.astype(dt), w[not_full].copy(), pops,
                        n_acc, guards)
    return NodeMask("dense", w, None, None, pops, n_acc, guards)


def node_mask_of_ids(ids: np.ndarray, words: int, pops: tuple,
                     guards: tuple = ()) -> NodeMask:
    """:func:`node_mask` from the accepted token ``ids`` (duplicates allowed): the
    ``accepted`` format straight from sorted ids when it is the smallest, as it is for
    the narrow sets of most structural positions (a few tokens out of the vocabulary)."""
    if ids.size <= SORT_PACK_MAX:
        idx, val, n_acc = sorted_pairs(ids, words)
        if idx.size * PAIR_BYTES < words * 4:
            return NodeMask("accepted", None, idx, val, pops, n_acc, guards)
    flags = np.zeros(words * 32, dtype=bool)
    flags[ids] = True
    return node_mask(flags, words, pops, guards)


@dataclass(frozen=True)
class Census:
    """Token counts of one node's split that only statistics need (counting them costs
    a few vocabulary-sized passes, so masks do not): ``n_cd``, the context-dependent
    tokens; ``moved``, tokens that would be context-dependent without context expansion
    (walking through calls and into statically known returns) and are
    context-independent with it; ``moved_return``, those of them below a trie node where
    the walk went on into the single return state of a rule called from one place (the
    lookahead alone)."""

    n_cd: int
    moved: int
    moved_return: int
