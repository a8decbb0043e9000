"""Splits derived from a reference state's (``Derivations.reference`` / ``from_reference``):
a key prefix of an object that takes extra keys sends nearly every first byte where the
extra keys' content state does, so its split is that state's except below the bytes
that go on along a declared key, end it, or start an escape; and splits of a counting
pattern's states derived from another count of the same string
(``pair_reference`` / ``from_pair``: both walked side by side, pruned where no
token below can part them). Such a derived split must equal the split walked in full
(accepted tokens and context-dependent groups), and masks built from it must equal the
brute force, on the real Llama-3 vocabulary."""

from __future__ import annotations

import json
import random

import numpy as np

import reference_helpers as H
from engines.bitmask import allocate_bitmask
from harness.registry import EngineSpec
from reference_engine.maskcache import node_mask, node_mask_of_ids, SORT_PACK_MAX
from reference_engine.trie_walk import pair_differences

SCHEMA = {"type": "object",
          "properties": {"firstName": {"type": "string"}, "first": {"type": "integer"},
                         "lastName": {"type": "string"}, "naïve": {"type": "boolean"},
                         "nested": {"type": "object", "properties": {"id": {"type": "integer"}},
                                    "additionalProperties": {"type": "string"}}},
          "additionalProperties": {"type": "number"}}
DOCS = [{"firstName": "A", "first": 1, "lastName": "B", "naïve": True, "firstNa": 2,
         "q\"uote\\": 3, "x": 1.5, "nested": {"id": 2, "identity": "x", "ïd": "y"}},
        {"lastNameX": -1, "firs": 0, "naïv": 4, "日本": 5}]


def _lazy():
    # no precomputation: the splits are built while the documents are replayed
    return EngineSpec("reference", "default").build(H.vocab(), precompute_s=0.0, warm_s=0.0)


def _accepted(nm, words: int) -> np.ndarray:
    out = np.zeros(words, dtype=np.int32)
    nm.write(out)
    return out


def _groups(nm) -> tuple[dict, dict]:
    pops: dict = {}
    for k, ns in nm.pops:
        pops.setdefault(k, set()).update(ns)
    guards: dict = {}
    for k, sg, ns in nm.guards:
        guards.setdefault((k, sg), set()).update(ns)
    return pops, guards


def replay_checking_new_nodes(g, texts, count, most: int) -> int:
    """Replay ``texts``; at each step where ``count()`` grew while the mask was filled
    (a node just derived), up to ``most`` times, compare the whole mask with the brute
    force. Returns how many steps were compared."""
    v = H.vocab()
    bm = allocate_bitmask(v.size)
    checked = 0
    for text in texts:
        m = g.matcher()
        for t in v.encode(text):
            before = count()
            m.fill_mask(bm)
            if count() > before and checked < most:
                assert (bm == H.full_brute_force(g.compiled, m._m)).all(), text
                checked += 1
            assert m.commit(t)
        m.fill_mask(bm)
        assert m.eos_allowed()
    return checked


def test_derived_splits_equal_full_splits_and_masks_stay_exact():
    g = _lazy().compile(json.dumps(SCHEMA))
    mc = g.compiled.masks
    texts = [json.dumps(doc, separators=sep, ensure_ascii=False)
             for doc in DOCS for sep in (None, (",", ":"))]
    checked = replay_checking_new_nodes(g, texts, lambda: mc.splits.derive.derived, 6)
    assert mc.splits.derive.derived >= 5 and checked >= 3, (mc.splits.derive.derived, checked)
    # every derived split against the same split walked in full
    derived = [s for s in mc._nodes if isinstance(s, int) and mc.splits.derive.reference(s) is not None]
    assert len(derived) >= 5
    trie = g.compiled.trie
    for s in derived:
        alive, pops, guards = mc.splits.walker.walk_split(s, None, False)
        if alive.size <= SORT_PACK_MAX:
            full = node_mask_of_ids(trie.tokens_at(np.unique(alive)), mc.words, pops, guards)
        else:
            full = node_mask(trie.token_flags(alive), mc.words, pops, guards)
        # as the mask got it (the two walks side by side, most of them), and from the
        # first bytes' subtrees (where those walks would read too many nodes)
        for got in (mc._nodes[s], mc.splits.derive.from_reference(s, *mc.splits.derive.reference(s))):
            assert (_accepted(got, mc.words) == _accepted(full, mc.words)).all(), s
            assert got.n_accepted == full.n_accepted
            assert _groups(got) == _groups(full), s
    assert mc.splits.derive.pair_derived >= 5
    assert g.stats()["derived_nodes"] == mc.splits.derive.derived


COUNTING = {"type": "object",
            "properties": {"words": {"type": "string", "pattern": "^(?:\\S+\\s+){0,6}\\S+$"},
                           "name": {"type": "string", "pattern": "^[a-z_-]{1,40}$"},
                           "tags": {"type": "array",
                                    "items": {"type": "string",
                                              "pattern": "^(?:\\S+\\s+){0,2}\\S+$"}}},
            "required": ["words"]}
COUNTING_DOCS = [{"words": "one two  three\tfour five six seven", "name": "a" * 40,
                  "tags": ["x", "y z", "p q r", "é ü"]},
                 {"words": "a-b c_d e", "name": "ab-cd_ef" * 4, "tags": ["lead  x"]},
                 {"words": "Ünïcode wörds here", "name": "x"}]


def test_counting_patterns_derive_from_a_count_no_token_tells_apart():
    # word and character counts: each count is its own automaton state; its split is
    # derived from a count split before, walked only where the two walks part
    g = _lazy().compile(json.dumps(COUNTING))
    mc = g.compiled.masks
    texts = [json.dumps(doc, separators=sep, ensure_ascii=ea)
             for doc in COUNTING_DOCS for sep in (None, (",", ":")) for ea in (True, False)]
    checked = replay_checking_new_nodes(g, texts, lambda: mc.splits.derive.pair_derived, 8)
    assert mc.splits.derive.pair_derived >= 20 and checked >= 5, (mc.splits.derive.pair_derived, checked)
    trie = g.compiled.trie

    def full_split(s):
        alive, pops, guards = mc.splits.walker.walk_split(s, None, False)
        if alive.size <= SORT_PACK_MAX:
            return node_mask_of_ids(trie.tokens_at(np.unique(alive)), mc.words, pops, guards)
        return node_mask(trie.token_flags(alive), mc.words, pops, guards)

    def same(got, full, what):
        assert (_accepted(got, mc.words) == _accepted(full, mc.words)).all(), what
        assert got.n_accepted == full.n_accepted, what
        assert _groups(got) == _groups(full), what

    family = [s for s in mc._nodes if mc.splits.derive.family_of(s) is not None]
    assert len(family) >= 30, len(family)
    full = {s: full_split(s) for s in family}
    for s in family:
        same(mc._nodes[s], full[s], s)
    # every count from every other count of its string (a sample), near the bound
    # too, where the two walks part and those subtrees are walked from the state
    pairs = [(s, q) for s in family for q in family
             if q != s and mc.splits.derive.family_of(q)[0] == mc.splits.derive.family_of(s)[0]]
    rng = random.Random(7)
    parted = 0
    for s, q in rng.sample(pairs, min(len(pairs), 150)):
        fam = mc.splits.derive.family_of(s)
        f = mc.splits.derive.family_frag[fam[0]]
        dn, _ = pair_differences(trie, mc.pda, q, s, mc.splits.derive.families, f, mc.splits.derive.moore(f), 10**7)
        parted += dn.size > 0
        got = mc.splits.derive.from_pair(s, q, 10**7)
        assert got is not None
        same(got, full[s], (s, q))
    assert parted >= 20, parted
    assert g.stats()["pair_derived_nodes"] == mc.splits.derive.pair_derived
