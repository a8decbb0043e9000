"""JSON Schema → grammar IR, exact or refused.

Every keyword the ``jsonschema`` oracle validates for the schema's draft is either
enforced exactly (see ``SEMANTICS.md`` for the listed departures) or refused with a
:class:`SchemaCompileError` naming it. Keywords the draft does not validate
(annotations, unknown or other-draft keywords) are ignored, as the oracle does.

Outline:

- the draft comes from ``$schema`` (Draft 2020-12 when absent, like
  ``jsonschema.validators.validator_for``; an unknown metaschema is refused, and so are
  keywords whose meaning is disputed between readings, :data:`DISPUTED`); ``format``
  asserts unless ``format_assertion=False``; references are resolved with
  ``referencing`` against the schema itself only: a remote ``$ref`` is an error,
  never a fetch;
- each (conjunction of) subschema(s) becomes a rule; a rule body is the union, over
  the disjunctive normal form of ``anyOf``/``oneOf`` (``allOf`` merged keyword by
  keyword), of one expression per JSON type the alternative allows;
- ``enum``/``const``: the listed values that pass the whole subschema (checked with
  ``jsonschema`` itself, so any sibling keyword is exact), each value spelled every
  way JSON allows (escapes, whitespace, key order);
- objects: an :class:`~reference_engine.ir.ObjectBody` with per-object key tracking
  (any order by default, declaration order with ``property_order="declared"``);
- strings: one code-point automaton (pattern ∩ format ∩ excluded values) with a
  length window, read through the JSON string decoder (escapes included);
- numbers: :mod:`reference_engine.numbers`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from reference_engine import ir
from reference_engine import numbers as num
from reference_engine.automata import DFA, TooLarge, state_budget

#: automaton states one schema's eager constructions (regexes, products) may create
COMPILE_BUDGET = 300_000
from reference_engine.formats import CHECKED, format_variants
from reference_engine.regex import RegexError, compile_dfa


class SchemaCompileError(Exception):
    """The schema (or a keyword in it) cannot be compiled exactly; one-line message."""


# --------------------------------------------------------------------------- drafts

D4, D6, D7, D2019, D2020 = "draft4", "draft6", "draft7", "draft2019-09", "draft2020-12"
_SCHEMA_URIS = {
    "http://json-schema.org/draft-04/schema": D4,
    "http://json-schema.org/draft-06/schema": D6,
    "http://json-schema.org/draft-07/schema": D7,
    "https://json-schema.org/draft/2019-09/schema": D2019,
    "https://json-schema.org/draft/2020-12/schema": D2020,
}

#: Keywords ``jsonschema`` validates, per draft (``Validator.VALIDATORS``; checked by
#: the tests). Draft 4's boolean ``exclusiveMinimum``/``exclusiveMaximum`` belong to
#: ``minimum``/``maximum``.
VALIDATED = {
    D4: {"$ref", "additionalItems", "additionalProperties", "allOf", "anyOf", "dependencies",
         "enum", "format", "items", "maxItems", "maxLength", "maxProperties", "maximum",
         "minItems", "minLength", "minProperties", "minimum", "multipleOf", "not", "oneOf",
         "pattern", "patternProperties", "properties", "required", "type", "uniqueItems"},
}
VALIDATED[D6] = VALIDATED[D4] | {"const", "contains", "exclusiveMaximum", "exclusiveMinimum",
                                 "propertyNames"}
VALIDATED[D7] = VALIDATED[D6] | {"if"}
VALIDATED[D2019] = (VALIDATED[D7] - {"dependencies"}) | {
    "$recursiveRef", "dependentRequired", "dependentSchemas", "unevaluatedItems",
    "unevaluatedProperties"}
VALIDATED[D2020] = (VALIDATED[D2019] - {"$recursiveRef", "additionalItems"}) | {
    "$dynamicRef", "prefixItems"}

#: Validated keywords this compiler refuses (not enforceable exactly here).
REFUSED = {"contains", "if", "dependentSchemas", "unevaluatedItems", "unevaluatedProperties",
           "$recursiveRef", "$dynamicRef", "propertyNames", "multipleOf"}

#: Keywords that are ignored because no draft validates them (documentation only).
ANNOTATIONS = ("title", "description", "default", "examples", "$comment", "deprecated",
               "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
               "contentSchema", "$id", "id", "$schema", "$anchor", "$defs", "definitions",
               "$vocabulary", "$dynamicAnchor", "$recursiveAnchor", "then", "else", "format "
               "(names the draft's checker does not know)")

#: Keywords the draft's validator ignores but whose meaning is disputed, so that no
#: language is exact for every reader: refused (raised only if the type they concern can
#: occur) instead of silently ignored. ``dependencies`` in 2019-09+: jsonschema ignores it
#: (it was split into ``dependentRequired``/``dependentSchemas``), while the spec's
#: compatibility advice, the JSON-Schema-Test-Suite's optional tests and every schema
#: author who wrote it (draft-7 habits) enforce it. ``contentMediaType`` /
#: ``contentEncoding`` in draft 7: the spec lets implementations validate them (the
#: suite's optional tests do), jsonschema does not.
DISPUTED = {
    "draft2019-09": {"dependencies": "object:any"},
    "draft2020-12": {"dependencies": "object:any"},
    "draft7": {"contentMediaType": "string", "contentEncoding": "string"},
}

ALL_TYPES = ("null", "boolean", "object", "array", "string", "integer", "number")
_TYPES = set(ALL_TYPES)


def detect_draft(schema: Any) -> str:
    """The draft named by ``$schema`` (2020-12 when absent, as ``validator_for`` does).

    A ``$schema`` that names a metaschema this compiler does not know is refused:
    a custom metaschema's ``$vocabulary`` decides which keywords assert (e.g. one
    without the validation vocabulary makes ``minimum`` an annotation), and reading the
    schema as plain 2020-12 instead, as ``validator_for`` does, would be a guess."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return D2020
    uri = schema["$schema"]
    if not isinstance(uri, str):
        raise SchemaCompileError(f"$schema must be a string, not {uri!r}"[:200])
    norm = urlsplit(uri).geturl()
    if norm == "http://json-schema.org/draft-03/schema":
        raise SchemaCompileError("draft-03 schemas are not supported")
    draft = _SCHEMA_URIS.get(norm)
    if draft is None:
        raise SchemaCompileError(
            f"$schema {uri!r} is not a metaschema this engine knows (draft 4, 6, 7, 2019-09, "
            "2020-12): its vocabularies could change which keywords assert"[:300])
    return draft


def _spec(draft: str):
    import referencing.jsonschema as rj

    return {D4: rj.DRAFT4, D6: rj.DRAFT6, D7: rj.DRAFT7, D2019: rj.DRAFT201909,
            D2020: rj.DRAFT202012}[draft]


def _refuse_retrieve(uri: str):
    import referencing.exceptions

    raise referencing.exceptions.NoSuchResource(ref=uri)


# --------------------------------------------------------------------------- options

@dataclass(frozen=True)
class Options:
    """``whitespace``: ``flexible`` (JSON whitespace ``[ \\t\\n\\r]``, at most
    ``max_ws`` characters per gap, also around the document) or ``compact`` (none);
    ``separators=(item, key)`` fixes the separators exactly instead (e.g. ``(", ",
    ": ")`` for ``json.dumps``' default layout). ``property_order``: ``any`` (exact
    JSON semantics) or ``declared`` (declared properties in declaration order, then
    the others, like the peer engines). ``format_assertion``: ``format`` asserts (the
    default, as the harness's ground truth validates with jsonschema's format checker)
    or is an annotation (False: the 2019-09/2020-12 default of the spec, and the
    JSON-Schema-Test-Suite's setting outside ``optional/format``). ``reading``: whose
    reading of the keywords where readings differ: ``jsonschema`` (python-jsonschema's,
    the corpus's ground truth: ``pattern`` as Python's ``re``, ``format`` as its
    checkers) or ``spec`` (the specification's, as the JSON-Schema-Test-Suite labels it:
    ``pattern`` as ECMA-262, and the formats whose checker here follows
    python-jsonschema where it departs from the RFC refused, see :data:`SPEC_REFUSED`)."""

    whitespace: str = "flexible"
    max_ws: int = 32
    separators: tuple[str, str] | None = None
    property_order: str = "any"
    max_alternatives: int = 64
    format_assertion: bool = True
    reading: str = "jsonschema"

    def __post_init__(self):
        if self.whitespace not in ("flexible", "compact"):
            raise ValueError(f"whitespace must be 'flexible' or 'compact', not {self.whitespace!r}")
        if self.property_order not in ("any", "declared"):
            raise ValueError("property_order must be 'any' or 'declared'")
        if self.reading not in ("jsonschema", "spec"):
            raise ValueError("reading must be 'jsonschema' or 'spec'")
        if self.separators is not None:
            item, key = self.separators
            if not (isinstance(item, str) and isinstance(key, str)):
                raise ValueError("separators must be two strings")
            for s, ch in ((item, ","), (key, ":")):
                if s.strip(" \t\n\r") != ch:
                    raise ValueError(f"separator {s!r} must be {ch!r} with JSON whitespace around")


# --------------------------------------------------------------------------- flat schemas

FALSE = ((False, None),)  # a conjunction that nothing satisfies


@dataclass
class ObjPart:
    props: dict  # name -> (schema, resolver)
    patterns: list  # [(pattern, (schema, resolver))]
    additional: tuple | None  # (schema, resolver) or None (absent: anything)


@dataclass
class Flat:
    """One conjunctive alternative of a schema, keyword by keyword."""

    types: frozenset | None = None
    enum: list | None = None
    min_len: int = 0
    max_len: int | None = None
    patterns: tuple = ()
    formats: tuple = ()
    excluded: tuple = ()  # values excluded by ``not: {enum/const}``
    neg_patterns: tuple = ()  # ``not: {pattern}``
    neg_formats: tuple = ()  # ``not: {format}``
    lower: list = field(default_factory=list)
    upper: list = field(default_factory=list)
    prefix: list = field(default_factory=list)  # list of conj tuples
    rest: tuple = ()  # conj tuple applied after the prefix (() = anything)
    min_items: int = 0
    max_items: int | None = None
    parts: list = field(default_factory=list)  # ObjPart
    required: list = field(default_factory=list)
    min_props: int = 0
    max_props: int | None = None
    deps: dict = field(default_factory=dict)
    forbidden: set = field(default_factory=set)  # keys that must be absent
    refuse: dict = field(default_factory=dict)  # type -> reason (raised if the type is used)
    empty: bool = False

    def copy(self) -> "Flat":
        return Flat(self.types, None if self.enum is None else list(self.enum), self.min_len,
                    self.max_len, self.patterns, self.formats, self.excluded, self.neg_patterns,
                    self.neg_formats, list(self.lower),
                    list(self.upper), list(self.prefix), self.rest, self.min_items,
                    self.max_items, list(self.parts), list(self.required), self.min_props,
                    self.max_props, {k: set(v) for k, v in self.deps.items()},
                    set(self.forbidden), dict(self.refuse), self.empty)


#: count keywords under ``not``: keyword → (type it applies to, the accumulator's lower and
#: upper bound attributes)
_NEGATED_COUNTS: dict[str, tuple[str, str, str]] = {
    "minLength": ("string", "min_len", "max_len"),
    "maxLength": ("string", "min_len", "max_len"),
    "minItems": ("array", "min_items", "max_items"),
    "maxItems": ("array", "min_items", "max_items"),
    "minProperties": ("object", "min_props", "max_props"),
    "maxProperties": ("object", "min_props", "max_props"),
}

#: Formats refused in the specification's reading: their automata follow
#: python-jsonschema's checkers, which depart from the RFCs (``email``: any string
#: with ``@``; ``hostname``/``uri``/``date-time``/``time``: a final newline through
#: Python's ``$``, ``hostname``: ASCII labels only; see ``formats.py``).
SPEC_REFUSED = frozenset({"email", "idn-email", "hostname", "idn-hostname", "uri",
                          "date-time", "time"})


def _pattern_dfa(p: str, dialect: str = "python") -> DFA:
    """``pattern`` as an unanchored search (the spec's reading), or a compile error."""
    try:
        return compile_dfa(p, "search", dialect)
    except RegexError as e:
        raise SchemaCompileError(f"pattern: {e}") from None

def _types_and(a: frozenset | None, b: frozenset | None) -> frozenset | None:
    if a is None:
        return b
    if b is None:
        return a
    out = set(a & b)
    if "number" in a and "integer" in b:
        out.add("integer")
    if "integer" in a and "number" in b:
        out.add("integer")
    if "number" in out and not ("number" in a and "number" in b):
        out.discard("number")
    return frozenset(out)


def _json_equal(a: Any, b: Any) -> bool:
    from jsonschema._utils import equal

    return bool(equal(a, b))


def merge(a: Flat, b: Flat) -> Flat:
    """The conjunction of two flat schemas."""
    m = a.copy()
    m.empty = a.empty or b.empty
    m.types = _types_and(a.types, b.types)
    if b.enum is not None:
        m.enum = list(b.enum) if a.enum is None else [v for v in a.enum
                                                      if any(_json_equal(v, w) for w in b.enum)]
    m.min_len = max(a.min_len, b.min_len)
    m.max_len = b.max_len if a.max_len is None else (a.max_len if b.max_len is None
                                                     else min(a.max_len, b.max_len))
    m.patterns = a.patterns + b.patterns
    m.formats = a.formats + b.formats
    m.excluded = a.excluded + b.excluded
    m.neg_patterns = a.neg_patterns + b.neg_patterns
    m.neg_formats = a.neg_formats + b.neg_formats
    m.lower = a.lower + b.lower
    m.upper = a.upper + b.upper
    n = max(len(a.prefix), len(b.prefix))

    def elem(f: Flat, i: int) -> tuple:
        return f.prefix[i] if i < len(f.prefix) else f.rest

    m.prefix = [elem(a, i) + elem(b, i) for i in range(n)]
    m.rest = a.rest + b.rest
    m.min_items = max(a.min_items, b.min_items)
    m.max_items = b.max_items if a.max_items is None else (a.max_items if b.max_items is None
                                                           else min(a.max_items, b.max_items))
    m.parts = a.parts + b.parts
    m.required = a.required + [r for r in b.required if r not in a.required]
    m.min_props = max(a.min_props, b.min_props)
    m.max_props = b.max_props if a.max_props is None else (a.max_props if b.max_props is None
                                                           else min(a.max_props, b.max_props))
    for k, v in b.deps.items():
        m.deps.setdefault(k, set()).update(v)
    m.forbidden |= b.forbidden
    for k, v in b.refuse.items():
        m.refuse.setdefault(k, v)
    return m


# --------------------------------------------------------------------------- disjointness

def _flat_types(f: Flat) -> set:
    if f.enum is not None:
        out = set()
        for v in f.enum:
            out.add(_type_of(v))
        return out
    t = set(f.types) if f.types is not None else set(ALL_TYPES)
    if "number" in t:
        t.add("integer")
    return t


def _type_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _const_values(conj: tuple, comp: "SchemaCompiler") -> list | None:
    """The finite set of values a (property) conjunction allows, if it has one."""
    try:
        alts = comp.flatten(conj)
    except SchemaCompileError:
        return None
    vals: list = []
    for f, _ in alts:
        if f.enum is None:
            return None
        vals.extend(f.enum)
    return vals


def disjoint(a: Flat, b: Flat, comp: "SchemaCompiler") -> bool:
    """True only if no JSON value satisfies both (sound, not complete)."""
    if a.empty or b.empty:
        return True
    ta, tb = _flat_types(a), _flat_types(b)
    common = ta & tb
    if "number" in ta and "integer" in tb or "integer" in ta and "number" in tb:
        common.add("integer")
    if not common:
        return True
    if a.enum is not None and b.enum is not None:
        return not any(_json_equal(x, y) for x in a.enum for y in b.enum)
    # every common type must be separated
    for t in common:
        if t in ("number", "integer"):
            if not _ranges_disjoint(a, b):
                return False
        elif t == "string":
            if not (_len_disjoint(a, b)):
                return False
        elif t == "array":
            if not (a.max_items is not None and b.min_items > a.max_items
                    or b.max_items is not None and a.min_items > b.max_items):
                return False
        elif t == "object":
            if not _objects_disjoint(a, b, comp):
                return False
        else:
            if a.enum is None and b.enum is None:
                return False
            if t == "null" or t == "boolean":
                va = [v for v in (a.enum or []) if _type_of(v) == t] if a.enum is not None else None
                vb = [v for v in (b.enum or []) if _type_of(v) == t] if b.enum is not None else None
                if va is not None and vb is not None and any(_json_equal(x, y) for x in va for y in vb):
                    return False
                if va is None or vb is None:
                    if (va is None and vb) or (vb is None and va):
                        return False
    return True


def _ranges_disjoint(a: Flat, b: Flat) -> bool:
    from fractions import Fraction

    def rng(f: Flat):
        lo = max((Fraction(v), s) for v, s in f.lower) if f.lower else None
        hi = min((Fraction(v), not s) for v, s in f.upper) if f.upper else None
        return lo, hi

    (alo, ahi), (blo, bhi) = rng(a), rng(b)
    for lo, hi in ((alo, bhi), (blo, ahi)):
        if lo is not None and hi is not None:
            if lo[0] > hi[0] or (lo[0] == hi[0] and (lo[1] or not hi[1])):
                return True
    return False


def _len_disjoint(a: Flat, b: Flat) -> bool:
    return (a.max_len is not None and b.min_len > a.max_len) or \
        (b.max_len is not None and a.min_len > b.max_len)


def _objects_disjoint(a: Flat, b: Flat, comp: "SchemaCompiler") -> bool:
    if a.max_props is not None and b.min_props > a.max_props:
        return True
    if b.max_props is not None and a.min_props > b.max_props:
        return True
    # a key present in every instance of one side whose value constraints on the two
    # sides cannot coincide (each side constrains the key whenever it is present)
    for k in list(dict.fromkeys(list(a.required) + list(b.required))):
        ca = tuple(x for p in a.parts for x in _part_conj(p, k))
        cb = tuple(x for p in b.parts for x in _part_conj(p, k))
        if not ca or not cb:
            continue
        va, vb = _const_values(ca, comp), _const_values(cb, comp)
        if va is not None and vb is not None and not any(
                _json_equal(x, y) for x in va for y in vb):
            return True
        try:
            fa, fb = comp.flatten(ca), comp.flatten(cb)
            if all(disjoint(x, y, comp) for x, _ in fa for y, _ in fb):
                return True
        except SchemaCompileError:
            pass
    # a key required by one that the other forbids
    for x, y in ((a, b), (b, a)):
        for k in x.required:
            if k in y.forbidden:
                return True
            for p in y.parts:
                if k not in p.props and not any(re.search(pt, k) for pt, _ in p.patterns) \
                        and p.additional is not None and p.additional[0] is False:
                    return True
    return False


def _part_conj(p: ObjPart, k: str) -> list:
    """The subschemas one object part applies to the value of key ``k``: its
    ``properties`` entry and every matching ``patternProperties`` entry, or else
    ``additionalProperties``."""
    out = [p.props[k]] if k in p.props else []
    out += [ps for pt, ps in p.patterns if re.search(pt, k)]
    if out:
        return out
    return [p.additional] if p.additional is not None else []


# --------------------------------------------------------------------------- compiler

def _cps(s: str) -> list[int]:
    return [ord(c) for c in s]


class SchemaCompiler:
    def __init__(self, schema: Any, options: Options):
        self.root = schema
        self.opt = options
        #: how ``pattern`` regexes are read (see :class:`Options`)
        self.dialect = "ecma" if options.reading == "spec" else "python"
        self.draft = detect_draft(schema)
        self.rules: dict[str, ir.Expr] = {}
        self._rule_of: dict[tuple, str] = {}
        self._names: set[str] = {"root"}
        self._validators: dict = {}
        self.notes: list[str] = []
        self._obj_counter = 0
        import referencing

        spec = _spec(self.draft)
        self.spec = spec
        if isinstance(schema, (dict, bool)):
            resource = spec.create_resource(schema)
        else:
            raise SchemaCompileError(f"a schema must be an object or a boolean, not {type(schema).__name__}")
        self.registry = referencing.Registry(retrieve=_refuse_retrieve)
        self.root_resolver = self.registry.resolver_with_root(resource)
        # whitespace
        o = options
        if o.separators is not None:
            self.ws = ir.EMPTY
            self.item_sep = ir.lit(o.separators[0])
            self.key_sep = ir.lit(o.separators[1])
        elif o.whitespace == "compact":
            self.ws = ir.EMPTY
            self.item_sep = ir.lit(",")
            self.key_sep = ir.lit(":")
        else:
            self.rules["ws"] = ir.rep(ir.byteclass(b" \t\n\r"), 0, o.max_ws)
            self._names.add("ws")
            self.ws = ir.Ref("ws")
            self.item_sep = ir.seq(self.ws, ir.lit(","), self.ws)
            self.key_sep = ir.seq(self.ws, ir.lit(":"), self.ws)

    # ---------------------------------------------------------------- entry
    def compile(self) -> ir.Grammar:
        top = self.rule_for(((self.root, self.root_resolver),), "root_value")
        self.rules["root"] = ir.seq(self.ws, ir.Ref(top), self.ws) if self.opt.separators is None \
            else ir.Ref(top)
        notes = [f"draft {self.draft}; whitespace "
                 + (f"separators {self.opt.separators!r}" if self.opt.separators else
                    self.opt.whitespace + (f" (max {self.opt.max_ws} per gap)"
                                           if self.opt.whitespace == "flexible" else ""))
                 + f"; property order {self.opt.property_order}"
                 + ("" if self.opt.format_assertion else "; format is an annotation")] + self.notes
        order = ["root"] + [n for n in self.rules if n != "root"]
        return ir.Grammar({n: self.rules[n] for n in order}, "root", notes, json_keys=True)

    # ---------------------------------------------------------------- helpers
    def _fresh(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_.-]+", "_", hint)[:60] or "r"
        name = base
        k = 2
        while name in self._names:
            name = f"{base}_{k}"
            k += 1
        self._names.add(name)
        return name

    def _sub(self, resolver, sub: Any):
        if isinstance(sub, dict) and resolver is not None:
            try:
                return resolver.in_subresource(self.spec.create_resource(sub))
            except (AttributeError, TypeError, ValueError) as e:
                # e.g. a draft-4 "id" that is not a string: `referencing` cannot scope it
                ident = sub.get("$id", sub.get("id"))
                raise SchemaCompileError(
                    f"subschema identifier {json.dumps(ident)[:60]} is not a URI string "
                    f"({type(e).__name__}: {e})") from None
        return resolver

    def _resolve(self, resolver, ref: str):
        import referencing.exceptions

        try:
            r = resolver.lookup(ref)
        except referencing.exceptions.Unresolvable as e:
            raise SchemaCompileError(
                f"$ref {ref!r} cannot be resolved within the schema (remote references are "
                f"never fetched): {type(e).__name__}") from None
        except Exception as e:  # malformed pointer etc.
            raise SchemaCompileError(f"$ref {ref!r}: {type(e).__name__}: {e}") from None
        return r.contents, r.resolver

    @staticmethod
    def _key(conj: tuple) -> tuple:
        return tuple((id(s), getattr(r, "_base_uri", None) if r is not None else None)
                     for s, r in conj)

    def rule_for(self, conj: tuple, hint: str) -> str:
        key = self._key(conj)
        name = self._rule_of.get(key)
        if name is not None:
            return name
        name = self._fresh(hint)
        self._rule_of[key] = name
        self.rules[name] = ir.NOTHING  # placeholder (recursion)
        self.rules[name] = self.value(conj, name)
        return name

    # ---------------------------------------------------------------- values
    def value(self, conj: tuple, name: str) -> ir.Expr:
        # a pure alias ($ref alone) becomes a reference: recursion without unrolling
        if len(conj) == 1:
            s, r = conj[0]
            if isinstance(s, dict) and "$ref" in s and self._only_ref(s):
                t, tr = self._resolve(r, s["$ref"])
                hint = s["$ref"].rsplit("/", 1)[-1] or "ref"
                return ir.Ref(self.rule_for(((t, tr),), hint))
        alts = self.flatten(conj)
        exprs = [self.compile_flat(f, elems, name) for f, elems in alts]
        return ir.alt(*exprs)

    def _only_ref(self, s: dict) -> bool:
        if self.draft in (D4, D6, D7):
            return True
        validated = VALIDATED[self.draft]
        return all(k == "$ref" or k not in validated for k in s)

    # ---------------------------------------------------------------- flatten
    def flatten(self, conj: tuple) -> list[tuple[Flat, tuple]]:
        """Disjunctive normal form: a list of (Flat, schemas applied)."""
        return self._flatten(conj, ())

    def _flatten(self, conj: tuple, visiting: tuple) -> list[tuple[Flat, tuple]]:
        acc = Flat()
        elems: list = []
        groups: list = []
        queue = list(conj)
        seen_refs: set = set()
        while queue:
            s, r = queue.pop(0)
            if s is True:
                continue
            if s is False:
                return []
            if not isinstance(s, dict):
                raise SchemaCompileError(f"a subschema must be an object or a boolean, not {s!r}"[:200])
            elems.append((s, r))
            validated = VALIDATED[self.draft]
            if "$ref" in s and "$ref" in validated:
                ref = s["$ref"]
                if not isinstance(ref, str):
                    raise SchemaCompileError("$ref must be a string")
                t, tr = self._resolve(r, ref)
                k = (id(t), getattr(tr, "_base_uri", None))
                if k in visiting:
                    raise SchemaCompileError(
                        f"$ref {ref!r} is recursive through anyOf/oneOf together with other "
                        "keywords (merging a schema into itself has no finite form)")
                if k not in seen_refs:  # A and A is A
                    seen_refs.add(k)
                    queue.append((t, tr))
                if self.draft in (D4, D6, D7):
                    continue  # siblings of $ref are ignored before 2019-09
            self._apply(s, r, acc, queue, groups)
        alts = [(acc, tuple(elems))]
        vis = tuple(visiting) + tuple(seen_refs) + tuple(
            (id(x), getattr(y, "_base_uri", None)) for x, y in conj)
        for kind, branches in groups:
            branch_alts = []
            for b in branches:
                ba = []
                for f, el in alts:
                    for bf, bel in self._flatten((b,), vis):
                        ba.append((merge(f, bf), el + bel))
                branch_alts.append(ba)
            if kind == "oneOf" and not all(f.enum is not None for ba in branch_alts for f, _ in ba):
                for i in range(len(branch_alts)):
                    for j in range(i + 1, len(branch_alts)):
                        for fa, _ in branch_alts[i]:
                            for fb, _ in branch_alts[j]:
                                if not disjoint(fa, fb, self):
                                    raise SchemaCompileError(
                                        f"oneOf: branches {i} and {j} are not provably disjoint "
                                        "(exactly-one cannot be enforced)")
            alts = [x for ba in branch_alts for x in ba]
            if len(alts) > self.opt.max_alternatives:
                raise SchemaCompileError(
                    f"anyOf/oneOf/allOf expand to more than {self.opt.max_alternatives} alternatives")
        return [(f, el) for f, el in alts if not f.empty]

    def _apply(self, s: dict, r, acc: Flat, queue: list, groups: list) -> None:
        validated = VALIDATED[self.draft]
        draft = self.draft
        disputed = DISPUTED.get(draft, {})
        for k, v in s.items():
            if k not in validated or k == "$ref":
                if k in disputed and not _trivial_disputed(k, v):
                    acc.refuse.setdefault(disputed[k], f"{k} in a {draft} schema (jsonschema "
                                          "ignores it, other readings enforce it)")
                continue
            if k in REFUSED:
                self._refuse_keyword(k, v, s, acc)
                continue
            if k == "type":
                ts = [v] if isinstance(v, str) else v
                if not isinstance(ts, list) or not all(isinstance(t, str) for t in ts):
                    raise SchemaCompileError(f"type must be a string or a list of strings, not {v!r}")
                bad = [t for t in ts if t not in _TYPES]
                if bad:
                    raise SchemaCompileError(f"unknown type {bad[0]!r}")
                acc.types = _types_and(acc.types, frozenset(ts))
            elif k == "enum":
                if not isinstance(v, list):
                    raise SchemaCompileError("enum must be an array")
                acc.enum = list(v) if acc.enum is None else [x for x in acc.enum
                                                             if any(_json_equal(x, y) for y in v)]
            elif k == "const":
                acc.enum = [v] if acc.enum is None else [x for x in acc.enum if _json_equal(x, v)]
            elif k == "minLength":
                acc.min_len = max(acc.min_len, math.ceil(self._num(k, v)))
            elif k == "maxLength":
                m = math.floor(self._num(k, v))
                acc.max_len = m if acc.max_len is None else min(acc.max_len, m)
            elif k == "pattern":
                if not isinstance(v, str):
                    raise SchemaCompileError("pattern must be a string")
                acc.patterns += (v,)
            elif k == "format":
                if isinstance(v, str) and v in CHECKED[draft] and self.opt.format_assertion:
                    if self.opt.reading == "spec" and v in SPEC_REFUSED:
                        acc.refuse.setdefault("string", f"format {v!r} in the specification's "
                                              "reading (the automaton follows python-jsonschema's "
                                              "checker, which departs from the RFC)")
                    elif format_variants(v) is None:
                        acc.refuse.setdefault("string", f"format {v!r} is not supported")
                    else:
                        acc.formats += (v,)
            elif k in ("minimum", "maximum"):
                x = self._num(k, v)
                strict = False
                if draft == D4:
                    strict = bool(s.get("exclusiveMinimum" if k == "minimum" else "exclusiveMaximum",
                                        False))
                (acc.lower if k == "minimum" else acc.upper).append((x, strict))
            elif k in ("exclusiveMinimum", "exclusiveMaximum"):
                x = int(v) if isinstance(v, bool) else self._num(k, v)  # jsonschema compares bools as ints
                (acc.lower if k == "exclusiveMinimum" else acc.upper).append((x, True))
            elif k == "minItems":
                acc.min_items = max(acc.min_items, math.ceil(self._num(k, v)))
            elif k == "maxItems":
                m = math.floor(self._num(k, v))
                acc.max_items = m if acc.max_items is None else min(acc.max_items, m)
            elif k == "uniqueItems":
                if v is True:
                    acc.refuse.setdefault("array:unique", "uniqueItems")
            elif k in ("items", "prefixItems", "additionalItems"):
                pass  # handled together below
            elif k in ("properties", "patternProperties", "additionalProperties"):
                pass  # handled together below
            elif k == "required":
                if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                    raise SchemaCompileError("required must be an array of strings")
                acc.required += [x for x in v if x not in acc.required]
            elif k in ("minProperties", "maxProperties"):
                x = self._num(k, v)
                if k == "minProperties":
                    acc.min_props = max(acc.min_props, math.ceil(x))
                else:
                    m = math.floor(x)
                    acc.max_props = m if acc.max_props is None else min(acc.max_props, m)
            elif k in ("dependencies", "dependentRequired"):
                if not isinstance(v, dict):
                    raise SchemaCompileError(f"{k} must be an object")
                for name, dep in v.items():
                    if isinstance(dep, list) and all(isinstance(x, str) for x in dep):
                        acc.deps.setdefault(name, set()).update(dep)
                    elif dep is True or dep == {}:
                        continue
                    else:
                        acc.refuse.setdefault("object", f"{k} with a schema (property {name!r})")
            elif k == "allOf":
                self._list_of_schemas(k, v)
                queue.extend((b, self._sub(r, b)) for b in v)
            elif k in ("anyOf", "oneOf"):
                self._list_of_schemas(k, v)
                groups.append((k, [(b, self._sub(r, b)) for b in v]))
            elif k == "not":
                self._not(v, r, acc, groups, queue)
            else:  # pragma: no cover - every validated keyword is listed above
                raise SchemaCompileError(f"keyword {k!r} is not supported")
        # arrays
        items = s.get("items") if "items" in validated else None
        if draft == D2020:
            pre = s.get("prefixItems")
            if pre is not None:
                self._list_of_schemas("prefixItems", pre)
                self._prefix(acc, [((b, self._sub(r, b)),) for b in pre])
            if "items" in s:
                if isinstance(items, list):
                    raise SchemaCompileError("items must be a schema in draft 2020-12 (array form)")
                self._rest(acc, ((items, self._sub(r, items)),), len(pre or ()))
        elif "items" in s:
            if isinstance(items, list):
                self._list_of_schemas("items", items)
                self._prefix(acc, [((b, self._sub(r, b)),) for b in items])
                if "additionalItems" in s:
                    ai = s["additionalItems"]
                    self._rest(acc, ((ai, self._sub(r, ai)),), len(items))
            else:
                self._rest(acc, ((items, self._sub(r, items)),), 0)
        # objects
        if any(k in s for k in ("properties", "patternProperties", "additionalProperties")):
            props = s.get("properties", {})
            pats = s.get("patternProperties", {})
            if not isinstance(props, dict) or not isinstance(pats, dict):
                raise SchemaCompileError("properties/patternProperties must be objects")
            for p in pats:
                try:
                    compile_dfa(p, "search", self.dialect)
                except RegexError as e:
                    acc.refuse.setdefault("object", f"patternProperties {e}")
            add = s.get("additionalProperties")
            acc.parts.append(ObjPart(
                {n: (x, self._sub(r, x)) for n, x in props.items()},
                [(p, (x, self._sub(r, x))) for p, x in pats.items()],
                None if "additionalProperties" not in s else (add, self._sub(r, add))))

    def _prefix(self, acc: Flat, conjs: list) -> None:
        n = max(len(acc.prefix), len(conjs))
        old = acc.prefix
        acc.prefix = [((old[i] if i < len(old) else acc.rest) + (conjs[i] if i < len(conjs) else ()))
                      for i in range(n)]

    def _rest(self, acc: Flat, conj: tuple, start: int) -> None:
        # positions >= start get conj; extend the prefix so that positions below keep theirs
        while len(acc.prefix) < start:
            acc.prefix.append(acc.rest)
        acc.prefix = [c + conj if i >= start else c for i, c in enumerate(acc.prefix)]
        acc.rest = acc.rest + conj

    def _list_of_schemas(self, k: str, v: Any) -> None:
        if not isinstance(v, list) or not v:
            raise SchemaCompileError(f"{k} must be a non-empty array of schemas")

    def _num(self, k: str, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SchemaCompileError(f"{k} must be a number, not {v!r}")
        if isinstance(v, float) and not math.isfinite(v):
            raise SchemaCompileError(f"{k} is not finite")
        return v

    def _refuse_keyword(self, k: str, v: Any, s: dict, acc: Flat) -> None:
        if k == "multipleOf":
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                acc.refuse.setdefault("number", "multipleOf")
                acc.refuse.setdefault("integer", "multipleOf")
                return
        if k == "contains":
            acc.refuse.setdefault("array:any", "contains")
            return
        if k == "propertyNames":
            if v is True or v == {}:
                return
            acc.refuse.setdefault("object:any", "propertyNames")
            return
        if k == "dependentSchemas":
            if isinstance(v, dict) and all(x is True or x == {} for x in v.values()):
                return
            acc.refuse.setdefault("object:any", "dependentSchemas")
            return
        if k in ("unevaluatedProperties",):
            if v is True or v == {}:
                return
            acc.refuse.setdefault("object:any", k)
            return
        if k in ("unevaluatedItems",):
            if v is True or v == {}:
                return
            acc.refuse.setdefault("array:any", k)
            return
        acc.refuse.setdefault("*", f"keyword {k!r} is not supported (cannot be enforced exactly)")

    #: keywords whose negations are handled one at a time (a schema is the conjunction
    #: of its keywords, so not(k1 and k2) = not k1 or not k2, as long as the keywords
    #: do not interact: properties/patternProperties/additionalProperties or
    #: items/additionalItems are never split)
    _NEGATABLE = {"type", "enum", "const", "pattern", "minLength", "maxLength", "minimum",
                  "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems",
                  "required", "minProperties", "maxProperties", "not", "anyOf", "allOf",
                  "$ref", "format"}

    def _not(self, v: Any, r, acc: Flat, groups: list, queue: list) -> None:
        """``not``: pushed down (negation normal form) where the negation of each
        keyword is a constraint this compiler has; otherwise a refusal recorded on the
        flat schema (raised only if a type it concerns is compiled without ``enum``)."""
        if v is False:
            return
        if v is True or v == {}:
            acc.empty = True
            return
        if not isinstance(v, dict):
            raise SchemaCompileError("not must be a schema")
        validated = VALIDATED[self.draft]
        disputed = [k for k in DISPUTED.get(self.draft, {})
                    if k in v and not _trivial_disputed(k, v[k])
                    and not ("$ref" in v and self.draft in (D4, D6, D7))]
        if disputed:  # its negation depends on the reading too
            acc.refuse.setdefault("*", f"not: {disputed[0]} in a {self.draft} schema (jsonschema "
                                  "ignores it, other readings enforce it)")
            return
        if "$ref" in v and self.draft in (D4, D6, D7):
            keys = {"$ref"}
        else:
            keys = {k for k in v if k in validated}
        if not keys:
            acc.empty = True
            return
        if self.draft == D4 and keys & {"minimum", "maximum"}:
            keys -= {"exclusiveMinimum", "exclusiveMaximum"}
        if len(keys) > 1:
            if keys <= self._NEGATABLE:
                branches = []
                for k in sorted(keys):
                    one = {k: v[k]}
                    if self.draft == D4 and k in ("minimum", "maximum"):
                        ex = "exclusiveMinimum" if k == "minimum" else "exclusiveMaximum"
                        if ex in v:
                            one[ex] = v[ex]
                    branches.append(({"not": one}, r))
                groups.append(("anyOf", branches))
            else:
                acc.refuse.setdefault("*", "not: " + ", ".join(sorted(keys - self._NEGATABLE))
                                      + " cannot be negated exactly")
            return
        (k,) = keys
        x = v[k]
        if k == "not":
            queue.append((x, self._sub(r, x)))
        elif k == "anyOf" and isinstance(x, list) and x:
            queue.extend(({"not": b}, r) for b in x)
        elif k == "allOf" and isinstance(x, list) and x:
            groups.append(("anyOf", [({"not": b}, r) for b in x]))
        elif k == "$ref" and isinstance(x, str):
            t, tr = self._resolve(r, x)
            depth = getattr(self, "_not_depth", 0)
            if depth > 20:
                acc.refuse.setdefault("*", "not: recursive $ref")
                return
            self._not_depth = depth + 1
            try:
                self._not(t, tr, acc, groups, queue)
            finally:
                self._not_depth = depth
        elif k == "type":
            ts = [x] if isinstance(x, str) else x
            if not isinstance(ts, list) or any(t not in _TYPES for t in ts):
                raise SchemaCompileError(f"not: bad type {x!r}")
            remove = set(ts)
            if "integer" in remove and "number" not in remove:
                acc.refuse.setdefault("number", "not: {type: integer} (non-integral numbers)")
                remove.discard("integer")
            keep = frozenset(t for t in ALL_TYPES if t not in remove
                             and not (t == "integer" and "number" in remove))
            acc.types = _types_and(acc.types, keep)
        elif k in ("enum", "const"):
            vals = x if k == "enum" else [x]
            if not isinstance(vals, list):
                raise SchemaCompileError("not: enum must be an array")
            for y in vals:
                if isinstance(y, (dict, list)):
                    acc.refuse.setdefault("object" if isinstance(y, dict) else "array",
                                          "not: enum/const with arrays or objects")
                elif isinstance(y, (int, float)) and not isinstance(y, bool):
                    acc.refuse.setdefault("number", "not: enum/const with numbers")
                    acc.refuse.setdefault("integer", "not: enum/const with numbers")
            acc.excluded += tuple(vals)
        elif k == "required" and isinstance(x, list) and x and all(isinstance(y, str) for y in x):
            # {required: [...]} holds for every non-object: its negation is an object
            # missing one of the keys
            acc.types = _types_and(acc.types, frozenset(["object"]))
            req = list(dict.fromkeys(x))
            if len(req) == 1:
                acc.forbidden.add(req[0])
            else:
                groups.append(("anyOf", [({"not": {"required": [y]}}, r) for y in req]))
        elif k == "pattern" and isinstance(x, str):
            acc.types = _types_and(acc.types, frozenset(["string"]))
            acc.neg_patterns += (x,)
        elif k == "format" and isinstance(x, str):
            if x not in CHECKED[self.draft] or not self.opt.format_assertion:
                acc.empty = True  # an unchecked format holds for everything
                return
            fv = format_variants(x)
            acc.types = _types_and(acc.types, frozenset(["string"]))
            if (fv is None or len(fv) != 1 or fv[0][1] or fv[0][2] is not None
                    or (self.opt.reading == "spec" and x in SPEC_REFUSED)):
                acc.refuse.setdefault("string", f"not: format {x!r}")
            else:
                acc.neg_formats += (x,)
        elif k in _NEGATED_COUNTS:
            typ, lo_attr, hi_attr = _NEGATED_COUNTS[k]
            n = self._num(k, x)
            acc.types = _types_and(acc.types, frozenset([typ]))
            if k.startswith("min"):  # not (count >= n)  <=>  count <= ceil(n) - 1
                m = math.ceil(n) - 1
                cur = getattr(acc, hi_attr)
                setattr(acc, hi_attr, m if cur is None else min(cur, m))
            else:  # not (count <= n)  <=>  count >= floor(n) + 1
                setattr(acc, lo_attr, max(getattr(acc, lo_attr), math.floor(n) + 1))
        elif k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            acc.types = _types_and(acc.types, frozenset(["number"]))
            if k in ("minimum", "maximum"):
                n = self._num(k, x)
                strict = bool(v.get("exclusiveMinimum" if k == "minimum" else "exclusiveMaximum",
                                    False)) if self.draft == D4 else False
            else:
                n = int(x) if isinstance(x, bool) else self._num(k, x)
                strict = True
            # not (x >= n) is x < n; not (x > n) is x <= n, and so on
            if k in ("minimum", "exclusiveMinimum"):
                acc.upper.append((n, not strict))
            else:
                acc.lower.append((n, not strict))
        else:
            acc.refuse.setdefault("*", f"not: {k} cannot be negated exactly")

    # ---------------------------------------------------------------- compile
    def compile_flat(self, f: Flat, elems: tuple, name: str) -> ir.Expr:
        if f.enum is not None:
            return self._enum(f.enum, elems, name)
        types = list(f.types) if f.types is not None else list(ALL_TYPES)
        types = [t for t in ALL_TYPES if t in types]
        if "number" in types and "integer" in types:
            types.remove("integer")
        parts = []
        if types and "*" in f.refuse:
            raise SchemaCompileError(f.refuse["*"])
        for t in types:
            for key in (t, t + ":any"):
                if key in f.refuse:
                    raise SchemaCompileError(f.refuse[key])
            if t == "null":
                parts.append(ir.NOTHING if None in f.excluded else ir.lit("null"))
            elif t == "boolean":
                parts.append(ir.alt(*(ir.lit(x) for x, b in (("true", True), ("false", False))
                                      if not any(e is b for e in f.excluded))))
            elif t == "integer":
                try:
                    parts.append(num.integer_type(f.lower, f.upper, self.draft != D4))
                except num.NumberError as e:
                    raise SchemaCompileError(str(e)) from None
            elif t == "number":
                parts.append(self._number(f))
            elif t == "string":
                parts.append(self._string(f, name))
            elif t == "array":
                parts.append(self._array(f, name))
            elif t == "object":
                parts.append(self._object(f, name))
        return ir.alt(*parts)

    def _number(self, f: Flat) -> ir.Expr:
        try:
            return num.number_type(f.lower, f.upper)
        except num.NumberError as e:
            raise SchemaCompileError(str(e)) from None

    # strings
    #: total automaton states the string constraints of one schema may build
    STRING_BUDGET = 400_000

    def _string_dfa(self, f: Flat) -> list[tuple[DFA, int, int | None, str]]:
        key = (f.patterns, f.neg_patterns, f.formats, f.neg_formats,
               tuple(x for x in f.excluded if isinstance(x, str)), f.min_len, f.max_len)
        memo = self.__dict__.setdefault("_string_memo", {})
        got = memo.get(key)
        if got is None:
            got = memo[key] = self._string_dfa_build(f)
            spent = self.__dict__.get("_string_spent", 0) + sum(d.n for d, *_ in got)
            self._string_spent = spent
            if spent > self.STRING_BUDGET:
                raise SchemaCompileError("string constraints (pattern/format/not) too large "
                                         "to intersect exactly")
        return got

    def _string_dfa_build(self, f: Flat) -> list[tuple[DFA, int, int | None, str]]:
        try:
            dfa = DFA.universal()
            label = []
            for p in f.patterns:
                dfa = dfa.intersect(_pattern_dfa(p, self.dialect))
                label.append(f"/{p}/")
            for p in f.neg_patterns:
                dfa = dfa.minus(_pattern_dfa(p, self.dialect))
                label.append(f"not /{p}/")
            for fmt in f.neg_formats:
                dfa = dfa.minus(format_variants(fmt)[0][0])
                label.append(f"not format {fmt}")
            strs = [x for x in f.excluded if isinstance(x, str)]
            if strs:
                dfa = dfa.minus(DFA.strings(_cps(x) for x in strs))
                label.append("not " + "|".join(json.dumps(x) for x in strs[:5]))
            variants = [(dfa, f.min_len, f.max_len)]
            for fmt in f.formats:
                fv = format_variants(fmt)
                new = []
                for d, lo, hi in variants:
                    for fd, flo, fhi in fv:
                        nd = d.intersect(fd)
                        nhi = hi if fhi is None else (fhi if hi is None else min(hi, fhi))
                        new.append((nd, max(lo, flo), nhi))
                variants = new
                label.append(f"format {fmt}")
        except TooLarge as e:
            raise SchemaCompileError(f"string constraints too large for an exact automaton ({e})") from None
        text = " & ".join(label) if label else "any"
        return [(d, lo, hi, text) for d, lo, hi in variants]

    def _string(self, f: Flat, name: str) -> ir.Expr:
        out = []
        for d, lo, hi, text in self._string_dfa(f):
            if hi is not None and hi < lo:
                continue
            out.append(ir.seq(ir.lit('"'), ir.Automaton(d, "json", text, lo, hi), ir.lit('"')))
        return ir.alt(*out)

    # arrays
    def _array(self, f: Flat, name: str) -> ir.Expr:
        m, mx = f.min_items, f.max_items
        if "array:unique" in f.refuse and (mx is None or mx >= 2):
            raise SchemaCompileError("uniqueItems: true is not supported")
        k = len(f.prefix)

        def elem(i: int) -> ir.Expr:
            conj = f.prefix[i] if i < k else f.rest
            return ir.Ref(self.rule_for(conj, f"{name}.item{i if i < k else ''}"))

        if mx is not None and mx < m:
            return ir.NOTHING
        n0 = max(k, m)
        limit = mx
        if limit is not None and limit - n0 > 1000:
            raise SchemaCompileError(f"maxItems {mx} too large to expand exactly")
        if n0 > 1000:
            raise SchemaCompileError(f"minItems/prefixItems {n0} too large to expand exactly")
        sep = self.item_sep
        # T(i): what may follow once i >= 1 elements are written
        start = max(n0, 1)
        if limit is None:
            cont = ir.star(ir.seq(sep, elem(start)))
        else:
            cont = ir.rep(ir.seq(sep, elem(start)), 0, limit - start) if limit > start else ir.EMPTY
        for i in range(start - 1, 0, -1):
            if limit is not None and i >= limit:
                cont = ir.EMPTY
                continue
            step = ir.seq(sep, elem(i), cont)
            cont = ir.alt(ir.EMPTY, step) if i >= m else step
        ws = self.ws
        first = ir.seq(elem(0), cont) if (limit is None or limit >= 1) else ir.NOTHING
        nonempty = ir.seq(ir.lit("["), ws, first, ws, ir.lit("]"))
        empty = ir.seq(ir.lit("["), ws, ir.lit("]")) if m == 0 else ir.NOTHING
        return ir.alt(empty, nonempty)

    # objects
    def _object(self, f: Flat, name: str) -> ir.Expr:
        rule = self._fresh(f"{name}.object")
        self.rules[rule] = ir.NOTHING  # placeholder: keeps the object before its members
        names: list[str] = []
        for p in f.parts:
            for k in p.props:
                if k not in names:
                    names.append(k)
        for k in f.required:
            if k not in names:
                names.append(k)
        for k, deps in f.deps.items():
            for x in [k, *sorted(deps)]:
                if x not in names:
                    names.append(x)
        if f.deps and (f.min_props or f.max_props is not None):
            raise SchemaCompileError("dependencies together with min/maxProperties are not supported")
        members = []
        for k in names:
            conj = tuple(x for p in f.parts for x in _part_conj(p, k))
            if k in f.forbidden:
                value = ir.NOTHING
            else:
                value = ir.Ref(self.rule_for(conj, f"{name}.{k}"))
            key = ir.seq(ir.lit('"'), ir.Automaton(DFA.literal(_cps(k)), "json", json.dumps(k)),
                         ir.lit('"'))
            members.append(ir.Member(k, key, value, k in f.required))
        extras = self._extras(f, names, name)
        index = {k: i for i, k in enumerate(names)}
        dep = tuple((index[k], tuple(sorted(index[x] for x in deps if x != k)))
                    for k, deps in f.deps.items())
        body = ir.ObjectBody(tuple(members), tuple(extras), self.ws, self.item_sep, self.key_sep,
                             f.min_props, f.max_props, self.opt.property_order == "declared", dep)
        self.rules[rule] = ir.seq(ir.lit("{"), body, ir.lit("}"))
        return ir.Ref(rule)

    def _extras(self, f: Flat, names: list[str], name: str) -> list:
        known = DFA.strings(_cps(k) for k in names) if names else DFA.empty()
        pats: list[str] = []
        for p in f.parts:
            for pt, _ in p.patterns:
                if pt not in pats:
                    pats.append(pt)
        if len(pats) > 4:
            raise SchemaCompileError(f"patternProperties with {len(pats)} patterns (more than 4 "
                                     "would need too many key regions)")
        extras = []
        try:
            not_known = known.complement()
            pdfa = [compile_dfa(pt, "search", self.dialect) for pt in pats]
            for mask in range(1 << len(pats)):
                d = not_known
                for i, pd in enumerate(pdfa):
                    d = d.intersect(pd) if mask >> i & 1 else d.minus(pd)
                    if d.is_empty():
                        break
                if d.is_empty():
                    continue
                inside = {pats[i] for i in range(len(pats)) if mask >> i & 1}
                conj: list = []
                for p in f.parts:
                    matched = [ps for pt, ps in p.patterns if pt in inside]
                    if matched:
                        conj.extend(matched)
                    elif p.additional is not None:
                        conj.append(p.additional)
                conj_t = tuple(conj)
                if any(s is False for s, _ in conj_t):
                    continue
                forb = [k for k in f.forbidden if k not in names]
                if forb:
                    d = d.minus(DFA.strings(_cps(k) for k in forb))
                label = "key " + ("not " + "|".join(json.dumps(k) for k in names[:4])
                                  + ("|..." if len(names) > 4 else "") if names else "any")
                if inside:
                    label += " & " + " & ".join(f"/{p}/" for p in sorted(inside))
                hint = f"{name}.additional" if not inside else f"{name}.pattern"
                value = ir.Ref(self.rule_for(conj_t, hint))
                key = ir.seq(ir.lit('"'), ir.Automaton(d, "json", label), ir.lit('"'))
                extras.append(ir.Extra(key, value, "additional" if not inside else "pattern"))
        except (TooLarge, RegexError) as e:
            raise SchemaCompileError(f"patternProperties/additionalProperties: {e}") from None
        return extras

    # enum
    def _has_pattern(self) -> bool:
        got = self.__dict__.get("_pattern_seen")
        if got is None:
            got = self._pattern_seen = '"pattern' in json.dumps(self.root)
        return got

    def _validator(self, s: Any, r):
        import jsonschema
        from jsonschema.validators import validator_for

        cls = self._validators.get("cls")
        if cls is None:
            cls = validator_for(self.root if isinstance(self.root, dict) else {},
                                default=jsonschema.Draft202012Validator)
            root = cls(self.root, registry=self.registry,
                       format_checker=cls.FORMAT_CHECKER if self.opt.format_assertion else None)
            self._validators["cls"] = cls
            self._validators["root"] = root
        root = self._validators["root"]
        return root.evolve(schema=s, _resolver=r if r is not None else root._resolver)

    def _valid(self, value: Any, elems: tuple) -> bool:
        """Does ``value`` (drawn from the alternative's enum/const intersection, or equal
        to such a value) satisfy every schema of the alternative? The schemas' own
        top-level ``enum``/``const`` hold by construction and are skipped (a long enum
        would otherwise make this quadratic)."""
        strip = self.__dict__.setdefault("_strip_memo", {})
        if self.opt.reading == "spec" and self._has_pattern():
            # the filter is python-jsonschema, whose regexes are Python's, not ECMA-262
            raise SchemaCompileError("enum/const beside a pattern in the specification's "
                                     "reading (values are checked with Python's re)")
        try:
            for s, r in elems:
                if s is True:
                    continue
                if s is False:
                    return False
                key = (id(s), id(r))
                v = strip.get(key)
                if v is None:
                    body = {k: x for k, x in s.items() if k not in ("enum", "const")} \
                        if isinstance(s, dict) else s
                    v = strip[key] = (self._validator(body, r), body, s)
                if not v[0].is_valid(value):
                    return False
            return True
        except RecursionError:
            raise SchemaCompileError("enum/const: jsonschema recursion limit while checking values") from None
        except SchemaCompileError:
            raise
        except Exception as e:
            raise SchemaCompileError(f"enum/const: cannot check values ({type(e).__name__}: {e})"[:300]) from None

    def _enum(self, values: list, elems: tuple, name: str) -> ir.Expr:
        parts = []
        for v in values:
            if not self._valid(v, elems):
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                allow_int = self._valid(int(v), elems) if float(v).is_integer() else False
                allow_float = self._valid(float(v), elems) if _float_exact(v) else False
                parts.append(num.number_equal(v, allow_int, allow_float))
            else:
                nested_int = self._valid(_retype(v, int), elems)
                nested_float = self._valid(_retype(v, float), elems)
                parts.append(self._spell(v, name, nested_int, nested_float))
        return ir.alt(*parts)

    def _spell(self, v: Any, name: str, nint: bool, nfloat: bool) -> ir.Expr:
        if v is None:
            return ir.lit("null")
        if v is True:
            return ir.lit("true")
        if v is False:
            return ir.lit("false")
        if isinstance(v, (int, float)):
            integral = float(v).is_integer() if math.isfinite(float(v)) else False
            allow_int = isinstance(v, int) or (integral and nint)
            allow_float = isinstance(v, float) or (nfloat and _float_exact(v))
            return num.number_equal(v, allow_int, allow_float)
        if isinstance(v, str):
            return ir.seq(ir.lit('"'), ir.Automaton(DFA.literal(_cps(v)), "json", json.dumps(v)),
                          ir.lit('"'))
        ws = self.ws
        if isinstance(v, list):
            if not v:
                return ir.seq(ir.lit("["), ws, ir.lit("]"))
            items = [self._spell(x, name, nint, nfloat) for x in v]
            body = [items[0]]
            for x in items[1:]:
                body += [self.item_sep, x]
            return ir.seq(ir.lit("["), ws, *body, ws, ir.lit("]"))
        if isinstance(v, dict):
            members = []
            for k, x in v.items():
                key = ir.seq(ir.lit('"'), ir.Automaton(DFA.literal(_cps(k)), "json", json.dumps(k)),
                             ir.lit('"'))
                members.append(ir.Member(k, key, self._spell(x, name, nint, nfloat), True))
            body = ir.ObjectBody(tuple(members), (), ws, self.item_sep, self.key_sep, 0, None,
                                 self.opt.property_order == "declared", ())
            self._obj_counter += 1
            rule = self._fresh(f"{name}.const{self._obj_counter}")
            self.rules[rule] = ir.seq(ir.lit("{"), body, ir.lit("}"))
            return ir.Ref(rule)
        raise SchemaCompileError(f"enum/const value of unsupported type {type(v).__name__}")


def _trivial_disputed(k: str, v: Any) -> bool:
    """A disputed keyword whose value constrains nothing under any reading."""
    if k == "dependencies":
        return isinstance(v, dict) and all(x is True or x == {} or x == [] for x in v.values())
    return False


def _float_exact(v) -> bool:
    try:
        f = float(v)
    except OverflowError:
        return False
    return math.isfinite(f) and (isinstance(v, float) or f == v)


def _retype(v: Any, kind) -> Any:
    """``v`` with every nested integral number converted to ``kind`` (int or float)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        if kind is int and isinstance(v, float) and v.is_integer():
            return int(v)
        if kind is float and isinstance(v, int) and _float_exact(v):
            return float(v)
        return v
    if isinstance(v, list):
        return [_retype(x, kind) for x in v]
    if isinstance(v, dict):
        return {k: _retype(x, kind) for k, x in v.items()}
    return v


def compile_schema(schema: Any, **options: Any) -> ir.Grammar:
    """Compile a JSON schema (a parsed object, or JSON text) to a grammar.

    Raises :class:`SchemaCompileError` (one-line message naming the cause)."""
    if isinstance(schema, (str, bytes)):
        try:
            schema = json.loads(schema)
        except ValueError as e:
            raise SchemaCompileError(f"schema is not valid JSON: {e}") from None
    opts = Options(**options)
    try:
        with state_budget(COMPILE_BUDGET):
            return SchemaCompiler(schema, opts).compile()
    except RecursionError:
        raise SchemaCompileError("schema nesting too deep") from None
    except TooLarge as e:
        raise SchemaCompileError(f"automaton too large: {e}") from None
