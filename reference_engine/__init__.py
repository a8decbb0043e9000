"""The reference engine: an exact byte-level pushdown automaton for grammar-constrained
decoding, independent of the harness (``engines/reference.py`` is its only door).

Typical use::

    from reference_engine import compile_json_schema, Compiled, TokenTrie
    grammar = compile_json_schema({"type": "object", ...})
    compiled = Compiled(grammar, TokenTrie(token_bytes, excluded=special_ids),
                        stop_ids=[eos], special_ids=special_ids)
    m = compiled.matcher(); m.fill_mask(bitmask); m.accept_token(tid); m.rollback(1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from reference_engine.ir import Grammar, format_grammar
from reference_engine.matcher import GrammarMatcher, MaskComputer
from reference_engine.pda import PDA, GrammarError
from reference_engine.trie import TokenTrie

if TYPE_CHECKING:
    from reference_engine.warmup import WarmResult

__version__ = "0.1"


class Compiled:
    """A grammar compiled against one vocabulary: the PDA plus its mask caches."""

    def __init__(self, grammar: Grammar, trie: TokenTrie, stop_ids=(), special_ids=(),
                 precompute_s: float = 0.0):
        """``precompute_s``: seconds (at most, roughly) spent here building the mask
        cache entries nearly every decode needs (:meth:`MaskComputer.precompute`);
        0 leaves every entry to its first use."""
        self.grammar = grammar
        self.pda = PDA(grammar)
        self.trie = trie
        self.stop_ids = tuple(stop_ids)
        self.special_ids = frozenset(special_ids)
        #: reject duplicate object keys (JSON text only; see :mod:`reference_engine.keys`)
        self.json_keys = bool(getattr(grammar, "json_keys", False))
        floor = None
        if self.json_keys:
            from reference_engine.keys import fewest_extra_keys

            floor = fewest_extra_keys(self.pda.grammar)
        self.masks = MaskComputer(self.pda, trie, self.stop_ids, json_keys=self.json_keys,
                                  key_floor=floor)
        self.masks.precompute(precompute_s)
        #: what :meth:`warm` did (None: not asked)
        self.warmed = None

    def warm(self, docs: list[Any], encode: Callable[[str], list[int]],
             budget_s: float) -> WarmResult:
        """Decode each of ``docs`` (JSON values, e.g.
        :func:`~reference_engine.warmup.example_instances` of the schema) once, tokenised
        by ``encode`` (text → token ids), computing every mask, for about ``budget_s``
        seconds at most in all: the cache entries a first decode of a similar document
        needs are built here instead (masks are unchanged). See
        :mod:`reference_engine.warmup`; returns its :class:`~reference_engine.warmup.WarmResult`."""
        from reference_engine.warmup import warm_decodes

        self.warmed = warm_decodes(self, list(docs), encode, budget_s)
        return self.warmed

    def matcher(self) -> GrammarMatcher:
        return GrammarMatcher(self.pda, self.masks, self.trie.token_bytes, self.stop_ids,
                              self.special_ids, json_keys=self.json_keys)


def compile_json_schema(schema, **options) -> Grammar:
    from reference_engine.json_schema import compile_schema

    return compile_schema(schema, **options)


def compile_gbnf(text: str, start: str | None = None) -> Grammar:
    from reference_engine.gbnf import parse_gbnf

    return parse_gbnf(text, start)


def compile_regex(pattern: str) -> Grammar:
    from reference_engine.regex import regex_grammar

    return regex_grammar(pattern, "fullmatch")


__all__ = ["Compiled", "Grammar", "GrammarError", "GrammarMatcher", "MaskComputer", "PDA",
           "TokenTrie", "compile_gbnf", "compile_json_schema", "compile_regex", "format_grammar"]
