"""Formatron adapter: formatron 0.5.0 on its engine kbnf 0.4.2 (``pip install formatron==0.5.0
kbnf==0.4.2 frozendict general-sam --no-deps``; the extra ``more-engines``).

Formatron is what ExLlamaV2/V3 users decode with: it turns a JSON schema (or a regex)
into a KBNF grammar and runs it on ``kbnf.Engine``, a Rust Earley-style CFG engine. Its
transformers integration is not used (``formatron[transformers]`` is not installed): the
adapter builds kbnf's vocabulary from the harness's token bytes, as
``formatron.integrations.transformers.create_engine_vocabulary`` does from a tokenizer
(``kbnf.Vocabulary({id: Token(bytes)}, {id: str})``, special ids left out). Quirks
absorbed here (checked against formatron 0.5.0 / kbnf 0.4.2):

- **Import shim**: ``formatron.schemas.json_schema`` does ``from pydantic import typing``,
  a pydantic-1 module that pydantic 2 no longer has. The adapter sets
  ``pydantic.typing`` to the standard ``typing`` module while importing formatron (what
  the pydantic-1 module re-exported) and removes it afterwards.
- **JSON schema**: ``formatron.schemas.json_schema.create_schema(dict)`` →
  ``FormatterBuilder.json(schema)`` placed with ``append_str`` (no trailing newline) → the
  builder's KBNF rules → ``kbnf.Engine(grammar, vocabulary)``. ``create_schema`` needs a
  ``$id`` (the adapter adds ``https://harness.invalid/schema.json`` when there is none;
  nothing is ever fetched: references resolve in the schema itself) and a ``$schema``:
  formatron reads draft 2020-12 only (it validates every schema against the 2020-12
  meta-schema), so a schema that names no draft or an older one is given draft 2020-12
  (recorded in the compiled grammar's ``warnings``; under draft 4 to 7 ``referencing``
  finds no internal id: ``id`` in draft 4, ``$id`` ignored beside ``$ref``). The root
  must be of type ``object`` or ``array`` (else a :class:`~engines.protocol.CompileError`),
  ``anyOf`` may sit beside nothing but ``$id``/``$schema``, and keywords formatron does
  not know are ignored.
- **Defaults that change the language**: ``additionalProperties`` is always taken as
  false; properties come in declared order; whitespace ``[ \\t\\n]*`` before every JSON
  token (no ``\\r``, none after the root value). An optional property's *key* is always
  emitted and only its *value* is optional (``{"a": , "b": 1}``): formatron's grammar for
  ``required`` as it stands in 0.5.0.
- **Regex dialect**: ``FormatterBuilder.regex(pattern)`` (a KBNF ``#'...'`` regex
  terminal: Rust regex-automata syntax, whole-output match). No CFG dialect is translated
  (KBNF is its own EBNF form).
- **End of output**: kbnf knows no EOS token. kbnf reports ``is_finished()`` as soon as
  the start rule *can* end and then allows nothing more (``[0-9]+`` is finished after the
  token ``123``: a following ``4`` is refused); the integrations then allow EOS only.
  The adapter does the same: stop ids are allowed exactly when ``is_finished()``,
  nothing else then.
- **Mask**: ``compute_allowed_token_ids()`` then ``fill_torch_bitmask(ptr)``, which writes
  kbnf's allowed set into a bitmask of the harness's layout (int32 words, bit ``i % 32``
  of word ``i // 32``) but only sets bits: the adapter zeroes the words first. No
  conversion from a list is needed; the stop bits are set by the adapter.
- **Commit**: ``try_accept_new_token`` raises ``ValueError`` for a rejected token (state
  unchanged) and after the end: the matcher is then dead.
- **No rollback API**: the adapter rolls back by resetting the engine and accepting the
  kept tokens again (exact; costs one accept per kept token). No batch API (the default
  thread pool). Fresh matchers are ``copy.copy`` of the compiled engine (kbnf's own
  ``__copy__``, ~2 µs).
"""

from __future__ import annotations

import copy
import json
import os
import typing
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

_INSTALL = ("pip install formatron==0.5.0 kbnf==0.4.2 frozendict general-sam --no-deps "
            "(or: pip install -e '.[more-engines]')")
#: ``$id`` / ``$schema`` given to a schema that has none (formatron requires both).
PLACEHOLDER_ID = "https://harness.invalid/schema.json"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

_modules: dict[str, Any] = {}


def _import_formatron() -> dict[str, Any]:
    """kbnf, formatron's builder and its JSON-schema module, imported once with the
    ``pydantic.typing`` shim."""
    if _modules:
        return _modules
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    try:
        import kbnf
        import pydantic

        missing = object()
        before = vars(pydantic).get("typing", missing)
        pydantic.typing = typing  # what pydantic 1's pydantic.typing re-exported
        try:
            from formatron.formatter import FormatterBuilder
            from formatron.schemas import json_schema
        finally:
            if before is missing:
                del pydantic.typing
            else:
                pydantic.typing = before
    except Exception as e:
        raise EngineUnavailable(
            f"formatron cannot be imported ({one_line(e, 200)}); install it with: {_INSTALL}"
        ) from None
    _modules.update(kbnf=kbnf, FormatterBuilder=FormatterBuilder, json_schema=json_schema)
    return _modules


class FormatronMatcher(TemplateMatcher):
    """One sequence on a copy of the compiled ``kbnf.Engine``
    (:class:`~engines.matcher.TemplateMatcher` keeps the contract)."""

    __slots__ = ("_e", "_seq", "_stop_bits")

    by_pointer = True

    def __init__(self, engine: Any, stop_ids: frozenset[int],
                 stop_bits: tuple[tuple[int, np.int32], ...], words: int) -> None:
        super().__init__(words, stop_ids)
        self._e = copy.copy(engine)
        self._seq: list[int] = []
        self._stop_bits = stop_bits

    def _fill(self, bitmask: np.ndarray) -> None:
        bitmask.fill(0)  # fill_torch_bitmask only sets bits
        e = self._e
        if e.is_finished():  # kbnf allows nothing more; the integrations allow EOS only
            for w, b in self._stop_bits:
                bitmask[w] |= b
            return
        e.compute_allowed_token_ids()
        e.fill_torch_bitmask(self._ptr)

    def _advance(self, token_id: int) -> bool:
        try:
            self._e.try_accept_new_token(token_id)
        except (ValueError, OverflowError):
            return False
        self._seq.append(token_id)
        return True

    def _can_end(self) -> bool:
        return self._e.is_finished()

    def _undo(self, n: int) -> None:
        keep = self._seq[:-n]
        self._e.reset()
        for t in keep:  # kbnf has no rollback: replay the kept tokens
            self._e.try_accept_new_token(t)
        self._seq = keep

    def _restart(self) -> None:
        self._e.reset()
        self._seq = []


class FormatronCompiled(CompiledGrammar):
    def __init__(self, engine: Any, grammar: str, owner: "FormatronEngine") -> None:
        self._engine = engine
        #: The KBNF grammar formatron built.
        self.grammar = grammar
        self.warnings: list[str] = []
        self._stop = owner._stop
        self._stop_bits = owner._stop_bits
        self._words = owner._words

    def matcher(self) -> FormatronMatcher:
        return FormatronMatcher(self._engine, self._stop, self._stop_bits, self._words)


class FormatronEngine(EngineAdapter):
    """formatron ``create_schema`` / ``FormatterBuilder`` → ``kbnf.Engine``."""

    name = "formatron"
    package = "formatron"
    requires = "formatron"
    install_hint = ("bash setup.sh, or pip install -e '.[more-engines]' "
                    "(pins formatron==0.5.0, kbnf==0.4.2)")
    hidden = True
    hidden_reason = ("slow compiles (on a 36-schema sample: 5 past the 60 s limit, one past "
                     "8 GiB), and outside the default set the CI sample and baselines pin: "
                     "ask for it by name")
    grammar_dialects = ("regex",)

    def __init__(self, vocab: Vocabulary, config: str = "default", **overrides: Any):
        super().__init__(vocab, config, **overrides)
        if self.options:
            raise ValueError(f"unknown formatron option(s): {', '.join(sorted(self.options))}")
        m = _import_formatron()
        self._kbnf = m["kbnf"]
        self._builder = m["FormatterBuilder"]
        self._json_schema = m["json_schema"]
        self._stop = frozenset(vocab.stop_ids)
        self._stop_bits = tuple(token_bit(i) for i in vocab.stop_ids)
        self._words = bitmask_words(vocab.size)
        kbnf = self._kbnf
        specials = vocab.special_ids
        tokens, strings = {}, {}
        for i, t in enumerate(vocab.tokens):
            if i in specials or not t:
                continue
            t = bytes(t)
            tokens[i] = kbnf.Token(t)
            strings[i] = t.decode("utf-8", errors="replace")
        self.engine_vocabulary = kbnf.Vocabulary(tokens, strings)

    def compile(self, schema_text: str) -> FormatronCompiled:
        try:
            schema = json.loads(schema_text)
            if not isinstance(schema, dict):
                raise ValueError("formatron takes a schema object, not a boolean schema")
            warnings = _as_2020_12(schema)
            f = self._builder()
            f.append_str(f"{f.json(self._json_schema.create_schema(schema))}")
        except MemoryError:
            raise
        except Exception as e:  # ValueError, AssertionError, jsonschema / referencing errors
            raise CompileError(one_line(e)) from None
        out = self._build(f)
        out.warnings = warnings
        return out

    def compile_grammar(self, dialect: str, text: str) -> FormatronCompiled:
        """``regex`` only: ``FormatterBuilder.regex`` (a KBNF regex terminal)."""
        if dialect != "regex":
            raise CompileError(f"formatron reads regular expressions only, not {dialect}")
        try:
            f = self._builder()
            f.append_str(f"{f.regex(text)}")
        except MemoryError:
            raise
        except Exception as e:
            raise CompileError(one_line(e)) from None
        return self._build(f)

    def _build(self, f: Any) -> FormatronCompiled:
        """``FormatterBuilder.build`` (the KBNF grammar → ``kbnf.Engine``); the
        formatter's engine is what the matchers copy (its extractors, which parse the
        finished output for captures, are not used)."""
        try:
            formatter = f.build(self.engine_vocabulary, _no_decode)
        except (KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except BaseException as e:  # a Rust panic is a BaseException (pyo3)
            raise CompileError(one_line(e)) from None
        return FormatronCompiled(formatter._engine, formatter.grammar_str, self)


#: ``$schema`` values formatron's reading (draft 2020-12) keeps as they are.
_KEPT_DRAFTS = ("https://json-schema.org/draft/2020-12/schema",
                "https://json-schema.org/draft/2019-09/schema")


def _as_2020_12(schema: dict) -> list[str]:
    """Give ``schema`` what ``create_schema`` requires, in place: a ``$id`` when it has
    none, and ``$schema`` draft 2020-12 when it names no draft or an older one (formatron
    reads 2020-12 only; an older draft's resource would have no internal id for
    ``referencing``: ``id`` in draft 4, ``$id`` ignored beside ``$ref`` up to draft 7).
    Returns the warnings to record."""
    out = []
    if "$id" not in schema:
        schema["$id"] = PLACEHOLDER_ID
    draft = schema.get("$schema")
    if not isinstance(draft, str) or draft.rstrip("#") not in _KEPT_DRAFTS:
        if draft is not None:
            out.append(f"$schema {str(draft)[:80]} read as draft 2020-12 "
                       "(formatron reads no other)")
        schema["$schema"] = DRAFT_2020_12
    return out


def _no_decode(ids: list[int]) -> str:
    """The formatter's decode callback (used only for captures, which are not read)."""
    return ""
