"""Hazard 4, padded vocabularies: the LM head is wider than the tokenizer.

A model's logits may have more rows than its tokenizer has tokens (Qwen2: 151,936 rows;
any vocabulary padded to a multiple of 64 or 128). A server builds the engine's tokenizer
with the logits' width (xgrammar ``TokenizerInfo(vocab_size=W)``, llguidance
``LLTokenizer(n_vocab=W)``, outlines-core's mask written into a ``W``-wide buffer) and
applies a ``W``-wide bitmask. Two things must hold: every id at or beyond the tokenizer's
size ``N`` is masked out, and the engine fills a bitmask as wide as the logits.

:func:`probe` does what a server does, engine by engine through the engine's own API
(the adapters are built for a vocabulary of exactly ``N``: this hazard is the engine's
handling of the gap): the bitmask is **pre-filled with ones** before each fill, so that
an engine writing fewer words than the logits need leaves the padding ids allowed, and
is seen to. Masks are read at three states of a JSON schema: the start, inside a string
(nearly every token allowed) and after a complete value (stop tokens allowed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ENGINES", "PADDINGS", "padded_width", "probe"]

#: Vocabulary → how its LM head is padded: ``("to", W)`` an exact width (Qwen2's
#: config), ``("multiple", k)`` up to the next multiple of ``k`` beyond the tokenizer.
PADDINGS: dict[str, tuple[str, int]] = {"llama3": ("multiple", 128), "qwen2": ("to", 151_936)}
#: The engines with a probe here (their own APIs); others are "not measured".
ENGINES = ("xgrammar", "llguidance", "outlines")

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


def probe(engine: str, vocab, width: int) -> dict[str, Any]:
    """The padded-vocabulary verdict of ``engine`` for ``vocab`` padded to ``width``:
    ``{"n", "width", "engine_words", "logit_words", "states": {state: {"leaked",
    "examples"}}, "verdict", "witness"}``. Verdicts: ``masked`` (a mask as wide as the
    logits, no id ≥ n allowed), ``leaks`` (some id ≥ n allowed: the witness names it and
    the state), ``narrow`` (the engine fills fewer words than the logits need, or refuses
    a buffer as wide as them: a caller must pad, the witness says how)."""
    n = vocab.size
    words = (width + 31) // 32
    out: dict[str, Any] = {"n": n, "width": width, "logit_words": words}
    fn = {"xgrammar": _xgrammar, "llguidance": _llguidance, "outlines": _outlines}[engine]
    ids = {name: vocab.encode(text) if text else [] for name, text in STATES}
    states, engine_words, note = fn(vocab, width, words, ids)
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


def _xgrammar(vocab, width: int, words: int, ids):
    import xgrammar as xgr

    specials = vocab.special_ids
    encoded = [b"" if i in specials else t for i, t in enumerate(vocab.tokens)]
    info = xgr.TokenizerInfo(encoded, xgr.VocabType.RAW, vocab_size=width,
                             stop_token_ids=list(vocab.stop_ids))
    compiled = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False) \
        .compile_json_schema(SCHEMA)
    engine_words = int(xgr.get_bitmask_shape(1, width)[1])
    states = {}
    for name, toks in ids.items():
        m = xgr.GrammarMatcher(compiled)
        for t in toks:
            if not m.accept_token(t):
                raise RuntimeError(f"xgrammar refused token {t} of state {name}")
        bm = np.full(max(words, engine_words), -1, np.int32)
        m.fill_next_token_bitmask(bm[:engine_words])
        states[name] = _state_row(bm, vocab.size, width, engine_words)
    return states, engine_words, None


def _llguidance(vocab, width: int, words: int, ids):
    import llguidance as llg

    from engines.llguidance_engine import _TokenizerSource

    tok = llg.LLTokenizer(llg.TokenizerWrapper(_TokenizerSource(vocab)), n_vocab=width,
                          eos_token=list(vocab.stop_ids))
    engine_words = (int(tok.vocab_size) + 31) // 32
    note = None
    grammar = llg.LLMatcher.grammar_from_json_schema(SCHEMA)
    states = {}
    for name, toks in ids.items():
        m = llg.LLMatcher(tok, grammar, log_level=0)
        for t in toks:
            if not m.consume_token(t):
                raise RuntimeError(f"llguidance refused token {t} of state {name}")
        bm = np.full(words, -1, np.int32)
        try:
            m.unsafe_compute_mask_ptr(bm.ctypes.data, 4 * words)
        except Exception as e:  # the logits-wide buffer refused: fill the engine's width
            from engines.protocol import one_line

            note = (f"n_vocab={width} gave a tokenizer of {tok.vocab_size} ids; a "
                    f"{words}-word buffer is refused ({one_line(e, 80)})")
            bm = np.full(words, -1, np.int32)
            m.unsafe_compute_mask_ptr(bm.ctypes.data, 4 * engine_words)
        states[name] = _state_row(bm, vocab.size, width, engine_words)
    return states, engine_words, note


def _outlines(vocab, width: int, words: int, ids):
    import outlines_core as oc
    from outlines_core.json_schema import build_regex_from_schema

    stop = set(vocab.stop_ids)
    mapping: dict[bytes, list[int]] = {}
    for i, t in enumerate(vocab.tokens):
        if i in vocab.special_ids or i in stop or not t:
            continue
        mapping.setdefault(bytes(t), []).append(i)
    index = oc.Index(build_regex_from_schema(SCHEMA), oc.Vocabulary(vocab.eos_id, mapping))
    states = {}
    for name, toks in ids.items():
        g = oc.Guide(index)
        for t in toks:
            g.advance(t, False)
        bm = np.full(words, -1, np.int32)
        g.write_mask_into(bm.ctypes.data, words, 4)
        states[name] = _state_row(bm, vocab.size, width, words)
    return states, words, None

