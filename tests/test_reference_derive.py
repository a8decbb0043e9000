"""Splits derived from a reference state's (``MaskComputer._reference`` / ``_derived``):
a key prefix of an object that takes extra keys sends nearly every first byte where the
extra keys' content state does, so its split is that state's except below the bytes
that go on along a declared key, end it, or start an escape. Such a derived split must
equal the split walked in full (accepted tokens and context-dependent groups), and
masks built from it must equal the brute force, on the real Llama-3 vocabulary."""

from __future__ import annotations

import json

import numpy as np

import reference_helpers as H
from engines.base import allocate_bitmask
from engines.registry import EngineSpec
from reference_engine.maskcache import node_mask, node_mask_of_ids, SORT_PACK_MAX

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
    checked = replay_checking_new_nodes(g, texts, lambda: mc.derived, 6)
    assert mc.derived >= 5 and checked >= 3, (mc.derived, checked)
    # every derived split against the same split walked in full
    derived = [s for s in mc._nodes if isinstance(s, int) and mc._reference(s) is not None]
    assert len(derived) >= 5
    trie = g.compiled.trie
    for s in derived:
        alive, pops, guards = mc._walk_split(s, None, False)
        if alive.size <= SORT_PACK_MAX:
            full = node_mask_of_ids(trie.tokens_at(np.unique(alive)), mc.words, pops, guards)
        else:
            full = node_mask(trie.token_flags(alive), mc.words, pops, guards)
        got = mc._nodes[s]
        assert (_accepted(got, mc.words) == _accepted(full, mc.words)).all(), s
        assert got.n_accepted == full.n_accepted
        assert _groups(got) == _groups(full), s
    assert g.stats()["derived_nodes"] == mc.derived
