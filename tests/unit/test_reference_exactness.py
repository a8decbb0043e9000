"""Exactness proofs of the reference engine's adaptive mask cache (issue 3, "How
exactness is proven"), on the real Llama-3 vocabulary (128,256 ids):

- the cache is only an optimisation: on sampled steps the mask equals a brute-force
  simulation of *every* token of the vocabulary from the live configurations, bit for
  bit (each token's bytes fed through the automaton; no trie, no cache);
- the three-way split per automaton node is consistent (accepted and context-dependent
  disjoint; the stored format round-trips; adaptive storage below dense);
- hypothesis: random schemas in the supported subset, hypothesis-jsonschema instances
  accepted under every serialisation and non-canonical tokenisations, mutated instances
  accepted iff jsonschema accepts them;
- seeded random walks under the mask on random schemas never meet an empty mask before
  acceptance and end in documents jsonschema validates (and on one step of each, the
  mask equals the full brute force too).
"""

from __future__ import annotations

import copy
import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import reference_helpers as H
from engines.bitmask import allocate_bitmask
from engines.protocol import CompileError
from harness.measure.groundtruth import GroundTruth, offline_registry
from reference_engine.maskcache import node_mask, node_mask_of_ids, pack_flags, word_set


#: (schema, document, steps to check) — object keys and values (context-dependent
#: closers), recursion, a long length window (states sharing a cache entry), an
#: array of alternatives, a pattern with a bound.
BRUTE = [
    ({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                       "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["name"], "additionalProperties": False},
     {"name": "Zoë", "tags": ["a", "bc"], "age": 3}, (0, 4, 9, 14, 22)),
    ({"$defs": {"t": {"type": "object", "properties": {"v": {"type": "integer"},
                                                       "kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}},
                      "additionalProperties": False}},
      "$ref": "#/$defs/t"},
     {"v": 1, "kids": [{"v": 2, "kids": [{"kids": []}]}]}, (4, 5, 14, 22, 23, -1)),
    ({"type": "string", "maxLength": 400},
     "x" * 150 + " the quick brown fox " * 5, (3, 30, -2)),
    ({"type": "array", "maxItems": 3, "items": {"anyOf": [{"type": "number", "minimum": 0},
                                                          {"type": "string", "pattern": "^[a-f]{1,3}$"},
                                                          {"type": "null"}]}},
     [1.5, "abc", None], (1, 5, 7, -1)),
]


@pytest.mark.parametrize("schema,doc,steps", BRUTE, ids=["object", "recursion", "long-string", "anyof"])
def test_cached_mask_equals_full_brute_force(schema, doc, steps):
    """On sampled steps, the mask equals the brute-force mask of all 128,256 ids."""
    v = H.vocab()
    g = H.adapter().compile(json.dumps(schema))
    text = json.dumps(doc)
    ids = v.encode(text)
    want = {s % (len(ids) + 1) for s in steps}
    m = g.matcher()
    bm = allocate_bitmask(v.size)
    checked = with_cd = 0
    for i in range(len(ids) + 1):
        if i in want:
            m.fill_mask(bm)
            masks = g.compiled.masks
            with_cd += any(masks.census(s).n_cd for s, _ in m._m.configurations)
            brute = H.full_brute_force(g.compiled, m._m)
            diff = np.flatnonzero(np.unpackbits((bm ^ brute).view(np.uint8), bitorder="little"))
            assert diff.size == 0, (i, [(int(t), v.tokens[t]) for t in diff[:8]])
            checked += 1
        if i < len(ids):
            assert m.commit(ids[i])
    assert checked == len(want)
    if "maxLength" not in schema:  # (a top-level string has none: context expansion)
        assert with_cd > 0  # some checked step had context-dependent tokens to settle
    assert m.eos_allowed()
    if schema.get("maxLength"):
        # far from the bound, string positions share one cache entry (mask_key)
        m = g.matcher()
        for i, t in enumerate(ids):
            m.fill_mask(bm)
            if i == len(ids) // 2:  # a state served by another state's entry
                assert (bm == H.full_brute_force(g.compiled, m._m)).all()
            assert m.commit(t)
        s = g.stats()
        assert s["states_sharing_an_entry"] >= 20 and s["nodes"] < 10, s


@pytest.mark.parametrize("config", ["default", "compact"])
def test_split_is_consistent_and_adaptive_storage_is_smaller(config):
    """Per cached node: accepted and context-dependent tokens are disjoint, the stored
    format reproduces the accepted set; the whole cache is below one dense bitmask per
    node; context expansion moved tokens out of the context-dependent set."""
    v = H.vocab()
    schema = BRUTE[0][0]
    g = H.adapter(config).compile(json.dumps(schema))
    bm = allocate_bitmask(v.size)
    m = g.matcher()
    sep = (",", ":") if config == "compact" else None
    for t in v.encode(json.dumps(BRUTE[0][1], separators=sep)):
        m.fill_mask(bm)
        assert m.commit(t)
    masks = g.compiled.masks
    words = (v.size + 31) // 32
    out = np.zeros(words, dtype=np.int32)
    for state, nm in masks._nodes.items():
        nm.write(out)
        acc = np.unpackbits(out.view(np.uint8), bitorder="little")[: v.size].astype(bool)
        assert int(acc.sum()) == nm.n_accepted
        assert not any(acc[t] for t in v.special_ids)
        # context-dependent = below a trie node where the live stack is popped, or at
        # or below one where an object guard needs the live frame, and not accepted
        # context-independently
        trie = g.compiled.trie
        below = set()
        for _, nodes in nm.pops:
            below.update(trie.tokens_below(list(nodes)).tolist())
        for _, _, nodes in nm.guards:
            below.update(trie.tokens_below(list(nodes)).tolist())
            below.update(trie.tokens_at(np.array(nodes, dtype=np.int64)).tolist())
        assert masks.census(state).n_cd == len(below - set(np.flatnonzero(acc).tolist()))
    s = g.stats()
    assert s["nodes"] > 5
    assert s["node_cache_bytes"] < s["dense_equiv_bytes"]
    # tokens that cross into a member's value rule (``":"``, ``":[``), walked
    # statically through the call, and an end whose return is known (lookahead)
    assert s["expansion_moved_max"] > 100
    assert s["lookahead_nodes_moved"] >= 1
    assert sum(s["node_formats"].values()) == s["nodes"]


@pytest.mark.parametrize("density", [0.0005, 0.5, 0.9995])
def test_node_formats_round_trip(density):
    """Each storage format writes and merges exactly the accepted set it was given,
    and the smallest format is chosen for the density."""
    rng = np.random.default_rng(int(density * 1e4))
    n, words = 128256, (128256 + 31) // 32
    acc = rng.random(n) < density
    nm = node_mask(acc, words, ())
    assert nm.kind == {0.0005: "accepted", 0.5: "dense", 0.9995: "rejected"}[density]
    assert nm.nbytes <= words * 4
    want = pack_flags(acc, words)
    out = np.zeros(words, dtype=np.int32)
    nm.write(out)
    assert (out == want).all()
    other = pack_flags(rng.random(n) < 0.01, words)
    out[:] = other
    nm.merge(out)
    assert (out == (want | other)).all()
    ws = word_set(np.flatnonzero(acc), words)
    out.fill(0)
    out[ws.idx] |= ws.val
    assert (out == want).all()


@pytest.mark.parametrize("n_ids", [0, 1, 37, 3000, 5000])
def test_entries_from_token_ids_equal_entries_from_flags(n_ids):
    """The sorted-ids path (narrow positions, context sets) stores exactly what the
    flag-array path stores: same format, same pairs, same count (duplicates allowed)."""
    rng = np.random.default_rng(n_ids)
    n, words = 128256, (128256 + 31) // 32
    ids = rng.integers(0, n, n_ids)
    ids = np.concatenate([ids, ids[: n_ids // 3]])  # duplicates
    flags = np.zeros(n, dtype=bool)
    flags[ids] = True
    want, got = node_mask(flags, words, ()), node_mask_of_ids(ids, words, ())
    assert (got.kind, got.n_accepted) == (want.kind, want.n_accepted)
    if want.kind == "dense":
        assert (got.words == want.words).all()
    else:
        assert (got.idx == want.idx).all() and (got.val == want.val).all()
    if ids.size:
        ws, dense = word_set(ids, words), pack_flags(flags, words)
        assert (ws.idx == np.flatnonzero(dense)).all() and (ws.val == dense[ws.idx]).all()


# ---------------------------------------------------------------- random schemas

def _compile(schema):
    try:
        return H.adapter().compile(json.dumps(schema))
    except CompileError:
        return None


def _mutate(data, rng: random.Random):
    """A near miss: one sub-value replaced, a key dropped or added, or an item added."""
    import reference_fuzz

    data = copy.deepcopy(data)
    paths = []

    def walk(x, path):
        paths.append(path)
        if isinstance(x, dict):
            for k, y in x.items():
                walk(y, path + (k,))
        elif isinstance(x, list):
            for i, y in enumerate(x):
                walk(y, path + (i,))

    walk(data, ())
    path = rng.choice(paths)
    if not path:
        return reference_fuzz.rand_value(rng)
    parent = data
    for p in path[:-1]:
        parent = parent[p]
    r = rng.random()
    if r < 0.5:
        parent[path[-1]] = reference_fuzz.rand_value(rng, 2)
    elif isinstance(parent, dict):
        if r < 0.75:
            del parent[path[-1]]
        else:
            parent[rng.choice(reference_fuzz.KEYS)] = reference_fuzz.rand_value(rng, 2)
    else:
        parent.append(reference_fuzz.rand_value(rng, 2))
    return data


def test_random_schemas_hypothesis():
    """Random schemas in (and around) the supported subset: valid instances from
    hypothesis-jsonschema are accepted token by token under every serialisation and
    two non-canonical tokenisations; mutated instances are accepted iff jsonschema
    accepts them."""
    ran = {"examples": 0, "mutants": 0}
    settings(database=None, max_examples=30, deadline=None, derandomize=True,
             suppress_health_check=list(HealthCheck))(given(st.data())(_check_random_schema))(ran)
    assert ran["examples"] >= 15 and ran["mutants"] >= 20, ran


def _check_random_schema(ran, data):
    import reference_fuzz
    from hypothesis_jsonschema import from_schema

    from harness.measure.segment import segmentations

    seed = data.draw(st.integers(0, 10**6), label="schema seed")
    schema = reference_fuzz.rand_schema(random.Random(seed))
    g = _compile(schema)
    assume(g is not None)
    truth = GroundTruth(schema, offline_registry())
    try:
        inst = data.draw(from_schema(schema), label="instance")
    except Exception:  # hypothesis-jsonschema cannot generate for this schema
        assume(False)
    ok, why = truth.verdict(inst)
    assume(ok is True)  # (hypothesis-jsonschema's formats are not always the oracle's)
    v = H.vocab()
    for fn in H.SERIALIZATIONS.values():
        text = fn(inst)
        assert H.replay(g, text)[:2] == (True, True), (schema, text)
    for tokens in segmentations(v, json.dumps(inst), [seed, seed + 1]):
        m = g.matcher()
        assert all(m.commit(t) for t in tokens) and m.eos_allowed(), (schema, inst)
    rng = random.Random(seed)
    for _ in range(4):
        bad = _mutate(inst, rng)
        want, _ = truth.verdict(bad)
        if want is None:
            continue
        for fn in H.SERIALIZATIONS.values():
            text = fn(bad)
            accepted, eos, _ = H.replay(g, text)
            assert (accepted and eos) == want, (schema, text, want)
        ran["mutants"] += 1
    ran["examples"] += 1


def test_random_walks_on_random_schemas():
    """Seeded walks choosing uniformly among allowed tokens (a length-aware policy:
    after a budget prefer EOS, closers and short tokens) on random schemas: never an
    empty mask before acceptance, every finished document valid per jsonschema."""
    import reference_fuzz

    v = H.vocab()
    bm = allocate_bitmask(v.size)
    stop = set(v.stop_ids)
    closers = {b"}", b"]", b'"', b'"}', b"]}", b"}]", b'"]', b"},", b"],"}
    rng = random.Random(2024)
    schemas = finished = brute_checked = 0
    while schemas < 8:
        schema = reference_fuzz.rand_schema(rng)
        g = _compile(schema)
        if g is None:
            continue
        schemas += 1
        truth = GroundTruth(schema, offline_registry())
        for walk in range(2):
            m = g.matcher()
            out = b""
            check_at = rng.randrange(3) if walk == 0 and schemas <= 5 else -1
            for step in range(120):
                m.fill_mask(bm)
                if step == check_at:  # the cache against all 128,256 ids, bit for bit
                    brute = H.full_brute_force(g.compiled, m._m)
                    assert (bm == brute).all(), (schema, out)
                    brute_checked += 1
                ids = np.flatnonzero(np.unpackbits(bm.view(np.uint8), bitorder="little")[: v.size])
                if ids.size == 0:
                    # an empty mask is only allowed for an empty language (nothing to start)
                    assert step == 0 and not m.eos_allowed(), (schema, out)
                    break
                allowed = ids.tolist()
                if any(t in stop for t in allowed) and (step > 8 or rng.random() < 0.3):
                    assert m.eos_allowed()
                    doc = json.loads(out.decode())
                    ok, why = truth.verdict(doc)
                    assert ok, (schema, out, why)
                    finished += 1
                    break
                allowed = [t for t in allowed if t not in stop]
                if step > 15:
                    close = [t for t in allowed if v.tokens[t].strip() in closers]
                    allowed = close or sorted(allowed, key=lambda t: len(v.tokens[t]))[:40]
                t = rng.choice(allowed)
                assert m.commit(t)
                out += v.tokens[t]
    assert finished >= 6 and brute_checked >= 4
