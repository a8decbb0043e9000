"""Helpers shared by the reference-engine tests: the real Llama-3 vocabulary, one
adapter per configuration, brute-force masks and replays."""

from __future__ import annotations

import json
import os
import random
import tempfile

import numpy as np
from hypothesis.configuration import set_hypothesis_home_dir

# keep hypothesis' caches out of the working tree
set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "hypothesis-reference-engine"))

from engines.bitmask import allocate_bitmask
from engines.vocab import load_vocabulary
from reference_engine.maskcache import pack_flags

SERIALIZATIONS = {
    "ascii": lambda d: json.dumps(d),
    "unicode": lambda d: json.dumps(d, ensure_ascii=False),
    "compact": lambda d: json.dumps(d, separators=(",", ":")),
}

_ADAPTERS: dict = {}


def vocab():
    return load_vocabulary("llama3")


def adapter(config: str = "default"):
    from harness.registry import EngineSpec

    if config not in _ADAPTERS:
        _ADAPTERS[config] = EngineSpec("reference", config).build(vocab())
    return _ADAPTERS[config]


def masks_along(grammar, text: str) -> list[np.ndarray]:
    """Every mask an adapter's ``grammar`` gives while ``text`` (tokenised canonically) is
    decoded, the final one (EOS) included; asserts each token and EOS are accepted."""
    v = vocab()
    m = grammar.matcher()
    bm = allocate_bitmask(v.size)
    out = []
    for t in v.encode(text):
        m.fill_mask(bm)
        out.append(bm.copy())
        assert m.commit(t), text
    m.fill_mask(bm)
    out.append(bm.copy())
    assert m.eos_allowed()
    return out


def assert_same_masks(g1, g2, docs) -> None:
    """Two compiled grammars give the same mask, bit for bit, at every step of every
    document of ``docs`` in every serialisation."""
    for doc in docs:
        for ser in SERIALIZATIONS.values():
            a, b = masks_along(g1, ser(doc)), masks_along(g2, ser(doc))
            assert len(a) == len(b)
            for i, (x, y) in enumerate(zip(a, b)):
                assert np.array_equal(x, y), (ser(doc), i)


def mask_ids(bm: np.ndarray, size: int) -> set[int]:
    bits = np.unpackbits(bm.view(np.uint8), bitorder="little")[:size]
    return set(np.nonzero(bits)[0].tolist())


def brute_force(compiled, matcher, sample) -> set[int]:
    """Token ids of ``sample`` allowed from the matcher's live configurations, each
    checked by feeding its bytes through the automaton (no trie, no cache) and through
    the duplicate-key check."""
    v = vocab()
    pda = compiled.pda
    configs, accept = matcher._hist[-1]
    out = set()
    for t in sample:
        if t in v.special_ids:
            if t in v.stop_ids and accept:
                out.add(t)
            continue
        if pda.advance(configs, v.tokens[t]) is not None and matcher.keys_allow(v.tokens[t]):
            out.add(t)
    return out


def interesting_tokens(text: str, pos_bytes: int, rng: random.Random, n: int = 2000) -> list[int]:
    """A random sample of ids plus the tokens that start with the next few bytes of
    ``text`` (the ones that matter at this step), plus the stop ids."""
    v = vocab()
    data = text.encode()
    sample = set(rng.sample(range(v.size), n))
    trie = adapter().trie
    for k in range(1, 6):
        node = trie.node_of(data[pos_bytes:pos_bytes + k])
        if node is None:
            break
        sample.update(trie.tokens_at(np.array([node])).tolist())
        kids = trie.children(node)[:64]
        sample.update(trie.tokens_at(kids).tolist())
    sample.update(v.stop_ids)
    return sorted(sample)


def replay(grammar, text: str, check_steps=(), rng=None, compiled=None):
    """Token-by-token replay of ``text`` through a ReferenceCompiled: returns
    (accepted, eos_ok, mismatches) where mismatches lists (step, mask-only, brute-only)
    for the steps in ``check_steps`` (mask vs brute force on a sample)."""
    v = vocab()
    m = grammar.matcher()
    bm = allocate_bitmask(v.size)
    ids = v.encode(text)
    mismatches = []
    pos = 0
    for i, tid in enumerate(ids):
        if i in check_steps:
            m.fill_mask(bm)
            sample = interesting_tokens(text, pos, rng or random.Random(i))
            allowed = mask_ids(bm, v.size) & set(sample)
            brute = brute_force(grammar.compiled, m._m, sample)
            if allowed != brute:
                mismatches.append((i, sorted(allowed - brute)[:5], sorted(brute - allowed)[:5]))
        if not m.commit(tid):
            return False, False, mismatches
        pos += len(v.tokens[tid])
    if len(ids) in check_steps:
        m.fill_mask(bm)
        sample = interesting_tokens(text, pos, rng or random.Random(0))
        allowed = mask_ids(bm, v.size) & set(sample)
        brute = brute_force(grammar.compiled, m._m, sample)
        if allowed != brute:
            mismatches.append((len(ids), sorted(allowed - brute)[:5], sorted(brute - allowed)[:5]))
    eos = m.eos_allowed()
    return True, eos, mismatches


def full_brute_force(compiled, matcher) -> np.ndarray:
    """The packed mask of every vocabulary id from the matcher's live configurations:
    a token is allowed iff feeding its bytes keeps some configuration alive and passes
    the matcher's duplicate-key check (no repeated key, no key left that only repeats
    could complete); stop ids
    iff the grammar may end; other special ids never."""
    v = vocab()
    pda = compiled.pda
    configs, accept = matcher._hist[-1]
    flags = np.zeros(v.size, dtype=bool)
    special = set(v.special_ids)
    advance = pda.advance
    for t, data in enumerate(v.tokens):
        if t in special or not data:
            continue
        if advance(configs, data) is not None and matcher.keys_allow(data):
            flags[t] = True
    if accept:
        flags[list(v.stop_ids)] = True
    return pack_flags(flags, (v.size + 31) // 32)
