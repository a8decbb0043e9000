"""outlines-core adapter (``pip install outlines-core==0.2.14``).

Quirks absorbed here (``docs/engines.md`` lists them; checked against 0.2.14):

- ``Vocabulary(eos_id, {bytes: [ids]})`` takes one EOS id, which must not be in the map.
  Special ids are left out of the map (never allowed). Other stop ids (Llama-3's
  ``<|end_of_text|>``) are not known to the engine: the adapter sets their bits whenever
  the EOS bit is set, so every stop token is allowed exactly when the grammar can end.
- Compilation = ``build_regex_from_schema`` + ``Index`` (the slow part, a DFA over the
  whole vocabulary); errors (TypeError for non-JSON text, ValueError for unsupported
  schemas, "Failed to build DFA" from ``Index``) become :class:`CompileError`.
- ``advance`` raises ValueError for a rejected token (state unchanged) and also for EOS
  even when finished: stop tokens are never forwarded; ``is_finished()`` is used (it
  equals "EOS bit in the mask", checked by the tests).
- ``Guide.reset()`` does not clear the rollback history (a rollback after reset can go back
  into the previous sequence): the adapter counts tokens since the last reset itself.
- ``Guide`` keeps at most ``max_rollback`` (default 32) states.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from engines.bitmask import bitmask_words, token_bit
from engines.matcher import TemplateMatcher
from engines.protocol import (
    CompiledGrammar,
    CompileError,
    EngineAdapter,
    EngineUnavailable,
    one_line,
)
from engines.vocab import Vocabulary

#: ``build_regex_from_schema`` keyword defaults in outlines_core 0.2.14 (checked by the tests).
OUTLINES_DEFAULTS: dict[str, Any] = {"whitespace_pattern": None, "max_recursion_depth": 3}


def _import_outlines_core():
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    try:
        import outlines_core
        from outlines_core.json_schema import build_regex_from_schema
    except Exception as e:
        raise EngineUnavailable(
            f"outlines_core cannot be imported ({one_line(e, 200)}); install it with: "
            "pip install outlines-core==0.2.14"
        ) from None
    return outlines_core, build_regex_from_schema


class OutlinesMatcher(TemplateMatcher):
    """One sequence on an ``outlines_core.Guide`` (:class:`~engines.matcher.TemplateMatcher`
    keeps the contract).

    - ``commit(stop_id)`` is never forwarded (``advance(EOS)`` always raises): it is
      accepted, changing no state, exactly when ``is_finished()``. ``advance`` raises
      ValueError for a rejected token: the matcher is then dead.
    - ``Guide.reset()`` keeps the rollback history: the template's own count since the
      last reset bounds ``rollback``, and so does the Guide's ``max_rollback`` window
      (ValueError beyond it, the matcher left as it was).
    - ``fill_mask`` writes through ``write_mask_into`` to the bound bitmask's address, then
      sets the other stop ids' bits wherever the EOS bit is set.
    """

    __slots__ = ("_g", "_eos_word", "_eos_bit", "_extra")

    by_pointer = True

    def __init__(self, guide: Any, stop_ids: frozenset[int], eos_id: int,
                 extra_stop: tuple[tuple[int, np.int32], ...], words: int):
        super().__init__(words, stop_ids)
        self._g = guide
        self._eos_word, self._eos_bit = token_bit(eos_id)
        self._extra = extra_stop

    def _fill(self, bitmask: np.ndarray) -> None:
        self._g.write_mask_into(self._ptr, self._words, 4)
        if self._extra and bitmask[self._eos_word] & self._eos_bit:
            for w, b in self._extra:
                bitmask[w] |= b

    def _advance(self, token_id: int) -> bool:
        try:
            self._g.advance(token_id, False)
        except ValueError:
            return False
        return True

    def _can_end(self) -> bool:
        return self._g.is_finished()

    def _undo(self, n: int) -> None:
        window = self._g.get_allowed_rollback()
        if n > window:
            raise ValueError(
                f"rollback({n}): outlines_core Guide keeps only {window} states "
                "(max_rollback)"
            )
        self._g.rollback_state(n)

    def _restart(self) -> None:
        self._g.reset()


class OutlinesCompiled(CompiledGrammar):
    #: set on a grammar compiled from a tool-call or grammar request: the native form it became
    form: str

    def __init__(self, oc: Any, index: Any, regex: str, engine: "OutlinesEngine"):
        self._Guide = oc.Guide
        self.index = index
        #: The regular expression outlines_core built from the schema.
        self.regex = regex
        self.warnings: list[str] = []
        self._stop = engine._stop
        self._eos = engine.vocab.eos_id
        self._extra = engine._extra_stop
        self._words = engine._words

    def matcher(self) -> OutlinesMatcher:
        return OutlinesMatcher(self._Guide(self.index), self._stop, self._eos, self._extra,
                               self._words)


_LLAMA_BYTE_TOKEN = re.compile(r"^<0x[0-9A-F]{2}>$")
_REPLACEMENT_SEQ = re.compile(r"^.{0,6}\ufffd+.{0,6}$")


def hf_reduced_vocabulary(tokenizer: Any, stop_ids: frozenset[int]) -> dict[bytes, list[int]]:
    """``{token bytes: [ids]}`` from a Hugging Face tokenizer, as vLLM's outlines backend
    builds it (``vllm.v1.structured_output.utils._reduced_vocabulary``, vLLM 0.11-0.13):
    each token's string through ``convert_tokens_to_string`` (a leading space restored
    for sentencepiece's ``▁`` and ``<0x20>``), tokens that decode to U+FFFD mapped back
    to bytes (``<0xNN>``, or GPT-2's byte table), special tokens and empty strings left
    out. vLLM leaves out the EOS only; here every stop id is (the adapter allows the
    others beside the EOS, as on the raw-bytes path)."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    unicode_to_bytes = {v: k for k, v in bytes_to_unicode().items()}
    specials = set(tokenizer.all_special_tokens)

    def to_string(token: str) -> str:
        string = tokenizer.convert_tokens_to_string([token])
        if token.startswith("\u2581") or token == "<0x20>":
            return " " + string
        return string

    vocabulary: dict[bytes, list[int]] = {}
    for token, idx in tokenizer.get_vocab().items():
        if token in specials or idx in stop_ids:
            continue
        s = to_string(token)
        if not s:
            continue
        if (s == "\ufffd" and token != "\ufffd") or ("\ufffd" in s
                                                   and not _REPLACEMENT_SEQ.match(s)):
            if _LLAMA_BYTE_TOKEN.match(token):
                b = bytes([int(token[3:5], 16)])
            else:
                vals = [unicode_to_bytes.get(c) for c in token]
                if any(v is None for v in vals):
                    raise ValueError(f"cannot convert token {token!r} ({idx}) to bytes")
                b = bytes(v for v in vals if v is not None)
        else:
            b = s.encode("utf-8")
        vocabulary.setdefault(b, []).append(idx)
    return vocabulary


class OutlinesEngine(EngineAdapter):
    """outlines_core ``build_regex_from_schema`` → ``Index`` → ``Guide``."""

    name = "outlines"
    package = "outlines-core"
    requires = "outlines_core"
    install_hint = "bash setup.sh (pins outlines-core==0.2.14)"
    configs = {
        "default": dict(OUTLINES_DEFAULTS),
        # JSON whitespace (newlines, tabs, spaces) between tokens, as other engines allow.
        "flexible_ws": {**OUTLINES_DEFAULTS, "whitespace_pattern": r"[\n\t ]*"},
    }

    def __init__(self, vocab: Vocabulary, config: str = "default", **overrides: Any):
        super().__init__(vocab, config, **overrides)
        unknown = set(self.options) - set(OUTLINES_DEFAULTS)
        if unknown:
            raise ValueError(f"unknown outlines option(s): {', '.join(sorted(unknown))}")
        oc, build = _import_outlines_core()
        self._oc = oc
        self._build_regex = build
        self._stop = frozenset(vocab.stop_ids)
        self._words = bitmask_words(vocab.size)
        self._extra_stop = tuple(token_bit(i) for i in vocab.stop_ids if i != vocab.eos_id)
        if vocab.hf_tokenizer is not None:
            # a model folder's tokenizer (--model PATH): the map vLLM's outlines backend
            # builds from a Hugging Face tokenizer
            mapping = hf_reduced_vocabulary(vocab.hf_tokenizer, self._stop)
        else:
            specials = vocab.special_ids
            stop = self._stop
            mapping = {}
            for i, t in enumerate(vocab.tokens):
                if i in specials or i in stop or not t:
                    continue
                mapping.setdefault(bytes(t), []).append(i)
        self.engine_vocabulary = oc.Vocabulary(vocab.eos_id, mapping)

    @classmethod
    def mask_kernel(cls) -> Any:
        from outlines_core.kernels.torch import apply_token_bitmask_inplace

        return apply_token_bitmask_inplace

    grammar_dialects = ("regex",)

    def compile(self, schema_text: str) -> OutlinesCompiled:
        return self._index(self._regex(schema_text))

    def grammar_key(self, schema_text: str) -> str:
        """The regular expression ``build_regex_from_schema`` makes of the schema (with this
        configuration's options): the ``Index`` is a function of it and the vocabulary."""
        return "regex:" + self._regex(schema_text)

    def _regex(self, schema_text: str) -> str:
        try:
            return self._build_regex(schema_text, **self.options)
        except MemoryError:
            raise
        except Exception as e:
            raise CompileError(one_line(e)) from None

    @classmethod
    def whitespace_bound(cls, n: int) -> dict[str, Any]:
        """``whitespace_pattern`` ``[ ]{0,n}`` (its default is ``[ ]?``)."""
        return {"whitespace_pattern": f"[ ]{{0,{n}}}"}

    def compile_grammar(self, dialect: str, text: str) -> OutlinesCompiled:
        """``regex`` only (outlines-core builds a DFA; a context-free grammar is refused)."""
        if dialect != "regex":
            raise CompileError(f"outlines-core reads regular expressions only, not {dialect}")
        return self._index(text)

    tool_call_form = "one regex: build_regex_from_schema per tool inside the envelope"

    def compile_tool_calls(self, spec) -> OutlinesCompiled:
        """The request as one regular expression (:func:`engines.tool_calls.regex`), each
        tool's arguments from ``build_regex_from_schema`` with this configuration's
        options, then one ``Index`` (a DFA over the whole request)."""
        from engines.tool_calls import regex

        out = self._index(regex(spec, self._regex))
        out.form = "regex"
        return out

    reasoning_form = "one regex: open, a text without the stop string, close, the schema's regex"

    def compile_reasoning(self, spec) -> OutlinesCompiled:
        """:func:`engines.reasoning.regex` with ``build_regex_from_schema`` for the answer
        (this configuration's options), then one ``Index``; the free text is unbounded."""
        from engines.reasoning import regex

        out = self._index(regex(spec, self._regex))
        out.form = "regex"
        return out

    padded_vocab_api = "Guide.write_mask_into(pointer, width words)"

    def padded_masks(self, schema_text, width, prefixes):
        """The schema's ``Index`` over this vocabulary; each mask is handed whole to
        ``write_mask_into`` with its width in words (how a server hands it the logits'
        bitmask)."""
        compiled = self.compile(schema_text)
        words = (width + 31) // 32
        masks = []
        for toks in prefixes:
            g = self._oc.Guide(compiled.index)
            for t in toks:
                g.advance(int(t), False)
            bm = np.full(words, -1, np.int32)
            g.write_mask_into(bm.ctypes.data, words, 4)
            masks.append(bm)
        return words, masks, None

    def _index(self, regex: str) -> OutlinesCompiled:
        try:
            index = self._oc.Index(regex, self.engine_vocabulary)
        except MemoryError:
            raise
        except Exception as e:
            raise CompileError(one_line(e)) from None
        return OutlinesCompiled(self._oc, index, regex, self)
