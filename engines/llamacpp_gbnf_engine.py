"""llama.cpp's own JSON-schema path as an engine row: ``llamacpp-gbnf``.

``LlamaGrammar.from_json_schema`` (llama-cpp-python's schema → GBNF converter) compiled by
llama.cpp's grammar sampler (``llama_sampler_init_grammar``). The sampler needs a
``llama_vocab``: the adapter loads, vocabulary only, the harness's own GGUF for the
vocabulary (:mod:`engines.vocab.gguf`; only the Llama-3 vocabulary is supported).

- ``fill_mask``: the grammar sampler applied to a candidate array of every token with logit 0;
  tokens it sets to -inf are disallowed. Stop tokens (llama.cpp's end-of-generation set) are
  allowed exactly when the grammar can end.
- ``commit``: checked against the last mask first (llama.cpp throws a C++ exception, which
  would abort the process, on a token the grammar cannot accept), then
  ``llama_sampler_accept``.
- ``rollback`` is not supported by llama.cpp's grammar (ValueError).

In the e2e suite with ``--runtime llamacpp`` the row uses llama-cpp-python's own path
(``Llama.generate(grammar=...)``) instead of this matcher.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from engines.bitmask import bitmask_words, pack_allowed
from engines.matcher import TemplateMatcher
from engines.protocol import (
    CompiledGrammar,
    CompileError,
    EngineAdapter,
    EngineUnavailable,
    Matcher,
    one_line,
)
from engines.vocab import Vocabulary

_TOKEN_DTYPE = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


def _import():
    try:
        import llama_cpp
        from llama_cpp.llama_grammar import LlamaGrammar
    except Exception as e:
        raise EngineUnavailable(
            f"llama_cpp cannot be imported ({one_line(e, 200)}); install it with: "
            "bash scripts/build_llamacpp.sh") from None
    return llama_cpp, LlamaGrammar


class _VocabModel:
    """A vocabulary-only llama.cpp model (kept for the process's life)."""

    _cache: dict[str, Any] = {}

    @classmethod
    def vocab_ptr(cls, vocab: Vocabulary):
        llama_cpp, _ = _import()
        if vocab.name != "llama3":
            raise EngineUnavailable("llamacpp-gbnf runs with the llama3 vocabulary only")
        key = vocab.fingerprint
        if key not in cls._cache:
            from engines.vocab.gguf import ensure_gguf

            path = ensure_gguf("micro", "Q8_0", 0, vocab)
            from llama_cpp._logger import set_verbose

            set_verbose(False)  # llama.cpp's loader prints the whole model info otherwise
            llama_cpp.llama_backend_init()
            params = llama_cpp.llama_model_default_params()
            params.vocab_only = True
            model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
            if not model:
                raise EngineUnavailable(f"llama.cpp could not load the vocabulary of {path}")
            cls._cache[key] = (model, llama_cpp.llama_model_get_vocab(model))
        return cls._cache[key][1]


class LlamaCppGbnfMatcher(TemplateMatcher):
    """One sequence on a llama.cpp grammar sampler (``sampler``: a clone to run on, else
    a new one); :class:`~engines.matcher.TemplateMatcher` keeps the contract. Every
    token is checked against the current mask before the sampler sees it; a stop id is
    accepted, without advancing the sampler, exactly when the mask allows it."""

    def __init__(self, owner: "LlamaCppGbnfCompiled", sampler: Any = None):
        super().__init__(owner.words, owner.stop_ids)
        self._o = owner
        self._smpl = owner._new_sampler() if sampler is None else sampler
        self._mask: np.ndarray | None = None  # bool allowed[V] of the current state

    def _allowed(self) -> np.ndarray:
        if self._mask is None:
            o = self._o
            arr = o._cand
            arr["logit"] = 0.0
            arr["id"] = o._ids
            o._carr.size = o.V
            o._carr.selected = -1
            o._carr.sorted = False
            o.llama_cpp.llama_sampler_apply(self._smpl, ctypes.byref(o._carr))
            self._mask = arr["logit"] != -np.inf
        return self._mask

    def _fill(self, bitmask: np.ndarray) -> None:
        pack_allowed(self._allowed(), bitmask)

    def _advance(self, token_id: int) -> bool:
        # llama.cpp throws a C++ exception (the process aborts) on a token its grammar
        # cannot accept: check the mask first
        if not (0 <= token_id < self._o.V) or not self._allowed()[token_id]:
            return False
        self._o.llama_cpp.llama_sampler_accept(self._smpl, int(token_id))
        self._mask = None
        return True

    def _stop_allowed(self, token_id: int) -> bool:
        return bool(self._allowed()[token_id])  # the sequence ends; the sampler stays

    def _can_end(self) -> bool:
        allowed = self._allowed()
        return any(allowed[s] for s in self._o.stop_ids)

    def rollback(self, n: int) -> None:
        """llama.cpp's grammar sampler keeps no history: ValueError for any ``n > 0``."""
        if n:
            raise ValueError("llamacpp-gbnf: llama.cpp's grammar sampler cannot roll back")

    def _restart(self) -> None:
        self._o.llama_cpp.llama_sampler_reset(self._smpl)
        self._mask = None

    def __del__(self):
        try:
            self._o.llama_cpp.llama_sampler_free(self._smpl)
        except Exception:
            pass

    draft_api = "token by token on a clone of the grammar sampler (llama_sampler_clone)"

    def validate_draft(self, tokens) -> int:
        """llama.cpp's grammar cannot roll back, so the draft runs token by token on a
        matcher over a clone of this one's sampler (``llama_sampler_clone``), freed
        afterwards: this matcher's state is never touched. Each token is checked against
        the clone's mask before it is accepted, as :meth:`commit` does; a stop id counts
        where the grammar can end and ends the draft. 0 on a dead matcher."""
        if self._dead or not len(tokens):
            return 0
        twin = LlamaCppGbnfMatcher(self._o, self._o.llama_cpp.llama_sampler_clone(self._smpl))
        twin._mask = self._mask  # never written in place: commit replaces it
        n = 0
        try:
            for t in tokens:
                if not twin.commit(int(t)):
                    break
                n += 1
                if int(t) in self._o.stop_ids:
                    break
        finally:
            del twin  # __del__ frees the cloned sampler
        return n


class LlamaCppGbnfCompiled(CompiledGrammar):
    def __init__(self, llama_cpp, vocab_ptr, gbnf: str, V: int, stop_ids):
        self.llama_cpp, self.vocab_ptr, self.gbnf = llama_cpp, vocab_ptr, gbnf
        self.V, self.words = V, bitmask_words(V)
        self.stop_ids = frozenset(stop_ids)
        self._cand = np.zeros(V, dtype=_TOKEN_DTYPE)
        self._ids = np.arange(V, dtype=np.int32)
        self._carr = llama_cpp.llama_token_data_array(
            data=self._cand.ctypes.data_as(llama_cpp.llama_token_data_p), size=V, selected=-1,
            sorted=False)
        first = self._new_sampler()
        llama_cpp.llama_sampler_free(first)

    def _new_sampler(self):
        s = self.llama_cpp.llama_sampler_init_grammar(self.vocab_ptr, self.gbnf.encode(),
                                                       b"root")
        if not s:
            raise CompileError("llama.cpp could not parse the GBNF grammar")
        return s

    def matcher(self) -> Matcher:
        return LlamaCppGbnfMatcher(self)


class LlamaCppGbnfEngine(EngineAdapter):
    name = "llamacpp-gbnf"
    package = "llama_cpp_python"
    requires = "llama_cpp"
    grammar_runtime = "llamacpp"
    configs = {"default": {}}
    hidden = True
    hidden_reason = "optional runtime, slow masks: ask for it by name"
    install_hint = "bash scripts/build_llamacpp.sh"

    def __init__(self, vocab: Vocabulary, config: str = "default", **overrides: Any):
        super().__init__(vocab, config, **overrides)
        self.llama_cpp, self.LlamaGrammar = _import()
        self._vocab_ptr = _VocabModel.vocab_ptr(vocab)

    def gbnf(self, schema_text: str) -> str:
        try:
            return self.LlamaGrammar.from_json_schema(schema_text, verbose=False)._grammar
        except Exception as e:  # the converter raises plain Exceptions / ValueErrors
            raise CompileError(one_line(e)) from None

    def runtime_grammar(self, schema_text: str) -> Any:
        """The grammar object llama.cpp's own sampler takes (``Llama.generate(grammar=...)``)
        for the e2e suite's llamacpp runtime. Raises :class:`CompileError`."""
        grammar = self.LlamaGrammar.from_string(self.gbnf(schema_text), verbose=False)
        self.compile(schema_text)  # refuses what llama.cpp cannot parse
        return grammar

    grammar_dialects = ("gbnf",)

    def compile_grammar(self, dialect: str, text: str) -> CompiledGrammar:
        """``gbnf`` only, start rule ``root``, through ``llama_sampler_init_grammar``."""
        if dialect != "gbnf":
            raise CompileError(f"llama.cpp reads GBNF grammars only, not {dialect}")
        return LlamaCppGbnfCompiled(self.llama_cpp, self._vocab_ptr, text, self.vocab.size,
                                    self.vocab.stop_ids)

    def compile(self, schema_text: str) -> CompiledGrammar:
        return LlamaCppGbnfCompiled(self.llama_cpp, self._vocab_ptr, self.gbnf(schema_text),
                                    self.vocab.size, self.vocab.stop_ids)
