"""Non-canonical tokenisations: seeded random segmentations of a text's bytes into tokens.

A model does not always produce the tokenizer's canonical tokenisation of a text (sampling,
speculative drafts, token healing): ``{"a"`` may arrive as ``{``, ``"``, ``a``, ``"`` instead
of ``{"``, ``a``, ``"``. A byte-level engine must accept every sequence of ordinary tokens
whose bytes spell a valid document. :func:`segmentation` draws such sequences:

- only ordinary tokens (no special or stop ids, no empty tokens) whose bytes are exact
  substrings of the text at that position; concatenated, they give the text's bytes back;
- at each position the next token is drawn uniformly among the tokens that fit there and
  leave a rest that can still be segmented (so lengths vary from one byte to the longest
  match; multi-byte UTF-8 characters get split into their bytes too);
- seeded (``random.Random(seed)``): the same vocabulary, text and seed give the same tokens,
  so a record holding the seed reproduces its token sequence;
- never the canonical tokenisation when another one exists (if the draw happens to equal it,
  the first token that can be split is replaced by a shorter one).

Byte-level vocabularies (Llama-3, GPT-2 style) hold all 256 single bytes, so a segmentation
always exists; a vocabulary that lacks some byte may make a text unsegmentable
(:class:`SegmentationError`).

Reproduce a record ``{"seed": s, "of": ser, ...}`` of instance text ``t``::

    from harness.measure.segment import segmentation
    tokens = segmentation(load_vocabulary("llama3"), t, s)
"""

from __future__ import annotations

import hashlib
import random
from typing import Sequence

from engines.vocab import Vocabulary


class SegmentationError(ValueError):
    """The text cannot be written with the vocabulary's ordinary tokens."""


class TokenIndex:
    """Ordinary tokens by their bytes (lowest id for bytes that several ids share)."""

    def __init__(self, vocab: Vocabulary) -> None:
        skip = set(vocab.special_ids) | set(vocab.stop_ids)
        by_bytes: dict[bytes, int] = {}
        for i, t in enumerate(vocab.tokens):
            if t and i not in skip:
                by_bytes.setdefault(bytes(t), i)
        self.by_bytes = by_bytes
        self.max_len = max((len(t) for t in by_bytes), default=0)
        #: single bytes the vocabulary cannot write alone
        self.missing_bytes = [b for b in range(256) if bytes([b]) not in by_bytes]
        self.fingerprint = vocab.fingerprint

    def lattice(self, data: bytes) -> list[list[tuple[int, int]]]:
        """Per position, the (length, id) of each token that fits there and leaves a
        segmentable rest (empty lists only where no segmentation passes)."""
        n = len(data)
        get = self.by_bytes.get
        ok = [False] * (n + 1)
        ok[n] = True
        lat: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for i in range(n - 1, -1, -1):
            cands = lat[i]
            for length in range(1, min(self.max_len, n - i) + 1):
                if ok[i + length]:
                    tid = get(data[i:i + length])
                    if tid is not None:
                        cands.append((length, tid))
            ok[i] = bool(cands)
        if n and not ok[0]:
            raise SegmentationError(
                f"no segmentation of {data[:40]!r}... into ordinary tokens (the vocabulary "
                f"lacks single bytes {self.missing_bytes[:8]})")
        return lat


def segment(lat: list[list[tuple[int, int]]], seed: int,
            avoid: Sequence[int] | None = None) -> list[int]:
    """One random walk over the lattice from :meth:`TokenIndex.lattice`; if it equals
    ``avoid`` (the canonical tokens) and another walk exists, the first position where a
    different token fits takes one, and the walk goes on from there."""
    rng = random.Random(seed)
    n = len(lat)

    def walk(pos: int, out: list[int]) -> list[int]:
        while pos < n:
            length, tid = rng.choice(lat[pos])
            out.append(tid)
            pos += length
        return out

    tokens = walk(0, [])
    if avoid is not None and list(avoid) == tokens:
        pos = 0
        for k, tid in enumerate(tokens):
            others = [c for c in lat[pos] if c[1] != tid]
            if others:
                length, other = rng.choice(others)
                return walk(pos + length, tokens[:k] + [other])
            pos += next(c[0] for c in lat[pos] if c[1] == tid)
    return tokens


def seed_for(case_id: str, index: int, k: int) -> int:
    """The seed of replay ``k`` of instance ``index`` of a case (stable across runs)."""
    return int.from_bytes(hashlib.sha256(f"{case_id}#{index}#{k}".encode()).digest()[:4], "big")


_INDEX: dict[str, TokenIndex] = {}


def token_index(vocab: Vocabulary) -> TokenIndex:
    """The vocabulary's :class:`TokenIndex`, built once per process."""
    idx = _INDEX.get(vocab.fingerprint)
    if idx is None:
        idx = _INDEX[vocab.fingerprint] = TokenIndex(vocab)
    return idx


def segmentation(vocab: Vocabulary, text: str, seed: int) -> list[int]:
    """The non-canonical tokenisation of ``text`` drawn with ``seed`` (see module doc)."""
    data = text.encode("utf-8")
    return segment(token_index(vocab).lattice(data), seed, vocab.encode(text))


def segmentations(vocab: Vocabulary, text: str, seeds: Sequence[int]) -> list[list[int]]:
    """Several segmentations of one text (the lattice is built once)."""
    data = text.encode("utf-8")
    lat = token_index(vocab).lattice(data)
    canonical = vocab.encode(text)
    return [segment(lat, s, canonical) for s in seeds]
