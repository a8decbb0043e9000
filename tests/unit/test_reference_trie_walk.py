"""The compiled trie walk (reference_engine/trie_walk.py) against a plain-Python walk,
on the real Llama-3 trie: alive nodes, exits and their grouping per root, from states
whose lazy rows are not built yet (the kernel must hand them back and resume)."""

from __future__ import annotations

import numpy as np
import pytest

from reference_engine import Compiled, compile_json_schema, compile_regex
from reference_engine.trie_walk import walk_roots
from tests.reference_helpers import adapter


def plain_walk(trie, pda, root: int, state: int):
    """Depth-first walk below ``root`` in plain Python, building rows as it meets them."""
    alive, exits = set(), set()
    start, count, byte = trie._py_start, trie._py_count, trie._py_byte
    work = [(root, state)]
    while work:
        v, s = work.pop()
        row = pda.materialise(s)
        for c in range(start[v], start[v] + count[v]):
            t = row[byte[c]]
            if t < 0:
                continue
            if pda.exit_list[t]:
                exits.add((c, t))
                if pda.stop_list[t]:
                    continue
            alive.add(c)
            if count[c]:
                work.append((c, t))
    return alive, exits


def pairs(exits, lo: int = 0, hi: int | None = None) -> set:
    """The ``(node, state)`` pairs of a walk's exits (two arrays), ``lo:hi``."""
    return set(zip(exits[0][lo:hi].tolist(), exits[1][lo:hi].tolist()))


GRAMMARS = {
    "object": lambda: compile_json_schema({
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 12},
                       "tags": {"type": "array", "items": {"enum": ["ä", "b", "日本"]}},
                       "n": {"type": "integer", "minimum": -5}},
        "required": ["name"]}),
    "regex": lambda: compile_regex(r"[a-zé]{2,6}(-[0-9]+)?\"x"),
}


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_walk_roots_equals_plain_walk(name):
    trie = adapter().trie
    # a fresh compilation: the kernel walks first, over rows not built yet (it must hand
    # them back and resume); the plain walk then reads the same states
    fast = slow = Compiled(GRAMMARS[name](), trie).pda
    assert not fast.materialised[fast.start_state]
    rng = np.random.default_rng(7)
    checked = 0
    states = [fast.start_state]
    seen = set(states)
    while states and checked < 12:
        s = states.pop(0)
        # roots: the trie root and a few first-byte nodes, all from the same state
        kids = trie.children(0)
        roots = [0] + sorted(rng.choice(kids, size=4, replace=False).tolist())
        alive, a_off, exits, e_off = walk_roots(trie, fast, roots, [s] * len(roots))
        assert len(a_off) == len(roots) + 1 and len(e_off) == len(roots) + 1
        for i, r in enumerate(roots):
            want_alive, want_exits = plain_walk(trie, slow, r, s)
            got_alive = alive[a_off[i]:a_off[i + 1]].tolist()
            assert len(got_alive) == len(set(got_alive))
            assert set(got_alive) == want_alive, (name, s, r)
            assert pairs(exits, e_off[i], e_off[i + 1]) == want_exits, (name, s, r)
        checked += 1
        # move on to the rules the state calls and the states they return to, the
        # states the walk reached (exits), and a few alive continuations
        nxt = [ret for _, ret in fast.state_calls[s]]
        nxt += [fast.entry_state[r] for r, _ in fast.state_calls[s]]
        nxt += [t for t in exits[1][:50].tolist() if fast.has_bytes[t]]
        nxt += [t for t in fast.materialise(s) if t >= 0 and fast.has_bytes[t]]
        for t in nxt:
            if t not in seen:
                seen.add(t)
                states.append(t)
    assert checked >= 6


def test_walk_roots_mixed_states_and_empty():
    trie = adapter().trie
    pda = ref = Compiled(GRAMMARS["object"](), trie).pda
    alive, a_off, exits, e_off = walk_roots(trie, pda, [], [])
    assert alive.size == 0 and a_off == [0] and not pairs(exits) and e_off == [0]
    configs, _ = pda.initial()
    s0 = configs[0][0]
    after, _ = pda.advance(configs, b'{"na')  # inside a key: a different state
    s1 = after[0][0]
    assert s1 != s0
    leaf = int(np.nonzero(trie.child_count == 0)[0][5])
    roots, states = [0, 0, leaf, 0], [s0, s1, s1, s1]
    alive, a_off, exits, e_off = walk_roots(trie, pda, roots, states)
    for i, (r, s) in enumerate(zip(roots, states)):
        want_alive, want_exits = plain_walk(trie, ref, r, s)
        assert set(alive[a_off[i]:a_off[i + 1]].tolist()) == want_alive
        assert pairs(exits, e_off[i], e_off[i + 1]) == want_exits
    assert a_off[3] == a_off[2]  # a leaf has nothing below it


def test_walk_roots_grouping_exits_only():
    """``alive_by_root=False`` (the split's and the context's walks in waves): the exits
    are still grouped per root and the alive nodes are the union, also when the walk
    has to resume over rows not built yet."""
    trie = adapter().trie
    pda = Compiled(GRAMMARS["object"](), trie).pda
    configs, _ = pda.initial()
    s0 = configs[0][0]
    after, _ = pda.advance(configs, b'{"na')
    s1 = after[0][0]
    kids = trie.children(0).tolist()
    roots, states = [0, 0, kids[40], kids[70]], [s0, s1, s1, s0]
    built = int(pda.materialised.sum())
    alive, a_off, exits, e_off = walk_roots(trie, pda, roots, states, alive_by_root=False)
    assert a_off is None and len(e_off) == len(roots) + 1
    assert int(pda.materialised.sum()) > built  # rows were built on the way: resumed rounds
    want_alive = set()
    for i, (r, s) in enumerate(zip(roots, states)):
        a, want_exits = plain_walk(trie, pda, r, s)
        want_alive |= a
        assert pairs(exits, e_off[i], e_off[i + 1]) == want_exits, i
    assert set(alive.tolist()) == want_alive


def test_token_flags_match_the_token_nodes():
    trie = adapter().trie
    rng = np.random.default_rng(3)
    for size in (0, 1, 50, 5000, trie.n_nodes // 2):
        nodes = rng.choice(trie.n_nodes, size=size, replace=False)
        for dtype in (np.int32, np.int64):
            flags = trie.token_flags(nodes.astype(dtype))
            want = np.isin(trie.token_node, nodes)  # tokens outside the trie: -1, never in
            assert flags.dtype == bool and flags.shape == (trie.vocab_size,)
            assert np.array_equal(flags, want), size


def test_walk_outgrows_its_buffers(monkeypatch):
    """A free-text walk reaches most of the trie (266k nodes): far past fresh buffers
    (64k entries), so the kernel stops, the buffers grow and the round runs again."""
    import reference_engine.trie_walk as tw

    monkeypatch.setattr(tw, "_BUFFERS", tw._Buffers())
    trie = adapter().trie
    pda = Compiled(compile_json_schema({"type": "string"}), trie).pda
    configs, _ = pda.initial()
    (s, _), = pda.advance(configs, b'"')[0]
    alive, _, exits, _ = walk_roots(trie, pda, [0], [s])
    assert tw._BUFFERS.arrays[0].size > 1 << 16
    want_alive, want_exits = plain_walk(trie, pda, 0, s)
    assert alive.size == len(want_alive) > 200_000
    assert set(alive.tolist()) == want_alive and pairs(exits) == want_exits


def test_walk_root_with_its_memo_equals_plain_walk():
    """walk_root reads the first level itself and shares the first bytes' subtrees
    between states through a memo: the second state's walk reuses entries the first
    stored, and both still equal the plain walk."""
    from reference_engine.trie import group_exits

    trie = adapter().trie
    pda = Compiled(GRAMMARS["object"](), trie).pda
    configs, _ = pda.initial()
    states = [pda.advance(configs, data)[0][0][0] for data in (b'{"', b'{"na', b'{"name": "')]
    memo: dict = {}
    budget = [8_000_000]
    for s in states:
        alive, exits = trie.walk_root(pda, s, memo, budget)
        want_alive, want_exits = plain_walk(trie, pda, 0, s)
        assert set(alive.tolist()) == want_alive and len(alive) == len(want_alive)
        assert pairs(exits) == want_exits
        groups = group_exits(exits, trie.child_count32, pda.stopflag)
        want = {}
        for n, t in want_exits:
            if trie.child_count[n] or pda.stop_list[t]:
                want.setdefault(t, set()).add(n)
        assert {t: set(ns) for t, ns in groups} == want
    assert memo and budget[0] < 8_000_000
