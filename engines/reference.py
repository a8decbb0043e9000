"""Adapter for the project's own reference engine (``reference_engine/``).

The engine is pure Python + numpy and exact by construction (see
``reference_engine/SEMANTICS.md``); this module is its only door into the harness.

- The token trie over the vocabulary's raw bytes is built once per vocabulary and
  process (~1–3 s for Llama-3) and shared by all configurations.
- Special ids are never allowed; stop ids are allowed exactly when the grammar may
  end. ``commit(stop_id)`` changes no state when allowed (as in the other adapters).
- A rejected token makes the matcher dead until :meth:`reset`: ``fill_mask`` writes
  zeros, ``eos_allowed`` is False and ``rollback`` raises ValueError.
- Compile errors (unsupported keyword, remote ``$ref``, empty language, ...) are
  :class:`~engines.protocol.CompileError` with the engine's one-line message.

Configurations: ``default`` (flexible whitespace, at most 32 characters per gap;
properties in any order with per-object key tracking; up to 1 s of the compile spent
building the mask cache entries a decode meets first, ``precompute_s``, then up to
0.5 s decoding documents made from the schema, ``warm_s``: see
``reference_engine/warmup.py``), ``compact`` (no whitespace), ``canonical-order``
(properties in declaration order, as the peer engines do), ``lazy`` (as ``default``,
with every cache entry left to its first use: the same masks, the cost in TBM instead
of TTFM).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engines.bitmask import bitmask_words
from engines.matcher import BoundMatcher
from engines.protocol import CompiledGrammar, CompileError, EngineAdapter, one_line
from engines.token_bytes import byte_token_ids, encode_exact, utf8_complete
from engines.vocab import Vocabulary

if TYPE_CHECKING:  # the reference engine is imported when an adapter is built
    from reference_engine.trie import TokenTrie

_DEFAULTS: dict[str, Any] = {"whitespace": "flexible", "max_ws": 32, "separators": None,
                             "property_order": "any", "format_assertion": True,
                             "reading": "jsonschema", "precompute_s": 1.0, "warm_s": 0.5}
#: options of the engine itself; the others are the JSON Schema compiler's
_ENGINE_OPTIONS = ("precompute_s", "warm_s")
#: vocabulary fingerprint → its token trie
_TRIES: dict[str, TokenTrie] = {}
#: id of a trie in :data:`_TRIES` (kept alive there) → its vocabulary
_TRIE_VOCABS: dict[int, Vocabulary] = {}


def _trie_for(vocab: Vocabulary):
    from reference_engine.trie import TokenTrie

    key = vocab.fingerprint
    trie = _TRIES.get(key)
    if trie is None:
        from reference_engine.keys import candidates, close_index, risky_tokens

        trie = _TRIES[key] = TokenTrie(vocab.tokens, excluded=vocab.special_ids)
        _TRIE_VOCABS[id(trie)] = vocab  # for ReferenceMatcher.forced_continuation
        # the duplicate-key check's token lists, once per vocabulary
        candidates(trie)
        close_index(trie)
        risky_tokens(trie)
    return trie


#: Cap of :meth:`ReferenceMatcher.forced_continuation` (bytes per call).
MAX_FORCED_BYTES = 256


class _Forced:
    """Per vocabulary: where each byte's single-byte token sits in a bitmask, and the
    tokens sorted by their bytes (which tokens extend a given one)."""

    def __init__(self, vocab: Vocabulary) -> None:
        ids = byte_token_ids(vocab)
        if len(ids) < 256:
            raise ValueError("not every byte value has a single-byte token")
        arr = np.array([ids[b] for b in range(256)], dtype=np.int64)
        self.word, self.shift = arr >> 5, (arr & 31).astype(np.int32)
        self.vocab = vocab
        pairs = sorted((t, i) for i, t in enumerate(vocab.tokens)
                       if t and i not in vocab.special_ids)
        self._sorted = [t for t, _ in pairs]
        self._ids = np.array([i for _, i in pairs], dtype=np.int64)

    def longer(self, tok: bytes) -> np.ndarray:
        """Ids of the tokens longer than ``tok`` that start with it."""
        import bisect

        lo = bisect.bisect_right(self._sorted, tok)
        hi = lo
        while hi < len(self._sorted) and self._sorted[hi].startswith(tok):
            hi += 1
        return self._ids[lo:hi]

    def any_allowed(self, bm: np.ndarray, ids: np.ndarray) -> bool:
        return bool(((bm[ids >> 5] >> (ids & 31).astype(np.int32)) & 1).any())


_FORCED: dict[int, _Forced | None] = {}


def _forced_helper(trie) -> _Forced | None:
    key = id(trie)
    if key not in _FORCED:
        vocab = _TRIE_VOCABS.get(key)
        try:
            _FORCED[key] = _Forced(vocab) if vocab is not None else None
        except ValueError:
            _FORCED[key] = None
    return _FORCED[key]


class ReferenceMatcher(BoundMatcher):
    """The engine's own matcher keeps the contract (dead flag, stop ids, rollback checks);
    the adapter adds the bitmask binding (:class:`~engines.matcher.BoundMatcher`)."""

    __slots__ = ("_m",)

    def __init__(self, m, words: int):
        super().__init__(words)
        self._m = m

    def _fill(self, bitmask: np.ndarray) -> None:
        self._m.fill_mask(bitmask)

    def commit(self, token_id: int) -> bool:
        return self._m.accept_token(token_id)

    def eos_allowed(self) -> bool:
        return self._m.is_accepting()

    def rollback(self, n: int) -> None:
        self._m.rollback(n)

    def reset(self) -> None:
        self._m.reset()

    def forced_continuation(self) -> tuple[bytes, list[int]] | None:
        """The bytes the grammar forces from here, exactly, and their canonical tokens.

        Bytes: while the text is not a complete sentence, the possible next bytes are the
        single-byte tokens the (exact) mask allows (the vocabulary has one per byte value);
        while there is exactly one, it is forced: advance by it and look again (at most
        :data:`MAX_FORCED_BYTES`), then roll the advance back. Tokens: ``vocab.encode`` of
        those bytes (:func:`encode_exact`) less a trailing partial UTF-8 character, less
        the last token when the grammar allows, where that token starts, a longer token
        that starts with it (the model might have produced the longer one; as xgrammar's
        rule, narrowed to the tokens the grammar allows there). ``(b"", [])`` on a dead
        matcher; None when the
        vocabulary lacks a single-byte token for some byte (the bytes cannot be read off
        the mask)."""
        m = self._m
        jf = _forced_helper(m.masks.trie)
        if jf is None:
            return None
        if m.is_dead():
            return b"", []
        out = bytearray()
        ids: list[int] = []
        bm = np.zeros(self._words, dtype=np.int32)
        advanced = 0  # accept_bytes appends one step per call: one per byte here
        try:
            while len(out) < MAX_FORCED_BYTES and not m.is_accepting():
                m.fill_mask(bm)
                possible = np.flatnonzero((bm[jf.word] >> jf.shift) & 1)
                if possible.size != 1 or not m.accept_bytes(bytes([int(possible[0])])):
                    break
                advanced += 1
                out.append(int(possible[0]))
            whole = utf8_complete(bytes(out))
            ids = encode_exact(jf.vocab, whole)
            if ids:
                last = jf.vocab.tokens[ids[-1]]
                longer = jf.longer(last)
                if longer.size:
                    back = advanced - (len(whole) - len(last))
                    m.rollback(back)  # to where the last token starts
                    advanced -= back
                    m.fill_mask(bm)
                    if jf.any_allowed(bm, longer):
                        ids.pop()
        finally:
            if advanced:
                m.rollback(advanced)
        return bytes(out), ids

    def draft_stop_ids(self) -> frozenset[int]:
        """The engine's own stop ids (the default :meth:`validate_draft` ends there)."""
        return frozenset(self._m.stop)


class ReferenceCompiled(CompiledGrammar):
    #: set on a grammar compiled from a tool-call or grammar request: the native form it became
    form: str

    def __init__(self, compiled, words: int):
        self.compiled = compiled
        self._words = words

    @property
    def grammar(self):
        return self.compiled.grammar

    def matcher(self) -> ReferenceMatcher:
        return ReferenceMatcher(self.compiled.matcher(), self._words)

    def stats(self) -> dict[str, Any]:
        """Engine statistics stored in the job record (``engine_stats``): the PDA's
        size and the adaptive mask cache's (bytes of numpy buffers; the dense
        equivalent is one 16 KiB bitmask per cached automaton node)."""
        out = {**self.compiled.pda.stats(), **self.compiled.masks.stats()}
        w = self.compiled.warmed
        if w is not None:
            out.update(warm_tokens=w.tokens, warm_pruned=w.pruned, warm_complete=w.complete,
                       warm_documents=w.documents, warm_s=round(w.seconds, 4))
        return out


def _value_rule(g) -> str:
    """The rule of a compiled schema's JSON value without the whitespace a JSON text may
    have around it (``root ::= ws root_value ws``): inside a tool call the arguments
    have nothing around them."""
    from reference_engine import ir

    root = g.rules[g.start]
    if isinstance(root, ir.Seq) and len(root.items) == 3 and isinstance(root.items[1], ir.Ref):
        return root.items[1].name
    return g.start


class ReferenceEngine(EngineAdapter):
    """The reference engine (byte-level PDA, exact masks)."""

    name = "reference"
    package = None
    configs = {
        "default": dict(_DEFAULTS),
        "compact": {**_DEFAULTS, "whitespace": "compact"},
        "canonical-order": {**_DEFAULTS, "property_order": "declared"},
        "lazy": {**_DEFAULTS, "precompute_s": 0.0, "warm_s": 0.0},
    }
    hidden = True
    hidden_reason = "the project's own oracle, not a peer: ask for it by name"

    @classmethod
    def version(cls) -> str | None:
        import reference_engine

        h = hashlib.sha256()
        root = Path(reference_engine.__file__).resolve().parent
        for p in sorted(root.glob("*.py")):
            h.update(p.name.encode())
            h.update(p.read_bytes())
        return f"{reference_engine.__version__}+{h.hexdigest()[:8]}"

    def __init__(self, vocab: Vocabulary, config: str = "default", **overrides: Any):
        super().__init__(vocab, config, **overrides)
        unknown = set(self.options) - set(_DEFAULTS)
        if unknown:
            raise ValueError(f"unknown reference option(s): {', '.join(sorted(unknown))}")
        self.trie = _trie_for(vocab)
        self._words = bitmask_words(vocab.size)

    def compile(self, schema_text: str) -> ReferenceCompiled:
        return self._compile(schema_text, self.options)

    def compile_case(self, schema_text: str, format_assertion: bool = True,
                     reading: str = "jsonschema") -> ReferenceCompiled:
        """As :meth:`compile`, with ``format`` an annotation when the case's ground truth
        says so (``format_assertion=False``) whatever the configuration says, and the
        case's reading of ``pattern`` and ``format`` (``reading``, see
        :class:`reference_engine.json_schema.Options`)."""
        opts = dict(self.options)
        if not format_assertion:
            opts["format_assertion"] = False
        if reading != "jsonschema":
            opts["reading"] = reading
        return self._compile(schema_text, opts)

    grammar_dialects = ("regex", "gbnf")

    @classmethod
    def whitespace_bound(cls, n: int) -> dict[str, Any]:
        """``max_ws=n``."""
        return {"max_ws": n}

    def compile_grammar(self, dialect: str, text: str) -> ReferenceCompiled:
        """``regex`` (Python's ``re`` syntax, full match, as a DFA over code points) or
        ``gbnf`` (``reference_engine/gbnf.py``), compiled exactly; a construct the engine
        does not take (a lookaround, a backreference, left recursion…) is a
        :class:`CompileError` naming it."""
        from reference_engine import Compiled, compile_gbnf, compile_regex
        from reference_engine.gbnf import GbnfError
        from reference_engine.pda import GrammarError
        from reference_engine.regex import RegexError

        if dialect not in self.grammar_dialects:
            raise CompileError(f"the reference engine reads no {dialect} grammars")
        try:
            grammar = compile_regex(text) if dialect == "regex" else compile_gbnf(text)
            compiled = Compiled(grammar, self.trie, self.vocab.stop_ids, self.vocab.special_ids,
                                precompute_s=float(self.options["precompute_s"]))
        except (RegexError, GbnfError, GrammarError) as e:
            raise CompileError(one_line(f"{dialect}: {e}")) from None
        except MemoryError:
            raise
        except RecursionError:
            raise CompileError(f"{dialect}: grammar nesting too deep") from None
        return ReferenceCompiled(compiled, self._words)

    tool_call_form = "CFG: the envelope's rules over each tool's compiled schema"

    def compile_tool_calls(self, spec) -> ReferenceCompiled:
        """The request as one grammar of the engine's own IR: each tool's parameters
        compiled as a JSON schema (this configuration's options) under its own rule
        prefix, the envelope's literals around them, free text as the DFA of
        :func:`engines.tool_calls.text_regex`. Duplicate object keys are not tracked here
        (the key tracker reads a whole JSON document, not JSON inside free text)."""
        from reference_engine import Compiled, ir
        from reference_engine.json_schema import SchemaCompileError, compile_schema
        from reference_engine.pda import GrammarError
        from reference_engine.regex import RegexError, regex_grammar

        from engines.tool_calls import text_regex

        fmt = spec.fmt
        opts = {k: v for k, v in self.options.items() if k not in _ENGINE_OPTIONS}
        rules: dict[str, ir.Expr] = {}
        calls, rests = [], []
        try:
            for i, (name, schema) in enumerate(spec.callable_tools()):
                g = compile_schema(schema, **opts)
                canon = {n: f"t{i}_{n}" for n in g.rules}
                for n, e in g.rules.items():
                    rules[canon[n]] = ir._rename(e, canon)
                args = ir.Ref(canon[_value_rule(g)])
                begin = fmt.begin(name)
                calls.append(ir.seq(ir.lit(begin), args, ir.lit(fmt.end)))
                rests.append(ir.seq(ir.lit(begin[len(fmt.trigger):]), args, ir.lit(fmt.end)))
            text = regex_grammar(text_regex(fmt.trigger)).rules["root"]
            rules["text"] = text
            rules["call"] = ir.alt(*calls)
            rules["rest"] = ir.alt(*rests)
            call, rest, T = ir.Ref("call"), ir.Ref("rest"), ir.Ref("text")
            pre_rest = ir.seq(T, ir.lit(fmt.trigger), rest)
            root = {"one": lambda: call,
                    "calls": lambda: ir.seq(call, ir.star(pre_rest), T),
                    "any": lambda: ir.seq(ir.star(pre_rest), T),
                    "at_most_one": lambda: ir.seq(T, ir.opt(ir.seq(ir.lit(fmt.trigger), rest))),
                    }[spec.shape]()
            rules["tool_calls"] = root
            grammar = ir.Grammar(rules, "tool_calls")
            compiled = Compiled(grammar, self.trie, self.vocab.stop_ids, self.vocab.special_ids,
                                precompute_s=float(self.options["precompute_s"]))
        except (SchemaCompileError, GrammarError, RegexError) as e:
            raise CompileError(one_line(str(e))) from None
        except MemoryError:
            raise
        except RecursionError:
            raise CompileError("schema nesting too deep") from None
        out = ReferenceCompiled(compiled, self._words)
        out.form = "cfg"
        return out

    def _compile(self, schema_text: str, options: dict[str, Any]) -> ReferenceCompiled:
        from reference_engine import Compiled
        from reference_engine.json_schema import SchemaCompileError, compile_schema
        from reference_engine.pda import GrammarError

        try:
            grammar = compile_schema(schema_text, **{k: v for k, v in options.items()
                                                     if k not in _ENGINE_OPTIONS})
            compiled = Compiled(grammar, self.trie, self.vocab.stop_ids, self.vocab.special_ids,
                                precompute_s=float(options["precompute_s"]))
            if float(options["warm_s"]) > 0:
                # after the precompute: decoding with its entries in place costs a third
                from reference_engine.warmup import example_instances

                schema = json.loads(schema_text) if isinstance(schema_text, (str, bytes)) \
                    else schema_text
                compiled.warm(example_instances(schema), self.vocab.encode,
                              float(options["warm_s"]))
        except (SchemaCompileError, GrammarError) as e:
            raise CompileError(one_line(str(e))) from None
        except MemoryError:
            raise
        except RecursionError:
            raise CompileError("schema nesting too deep") from None
        return ReferenceCompiled(compiled, self._words)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["trie_nodes"] = int(self.trie.n_nodes)
        return d
