"""Object frames of the reference engine: the members an object has seen live on the
stack, not in the automaton states, so one set of states serves every order of
members; equal sub-schemas share one rule; and the key prefixes that only seen members
could complete are dead.

These pin the design choices the mask cache's speed rests on (a 50-member object must
not build a new set of states per member added) while the exactness tests
(``test_reference_exactness.py``, ``test_reference_objects.py``) check the masks."""

from __future__ import annotations

import json
import random

import numpy as np

import reference_helpers as H
from engines.bitmask import allocate_bitmask
from reference_engine import ir
from reference_engine.json_schema import compile_schema
from reference_engine.pda import PDA, frame_param

WIDE = {"type": "object",
        "properties": {f"k{i}": {"type": "integer"} for i in range(12)},
        "required": ["k0"]}


def _after(pda: PDA, text: bytes):
    configs, _ = pda.initial()
    res = pda.advance(configs, text)
    assert res is not None, text
    return res[0]


def _frame(pda: PDA, stack: int) -> int:
    pool = pda.stacks
    while pool.ret[stack] >= -1:  # the innermost object frame (negative entry)
        stack = pool.parent[stack]
    return frame_param(pool.ret[stack])


def test_key_position_is_one_state_whatever_was_seen():
    """After ``{"k3": 1, `` and after ``{"k7": 1, "k0": 2, `` the matcher is in the same
    automaton states; only the frame differs (and records exactly the members seen)."""
    pda = PDA(compile_schema(WIDE))
    a = _after(pda, b'{"k3": 1, ')
    b = _after(pda, b'{"k7": 1, "k0": 2, ')
    assert sorted(s for s, _ in a) == sorted(s for s, _ in b)
    assert {st for _, st in a} != {st for _, st in b}
    assert _frame(pda, a[0][1]) == 1 << 3
    assert _frame(pda, b[0][1]) == (1 << 7) | (1 << 0)


def test_states_do_not_grow_with_the_members_seen():
    """Documents naming the 12 members in different orders and subsets build no new
    automaton states once one document has visited every member: the states of a body
    are shared by every set of members seen (with the members in the states, each new
    subset would add states)."""
    pda = PDA(compile_schema(WIDE))
    names = [f"k{i}" for i in range(12)]

    def doc(order):
        return json.dumps({k: 1 for k in order}).encode()

    assert pda.accepts(doc(names))
    configs, _ = pda.initial()
    pda.advance(configs, doc(names))
    before = pda.n_states
    rng = np.random.default_rng(0)
    for _ in range(20):
        order = ["k0"] + [names[i] for i in rng.permutation(range(1, 12))[: rng.integers(0, 11)]]
        rng.shuffle(order)
        assert pda.accepts(doc(order))
    assert pda.n_states == before


def test_seen_member_prefix_is_dead_and_its_guard_refuses_the_key():
    """Under ``additionalProperties: false`` a key prefix only a seen member completes is
    dead (viability), and so is the seen key itself; an unseen one still lives."""
    schema = {"type": "object", "additionalProperties": False,
              "properties": {"alpha": {"type": "integer"}, "beta": {"type": "integer"}}}
    pda = PDA(compile_schema(schema))
    configs, _ = pda.initial()
    assert pda.advance(configs, b'{"alpha": 1, "al') is None
    assert pda.advance(configs, b'{"alpha": 1, "alpha"') is None
    assert pda.advance(configs, b'{"alpha": 1, "be') is not None
    assert pda.accepts(b'{"beta": 2, "alpha": 1}')


def test_equal_subschemas_share_one_rule():
    """Twelve ``{"type": "integer"}`` properties (separate schema objects) compile to one
    value rule, and their ``: value`` tails to one set of NFA nodes."""
    g = compile_schema(WIDE)
    merged = ir.merge_equal_rules(g)
    assert len(merged.rules) < len(g.rules)
    pda = PDA(g)
    # one state after the colon whichever member it follows
    s1 = sorted(s for s, _ in _after(pda, b'{"k1": '))
    s2 = sorted(s for s, _ in _after(pda, b'{"k9": '))
    assert s1 == s2


def test_masks_after_different_members_come_from_one_cache_entry():
    """At the real vocabulary: the key-position states after one member and after
    another are the same (one cached mask node, no new trie walk), the masks equal the
    brute force, and inside a key the digit naming a seen member is out of the mask."""
    schema = dict(WIDE, additionalProperties=False)
    v = H.vocab()
    g = H.adapter().compile(json.dumps(schema))
    bm = allocate_bitmask(v.size)
    states = []
    for text in ('{"k3": 1, "k', '{"k5": 1, "k0": 1, "k'):
        m = g.matcher()
        for t in v.encode(text):
            m.fill_mask(bm)
            assert m.commit(t), text
        m.fill_mask(bm)
        inner = m._m
        states.append(tuple(sorted(s for s, _ in inner.configurations)))
        got = H.mask_ids(bm, v.size)
        sample = sorted(set(range(0, v.size, 61)) | {v.encode(str(d))[0] for d in range(10)})
        assert {t for t in got if t in set(sample)} == H.brute_force(g.compiled, inner, sample)
        seen = [int(text[i + 2]) for i in range(len(text) - 3) if text[i:i + 2] == '"k'
                and text[i + 3] == '"']
        for d in range(10):
            if d == 1:
                continue  # "k1" unseen, and "k10"/"k11" too: the digit 1 always lives
            tok = v.encode(str(d))[0]
            assert (tok in got) == (d not in seen), (text, d)
    assert states[0] == states[1]


def _guards_first_met(pda: PDA, start: int):
    """The plain search (one per node) that ``PDA._vguards_search`` answers for all
    nodes at once: the guards met before anything else, None if a rule end, a call,
    an object body or a guard that never blocks comes first."""
    seen, work, found = {start}, [start], set()
    while work:
        n = work.pop()
        if pda.exit_rule[n] >= 0 or pda.calls[n]:
            return None
        nxt = [t for _, t in pda.byte_edges[n]] + [pda.frag_exit[f] for f in pda.frags[n]]
        for t, act in pda.eps[n]:
            if act is None:
                nxt.append(t)
            elif act.kind == "open" or act.total:
                return None
            else:
                found.add(act)
        for t in nxt:
            if t not in seen:
                seen.add(t)
                work.append(t)
    return frozenset(found)


def test_guards_first_met_per_node_equal_a_search_from_each_node():
    schemas = [WIDE,
               {"type": "object",
                "properties": {"a": {"type": "string"},
                               "b": {"type": "array", "items": {"type": "number"}}},
                "patternProperties": {"^x": {"type": "boolean"}}, "minProperties": 1,
                "additionalProperties": False},
               {"type": "object", "properties": {"n": {"$ref": "#"}, "v": {"enum": [1, "ä"]}},
                "additionalProperties": {"type": "integer"}, "maxProperties": 3},
               dict(WIDE, minProperties=2)]
    checked = guarded = 0
    for schema in schemas:
        pda = PDA(compile_schema(schema))
        for n in range(len(pda.eps)):
            if not pda._rule_guarded[pda.node_rule[n]]:
                continue
            pda._vg_node.clear()  # a search from this node alone, then from all at once
            pda._vguards_search(n)
            want = _guards_first_met(pda, n)
            assert pda._vg_node[n] == want, (schema, n)
            guarded += want is not None and bool(want)
            checked += 1
        pda._vg_node.clear()
        for n in range(len(pda.eps)):  # one search answering every node met on the way
            if pda._rule_guarded[pda.node_rule[n]] and n not in pda._vg_node:
                pda._vguards_search(n)
        for n, got in list(pda._vg_node.items()):
            assert got == _guards_first_met(pda, n), (schema, n)
    assert checked > 100 and guarded > 20


def test_a_key_only_an_extra_member_completes_lives_whatever_the_frame():
    """With extra members allowed and no ``maxProperties``, adding one never blocks
    (a ``minProperties`` count is kept, but the object can always be completed): its
    guard is *total*, so the bytes of an unknown key are not stops and the walks read
    through them. With ``maxProperties`` the count can block, and they stay stops.
    Each guard marked total lets every parameter through, and the masks inside an
    unknown key equal the brute force in both cases."""
    v = H.vocab()
    bm = allocate_bitmask(v.size)
    for extra, total in (({"minProperties": 2}, True), ({"maxProperties": 3}, False),
                         ({"minProperties": 1, "maxProperties": 2}, False)):
        schema = {**WIDE, **extra}
        pda = PDA(compile_schema(schema))
        (s, _), = _after(pda, b'{"zz')
        assert (pda.vguards[s] is None) == total and pda.stop_list[s] != total, extra
        guards = {id(a): a for n in range(len(pda.eps)) for _, a in pda.eps[n] if a is not None}
        marked = [a for a in guards.values() if a.total]
        assert bool(marked) == total, extra
        for a in marked:
            assert all(a(p) is not None for p in range(1 << 15)), (extra, a)
        g = H.adapter().compile(json.dumps(schema))
        for text in ('{"zz', '{"k0": 2, "zz', '{"zz": 3, "k'):
            m = g.matcher()
            for t in v.encode(text):
                m.fill_mask(bm)
                assert m.commit(t), text
            m.fill_mask(bm)
            sample = H.interesting_tokens(text + 'zq": 1}', len(text.encode()),
                                          random.Random(7))
            got = H.mask_ids(bm, v.size) & set(sample)
            assert got == H.brute_force(g.compiled, m._m, sample), (extra, text)


TREE = {"$defs": {"node": {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"},
    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
    "$ref": "#/$defs/node"}
# object variants that share keys: every branch stays live (one stack each) until the
# key that tells them apart, as in the corpus's Skaffold schema
VARIANTS = {"type": "array", "items": {"anyOf": [
    {"type": "object", "additionalProperties": False,
     "properties": {"image": {"type": "string"}, "context": {"type": "string"},
                    "docker": {"type": "object", "properties": {"file": {"type": "string"}}}}},
    {"type": "object", "additionalProperties": False,
     "properties": {"image": {"type": "string"}, "context": {"type": "string"},
                    "bazel": {"type": "object", "properties": {"target": {"type": "string"}}}}},
]}}


def _tree(d: int) -> dict:
    return {"name": f"n{d}", "kids": [_tree(d - 1), {"name": "leaf x"}] if d else []}


class _NoSharing(dict):
    """A ``_ctx_tops`` that never finds an entry (each context computed from its own stack)."""

    def get(self, key, default=None):
        return default

    def setdefault(self, key, default=None):
        return {}


#: a string far from its ``maxLength``: each count is its own state, all with one split
FAR = {"type": "object", "properties": {"s": {"type": "array", "items": {
    "type": "string", "maxLength": 1000}}, "n": {"type": "integer"}}}


#: objects in an object: the inner contexts read the outer frame (``},`` and ``}}``
#: pass its guards), whose parameter differs with every member seen before
MEMBERS = {"type": "object", "additionalProperties": False, "maxProperties": 5,
           "required": ["m0"], "properties": {
               f"m{i}": {"type": "object", "additionalProperties": False, "required": ["a"],
                         "properties": {"a": {"enum": ["x", "y z"]}, "b": {"type": "boolean"},
                                        "c": {"type": "integer"}}}
               for i in range(7)}}
MEMBER_DOCS = [{f"m{i}": {"a": "x", "b": True} for i in (0, 1, 2, 3, 4)},
               {f"m{i}": {"b": False, "a": "y z", "c": i} for i in (5, 0, 6)},
               {"m2": {"a": "x"}, "m0": {"c": 1, "a": "x"}, "m4": {"a": "y z", "b": True}}]

#: compact, a key's end is followed by ``":"","`` (one Llama-3 token): it passes the
#: key's guard, then the separator's on the frame that guard wrote (a derived frame,
#: which a computation may not read and still be shared across frames)
UP_TO_TWO = {"type": "object", "additionalProperties": False, "maxProperties": 2,
             "properties": {k: {"type": "string"} for k in "abc"}}
UP_TO_TWO_DOCS = [{"a": "", "b": ""}, {"b": "", "a": ""}, {"c": "", "a": ""}, {"a": ""},
                  {"b": "", "c": ""}, {"c": "", "b": ""}]


def test_contexts_shared_across_stacks_equal_their_own_computation():
    """A context computed with one stack serves every stack whose top entries, down to
    the deepest one that computation touched, are the same (``Contexts._ctx_tops``),
    and every state whose split has the same context-dependent groups
    (``Contexts._ctx_groups``: the counts of a long ``maxLength`` string). Decoding
    nested and branching documents, every context the matcher used (served from another
    stack's or state's entry or not) equals the context computed from its own state and
    stack alone by a fresh mask computer, and every kind of sharing did happen: also
    across stacks whose top entries differ in frames that gave the same outcomes to
    what the computation read (``Contexts._ctx_frames``, see ``FrameReads``)."""
    from reference_engine.matcher import MaskComputer

    v = H.vocab()
    bm = allocate_bitmask(v.size)
    cases = [(TREE, [_tree(4), _tree(2)]),
             (VARIANTS, [[{"image": "a", "context": ".", "docker": {"file": "D"}},
                          {"context": "x", "image": "b", "bazel": {"target": "//t"}},
                          {"image": "c"}]]),
             (FAR, [{"s": ["a" * k + " b" * k for k in range(1, 12)], "n": 3},
                    {"n": 1, "s": ["x", "yy", "zzz y", "w" * 40]}]),
             (MEMBERS, MEMBER_DOCS), (UP_TO_TWO, UP_TO_TWO_DOCS)]
    shared = across_states = across_frames = 0
    for schema, docs in cases:
        g = H.adapter().compile(json.dumps(schema))
        for doc in docs:
            for ser in H.SERIALIZATIONS.values():
                m = g.matcher()
                for t in v.encode(ser(doc)):
                    m.fill_mask(bm)
                    assert m.commit(t)
        c = g.compiled
        mc = c.masks
        shared += mc.contexts.ctx_shared
        across_frames += mc.contexts.ctx_frame_shared
        fresh = MaskComputer(c.pda, c.trie, c.stop_ids, json_keys=c.json_keys,
                             key_floor=mc.key_floor)
        fresh.contexts._ctx_tops = _NoSharing()
        fresh.contexts._ctx_groups = _NoSharing()
        fresh.contexts._ctx_frames = _NoSharing()
        assert mc.contexts.entries()
        by_stack: dict[int, dict[int, int]] = {}
        for (state, stack), ws in mc.contexts.entries().items():
            by_stack.setdefault(stack, {}).setdefault(id(ws), state)
            across_states += by_stack[stack][id(ws)] != state
            want = fresh.context(state, stack)
            assert np.array_equal(ws.idx, want.idx) and np.array_equal(ws.val, want.val), \
                (schema, state, c.pda.stacks.frames(stack))
    assert shared > 0 and across_states > 0 and across_frames > 0, \
        (shared, across_states, across_frames)


def test_frame_reads_keep_live_frames_outcomes_and_refuse_derived_frames():
    """``FrameReads`` on a stack of two object frames under a return state: a read of a
    live frame is kept by its index from the top; a read of a frame pushed inside the
    computation is not (it is the same from any stack); a frame a guard rewrote from a
    live one makes the computation opaque once read, and so does a rewrite that lands
    on a live frame itself (a count at its cap: the same node, another provenance);
    ``holds`` re-asks the reads of other frames."""
    from reference_engine.pda import FrameReads, Guard, frame_param, frame_ret
    from reference_engine.stack import EMPTY, StackPool

    pool = StackPool()
    base = pool.push(7, EMPTY)
    outer = pool.push(frame_ret(0b01), base)
    inner = pool.push(frame_ret(0b10), pool.push(3, outer))
    add0 = Guard("set", lambda p: None if p & 1 else p | 1, "add 0")
    more = Guard("set", lambda p: p if p < 3 else None, "more", keeps=True)
    vg = (add0,)

    r = FrameReads(pool, inner)
    r.note(inner, add0, pool.push(frame_ret(0b11), pool.parent[inner]))  # live, index 0
    r.note(outer, more, outer)  # live, index 2 (a return state between)
    pushed = pool.push(frame_ret(0), inner)
    r.note(pushed, vg, True)  # pushed inside the computation: not kept
    assert not r.opaque
    assert r.reads == {(0, add0): True, (2, more): True}
    entries = pool.entries(inner, 3)
    viable = lambda g, e: any(x.act(frame_param(e)) is not None for x in g)
    assert FrameReads.holds(tuple(r.reads.items()), entries, viable)
    other = pool.push(frame_ret(0b01), pool.push(3, outer))  # add 0 blocks there
    assert not FrameReads.holds(tuple(r.reads.items()), pool.entries(other, 3), viable)

    derived = pool.push(frame_ret(0b11), pool.parent[inner])
    assert derived in r.derived
    r.note(derived, more, derived)
    assert r.opaque

    r2 = FrameReads(pool, inner)
    at_cap = Guard("set", lambda p: p, "add extra")  # rewrites, here to the same value
    r2.note(inner, at_cap, inner)
    assert r2.opaque
