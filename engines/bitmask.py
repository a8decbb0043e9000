"""The token bitmask every engine fills.

Layout (shared by all engines, the one XGrammar, llguidance and outlines-core use): a
caller-owned 1-D ``numpy.int32`` array of ``ceil(V / 32)`` words; bit ``i % 32`` of word
``i // 32`` set means token ``i`` is allowed. Adapters fill it in place and never allocate
per step; a batch is a ``[B, W]`` array whose rows have this layout.
"""

from __future__ import annotations

from typing import cast

import numpy as np

__all__ = ["allocate_bitmask", "bitmask_words", "check_bitmask", "pack_allowed", "token_bit"]


def bitmask_words(vocab_size: int) -> int:
    """Number of int32 words of a bitmask covering ``vocab_size`` tokens."""
    return (vocab_size + 31) // 32


def allocate_bitmask(vocab_size: int) -> np.ndarray:
    """A zeroed caller-owned bitmask for one sequence."""
    return np.zeros(bitmask_words(vocab_size), dtype=np.int32)


def check_bitmask(bitmask: np.ndarray, words: int) -> None:
    """Raise ValueError unless ``bitmask`` is a C-contiguous 1-D int32 array of ``words``.

    Adapters call it once per array object (not per step; :class:`engines.matcher.
    BoundMatcher` does): some engines write through a raw pointer and would silently fill
    a strided view as if it were contiguous."""
    if (
        bitmask.dtype != np.int32
        or bitmask.ndim != 1
        or not bitmask.flags["C_CONTIGUOUS"]
        or bitmask.size != words
    ):
        raise ValueError(
            f"bitmask must be a C-contiguous 1-D int32 array of {words} words, "
            f"got {bitmask.dtype} shape {bitmask.shape}"
        )


def token_bit(token_id: int) -> tuple[int, np.int32]:
    """``(word index, int32 value with only the token's bit set)``: ``bitmask[w] & b`` tests
    the token, ``bitmask[w] |= b`` allows it."""
    # a 0-d array indexed by () is its scalar; numpy's stubs type it as an array
    return token_id // 32, cast(np.int32, np.array(1 << (token_id % 32),
                                                  dtype=np.uint32).view(np.int32)[()])


def pack_allowed(allowed: np.ndarray, bitmask: np.ndarray) -> None:
    """Write a boolean array (``allowed[i]``: token ``i`` allowed) into ``bitmask`` in place;
    the bits past ``len(allowed)`` are cleared."""
    packed = np.packbits(allowed, bitorder="little")
    buf = bitmask.view(np.uint8)
    buf[: packed.size] = packed
    buf[packed.size:] = 0
