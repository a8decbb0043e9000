"""xgrammar adapter (``pip install torch==2.13.0 xgrammar==0.2.9``).

Quirks absorbed here (``docs/engines.md`` lists them; checked against 0.2.9):

- Special tokens: xgrammar detects special tokens only from their text. Given their names
  (``b"<|begin_of_text|>"``) as raw bytes it detects *none* and allows them inside JSON
  strings. The adapter therefore gives every special id empty bytes, which xgrammar
  classifies as special (never allowed); stop ids are passed as ``stop_token_ids`` and
  are allowed exactly when the grammar can end.
- Errors are ``RuntimeError`` with a ``[hh:mm:ss] /project/cpp/file.cc:N:`` prefix; the
  prefix is stripped and the rest becomes a one-line :class:`CompileError`.
- Warnings (ignored ``format``, remote ``$ref`` …) go from C++ straight to fd 2. They are
  captured during compilation and exposed as ``CompiledGrammar.warnings`` (not re-printed).
- A rejected token leaves xgrammar's state unchanged; the adapter still marks the
  matcher dead (uniform semantics across engines, see :class:`XGrammarMatcher`).
- Jump-forward (:meth:`XGrammarMatcher.forced_continuation`): ``find_jump_forward_string``
  stops before a partial UTF-8 character (the omitted bytes are still forced), and
  ``find_jump_forward_tokens`` matches the longest tokens greedily, which is not always the
  canonical tokenisation (``llo`` → ``ll``, ``o``; Llama 3 encodes ``l``, ``lo``).
- ``traverse_draft_tree`` (the adapter's ``validate_draft``, with the draft as a chain)
  fills a mask for every node it reaches, the node after the last draft token included;
  the node after a refused token or a stop token gets an all-zero row and the nodes
  beyond it are left untouched (whatever the buffer held): the adapter zeroes the rows
  first. Measured on one corpus schema (k = 1 / 4 / 8 tokens):
  traverse 2.7 / 4.9 / 12.5 µs, ``fork()`` + ``accept_token`` 3.5 / 4.7 / 7.3 µs,
  ``accept_token`` + ``rollback`` on the matcher itself 1.2 / 2.8 / 5.1 µs, against
  3.3 / 10.3 / 20.8 µs for single steps (mask + accept): traverse is kept because it is
  xgrammar's speculative-decoding API (it gives the masks the target model needs).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from typing import Any

import numpy as np

from engines.batch import BatchFiller
from engines.bitmask import bitmask_words
from engines.matcher import TemplateMatcher
from engines.protocol import (
    CachedCompiler,
    CompiledGrammar,
    CompileError,
    EngineAdapter,
    EngineUnavailable,
    one_line,
)
from engines.vocab import Vocabulary

#: ``compile_json_schema`` keyword defaults in xgrammar 0.2.9 (checked by the tests
#: against the installed signature, so a version change is noticed).
XGRAMMAR_DEFAULTS: dict[str, Any] = {
    "any_whitespace": True,
    "indent": None,
    "separators": None,
    "strict_mode": True,
    "max_whitespace_cnt": None,
    "any_order": False,
}

_CPP_PREFIX = re.compile(r"\[\d\d:\d\d:\d\d\]\s+\S+?\.(?:cc|h|cpp):\d+:\s*")


def _import_xgrammar():
    try:
        import xgrammar
    except Exception as e:  # ImportError, or torch/transformers failing inside it
        raise EngineUnavailable(
            f"xgrammar cannot be imported ({one_line(e, 200)}); install it with: "
            "pip install torch==2.13.0 && pip install xgrammar==0.2.9"
        ) from None
    return xgrammar


def _clean(exc: BaseException) -> str:
    """One line, without xgrammar's ``[time] /project/cpp/x.cc:N:`` prefixes."""
    return one_line(f"{type(exc).__name__}: {_CPP_PREFIX.sub('', str(exc))}")


class XGrammarMatcher(TemplateMatcher):
    """One sequence on an ``xgr.GrammarMatcher`` (:class:`~engines.matcher.TemplateMatcher`
    keeps the contract).

    - ``commit(stop_id)`` is never forwarded to xgrammar (there it would terminate the
      matcher and print a warning on any later token): it is accepted, changing no state,
      exactly when ``is_completed()``. Other special ids are refused without asking
      xgrammar (it would print a warning).
    - A rejected token leaves xgrammar's state unchanged; the matcher is still dead until
      :meth:`reset`, as with every engine.
    - ``fill_mask`` checks each bitmask object once: xgrammar checks dtype and length
      itself but ignores strides (a strided view is filled as if contiguous).
    """

    __slots__ = ("_m",)

    def __init__(self, grammar_matcher: Any, stop_ids: frozenset[int],
                 nontext: frozenset[int], words: int):
        super().__init__(words, stop_ids, nontext)
        self._m = grammar_matcher

    def _fill(self, bitmask: np.ndarray) -> None:
        self._m.fill_next_token_bitmask(bitmask)

    def _advance(self, token_id: int) -> bool:
        return self._m.accept_token(token_id)

    def _can_end(self) -> bool:
        return self._m.is_completed()

    def _undo(self, n: int) -> None:
        self._m.rollback(n)

    def _restart(self) -> None:
        self._m.reset()

    def forced_continuation(self) -> tuple[bytes, list[int]]:
        """``find_jump_forward_string()`` (UTF-8 encoded) and ``find_jump_forward_tokens()``;
        ``(b"", [])`` on a dead matcher (xgrammar's state would answer for the prefix
        before the rejected token)."""
        if self._dead:
            return b"", []
        return (self._m.find_jump_forward_string().encode("utf-8"),
                list(self._m.find_jump_forward_tokens()))

    draft_api = "xgrammar traverse_draft_tree (the draft as a chain)"

    def validate_draft(self, tokens) -> int:
        """``traverse_draft_tree`` over the draft as a chain (node 0 the current state,
        node ``i + 1`` draft token ``i``), which fills one mask per node and leaves the
        state as it was; the accepted length is how many draft tokens in a row have their
        bit set in the mask of the node before them. Stop ids go through xgrammar's own
        ``stop_token_ids`` (their bit is set exactly when the grammar can end). Nothing
        is added to xgrammar's answer after a stop token: what it accepts there is its
        own. 0 on a dead matcher."""
        if self._dead or not len(tokens):
            return 0
        ids = self._draft_ids(tokens)  # xgrammar indexes its tables with the id
        if not ids:
            return 0
        nxt, sib, draft, masks, rows = _draft_buffers(len(ids) + 1, self._words)
        draft.numpy()[1:] = ids
        rows.fill(0)  # nodes xgrammar does not visit keep what the last draft left
        self._m.traverse_draft_tree(nxt, sib, draft, masks)
        n = 0
        for i, t in enumerate(ids):
            if not (int(rows[i, t >> 5]) >> (t & 31)) & 1:
                break
            n += 1
        return n


_draft_local = threading.local()


def _draft_buffers(nodes: int, words: int):
    """Per-thread tensors for a chain of ``nodes`` nodes (reused: xgrammar wants torch
    tensors, and allocating them per draft costs more than the traversal of a short one):
    next-token and sibling indices, the draft tokens (node 0's token is ignored), the
    ``[nodes, words]`` masks and a numpy view of them."""
    cache = getattr(_draft_local, "bufs", None)
    if cache is None:
        cache = _draft_local.bufs = {}
    key = (nodes, words)
    if key not in cache:
        import torch

        nxt = torch.tensor([i + 1 if i + 1 < nodes else -1 for i in range(nodes)],
                           dtype=torch.int64)
        sib = torch.full((nodes,), -1, dtype=torch.int64)
        draft = torch.zeros(nodes, dtype=torch.int64)
        masks = torch.zeros((nodes, words), dtype=torch.int32)
        cache[key] = (nxt, sib, draft, masks, masks.numpy())
    return cache[key]


class XGrammarCompiled(CompiledGrammar):
    #: set on a grammar compiled from a tool-call or grammar request: the native form it became
    form: str

    def __init__(self, xgr: Any, compiled: Any, stop_ids: frozenset[int],
                 nontext: frozenset[int], words: int, warnings: list[str]):
        self._xgr = xgr
        self.compiled = compiled
        self._stop = stop_ids
        self._nontext = nontext
        self._words = words
        #: xgrammar's C++ warnings printed while compiling this schema.
        self.warnings = warnings

    def matcher(self) -> XGrammarMatcher:
        return XGrammarMatcher(self._xgr.GrammarMatcher(self.compiled), self._stop,
                               self._nontext, self._words)


class XGrammarBatchFiller(BatchFiller):
    """A batch's masks and commits through xgrammar's ``BatchGrammarMatcher`` (its own C++
    threads): ``batch_fill_next_token_bitmask`` and ``batch_accept_token``.

    Dead matchers (a token was rejected) get an all-zero row, as in
    :meth:`XGrammarMatcher.fill_mask`; stop ids and dead matchers never reach
    ``batch_accept_token`` (:meth:`~engines.matcher.TemplateMatcher._commit_outside`)."""

    method = "xgrammar BatchGrammarMatcher"
    commit_method = "xgrammar BatchGrammarMatcher.batch_accept_token"

    def __init__(self, xgr: Any, threads: int) -> None:
        super().__init__(1)
        self.threads = max(1, int(threads))
        self._batch = xgr.BatchGrammarMatcher(max_threads=self.threads)

    def fill(self, matchers, bitmask: np.ndarray, rows) -> None:
        native, idx = [], []
        for m, r in zip(matchers, rows):
            if m._dead:
                bitmask[r].fill(0)
            else:
                native.append(m._m)
                idx.append(int(r))
        if native:
            self._batch.batch_fill_next_token_bitmask(native, bitmask, idx)

    def commit(self, matchers, tokens) -> list[bool]:
        out: list[bool | None] = []
        asked, native, toks = [], [], []
        for i, (m, t) in enumerate(zip(matchers, tokens)):
            t = int(t)
            answer = m._commit_outside(t)
            out.append(answer)
            if answer is None:
                asked.append(i)
                native.append(m._m)
                toks.append(t)
        if native:
            for i, ok in zip(asked, self._batch.batch_accept_token(native, toks)):
                out[i] = matchers[i]._engine_answered(bool(ok))
        return out  # type: ignore[return-value]


class XGrammarCachedCompiler(CachedCompiler):
    """A ``GrammarCompiler`` with ``cache_enabled=True`` (xgrammar's own cache, keyed on the
    schema text and options), single-threaded like the adapter's own."""

    adapter: "XGrammarEngine"
    has_cache = True
    describe = "xgrammar GrammarCompiler cache (cache_enabled=True, unbounded)"

    def __init__(self, adapter: "XGrammarEngine") -> None:
        super().__init__(adapter)
        self._compiler = adapter._xgr.GrammarCompiler(adapter.tokenizer_info, max_threads=1,
                                                      cache_enabled=True)

    def compile(self, schema_text: str) -> XGrammarCompiled:
        a = self.adapter
        return a._compiled(lambda: self._compiler.compile_json_schema(schema_text, **a.options))

    def cache_bytes(self) -> int | None:
        return int(self._compiler.get_cache_size_bytes())

    def compile_tool_calls(self, spec) -> XGrammarCompiled:
        return self.adapter._tool_calls(self._compiler, spec)


class XGrammarEngine(EngineAdapter):
    """xgrammar ``GrammarCompiler.compile_json_schema`` (single-threaded, no cache)."""

    name = "xgrammar"
    package = "xgrammar"
    requires = "xgrammar"
    install_hint = "bash setup.sh (pins xgrammar==0.2.9 after torch==2.13.0)"
    prefer_own_kernel_on_gpu = True
    configs = {
        # xgrammar's own defaults, written out.
        "default": dict(XGRAMMAR_DEFAULTS),
        # As MaskBench and GRID ran it: undeclared properties allowed.
        "compliant": {**XGRAMMAR_DEFAULTS, "any_whitespace": True, "strict_mode": False},
        # No free whitespace. NB: with separators=None xgrammar then fixes json.dumps'
        # default layout, ", " and ": " (so `{"a": 1, "b": 2}` only, not `{"a":1,"b":2}`).
        "compact": {**XGRAMMAR_DEFAULTS, "any_whitespace": False},
        # Properties in any order (default: the order of `properties` only).
        "any_order": {**XGRAMMAR_DEFAULTS, "any_order": True},
        # vLLM's xgrammar backend with `disable_additional_properties` has no engine option
        # to map to: vLLM rewrites the schema (additionalProperties: false on every object),
        # which strict_mode=True (the default here) already does for undeclared properties.
    }
    #: Capture xgrammar's C++ stderr during compile into ``CompiledGrammar.warnings``.
    capture_stderr = True

    def __init__(self, vocab: Vocabulary, config: str = "default", **overrides: Any):
        super().__init__(vocab, config, **overrides)
        unknown = set(self.options) - set(XGRAMMAR_DEFAULTS)
        if unknown:
            raise ValueError(f"unknown xgrammar option(s): {', '.join(sorted(unknown))}")
        xgr = _import_xgrammar()
        self._xgr = xgr
        stop = frozenset(vocab.stop_ids)
        self._stop = stop
        specials = vocab.special_ids
        self._nontext = frozenset(specials) | stop  # ids never forwarded to xgrammar
        # Empty bytes = special for xgrammar (never matchable as text). Stop ids get empty
        # bytes too: they are matched through stop_token_ids only.
        if vocab.hf_tokenizer is not None:
            # a model folder's tokenizer (--model PATH): xgrammar's own constructor, as
            # vLLM's xgrammar backend calls it (vocab_size: the logits' width)
            self.tokenizer_info = xgr.TokenizerInfo.from_huggingface(
                vocab.hf_tokenizer, vocab_size=vocab.size, stop_token_ids=list(vocab.stop_ids))
        else:
            encoded = [b"" if i in specials else t for i, t in enumerate(vocab.tokens)]
            self.tokenizer_info = xgr.TokenizerInfo(
                encoded, xgr.VocabType.RAW, vocab_size=vocab.size,
                stop_token_ids=list(vocab.stop_ids))
        self._compiler = xgr.GrammarCompiler(
            self.tokenizer_info, max_threads=1, cache_enabled=False
        )
        self._errfile = tempfile.TemporaryFile() if self.capture_stderr else None

    grammar_dialects = ("regex", "gbnf", "lark")

    def compile(self, schema_text: str) -> XGrammarCompiled:
        return self._compiled(lambda: self._compiler.compile_json_schema(schema_text,
                                                                         **self.options))

    @classmethod
    def whitespace_bound(cls, n: int) -> dict[str, Any]:
        """``max_whitespace_cnt=n`` (every whitespace gap of the schema's grammar)."""
        return {"max_whitespace_cnt": n}

    def compile_grammar(self, dialect: str, text: str) -> XGrammarCompiled:
        """``regex``: ``compile_regex``; ``gbnf``: ``Grammar.from_ebnf`` (XGrammar's EBNF is
        GBNF-style); ``lark``: ``Grammar.from_lark`` (since 0.2.5); each then
        ``compile_grammar`` on this adapter's compiler."""
        xgr = self._xgr
        build = {
            "regex": lambda: self._compiler.compile_regex(text),
            "gbnf": lambda: self._compiler.compile_grammar(xgr.Grammar.from_ebnf(text)),
            "lark": lambda: self._compiler.compile_grammar(xgr.Grammar.from_lark(text)),
        }.get(dialect)
        if build is None:
            raise CompileError(f"xgrammar reads no {dialect} grammars")
        return self._compiled(build)

    tool_call_form = "built-in structural tag of the format's model (get_model_structural_tag)"

    def compile_tool_calls(self, spec) -> XGrammarCompiled:
        """``get_model_structural_tag`` for the format's model (``llama`` for Llama 3.1,
        ``qwen_3`` for ``<tool_call>`` tags), then ``compile_structural_tag``; the
        configuration's ``any_order`` and ``max_whitespace_cnt`` apply to every tool's
        arguments."""
        return self._tool_calls(self._compiler, spec)

    reasoning_form = "structural tag: sequence(tag(open, any_text(max_chars), close), json_schema)"

    def compile_reasoning(self, spec) -> XGrammarCompiled:
        """:func:`engines.reasoning.xgrammar_structural_tag` through
        ``compile_structural_tag`` (``max_chars`` bounds the free text)."""
        import json

        from engines.reasoning import xgrammar_structural_tag

        text = json.dumps(xgrammar_structural_tag(spec))
        out = self._compiled(lambda: self._compiler.compile_structural_tag(text))
        out.form = "structural tag"
        return out

    padded_vocab_api = "TokenizerInfo(vocab_size=width) and get_bitmask_shape(1, width)"

    def padded_masks(self, schema_text, width, prefixes):
        """A ``TokenizerInfo`` of this vocabulary's tokens with ``vocab_size=width`` (how
        vLLM and SGLang build it for a padded LM head); the engine fills the first
        ``get_bitmask_shape(1, width)`` words of each mask."""
        xgr = self._xgr
        specials = self.vocab.special_ids
        encoded = [b"" if i in specials else t for i, t in enumerate(self.vocab.tokens)]
        info = xgr.TokenizerInfo(encoded, xgr.VocabType.RAW, vocab_size=width,
                                 stop_token_ids=list(self.vocab.stop_ids))
        compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        try:
            compiled = compiler.compile_json_schema(schema_text, **self.options)
        except Exception as e:
            raise CompileError(_clean(e)) from None
        engine_words = int(xgr.get_bitmask_shape(1, width)[1])
        words = (width + 31) // 32
        masks = []
        for toks in prefixes:
            m = xgr.GrammarMatcher(compiled)
            for t in toks:
                if not m.accept_token(int(t)):
                    raise ValueError(f"xgrammar refused token {t} of a probe prefix")
            bm = np.full(max(words, engine_words), -1, np.int32)
            m.fill_next_token_bitmask(bm[:engine_words])
            masks.append(bm[:words])
        return engine_words, masks, None

    def _tool_calls(self, compiler, spec) -> XGrammarCompiled:
        from engines.tool_calls import xgrammar_structural_tag

        def build():
            tag = xgrammar_structural_tag(spec, any_order=bool(self.options["any_order"]),
                                          max_whitespace_cnt=self.options["max_whitespace_cnt"])
            return compiler.compile_structural_tag(tag)

        out = self._compiled(build)
        out.form = f"structural tag: built-in '{spec.fmt.xgrammar_model}'"
        return out

    def _compiled(self, build) -> XGrammarCompiled:
        errfile = self._errfile
        saved = -1
        if errfile is not None:
            try:
                sys.stderr.flush()
                errfile.seek(0)
                errfile.truncate()
                saved = os.dup(2)
                os.dup2(errfile.fileno(), 2)
            except (OSError, ValueError):
                saved = -1
        try:
            compiled = build()
        except MemoryError:
            raise
        except Exception as e:
            raise CompileError(_clean(e)) from None
        finally:
            if saved >= 0:
                os.dup2(saved, 2)
                os.close(saved)
        warnings: list[str] = []
        if saved >= 0 and errfile is not None:  # saved is set only with an errfile
            errfile.seek(0)
            text = errfile.read().decode("utf-8", errors="replace")
            warnings = [_CPP_PREFIX.sub("", ln).strip() for ln in text.splitlines() if ln.strip()]
            warnings = list(dict.fromkeys(warnings))  # xgrammar often prints twice
        return XGrammarCompiled(self._xgr, compiled, self._stop, self._nontext,
                               bitmask_words(self.vocab.size), warnings)

    @classmethod
    def mask_kernel(cls) -> Any:
        import xgrammar as xgr

        return xgr.apply_token_bitmask_inplace

    def cached_compiler(self) -> XGrammarCachedCompiler:
        return XGrammarCachedCompiler(self)

    def batch_filler(self, threads: int) -> XGrammarBatchFiller:
        return XGrammarBatchFiller(self._xgr, threads)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["tokenizer"] = {"vocab_type": "RAW", "special_ids_as_empty_bytes": True,
                          "stop_token_ids": list(self.vocab.stop_ids)}
        d["compiler"] = {"max_threads": 1, "cache_enabled": False}
        return d
