"""The trie walk's inner loop, compiled (numba).

One call walks several ``(trie node, automaton state)`` roots: the subtree strictly
below each root is run from its state, breadth first, pruning dead subtrees. The
automaton's DFA is lazy (rows are built in Python on first use), so the kernel cannot
finish a walk alone: where it meets a state whose row is not built yet it stops that
branch and reports it as *pending*; :func:`walk_roots` builds those rows and resumes
from the pending pairs until none is left. A grammar's rows are mostly built within its
first few masks, so later walks finish in one call.

Why compiled: the walk visits up to every trie node (about 300,000 for a 128k
vocabulary) per automaton node; the numpy level-by-level walk it replaces paid
per-level overhead and fell back to Python for small frontiers. Compiled, the walk pays
neither, so a full walk of a string's content (most of the trie alive) costs a few
milliseconds.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit

from reference_engine.maskcache import clear_ids, or_pairs, sorted_pairs


@njit(cache=True, nogil=True)
def _kernel(table, materialised, exitflag, stopflag, child_start, child_count, node_byte,
            roots, states, alive, ex_node, ex_state, pend_node, pend_state, alive_state,
            alive_own, ex_own, pend_own, cap):
    """Walk below ``roots[i]`` from ``states[i]`` for every ``i`` (in order).

    The output and work arrays (``alive`` … ``pend_own``) are the caller's buffers, each
    longer than the number of nodes below all roots plus the number of roots (so they
    never overflow). Returns ``(alive_end, ex_end, pend_end)``: per root ``i`` its
    alive nodes are ``alive[alive_end[i-1]:alive_end[i]]``, likewise its exits
    ``(ex_node, ex_state)`` and its pending pairs ``(pend_node, pend_state)``; the
    ``*_own`` arrays give the root index of each entry. ``cap``: the buffers' length;
    if a walk would write past it, the kernel stops and ``alive_end[0]`` is -1 (the
    caller grows the buffers and runs the round again: the walk has no side effects)."""
    k = roots.shape[0]
    alive_end = np.empty(k, dtype=np.int64)
    ex_end = np.empty(k, dtype=np.int64)
    pend_end = np.empty(k, dtype=np.int64)
    na = 0
    ne = 0
    npd = 0
    # Breadth first, with the alive list itself as the queue (``alive_state`` holds the
    # state reached at each alive node), so no separate stack is needed; the trie is
    # numbered breadth first, so a level's children are read in increasing order.
    for i in range(k):
        head = na
        v = roots[i]
        s = states[i]
        while True:
            if not materialised[s]:
                if npd >= cap:
                    alive_end[0] = -1
                    return alive_end, ex_end, pend_end
                pend_node[npd] = v
                pend_state[npd] = s
                pend_own[npd] = i
                npd += 1
            else:
                c0 = child_start[v]
                if na + child_count[v] > cap or ne + child_count[v] > cap:
                    alive_end[0] = -1
                    return alive_end, ex_end, pend_end
                for c in range(c0, c0 + child_count[v]):
                    t = table[s, node_byte[c]]
                    if t < 0:
                        continue
                    if exitflag[t]:
                        ex_node[ne] = c
                        ex_state[ne] = t
                        ex_own[ne] = i
                        ne += 1
                        if stopflag[t]:
                            continue
                    alive[na] = c
                    alive_state[na] = t
                    alive_own[na] = i
                    na += 1
            # the next alive node that has children
            while head < na and child_count[alive[head]] == 0:
                head += 1
            if head == na:
                break
            v = alive[head]
            s = alive_state[head]
            head += 1
        alive_end[i] = na
        ex_end[i] = ne
        pend_end[i] = npd
    return alive_end, ex_end, pend_end


@njit(cache=True, nogil=True)
def group_sorted(en, es, child_count, stopflag):
    """The exits ``(en, es)`` a walk goes on from (at a stop state, or with children
    below), grouped by state: ``(states, bounds, nodes)`` with state ``states[g]``'s
    nodes ``nodes[bounds[g]:bounds[g + 1]]``, states and each group's nodes ascending."""
    n = en.shape[0]
    keys = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        if child_count[en[i]] > 0 or stopflag[es[i]]:
            keys[m] = (np.int64(es[i]) << 32) | np.int64(en[i])
            m += 1
    keys = np.sort(keys[:m])
    states = np.empty(m, dtype=np.int64)
    bounds = np.empty(m + 1, dtype=np.int64)
    nodes = np.empty(m, dtype=np.int64)
    g = 0
    prev = -1
    for i in range(m):
        st = keys[i] >> 32
        nodes[i] = keys[i] & 0xFFFFFFFF
        if st != prev:
            states[g] = st
            bounds[g] = i
            g += 1
            prev = st
    bounds[g] = m
    return states[:g], bounds[:g + 1], nodes


@njit(cache=True, nogil=True)
def ids_at_nodes(nodes, end_start, end_ids):
    """Token ids ending at any of ``nodes`` (in node order): the ``end_ids`` ranges
    ``end_start[n]:end_start[n + 1]`` concatenated."""
    total = 0
    for n in nodes:
        total += end_start[n + 1] - end_start[n]
    out = np.empty(total, dtype=np.int64)
    k = 0
    for n in nodes:
        for j in range(end_start[n], end_start[n + 1]):
            out[k] = end_ids[j]
            k += 1
    return out


@njit(cache=True, nogil=True)
def _flags(nodes, token_node, n_nodes, out):
    # mark the nodes, then read each token's node: both passes touch memory in order or
    # within a node-sized flag array (the tokens-per-node lists are scattered)
    node_flag = np.zeros(n_nodes + 1, dtype=np.bool_)
    for n in nodes:
        node_flag[n] = True
    for i in range(token_node.shape[0]):
        out[i] = node_flag[token_node[i]]


@njit(cache=True, nogil=True)
def _by_owner(owner, k, values):
    """``values`` stably reordered by ``owner`` (each in ``0..k-1``), and the ``k + 1``
    offsets of each owner's run: a counting sort, linear where an argsort is not."""
    offsets = np.zeros(k + 1, dtype=np.int64)
    for o in owner:
        offsets[o + 1] += 1
    for i in range(k):
        offsets[i + 1] += offsets[i]
    pos = offsets[:-1].copy()
    out = np.empty_like(values)
    for j in range(owner.shape[0]):
        o = owner[j]
        out[pos[o]] = values[j]
        pos[o] += 1
    return out, offsets


def token_flags(trie, nodes: np.ndarray) -> np.ndarray:
    """Bool per token id: does the token end at one of ``nodes`` (int32 or int64)."""
    out = np.empty(trie.vocab_size, dtype=bool)
    _flags(nodes.astype(np.int32, copy=False), trie.token_node_safe, trie.n_nodes, out)
    return out


class _Buffers(threading.local):
    """Per-thread work arrays of the kernel (reused: allocating several MiB per walk
    costs more in page faults than the walk itself). They start at 64k entries and
    double whenever a walk outgrows them."""

    def __init__(self) -> None:
        self.arrays: tuple[np.ndarray, ...] = self._make(1 << 16)

    @staticmethod
    def _make(size: int) -> tuple[np.ndarray, ...]:
        return tuple(np.empty(size, dtype=np.int32) for _ in range(9))

    def grow(self) -> tuple[np.ndarray, ...]:
        self.arrays = self._make(2 * self.arrays[0].size)
        return self.arrays


_BUFFERS = _Buffers()


def walk_roots(trie, pda, roots: list[int], states: list[int], grouped: bool = True,
               alive_by_root: bool = True):
    """Walk the subtree strictly below ``roots[i]`` from ``states[i]``, for every ``i``.

    Returns ``(alive, a_off, exits, e_off)``, grouped by root in root order: root
    ``i``'s trie nodes reached with a live state are ``alive[a_off[i]:a_off[i+1]]`` (one
    int32 array), its exits ``(nodes[e_off[i]:e_off[i+1]], states[e_off[i]:e_off[i+1]])``
    of ``exits = (nodes, states)`` (two int32 arrays: where a rule may end, call or meet
    an object guard; see :class:`~reference_engine.trie.TokenTrie`); the offsets are
    lists of ``k + 1`` ints.
    With ``grouped=False`` the offsets are None and the order is unspecified (cheaper
    when the caller takes the union); with ``alive_by_root=False`` only the exits are
    grouped (``a_off`` is None, the alive nodes in no particular order)."""
    k = len(roots)
    if k == 0:
        return np.zeros(0, dtype=np.int32), [0], (np.zeros(0, dtype=np.int32),) * 2, [0]
    r = np.asarray(roots, dtype=np.int32)
    s = np.asarray(states, dtype=np.int32)
    resumed = False  # a later round (from pending pairs) has run
    owners = None  # (grouped) per root of this round, the caller's root it belongs to
    parts_a: list[np.ndarray] = []
    parts_ao: list[np.ndarray] = []
    parts_en: list[np.ndarray] = []
    parts_es: list[np.ndarray] = []
    parts_eo: list[np.ndarray] = []
    while True:
        bufs = _BUFFERS.arrays
        while True:
            al, exn, exs, pn, ps, _, a_own, e_own, p_own = bufs
            # the table may have grown (and moved) while rows were built
            al_end, ex_end, p_end = _kernel(
                pda.table, pda.materialised, pda.exitflag, pda.stopflag, trie.child_start32,
                trie.child_count32, trie.node_byte32, r, s, *bufs, al.size)
            if al_end[0] >= 0:
                break
            bufs = _BUFFERS.grow()
        na, ne, n_p = int(al_end[-1]), int(ex_end[-1]), int(p_end[-1])
        if not resumed and n_p == 0:
            # one round (rows all built): the kernel's own grouping is the answer
            exits = (exn[:ne].copy(), exs[:ne].copy())
            if not grouped:
                return al[:na].copy(), None, exits, None
            a_off = [0] + al_end.tolist() if alive_by_root else None
            return al[:na].copy(), a_off, exits, [0] + ex_end.tolist()
        parts_a.append(al[:na].copy())
        parts_en.append(exn[:ne].copy())
        parts_es.append(exs[:ne].copy())
        if grouped:
            # entries of this round's roots -> the caller's roots they belong to
            if owners is None:
                parts_ao.append(a_own[:na].copy())
                parts_eo.append(e_own[:ne].copy())
                owners = p_own[:n_p].copy()
            else:
                parts_ao.append(owners[a_own[:na]])
                parts_eo.append(owners[e_own[:ne]])
                owners = owners[p_own[:n_p]]
        if n_p == 0:
            break
        r = pn[:n_p].copy()
        s = ps[:n_p].copy()
        for st in sorted(set(s.tolist())):
            pda.materialise(st)
        resumed = True
    a = np.concatenate(parts_a)
    en = np.concatenate(parts_en)
    es = np.concatenate(parts_es)
    if not grouped:
        return a, None, (en, es), None
    eo = np.concatenate(parts_eo)
    en, e_off = _by_owner(eo, k, en)
    es, _ = _by_owner(eo, k, es)
    if not alive_by_root:
        return a, None, (en, es), e_off.tolist()
    a, a_off = _by_owner(np.concatenate(parts_ao), k, a)
    return a, a_off.tolist(), (en, es), e_off.tolist()


def warm_up() -> None:
    """Load (or compile, the first time on a machine) the kernels now, so that their one-off
    costs (about half a second from numba's on-disk cache) do not land in the first
    mask of the first grammar."""
    one = np.zeros(1, dtype=np.int32)
    _kernel(np.full((1, 256), -1, dtype=np.int32), np.ones(1, dtype=bool),
            np.zeros(1, dtype=bool), np.zeros(1, dtype=bool), one, one, one, one, one,
            *_BUFFERS.arrays, _BUFFERS.arrays[0].size)
    _flags(np.zeros(1, dtype=np.int32), np.zeros(1, dtype=np.int32), 1, np.zeros(1, dtype=bool))
    _by_owner(one, 1, one)
    group_sorted(one, one, one, np.zeros(1, dtype=bool))
    for nodes in (one, one.astype(np.int64)):  # walks give int32 nodes, callers int64
        ids_at_nodes(nodes, np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64))
    sorted_pairs(np.zeros(1, dtype=np.int64), 1)
    _pair_kernel(np.full((1, 256), -1, dtype=np.int32), np.ones(1, dtype=bool),
                 np.zeros(1, dtype=bool), one, one, one, one, one, one, one, 0,
                 np.zeros((1, 1), dtype=np.int32), one, one, one, 1, *([one] * 8))
    clear_ids(np.zeros(1, dtype=np.int32), np.zeros(1, dtype=np.int64))
    for dt in (np.uint16, np.int32):  # word indices of a WordSet (see _index_dtype)
        or_pairs(np.zeros(1, dtype=np.int32), np.zeros(1, dtype=dt), np.zeros(1, dtype=np.int32))


@njit(cache=True, nogil=True)
def _pair_kernel(table, materialised, exitflag, child_start, child_count, node_byte, height,
                 fam, famd, famf, frag, lev, roots, ra, rb, limit, d_node, d_state, p_node,
                 p_a, p_b, s_node, s_a, s_b):
    """Walk the trie below ``roots[i]`` from the pair ``(ra[i], rb[i])`` of states at
    once, depth first, for every ``i``, and list where the two part: the nodes whose
    byte leads them to different states of which one is dead or meets an exit
    (``d_node``, with ``b``'s state there in ``d_state``). Below a node where both
    reach the same state, or two states of fragment ``frag``'s family (``fam``, equal
    ids) whose DFA states (``famd``) no string as long as the subtree's longest token
    tells apart (equal ``lev`` at that height; ``lev`` holds the levels up to some
    height, taller subtrees are walked), the pair cannot part: not walked.
    Pairs with a row not built yet are listed as pending (``p_*``). Returns
    ``(differences, pending, visited)``; ``differences`` is -1 once more than
    ``limit`` children were read (the caller walks in full instead)."""
    k_max = lev.shape[0] - 1
    nd = 0
    npend = 0
    visited = 0
    for i in range(roots.shape[0]):
        s_node[0] = roots[i]
        s_a[0] = ra[i]
        s_b[0] = rb[i]
        top = 1
        while top > 0:
            top -= 1
            v = s_node[top]
            a = s_a[top]
            b = s_b[top]
            visited += child_count[v]
            if visited > limit:
                return -1, npend, visited
            c0 = child_start[v]
            for c in range(c0, c0 + child_count[v]):
                by = node_byte[c]
                ta = table[a, by]
                tb = table[b, by]
                if ta == tb:
                    continue
                if ta < 0 or tb < 0 or exitflag[ta] or exitflag[tb]:
                    d_node[nd] = c
                    d_state[nd] = tb
                    nd += 1
                    continue
                h = height[c]
                if h == 0:
                    continue  # both alive, no exit: the tokens here live from both
                if frag >= 0 and h <= k_max:
                    fa = fam[ta]
                    if fa >= 0 and fa == fam[tb] and famf[fa] == frag:
                        if lev[h, famd[ta]] == lev[h, famd[tb]]:
                            continue
                if not (materialised[ta] and materialised[tb]):
                    p_node[npend] = c
                    p_a[npend] = ta
                    p_b[npend] = tb
                    npend += 1
                    continue
                s_node[top] = c
                s_a[top] = ta
                s_b[top] = tb
                top += 1
    return nd, npend, visited


class _PairBuffers(threading.local):
    """Per-thread work arrays of :func:`_pair_kernel`, reused across calls (a derived
    split is one call, and fresh arrays of ``limit`` entries each time would cost page
    faults on every call); grown to the largest ``limit`` asked for."""

    def __init__(self) -> None:
        self.arrays: tuple[np.ndarray, ...] = ()

    def at_least(self, size: int) -> tuple[np.ndarray, ...]:
        if not self.arrays or self.arrays[0].size < size:
            self.arrays = tuple(np.empty(size, dtype=np.int32) for _ in range(8))
        return self.arrays


_PAIR_BUFFERS = _PairBuffers()


def pair_differences(trie, pda, a: int, b: int, families, frag: int, lev: np.ndarray,
                     limit: int):
    """Where the walks of states ``a`` and ``b`` over the whole trie part (see
    :func:`_pair_kernel`): ``(nodes, b's states there)`` as int64 arrays, every token
    outside their subtrees meeting the same fate from both (the same walk below,
    the same exits); None if that takes more than ``limit`` children read.
    ``families()``: the ``(fam, famd, famf)`` arrays, covering every state so far
    (called again after rows are built, which makes states; not read where ``frag``
    is -1: no family prune)."""
    roots = np.zeros(1, dtype=np.int32)
    ra = np.array([a], dtype=np.int32)
    rb = np.array([b], dtype=np.int32)
    for s in (a, b):
        pda.materialise(s)
    bufs = _PAIR_BUFFERS.at_least(limit + 1)
    d_nodes: list[np.ndarray] = []
    d_states: list[np.ndarray] = []
    while True:
        fam, famd, famf = families()
        nd, npend, visited = _pair_kernel(
            pda.table, pda.materialised, pda.exitflag, trie.child_start32, trie.child_count32,
            trie.node_byte32, trie.height32, fam, famd, famf, frag, lev, roots, ra, rb,
            limit, *bufs)
        if nd < 0:
            return None
        limit -= visited
        d_nodes.append(bufs[0][:nd].astype(np.int64))
        d_states.append(bufs[1][:nd].astype(np.int64))
        if npend == 0:
            break
        roots, ra, rb = bufs[2][:npend].copy(), bufs[3][:npend].copy(), bufs[4][:npend].copy()
        for s in sorted(set(ra.tolist()) | set(rb.tolist())):
            pda.materialise(s)
    return np.concatenate(d_nodes), np.concatenate(d_states)
