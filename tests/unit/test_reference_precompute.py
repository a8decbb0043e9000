"""Compile-time precomputation of the reference engine's mask cache
(``MaskComputer.precompute``, the adapter's ``precompute_s``): it builds the entries
a decode meets first (the first mask, string contents, key positions, ...) before any
mask is asked for, and changes no mask: replays with and without it agree bit for bit
at every step, on the real Llama-3 vocabulary."""

from __future__ import annotations

import json

import pytest

import reference_helpers as H
from harness.registry import EngineSpec

SCHEMA = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 40},
                         "tags": {"type": "array", "items": {"type": "string"}},
                         "meta": {"type": "object", "additionalProperties": {"type": "integer"}},
                         "n": {"type": "number"}},
          "required": ["name"]}
DOCS = [{"name": "Zoë", "tags": ["a b", "日本"], "meta": {"x": 1, "yy": -2}, "n": 1.5},
        {"meta": {}, "name": "", "tags": []},
        {"name": "q\"\\u", "n": -3e7}]


def _adapter(budget: float):
    return EngineSpec("reference", "default").build(H.vocab(), precompute_s=budget, warm_s=0.0)


def test_precompute_builds_first_entries_and_changes_no_mask():
    text = json.dumps(SCHEMA)
    lazy = _adapter(0.0).compile(text)
    eager = _adapter(5.0).compile(text)
    assert lazy.compiled.masks.precomputed == 0 and not lazy.compiled.masks._nodes
    mc, pda = eager.compiled.masks, eager.compiled.pda
    assert mc.precomputed == len(mc._nodes) > 10
    assert 0 < mc.precompute_s < 5.0
    # the first mask's node and the object's key position are among them
    configs, _ = pda.initial()
    assert all(s in mc._nodes for s, _ in configs)
    after_brace = pda.advance(configs, b'{"')
    assert after_brace is not None and all(s in mc._nodes for s, _ in after_brace[0])
    # and the positions inside declared keys, in an object with extra keys too (where
    # each is a wide node), whichever member came before
    for text in (b'{"na', b'{"name', b'{"name": "x", "ta', b'{"meta": {"x": 1}, "me'):
        got = pda.advance(configs, text)
        assert got is not None and all(s in mc._nodes for s, _ in got[0]), text
    # objects without extra keys too (their key positions live only if the frame lets
    # a declared key complete; the entry itself does not depend on it)
    closed = {"type": "object", "additionalProperties": False, "required": ["outer"],
              "properties": {"outer": {"type": "object", "additionalProperties": False,
                                       "properties": {"city": {"type": "string"},
                                                      "count": {"type": "integer"}}}}}
    cg = _adapter(5.0).compile(json.dumps(closed))
    cmc, cpda = cg.compiled.masks, cg.compiled.pda
    cconf, _ = cpda.initial()
    for text in (b'{"', b'{"out', b'{"outer": {"', b'{"outer": {"ci', b'{"outer": {"count'):
        got = cpda.advance(cconf, text)
        assert got is not None and all(s in cmc._nodes for s, _ in got[0]), text
    stats = eager.stats()
    assert stats["precomputed_nodes"] == mc.precomputed and stats["precompute_s"] > 0
    assert stats["precomputed_key_ends"] == mc.warmed > 0
    H.assert_same_masks(lazy, eager, DOCS)


def test_precompute_walks_past_key_ends():
    """The walks past a declared key's end (its closing quote, the member's guard, the
    colon and on into the value) are built at compile time: a decode that reaches a key
    end with its own frame (members already seen) builds no walk and no row there,
    where the lazy engine builds both."""
    text = json.dumps(SCHEMA)
    eager, lazy = _adapter(5.0).compile(text), _adapter(0.0).compile(text)
    for prefix in (b'{"name', b'{"name": "x", "tags', b'{"tags": [], "meta'):
        new = []
        for g in (eager, lazy):
            mc, pda = g.compiled.masks, g.compiled.pda
            configs, _ = pda.initial()
            got = pda.advance(configs, prefix)
            assert got is not None
            (s, st), = got[0]
            nm = mc.node(s)
            assert nm.guards and not nm.pops, prefix  # a key's end waits on the frame
            walks, rows = len(mc.contexts._cwalk), int(pda.materialised.sum())
            ws = mc.context(s, st)
            assert ws.idx.size  # '"' and '":' end the key here
            new.append((len(mc.contexts._cwalk) - walks, int(pda.materialised.sum()) - rows))
        assert new[0] == (0, 0), (prefix, new)
        assert new[1][0] > 0, (prefix, new)


@pytest.mark.parametrize("budget", [0.0, 0.001])
def test_precompute_budget(budget):
    g = _adapter(budget).compile(json.dumps(SCHEMA))
    mc = g.compiled.masks
    if budget == 0:
        assert mc.precomputed == 0
    else:
        # the budget is checked between entries, after the first: one at least is built,
        # fewer than with time to spare
        full = _adapter(5.0).compile(json.dumps(SCHEMA)).compiled.masks.precomputed
        assert 1 <= mc.precomputed < full
