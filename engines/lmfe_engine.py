"""lm-format-enforcer adapter (``pip install lm-format-enforcer==0.11.3``; the extra
``more-engines``).

lm-format-enforcer (LMFE) was vLLM's legacy structured-output backend and is still used
through its transformers and vLLM integrations. Both integrations build a
``TokenEnforcerTokenizerData`` from a Hugging Face tokenizer and call
``TokenEnforcer.get_allowed_tokens(token_sequence)`` at every step. Its transformers
integration does not import with transformers 5 (``transformers.tokenization_utils`` is
gone), so the adapter uses the core API, ``TokenEnforcerTokenizerData`` +
``TokenEnforcer``, with tokenizer data built from the harness's vocabulary exactly as
``integrations.transformers.build_token_enforcer_tokenizer_data`` builds it from a
tokenizer. Quirks absorbed here (checked against 0.11.3):

- **Characters, not bytes.** LMFE walks a prefix tree of token *strings*: a token's string
  is its bytes decoded as UTF-8 with U+FFFD for a partial character (what
  ``tokenizer.decode`` gives), so the 1,352 Llama-3 tokens that are not valid UTF-8 stand
  as ``"\\ufffd"`` and are allowed wherever that character is (inside JSON strings). The
  integration's ``is_new_word`` test (decode after token ``"0"`` against alone) is False
  for every token of a byte-level BPE vocabulary, so on commit LMFE decodes the whole
  sequence since the start and feeds the parser the new characters (a trailing partial
  character is held back by the decoder, which strips trailing U+FFFD). A character the
  parser refuses there (a partial character completed into one the grammar forbids)
  switches LMFE to its ``ForceStopParser``: only the stop tokens are allowed from then on.
  Hugging Face's ``clean_up_tokenization_spaces`` (``" ."`` → ``"."`` …) is not applied in
  ``default``; the configuration ``hf_cleanup`` applies it, as a Llama-3 tokenizer whose
  config sets it does.
- **The allowed set is a token list** (``TokenList.allowed_tokens``, a Python list of ids,
  stop ids included when the parser can end). The adapter turns it into the harness
  bitmask; **the mask time includes that conversion** (cached per LMFE ``TokenList``
  object: LMFE reuses one list for every state with the same ``cache_key``). The
  configuration ``bitmask`` asks LMFE for its own bitmask (``use_bitmask=True``: a torch
  int32 tensor of the same layout, copied); same language.
- **Commit**: LMFE has none that refuses. ``get_allowed_tokens(seq + [t])`` takes any
  token; a character its parser refuses switches to ``ForceStopParser``. The adapter
  checks the token against the current allowed set first (refused: the matcher is dead)
  and only then appends it. The next state is computed on the next mask or commit.
- **Errors inside LMFE are swallowed by LMFE**: any exception while computing a mask
  (also its own ``ValueError("Parser reached state with no allowed tokens")``) is logged
  as "Unknown LMFormatEnforcer Problem" and the allowed set becomes the stop tokens
  only, i.e. a dead end lets the output end there. The adapter keeps that (it is what
  users get) and says so here.
- **Rollback / batch**: LMFE keeps every prefix's state in a dict keyed by the token
  tuple, so rollback is dropping tokens from the sequence (exact, unbounded); there is no
  batch API (the default thread pool is used).
- **Defaults that change the language** (``CharacterLevelParserConfig``, also read from
  ``LMFE_*`` environment variables): at most 12 consecutive whitespace characters
  (``max_consecutive_whitespaces``), arrays without ``maxItems`` capped at 20 items
  (``max_json_array_length``), properties in any order (``force_json_field_order=False``;
  True forces the order of ``required``); ``additionalProperties`` is honoured when false
  and undeclared properties are otherwise allowed. ``TokenEnforcer`` replaces the
  parser's config with one built from the environment: the adapter sets the
  configuration's options on the parser after building each enforcer.
- JSON schemas: ``JsonSchemaParser(dict)`` (its own pydantic model of the schema);
  regular expressions: ``RegexParser`` (interegular, whole-output match). No CFG dialect.
"""

from __future__ import annotations

import array
import json
from typing import Any

import numpy as np

from engines.bitmask import bitmask_words, pack_allowed
from engines.matcher import TemplateMatcher
from engines.protocol import (
    CompiledGrammar,
    CompileError,
    EngineAdapter,
    EngineUnavailable,
    one_line,
)
from engines.vocab import Vocabulary

#: ``CharacterLevelParserConfig`` defaults in lm-format-enforcer 0.11.3 (the ``LMFE_*``
#: environment unset; checked by the tests against the installed package).
LMFE_DEFAULTS: dict[str, Any] = {
    "max_consecutive_whitespaces": 12,
    "force_json_field_order": False,
    "max_json_array_length": 20,
}
#: Adapter options beside the parser's: LMFE's own bitmask (``use_bitmask``) and
#: Hugging Face's ``clean_up_tokenization_spaces`` in the decoder.
_ADAPTER_OPTIONS = {"use_bitmask": False, "hf_cleanup": False}

_INSTALL = ("pip install lm-format-enforcer==0.11.3 interegular "
            "(or: pip install -e '.[more-engines]')")


def _import_lmfe():
    try:
        import lmformatenforcer
        from lmformatenforcer import characterlevelparser, tokenenforcer
    except Exception as e:
        raise EngineUnavailable(
            f"lmformatenforcer cannot be imported ({one_line(e, 200)}); install it with: "
            f"{_INSTALL}") from None
    return lmformatenforcer, characterlevelparser, tokenenforcer


def _hf_cleanup(text: str) -> str:
    """transformers' ``clean_up_tokenization`` (what ``decode`` applies when the
    tokenizer's ``clean_up_tokenization_spaces`` is set)."""
    return (text.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",")
            .replace(" ' ", "'").replace(" n't", "n't").replace(" 'm", "'m")
            .replace(" 's", "'s").replace(" 've", "'ve").replace(" 're", "'re"))


class _Decoder:
    """The integration's ``_decode_function``: the ids' bytes decoded as UTF-8 with
    U+FFFD for bad bytes, trailing U+FFFD stripped (a partial character waits)."""

    def __init__(self, tokens: list[bytes], cleanup: bool) -> None:
        self._tokens = tokens
        self._cleanup = cleanup

    def __call__(self, ids: list[int]) -> str:
        tokens = self._tokens
        text = b"".join(tokens[i] for i in ids).decode("utf-8", errors="replace")
        if self._cleanup:
            text = _hf_cleanup(text)
        return text.rstrip("\ufffd")


class LMFEMatcher(TemplateMatcher):
    """One sequence on an LMFE ``TokenEnforcer`` (:class:`~engines.matcher.TemplateMatcher`
    keeps the contract): the committed ids are the enforcer's token sequence."""

    __slots__ = ("_c", "_enf", "_seq")

    def __init__(self, compiled: "LMFECompiled") -> None:
        super().__init__(compiled._words, compiled._stop)
        self._c = compiled
        self._enf = compiled._enforcer()
        self._seq: list[int] = []

    def _allowed(self) -> np.ndarray:
        """The current allowed set as bitmask words (LMFE's list, converted once per
        TokenList object)."""
        tl = self._enf.get_allowed_tokens(self._seq)
        return self._c._words_of(tl)

    def _fill(self, bitmask: np.ndarray) -> None:
        np.copyto(bitmask, self._allowed())

    def _advance(self, token_id: int) -> bool:
        if not 0 <= token_id < self._words * 32:
            return False
        words = self._allowed()
        if not (int(words[token_id >> 5]) >> (token_id & 31)) & 1:
            return False
        self._seq.append(token_id)
        return True

    def _can_end(self) -> bool:
        words = self._allowed()
        eos = self._c._eos
        return bool((int(words[eos >> 5]) >> (eos & 31)) & 1)

    def _undo(self, n: int) -> None:
        del self._seq[-n:]  # every prefix's state stays in the enforcer's dict

    def _restart(self) -> None:
        self._seq = []


class LMFECompiled(CompiledGrammar):
    def __init__(self, engine: "LMFEEngine", parser: Any) -> None:
        self._engine = engine
        self._parser = parser
        self._stop = engine._stop
        self._words = engine._words
        self._eos = engine.vocab.eos_id
        # id(TokenList) -> (TokenList kept alive so the id stays its own, words)
        self._converted: dict[int, tuple[Any, np.ndarray]] = {}
        self.warnings: list[str] = []

    def _enforcer(self) -> Any:
        e = self._engine
        enf = e._te.TokenEnforcer(e.tokenizer_data, self._parser)
        # TokenEnforcer replaced the parser's config with the environment's defaults
        self._parser.config = e._config()
        return enf

    def _words_of(self, tl: Any) -> np.ndarray:
        hit = self._converted.get(id(tl))
        if hit is not None and hit[0] is tl:
            return hit[1]
        words = np.zeros(self._words, np.int32)
        if tl is not None:
            allowed = tl.allowed_tokens
            if self._engine.options["use_bitmask"]:
                src = allowed.numpy()
                words[: src.size] = src[: self._words]
            elif allowed:
                flags = np.zeros(self._words * 32, np.bool_)
                # array.array reads a list of Python ints faster than numpy does
                flags[np.frombuffer(array.array("q", allowed), np.int64)] = True
                pack_allowed(flags, words)
        self._converted[id(tl)] = (tl, words)
        return words

    def matcher(self) -> LMFEMatcher:
        return LMFEMatcher(self)


class LMFEEngine(EngineAdapter):
    """lm-format-enforcer ``JsonSchemaParser`` / ``RegexParser`` → ``TokenEnforcer``."""

    name = "lm-format-enforcer"
    package = "lm-format-enforcer"
    requires = "lmformatenforcer"
    install_hint = ("bash setup.sh, or pip install -e '.[more-engines]' "
                    "(pins lm-format-enforcer==0.11.3)")
    configs = {
        "default": {**LMFE_DEFAULTS, **_ADAPTER_OPTIONS},
        # LMFE's own bitmask (use_bitmask=True), same language
        "bitmask": {**LMFE_DEFAULTS, **_ADAPTER_OPTIONS, "use_bitmask": True},
        # Hugging Face's clean_up_tokenization_spaces in the decoder
        "hf_cleanup": {**LMFE_DEFAULTS, **_ADAPTER_OPTIONS, "hf_cleanup": True},
        # properties in the order of `required` (LMFE_STRICT_JSON_FIELD_ORDER)
        "field_order": {**LMFE_DEFAULTS, **_ADAPTER_OPTIONS, "force_json_field_order": True},
    }
    hidden = True
    hidden_reason = ("slow masks (a Python walk of its token prefix tree per step: seconds "
                     "per instance, timeouts on large schemas): ask for it by name")
    grammar_dialects = ("regex",)

    def __init__(self, vocab: Vocabulary, config: str = "default", **overrides: Any):
        super().__init__(vocab, config, **overrides)
        unknown = set(self.options) - set(LMFE_DEFAULTS) - set(_ADAPTER_OPTIONS)
        if unknown:
            raise ValueError(f"unknown lm-format-enforcer option(s): {', '.join(sorted(unknown))}")
        self._lmfe, self._clp, self._te = _import_lmfe()
        self._stop = frozenset(vocab.stop_ids)
        self._words = bitmask_words(vocab.size)
        specials = vocab.special_ids
        tokens = [bytes(t) for t in vocab.tokens]
        regular = [(i, t.decode("utf-8", errors="replace"), False)
                   for i, t in enumerate(tokens) if i not in specials and t]
        if self.options["hf_cleanup"]:
            regular = [(i, _hf_cleanup(s), w) for i, s, w in regular]
        self.tokenizer_data = self._te.TokenEnforcerTokenizerData(
            regular, _Decoder(tokens, self.options["hf_cleanup"]), list(vocab.stop_ids),
            bool(self.options["use_bitmask"]), vocab.size)

    def _config(self, tokenizer_alphabet: bool = True) -> Any:
        """The parser config with this configuration's options: the tokenizer's alphabet
        (what ``TokenEnforcer`` sets), or the default one (what a parser is built with
        before an enforcer exists, as users build it)."""
        o = self.options
        alpha = {"alphabet": self.tokenizer_data.tokenizer_alphabet} if tokenizer_alphabet else {}
        return self._clp.CharacterLevelParserConfig(
            **alpha,
            max_consecutive_whitespaces=int(o["max_consecutive_whitespaces"]),
            force_json_field_order=bool(o["force_json_field_order"]),
            max_json_array_length=int(o["max_json_array_length"]))

    def compile(self, schema_text: str) -> LMFECompiled:
        try:
            schema = json.loads(schema_text)
            if not isinstance(schema, dict):
                raise ValueError("the schema is not a JSON object")
            parser = self._lmfe.JsonSchemaParser(schema, self._config(False))
        except MemoryError:
            raise
        except Exception as e:
            raise CompileError(one_line(e)) from None
        return LMFECompiled(self, parser)

    def compile_grammar(self, dialect: str, text: str) -> LMFECompiled:
        """``regex`` only (``RegexParser``: interegular's FSM, whole-output match)."""
        if dialect != "regex":
            raise CompileError(f"lm-format-enforcer reads regular expressions only, not {dialect}")
        try:
            parser = self._lmfe.RegexParser(text, self._config(False))
        except MemoryError:
            raise
        except Exception as e:
            raise CompileError(one_line(e)) from None
        return LMFECompiled(self, parser)
