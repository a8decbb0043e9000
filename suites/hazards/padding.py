"""Hazard 4, padded vocabularies: the LM head is wider than the tokenizer.

A model's logits may have more rows than its tokenizer has tokens (Qwen2: 151,936 rows;
any vocabulary padded to a multiple of 64 or 128). A server builds the engine's tokenizer
with the logits' width (xgrammar ``TokenizerInfo(vocab_size=W)``, llguidance
``LLTokenizer(n_vocab=W)``, outlines-core's mask written into a ``W``-wide buffer) and
applies a ``W``-wide bitmask. Two things must hold: every id at or beyond the tokenizer's
size ``N`` is masked out, and the engine fills a bitmask as wide as the logits.

:func:`probe` does what a server does, through each adapter's
:meth:`~engines.protocol.EngineAdapter.padded_masks` (the engine's own way of being told
the logits' width; an adapter without it is "not measured"): the bitmask is **pre-filled with ones** before each fill, so that
an engine writing fewer words than the logits need leaves the padding ids allowed, and
is seen to. Masks are read at three states of a JSON schema: the start, inside a string
(nearly every token allowed) and after a complete value (stop tokens allowed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from suites.hazards.records import HazardBlock

__all__ = ["PADDINGS", "padded_width", "probe"]

#: Vocabulary → how its LM head is padded: ``("to", W)`` an exact width (Qwen2's
#: config), ``("multiple", k)`` up to the next multiple of ``k`` beyond the tokenizer.
PADDINGS: dict[str, tuple[str, int]] = {"llama3": ("multiple", 128), "qwen2": ("to", 151_936)}

SCHEMA = '{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}'
#: (state name, text committed before the mask is read)
STATES = (("start", ""), ("in_string", '{"a": "'), ("complete", '{"a": "x"}'))


def padded_width(n: int, padding: tuple[str, int]) -> int:
    """The logits' width for a tokenizer of ``n`` ids: an exact width, or the next multiple
    of ``k`` strictly beyond ``n`` (a tokenizer already on a multiple is padded by ``k``)."""
    how, k = padding
    if how == "to":
        return max(k, n)
    return (n // k + 1) * k


def _allowed_at_or_beyond(bm: np.ndarray, lo: int, hi: int) -> list[int]:
    """Ids in ``[lo, hi)`` whose bit is set (at most 8 listed)."""
    bits = np.unpackbits(bm.view(np.uint8), bitorder="little")
    hits = np.flatnonzero(bits[lo:hi]) + lo
    return [int(x) for x in hits[:8]]


def _count_beyond(bm: np.ndarray, lo: int, hi: int) -> int:
    bits = np.unpackbits(bm.view(np.uint8), bitorder="little")
    return int(bits[lo:hi].sum())


def probe(adapter, width: int) -> HazardBlock:
    """The padded-vocabulary verdict of ``adapter`` (built over the tokenizer's vocabulary)
    for logits ``width`` wide: ``{"n", "width", "engine_words", "logit_words", "api",
    "states": {state: {"leaked", "leaked_written", "examples", "allowed_below_n"}},
    "verdict", "witness"}``. Verdicts: ``masked`` (a mask as wide as the logits, no id ≥ n
    allowed), ``leaks`` (the engine itself allows some id ≥ n: the witness names it and the
    state), ``narrow`` (the engine writes fewer words than the logits need, or refuses a
    buffer as wide as them: a caller must pad, the witness says how). Raises
    NotImplementedError for an adapter without the probe
    (:meth:`engines.protocol.EngineAdapter.padded_masks`)."""
    vocab = adapter.vocab
    n = vocab.size
    words = (width + 31) // 32
    out: HazardBlock = {"n": n, "width": width, "logit_words": words,
                           "api": adapter.padded_vocab_api}
    prefixes = [vocab.encode(text) if text else [] for _, text in STATES]
    engine_words, masks, note = adapter.padded_masks(SCHEMA, width, prefixes)
    states = {name: _state_row(bm, n, width, engine_words)
              for (name, _), bm in zip(STATES, masks)}
    out["engine_words"] = engine_words
    out["states"] = states
    if note:
        out["note"] = note
    # ids the engine itself wrote: below its own mask's end; beyond it, a padding id keeps
    # whatever the caller's buffer held (ones here)
    covered = min(width, 32 * engine_words)
    leaks = [(s, v) for s, v in states.items() if v.get("leaked_written")]
    if leaks:
        s, v = leaks[0]
        out["verdict"] = "leaks"
        out["witness"] = (f"{v['leaked_written']} padding id(s) allowed at state {s} "
                          f"(e.g. {v['examples'][:3]}; tokenizer {n}, logits {width})")
    elif engine_words < words:
        left = max(v["leaked"] for v in states.values())
        out["verdict"] = "narrow"
        out["witness"] = (f"mask of {engine_words} words for {words} logit words; ids "
                          f"{covered}..{width - 1} keep the caller's bits ({left} left allowed "
                          f"after a ones pre-fill)" + (f"; {note}" if note else ""))
    else:
        out["verdict"] = "masked"
        out["witness"] = (f"0 of {width - n} padding ids allowed at "
                          f"{', '.join(states)}; mask {engine_words} words")
    return out


def _state_row(bm: np.ndarray, n: int, width: int, engine_words: int) -> dict[str, Any]:
    """Padding ids allowed (``leaked``), those among the words the engine wrote
    (``leaked_written``), a few of them, and the ids below ``n`` allowed."""
    return {"leaked": _count_beyond(bm, n, width),
            "leaked_written": _count_beyond(bm, n, min(width, 32 * engine_words)),
            "examples": _allowed_at_or_beyond(bm, n, width),
            "allowed_below_n": _count_beyond(bm, 0, n)}
