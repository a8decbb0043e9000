"""Bitmasks as token sets, and the per-vocabulary token classes the policy uses.

Bitmask layout is the engines' (``engines/bitmask.py``): int32 words, bit ``i % 32`` of word
``i // 32`` set = token ``i`` allowed. Sets compared here leave out special ids (stop
tokens included): the stop tokens are judged apart, as one boolean "EOS allowed", because
engines put different subsets of the stop ids in their masks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from engines.vocab import Vocabulary


def as_bool(bitmask: np.ndarray, n: int) -> np.ndarray:
    """The mask as a bool array of ``n`` entries (little-endian bit order, as engines)."""
    return np.unpackbits(bitmask.view(np.uint8), bitorder="little", count=n).astype(bool)


def has_bit(bitmask: np.ndarray, tid: int) -> bool:
    return bool((int(bitmask[tid >> 5]) >> (tid & 31)) & 1)


@dataclass
class TokenClasses:
    """Per-vocabulary arrays over token ids (bool, length ``vocab.size``).

    ``regular``  not a special id (what mask sets count)
    ``space``    bytes are only JSON whitespace
    ``separator`` bytes start, after blanks, with ``,`` or ``:``
    ``opener``   from outside strings, opens a string and spells nothing in it

    and, per JSON scanner state ``s`` (:data:`OUT` of strings, :data:`IN` a string,
    :data:`ESC` just after a backslash in a string), what reading the token's bytes from
    ``s`` does: ``end[s]`` the state after it, ``delta[s]`` the change of container depth
    (``{``/``[`` minus ``}``/``]`` outside strings). The sampling policy uses them to find the
    tokens that close structures, whatever the engine allows inside strings.
    """

    vocab: Vocabulary
    regular: np.ndarray
    space: np.ndarray
    end: np.ndarray    # (3, V) int8
    delta: np.ndarray  # (3, V) int16
    stop_ids: tuple[int, ...]
    #: the token starts (after blanks) with ``,`` or ``:``: a separator, ending a value
    separator: np.ndarray | None = None
    #: from outside strings, the token opens a string and spells nothing in it (``"``,
    #: `` "``, ``{"``, ``,"``)
    opener: np.ndarray | None = None

    @classmethod
    def of(cls, vocab: Vocabulary) -> "TokenClasses":
        n = vocab.size
        regular = np.ones(n, bool)
        regular[list(vocab.special_ids)] = False
        space = np.fromiter((bool(t) and not t.strip(b" \t\n\r") for t in vocab.tokens),
                            dtype=bool, count=n) & regular
        end, delta = _scan_effects(vocab, regular)
        separator = np.fromiter((t.lstrip(b" \t\n\r")[:1] in (b",", b":") for t in vocab.tokens),
                                dtype=bool, count=n) & regular
        opener = np.fromiter((t.rstrip(b" \t\n\r").endswith(b'"') for t in vocab.tokens),
                             dtype=bool, count=n) & regular & (end[OUT] == IN)
        return cls(vocab, regular, space, end, delta, tuple(vocab.stop_ids), separator, opener)

    def advance(self, state: int, depth: int, tid: int) -> tuple[int, int]:
        """Scanner state and depth after token ``tid``."""
        return int(self.end[state, tid]), depth + int(self.delta[state, tid])

    def eos(self, bitmask: np.ndarray) -> bool:
        """Any stop token set in the mask."""
        return any(has_bit(bitmask, s) for s in self.stop_ids)

    def allowed(self, bitmask: np.ndarray) -> np.ndarray:
        """Bool array: regular (non-special) tokens set in the mask."""
        return as_bool(bitmask, self.vocab.size) & self.regular

    def size(self, bitmask: np.ndarray) -> int:
        """Size of the allowed set: regular tokens allowed, plus 1 if EOS is allowed (a
        model chooses among these; a size of 1 is a forced step)."""
        return int(self.allowed(bitmask).sum()) + int(self.eos(bitmask))


OUT, IN, ESC = 0, 1, 2  # JSON scanner states: outside strings, in a string, after a backslash


def _scan_effects(vocab: Vocabulary, regular: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Run the 3-state JSON scanner over every token at once (numpy, column by column over
    the padded byte matrix: ~0.1 s for Llama-3) from each start state."""
    n = vocab.size
    toks = [t if regular[i] else b"" for i, t in enumerate(vocab.tokens)]
    lens = np.fromiter(map(len, toks), dtype=np.int64, count=n)
    buf = np.frombuffer(b"".join(toks) + b"\0", np.uint8)
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    width = int(lens.max())
    end = np.zeros((3, n), np.int8)
    delta = np.zeros((3, n), np.int16)
    for s0 in (OUT, IN, ESC):
        st = np.full(n, s0, np.int8)
        d = np.zeros(n, np.int16)
        for j in range(width):
            live = j < lens
            b = buf[np.where(live, starts + j, len(buf) - 1)]
            out, ins, esc = live & (st == OUT), live & (st == IN), live & (st == ESC)
            d += (out & ((b == 0x7B) | (b == 0x5B))).astype(np.int16)
            d -= (out & ((b == 0x7D) | (b == 0x5D))).astype(np.int16)
            st = np.where(out & (b == 0x22), IN,
                 np.where(ins & (b == 0x22), OUT,
                 np.where(ins & (b == 0x5C), ESC, np.where(esc, IN, st)))).astype(np.int8)
        end[s0], delta[s0] = st, d
    return end, delta


_CLASSES: dict[str, TokenClasses] = {}


def token_classes(vocab: Vocabulary) -> TokenClasses:
    """:class:`TokenClasses` of ``vocab``, built once per process (~1 s for Llama-3)."""
    tc = _CLASSES.get(vocab.fingerprint)
    if tc is None:
        tc = _CLASSES[vocab.fingerprint] = TokenClasses.of(vocab)
    return tc


def digest(allowed: np.ndarray, eos: bool) -> str:
    """16 hex digits identifying an allowed set (regular tokens + the EOS bit): equal
    digests = equal sets (engines compared with each other where there is no oracle)."""
    h = hashlib.blake2b(np.packbits(allowed).tobytes(), digest_size=8)
    h.update(b"E" if eos else b"-")
    return h.hexdigest()


def raw_digest(bitmask: np.ndarray) -> str:
    """Digest of the whole bitmask, every bit (rollback checks compare these)."""
    return hashlib.blake2b(bitmask.tobytes(), digest_size=8).hexdigest()


def seed_for(*parts: object) -> int:
    """A 32-bit seed from the parts (stable across runs and machines)."""
    key = "#".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big")
