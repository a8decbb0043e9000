"""Random schemas in (and around) the supported subset and random instances near them,
for differential testing of the reference engine against jsonschema.

``python tests/reference_fuzz.py N SEED`` runs N schemas and prints disagreements; the
test suite runs a small fixed-seed batch (test_reference_fuzz in
test_reference_json_schema.py).
"""

from __future__ import annotations

import json
import random
import sys

KEYS = ["a", "b", "c", "é", "x-1"]
PATTERNS = ["^a", "b$", "^[a-c]*$", "\\d", "^x-", "a|b", "^.{2}$", ""]
FORMATS = ["date", "email", "ipv4", "uuid", "hostname", "date-time", "unknownfmt"]
STRINGS = ["", "a", "b", "ab", "ba", "abc", "x-1", "é", "2020-01-31", "a@b", "1.2.3.4", "1",
           "123e4567-e89b-12d3-a456-426614174000", "example.com", "2020-02-30T00:00:00Z", "a\n",
           "\u0001", "😀"]
NUMBERS = [0, 1, -1, 2, 3, 5, 10, 0.5, -0.5, 1.0, 2.5, 100, -3, 1e-05, 7.25]


def rand_schema(rng: random.Random, depth: int = 0, defs: bool = True):
    if depth > 2 or rng.random() < 0.15:
        return rng.choice([True, {}, {"type": rng.choice(["string", "integer", "null", "boolean"])}])
    s: dict = {}
    kind = rng.choice(["string", "number", "integer", "object", "array", "mixed", "enum", "comb"])
    if kind in ("string", "mixed"):
        if kind == "string" or rng.random() < 0.5:
            s["type"] = "string" if kind == "string" else rng.choice([["string", "null"], ["string", "integer"]])
        if rng.random() < 0.4:
            s["minLength"] = rng.randint(0, 3)
        if rng.random() < 0.4:
            s["maxLength"] = rng.randint(0, 4)
        if rng.random() < 0.4:
            s["pattern"] = rng.choice(PATTERNS)
        if rng.random() < 0.25:
            s["format"] = rng.choice(FORMATS)
    if kind in ("number", "integer", "mixed"):
        if kind != "mixed":
            s["type"] = kind
        for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if rng.random() < 0.3:
                s[k] = rng.choice([0, 1, -1, 2.5, 10, 0.5])
    if kind == "object":
        s["type"] = "object"
        props = rng.sample(KEYS, rng.randint(0, 3))
        if props:
            s["properties"] = {k: rand_schema(rng, depth + 1) for k in props}
        if rng.random() < 0.5:
            s["required"] = rng.sample(KEYS, rng.randint(1, 2))
        r = rng.random()
        if r < 0.3:
            s["additionalProperties"] = False
        elif r < 0.5:
            s["additionalProperties"] = rand_schema(rng, depth + 1)
        if rng.random() < 0.2:
            s["patternProperties"] = {rng.choice(["^x-", "a", "^b"]): rand_schema(rng, depth + 1)}
        if rng.random() < 0.15:
            s["minProperties"] = rng.randint(0, 2)
        if rng.random() < 0.15:
            s["maxProperties"] = rng.randint(1, 3)
        if rng.random() < 0.1:
            s["dependentRequired"] = {rng.choice(KEYS): [rng.choice(KEYS)]}
    if kind == "array":
        s["type"] = "array"
        if rng.random() < 0.4:
            s["prefixItems"] = [rand_schema(rng, depth + 1) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.7:
            s["items"] = rng.choice([False, rand_schema(rng, depth + 1)])
        if rng.random() < 0.3:
            s["minItems"] = rng.randint(0, 2)
        if rng.random() < 0.3:
            s["maxItems"] = rng.randint(0, 3)
    if kind == "enum":
        pool = STRINGS[:6] + NUMBERS[:6] + [None, True, False, {"a": 1}, [1, "a"]]
        if rng.random() < 0.5:
            s["enum"] = rng.sample(pool, rng.randint(1, 4))
        else:
            s["const"] = rng.choice(pool)
        if rng.random() < 0.3:
            s["type"] = rng.choice(["string", "number", "integer", "object"])
    if kind == "comb":
        c = rng.choice(["anyOf", "allOf", "oneOf", "not"])
        if c == "not":
            s["not"] = rng.choice([{"type": rng.choice(["string", "null", "object"])},
                                   {"enum": rng.sample(STRINGS[:5] + [None, True], 2)},
                                   {"required": rng.sample(KEYS, rng.randint(1, 2))},
                                   {"pattern": rng.choice(PATTERNS)}, {"minLength": 2},
                                   {"maximum": rng.choice([0, 2.5])}, {"minItems": 1},
                                   {"not": rand_schema(rng, depth + 1)},
                                   {"anyOf": [{"type": "string"}, {"minimum": 1}]},
                                   {"allOf": [{"type": "string"}, {"maxLength": 1}]},
                                   {"type": "string", "pattern": "a"}, {"format": "date"},
                                   {"maxProperties": 1}, {"exclusiveMinimum": 1}])
        else:
            s[c] = [rand_schema(rng, depth + 1) for _ in range(rng.randint(1, 3))]
    if kind == "array" and rng.random() < 0.3:
        s["items"] = [rand_schema(rng, depth + 1) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.5:
            s["additionalItems"] = rng.choice([False, rand_schema(rng, depth + 1)])
    if kind == "object" and rng.random() < 0.15:
        s["dependencies"] = {rng.choice(KEYS): [rng.choice(KEYS)]}
    if defs and depth == 0 and rng.random() < 0.2:
        s = {"$defs": {"d": s}, "anyOf": [{"$ref": "#/$defs/d"}, {"type": "null"}]}
    if depth == 0 and isinstance(s, dict) and rng.random() < 0.4:
        s["$schema"] = rng.choice(["http://json-schema.org/draft-04/schema#",
                                   "http://json-schema.org/draft-07/schema#",
                                   "https://json-schema.org/draft/2019-09/schema"])
    return s


def rand_value(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 2 or r < 0.35:
        return rng.choice(STRINGS)
    if r < 0.6:
        return rng.choice(NUMBERS + [None, True, False])
    if r < 0.8:
        return {k: rand_value(rng, depth + 1) for k in rng.sample(KEYS, rng.randint(0, 3))}
    return [rand_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def run(n: int, seed: int, verbose: bool = True):
    from harness.measure.groundtruth import GroundTruth, offline_registry
    from reference_engine.json_schema import SchemaCompileError, compile_schema
    from reference_engine.pda import PDA

    rng = random.Random(seed)
    bad = []
    compiled = 0
    for _ in range(n):
        schema = rand_schema(rng)
        try:
            pda = PDA(compile_schema(schema))
        except SchemaCompileError:
            continue
        compiled += 1
        truth = GroundTruth(schema, offline_registry())
        for _ in range(25):
            v = rand_value(rng)
            ok, _ = truth.verdict(v)
            if ok is None:
                continue
            for text in (json.dumps(v), json.dumps(v, ensure_ascii=False),
                         json.dumps(v, separators=(",", ":"))):
                got = pda.accepts(text.encode())
                if got != ok:
                    bad.append((schema, text, ok))
                    if verbose:
                        print("DISAGREE", json.dumps(schema), text, "jsonschema:", ok)
                    break
    return compiled, bad


if __name__ == "__main__":
    sys.path.insert(0, ".")
    c, b = run(int(sys.argv[1]), int(sys.argv[2]))
    print("compiled", c, "disagreements", len(b))
