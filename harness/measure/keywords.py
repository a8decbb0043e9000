"""The keyword judge: does an engine keep each keyword of a schema, ignore it, or misread it?

One judge for the hazards suite's keyword row and ``harness lint`` (docs/lint.md).

**Nodes.** :func:`nodes` walks a schema and yields every subschema object (its JSON pointer
``path``) taken alone: a copy that keeps the root's ``$schema`` and, when it holds a local
``$ref``, the root's ``$defs`` / ``definitions`` so the reference resolves. A ``$ref`` that
is not local (``#...``) is never fetched: such a node is not judged (``skip``). Each node
lists the keywords that constrain it (:data:`KEYWORDS`, :data:`STRUCTURAL`) and, for an
object node without ``additionalProperties``, :data:`UNDECLARED`: the default that lets
undeclared properties in.

**Instances.** For a keyword, *deciding* instances (:func:`deciding`) are valid against the
node without the keyword and invalid with it: hand-made candidates built from the keyword's
argument and a small pool, plus instances hypothesis-jsonschema generates from the node
*without* the keyword, so that they satisfy the node's other keywords (an ipv4 address for
``{"format": "ipv4", "maxLength": 9}``). *Valid* instances (:func:`valid_instances`) are
generated from the node itself. jsonschema (formats asserted) decides every one; generation
is derandomized and bounded (:data:`EXAMPLES` per schema, :data:`SECONDS` per generation).

**Verdicts** (per node, keyword and engine, :func:`judge_node`):

- ``refused``: the engine does not compile the node (its one-line error);
- ``ignored``: the engine accepts a deciding instance (jsonschema says the only constraint
  it breaks is this keyword): the witness;
- ``misread``: the engine rejects a valid instance in every tokenization it allows
  (:func:`harness.measure.reachability.search` says ``unwritable``; a rejection of the
  canonical tokenization alone is never a misreading), and the node without this keyword
  accepts it: the witness. For :data:`UNDECLARED`, a valid instance with one undeclared
  property added that the engine cannot write;
- ``kept``: every deciding instance is rejected, and one is accepted once the keyword is
  removed (so the rejection came from the keyword);
- ``undecided``: none of these could be shown, with why (no deciding instance, the engine
  rejects them even without the keyword, the reachability search ran out of budget ...).

**A schema** (:func:`judge_schema`): every node, each within :data:`NODE_SECONDS` and the
schema within :data:`SCHEMA_SECONDS`; a node judged before in the run (the same text
taken alone, the same engine: :class:`Memo`) gets the rows it got then. The corpus repeats
its nodes, so the whole-corpus atlas (``harness run --suite hazards --subset keywords
--sample all``) judges each distinct node once per engine. Compiles are shared by what the
engine compiles (:meth:`engines.protocol.EngineAdapter.grammar_key`: outlines-core's
regular expression), so a node and its variants without a keyword that make the same
grammar compile it once; a grammar whose compile ran past the budget once is not compiled
again in the run.

Everything here is pure data except the judging functions, which take an :class:`Engine`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

__all__ = ["KEYWORDS", "STRUCTURAL", "UNDECLARED", "PROBES", "VERDICTS", "AdapterEngine",
           "CompileAbandoned", "Engine", "Judged", "Memo", "Node", "Plan", "candidates",
           "deciding", "judge_node", "judge_schema", "nodes", "plan", "valid_instances",
           "without"]

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

#: Deciding instances kept per keyword (each is one replay on the engine).
MAX_DECIDING = 3
#: Longest candidate string (a ``maxLength`` beyond it is not probed: the replay would
#: measure the loop, and the answer is the same).
MAX_STRING = 2_000

#: The keywords beyond :data:`KEYWORDS` that ``harness lint`` judges on every node.
STRUCTURAL: tuple[str, ...] = (
    "required", "type", "enum", "const", "items", "prefixItems", "additionalProperties",
    "unevaluatedProperties", "unevaluatedItems",
)
#: The pseudo-keyword of an object node's default: undeclared properties are allowed when
#: ``additionalProperties`` is absent.
UNDECLARED = "additionalProperties (absent: undeclared properties allowed)"
#: The verdicts, in the order they are reported.
VERDICTS = ("ignored", "misread", "refused", "undecided", "kept")
#: Examples hypothesis generates per schema, and seconds one generation may take.
EXAMPLES = 12
SECONDS = 1.0
#: Valid instances tried per node for a misreading.
MAX_VALID = 6
#: Seconds the reachability search may take per instance.
REACH_SECONDS = 1.0
#: Seconds :func:`judge_schema` gives one node's keywords on one engine, and one schema's
#: nodes in all, before what is left is ``undecided`` (with why).
NODE_SECONDS = 3.0
SCHEMA_SECONDS = 30.0


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _pointer(path: tuple[str, ...]) -> str:
    """The JSON pointer of ``path`` (``""`` is the root)."""
    return "".join("/" + _escape(p) for p in path)


def _refs(node: Any) -> Iterator[str]:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            for k, v in n.items():
                if k in ("$ref", "$dynamicRef", "$recursiveRef") and isinstance(v, str):
                    yield v
                elif k not in ("enum", "const", "default", "examples"):
                    stack.append(v)
        elif isinstance(n, list):
            stack.extend(n)


def _has_ref(node: Any) -> bool:
    return any(True for _ in _refs(node))


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


def standalone(root: dict[str, Any], sub: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``sub`` taken alone: the root's ``$schema`` kept and, when it holds a ``$ref``, the
    root's ``$defs`` / ``definitions`` (local references then resolve). Returns the copy
    and why it cannot be judged (a reference that is not local: never fetched), or None."""
    one = dict(sub)
    one.pop("$id", None)  # a base URI would point its references elsewhere
    if "$schema" in root and "$schema" not in one:
        one["$schema"] = root["$schema"]
    refs = list(_refs(one))
    if refs:
        far = [r for r in refs if not r.startswith("#")]
        if far:
            return one, f"a $ref that is not local ({far[0][:80]}): never fetched"
        for k in ("$defs", "definitions"):
            if isinstance(root.get(k), dict) and k not in one:
                one[k] = _referenced(root, k, refs)
        far = [r for r in _refs({k: one.get(k) for k in ("$defs", "definitions")})
               if not r.startswith("#")]
        if far:
            return one, f"a $ref that is not local ({far[0][:80]}): never fetched"
    return one, None


def _referenced(root: dict[str, Any], key: str, refs: list[str]) -> dict[str, Any]:
    """The entries of ``root[key]`` (``$defs`` or ``definitions``) that ``refs`` reach,
    directly or through each other: an unreferenced definition changes nothing, and a node
    judged with only what it uses is smaller to compile and the same text wherever the
    corpus repeats it. All of them when a reference points elsewhere in the root (``#``,
    ``#/properties/...``): what it reaches is not followed here."""
    table = root[key]
    names: set[str] = set()
    todo = list(refs)
    while todo:
        ref = todo.pop()
        head = "#/" + key + "/"
        if not ref.startswith("#/"):
            return table
        if not ref.startswith(head):
            if ref.startswith(("#/$defs/", "#/definitions/")):
                continue  # the other table's: that table's own pass keeps it
            return table
        name = ref[len(head):].split("/", 1)[0].replace("~1", "/").replace("~0", "~")
        if name in names or name not in table:
            continue
        names.add(name)
        todo += list(_refs(table[name]))
    return {n: v for n, v in table.items() if n in names}


def _constraining(sub: dict[str, Any], extended: bool) -> list[str]:
    out = [kw for kw in KEYWORDS if kw in sub
           and not (kw == "contains" and sub.get("type") not in (None, "array"))]
    if extended:
        out += [kw for kw in STRUCTURAL if kw in sub]
        types = sub.get("type")
        is_object = types == "object" or (isinstance(types, list) and "object" in types) or (
            types is None and "properties" in sub)
        if is_object and not any(k in sub for k in ("additionalProperties",
                                                    "unevaluatedProperties")):
            out.append(UNDECLARED)
    return out


@dataclass
class Node:
    """One subschema taken alone and the keywords that constrain it."""

    path: str
    schema: dict[str, Any]
    keywords: list[str]
    #: why the node is not judged (None: it is)
    skip: str | None = None


def nodes(schema: Any, extended: bool = True, root_only: bool = False) -> list[Node]:
    """Every subschema object of ``schema`` with at least one constraining keyword, in
    document order (see the module docstring); ``extended``: :data:`STRUCTURAL` and
    :data:`UNDECLARED` too (else :data:`KEYWORDS` alone, the hazards row's)."""
    if not isinstance(schema, dict):
        return []
    found = [((), schema)] if root_only else sorted(_subschemas(schema), key=lambda x: x[0])
    out = []
    for path, sub in found:
        kws = _constraining(sub, extended)
        if not kws:
            continue
        one, skip = standalone(schema, sub)
        out.append(Node(_pointer(path), one, kws, skip))
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
    elif keyword == "required" and isinstance(arg, list):
        for value in (1, "a", True, None):
            full = {k: value for k in arg if isinstance(k, str)}
            out += [{k: x for k, x in full.items() if k != drop} for drop in full]
    elif keyword in ("additionalProperties", "unevaluatedProperties"):
        extras: tuple[object, ...] = (1, "a", True, None, [], {})
        out += [{"zz_undeclared": x} for x in extras]
    elif keyword == "const":
        out += [arg] if not isinstance(arg, (dict, list)) else []
    out += list(_POOL)
    seen, uniq = set(), []
    for c in out:
        key = json.dumps(c, sort_keys=True)
        if key not in seen:
            seen.add(key)
            uniq.append(c)
    return uniq



# ---------------------------------------------------------------------- instances


class _Enough(Exception):
    pass


def _validator(schema: dict[str, Any]) -> Any:
    import jsonschema
    from jsonschema.validators import validator_for

    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    # every format jsonschema can check, whatever the draft: draft-04 defines no "date",
    # so its own checker calls "" a date, while every engine (and the schema's author)
    # reads it as one
    return cls(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def _regex(sub: Any) -> bool:
    """Whether a regular expression takes part in ``sub`` (``pattern``,
    ``patternProperties``): jsonschema runs it with Python's ``re``, whose ``\\d``, ``\\w``,
    ``\\s`` and ``$`` read non-ASCII text and a final newline otherwise than ECMA-262 (JSON
    Schema's dialect, the engines'), so only plain instances judge such a node."""
    return any("pattern" in n or "patternProperties" in n for _, n in _subschemas(sub))


def _is_valid(v: Any, x: Any) -> bool | None:
    """jsonschema's word on ``x`` (None: it could not say, e.g. a regex it cannot compile
    or a reference it cannot resolve)."""
    try:
        return bool(v.is_valid(x))
    except Exception:
        return None


def _hypothesis_home() -> None:
    """Hypothesis keeps caches in ``.hypothesis/`` of the current directory: a lint run
    must not write into the user's folder, so (unless the caller set one) they go to a
    folder of this user under the system's temporary folder."""
    import os
    import tempfile

    if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
        uid = os.getuid() if hasattr(os, "getuid") else 0
        os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = os.path.join(
            tempfile.gettempdir(), f"harness-hypothesis-{uid}")


def generated(schema: dict[str, Any], n: int = EXAMPLES, seconds: float = SECONDS) -> list[Any]:
    """Up to ``n`` candidate instances of ``schema`` (jsonschema, not this function, says
    which are valid), the same every time: a schema that holds an object is built by
    :func:`built` (hypothesis-jsonschema 0.23 cannot draw an object under the hypothesis
    installed here: ``'many' object has no attribute 'more'``); any other is drawn by
    hypothesis-jsonschema (:func:`drawn`). No reference is fetched: callers pass nodes
    whose references are local (:func:`standalone`)."""
    if _has_ref(schema) and any(not r.startswith("#") for r in _refs(schema)):
        return []
    if _holds_object(schema):
        return built(schema, n)
    return drawn(schema, n, seconds)


_OBJECT_KEYS = ("properties", "required", "patternProperties", "minProperties",
                "maxProperties", "dependentRequired", "propertyNames")


def _holds_object(schema: Any) -> bool:
    for _, sub in _subschemas(schema):
        t = sub.get("type")
        if t == "object" or (isinstance(t, list) and "object" in t) \
                or any(k in sub for k in _OBJECT_KEYS):
            return True
    return False


def _local(ref: str, root: Any) -> Any:
    """The target of a local reference (``#/$defs/x``) in ``root``; None if there is none."""
    if not ref.startswith("#"):
        return None
    node = root
    for part in (ref[1:].lstrip("/").split("/") if ref not in ("#", "#/") else ()):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _types(sub: dict[str, Any]) -> list[str | None]:
    t = sub.get("type")
    if isinstance(t, list):
        named: list[str | None] = []
        named += [x for x in t if isinstance(x, str)][:3]
        return named or [None]
    if isinstance(t, str):
        return [t]
    if any(k in sub for k in _OBJECT_KEYS + ("additionalProperties",)):
        return ["object"]
    if any(k in sub for k in ("items", "prefixItems", "minItems", "maxItems", "contains")):
        return ["array"]
    return [None]


def _bound(sub: dict[str, Any], low: str, xlow: str) -> float | None:
    for k in (low, xlow):
        v = sub.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            return v
    return None


def built(schema: Any, n: int = EXAMPLES) -> list[Any]:
    """Up to ``n`` candidate instances of ``schema`` built from its structure: an object's
    required properties each given a value built from its subschema (then each optional one
    added in turn), an array's items, a local ``$ref`` followed, ``anyOf`` / ``oneOf``
    branch by branch; a string with a ``pattern`` or ``format`` drawn by
    hypothesis-jsonschema, other scalars made from their bounds. Candidates only:
    jsonschema decides which are valid."""
    out = _built(schema, schema, 0)
    return _shortest(out, n) if len(out) > n else out


def _built(sub: Any, root: Any, depth: int) -> list[Any]:
    if sub is True or sub == {}:
        return [1, "a", None]
    if not isinstance(sub, dict) or depth > 8:
        return []
    ref = sub.get("$ref")
    if isinstance(ref, str):
        target = _local(ref, root)
        return _built(target, root, depth + 1) if isinstance(target, dict) else []
    if "const" in sub:
        return [sub["const"]]
    if isinstance(sub.get("enum"), list):
        return list(sub["enum"][:3])
    rest = {k: v for k, v in sub.items() if k not in ("anyOf", "oneOf", "allOf")}
    if isinstance(sub.get("allOf"), list):
        merged = dict(rest)
        for part in sub["allOf"]:
            if isinstance(part, dict):
                for k, v in part.items():
                    if k == "properties" and isinstance(v, dict):
                        merged["properties"] = {**(merged.get("properties") or {}), **v}
                    elif k == "required" and isinstance(v, list):
                        merged["required"] = list(merged.get("required") or []) + v
                    else:
                        merged.setdefault(k, v)
        return _built(merged, root, depth + 1)
    for k in ("anyOf", "oneOf"):
        if isinstance(sub.get(k), list):
            out: list[Any] = []
            for branch in sub[k][:4]:
                if isinstance(branch, dict):
                    out += _built({**rest, **branch}, root, depth + 1)[:2]
            return out
    out = []
    for t in _types(sub):
        if t == "object":
            out += _object(sub, root, depth)
        elif t == "array":
            items = sub.get("items") if isinstance(sub.get("items"), dict) else True
            first = [_built(x, root, depth + 1)[:1] for x in sub.get("prefixItems") or ()
                     if isinstance(x, (dict, bool))]
            head = [v[0] for v in first if v]
            values = _built(items, root, depth + 1)[:2] or [None]
            given = sub.get("minItems")
            least = given if isinstance(given, int) else 0
            out += [head + [values[0]] * max(least - len(head), 0),
                    head + values[:2] + [values[0]] * max(least - len(head) - 2, 0)]
            if least == 0 and not head:
                out.append([])
        else:
            out += _scalar(sub, t)
    return out


def _object(sub: dict[str, Any], root: Any, depth: int) -> list[Any]:
    declared = sub.get("properties")
    props: dict[str, Any] = declared if isinstance(declared, dict) else {}
    required = [k for k in sub.get("required") or () if isinstance(k, str)]
    extra = sub.get("additionalProperties", True)

    def values(name: str) -> list[Any]:
        return _built(props[name] if name in props else extra, root, depth + 1)[:2]

    base: dict[str, Any] = {}
    second: dict[str, Any] = {}
    for name in required[:40]:
        v = values(name) or [None]
        base[name] = v[0]
        second[name] = v[-1]
    # in the order the schema declares its properties: the engines write an object's
    # properties in that order, and an instance in another order would be "unwritable"
    # for its order alone, not for any keyword
    order = {k: i for i, k in enumerate(props)}

    def ordered(d: dict[str, Any]) -> dict[str, Any]:
        return dict(sorted(d.items(), key=lambda kv: order.get(kv[0], len(order))))

    base, second = ordered(base), ordered(second)
    out: list[Any] = [base, second] if second != base else [base]
    fuller = dict(base)
    for name in [k for k in props if k not in base][:12]:
        v = values(name)
        if v:
            out.append(ordered({**base, name: v[0]}))
            fuller[name] = v[0]
    out.append(ordered(fuller))
    return out


def _scalar(sub: dict[str, Any], t: str | None) -> list[Any]:
    if t == "string" or (t is None and ("pattern" in sub or "format" in sub)):
        if "pattern" in sub or "format" in sub:
            return drawn({k: v for k, v in sub.items() if k not in ("$defs", "definitions")},
                         3, 0.3) or ["a"]
        given = sub.get("minLength")
        least = given if isinstance(given, int) else 0
        return ["a" * min(max(least, 1), MAX_STRING), ""]
    if t in ("integer", "number"):
        low = _bound(sub, "minimum", "exclusiveMinimum")
        high = _bound(sub, "maximum", "exclusiveMaximum")
        step = sub.get("multipleOf")
        start = low if low is not None else (high if high is not None else 0)
        v = math.ceil(start) if t == "integer" else start
        if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0:
            v = math.ceil(v / step) * step
            return [int(v) if t == "integer" else v, (int(v + step) if t == "integer"
                                                      else v + step)]
        return [v, v + 1]
    if t == "boolean":
        return [True, False]
    if t == json.dumps(None):  # JSON's null type
        return [None]
    return [1, "a"]


def drawn(schema: dict[str, Any], n: int = EXAMPLES, seconds: float = SECONDS) -> list[Any]:
    """Up to ``n`` instances hypothesis-jsonschema draws from ``schema``, derandomized (the
    same schema gives the same instances), within about ``seconds``; ``[]`` where it cannot
    read the schema."""
    _hypothesis_home()
    try:
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings
        from hypothesis_jsonschema import from_schema

        strategy = from_schema(schema)
    except Exception:  # hypothesis-jsonschema cannot read it (unsupported keyword, ...)
        return []
    out: list[Any] = []
    seen: set[str] = set()
    deadline = time.monotonic() + seconds

    @settings(derandomize=True, max_examples=max(n * 3, 10), database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate],
              verbosity=Verbosity.quiet, print_blob=False)
    @given(strategy)
    def collect(x: Any) -> None:
        key = json.dumps(x, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(x)
        if len(out) >= n or time.monotonic() > deadline:
            raise _Enough

    try:
        collect()
    except _Enough:
        pass
    except Exception:  # unsatisfiable, a health check, a generator error: what it had
        pass
    return out


def _shortest(xs: list[Any], limit: int, plain_only: bool = False) -> list[Any]:
    seen: dict[str, Any] = {}
    for x in xs:
        try:
            key = json.dumps(x, sort_keys=True, allow_nan=False)
        except ValueError:
            continue
        seen.setdefault(key, x)
    # plain texts first (printable ASCII, no escape): a witness a reader can check by eye,
    # and a finding that is not about how an engine writes rare characters
    keys = [k for k in seen if _plain(k) or not plain_only]
    return [seen[k] for k in sorted(keys, key=lambda k: (not _plain(k), len(k), k))][:limit]


def _plain(text: str) -> bool:
    return "\\" not in text and all(" " <= c <= "~" for c in text)


def deciding(sub: dict[str, Any], keyword: str, limit: int = MAX_DECIDING,
             generate: bool = True) -> list[Any]:
    """Up to ``limit`` instances valid against ``sub`` without ``keyword`` and invalid with
    it (jsonschema, formats asserted), shortest text first: the hand-made candidates, and
    (``generate``) instances generated from ``sub`` without ``keyword``, which satisfy the
    node's other keywords."""
    try:
        v_with = _validator(sub)
        bare = without(sub, keyword)
        v_without = _validator(bare)
    except Exception:  # a schema jsonschema cannot load: nothing decides
        return []
    pool = candidates(sub, keyword) + (generated(bare) if generate else [])
    if keyword in ("additionalProperties", "unevaluatedProperties") and generate:
        # an instance of the node itself (its required properties there) plus one more
        pool += [{**x, "zz_undeclared": v} for x in generated(sub, 4) if isinstance(x, dict)
                 for v in (1, "a")]
    out = [c for c in pool if _is_valid(v_without, c) is True and _is_valid(v_with, c) is False]
    return _shortest(out, limit, plain_only=_regex(sub))


def valid_instances(sub: dict[str, Any], limit: int = MAX_VALID) -> list[Any]:
    """Up to ``limit`` instances jsonschema calls valid against ``sub``: generated from it,
    then the hand-made pool; shortest first."""
    try:
        v = _validator(sub)
    except Exception:
        return []
    pool = generated(sub) + list(_POOL)
    return _shortest([c for c in pool if _is_valid(v, c) is True], limit,
                     plain_only=_regex(sub))


def undeclared_instances(sub: dict[str, Any], limit: int = 3) -> list[Any]:
    """Valid instances of an object node with one undeclared property added (valid: the
    node has no ``additionalProperties``), checked by jsonschema."""
    try:
        v = _validator(sub)
    except Exception:
        return []
    declared = sub.get("properties")
    props: dict[str, Any] = declared if isinstance(declared, dict) else {}
    name = next(n for n in ("extra", "zz_extra", "x_undeclared_1") if n not in props)
    out = []
    for base in valid_instances(sub) + [{}]:
        if isinstance(base, dict) and name not in base:
            for value in (1, "a"):
                c = {**base, name: value}
                if _is_valid(v, c) is True:
                    out.append(c)
                    break
    return _shortest(out, limit)


@dataclass
class Plan:
    """The instances that judge one node, made once for every engine (jsonschema-checked):
    ``deciding`` per keyword, ``valid`` instances, ``undeclared`` ones."""

    deciding: dict[str, list[Any]] = field(default_factory=dict)
    valid: list[Any] = field(default_factory=list)
    undeclared: list[Any] = field(default_factory=list)
    seconds: float = 0.0


def plan(node: Node, generate: bool = True) -> Plan:
    """The instances of :class:`Plan` for ``node`` (none for a node that is not judged)."""
    t0 = time.monotonic()
    out = Plan()
    if node.skip is None:
        out.valid = valid_instances(node.schema) if generate else []
        for kw in node.keywords:
            if kw == UNDECLARED:
                out.undeclared = undeclared_instances(node.schema)
            else:
                out.deciding[kw] = deciding(node.schema, kw, generate=generate)
    out.seconds = time.monotonic() - t0
    return out


# ---------------------------------------------------------------------- the judgement


class Engine(Protocol):
    """What the judge asks of an engine: compile a schema text (raising
    :class:`engines.protocol.CompileError`), replay one text in its canonical tokenization,
    and search every tokenization of a text it rejected."""

    def compile(self, schema_text: str) -> Any: ...

    def grammar_key(self, schema_text: str) -> str | None:
        """:meth:`engines.protocol.EngineAdapter.grammar_key`: None where the engine does
        not say (the schema text is then its own key)."""
        ...

    def accepts(self, compiled: Any, text: str) -> bool: ...

    def writable(self, compiled: Any, text: str) -> tuple[str, str | None]:
        """``(kind, why)``: kind as :data:`harness.measure.reachability.KINDS`."""
        ...


@dataclass
class _Compiled:
    """One node's compiles, each schema text once; through ``memo`` when the engine has a
    ``key`` (shared, by :meth:`Engine.grammar_key`, with every node of the run on that
    engine)."""

    engine: Engine
    memo: "Memo | None" = None
    cache: dict[str, Any] = field(default_factory=dict)

    def get(self, schema: dict[str, Any]) -> Any:
        """The compiled schema, or the :class:`CompileError` it raised (both memoised).
        Raises :class:`CompileAbandoned` for a compile that runs past the engine's budget,
        or ran past it before in this run (``still_running`` False: nothing was started)."""
        skey = json.dumps(schema, sort_keys=True)
        if skey not in self.cache:
            self.cache[skey] = self._compile(json.dumps(schema), skey)
        return self.cache[skey]

    def _compile(self, text: str, skey: str) -> Any:
        from engines.protocol import CompileError

        ekey: str = getattr(self.engine, "key", None) or ""
        memo = self.memo if ekey else None
        try:
            if memo is None:
                return self.engine.compile(text)
            gkey = self.engine.grammar_key(text)
        except CompileError as e:
            return e
        key = gkey if gkey is not None else "schema:" + skey
        got = memo.compiled(ekey, key)
        if got is not None:
            return got
        why = memo.slow(ekey, key)
        if why is not None:
            raise CompileAbandoned(f"{why} (in an earlier job of this run: the same "
                                   "grammar is not compiled again)", still_running=False)
        try:
            got = self.engine.compile(text)
        except CompileError as e:
            got = e
        except CompileAbandoned as e:
            memo.put_slow(ekey, key, str(e))
            raise
        memo.keep_compiled(ekey, key, got)
        return got


def _text(x: Any) -> str:
    return json.dumps(x, ensure_ascii=False)


def judge_node(engine: Engine, node: Node, made: Plan | None = None,
               deadline: float | None = None,
               emit: Callable[[dict[str, Any]], None] | None = None,
               memo: "Memo | None" = None) -> list[dict[str, Any]]:
    """One row per keyword of ``node`` for ``engine``: ``{"path", "keyword", "verdict",
    "witness", "why"}`` (see the module docstring), from the instances of ``made`` (default:
    :func:`plan`). ``deadline`` (``time.monotonic()``): past it, the keywords not yet judged
    are ``undecided``. ``emit`` is called with each row as soon as it is made (a caller that
    may have to stop the engine keeps what was judged). ``memo``: compiles shared with
    other nodes (:class:`Memo`); None: this node's own."""
    from engines.protocol import CompileError, one_line

    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    v_node: Any = None

    def row(kw: str, verdict: str, witness: str | None = None, why: str | None = None) -> None:
        if witness is not None and verdict in ("ignored", "misread", "kept") \
                and v_node is not None:
            # every printed witness is checked by jsonschema once more
            if _is_valid(v_node, json.loads(witness)) is not (verdict == "misread"):
                verdict, why = "undecided", "the witness failed jsonschema's recheck"
        if why is None and notes and verdict in ("kept", "undecided"):
            why = notes[0]
        r = {"path": node.path, "keyword": kw, "verdict": verdict, "witness": witness,
             "why": why}
        rows.append(r)
        if emit is not None:
            emit(r)

    if node.skip:
        for kw in node.keywords:
            row(kw, "undecided", why=node.skip)
        return rows
    cc = _Compiled(engine, memo)
    compiled = cc.get(node.schema)
    if isinstance(compiled, CompileError):
        for kw in node.keywords:
            row(kw, "refused", why=one_line(compiled, 200))
        return rows
    v_node = _validator(node.schema)
    made = made if made is not None else plan(node)

    # misreadings: valid instances the engine cannot write at all
    misread: dict[str, str] = {}
    unattributed: str | None = None
    for x in made.valid:
        if deadline is not None and time.monotonic() > deadline:
            notes.append("the time budget ended the search for misreadings")
            break
        t = _text(x)
        if engine.accepts(compiled, t):
            continue
        kind, why = engine.writable(compiled, t)
        if kind != "unwritable":
            notes.append(f"{t[:60]} is refused in its canonical tokenization only ({kind}"
                         + (f": {why}" if why else "") + ")")
            continue
        hit = False
        for kw in node.keywords:
            if kw == UNDECLARED or kw in misread:
                continue
            bare = cc.get(without(node.schema, kw))
            if not isinstance(bare, CompileError) and engine.accepts(bare, t):
                misread[kw] = t
                hit = True
        if not hit and unattributed is None:
            unattributed = t

    for kw in node.keywords:
        if deadline is not None and time.monotonic() > deadline:
            row(kw, "undecided", why="the time budget for this schema was spent")
            continue
        if kw == UNDECLARED:
            insts = made.undeclared
            if not insts:
                row(kw, "undecided", why="no valid instance with an undeclared property found")
                continue
            verdict, witness, why = "undecided", None, None
            for x in insts:
                t = _text(x)
                if engine.accepts(compiled, t):
                    verdict, witness, why = "kept", t, None
                    break
                kind, reason = engine.writable(compiled, t)
                if kind == "unwritable":
                    verdict, witness = "misread", t
                    why = "a valid instance with an undeclared property cannot be written"
                    break
                if kind == "tokenization":
                    verdict, witness = "kept", t
                    why = "accepted in another tokenization only"
                    break
                why = f"the reachability search did not finish: {reason}"
            row(kw, verdict, witness, why)
            continue
        insts = made.deciding.get(kw, [])
        ignored = next((t for t in map(_text, insts) if engine.accepts(compiled, t)), None)
        if ignored is not None:
            row(kw, "ignored", ignored, "jsonschema: invalid only because of this keyword")
            continue
        if kw in misread:
            row(kw, "misread", misread[kw],
                "jsonschema: valid; the engine cannot write it, and can without this keyword")
            continue
        if not insts:
            row(kw, "undecided", why="no instance found that is valid without this keyword "
                                     "and invalid with it")
            continue
        bare = cc.get(without(node.schema, kw))
        if isinstance(bare, CompileError):
            row(kw, "undecided", why=f"the node without {kw} does not compile: "
                                     f"{one_line(bare, 160)}")
            continue
        kept = next((t for t in map(_text, insts) if engine.accepts(bare, t)), None)
        if kept is not None:
            row(kw, "kept", kept)
        else:
            row(kw, "undecided", _text(insts[0]),
                "the engine rejects the deciding instances even without the keyword")
    if unattributed is not None:
        row("(node)", "misread", unattributed,
            "jsonschema: valid; the engine cannot write it (no single keyword explains it)")
    return rows


class CompileAbandoned(Exception):
    """A compile that ran past :attr:`AdapterEngine.compile_seconds`. ``still_running``
    True: it was left running in its thread, and the process must end before its engine
    is trusted again; False: the same grammar ran past it before (:meth:`Memo.slow`) and
    was not compiled this time."""

    def __init__(self, message: str, still_running: bool = True) -> None:
        super().__init__(message)
        self.still_running = still_running


class AdapterEngine:
    """:class:`Engine` over an engine adapter and its vocabulary: the replay's canonical
    tokenization, then the replay's reachability search (:mod:`harness.measure.reachability`)
    for a text it rejected.

    ``compile_seconds``: each compile runs in a thread and is abandoned past it
    (:class:`CompileAbandoned`; the engines release the GIL while they compile, so the
    judge goes on): a job then ends early, and its worker is replaced after it
    (:data:`harness.execution.executor.RECYCLE`), which is far cheaper than a job killed
    at the run's limit. None: compiles run to the end in the caller's thread."""

    def __init__(self, adapter: Any, vocab: Any, reach_seconds: float = REACH_SECONDS,
                 compile_seconds: float | None = None) -> None:
        from engines.bitmask import allocate_bitmask

        self.adapter = adapter
        self.vocab = vocab
        #: what makes two engines judge alike (a :class:`Memo`'s key)
        self.key = (f"{adapter.label}{sorted(getattr(adapter, 'options', {}).items())!r}"
                    f"@{getattr(vocab, 'name', '?')}")
        self.bitmask = allocate_bitmask(vocab.size)
        self.reach_seconds = reach_seconds
        self.compile_seconds = compile_seconds

    def grammar_key(self, schema_text: str) -> str | None:
        return self.adapter.grammar_key(schema_text)

    def compile(self, schema_text: str) -> Any:
        if self.compile_seconds is None:
            return self.adapter.compile(schema_text)
        import threading

        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = self.adapter.compile(schema_text)
            except BaseException as e:  # handed to the caller's thread
                box["error"] = e

        th = threading.Thread(target=run, name="keyword-compile", daemon=True)
        th.start()
        th.join(self.compile_seconds)
        if th.is_alive():
            raise CompileAbandoned(f"the engine's compile ran past {self.compile_seconds:g} s")
        if "error" in box:
            raise box["error"]
        return box["value"]

    def accepts(self, compiled: Any, text: str) -> bool:
        from harness.measure.replay import replay

        return replay(compiled.matcher(), self.vocab.encode(text), self.bitmask,
                      self.vocab.stop_ids).status == "accepted"

    def writable(self, compiled: Any, text: str) -> tuple[str, str | None]:
        from harness.measure.reachability import search

        r = search(compiled, self.vocab, text, self.bitmask, seconds=self.reach_seconds)
        return r.kind, r.why


#: Keywords that annotate and constrain nothing (JSON Schema's annotation vocabulary):
#: the atlas judges a node without them, so that the same constraint is the same node
#: wherever the corpus repeats it, whatever its title or description.
ANNOTATIONS = ("title", "description", "examples", "$comment", "default", "deprecated",
               "readOnly", "writeOnly")


def bare(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` whose subschema objects hold no :data:`ANNOTATIONS` (a property
    *named* ``title`` is kept: only schema positions are walked)."""
    out = json.loads(json.dumps(schema))
    for _, sub in _subschemas(out):
        for k in ANNOTATIONS:
            sub.pop(k, None)
    return out


@dataclass
class Memo:
    """What has been judged already: the same node (its schema text, taken alone) gets the
    same instances and, on the same engine, the same rows, wherever it appears. The corpus
    repeats its nodes (32,117 nodes with a hazard keyword, 7,378 distinct without their
    annotations).

    In memory for a process; with ``folder`` (the run's scratch folder, shared by its
    workers) on disk too, so that every worker and engine of a run reuses what any of
    them made: the plans (the instances are the same for every engine) and each engine's
    rows. A node being judged has a marker there (``busy/``) until its rows are written:
    a marker left by a process that is gone is a node that held its job until the run's
    limits (time, memory) ended it, and it is not judged again (:meth:`killed`)."""

    plans: dict[str, Plan] = field(default_factory=dict)
    rows: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    folder: Path | None = None
    #: compiled grammars (or their CompileError) of this process, by engine and
    #: :meth:`Engine.grammar_key`: the most recently used :data:`COMPILED` are kept
    grammars: "OrderedDict[tuple[str, str], Any]" = field(default_factory=OrderedDict)
    #: grammars whose compile ran past the budget (:meth:`slow`), and why
    slows: dict[tuple[str, str], str] = field(default_factory=dict)

    def _file(self, kind: str, *key: str) -> Path:
        assert self.folder is not None
        name = hashlib.sha256("\n".join(key).encode()).hexdigest()[:40]
        return self.folder / kind / f"{name}.json"

    def _read(self, kind: str, *key: str) -> Any:
        if self.folder is None:
            return None
        try:
            got = json.loads(self._file(kind, *key).read_text())
        except (OSError, ValueError):
            return None
        return got["value"] if got.get("key") == list(key) else None  # a hash collision

    def _write(self, kind: str, value: Any, *key: str) -> None:
        if self.folder is None:
            return
        f = self._file(kind, *key)
        try:
            f.parent.mkdir(parents=True, exist_ok=True)
            tmp = f.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"key": list(key), "value": value}))
            os.replace(tmp, f)  # whole or absent: a reader never sees half a file
        except (OSError, TypeError, ValueError):
            pass  # a cache: what cannot be written is made again

    def plan(self, node: Node, key: str) -> Plan:
        if key not in self.plans:
            got = self._read("plans", key)
            if got is not None:
                self.plans[key] = Plan(**got)
            else:
                self.plans[key] = made = plan(node)
                self._write("plans", dataclasses.asdict(made), key)
        return self.plans[key]

    def _get(self, mem: dict[Any, Any], kind: str, *key: str) -> Any:
        """``mem[key]``, else what the folder holds for it (then kept in ``mem``); None
        when neither has it."""
        if key not in mem:
            got = self._read(kind, *key)
            if got is None:
                return None
            mem[key] = got
        return mem[key]

    def get_rows(self, ekey: str, nkey: str) -> list[dict[str, Any]] | None:
        return self._get(self.rows, "rows", ekey, nkey)

    def put_rows(self, ekey: str, nkey: str, rows: list[dict[str, Any]]) -> None:
        self.rows[(ekey, nkey)] = rows = [{k: v for k, v in r.items() if k != "path"}
                                          for r in rows]
        self._write("rows", rows, ekey, nkey)
        if self.folder is not None:
            self._file("busy", ekey, nkey).unlink(missing_ok=True)

    def compiled(self, ekey: str, gkey: str) -> Any:
        """The compiled grammar (or its CompileError) this process keeps for ``gkey`` on
        the engine ``ekey``; None when it keeps none."""
        got = self.grammars.get((ekey, gkey))
        if got is not None:
            self.grammars.move_to_end((ekey, gkey))
        return got

    def keep_compiled(self, ekey: str, gkey: str, value: Any) -> None:
        self.grammars[(ekey, gkey)] = value
        while len(self.grammars) > COMPILED:
            self.grammars.popitem(last=False)

    def slow(self, ekey: str, gkey: str) -> str | None:
        """Why the grammar ``gkey`` is not compiled again on ``ekey``: a compile of it ran
        past the budget in this process or, with a folder, in any worker of the run; None
        otherwise."""
        return self._get(self.slows, "slow", ekey, gkey)

    def put_slow(self, ekey: str, gkey: str, why: str) -> None:
        self.slows[(ekey, gkey)] = why
        self._write("slow", why, ekey, gkey)

    def begin(self, ekey: str, nkey: str) -> None:
        """``(ekey, nkey)`` is being judged by this process (see :meth:`killed`)."""
        self._write("busy", os.getpid(), ekey, nkey)

    def killed(self, ekey: str, nkey: str) -> bool:
        """True when a process that is gone began judging this node and never finished
        it: the run's limits ended its job there. False otherwise (never begun, finished,
        or being judged now by a live process), and always without a folder."""
        pid = self._read("busy", ekey, nkey)
        if not isinstance(pid, int) or pid == os.getpid():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False


#: Compiled grammars a :class:`Memo` keeps in memory (an outlines-core ``Index`` over
#: Llama-3's vocabulary takes up to 14 MB).
COMPILED = 16

#: The memo of this process (a worker's, across its jobs).
MEMO = Memo()


def shared_memo(folder: str | Path | None) -> Memo:
    """:data:`MEMO`, backed by ``folder`` (a run's scratch folder) when given."""
    if folder is not None:
        MEMO.folder = Path(folder) / "keywords"
    return MEMO


@dataclass
class Judged:
    """:func:`judge_schema`'s answer: the rows, and what they cost."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    nodes: int = 0         # nodes judged (each with at least one constraining keyword)
    reused: int = 0        # of them, judged before (same node, same engine: the memo)
    abandoned: bool = False  # a compile was abandoned (CompileAbandoned): the rest is not
                             # judged, and the engine's process should end
    plan_s: float = 0.0    # seconds spent making instances (jsonschema, hypothesis)
    judge_s: float = 0.0   # seconds spent on the engine (compiles, replays, searches)


def judge_schema(engine: Engine, schema: Any, *, extended: bool = True,
                 root_only: bool = False, node_seconds: float = NODE_SECONDS,
                 seconds: float = SCHEMA_SECONDS, memo: Memo | None = None,
                 keep: Callable[[list[dict[str, Any]]], None] | None = None) -> Judged:
    """Every node × keyword row of ``schema`` on ``engine`` (:func:`nodes`, :func:`plan`,
    :func:`judge_node`), each node without its annotations (:func:`bare`): each node
    within ``node_seconds``, the schema within ``seconds`` (past it, the nodes left are
    ``undecided`` with why). ``memo`` (default :data:`MEMO`): a node judged before on the
    same engine (``engine.key``) gets the rows it got then, at its own path; a node that
    held an earlier job of the run until its limit killed it (:meth:`Memo.killed`) is
    ``undecided`` at once. The nodes are judged smallest first (the shortest schema text:
    the cheapest compiles), and ``keep`` is called with each node's rows as soon as they
    are made, so that a caller killed by a slow compile keeps the nodes judged before it."""
    memo = MEMO if memo is None else memo
    out = Judged()
    t0 = time.monotonic()
    ekey = getattr(engine, "key", None)
    todo = []
    for n in nodes(schema, extended=extended, root_only=root_only):
        n = dataclasses.replace(n, schema=bare(n.schema))
        todo.append((json.dumps(n.schema, sort_keys=True), n))
    todo.sort(key=lambda kn: len(kn[0]))  # stable: equal sizes keep the walk's order

    def give(rows: list[dict[str, Any]]) -> None:
        out.rows.extend(rows)
        if keep is not None:
            keep(rows)

    for nkey, node in todo:
        out.nodes += 1
        known = memo.get_rows(ekey, nkey) if ekey is not None else None
        if known is not None:
            out.reused += 1
            give([{**r, "path": node.path} for r in known])
            continue
        late = time.monotonic() - t0 > seconds
        if late or (ekey is not None and memo.killed(ekey, nkey)):
            why = (f"the schema's {seconds:g} s were spent on earlier nodes" if late else
                   "the engine held an earlier job of this run on this node until the "
                   "run's limits (time, memory) ended it")
            give([{"path": node.path, "keyword": kw, "verdict": "undecided",
                   "witness": None, "why": why} for kw in node.keywords])
            continue
        if out.abandoned:
            give([{"path": node.path, "keyword": kw, "verdict": "undecided", "witness": None,
                   "why": "not judged: an abandoned compile still runs in this process"}
                  for kw in node.keywords])
            continue
        if ekey is not None:
            memo.begin(ekey, nkey)
        t1 = time.monotonic()
        made = memo.plan(node, nkey) if node.skip is None else Plan()
        t2 = time.monotonic()
        try:
            rows = judge_node(engine, node, made, t2 + node_seconds, memo=memo)
        except CompileAbandoned as e:
            out.abandoned = out.abandoned or e.still_running
            rows = [{"path": node.path, "keyword": kw, "verdict": "undecided",
                     "witness": None, "why": str(e)} for kw in node.keywords]
        out.plan_s += t2 - t1
        out.judge_s += time.monotonic() - t2
        if ekey is not None:
            # a node cut off by its own budget is remembered too: it would be cut off again
            memo.put_rows(ekey, nkey, rows)
        give(rows)
    return out
