"""The reference engine's warm decode (``reference_engine/warmup.py``, the adapter's
``warm_s``): at compile time it decodes documents made from the schema alone (one per
style of choices), so that a first decode of a similar document finds its cache
entries built. It changes
no mask (replays with and without it agree bit for bit at every step, on the real
Llama-3 vocabulary), it follows only local ``$ref``, and a document the grammar
refuses is pruned member by member instead of dropped."""

from __future__ import annotations

import json

import pytest

import reference_helpers as H
from harness.registry import EngineSpec
from reference_engine.warmup import (MISSING, STYLES, dumps_with_spans, example_instance,
                                     example_instances)

SCHEMA = {"type": "object",
          "properties": {"id": {"type": "integer", "minimum": 3},
                         "name": {"type": "string", "maxLength": 40},
                         "when": {"type": "string", "format": "date-time"},
                         "kind": {"enum": ["alpha", "beta"]},
                         "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
                         "meta": {"type": "object", "additionalProperties": {"type": "integer"}},
                         "n": {"type": "number"}},
          "required": ["name"],
          "$defs": {"tag": {"type": "object",
                            "properties": {"label": {"type": "string", "minLength": 9},
                                           "score": {"type": "number"}}}}}
DOCS = [{"name": "Zoë", "tags": [{"label": "a b c d e f", "score": 2}], "meta": {"x": 1}, "n": 1.5},
        {"id": 7, "kind": "beta", "name": "x", "when": "2020-02-02T00:00:00Z", "tags": []},
        {"meta": {}, "name": "q\"\\u", "n": -3e7}]


def _adapter(precompute_s: float, warm_s: float):
    return EngineSpec("reference", "default").build(H.vocab(), precompute_s=precompute_s,
                                                    warm_s=warm_s)


def test_example_instance_from_the_schema_alone():
    ex = example_instance(SCHEMA)
    assert list(ex) == ["id", "name", "when", "kind", "tags", "meta", "n"]  # declared order
    assert ex["id"] == 3 and ex["kind"] == "alpha" and ex["when"] == "2024-01-01T12:00:00Z"
    assert ex["tags"] == [{"label": "exampleex", "score": 1.5}]  # local $ref, minLength
    assert ex["meta"] == {} and isinstance(ex["n"], float)
    # recursion ends; a remote $ref is left out (never fetched); false schemas too
    tree = {"type": "object", "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#"}},
        "far": {"$ref": "https://example.com/never-fetched.json"}, "no": False}}
    t = example_instance(tree)
    assert "far" not in t and "no" not in t and t["v"] == 1
    depth = 0
    while t.get("kids"):
        t, depth = t["kids"][0], depth + 1
    assert 0 < depth < 10
    assert example_instance(False) is MISSING
    # untrusted bounds: no huge string, no overflow
    assert len(example_instance({"type": "string", "minLength": 10 ** 12})) == 256
    assert example_instance({"type": "integer", "minimum": float("inf")}) == 1
    assert example_instance({"type": "array", "minItems": 10 ** 9, "items": {}}) == ["example"] * 3
    assert example_instance({"anyOf": [False, {"const": 4}]}) == 4
    assert example_instance({"allOf": [{"properties": {"a": {"type": "null"}}},
                                       {"properties": {"b": {"default": [1]}}}]}) \
        == {"a": None, "b": [1]}


def test_example_instances_make_other_choices():
    """The second and third styles take the next enum value and ``anyOf`` branch, plain
    text, other numbers and booleans and more items (within ``maxItems``); formats,
    patterns and constrained numbers as the first; one document per distinct style."""
    docs = example_instances(SCHEMA)
    assert len(docs) == len(STYLES) == 3 and docs[0] == example_instance(SCHEMA)
    second, third = docs[1], docs[2]
    assert list(second) == list(docs[0])  # every member, in declared order
    assert second["kind"] == "beta" and third["kind"] == "alpha"  # modulo the two values
    assert second["name"] == "John Smith" and third["name"] == "The quick brown fox, v2.0"
    assert second["when"] == docs[0]["when"] and second["id"] == 3  # format; minimum
    assert second["n"] == 3.14 and len(second["tags"]) == 2 and len(third["tags"]) == 3
    assert second["tags"][0] == {"label": "John Smith", "score": 3.14}
    branches = {"anyOf": [{"type": "integer"}, {"type": "boolean"}, {"type": "null"}]}
    assert [example_instance(branches, st) for st in STYLES] == [1, False, None]
    assert example_instance({"type": "array", "maxItems": 1, "items": {}}, STYLES[2]) == \
        ["The quick brown fox, v2.0"]
    assert example_instances({"const": 3}) == [3] and example_instances(False) == []


def test_spans_are_members_and_items():
    doc = {"a": [1, {"b": "x\u00e9"}], "c": None}
    text, spans = dumps_with_spans(doc)
    assert text == json.dumps(doc)
    got = {path: text[a:b] for a, b, path in spans}
    assert got == {("a", 0): "1", ("a", 1, "b"): '"b": "x\\u00e9"', ("a", 1): '{"b": "x\\u00e9"}',
                   ("a",): '"a": [1, {"b": "x\\u00e9"}]', ("c",): '"c": null'}


def test_warm_decode_builds_what_a_decode_needs_and_changes_no_mask():
    text = json.dumps(SCHEMA)
    cold = _adapter(0.0, 0.0).compile(text)
    warm = _adapter(0.0, 5.0).compile(text)
    assert cold.compiled.warmed is None and not cold.compiled.masks._nodes
    w = warm.compiled.warmed
    # tags[0].label "example" is padded to its minLength: every member of each of the
    # three documents is accepted
    assert w.complete and w.pruned == 0 and w.documents == 3 and w.tokens > 60
    assert 0 < w.seconds < 5.0
    stats = warm.stats()
    assert (stats["warm_tokens"], stats["warm_pruned"], stats["warm_complete"],
            stats["warm_documents"]) == (w.tokens, 0, True, 3)
    # a decode of the examples themselves builds nothing new: no split, context nor row
    mc, pda = warm.compiled.masks, warm.compiled.pda
    before = (len(mc._nodes), len(mc.contexts.entries()), int(pda.materialised.sum()))
    for doc in example_instances(SCHEMA):
        H.masks_along(warm, json.dumps(doc))
    assert (len(mc._nodes), len(mc.contexts.entries()), int(pda.materialised.sum())) == before
    # and every mask of other documents, in every serialisation, is the cold engine's
    H.assert_same_masks(cold, warm, DOCS)


def test_refused_members_are_pruned():
    # "example" breaks the pattern of `code` and the maximum of `n`: both members are
    # removed, the rest decoded to the end
    schema = {"type": "object", "properties": {
        "a": {"type": "string"}, "code": {"type": "string", "pattern": "^[0-9]+$"},
        "n": {"type": "integer", "maximum": 0}, "z": {"type": "boolean"}}}
    g = _adapter(0.0, 5.0).compile(json.dumps(schema))
    w = g.compiled.warmed
    assert w.complete and w.documents == 3 and w.pruned == 2 * 3  # in each document
    # a required member that cannot be written: pruned (and `n`), then the object cannot
    # close and no member is left around the refused byte: each decode stops there
    schema["required"] = ["code"]
    g = _adapter(0.0, 5.0).compile(json.dumps(schema))
    w = g.compiled.warmed
    assert not w.complete and w.documents == 3 and w.pruned == 2 * 3 and w.tokens > 15


@pytest.mark.parametrize("budget", [0.0, 1e-6])
def test_warm_budget(budget):
    g = _adapter(0.0, budget).compile(json.dumps(SCHEMA))
    w = g.compiled.warmed
    if budget == 0:
        assert w is None and "warm_tokens" not in g.stats()
    else:
        # checked between tokens: stops after at most one
        assert not w.complete and w.tokens <= 1


def test_deep_or_long_documents_end_the_warm_decode_quietly():
    g = _adapter(0.0, 0.0).compile(json.dumps({"type": "object", "properties": {
        "d": {}, "s": {"type": "string"}}}))
    deep: object = 0
    for _ in range(5000):  # deeper than Python recurses (a schema's `default` may be)
        deep = [deep]
    w = g.compiled.warm([{"d": deep}], H.vocab().encode, 5.0)
    assert not w.complete and w.tokens == 0
    # a long one is cut (its prefix decoded), never complete
    w = g.compiled.warm([{"s": "x" * 200_000}], H.vocab().encode, 5.0)
    assert not w.complete and 0 < w.tokens <= 4000
