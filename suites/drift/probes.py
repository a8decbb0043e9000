"""The drift catalogue: probes written for this harness, each a schema, an exact JSON text,
the verdict the specification gives, and the semantic axis it probes.

A probe's instance is a *text*, not a value: whitespace, key order, duplicate keys, number
forms and escapes only exist in the bytes. The harness replays that exact text (serialisation
name ``text``) and computes ground truth on ``json.loads(text)`` (strict: no NaN/Infinity, no
raw control characters, duplicate keys detected; see :mod:`harness.measure.groundtruth`).

Verdicts ("valid" = the spec accepts the text as an instance of the schema):

- JSON Schema Draft 2020-12 semantics (schemas carry no ``$schema``), the JSON grammar of
  RFC 8259, and **format as an assertion** (``format`` is only an annotation by default in
  2020-12; the harness, like JSONSchemaBench, validates with format checking, so "looser" on
  the ``format`` axis means "does not enforce format").
- A text that is not JSON (leading zeros, ``+1``, ``NaN``, raw control characters in strings,
  bad escapes, non-JSON whitespace) is invalid.
- **Duplicate keys** (``{"a": 1, "a": 2}``): JSON Schema's data model has no such object
  ("behavior ... is undefined", Core 2020-12 §4.2.3) and RFC 8259 says names SHOULD be unique
  (I-JSON, RFC 7493: MUST). Our verdict: **invalid** — a constrained decoder should never emit
  a document whose meaning depends on the parser. jsonschema cannot decide (Python keeps the
  last value), so for these probes the catalogue's verdict is the expected one.
- Whitespace around the whole document (``' {"a": 1}\n'``) is valid JSON text but left out:
  every engine tested refuses it and a model never needs it, so it would only make every
  engine "stricter" on ``whitespace`` and hide the differences that matter.
- A lone surrogate escape (``"\\ud800"``) is left out on purpose: RFC 8259's ABNF allows it,
  its meaning is "unpredictable" (§8.2), so no verdict would be uncontroversial.

Axes (the rows of ``drift.json``):

==========================  ===============================================================
``additional_properties``   undeclared properties: allowed by default, forbidden by ``false``
``whitespace``              none, spaces, newlines, tabs, CRLF, indentation, long runs inside
                            the document; non-JSON whitespace (NBSP, form feed) invalid
``property_order``          keys in any order are valid; required keys still required
``pattern_anchoring``       ``pattern`` / ``patternProperties`` are unanchored (ECMA-262 search)
``format``                  date, date-time, time, email, ipv4, ipv6, uuid, uri; unknown formats
``ignored_keywords``        minItems/maxItems, minLength/maxLength, if/then/else, not,
                            dependentRequired, uniqueItems, min/maxProperties, multipleOf,
                            exclusiveMinimum, contains, unknown keywords (ignored by the spec)
``number_forms``            leading zeros, exponents, -0, 1.0 and 1e2 as integers, +1, .5, NaN
``string_escapes``          \\uXXXX, surrogate pairs, escaped vs raw control characters, bad
                            escapes, escapes in keys, escapes under maxLength / pattern
``duplicate_keys``          duplicate object keys (invalid, see above)
``one_of_overlap``          oneOf with overlapping branches (exactly one must match)
``recursive_ref``           recursive ``$ref`` nested beyond depth 3
``remote_ref``              ``$ref`` to another document (given to ground truth offline; an
                            engine never fetches it)
==========================  ===============================================================

Each group below is one schema (one compile per engine) with its probes; most probes come in
pairs, one spec-valid and one spec-invalid, so a verdict can show both directions.
"""

from __future__ import annotations

import json
from typing import Any

from suites.drift.records import ProbeGroup

AXES = (
    "additional_properties", "whitespace", "property_order", "pattern_anchoring", "format",
    "ignored_keywords", "number_forms", "string_escapes", "duplicate_keys", "one_of_overlap",
    "recursive_ref", "remote_ref",
)

#: Documents that remote ``$ref`` probes point at (ground truth only; engines never fetch).
REMOTE_BASE = "http://localhost:1234/drift/"
REMOTES: dict[str, Any] = {
    REMOTE_BASE + "integer.json": {"type": "integer"},
    REMOTE_BASE + "defs.json": {
        "$defs": {
            "positive": {"type": "integer", "minimum": 1},
            "name": {"type": "string", "maxLength": 5},
        }
    },
}


def _group(axis: str, name: str, schema: Any, probes: list[tuple[str, str, bool]],
           note: str = "", resources: dict[str, Any] | None = None) -> ProbeGroup:
    return {
        "axis": axis, "name": name, "schema": schema, "note": note,
        "resources": resources or {},
        "probes": [{"id": pid, "text": text, "valid": valid} for pid, text, valid in probes],
    }


def _nest(depth: int, leaf: str) -> str:
    """``{"v": 0, "next": {"v": 1, "next": ... {"v": <leaf>}}}`` with ``depth`` objects."""
    text = f'{{"v": {leaf}}}'
    for d in range(depth - 2, -1, -1):
        text = f'{{"v": {d}, "next": {text}}}'
    return text


def _in_object(sub: Any) -> dict[str, Any]:
    """``{"n": <sub>}``, closed and required: the probe's value sits inside an object."""
    return {"type": "object", "properties": {"n": sub}, "required": ["n"],
            "additionalProperties": False}


_OBJ_AB = {"type": "object",
           "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "integer"}}},
           "required": ["a", "b"], "additionalProperties": False}

_NODE = {"$defs": {"node": {"type": "object",
                            "properties": {"v": {"type": "integer"},
                                           "next": {"$ref": "#/$defs/node"}},
                            "required": ["v"], "additionalProperties": False}},
         "$ref": "#/$defs/node"}

GROUPS: list[ProbeGroup] = [
    # ---------------------------------------------------------------- additional_properties
    _group("additional_properties", "open", {
        "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, [
        ("declared-only", '{"a": 1}', True),
        ("extra-property", '{"a": 1, "b": 2}', True),
        ("extra-wrong-declared", '{"a": "x", "b": 2}', False),
    ], "no additionalProperties: undeclared properties are allowed (spec default)"),
    _group("additional_properties", "explicit-false", {
        "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
        "additionalProperties": False}, [
        ("declared-only", '{"a": 1}', True),
        ("extra-property", '{"a": 1, "b": 2}', False),
    ]),
    _group("additional_properties", "explicit-true", {
        "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
        "additionalProperties": True}, [
        ("extra-property", '{"a": 1, "b": [true]}', True),
    ]),
    _group("additional_properties", "typed", {
        "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
        "additionalProperties": {"type": "string"}}, [
        ("extra-string", '{"a": 1, "b": "x"}', True),
        ("extra-integer", '{"a": 1, "b": 2}', False),
    ]),
    _group("additional_properties", "nested-open", {
        "type": "object", "additionalProperties": False, "required": ["o"],
        "properties": {"o": {"type": "object", "properties": {"x": {"type": "integer"}}}}}, [
        ("nested-extra", '{"o": {"x": 1, "y": 2}}', True),
        ("outer-extra", '{"o": {"x": 1}, "p": 2}', False),
    ]),
    _group("additional_properties", "required-no-properties", {
        "type": "object", "required": ["a"]}, [
        ("other-keys", '{"a": 1, "z": null}', True),
        ("missing-required", '{"z": null}', False),
    ]),
    # ------------------------------------------------------------------------ whitespace
    _group("whitespace", "object-with-array", _OBJ_AB, [
        ("compact", '{"a":1,"b":[1,2]}', True),
        ("json-dumps", '{"a": 1, "b": [1, 2]}', True),
        ("spaces-around", '{ "a" : 1 , "b" : [ 1 , 2 ] }', True),
        ("indent-2", json.dumps({"a": 1, "b": [1, 2]}, indent=2), True),
        ("tabs", '{\n\t"a": 1,\n\t"b": [1, 2]\n}', True),
        ("crlf", '{\r\n  "a": 1,\r\n  "b": [1, 2]\r\n}', True),
        ("long-run-64", '{"a":' + " " * 64 + '1, "b": [1, 2]}', True),
        ("newline-run-20", '{"a": 1,' + "\n" * 20 + '"b": [1, 2]}', True),
        ("nbsp", '{"a":\u00a01, "b": [1, 2]}', False),
        ("form-feed", '{"a":\f1, "b": [1, 2]}', False),
        ("space-inside-number", '{"a": 1 0, "b": [1, 2]}', False),
    ], "RFC 8259: ws = *( %x20 / %x09 / %x0A / %x0D ) around every structural character "
       "and around the whole text"),
    # -------------------------------------------------------------------- property_order
    _group("property_order", "two-required", {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a", "b"], "additionalProperties": False}, [
        ("declared-order", '{"a": 1, "b": "x"}', True),
        ("reversed", '{"b": "x", "a": 1}', True),
        ("reversed-wrong-type", '{"b": 1, "a": 1}', False),
        ("missing-required", '{"b": "x"}', False),
    ]),
    _group("property_order", "three-optional", {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "boolean"}},
        "additionalProperties": False}, [
        ("subset-declared-order", '{"a": 1, "c": true}', True),
        ("subset-reversed", '{"c": true, "a": 1}', True),
        ("all-shuffled", '{"b": 2, "c": false, "a": 1}', True),
        ("shuffled-wrong-type", '{"c": 1, "a": 1}', False),
    ]),
    # ----------------------------------------------------------------- pattern_anchoring
    _group("pattern_anchoring", "contains-a", {"type": "string", "pattern": "a"}, [
        ("exact", '"a"', True),
        ("inside", '"bab"', True),
        ("absent", '"bbb"', False),
    ], "ECMA-262 regexes search; `pattern` is not implicitly anchored"),
    _group("pattern_anchoring", "three-digits", {"type": "string", "pattern": "[0-9]{3}"}, [
        ("surrounded", '"x123y"', True),
        ("too-few", '"x12y"', False),
    ]),
    _group("pattern_anchoring", "prefix-anchor", {"type": "string", "pattern": "^ab"}, [
        ("prefix-then-more", '"abzzz"', True),
        ("not-at-start", '"zab"', False),
    ]),
    _group("pattern_anchoring", "suffix-anchor", {"type": "string", "pattern": "c$"}, [
        ("more-then-suffix", '"abc"', True),
        ("not-at-end", '"cab"', False),
    ]),
    _group("pattern_anchoring", "pattern-properties", {
        "type": "object", "patternProperties": {"x": {"type": "integer"}},
        "additionalProperties": False}, [
        ("key-contains-x", '{"axb": 1}', True),
        ("key-contains-x-wrong-type", '{"axb": "s"}', False),
        ("key-without-x", '{"abc": 1}', False),
    ]),
    # ---------------------------------------------------------------------------- format
    _group("format", "date", {"type": "string", "format": "date"}, [
        ("valid-leap-day", '"2024-02-29"', True),
        ("impossible-day", '"2023-02-30"', False),
        ("not-a-date", '"yesterday"', False),
    ], "format as an assertion (JSONSchemaBench validates with format checking)"),
    _group("format", "date-time", {"type": "string", "format": "date-time"}, [
        ("valid", '"2024-01-01T12:00:00Z"', True),
        ("space-no-offset", '"2024-01-01 12:00"', False),
    ]),
    _group("format", "time", {"type": "string", "format": "time"}, [
        ("valid", '"12:34:56Z"', True),
        ("hour-25", '"25:00:00Z"', False),
    ]),
    _group("format", "email", {"type": "string", "format": "email"}, [
        ("valid", '"a.b@example.com"', True),
        ("no-at", '"not-an-email"', False),
    ]),
    _group("format", "ipv4", {"type": "string", "format": "ipv4"}, [
        ("valid", '"192.168.0.1"', True),
        ("octet-256", '"256.1.1.1"', False),
    ]),
    _group("format", "ipv6", {"type": "string", "format": "ipv6"}, [
        ("valid", '"2001:db8::1"', True),
        ("two-double-colons", '"2001::db8::1"', False),
    ]),
    _group("format", "uuid", {"type": "string", "format": "uuid"}, [
        ("valid", '"123e4567-e89b-12d3-a456-426614174000"', True),
        ("short", '"123e4567"', False),
    ]),
    _group("format", "uri", {"type": "string", "format": "uri"}, [
        ("valid", '"https://example.com/a?b=c"', True),
        ("relative", '"a/b c"', False),
    ]),
    _group("format", "unknown", {"type": "string", "format": "x-not-a-format"}, [
        ("anything", '"whatever"', True),
        ("not-a-string", "1", False),
    ], "unknown formats are ignored; type still applies"),
    # ------------------------------------------------------------------ ignored_keywords
    _group("ignored_keywords", "minItems", {"type": "array", "items": {"type": "integer"}, "minItems": 2}, [
        ("two", "[1, 2]", True),
        ("one", "[1]", False),
    ]),
    _group("ignored_keywords", "maxItems", {"type": "array", "items": {"type": "integer"}, "maxItems": 2}, [
        ("two", "[1, 2]", True),
        ("three", "[1, 2, 3]", False),
    ]),
    _group("ignored_keywords", "minLength", {"type": "string", "minLength": 3}, [
        ("three", '"abc"', True),
        ("two", '"ab"', False),
    ]),
    _group("ignored_keywords", "maxLength", {"type": "string", "maxLength": 3}, [
        ("three", '"abc"', True),
        ("four", '"abcd"', False),
    ]),
    _group("ignored_keywords", "if-then-else", {
        "type": "object",
        "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}, "s": {"type": "string"}},
        "required": ["kind"],
        "if": {"properties": {"kind": {"const": "int"}}},
        "then": {"required": ["n"]}, "else": {"required": ["s"]}}, [
        ("then-satisfied", '{"kind": "int", "n": 1}', True),
        ("then-violated", '{"kind": "int", "s": "x"}', False),
        ("else-violated", '{"kind": "str", "n": 1}', False),
    ]),
    _group("ignored_keywords", "not", {"type": "integer", "not": {"const": 0}}, [
        ("one", "1", True),
        ("zero", "0", False),
    ]),
    _group("ignored_keywords", "dependentRequired", {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "dependentRequired": {"a": ["b"]}}, [
        ("both", '{"a": 1, "b": 2}', True),
        ("a-without-b", '{"a": 1}', False),
    ]),
    _group("ignored_keywords", "uniqueItems", {"type": "array", "uniqueItems": True}, [
        ("distinct", "[1, 2]", True),
        ("repeated", "[1, 1]", False),
    ]),
    _group("ignored_keywords", "minProperties", {"type": "object", "minProperties": 1}, [
        ("one", '{"a": 1}', True),
        ("empty", "{}", False),
    ]),
    _group("ignored_keywords", "multipleOf", {"type": "integer", "multipleOf": 3}, [
        ("six", "6", True),
        ("four", "4", False),
    ]),
    _group("ignored_keywords", "exclusiveMinimum", _in_object({"type": "number", "exclusiveMinimum": 0}), [
        ("half", '{"n": 0.5}', True),
        ("zero", '{"n": 0}', False),
    ]),
    _group("ignored_keywords", "contains", {"type": "array", "items": {"type": "integer"}, "contains": {"const": 1}}, [
        ("has-one", "[2, 1]", True),
        ("no-one", "[2, 3]", False),
    ]),
    _group("ignored_keywords", "unknown-keyword", {"type": "integer", "x-vendor": {"type": "string"}, "fooBar": 3}, [
        ("integer", "1", True),
        ("string", '"s"', False),
    ], "unknown keywords are ignored; known ones still apply"),
    # ---------------------------------------------------------------------- number_forms
    _group("number_forms", "integer", _in_object({"type": "integer"}), [
        ("plain", '{"n": 42}', True),
        ("negative-zero", '{"n": -0}', True),
        ("zero-fraction", '{"n": 1.0}', True),
        ("exponent", '{"n": 1e2}', True),
        ("fraction-exponent", '{"n": 1.5e1}', True),
        ("big", '{"n": 123456789012345678901234567890}', True),
        ("fraction", '{"n": 1.5}', False),
        ("leading-zero", '{"n": 042}', False),
        ("plus-sign", '{"n": +1}', False),
        ("hex", '{"n": 0x10}', False),
    ], "2020-12: an integer is any number with a zero fractional part (1.0, 1e2, 1.5e1); "
       "the numbers sit in an object so that top-level scalars do not confound the axis"),
    _group("number_forms", "number", _in_object({"type": "number"}), [
        ("fraction", '{"n": 0.5}', True),
        ("exponent-upper-signed", '{"n": 1E+2}', True),
        ("exponent-unsigned", '{"n": 1e2}', True),
        ("negative-exponent", '{"n": 2.5e-3}', True),
        ("negative-zero-float", '{"n": -0.0}', True),
        ("leading-dot", '{"n": .5}', False),
        ("trailing-dot", '{"n": 1.}', False),
        ("nan", '{"n": NaN}', False),
        ("infinity", '{"n": Infinity}', False),
        ("leading-zero-fraction", '{"n": 00.5}', False),
    ]),
    _group("number_forms", "bounded-integer", _in_object({"type": "integer", "minimum": 0, "maximum": 10}), [
        ("exponent-at-max", '{"n": 1e1}', True),
        ("exponent-over-max", '{"n": 1e2}', False),
    ]),
    _group("number_forms", "top-level-number", {"type": "number"}, [
        ("integer", "42", True),
        ("fraction", "0.5", True),
        ("negative-zero-float", "-0.0", True),
        ("leading-dot", ".5", False),
    ], "a bare number as the whole document"),
    # -------------------------------------------------------------------- string_escapes
    _group("string_escapes", "string", {"type": "string"}, [
        ("plain", '"abc"', True),
        ("escaped-newline", '"a\\nb"', True),
        ("escaped-tab", '"a\\tb"', True),
        ("u-escape-ascii", '"\\u0041"', True),
        ("u-escape-nonascii", '"\\u00e9"', True),
        ("u-escape-upper-hex", '"\\u00E9"', True),
        ("surrogate-pair", '"\\ud83d\\ude00"', True),
        ("escaped-control", '"\\u0001"', True),
        ("escaped-slash", '"a\\/b"', True),
        ("raw-utf8", '"é😀"', True),
        ("raw-del", '"a\x7fb"', True),
        ("raw-newline", '"a\nb"', False),
        ("raw-tab", '"a\tb"', False),
        ("raw-control-01", '"a\x01b"', False),
        ("bad-escape-x", '"\\x41"', False),
        ("bad-escape-a", '"\\a"', False),
    ], "RFC 8259 §7: U+0000-U+001F must be escaped; DEL may be raw"),
    _group("string_escapes", "maxLength", {"type": "string", "maxLength": 3}, [
        ("escaped-newline", '"a\\nb"', True),
        ("three-u-escapes", '"\\u0041\\u0042\\u0043"', True),
        ("four-u-escapes", '"\\u0041\\u0042\\u0043\\u0044"', False),
    ], "length counts characters after unescaping"),
    _group("string_escapes", "escaped-key", {
        "type": "object", "properties": {"é": {"type": "integer"}}, "required": ["é"],
        "additionalProperties": False}, [
        ("raw-key", '{"é": 1}', True),
        ("escaped-key", '{"\\u00e9": 1}', True),
        ("escaped-key-wrong-type", '{"\\u00e9": "x"}', False),
    ]),
    _group("whitespace", "const-object", {"const": {"key": "你好"}}, [
        ("compact-raw", '{"key":"你好"}', True),
        ("spaced-raw", '{"key": "你好"}', True),
        ("other-value", '{"key": "你"}', False),
    ], "const / enum objects are values: any JSON whitespace spells the same one"),
    _group("whitespace", "enum-objects", {"enum": [{"a": 1, "b": [1, 2]}, {"a": 2}]}, [
        ("compact", '{"a":1,"b":[1,2]}', True),
        ("spaced", '{"a": 1, "b": [1, 2]}', True),
        ("newlines", '{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n}', True),
        ("not-member", '{"a": 3}', False),
    ]),
    _group("string_escapes", "enum-escaped", {"enum": ["a\"b", "é"]}, [
        ("quote", '"a\\"b"', True),
        ("u-escape-of-enum-member", '"\\u00e9"', True),
        ("not-member", '"ab"', False),
    ]),
    # -------------------------------------------------------------------- duplicate_keys
    _group("duplicate_keys", "open-object", {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}, [
        ("distinct", '{"a": 1, "b": 1}', True),
        ("same-value", '{"a": 1, "a": 1}', False),
        ("last-wins-valid", '{"a": "x", "a": 1}', False),
    ], "duplicate keys: invalid (our verdict, see the module doc)"),
    _group("duplicate_keys", "closed-object", {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a"], "additionalProperties": False}, [
        ("distinct", '{"a": 1, "b": 2}', True),
        ("duplicate", '{"a": 1, "a": 2}', False),
        ("duplicate-optional", '{"a": 1, "b": 2, "b": 3}', False),
    ]),
    _group("duplicate_keys", "nested", {
        "type": "object", "properties": {"o": {"type": "object"}}, "required": ["o"]}, [
        ("distinct", '{"o": {"k": 1, "j": 2}}', True),
        ("duplicate", '{"o": {"k": 1, "k": 2}}', False),
    ]),
    # -------------------------------------------------------------------- one_of_overlap
    _group("one_of_overlap", "integer-or-number", _in_object({"oneOf": [{"type": "integer"}, {"type": "number"}]}), [
        ("fraction", '{"n": 1.5}', True),
        ("integer-matches-both", '{"n": 1}', False),
    ]),
    _group("one_of_overlap", "string-lengths", {
        "oneOf": [{"type": "string", "maxLength": 3}, {"type": "string", "minLength": 2}]}, [
        ("short", '"a"', True),
        ("long", '"abcd"', True),
        ("both", '"ab"', False),
    ]),
    _group("one_of_overlap", "objects", {
        "type": "object",
        "oneOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                  {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]}, [
        ("only-a", '{"a": 1}', True),
        ("both", '{"a": 1, "b": 2}', False),
    ]),
    _group("one_of_overlap", "disjoint", {"oneOf": [{"type": "string"}, {"type": "integer"}]}, [
        ("string", '"x"', True),
        ("boolean", "true", False),
    ], "control: no overlap"),
    # --------------------------------------------------------------------- recursive_ref
    _group("recursive_ref", "linked-list", _NODE, [
        ("depth-1", _nest(1, "0"), True),
        ("depth-3", _nest(3, "2"), True),
        ("depth-4", _nest(4, "3"), True),
        ("depth-6", _nest(6, "5"), True),
        ("depth-10", _nest(10, "9"), True),
        ("depth-6-bad-leaf", _nest(6, '"x"'), False),
    ], "recursion through $ref has no depth limit in the spec"),
    _group("recursive_ref", "nested-arrays", {"type": "array", "items": {"$ref": "#"}}, [
        ("depth-2", "[[]]", True),
        ("depth-6", "[[[[[[]]]]]]", True),
        ("depth-6-scalar", "[[[[[1]]]]]", False),
    ]),
    # ------------------------------------------------------------------------ remote_ref
    _group("remote_ref", "integer", {"$ref": REMOTE_BASE + "integer.json"}, [
        ("integer", "1", True),
        ("string", '"a"', False),
    ], "a ref to another document (engines never fetch; a grammar that allows any JSON is "
       "looser, a compile error refuses)", resources=REMOTES),
    _group("remote_ref", "fragment", {
        "type": "object", "properties": {
            "n": {"$ref": REMOTE_BASE + "defs.json#/$defs/positive"},
            "s": {"$ref": REMOTE_BASE + "defs.json#/$defs/name"}},
        "required": ["n"], "additionalProperties": False}, [
        ("valid", '{"n": 5, "s": "abc"}', True),
        ("zero", '{"n": 0}', False),
        ("long-name", '{"n": 1, "s": "abcdefgh"}', False),
    ], resources=REMOTES),
]


def probe_count() -> int:
    return sum(len(g["probes"]) for g in GROUPS)
