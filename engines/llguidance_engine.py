"""llguidance adapter (``pip install llguidance==1.9.1``).

Quirks absorbed here (``docs/engines.md`` lists them; checked against 1.9.1):

- ``LLMatcher`` never raises for grammar errors: the matcher is built once per schema and
  ``is_error()`` / ``get_error()`` become :class:`CompileError`. Fresh matchers are
  ``deep_copy()`` of that prototype (much cheaper than building a new ``LLMatcher``).
- A rejected token puts the matcher in a sticky error state in which ``consume_token(EOS)``
  still returns True, the computed mask still allows the stop tokens, and neither
  ``rollback`` nor ``reset`` recovers it. The adapter tracks the state itself (dead
  until :meth:`LLGuidanceMatcher.reset`, which then replaces the engine matcher).
- Rolling back more tokens than were consumed breaks the matcher for good: the adapter
  checks the count first and raises ValueError.
- Consuming EOS when stopped is not recorded for rollback (``rollback(1)`` afterwards
  undoes the token *before* EOS): stop tokens are never forwarded to the engine.
- Jump-forward (:meth:`LLGuidanceMatcher.forced_continuation`): ``compute_ff_bytes`` may
  end inside a UTF-8 character (``h\\xc3`` when ``é`` and ``è`` may come next);
  ``compute_ff_tokens`` then stops before it.
- ``validate_tokens([EOS, ...])`` on a matcher that has stopped by itself (the grammar
  can only end: ``is_stopped()``) returns 0, though the mask allows EOS and
  ``validate_tokens(prefix + [EOS])`` from before the end counts it: the adapter's
  ``validate_draft`` answers that case itself. ``try_consume_tokens(tokens + [EOS])``
  likewise leaves EOS out of its count when the grammar stopped on the last token.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from engines.batch import BatchFiller
from engines.bitmask import bitmask_words
from engines.matcher import TemplateMatcher
from engines.protocol import (
    CompiledGrammar,
    CompileError,
    EngineAdapter,
    EngineUnavailable,
    one_line,
)
from engines.token_bytes import encode_exact
from engines.vocab import Vocabulary


def _import_llguidance():
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    try:
        import llguidance
    except Exception as e:
        raise EngineUnavailable(
            f"llguidance cannot be imported ({one_line(e, 200)}); install it with: "
            "pip install llguidance==1.9.1"
        ) from None
    return llguidance


class _TokenizerSource:
    """What ``llguidance.TokenizerWrapper`` reads: raw token bytes (special tokens as
    ``0xFF + name``), EOS/BOS ids, special ids, and ``__call__(bytes) -> ids``."""

    def __init__(self, vocab: Vocabulary):
        specials = vocab.special_ids
        self.tokens = [
            (b"\xff" + (t or f"<|special_{i}|>".encode())) if i in specials else t
            for i, t in enumerate(vocab.tokens)
        ]
        self.eos_token_id = vocab.eos_id
        self.bos_token_id = vocab.bos_id
        self.special_token_ids = sorted(specials)
        self._vocab = vocab

    def __call__(self, data: bytes) -> list[int]:
        """Tokenise bytes exactly (:func:`~engines.token_bytes.encode_exact`): valid UTF-8
        runs through the vocabulary's encoder, invalid bytes as their single-byte tokens
        (U+FFFD's tokens for a byte the vocabulary has none for)."""
        return encode_exact(self._vocab, data, self._replacement)

    def _replacement(self, b: int) -> list[int]:
        return self._vocab.encode(bytes([b]).decode("utf-8", errors="replace"))


class LLGuidanceMatcher(TemplateMatcher):
    """One sequence on an ``llguidance.LLMatcher`` (:class:`~engines.matcher.TemplateMatcher`
    keeps the contract).

    - ``commit(stop_id)`` is never forwarded to llguidance (consuming EOS when stopped is
      not recorded for rollback): it is accepted, changing no state, exactly when
      ``is_accepting()``.
    - A rejected token leaves llguidance in a sticky error state (its mask still allows
      EOS, and neither ``rollback`` nor ``reset`` recovers it): the matcher is dead, and
      :meth:`reset` replaces the engine matcher with a fresh copy of the prototype. An
      error met while filling a mask (e.g. a parser limit) kills the matcher too.
    - ``fill_mask`` writes through ``unsafe_compute_mask_ptr`` exactly as
      ``llguidance.numpy.fill_next_token_bitmask`` does (that helper wants a 2-D array),
      to the bound bitmask's address.
    """

    __slots__ = ("_proto", "_m", "_nbytes")

    by_pointer = True

    def __init__(self, proto: Any, stop_ids: frozenset[int], words: int):
        super().__init__(words, stop_ids)
        self._proto = proto
        self._nbytes = 4 * words
        self._m = proto.deep_copy()

    def _fill(self, bitmask: np.ndarray) -> None:
        self._m.unsafe_compute_mask_ptr(self._ptr, self._nbytes)
        if self._m.is_error():  # e.g. a parser limit hit: llguidance's mask would allow EOS
            self._dead = True
            bitmask.fill(0)

    def _advance(self, token_id: int) -> bool:
        return self._m.consume_token(token_id)

    def _stop_allowed(self, token_id: int) -> bool:
        return self._m.is_accepting()

    def _can_end(self) -> bool:
        return not self._m.is_error() and self._m.is_accepting()

    def _undo(self, n: int) -> None:
        if not self._m.rollback(n) or self._m.is_error():
            self._dead = True
            raise RuntimeError(f"llguidance rollback({n}) failed: {one_line(self._m.get_error())}")

    def _restart(self) -> None:
        if self._dead or not self._m.reset() or self._m.is_error():
            self._m = self._proto.deep_copy()

    def forced_continuation(self) -> tuple[bytes, list[int]]:
        """``compute_ff_bytes()`` and ``compute_ff_tokens()``; ``(b"", [])`` on a dead
        matcher (llguidance's error state would still answer)."""
        if self._dead or self._m.is_error():
            return b"", []
        data, ids = bytes(self._m.compute_ff_bytes()), list(self._m.compute_ff_tokens())
        if self._m.is_error():
            self._dead = True
            return b"", []
        return data, ids

    draft_api = "llguidance validate_tokens"

    def validate_draft(self, tokens) -> int:
        """``validate_tokens(draft)``: how many tokens in a row llguidance would consume
        from here, without changing the state; a stop id counts where the grammar can end
        (llguidance's tokenizer was given every stop id as EOS), and nothing after it is
        accepted. Once the grammar has stopped by itself (``is_stopped()``: nothing but a
        stop token can come), llguidance answers 0 even for a stop token its mask allows;
        the adapter answers that case itself (1 for a leading stop id, else 0). 0 on a
        dead matcher."""
        if self._dead or not len(tokens) or self._m.is_error():
            return 0
        ids = self._draft_ids(tokens)
        if ids and self._m.is_stopped():
            # llguidance answers 0 for a stop token once the grammar has stopped by itself
            # (nothing else can come), though its mask allows it: decided here instead
            return 1 if ids[0] in self._stop and self._m.is_accepting() else 0
        n = int(self._m.validate_tokens(ids)) if ids else 0
        if self._m.is_error():
            self._dead = True
            return 0
        return n


class LLGuidanceCompiled(CompiledGrammar):
    #: set on a grammar compiled from a tool-call or grammar request: the native form it became
    form: str

    def __init__(self, proto: Any, stop_ids: frozenset[int], words: int, warnings: list[str]):
        self._proto = proto
        self._stop = stop_ids
        self._words = words
        #: llguidance's grammar warnings (e.g. keywords ignored under ``lenient``).
        self.warnings = warnings

    def matcher(self) -> LLGuidanceMatcher:
        return LLGuidanceMatcher(self._proto, self._stop, self._words)


class LLGuidanceBatchFiller(BatchFiller):
    """A batch's masks through ``llguidance.numpy.fill_next_token_bitmask_par``, and its
    commits through ``consume_token_par``, on an ``LLExecutor`` of ``threads`` (Rust
    threads). A matcher that errs while filling is dead with an all-zero row, as in
    :meth:`LLGuidanceMatcher.fill_mask`; stop ids and dead matchers never reach
    ``consume_token_par`` (:meth:`~engines.matcher.TemplateMatcher._commit_outside`)."""

    method = "llguidance fill_next_token_bitmask_par"
    commit_method = "llguidance consume_token_par"

    def __init__(self, llg: Any, threads: int) -> None:
        super().__init__(1)
        import llguidance.numpy as llg_np

        self.threads = max(1, int(threads))
        self._executor = llg.LLExecutor(num_threads=self.threads)
        self._fill_par = llg_np.fill_next_token_bitmask_par
        self._consume_par = llg_np.consume_token_par

    def fill(self, matchers, bitmask: np.ndarray, rows) -> None:
        pairs, live = [], []
        for m, r in zip(matchers, rows):
            if m._dead:
                bitmask[r].fill(0)
            else:
                pairs.append((m._m, int(r)))
                live.append((m, r))
        if pairs:
            self._fill_par(self._executor, pairs, bitmask)
            for m, r in live:
                if m._m.is_error():
                    m._dead = True
                    bitmask[r].fill(0)

    def commit(self, matchers, tokens) -> list[bool]:
        out: list[bool | None] = []
        asked, pairs = [], []
        for i, (m, t) in enumerate(zip(matchers, tokens)):
            t = int(t)
            answer = m._commit_outside(t)
            out.append(answer)
            if answer is None:
                asked.append(i)
                pairs.append((m._m, t))
        if pairs:
            for i, ok in zip(asked, self._consume_par(self._executor, pairs)):
                out[i] = matchers[i]._engine_answered(bool(ok))
        return out  # type: ignore[return-value]


class LLGuidanceEngine(EngineAdapter):
    """llguidance JSON schema → ``LLMatcher``.

    Options are llguidance ``JsonCompileOptions`` passed as ``overrides`` (they win over a
    schema's own ``x-guidance``). With none, llguidance's defaults apply: separators
    ``","`` / ``":"``, flexible whitespace, ``oneOf`` not coerced, unimplemented keywords
    are errors, only the standard JSON escapes plus ``\\u`` escapes of control characters.
    """

    name = "llguidance"
    package = "llguidance"
    requires = "llguidance"
    install_hint = "bash setup.sh (pins llguidance==1.9.1)"
    configs = {
        "default": {},
        # Unimplemented keywords (if/then/else, not, ...) become warnings, not errors.
        "lenient": {"lenient": True},
        # Any printable \\uXXXX escape in strings (default: only control characters).
        "unicode_escapes": {"json_allow_general_unicode_escapes": True},
        # oneOf compiled as anyOf (default: a compile error), as vLLM's guidance backend can.
        "coerce_one_of": {"coerce_one_of": True},
        # No whitespace between tokens (vLLM's `disable_any_whitespace` for guidance).
        # vLLM's `disable_additional_properties` is a schema rewrite in vLLM (adds
        # additionalProperties: false), not an llguidance option: no configuration here.
        "no_whitespace": {"whitespace_flexible": False},
    }

    def __init__(self, vocab: Vocabulary, config: str = "default", **overrides: Any):
        super().__init__(vocab, config, **overrides)
        llg = _import_llguidance()
        self._llg = llg
        self._stop = frozenset(vocab.stop_ids)
        self._words = bitmask_words(vocab.size)
        if vocab.hf_tokenizer is not None:
            # a model folder's tokenizer (--model PATH): llguidance's own constructor, as
            # vLLM's guidance backend calls it (n_vocab: the logits' width)
            from llguidance.hf import from_tokenizer

            self.tokenizer = from_tokenizer(vocab.hf_tokenizer,
                                            n_vocab=max(vocab.size, len(vocab.hf_tokenizer)),
                                            eos_token=list(vocab.stop_ids))
        else:
            self.tokenizer = llg.LLTokenizer(
                llg.TokenizerWrapper(_TokenizerSource(vocab)),
                n_vocab=vocab.size,
                eos_token=list(vocab.stop_ids),
            )

    grammar_dialects = ("regex", "lark")

    def compile(self, schema_text: str) -> LLGuidanceCompiled:
        LLMatcher = self._llg.LLMatcher
        return self._matcher_for(lambda: LLMatcher.grammar_from_json_schema(
            schema_text, overrides=self.options or None))

    @classmethod
    def whitespace_bound(cls, n: int) -> dict[str, Any]:
        """``whitespace_pattern`` ``[ ]{0,n}`` (llguidance has no count of its own)."""
        return {"whitespace_pattern": f"[ ]{{0,{n}}}"}

    def compile_grammar(self, dialect: str, text: str) -> LLGuidanceCompiled:
        """``regex``: ``LLMatcher.grammar_from_regex``; ``lark``: ``grammar_from_lark``
        (llguidance's own Lark dialect: terminals are lexemes, regexes in Rust syntax)."""
        LLMatcher = self._llg.LLMatcher
        build = {"regex": LLMatcher.grammar_from_regex,
                 "lark": LLMatcher.grammar_from_lark}.get(dialect)
        if build is None:
            raise CompileError(f"llguidance reads no {dialect} grammars")
        return self._matcher_for(lambda: build(text))

    tool_call_form = "Lark grammar: %json per tool, free text as a lazy lexeme up to the trigger"

    def compile_tool_calls(self, spec) -> LLGuidanceCompiled:
        """The request as a Lark grammar (:func:`engines.tool_calls.lark_grammar`) through
        ``grammar_from_lark``; this configuration's JSON options do not reach ``%json``
        (llguidance's defaults apply there)."""
        from engines.tool_calls import lark_grammar

        LLMatcher = self._llg.LLMatcher
        out = self._matcher_for(lambda: LLMatcher.grammar_from_lark(lark_grammar(spec)))
        out.form = "lark: %json per tool, lazy trigger"
        return out

    reasoning_form = "Lark grammar: a lazy free-text rule up to the stop string (max_tokens), then %json"

    def compile_reasoning(self, spec) -> LLGuidanceCompiled:
        """:func:`engines.reasoning.lark_grammar` through ``grammar_from_lark``."""
        from engines.reasoning import lark_grammar

        LLMatcher = self._llg.LLMatcher
        out = self._matcher_for(lambda: LLMatcher.grammar_from_lark(lark_grammar(spec)))
        out.form = "lark: lazy free text, %json"
        return out

    padded_vocab_api = ("LLTokenizer over the vocabulary padded to the logits' width with "
                        "special ids (as n_vocab= does for a tokenizer.json), mask written "
                        "through unsafe_compute_mask_ptr")

    def padded_masks(self, schema_text, width, prefixes):
        """An ``LLTokenizer`` as wide as the logits; each mask is offered whole to
        ``unsafe_compute_mask_ptr``, and where the engine refuses a buffer that wide, its
        own width is written instead (the note says so).

        ``n_vocab=width`` widens a tokenizer given as ``tokenizer.json`` text (the route of
        ``llguidance.hf.from_tokenizer`` and vLLM: the ids past the tokenizer become special
        tokens), but a ``TokenizerWrapper``, this adapter's route, keeps its own length; so
        the wrapper's token list is padded the same way, special ids up to ``width``."""
        from engines.protocol import one_line

        llg = self._llg
        src = _TokenizerSource(self.vocab)
        n = len(src.tokens)
        if width > n:
            src.tokens = src.tokens + [b"\xff<[%d]>" % i for i in range(n, width)]
            src.special_token_ids = sorted(set(src.special_token_ids) | set(range(n, width)))
        tok = llg.LLTokenizer(llg.TokenizerWrapper(src), n_vocab=width,
                              eos_token=list(self.vocab.stop_ids))
        engine_words = (int(tok.vocab_size) + 31) // 32
        words = (width + 31) // 32
        try:
            grammar = llg.LLMatcher.grammar_from_json_schema(schema_text,
                                                            overrides=self.options or None)
        except Exception as e:
            raise CompileError(one_line(e)) from None
        note, masks = None, []
        for toks in prefixes:
            m = llg.LLMatcher(tok, grammar, log_level=0)
            if m.is_error():
                raise CompileError(one_line(m.get_error()))
            for t in toks:
                if not m.consume_token(int(t)):
                    raise ValueError(f"llguidance refused token {t} of a probe prefix")
            bm = np.full(words, -1, np.int32)
            try:
                m.unsafe_compute_mask_ptr(bm.ctypes.data, 4 * words)
            except Exception as e:  # the logits-wide buffer refused: the engine's own width
                note = (f"n_vocab={width} gave a tokenizer of {tok.vocab_size} ids; a "
                        f"{words}-word buffer is refused ({one_line(e, 80)})")
                bm = np.full(words, -1, np.int32)
                m.unsafe_compute_mask_ptr(bm.ctypes.data, 4 * engine_words)
            masks.append(bm)
        return engine_words, masks, note

    def _matcher_for(self, grammar_of) -> LLGuidanceCompiled:
        LLMatcher = self._llg.LLMatcher
        try:
            grammar = grammar_of()
            proto = LLMatcher(self.tokenizer, grammar, log_level=0)
        except MemoryError:
            raise
        except Exception as e:  # ValueError: schema text / options not valid JSON
            raise CompileError(one_line(e)) from None
        if proto.is_error():
            raise CompileError(one_line(proto.get_error()))
        warnings = [one_line(w) for w in proto.get_grammar_warnings()]
        return LLGuidanceCompiled(proto, self._stop, self._words, warnings)

    @classmethod
    def mask_kernel(cls) -> Any:
        import llguidance.torch as lt

        return lt.apply_token_bitmask_inplace

    def batch_filler(self, threads: int) -> LLGuidanceBatchFiller:
        return LLGuidanceBatchFiller(self._llg, threads)
