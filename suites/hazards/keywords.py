"""Hazard 3, keywords silently ignored: does an engine that compiles a schema keep each
constraining keyword in it?

For every occurrence of a constraining keyword (:data:`KEYWORDS`) in a schema, the
subschema that holds it is taken alone (:func:`occurrences`; a subschema with a ``$ref``
in it cannot stand alone and is counted as skipped), and candidate instances are made
for it (:func:`candidates`: values built from the keyword's own argument, e.g. a string
one longer than ``maxLength``, plus a small pool of ordinary values). ``jsonschema``
picks the *deciding* ones: valid against the subschema without the keyword, invalid with
it. The engine then compiles the subschema with the keyword and replays each deciding
instance:

- accepted: the keyword was **ignored** (the instance is the witness: jsonschema says
  the only constraint it breaks is that keyword);
- all rejected: the subschema without the keyword is compiled too; a deciding instance
  that it accepts shows the rejection came from the keyword: **kept**; when it rejects
  them all as well, the engine's language differs elsewhere (e.g. no undeclared
  properties) and the occurrence is **undecided**;
- the compile fails: **refused** (the engine's one-line error).

Everything here is pure data except :func:`judge_occurrence`, which takes an adapter.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Iterator

__all__ = ["KEYWORDS", "PROBES", "candidates", "deciding", "judge_occurrence", "occurrences"]

#: Constraining keywords (a group of keywords removed together is named by its first).
KEYWORDS: tuple[str, ...] = (
    "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "uniqueItems", "contains", "minItems", "maxItems",
    "patternProperties", "propertyNames", "minProperties", "maxProperties", "format", "not",
    "dependentRequired", "if",
)
#: Keywords removed with the one named (``then``/``else`` mean nothing without ``if``).
GROUPS: dict[str, tuple[str, ...]] = {"if": ("if", "then", "else")}

#: Keywords whose value is a schema, a list of schemas or a map of schemas: where
#: :func:`occurrences` looks for subschemas.
_ONE = ("additionalProperties", "items", "contains", "propertyNames", "not", "if", "then",
        "else", "additionalItems", "unevaluatedProperties", "unevaluatedItems")
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")

#: One small schema per keyword, so that every keyword has a verdict whatever the corpus
#: sample holds (probe id → schema).
PROBES: dict[str, dict[str, Any]] = {
    "pattern": {"type": "string", "pattern": "^[a-c]{2,4}$"},
    "minLength": {"type": "string", "minLength": 3},
    "maxLength": {"type": "string", "maxLength": 3},
    "minimum": {"type": "integer", "minimum": 10},
    "maximum": {"type": "integer", "maximum": 10},
    "exclusiveMinimum": {"type": "number", "exclusiveMinimum": 0},
    "exclusiveMaximum": {"type": "number", "exclusiveMaximum": 1},
    "multipleOf": {"type": "integer", "multipleOf": 5},
    "uniqueItems": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    "contains": {"type": "array", "items": {"type": "integer"}, "contains": {"const": 7}},
    "minItems": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
    "maxItems": {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
    "patternProperties": {"type": "object", "patternProperties": {"^n_": {"type": "integer"}}},
    "propertyNames": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
    "minProperties": {"type": "object", "properties": {"a": {"type": "integer"}},
                      "minProperties": 1},
    "maxProperties": {"type": "object", "properties": {"a": {"type": "integer"},
                                                       "b": {"type": "integer"}},
                      "maxProperties": 1},
    "format-date": {"type": "string", "format": "date"},
    "format-ipv4": {"type": "string", "format": "ipv4"},
    "format-uuid": {"type": "string", "format": "uuid"},
    "not": {"type": "integer", "not": {"const": 3}},
    "dependentRequired": {"type": "object", "properties": {"a": {"type": "integer"},
                                                           "b": {"type": "integer"}},
                          "dependentRequired": {"a": ["b"]}},
    "if": {"type": "integer", "if": {"minimum": 10}, "then": {"multipleOf": 2}},
}

#: Most occurrences judged per schema and deciding instances kept per occurrence (bounds
#: a job's compiles: two per occurrence at most).
MAX_OCCURRENCES = 6
MAX_DECIDING = 3
#: Longest candidate string (a ``maxLength`` beyond it is not probed: the replay would
#: measure the loop, and the answer is the same).
MAX_STRING = 2_000


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or "$dynamicRef" in node or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


def _subschemas(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict]]:
    """Every (path, subschema object) of a schema, depth-first, iteratively bounded by the
    schema's size (a hostile depth never recurses past Python's limit: the walk keeps its
    own stack)."""
    stack = [(path, node)]
    while stack:
        p, n = stack.pop()
        if not isinstance(n, dict):
            continue
        yield p, n
        for k in _ONE:
            if isinstance(n.get(k), dict):
                stack.append((p + (k,), n[k]))
        for k in _LIST:
            if isinstance(n.get(k), list):
                stack.extend((p + (k, str(i)), s) for i, s in enumerate(n[k]))
        for k in _MAP:
            if isinstance(n.get(k), dict):
                stack.extend((p + (k, name), s) for name, s in n[k].items())


def occurrences(schema: Any, root_only: bool = False) -> list[dict[str, Any]]:
    """The constraining keywords of ``schema``: ``{"keyword", "path", "schema", "skip"}``,
    ``schema`` the subschema holding it (``$schema`` of the root kept), ``skip`` why it is
    not judged (None when it is). In document order, at most :data:`MAX_OCCURRENCES`
    judged ones; ``root_only``: the root's keywords alone (a probe's)."""
    out: list[dict[str, Any]] = []
    if not isinstance(schema, dict):
        return out
    found = [((), schema)] if root_only else sorted(_subschemas(schema), key=lambda x: x[0])
    judged = 0
    for path, sub in found:
        for kw in KEYWORDS:
            if kw not in sub or (kw == "contains" and sub.get("type") not in (None, "array")):
                continue
            one = dict(sub)
            if "$schema" in schema and "$schema" not in one:
                one["$schema"] = schema["$schema"]
            skip = None
            if _has_ref(one):
                skip = "the subschema holds a $ref (cannot stand alone)"
            elif judged >= MAX_OCCURRENCES:
                skip = f"more than {MAX_OCCURRENCES} occurrences in the schema"
            else:
                judged += 1
            out.append({"keyword": kw, "path": "/" + "/".join(path), "schema": one,
                        "skip": skip})
    return out


def without(sub: dict[str, Any], keyword: str) -> dict[str, Any]:
    """``sub`` without ``keyword`` (and the keywords grouped with it)."""
    out = dict(sub)
    for k in GROUPS.get(keyword, (keyword,)):
        out.pop(k, None)
    return out


# ------------------------------------------------------------------------ candidates

_POOL: tuple[Any, ...] = (
    0, 1, 2, 3, 7, -1, 10, 11, 100, 0.5, 1.5, -0.5, "", "a", "ab", "abc", "abcd", "A", "x1",
    "zz", "hello world", "0", "-", "n_a", "2024-13-45", "999.1.1.1", "not-a-uuid", True,
    False, None, [], [1], [1, 1], [1, 2], [1, 2, 3], {}, {"a": 1}, {"a": 1, "b": 2},
    {"n_a": "x"}, {"A B": 1}, {"Zz": 1},
)


def _numbers_near(v: Any) -> list[Any]:
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        return []
    out: list[Any] = [v, v - 1, v + 1]
    if isinstance(v, int):
        out += [v - 2, v + 2]
    else:
        out += [v - 0.5, v + 0.5]
    return out


def candidates(sub: dict[str, Any], keyword: str) -> list[Any]:
    """Candidate instances for ``keyword`` of ``sub``: values made from its argument, then
    the ordinary pool (jsonschema picks the deciding ones, :func:`deciding`)."""
    arg = sub.get(keyword)
    out: list[Any] = []
    if keyword in ("minLength", "maxLength") and isinstance(arg, int) and arg <= MAX_STRING:
        out += ["x" * max(arg - 1, 0), "x" * (arg + 1)]
    elif keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        out += _numbers_near(arg)
    elif keyword == "multipleOf" and isinstance(arg, (int, float)) and arg > 0:
        out += [arg + 1, arg * 1.5, arg / 2, 1, 3]
    elif keyword in ("minItems", "maxItems") and isinstance(arg, int) and arg <= 64:
        x: object
        for x in (1, "a", True, None, {}, 0.5):
            out += [[x] * max(arg - 1, 0), [x] * (arg + 1)]
    elif keyword == "uniqueItems":
        values: tuple[object, ...] = (1, "a", True, None, {}, [], 0.5)
        out += [[v, v] for v in values]
    elif keyword in ("minProperties", "maxProperties") and isinstance(arg, int) and arg <= 32:
        props = list((sub.get("properties") or {}).keys()) + [f"p{i}" for i in range(arg + 2)]
        for value in (1, "a", True, None):
            out += [{k: value for k in props[:max(arg - 1, 0)]},
                    {k: value for k in props[:arg + 1]}]
    elif keyword == "format":
        out += ["x", "not a value", "2024-13-45", "2024-02-30T25:61:00Z", "999.1.1.1",
                "not-a-uuid", "no-at-sign", "-bad-", "http//x", "12:99"]
    elif keyword == "dependentRequired" and isinstance(arg, dict):
        for k in arg:
            for value in (1, "a", True, None):
                out.append({k: value})
    elif keyword == "propertyNames":
        out += [{k: 1} for k in ("A", "a b", "1", "Zz", "", "a-b")]
    elif keyword == "patternProperties" and isinstance(arg, dict):
        for pat in arg:
            for k in ("n_a", "a", "x1", "S_1", "foo", pat.strip("^$") or "k"):
                kinds: tuple[object, ...] = (0, "s", True, None, [], {})
                out += [{k: v} for v in kinds]
    out += list(_POOL)
    seen, uniq = set(), []
    for c in out:
        key = json.dumps(c, sort_keys=True)
        if key not in seen:
            seen.add(key)
            uniq.append(c)
    return uniq


def deciding(sub: dict[str, Any], keyword: str, limit: int = MAX_DECIDING) -> list[Any]:
    """Up to ``limit`` candidates valid against ``sub`` without ``keyword`` and invalid with
    it (jsonschema, formats asserted), shortest text first."""
    import jsonschema
    from jsonschema.validators import validator_for

    try:
        with_cls = validator_for(sub, default=jsonschema.Draft202012Validator)
        v_with = with_cls(sub, format_checker=with_cls.FORMAT_CHECKER)
        bare = without(sub, keyword)
        v_without = with_cls(bare, format_checker=with_cls.FORMAT_CHECKER)
    except Exception:  # a schema jsonschema cannot load: nothing decides
        return []
    out = []
    for c in candidates(sub, keyword):
        try:
            if v_without.is_valid(c) and not v_with.is_valid(c):
                out.append(c)
        except Exception:  # jsonschema's own limits (a regex it cannot compile): skip
            continue
    out.sort(key=lambda c: len(json.dumps(c)))
    return out[:limit]


# ---------------------------------------------------------------------- the judgement


def judge_occurrence(compile_: Callable[[str], Any], accepts: Callable[[Any, str], bool],
                     occ: dict[str, Any]) -> dict[str, Any]:
    """The verdict on one occurrence: ``{"keyword", "path", "verdict", "witness", ...}``
    with verdict ``ignored`` / ``kept`` / ``refused`` / ``undecided`` / ``not_probed``
    (see the module docstring). ``compile_(schema_text)`` raises the engine's
    ``CompileError``; ``accepts(compiled, text)`` replays a text."""
    from engines.protocol import CompileError, one_line

    kw, sub = occ["keyword"], occ["schema"]
    row: dict[str, Any] = {"keyword": kw, "path": occ["path"]}
    if occ.get("skip"):
        return {**row, "verdict": "not_probed", "why": occ["skip"]}
    insts = deciding(sub, kw)
    if not insts:
        return {**row, "verdict": "not_probed",
                "why": "no candidate instance decided by this keyword alone"}
    texts = [json.dumps(v) for v in insts]
    try:
        with_kw = compile_(json.dumps(sub))
    except CompileError as e:
        return {**row, "verdict": "refused", "error": one_line(e, 200)}
    for t in texts:
        if accepts(with_kw, t):
            return {**row, "verdict": "ignored", "witness": t,
                    "schema": json.dumps(sub)[:300]}
    try:
        bare = compile_(json.dumps(without(sub, kw)))
    except CompileError as e:
        return {**row, "verdict": "undecided",
                "why": f"the subschema without {kw} does not compile: {one_line(e, 160)}"}
    for t in texts:
        if accepts(bare, t):
            return {**row, "verdict": "kept", "witness": t}
    return {**row, "verdict": "undecided",
            "why": "the engine rejects the deciding instances even without the keyword",
            "witness": texts[0]}

