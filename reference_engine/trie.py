"""Token trie over a vocabulary's raw bytes, and the walk used for masks.

The trie is stored as flat numpy arrays in breadth-first order, so that the
children of a node are contiguous and sorted by byte: ``child_start[v]``,
``child_count[v]``, ``node_byte[v]`` (the byte on the edge into ``v``). Tokens end at
nodes (``token_node[id]``; several ids may share bytes). Built with numpy from the
sorted token list in a few hundred milliseconds for 128k tokens.

:meth:`TokenTrie.walk` runs a PDA state over a whole subtree breadth first with
``table[state, byte]`` lookups (the loop is compiled: :mod:`reference_engine.trie_walk`),
pruning dead subtrees. It returns the nodes it reached alive and the *exits*: nodes
reached in a state where the current rule may end or call another rule, whose
continuation depends on the stack, or where an object's frame decides (*stop* states:
neither alive nor walked below here).
"""

from __future__ import annotations

import numpy as np

from reference_engine.encoding import json_chars_started
from reference_engine.trie_walk import (group_sorted, ids_at_nodes, token_flags, walk_roots,
                                        warm_up)

#: Subtrees below a first byte shared between states through the walk memo: at least
#: this many nodes. (Opening the memo one or two levels deeper, in Python, paid off
#: while the walk was numpy; with the compiled walk it costs more than it saves.)
MEMO_MIN_SUBTREE = 256


class TokenTrie:
    def __init__(self, tokens, excluded=()):
        """``tokens[i]``: raw bytes of token ``i``; ``excluded`` ids (special tokens)
        and empty tokens are left out."""
        excluded = set(excluded)
        self.vocab_size = len(tokens)
        ids = [i for i, t in enumerate(tokens) if t and i not in excluded]
        toks = [bytes(tokens[i]) for i in ids]
        order = sorted(range(len(toks)), key=toks.__getitem__)
        toks = [toks[i] for i in order]
        ids = [ids[i] for i in order]
        n = len(toks)
        lens = np.fromiter((len(t) for t in toks), dtype=np.int64, count=n)
        maxlen = int(lens.max()) if n else 0
        mat = np.full((n, maxlen), -1, dtype=np.int16)
        if n:
            buf = np.frombuffer(b"".join(toks), dtype=np.uint8)
            rows = np.repeat(np.arange(n), lens)
            offs = np.cumsum(lens) - lens
            cols = np.arange(buf.size) - np.repeat(offs, lens)
            mat[rows, cols] = buf
        # lcp with the previous token
        lcp = np.zeros(n, dtype=np.int64)
        if n > 1:
            eq = (mat[1:] == mat[:-1]) & (mat[1:] >= 0)
            lcp[1:] = np.cumprod(eq, axis=1).sum(axis=1)
        # node (depth d, first token i) exists iff len[i] >= d and lcp[i] < d
        node_byte = [0]
        parent = [-1]
        depth_starts: list[np.ndarray] = [np.array([0])]  # first token index per node
        depth_ids: list[np.ndarray] = [np.array([0])]
        next_id = 1
        token_node_sorted = np.full(n, -1, dtype=np.int64)
        for d in range(1, maxlen + 1):
            starts = np.nonzero((lens >= d) & (lcp < d))[0]
            nid = np.arange(next_id, next_id + starts.size)
            next_id += starts.size
            # parent: node at depth d-1 whose first-token index is the largest <= start
            prev_starts, prev_ids = depth_starts[-1], depth_ids[-1]
            par = prev_ids[np.searchsorted(prev_starts, starts, side="right") - 1]
            node_byte.append(mat[starts, d - 1].astype(np.int64))
            parent.append(par)
            depth_starts.append(starts)
            depth_ids.append(nid)
            ends = np.nonzero(lens == d)[0]
            if ends.size:
                token_node_sorted[ends] = nid[np.searchsorted(starts, ends, side="right") - 1]
        self.n_nodes = next_id
        # Lexicographic token order is the trie's preorder: the tokens at or below a node
        # are one contiguous range of it. sub_lo/sub_hi (per node, into ``lex_ids``) let
        # the mask cache list the tokens below a context-dependent node without a walk.
        sub_lo = np.zeros(next_id, dtype=np.int64)
        sub_hi = np.zeros(next_id, dtype=np.int64)
        sub_hi[0] = n
        for d in range(1, maxlen + 1):
            starts, nid = depth_starts[d], depth_ids[d]
            cut = np.nonzero(lcp < d)[0]  # a subtree at depth d ends where lcp drops below d
            nxt = np.searchsorted(cut, starts, side="right")
            sub_lo[nid] = starts
            sub_hi[nid] = np.where(nxt < cut.size, cut[np.minimum(nxt, cut.size - 1)], n)
        self.sub_lo, self.sub_hi = sub_lo, sub_hi
        self.lex_ids = np.array(ids, dtype=np.int64)
        self.node_byte = np.concatenate([np.array([0])] + node_byte[1:]).astype(np.int64)
        par_all = np.concatenate([np.array([-1])] + parent[1:]).astype(np.int64)
        self.parent = par_all
        counts = np.bincount(par_all[1:], minlength=self.n_nodes).astype(np.int64)
        self.child_count = counts
        # BFS numbering with parents in increasing order: children are contiguous
        first = np.full(self.n_nodes, 0, dtype=np.int64)
        kids = np.arange(1, self.n_nodes)
        # first child of each parent = smallest child id with that parent
        order_p = par_all[1:]
        firsts = np.full(self.n_nodes, self.n_nodes, dtype=np.int64)
        np.minimum.at(firsts, order_p, kids)
        first[:] = np.where(counts > 0, firsts, 0)
        self.child_start = first
        token_node = np.full(self.vocab_size, -1, dtype=np.int64)
        token_node[np.array(ids, dtype=np.int64)] = token_node_sorted
        self.token_node = token_node
        # tuples, not lists, here and below: a tuple of ints or bytes drops out of the
        # cyclic garbage collector after its first pass, a list is traversed by every
        # full collection (about 0.1 s for these few million entries, landing in
        # whichever mask happens to allocate past the collector's threshold)
        self.token_bytes = tuple(bytes(t) for t in tokens)
        # CSR: tokens ending at each node
        valid = np.nonzero(token_node >= 0)[0]
        by_node = valid[np.argsort(token_node[valid], kind="stable")]
        self.end_ids = by_node
        self.end_start = np.searchsorted(token_node[by_node], np.arange(self.n_nodes + 1))
        self.node_depth = np.zeros(self.n_nodes, dtype=np.int64)
        for d, nid in enumerate(depth_ids):
            self.node_depth[nid] = d
        self.maxlen = maxlen
        # subtree sizes (descendants), for choosing the Python walk on small subtrees
        sub = np.zeros(self.n_nodes, dtype=np.int64)
        for d in range(len(depth_ids) - 1, 0, -1):
            nid = depth_ids[d]
            np.add.at(sub, par_all[nid], sub[nid] + 1)
        self.subtree = sub
        # per node, the most bytes a token below it reads past it (0 at a leaf): two
        # states that no string of that length tells apart walk the subtree alike
        height = np.zeros(self.n_nodes, dtype=np.int64)
        for d in range(len(depth_ids) - 1, 0, -1):
            nid = depth_ids[d]
            np.maximum.at(height, par_all[nid], height[nid] + 1)
        self.height32 = height.astype(np.int32)
        self.node_byte32 = self.node_byte.astype(np.int32)
        self.child_start32 = self.child_start.astype(np.int32)
        self.child_count32 = self.child_count.astype(np.int32)
        # token -> node with a sentinel node (n_nodes) for tokens outside the trie
        self.token_node_safe = np.where(token_node >= 0, token_node, self.n_nodes).astype(np.int32)
        self._py_start = tuple(self.child_start.tolist())
        self._py_count = tuple(self.child_count.tolist())
        self._py_byte = tuple(self.node_byte.tolist())
        self._py_sub = tuple(sub.tolist())
        warm_up()

    # ------------------------------------------------------------------ helpers
    def token_flags(self, nodes: np.ndarray) -> np.ndarray:
        """Bool per token id: does the token end at one of ``nodes``."""
        return token_flags(self, nodes)

    def tokens_at(self, nodes: np.ndarray) -> np.ndarray:
        """Token ids ending at any of ``nodes`` (int64, in the order of ``nodes``)."""
        if nodes.size == 0:
            return np.zeros(0, dtype=np.int64)
        return ids_at_nodes(nodes, self.end_start, self.end_ids)

    def json_chars(self) -> np.ndarray:
        """Per token id, the characters JSON string content begins reading it from
        between characters (:func:`~reference_engine.encoding.json_chars_started`;
        ``2**30`` where it cannot be read so). Computed once per trie (~0.1 s)."""
        got = getattr(self, "_json_chars", None)
        if got is None:
            out = np.full(self.vocab_size, 1 << 30, dtype=np.int64)
            for t, d in enumerate(self.token_bytes):
                n = json_chars_started(d)
                if n is not None:
                    out[t] = n
            got = self._json_chars = out
        return got

    def json_chars_node(self, node: int) -> int:
        """:meth:`json_chars` of the bytes from the root to ``node`` (memoised)."""
        memo = self.__dict__.setdefault("_json_chars_node", {})
        got = memo.get(node)
        if got is None:
            n = json_chars_started(self.node_path(node))
            got = memo[node] = 1 << 30 if n is None else n
        return got

    def node_path(self, node: int) -> bytes:
        """The bytes from the root to ``node``."""
        path = []
        v = node
        while v > 0:
            path.append(int(self.node_byte[v]))
            v = int(self.parent[v])
        return bytes(reversed(path))

    def tokens_under(self, node: int) -> np.ndarray:
        """Token ids ending at or below ``node`` (one range of the lexicographic order)."""
        return self.lex_ids[self.sub_lo[node]:self.sub_hi[node]]

    def tokens_below(self, nodes) -> np.ndarray:
        """Token ids ending strictly below any of ``nodes`` (not at the node itself);
        ids may repeat when the subtrees overlap."""
        nodes = np.asarray(nodes, dtype=np.int64)
        if nodes.size == 0:
            return np.zeros(0, dtype=np.int64)
        # tokens ending at the node itself come first in its lexicographic range
        lo = self.sub_lo[nodes] + (self.end_start[nodes + 1] - self.end_start[nodes])
        hi = self.sub_hi[nodes]
        cnt = np.maximum(hi - lo, 0)
        total = int(cnt.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64)
        idx = np.repeat(lo - np.cumsum(cnt) + cnt, cnt) + np.arange(total)
        return self.lex_ids[idx]

    def children(self, node: int) -> np.ndarray:
        s = int(self.child_start[node])
        return np.arange(s, s + int(self.child_count[node]), dtype=np.int64)

    def node_of(self, data: bytes) -> int | None:
        """The node of a byte string (None if no token starts with it)."""
        v = 0
        for b in data:
            s, c = int(self.child_start[v]), int(self.child_count[v])
            kids = self.node_byte[s:s + c]
            j = int(np.searchsorted(kids, b))
            if j >= c or kids[j] != b:
                return None
            v = s + j
        return v

    # ------------------------------------------------------------------ walk
    # Exits are a pair of int32 arrays ``(nodes, states)``: the trie nodes reached in a
    # state where a rule may end, call another one or meet an object guard.

    def walk(self, pda, state: int, node: int):
        """Run ``state`` over the subtree below ``node`` (not ``node`` itself).

        Returns ``(alive_nodes, exits)``: the nodes reached with a live state (as one
        numpy array) and the exits ``(nodes, states)`` where the state can end its rule,
        call another one or meet an object guard (the stack decides what follows)."""
        if self._py_count[node] == 0:
            return np.zeros(0, dtype=np.int32), NO_EXITS
        alive, _, exits, _ = walk_roots(self, pda, [node], [state], grouped=False)
        return alive, exits

    def walk_root(self, pda, state: int, memo: dict, budget: list[int], only=None):
        """:meth:`walk` from the root, with the subtrees below the first byte shared
        through ``memo`` (per compiled grammar): ``(depth-1 node, state there)`` →
        ``(alive nodes, exits)`` of that subtree, for subtrees of at least
        :data:`MEMO_MIN_SUBTREE` nodes.

        States reading free text (a string's content, an object key) lead most first
        bytes into one and the same state, whose subtree is then walked once for all
        the states that reach it, not once per state. ``budget``: a one-element list,
        the memo's remaining capacity in stored nodes (nothing is stored at 0).
        ``only``: a set of first bytes; the walk covers the tokens beginning with one
        of them and no others (None: all)."""
        if self._py_count[0] == 0:
            return self.walk(pda, state, 0)
        row = pda.rows[state]
        if row is None:
            row = pda.materialise(state)
        exitflag, stopflag = pda.exit_list, pda.stop_list
        start, count, byte, sub = self._py_start, self._py_count, self._py_byte, self._py_sub
        first: list[int] = []
        ex_n: list[int] = []
        ex_s: list[int] = []
        parts: list[tuple] = []  # (alive, exits) of the first bytes' subtrees
        batch: list[tuple[int, int]] = []
        for c in range(start[0], start[0] + count[0]):
            t = row[byte[c]]
            if t < 0 or (only is not None and byte[c] not in only):
                continue
            if exitflag[t]:
                ex_n.append(c)
                ex_s.append(t)
                if stopflag[t]:
                    continue
            first.append(c)
            if not count[c]:
                continue
            if sub[c] >= MEMO_MIN_SUBTREE:
                got = memo.get((c, t))
                if got is not None:
                    parts.append(got)
                    continue
            batch.append((c, t))
        if batch:
            alive, a_off, (en, es), e_off = walk_roots(self, pda, [c for c, _ in batch],
                                                       [t for _, t in batch])
            parts.append((alive, (en, es)))
            for j, key in enumerate(batch):
                if budget[0] > 0 and sub[key[0]] >= MEMO_MIN_SUBTREE:
                    # views into the walk's own arrays (fresh, never written again)
                    a = alive[a_off[j]:a_off[j + 1]]
                    ex = (en[e_off[j]:e_off[j + 1]], es[e_off[j]:e_off[j + 1]])
                    memo[key] = (a, ex)
                    budget[0] -= a.size + ex[0].size + 16
        alive = np.concatenate([np.array(first, dtype=np.int32)] + [a for a, _ in parts])
        exits = (np.concatenate([np.array(ex_n, dtype=np.int32)] + [e[0] for _, e in parts]),
                 np.concatenate([np.array(ex_s, dtype=np.int32)] + [e[1] for _, e in parts]))
        return alive, exits


#: The exits of a walk that has none.
NO_EXITS = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32))


def group_exits(exits, child_count: np.ndarray,
                stopflag: np.ndarray) -> list[tuple[int, tuple[int, ...]]]:
    """``[(state, nodes), ...]``: the exits ``(nodes, states)`` a walk goes on from (those
    at a stop state, and those with children below), grouped by state; states and each
    group's nodes ascending (one compiled pass: numpy's sort-and-cut cost ~6 us of calls
    on the few exits of most walks)."""
    en, es = exits
    if not en.size:
        return []
    states, bounds, nodes = group_sorted(en, es, child_count, stopflag)
    st, b, nl = states.tolist(), bounds.tolist(), nodes.tolist()
    return [(st[i], tuple(nl[b[i]:b[i + 1]])) for i in range(len(st))]
