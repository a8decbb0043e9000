"""The warm decode: at compile time, decode the document a model is most likely to
write, so that the mask cache entries its first real decode needs are built then.

Masks are unchanged (every entry is what its first use would build); only where the
cost lands moves, from the first decode's masks (TBM) to the compile (TTFM). Most of
a first decode's mask time goes to entries built on first use (a state's split, the
rows of the lazily built automaton, its context-dependent tokens against the live
stack), and a second decode of a similar document costs several times less. The
precompute (:meth:`~reference_engine.matcher.MaskComputer.precompute`) guesses those
entries from the automaton's structure; this decodes a document instead, so it
builds exactly what that document's decode meets, stack included.

The documents come from the schema alone (:func:`example_instances`), one per
:data:`STYLES` entry: every declared property in declared order, the schema's own
``const`` / ``default`` where it gives them, the first (then the second, the third)
value of an ``enum`` / ``examples`` and branch of an ``anyOf`` / ``oneOf``, one (two,
three) items per array, and a value of the declared type otherwise ("example" then
plain text of other words, spaces and punctuation; other numbers and booleans). Real
documents hold every member but other values, and the states a decode meets depend on
the values (which enum value, which branch, where a string's last token ends, how an
array goes on): a second and third document, with other choices, leave fewer new
entries to a first real decode; a document of the required members only does not
(real documents hold every member). Each is written as ``json.dumps`` writes it
(``", "`` and ``": "``), the spacing models mostly emit, and tokenised by the caller's
tokenizer (a decode's states depend on where its tokens end). They are decoded in turn within one time budget.

A document the grammar refuses is pruned, not dropped: the innermost member or item
around the first byte the automaton refuses is removed and the decode goes on from
where the new document's tokens part from the old one's (``rollback``), until it is
accepted to the end, nothing is left to remove, or the time budget is spent.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from reference_engine.matcher import words_for

MISSING = object()  #: no example: the branch is left out of its parent

#: A value per common format (other formats get the plain string, pruned if refused).
FORMAT_EXAMPLES = {
    "date-time": "2024-01-01T12:00:00Z", "date": "2024-01-01", "time": "12:00:00Z",
    "email": "user@example.com", "idn-email": "user@example.com",
    "hostname": "example.com", "idn-hostname": "example.com",
    "ipv4": "192.168.0.1", "ipv6": "2001:db8::1",
    "uri": "https://example.com/path", "uri-reference": "https://example.com/path",
    "iri": "https://example.com/path", "iri-reference": "https://example.com/path",
    "uri-template": "https://example.com/{id}", "url": "https://example.com/path",
    "uuid": "123e4567-e89b-12d3-a456-426614174000", "duration": "P1D",
    "json-pointer": "/a/b", "relative-json-pointer": "0/a", "regex": "^a+$",
}


@dataclass(frozen=True)
class Style:
    """The choices of one example document: ``choice``, the index of the ``enum`` /
    ``examples`` value taken and of the ``anyOf`` / ``oneOf`` branch tried first (modulo
    their number); ``text``, a plain string's content (no ``format`` nor ``pattern``:
    those take :data:`FORMAT_EXAMPLES` or "example"); ``integer``, ``number``, values of
    unconstrained numbers; ``boolean``; ``items``, the items written per array (at
    least ``minItems``, at most ``maxItems`` and :data:`MAX_ITEMS`)."""

    choice: int
    text: str
    integer: int
    number: float
    boolean: bool
    items: int


#: The warm decode's documents, in the order decoded (see the module docstring).
STYLES = (Style(0, "example", 1, 1.5, True, 1),
          Style(1, "John Smith", 42, 3.14, False, 2),
          Style(2, "The quick brown fox, v2.0", 7, 0.25, True, 3))
MAX_DEPTH = 10  #: nesting (and ``$ref`` hops) an example goes down
MAX_ITEMS = 3  #: items written where ``minItems`` asks for more than one
MAX_STRING = 256  #: characters a string example is padded to at most (for ``minLength``)
MAX_TOKENS = 4000  #: a longer document is cut (its prefix is decoded)
MAX_CHARS = 40_000  #: (and its text cut before it is tokenised)
MAX_PRUNES = 64


def example_instance(schema: Any, style: Style = STYLES[0]) -> Any:
    """A plausible instance of ``schema`` (a parsed JSON schema) in ``style``, built
    from the schema alone, or :data:`MISSING`. Not guaranteed valid (patterns, formats
    beyond :data:`FORMAT_EXAMPLES`, numeric and combined constraints are not solved):
    the warm decode prunes what the grammar refuses. Only local ``$ref`` (``#...``) is
    followed, through JSON pointers; nothing is fetched."""
    return _Examples(schema, style).value(schema, 0)


def example_instances(schema: Any, styles: tuple[Style, ...] = STYLES) -> list[Any]:
    """The distinct :func:`example_instance` documents of ``schema``, one per style (in
    order; none where the schema admits no example)."""
    out: list[Any] = []
    for st in styles:
        doc = example_instance(schema, st)
        if doc is not MISSING and all(doc != d or type(doc) is not type(d) for d in out):
            out.append(doc)
    return out


def _unconstrained(s: dict) -> bool:
    return not any(k in s for k in ("minimum", "maximum", "exclusiveMinimum",
                                    "exclusiveMaximum", "multipleOf", "enum", "const"))


class _Examples:
    def __init__(self, root: Any, style: Style = STYLES[0]) -> None:
        self.root = root
        self.style = style

    def _resolve(self, ref: str) -> Any:
        if ref == "#":
            return self.root
        if not ref.startswith("#/"):
            return MISSING
        node = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return MISSING
        return node

    def value(self, s: Any, depth: int) -> Any:
        if depth > MAX_DEPTH or s is False:
            return MISSING
        if s is True or not isinstance(s, dict):
            return "example" if s is True else MISSING
        ref = s.get("$ref")
        if isinstance(ref, str):
            target = self._resolve(ref)
            got = self.value(target, depth + 1) if target is not MISSING else MISSING
            if got is not MISSING or len(s) == 1:
                return got
        if "const" in s:
            return s["const"]
        for key in ("enum", "examples"):
            if isinstance(s.get(key), list) and s[key]:
                return s[key][self.style.choice % len(s[key])]
        if "default" in s:
            return s["default"]
        if isinstance(s.get("allOf"), list):
            parts = [self.value(x, depth + 1) for x in s["allOf"]]
            parts = [p for p in parts if p is not MISSING]
            mine = self._typed(s, depth)
            if mine is not MISSING:
                parts.append(mine)
            objs = [p for p in parts if isinstance(p, dict)]
            if objs:
                merged: dict = {}
                for o in objs:
                    merged.update(o)
                return merged
            return parts[0] if parts else MISSING
        for key in ("anyOf", "oneOf"):
            if isinstance(s.get(key), list):
                mine = self._typed(s, depth) if _declares_type(s) else MISSING
                branches = s[key]
                k = self.style.choice % len(branches) if branches else 0
                for branch in branches[k:] + branches[:k]:
                    got = self.value(branch, depth + 1)
                    if got is not MISSING:
                        if isinstance(got, dict) and isinstance(mine, dict):
                            return {**mine, **got}
                        return got
                return mine
        return self._typed(s, depth)

    def _typed(self, s: dict, depth: int) -> Any:
        t = s.get("type")
        if isinstance(t, list):
            t = next((x for x in t if x != "null"), t[0] if t else None)
        if t is None:
            if "properties" in s or "required" in s or "additionalProperties" in s:
                t = "object"
            elif "items" in s or "prefixItems" in s:
                t = "array"
            elif any(k in s for k in ("minimum", "maximum", "multipleOf")):
                t = "number"
            else:
                t = "string"
        if t == "object":
            out = {}
            props = s.get("properties")
            if isinstance(props, dict):
                for k, sub in props.items():
                    got = self.value(sub, depth + 1)
                    if got is not MISSING:
                        out[k] = got
            return out
        if t == "array":
            items: list = []
            prefix = s.get("prefixItems")
            if isinstance(prefix, list):
                items = [self.value(x, depth + 1) for x in prefix]
            elif isinstance(s.get("items"), list):  # draft 4-7 tuples
                items = [self.value(x, depth + 1) for x in s["items"]]
            else:
                one = self.value(s.get("items", True), depth + 1)
                n = s.get("minItems", 1)
                n = min(max(n if isinstance(n, int) else 1, self.style.items), MAX_ITEMS)
                hi = s.get("maxItems")
                if isinstance(hi, int) and not isinstance(hi, bool) and self.style.items > 1:
                    n = max(min(n, hi), 0)
                items = [] if one is MISSING else [one] * n
            return [x for x in items if x is not MISSING]
        if t == "string":
            plain = "format" not in s and "pattern" not in s
            text = self.style.text if plain else FORMAT_EXAMPLES.get(s.get("format"), "example")
            lo, hi = s.get("minLength"), s.get("maxLength")
            if isinstance(lo, int) and len(text) < lo:
                lo = min(lo, MAX_STRING)  # (a longer minimum is refused, then pruned)
                text = (text * (lo // len(text) + 1))[:lo]
            if isinstance(hi, int) and len(text) > hi:
                text = text[:max(hi, 0)]
            return text
        if t in ("integer", "number"):
            if _unconstrained(s) and self.style.choice:
                return self.style.integer if t == "integer" else self.style.number
            lo = s.get("minimum", s.get("exclusiveMinimum"))
            if isinstance(lo, bool) or not isinstance(lo, (int, float)) or not math.isfinite(lo):
                lo = None
            v = 1 if lo is None else (lo + 1 if "exclusiveMinimum" in s and "minimum" not in s
                                      else lo)
            if t == "integer":
                return int(v) if v == int(v) else int(v) + 1
            return v if lo is not None else 1.5
        if t == "boolean":
            return self.style.boolean
        if t == "null":
            return None
        return MISSING


def _declares_type(s: dict) -> bool:
    return "type" in s or "properties" in s


# --------------------------------------------------------------------------- writing

def dumps_with_spans(doc: Any) -> tuple[str, list[tuple[int, int, tuple]]]:
    """``json.dumps(doc)`` (ASCII, ``", "`` and ``": "``) and the span ``(start, end,
    path)`` of every object member (key included) and array item, in characters."""
    out: list[str] = []
    spans: list[tuple[int, int, tuple]] = []
    pos = 0

    def put(s: str) -> None:
        nonlocal pos
        out.append(s)
        pos += len(s)

    def write(v: Any, path: tuple) -> None:
        if isinstance(v, dict):
            put("{")
            for i, (k, x) in enumerate(v.items()):
                if i:
                    put(", ")
                start = pos
                put(json.dumps(str(k)) + ": ")
                write(x, path + (k,))
                spans.append((start, pos, path + (k,)))
            put("}")
        elif isinstance(v, list):
            put("[")
            for i, x in enumerate(v):
                if i:
                    put(", ")
                start = pos
                write(x, path + (i,))
                spans.append((start, pos, path + (i,)))
            put("]")
        else:
            put(json.dumps(v))

    write(doc, ())
    return "".join(out), spans


def _without(doc: Any, path: tuple) -> Any:
    """``doc`` with the member or item at ``path`` removed (a copy along the path)."""
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        if not rest:
            return {k: v for k, v in doc.items() if k != head}
        return {k: (_without(v, rest) if k == head else v) for k, v in doc.items()}
    if not rest:
        return [x for i, x in enumerate(doc) if i != head]
    return [(_without(x, rest) if i == head else x) for i, x in enumerate(doc)]


# --------------------------------------------------------------------------- decoding

@dataclass
class WarmResult:
    """What a warm decode did: ``tokens`` fed (over all attempts), ``pruned`` members
    and items removed, ``complete``: the last attempt was accepted to the end (not
    cut at :data:`MAX_TOKENS` / :data:`MAX_CHARS`, nor stopped by the budget),
    ``seconds`` spent. Over several documents (:func:`warm_decodes`): the sums,
    ``documents`` begun, and ``complete`` if every document was."""

    tokens: int = 0
    pruned: int = 0
    complete: bool = False
    seconds: float = 0.0
    documents: int = 0


def warm_decodes(compiled, docs: list[Any], encode: Callable[[str], list[int]],
                 budget_s: float) -> WarmResult:
    """:func:`warm_decode` of each of ``docs`` in turn, all within ``budget_s``."""
    total = WarmResult(complete=bool(docs))
    t0 = time.perf_counter()
    for doc in docs:
        left = budget_s - (time.perf_counter() - t0)
        if left <= 0:
            total.complete = False
            break
        r = warm_decode(compiled, doc, encode, left)
        total.documents += 1
        total.tokens += r.tokens
        total.pruned += r.pruned
        total.complete = total.complete and r.complete
    total.seconds = time.perf_counter() - t0
    return total


def warm_decode(compiled, doc: Any, encode: Callable[[str], list[int]],
                budget_s: float) -> WarmResult:
    """Decode ``doc`` (written as :func:`dumps_with_spans` writes it, tokenised by
    ``encode``) through a fresh matcher of ``compiled``, computing the mask before
    every token as a decode does, for about ``budget_s`` seconds at most (checked
    between tokens). See the module docstring for the pruning."""
    res = WarmResult()
    if budget_s <= 0 or doc is MISSING:
        return res
    t0 = time.perf_counter()
    deadline = t0 + budget_s
    trie, pda = compiled.trie, compiled.pda
    out = np.zeros(words_for(trie.vocab_size), dtype=np.int32)
    m = compiled.matcher()
    fed: list[int] = []  # the tokens ``m`` has accepted
    while True:
        try:
            text, spans = dumps_with_spans(doc)
        except RecursionError:  # a ``default`` nested deeper than Python recurses
            break
        tokens = encode(text[:MAX_CHARS])
        cut = len(text) > MAX_CHARS or len(tokens) > MAX_TOKENS
        tokens = tokens[:MAX_TOKENS]
        # a pruned document starts as the last one did: go back only to where they part
        same = 0
        for a, b in zip(fed, tokens):
            if a != b:
                break
            same += 1
        m.rollback(len(fed) - same)
        del fed[same:]
        offset = sum(len(trie.token_bytes[t]) for t in fed)
        dead_at = None
        for tid in tokens[same:]:
            if time.perf_counter() >= deadline:
                res.seconds = time.perf_counter() - t0
                return res
            m.fill_mask(out)
            res.tokens += 1
            if not (out[tid >> 5] >> (tid & 31)) & 1:
                # refused (the matcher stays alive): the first byte the automaton refuses
                data = trie.token_bytes[tid]
                configs = m.configurations
                j = 1
                while j < len(data) and pda.advance(configs, data[:j]) is not None:
                    j += 1
                dead_at = offset + j - 1
                break
            if not m.accept_token(tid):  # (never: the mask allowed it)
                res.seconds = time.perf_counter() - t0
                return res
            fed.append(tid)
            offset += len(trie.token_bytes[tid])
        if dead_at is None:
            if not cut:
                m.fill_mask(out)  # the final mask (EOS)
            res.complete = not cut
            break
        around = [sp for sp in spans if sp[0] <= dead_at < sp[1]]
        if not around or res.pruned >= MAX_PRUNES:
            break
        doc = _without(doc, min(around, key=lambda sp: sp[1] - sp[0])[2])
        res.pruned += 1
    res.seconds = time.perf_counter() - t0
    return res
