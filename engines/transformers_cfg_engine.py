"""transformers-cfg adapter (``pip install transformers-cfg==0.2.7 --no-deps``; the extra
``more-engines``).

transformers-cfg is the EBNF logits processor many Hugging Face users reach for first:
``IncrementalGrammarConstraint(grammar, "root", tokenizer)`` (an alias of
``IncrementalTokenRecognizer``) inside ``GrammarConstrainedLogitsProcessor``. The
recognizer normally builds its byte trie and its token → bytes map
(``TokenizerMiddleMapping``) from a Hugging Face tokenizer, fetching the slow tokenizer
and GPT-2's byte table from the Hub for Llama 3; the adapter builds both offline from
the harness's token bytes and passes them in (``trie=``, ``homomorphism=``), which the
constructor takes. Quirks absorbed here (checked against 0.2.7):

- **Grammars**: llama.cpp's GBNF dialect (start rule ``root``), parsed by transformers-cfg's
  own parser. ``parse_ebnf`` swallows its parse errors (it logs a warning and returns an
  empty grammar): the adapter captures that warning and raises
  :class:`~engines.protocol.CompileError` with it.
- **JSON schemas**: transformers-cfg has no converter of its own; its documentation sends
  users to llama.cpp's ``json_schema_to_grammar.py``. The adapter uses llama-cpp-python's
  copy (``llama_cpp/llama_grammar.py``: ``json_schema_to_gbnf``, ``allow_fetch=False``),
  loaded from its file without importing ``llama_cpp`` (no shared library is loaded), so
  the JSON language is that converter's: whitespace a single optional space (``" "?``)
  between tokens, string characters ``[^"\\]`` (raw control characters included: not
  JSON), properties in declared order, undeclared properties allowed unless
  ``additionalProperties`` is false, string ``format``s it does not know ignored. Without
  llama-cpp-python installed, a schema is a :class:`CompileError` saying so.
- **The allowed set is a boolean torch tensor** over the vocabulary
  (``filter_vocab(state, device)``: per parser stack, an ``lru_cache``d trie walk,
  merged with ``any``), which the processor applies as ``logits[~acceptance] = -inf``. The
  adapter packs it into the harness bitmask; **the mask time includes that conversion**
  (``numpy.packbits`` over the 128,256 flags). The recognizer knows one EOS id: the other
  stop ids get its bit.
- **EOS** is allowed where some parser stack is empty (the mask's answer, used for
  ``eos_allowed``). ``AcceptState.can_stop()``, which a commit of EOS consults, looks at
  the first stack in set order only; the adapter never forwards a stop id.
- **Special ids** map to no bytes, which the recognizer accepts anywhere without a
  change of state: the adapter refuses them outright.
- **Commit**: ``_update_state_with_token_id`` (what the processor calls for each new
  token) returns a new ``AcceptState``; no stacks left means the token is refused (the
  matcher is then dead). Tokens are bytes: a partial UTF-8 character is carried in the
  state (``PartialUTF8``). An ASCII grammar's mask walks the trie byte by byte, comparing
  each byte with the grammar's character ranges as if it were a code point; a grammar
  with non-ASCII characters walks by decoded code points.
- **Packaging**: the 0.2.7 wheel installs a top-level ``tests`` package beside
  ``transformers_cfg``, which shadows any project's ``tests`` namespace package
  (``tests/conftest.py`` binds the name to this project's folder).
- **Rollback**: states are values, so the adapter keeps one per committed token (exact,
  unbounded). No batch API (the processor loops over the batch; the default thread pool
  is used here).
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

import numpy as np

from engines.bitmask import bitmask_words, pack_allowed, token_bit
from engines.matcher import TemplateMatcher
from engines.protocol import (
    CompiledGrammar,
    CompileError,
    EngineAdapter,
    EngineUnavailable,
    one_line,
)
from engines.vocab import Vocabulary

_INSTALL = ("pip install transformers-cfg==0.2.7 --no-deps "
            "(or: pip install -e '.[more-engines]')")

_modules: dict[str, Any] = {}


def _import_tcfg() -> dict[str, Any]:
    if _modules:
        return _modules
    try:
        import torch
        from transformers_cfg.recognizer import AcceptState
        from transformers_cfg.token_grammar_recognizer import IncrementalTokenRecognizer
        from transformers_cfg.tokenization.byte_trie import ByteTrie
        from transformers_cfg.tokenization.middle.TokenizerMiddleMapping import (
            TokenizerMiddleMapping,
        )
    except Exception as e:
        raise EngineUnavailable(
            f"transformers_cfg cannot be imported ({one_line(e, 200)}); install it with: "
            f"{_INSTALL}") from None
    _modules.update(torch=torch, Recognizer=IncrementalTokenRecognizer, ByteTrie=ByteTrie,
                    Mapping=TokenizerMiddleMapping, AcceptState=AcceptState)
    return _modules


def _schema_converter() -> Any:
    """llama.cpp's JSON schema → GBNF converter as llama-cpp-python ships it
    (``llama_cpp/llama_grammar.py``, standard library only), loaded from its file so that
    the ``llama_cpp`` package and its shared library are not imported; None when
    llama-cpp-python is not installed."""
    if "converter" in _modules:
        return _modules["converter"]
    conv = None
    try:
        spec = importlib.util.find_spec("llama_cpp")
        if spec is not None and spec.submodule_search_locations:
            path = Path(next(iter(spec.submodule_search_locations))) / "llama_grammar.py"
            if path.is_file():
                s = importlib.util.spec_from_file_location("_harness_llama_grammar", path)
                if s is None or s.loader is None:  # caught below: no converter
                    raise ImportError(f"{path}: no module spec")
                mod = importlib.util.module_from_spec(s)
                s.loader.exec_module(mod)
                conv = mod.json_schema_to_gbnf
    except Exception:
        conv = None
    _modules["converter"] = conv
    return conv


class _Tokenizer:
    """What the recognizer reads from a tokenizer when it is given the trie and the
    mapping: ``eos_token_id`` (and ``decode``, for its debug output)."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.eos_token_id = vocab.eos_id
        self.bos_token_id = vocab.bos_id
        self._tokens = vocab.tokens

    def decode(self, ids: Any) -> str:
        return b"".join(self._tokens[int(i)] for i in ids).decode("utf-8", errors="replace")


class _ParseErrors(logging.Handler):
    """Catches the warning ``parse_ebnf`` logs instead of raising."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        # parse_ebnf logs ("error parsing grammar:", err): the error is in the args
        self.errors.append(" ".join([str(record.msg), *map(str, record.args or ())]))


class TransformersCfgMatcher(TemplateMatcher):
    """One sequence on an ``IncrementalTokenRecognizer``'s ``AcceptState``s
    (:class:`~engines.matcher.TemplateMatcher` keeps the contract)."""

    __slots__ = ("_c", "_states")

    def __init__(self, compiled: "TransformersCfgCompiled") -> None:
        super().__init__(compiled._words, compiled._stop, compiled._nontext)
        self._c = compiled
        self._states = [compiled._initial()]

    def _fill(self, bitmask: np.ndarray) -> None:
        c = self._c
        acceptance = c._rec.filter_vocab(self._states[-1], c._device)
        pack_allowed(acceptance.numpy(), bitmask)
        if c._extra_stop and bitmask[c._eos_word] & c._eos_bit:
            for w, b in c._extra_stop:
                bitmask[w] |= b

    def _advance(self, token_id: int) -> bool:
        c = self._c
        if not 0 <= token_id < c._size:
            return False
        try:
            state = c._rec._update_state_with_token_id(token_id, self._states[-1])
        except (ValueError, KeyError, IndexError):
            return False
        if not state.stacks:
            return False
        self._states.append(state)
        return True

    def _can_end(self) -> bool:
        # the mask's answer: some stack is empty (not AcceptState.can_stop(), see module)
        return any(len(s) == 0 for s in self._states[-1].stacks)

    def _undo(self, n: int) -> None:
        del self._states[-n:]

    def _restart(self) -> None:
        self._states = [self._c._initial()]


class TransformersCfgCompiled(CompiledGrammar):
    def __init__(self, rec: Any, grammar: str, engine: "TransformersCfgEngine") -> None:
        self._rec = rec
        #: The GBNF grammar given to transformers-cfg.
        self.grammar = grammar
        self.warnings: list[str] = []
        self._stop = engine._stop
        self._nontext = engine._nontext
        self._words = engine._words
        self._size = engine.vocab.size
        self._device = engine._device
        self._eos_word, self._eos_bit = token_bit(engine.vocab.eos_id)
        self._extra_stop = engine._extra_stop

    def _initial(self) -> Any:
        return self._rec.string_recognizer.get_initial_parsing_state()

    def matcher(self) -> TransformersCfgMatcher:
        return TransformersCfgMatcher(self)


class TransformersCfgEngine(EngineAdapter):
    """transformers-cfg ``IncrementalGrammarConstraint`` over a byte trie built from the
    harness vocabulary; JSON schemas through llama.cpp's converter."""

    name = "transformers-cfg"
    package = "transformers-cfg"
    requires = "transformers_cfg"
    install_hint = ("bash setup.sh, or pip install -e '.[more-engines]' "
                    "(pins transformers-cfg==0.2.7)")
    hidden = True
    hidden_reason = ("slow masks (a Python walk of the byte trie per parser stack: seconds "
                     "per instance): ask for it by name")
    grammar_dialects = ("gbnf",)

    def __init__(self, vocab: Vocabulary, config: str = "default", **overrides: Any):
        super().__init__(vocab, config, **overrides)
        if self.options:
            raise ValueError(f"unknown transformers-cfg option(s): "
                             f"{', '.join(sorted(self.options))}")
        m = _import_tcfg()
        self._m = m
        self._stop = frozenset(vocab.stop_ids)
        # special ids map to no bytes, which the recognizer would accept anywhere
        self._nontext = self._stop | vocab.special_ids
        self._words = bitmask_words(vocab.size)
        self._extra_stop = tuple(token_bit(i) for i in vocab.stop_ids if i != vocab.eos_id)
        self._device = m["torch"].device("cpu")
        self._tokenizer = _Tokenizer(vocab)
        specials = vocab.special_ids
        token_bytes = [b"" if i in specials else bytes(t) for i, t in enumerate(vocab.tokens)]
        trie = m["ByteTrie"]()
        for i, t in enumerate(token_bytes):
            if t:
                trie.insert(t, i)
        trie.vocab_size = vocab.size
        self._trie = trie
        self._mapping = _make_mapping(m["Mapping"], token_bytes, vocab)

    def compile(self, schema_text: str) -> TransformersCfgCompiled:
        """The schema → GBNF by llama.cpp's converter (llama-cpp-python's copy), then
        :meth:`compile_grammar`."""
        conv = _schema_converter()
        if conv is None:
            raise CompileError("transformers-cfg has no JSON-schema converter; the adapter "
                               "uses llama.cpp's (llama-cpp-python), which is not installed")
        try:
            gbnf = conv(schema_text)
        except MemoryError:
            raise
        except Exception as e:
            raise CompileError(f"json_schema_to_gbnf: {one_line(e)}") from None
        return self.compile_grammar("gbnf", gbnf)

    def compile_grammar(self, dialect: str, text: str) -> TransformersCfgCompiled:
        """``gbnf``: transformers-cfg's EBNF (llama.cpp's GBNF), start rule ``root``."""
        if dialect != "gbnf":
            raise CompileError(f"transformers-cfg reads GBNF grammars only, not {dialect}")
        log = logging.getLogger("transformers_cfg.parser")
        catch = _ParseErrors()
        log.addHandler(catch)
        propagate, log.propagate = log.propagate, False
        try:
            rec = self._m["Recognizer"](text, "root", self._tokenizer, trie=self._trie,
                                        homomorphism=self._mapping)
        except MemoryError:
            raise
        except Exception as e:
            raise CompileError(one_line(catch.errors[0] if catch.errors else e)) from None
        finally:
            log.removeHandler(catch)
            log.propagate = propagate
        if catch.errors:
            raise CompileError(one_line(catch.errors[0]))
        if rec.start_rule_id is None:
            raise CompileError("transformers-cfg: the grammar has no rule 'root'")
        return TransformersCfgCompiled(rec, text, self)


def _make_mapping(base: type, token_bytes: list[bytes], vocab: Vocabulary) -> Any:
    """A ``TokenizerMiddleMapping`` (the recognizer's token id → bytes map) over the
    harness's token bytes: special ids map to no bytes, as transformers-cfg maps them."""

    class HarnessMapping(base):
        def __init__(self) -> None:  # the base reads a Hugging Face tokenizer
            self.eos_token_id = vocab.eos_id
            self.bos_token_id = vocab.bos_id
            self.special = sorted(vocab.special_ids)
            self._length = vocab.size
            self._bytes = token_bytes

        def map(self, token_id: int, verbose: bool = False) -> bytes:
            if hasattr(token_id, "item"):
                token_id = token_id.item()
            return self._bytes[token_id]

    return HarnessMapping()

