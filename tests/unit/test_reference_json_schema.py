"""The reference engine's JSON Schema compiler against the jsonschema oracle, token by
token on the real Llama-3 vocabulary, with masks checked against brute force.

For each schema: every instance, serialised three ways (json.dumps default, ensure_ascii
off, compact separators), is replayed through the adapter (every token committed, EOS at
the end) and must be accepted iff jsonschema (validator_for($schema), format checker on)
says it is valid. On sampled steps the mask must equal a brute-force check of ~2,000
random tokens plus the tokens that matter there.
"""

from __future__ import annotations

import json
import random
import socket
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

import reference_helpers as H
from engines.bitmask import allocate_bitmask
from engines.protocol import CompileError
from harness.measure.groundtruth import GroundTruth, offline_registry

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "jsonschemabench"

#: (name, schema, instances); the expected verdicts come from jsonschema.
CASES = [
    ("person", {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                "required": ["name", "age"], "additionalProperties": False},
     [{"name": "Alice", "age": 30}, {"age": 30, "name": "Zoë 😀 «x»"}, {"name": "A"},
      {"name": "A", "age": 1, "x": 2}, {"name": "A", "age": "x"}, {"name": 1, "age": 1}]),
    ("nested", {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "integer", "minimum": 1}, "kind": {"enum": ["a", "b"]}},
            "required": ["id"]}}}},
     [{"items": [{"id": 1, "kind": "a"}, {"id": 2}]}, {"items": []}, {"items": [{"id": 0}]},
      {"items": [{"kind": "b"}]}, {"items": [{"id": 3, "kind": "c"}]}, {}]),
    ("strings", {"type": "string", "minLength": 2, "maxLength": 5},
     ["ab", "abcde", "a", "abcdef", "😀😀", "é\u0001\"", "\\\\\\"]),
    ("pattern-unanchored", {"type": "string", "pattern": "a"}, ["bab", "xyz", "a", ""]),
    ("pattern-length", {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 5},
     ["ab", "abcdef", "a", "aB", "abcde"]),
    ("formats", {"type": "object", "properties": {
        "t": {"format": "date-time"}, "d": {"format": "date"}, "e": {"format": "email"},
        "ip": {"format": "ipv4"}, "u": {"format": "uuid"}, "h": {"format": "hostname"},
        "uri": {"format": "uri"}}},
     [{"t": "2020-02-29T12:00:00Z", "d": "2020-02-29", "e": "a@b", "ip": "1.2.3.4",
       "u": "123e4567-e89b-12d3-a456-426614174000", "h": "example.com", "uri": "http://x.y/z"},
      {"d": "2019-02-29"}, {"e": "ab"}, {"ip": "256.1.1.1"}, {"u": "xyz"}, {"h": "-a.com"},
      {"t": "2020-02-29 12:00:00"}, {"uri": "no scheme"}]),
    ("integer-bounds", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer",
                        "minimum": -10, "exclusiveMaximum": 100},
     [-10, -11, 0, 99, 100, 1.0, 5.5, -0]),
    ("draft4-exclusive", {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer",
                          "minimum": 0, "exclusiveMinimum": True, "maximum": 5},
     [0, 1, 5, 6, 1.0]),
    ("number-bounds", {"type": "number", "minimum": -1.5, "exclusiveMaximum": 2.25},
     [-1.5, -1.6, 2.25, 2.2499, 1e-05, 0, -0.0, 2, 1e20]),
    ("enum-mixed", {"enum": ["a", 1, None, True, {"x": [1, 2]}, [1, "b"]]},
     ["a", 1, 1.0, None, True, False, {"x": [1, 2]}, {"x": [1.0, 2]}, [1, "b"], "b", 0]),
    ("const-object", {"const": {"b": 1, "a": "x"}},
     [{"b": 1, "a": "x"}, {"a": "x", "b": 1}, {"a": "x"}, {"a": "x", "b": 2}]),
    ("anyOf", {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                         {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "null"}},
                          "required": ["b"]}]},
     [{"a": "s"}, {"a": 1, "b": None}, {"b": None}, {"a": 1}, {}]),
    ("oneOf-disjoint", {"oneOf": [{"type": "string"}, {"type": "integer"},
                                  {"type": "object", "properties": {"kind": {"const": "x"}},
                                   "required": ["kind"]},
                                  {"type": "object", "properties": {"kind": {"const": "y"}, "v": {"type": "number"}},
                                   "required": ["kind", "v"]}]},
     ["s", 3, {"kind": "x"}, {"kind": "y", "v": 1.5}, {"kind": "y"}, {"kind": "z"}, 1.5, None]),
    ("allOf", {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                         {"properties": {"a": {"minimum": 0}, "b": {"type": "string"}},
                          "additionalProperties": False}]},
     [{"a": 1}, {"a": 1, "b": "x"}, {"b": "x"}, {"a": 1, "c": 1}, {"a": -1}]),
    ("allOf-empty", {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                               {"properties": {"b": {"type": "string"}}, "additionalProperties": False}]},
     [{"a": 1}, {"b": "x"}, {}]),
    ("false", False, [1, {}, None]),
    ("recursive-tree", {"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"], "additionalProperties": False}}, "$ref": "#/$defs/node"},
     [{"value": 1}, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]},
      {"value": 1, "children": [{"children": []}]}, {"children": []}]),
    ("recursive-root-list", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                             "properties": {"head": {"type": "string"}, "tail": {"$ref": "#"}},
                             "required": ["head"]},
     [{"head": "a"}, {"head": "a", "tail": {"head": "b", "tail": {"head": "c"}}},
      {"head": "a", "tail": {}}, {"head": "a", "tail": 1}]),
    ("patternProperties", {"type": "object", "properties": {"id": {"type": "integer"}},
                           "patternProperties": {"^x-": {"type": "string"}},
                           "additionalProperties": {"type": "boolean"}},
     [{"id": 1, "x-a": "s", "other": True}, {"x-a": 1}, {"other": "s"}, {"id": "1"}, {}]),
    ("dependencies", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                      "properties": {"a": {}, "b": {}, "c": {}}, "dependencies": {"a": ["b"]}},
     [{"a": 1, "b": 2}, {"a": 1}, {"b": 1}, {"c": 1, "a": 1, "b": None}]),
    ("props-count", {"type": "object", "minProperties": 1, "maxProperties": 2,
                     "additionalProperties": {"type": "integer"}},
     [{"a": 1}, {"a": 1, "b": 2}, {}, {"a": 1, "b": 2, "c": 3}, {"a": "s"}]),
    ("prefixItems", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                     "items": False, "minItems": 1},
     [["a"], ["a", 1], ["a", 1, 2], [], [1], ["a", "b"]]),
    ("draft7-tuple", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
                      "items": [{"type": "boolean"}], "additionalItems": {"type": "null"}, "maxItems": 3},
     [[True], [True, None, None], [True, None, None, None], [None], [True, 1]]),
    ("any", {}, [1, "s", None, {"a": [1, {"b": {}}]}, [], 1.5e-7]),
    ("not", {"type": ["string", "null", "object"], "not": {"enum": ["x", None]},
             "properties": {"a": {"not": {"type": "string"}}}},
     ["y", "x", None, {"a": 1}, {"a": "s"}, {}]),
    ("type-list", {"type": ["string", "null"], "maxLength": 1}, ["a", None, "ab", 1]),
    ("required-undeclared", {"type": "object", "required": ["k"], "additionalProperties": {"type": "string"}},
     [{"k": "v"}, {"k": 1}, {"j": "v"}, {"k": "v", "j": "w"}]),
    ("escapes", {"type": "object", "properties": {"ke\"y\n": {"type": "string", "enum": ["a\"\\\u0001é😀"]}},
                 "required": ["ke\"y\n"]},
     [{"ke\"y\n": "a\"\\\u0001é😀"}, {"ke\"y\n": "a"}, {"key": "a\"\\\u0001é😀"}]),
]

CORPUS_FILES = [
    "BFCL_parallel_multiple_142.json",
    "Glaiveai2K---calculate_area_5c088303.json",
    "Github_easy---o43998.json",
    "Kubernetes---kb_658_Normalized.json",
    "Snowplow---sp_274_Normalized.json",
    "WashingtonPost---wp_110_Normalized.json",
    "JsonSchemaStore---typingsrc.json",
    "Github_medium---o33925.json",
    "Github_hard---o7290.json",
]


def _corpus_cases():
    out = []
    for fn in CORPUS_FILES:
        p = CORPUS / fn
        if not p.exists():
            continue
        case = json.loads(p.read_text())
        out.append((fn, case["schema"], [t["data"] for t in case["tests"]][:4]))
    return out


ALL_CASES = CASES + _corpus_cases()


def _truth(schema, data) -> bool:
    v, why = GroundTruth(schema, offline_registry()).verdict(data)
    assert v is not None, why
    return v


@pytest.mark.parametrize("name,schema,instances", ALL_CASES, ids=[c[0] for c in ALL_CASES])
def test_instances_accepted_iff_valid(name, schema, instances):
    a = H.adapter()
    g = a.compile(json.dumps(schema))
    rng = random.Random(name)
    for k, data in enumerate(instances):
        expected = _truth(schema, data)
        for ser, fn in H.SERIALIZATIONS.items():
            text = fn(data)
            n = len(H.vocab().encode(text))
            steps = set(rng.sample(range(n + 1), min(2, n + 1))) if k == 0 else set()
            accepted, eos, mismatches = H.replay(g, text, steps, rng)
            assert not mismatches, (name, ser, text, mismatches)
            got = accepted and eos
            assert got == expected, (name, ser, text, "accepted" if got else "rejected")


def test_canonical_order_and_whitespace_configs():
    schema = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})
    in_order, out_of_order = '{"a": 1, "b": 2}', '{"b": 2, "a": 1}'
    default = H.adapter().compile(schema)
    canon = H.adapter("canonical-order").compile(schema)
    compact = H.adapter("compact").compile(schema)
    assert H.replay(default, out_of_order)[:2] == (True, True)
    assert H.replay(canon, in_order)[:2] == (True, True)
    assert H.replay(canon, out_of_order)[0] is False or H.replay(canon, out_of_order)[1] is False
    assert H.replay(compact, '{"a":1,"b":2}')[:2] == (True, True)
    assert H.replay(compact, in_order)[0] is False
    # flexible whitespace: at most 32 per gap
    pda = default.compiled.pda
    assert pda.accepts(('{"a":' + " " * 32 + "1}").encode())
    assert not pda.accepts(('{"a":' + " " * 33 + "1}").encode())
    assert pda.accepts(b'\n{ "a" :\t1 ,\r\n "b":2 }\n')


def test_rollback_restores_bit_identical_masks():
    a = H.adapter()
    g = a.compile(json.dumps(ALL_CASES[1][1]))
    text = json.dumps({"items": [{"id": 12, "kind": "a"}, {"id": 2}]})
    ids = H.vocab().encode(text)
    m = g.matcher()
    bm = allocate_bitmask(H.vocab().size)
    masks = []
    for t in ids:
        m.fill_mask(bm)
        masks.append(bm.copy())
        assert m.commit(t)
    m.fill_mask(bm)
    masks.append(bm.copy())
    for back in (1, 3, len(ids)):
        m2 = g.matcher()
        for t in ids:
            m2.commit(t)
        m2.rollback(back)
        m2.fill_mask(bm)
        assert (bm == masks[len(ids) - back]).all(), back
        for t in ids[len(ids) - back:]:
            assert m2.commit(t)
        m2.fill_mask(bm)
        assert (bm == masks[-1]).all()
        assert m2.eos_allowed()


def test_non_canonical_tokenisations_accepted():
    g = H.adapter().compile(json.dumps(ALL_CASES[0][1]))
    v = H.vocab()
    text = json.dumps({"name": "Zoë 😀", "age": 30}, ensure_ascii=False)
    rng = random.Random(3)
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, len(text)), 6))
        ids = []
        for a, b in zip([0, *cuts], [*cuts, len(text)]):
            ids += v.encode(text[a:b])
        m = g.matcher()
        assert all(m.commit(t) for t in ids)
        assert m.eos_allowed()
    # byte by byte (single-byte tokens)
    byte_id = {t[0]: i for i, t in enumerate(v.tokens) if len(t) == 1 and i not in v.special_ids}
    m = g.matcher()
    assert all(m.commit(byte_id[b]) for b in text.encode())
    assert m.eos_allowed()


def test_remote_ref_is_a_compile_error_without_network(monkeypatch):
    def no_network(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    schema = {"type": "object", "properties": {"a": {"$ref": "http://example.com/schema.json"}}}
    with pytest.raises(CompileError, match="never fetched"):
        H.adapter().compile(json.dumps(schema))
    with pytest.raises(CompileError, match="never fetched"):
        H.adapter().compile(json.dumps({"$ref": "other.json#/x"}))


@pytest.mark.parametrize("schema,what", [
    ({"type": "array", "uniqueItems": True}, "uniqueItems"),
    ({"type": "number", "multipleOf": 3}, "multipleOf"),
    ({"if": {"type": "string"}, "then": {"minLength": 2}}, "'if'"),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, "oneOf"),
    ({"type": "string", "pattern": "(?=a)"}, "lookahead"),
    ({"type": "string", "format": "uri-reference"}, "uri-reference"),
])
def test_refusals_name_the_keyword(schema, what):
    with pytest.raises(CompileError, match=what):
        H.adapter().compile(json.dumps(schema))


def test_ignored_where_irrelevant():
    # keywords of other types, annotations and unknown formats do not block compilation
    H.adapter().compile(json.dumps({"type": "string", "uniqueItems": True, "title": "t",
                                    "description": "d", "examples": [1], "format": "int32"}))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12)

_ABC = st.text(alphabet="abc", max_size=5)

#: (schema, strategy of instances that are mostly valid, with some near misses)
HYPO = [
    ({"type": "object", "properties": {"a": {"type": "integer", "minimum": -5, "maximum": 500},
                                       "b": {"type": "string", "maxLength": 4},
                                       "c": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3}},
      "required": ["a"], "additionalProperties": False},
     st.fixed_dictionaries({"a": st.integers(-7, 502)},
                           optional={"b": st.text(max_size=5), "c": st.lists(st.booleans(), max_size=4),
                                     "d": st.none()})),
    ({"type": "array", "items": {"anyOf": [{"type": "null"}, {"type": "number", "exclusiveMinimum": 0}]}},
     None),
    ({"type": "object", "additionalProperties": {"type": "string", "pattern": "^[a-c]*$"},
      "maxProperties": 3},
     st.dictionaries(_ABC, _ABC | st.text(alphabet="abd", max_size=3), max_size=4)),
]


@pytest.mark.parametrize("schema,strategy", HYPO, ids=["object", "array", "additional"])
def test_property_based_instances(schema, strategy):
    """Generated instances (hypothesis-jsonschema where it works with the installed
    hypothesis, hand-written strategies otherwise) and arbitrary JSON values are accepted
    under every serialisation iff jsonschema accepts them."""
    g = H.adapter().compile(json.dumps(schema))
    pda = g.compiled.pda
    truth = GroundTruth(schema, offline_registry())
    gen = strategy if strategy is not None else from_schema(schema)

    def check(data):
        v, _ = truth.verdict(data)
        for fn in H.SERIALIZATIONS.values():
            text = fn(data)
            assert pda.accepts(text.encode()) == v, (text, v)

    settings(database=None, max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))(
        given(gen)(check))()
    settings(database=None, max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))(
        given(JSON)(check))()


def test_random_schemas_against_jsonschema():
    """Differential fuzzing: random schemas around the supported subset, random values
    near them; compiled schemas must agree with jsonschema on every serialisation."""
    import reference_fuzz

    compiled, bad = reference_fuzz.run(70, 12345, verbose=False)
    assert compiled > 50
    assert not bad, bad[:3]


WALK_SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6, "pattern": "^[a-z]"},
                                      "n": {"type": "integer", "minimum": -3, "maximum": 40},
                                      "tags": {"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 2}},
     "required": ["name", "n"], "additionalProperties": False},
    {"type": "array", "minItems": 1, "maxItems": 3,
     "items": {"anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": 5.5},
                         {"type": "string", "format": "date"}, {"type": "null"}]}},
    {"$defs": {"t": {"type": "object", "properties": {"v": {"type": "boolean"},
                                                      "kids": {"type": "array", "maxItems": 2,
                                                               "items": {"$ref": "#/$defs/t"}}},
                     "required": ["v"], "additionalProperties": False}},
     "$ref": "#/$defs/t"},
]


@pytest.mark.parametrize("schema", WALK_SCHEMAS, ids=["object", "array", "tree"])
def test_random_walks_under_the_mask(schema):
    """Seeded random walks choosing only allowed tokens never meet an empty mask before
    the grammar accepts, and every finished document is valid JSON and valid per
    jsonschema (a length-aware policy: EOS as soon as allowed after a budget, short
    tokens and closing brackets preferred late)."""
    import numpy as np

    v = H.vocab()
    g = H.adapter().compile(json.dumps(schema))
    truth = GroundTruth(schema, offline_registry())
    rng = random.Random(json.dumps(schema))
    bm = allocate_bitmask(v.size)
    finished = 0
    for walk in range(4):
        m = g.matcher()
        out = b""
        for step in range(160):
            m.fill_mask(bm)
            ids = np.nonzero(np.unpackbits(bm.view(np.uint8), bitorder="little")[: v.size])[0]
            assert ids.size, f"empty mask before acceptance after {out!r}"
            eos = [t for t in v.stop_ids if t in set(ids.tolist())]
            if eos and (step > 12 or rng.random() < 0.2):
                assert m.eos_allowed()
                break
            ids = [t for t in ids.tolist() if t not in v.stop_ids]
            if step > 25:  # wrap up: closing brackets and quotes first, then short tokens
                closing = [t for t in ids if v.tokens[t].strip() in (b"}", b"]", b'"', b'"}', b"]}", b"}]")]
                ids = closing or sorted(ids, key=lambda t: len(v.tokens[t]))[:50]
            t = rng.choice(ids)
            assert m.commit(t)
            out += v.tokens[t]
        else:
            continue
        finished += 1
        doc = json.loads(out.decode())
        ok, why = truth.verdict(doc)
        assert ok, (out, why)
    assert finished >= 2


def test_a_non_string_identifier_is_a_compile_error():
    """A draft-4 ``id`` that is an object (the corpus's ``Github_medium---o28532`` puts
    one where a subschema is read) cannot be scoped by ``referencing``: the engine says
    so in one line instead of crashing its worker."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
              "properties": {"a": {"type": "array",
                                   "items": {"id": {"type": "integer"}, "type": "object"}}}}
    with pytest.raises(CompileError, match="identifier .* is not a URI string"):
        H.adapter().compile(json.dumps(schema))
