"""Finite automata over integer alphabets with interval-labelled edges.

The same code serves two alphabets:

- code points (Unicode scalar values: ``0..0x10FFFF`` without the surrogates
  ``0xD800..0xDFFF``), used for everything that constrains a *decoded* string
  (``pattern``, ``format``, ``enum`` strings, property names);
- bytes (``0..255``), used for numbers and other byte-level languages.

A character set is a tuple of disjoint, sorted, non-adjacent closed intervals
``((lo, hi), ...)``. An :class:`NFA` has one start and one final state, interval
edges and epsilon edges; a :class:`DFA` has, per state, a sorted list of
``(lo, hi, target)`` edges. Everything here is eager and exact; the sizes are
bounded by :data:`MAX_STATES` (a :class:`TooLarge` error past it).
"""

from __future__ import annotations

import bisect
from typing import Iterable, Sequence

import numpy as np

#: Unicode scalar values (what a decoded JSON string or a Python str without lone
#: surrogates holds).
CODEPOINTS: tuple[tuple[int, int], ...] = ((0, 0xD7FF), (0xE000, 0x10FFFF))
BYTES: tuple[tuple[int, int], ...] = ((0, 255),)

#: Upper bound on the states of any automaton built eagerly here.
MAX_STATES = 60_000
#: DFAs above this size are not minimised (see :meth:`DFA.minimize`).
MINIMIZE_LIMIT = 3000

CharSet = tuple  # tuple[tuple[int, int], ...]


class TooLarge(Exception):
    """An automaton would exceed :data:`MAX_STATES` states (or the current budget)."""


class _Budget:
    """States that eager constructions may still create (None: unlimited); a compiler
    sets it for the duration of one compilation with :func:`state_budget`."""

    left: int | None = None


_BUDGET = _Budget()


def spend(n: int = 1) -> None:
    if _BUDGET.left is not None:
        _BUDGET.left -= n
        if _BUDGET.left < 0:
            raise TooLarge("automaton construction budget exhausted")


class state_budget:
    def __init__(self, n: int | None):
        self.n = n

    def __enter__(self):
        self.saved = _BUDGET.left
        _BUDGET.left = self.n
        return self

    def __exit__(self, *exc):
        _BUDGET.left = self.saved
        return False


# --------------------------------------------------------------------------- char sets

def cs_norm(intervals: Iterable[tuple[int, int]]) -> CharSet:
    """Sort and merge overlapping or adjacent intervals."""
    iv = sorted((lo, hi) for lo, hi in intervals if lo <= hi)
    out: list[list[int]] = []
    for lo, hi in iv:
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1][1] = hi
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out)


def cs_chars(chars: Iterable[int]) -> CharSet:
    return cs_norm((c, c) for c in chars)


def cs_union(*sets: CharSet) -> CharSet:
    return cs_norm(iv for s in sets for iv in s)


def cs_intersect(a: CharSet, b: CharSet) -> CharSet:
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def cs_complement(a: CharSet, universe: CharSet = CODEPOINTS) -> CharSet:
    out = []
    for ulo, uhi in universe:
        cur = ulo
        for lo, hi in a:
            if hi < cur or lo > uhi:
                continue
            if lo > cur:
                out.append((cur, lo - 1))
            cur = max(cur, hi + 1)
        if cur <= uhi:
            out.append((cur, uhi))
    return cs_norm(out)


def cs_diff(a: CharSet, b: CharSet) -> CharSet:
    if not a:
        return ()
    return cs_intersect(a, cs_complement(b, ((a[0][0], a[-1][1]),)))


def cs_contains(a: CharSet, c: int) -> bool:
    i = bisect.bisect_right(a, (c, float("inf"))) - 1
    return i >= 0 and a[i][0] <= c <= a[i][1]


def cs_size(a: CharSet) -> int:
    return sum(hi - lo + 1 for lo, hi in a)


def partition(edges: Sequence[tuple[CharSet, object]]) -> list[tuple[int, int, frozenset]]:
    """Split the union of the edges' sets into atoms ``(lo, hi, payloads)`` where
    every code point of an atom belongs to exactly the edges whose payloads are
    listed. Adjacent atoms with the same payloads are merged."""
    events: dict[int, list] = {}
    for cs, payload in edges:
        for lo, hi in cs:
            events.setdefault(lo, []).append((1, payload))
            events.setdefault(hi + 1, []).append((-1, payload))
    if not events:
        return []
    points = sorted(events)
    active: dict[object, int] = {}
    out: list[tuple[int, int, frozenset]] = []
    for k, p in enumerate(points):
        for delta, payload in events[p]:
            n = active.get(payload, 0) + delta
            if n:
                active[payload] = n
            else:
                active.pop(payload, None)
        if active and k + 1 < len(points):
            fs = frozenset(active)
            hi = points[k + 1] - 1
            if out and out[-1][2] == fs and out[-1][1] == p - 1:
                out[-1] = (out[-1][0], hi, fs)
            else:
                out.append((p, hi, fs))
    return out


# --------------------------------------------------------------------------- NFA

class NFA:
    """Thompson-style NFA: ``edges[q]`` = list of (charset, target), ``eps[q]`` =
    list of targets. One start, one final."""

    __slots__ = ("edges", "eps", "start", "final")

    def __init__(self) -> None:
        self.edges: list[list[tuple[CharSet, int]]] = []
        self.eps: list[list[int]] = []
        self.start = self.new()
        self.final = self.new()

    def new(self) -> int:
        self.edges.append([])
        self.eps.append([])
        if len(self.edges) > 4 * MAX_STATES:
            raise TooLarge("NFA too large")
        return len(self.edges) - 1

    def closure(self, states: Iterable[int]) -> frozenset:
        seen = set(states)
        stack = list(seen)
        eps = self.eps
        while stack:
            q = stack.pop()
            for t in eps[q]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def to_dfa(self) -> "DFA":
        """Subset construction (the result is trimmed, not minimised)."""
        start = self.closure([self.start])
        index = {start: 0}
        sets = [start]
        dfa_edges: list[list[tuple[int, int, int]]] = [[]]
        finals = []
        i = 0
        while i < len(sets):
            cur = sets[i]
            finals.append(self.final in cur)
            atoms = partition([(cs, t) for q in cur for cs, t in self.edges[q]])
            row = []
            for lo, hi, targets in atoms:
                nxt = self.closure(targets)
                j = index.get(nxt)
                if j is None:
                    j = index[nxt] = len(sets)
                    sets.append(nxt)
                    dfa_edges.append([])
                    spend()
                    if len(sets) > MAX_STATES:
                        raise TooLarge("DFA too large")
                row.append((lo, hi, j))
            spend(len(row) // 4)
            dfa_edges[i] = _merge_row(row)
            i += 1
        return DFA(dfa_edges, finals).trim()


def _merge_row(row: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    row.sort()
    out: list[tuple[int, int, int]] = []
    for lo, hi, t in row:
        if out and out[-1][2] == t and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi, t)
        else:
            out.append((lo, hi, t))
    return out


# --------------------------------------------------------------------------- DFA

class DFA:
    """Deterministic automaton; state 0 is the start. ``edges[s]`` is a sorted list
    of disjoint ``(lo, hi, target)``; missing symbols go nowhere (dead)."""

    __slots__ = ("edges", "finals", "_los", "_lens", "_hash")

    def __init__(self, edges: Sequence[Sequence[tuple[int, int, int]]], finals: Sequence[bool]):
        # tuples: an automaton lives as long as its grammar, and tuples of numbers drop
        # out of the cyclic collector's passes (a list per state was traversed each time;
        # key automata have tens of thousands of states)
        self.edges = tuple(map(tuple, edges))
        self.finals = tuple(finals)
        self._los: list[list[int]] | None = None
        self._lens: LengthOracle | None = None
        self._hash: int | None = None

    # -- basics
    @property
    def n(self) -> int:
        return len(self.edges)

    def is_empty(self) -> bool:
        return not self.finals or not any(self.finals)

    def step(self, s: int, c: int) -> int | None:
        los = self._los
        if los is None:
            los = self._los = tuple(tuple(e[0] for e in row) for row in self.edges)
        row = self.edges[s]
        i = bisect.bisect_right(los[s], c) - 1
        if i >= 0 and row[i][1] >= c:
            return row[i][2]
        return None

    def accepts(self, seq: Iterable[int]) -> bool:
        s: int | None = 0
        if self.is_empty():
            return False
        for c in seq:
            s = self.step(s, c)
            if s is None:
                return False
        return self.finals[s]

    def matches(self, text: str) -> bool:
        return self.accepts(ord(ch) for ch in text)

    def lengths(self) -> "LengthOracle":
        if self._lens is None:
            self._lens = LengthOracle(self)
        return self._lens

    def signature(self) -> tuple:
        return (self.edges, self.finals)

    def __eq__(self, other) -> bool:  # structural (used to share fragments)
        return isinstance(other, DFA) and self.signature() == other.signature()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self.signature())
        return self._hash

    # -- constructors
    @staticmethod
    def empty() -> "DFA":
        return DFA([[]], [False])

    @staticmethod
    def epsilon() -> "DFA":
        return DFA([[]], [True])

    @staticmethod
    def universal(universe: CharSet = CODEPOINTS) -> "DFA":
        return DFA([[(lo, hi, 0) for lo, hi in universe]], [True])

    @staticmethod
    def literal(seq: Sequence[int]) -> "DFA":
        edges = [[(c, c, i + 1)] for i, c in enumerate(seq)] + [[]]
        finals = [False] * len(seq) + [True]
        return DFA(edges, finals)

    @staticmethod
    def strings(words: Iterable[Sequence[int]]) -> "DFA":
        """The finite language ``words`` (a trie, then minimised)."""
        trie: list[dict[int, int]] = [{}]
        finals = [False]
        for w in words:
            s = 0
            for c in w:
                nxt = trie[s].get(c)
                if nxt is None:
                    nxt = trie[s][c] = len(trie)
                    trie.append({})
                    finals.append(False)
                s = nxt
            finals[s] = True
        edges = [_merge_row([(c, c, t) for c, t in d.items()]) for d in trie]
        return DFA(edges, finals).trim().minimize()

    @staticmethod
    def length_window(lo: int, hi: int | None, universe: CharSet = CODEPOINTS) -> "DFA":
        """All strings of ``lo..hi`` symbols (``hi`` None: unbounded)."""
        n = (hi if hi is not None else lo) + 1
        edges: list[list[tuple[int, int, int]]] = []
        for i in range(n):
            if i + 1 < n:
                edges.append([(a, b, i + 1) for a, b in universe])
            elif hi is None:
                edges.append([(a, b, i) for a, b in universe])
            else:
                edges.append([])
        return DFA(edges, [i >= lo for i in range(n)])

    # -- operations
    def trim(self) -> "DFA":
        """Keep the states reachable from the start that can reach a final state."""
        n = self.n
        reach = [False] * n
        reach[0] = True
        stack = [0]
        while stack:
            s = stack.pop()
            for _, _, t in self.edges[s]:
                if not reach[t]:
                    reach[t] = True
                    stack.append(t)
        rev: list[list[int]] = [[] for _ in range(n)]
        for s in range(n):
            if reach[s]:
                for _, _, t in self.edges[s]:
                    rev[t].append(s)
        co = [False] * n
        stack = [s for s in range(n) if reach[s] and self.finals[s]]
        for s in stack:
            co[s] = True
        while stack:
            s = stack.pop()
            for p in rev[s]:
                if not co[p]:
                    co[p] = True
                    stack.append(p)
        if not co[0]:
            return DFA.empty()
        keep = [s for s in range(n) if reach[s] and co[s]]
        remap = {s: i for i, s in enumerate(keep)}
        edges = [_merge_row([(lo, hi, remap[t]) for lo, hi, t in self.edges[s] if t in remap])
                 for s in keep]
        return DFA(edges, [self.finals[s] for s in keep])

    def minimize(self) -> "DFA":
        """Hopcroft partition refinement over *letters* (classes of symbols that every
        state treats alike, so a class like ``\\w`` with hundreds of intervals is one
        letter). Only an optimisation: skipped above :data:`MINIMIZE_LIMIT` states."""
        n = self.n
        if n <= 1 or n > MINIMIZE_LIMIT:
            return self
        lrows, nl = self._letter_rows()
        cls = _hopcroft(lrows, self.finals, nl)
        k = len(set(cls))
        if k == n:
            return self
        order: dict[int, int] = {cls[0]: 0}
        for st in range(n):
            order.setdefault(cls[st], len(order))
        edges: list[list] = [None] * len(order)  # type: ignore[list-item]
        finals = [False] * len(order)
        for st in range(n):
            c = order[cls[st]]
            if edges[c] is None:
                edges[c] = _merge_row([(lo, hi, order[cls[t]]) for lo, hi, t in self.edges[st]])
                finals[c] = self.finals[st]
        return DFA(edges, finals)

    def _letter_rows(self) -> tuple[list[list[int]], int]:
        """``(rows, nl)``: the automaton over *letters* (classes of symbols that every
        state treats alike), ``rows[s][letter]`` the target or -1 (dead)."""
        # charsets per (state, target), interned
        cs_id: dict[tuple, int] = {}
        rows_cs: list[list[tuple[int, int]]] = []
        for row in self.edges:
            by_t: dict[int, list] = {}
            for lo, hi, t in row:
                by_t.setdefault(t, []).append((lo, hi))
            r = []
            for t, ivs in by_t.items():
                k = cs_id.setdefault(tuple(ivs), len(cs_id))
                r.append((k, t))
            rows_cs.append(r)
        atoms = partition([(cs, k) for cs, k in cs_id.items()])
        letter_of: dict[frozenset, int] = {}
        letters_in: list[set[int]] = [set() for _ in cs_id]
        for _, _, members in atoms:
            li = letter_of.setdefault(members, len(letter_of))
            for k in members:
                letters_in[k].add(li)
        nl = len(letter_of)
        lrows = []
        for r in rows_cs:
            row = [-1] * nl
            for k, t in r:
                for li in letters_in[k]:
                    row[li] = t
            lrows.append(row)
        return lrows, nl

    def moore_levels(self, k: int) -> np.ndarray:
        """Bounded equivalence of the states, level by level: an int32 array ``L`` of
        shape ``(k + 1, n)`` where ``L[i, a] == L[i, b]`` iff no string of at most
        ``i`` symbols tells ``a`` and ``b`` apart, i.e. every such string leads both to
        states alike in being final and in being live (some final state reachable).
        Levels refine each other (equal at ``i`` implies equal below ``i``); once a
        level splits no class, every later one equals it (Moore's algorithm, one
        level per row, vectorised over the letters of :meth:`_letter_rows`)."""
        n = self.n
        lrows, nl = self._letter_rows()
        sink = n
        tr = np.full((n + 1, max(nl, 1)), sink, dtype=np.int64)
        if nl:
            r = np.array(lrows, dtype=np.int64).reshape(n, nl)
            tr[:n, :nl] = np.where(r < 0, sink, r)
        live = np.zeros(n + 1, dtype=bool)
        live[:n] = self.finals
        while True:  # live: reaches a final state (a fixpoint over the letter rows)
            grown = live | live[tr].any(axis=1)
            grown[sink] = False
            if (grown == live).all():
                break
            live = grown
        fin = np.zeros(n + 1, dtype=np.int64)
        fin[:n] = self.finals
        _, cls = np.unique(fin * 2 + live, return_inverse=True)
        cls = cls.ravel()
        out = np.empty((k + 1, n), dtype=np.int32)
        out[0] = cls[:n]
        count = int(cls.max()) + 1
        for i in range(1, k + 1):
            sig = np.concatenate([cls[:, None], cls[tr]], axis=1)
            _, new = np.unique(sig, axis=0, return_inverse=True)
            new = new.ravel()
            if int(new.max()) + 1 == count:
                out[i:] = out[i - 1]  # stable: no later level splits a class either
                break
            cls, count = new, int(new.max()) + 1
            out[i] = cls[:n]
        return out

    def complete(self, universe: CharSet) -> "DFA":
        """Add a sink so that every symbol of ``universe`` has a transition."""
        sink = self.n
        edges = []
        for row in self.edges:
            covered = cs_norm((lo, hi) for lo, hi, _ in row)
            gaps = cs_complement(covered, universe)
            edges.append(_merge_row(list(row) + [(lo, hi, sink) for lo, hi in gaps]))
        edges.append([(lo, hi, sink) for lo, hi in universe])
        return DFA(edges, self.finals + (False,))

    def complement(self, universe: CharSet = CODEPOINTS) -> "DFA":
        c = self.complete(universe)
        return DFA(c.edges, [not f for f in c.finals]).trim().minimize()

    def product(self, other: "DFA", mode: str = "and") -> "DFA":
        """``and``: intersection; ``diff``: self minus other; ``or``: union."""
        a0 = None if self.is_empty() else 0
        b0 = None if other.is_empty() else 0
        if (mode == "and" and (a0 is None or b0 is None)) or (mode == "diff" and a0 is None) \
                or (a0 is None and b0 is None):
            return DFA.empty()
        index: dict[tuple, int] = {(a0, b0): 0}
        pairs: list[tuple] = [(a0, b0)]
        edges: list[list[tuple[int, int, int]]] = []
        finals: list[bool] = []
        i = 0
        while i < len(pairs):
            a, b = pairs[i]
            ra = self.edges[a] if a is not None else []
            rb = other.edges[b] if b is not None else []
            fa = a is not None and self.finals[a]
            fb = b is not None and other.finals[b]
            finals.append(fa and fb if mode == "and" else (fa and not fb) if mode == "diff"
                          else (fa or fb))
            row = []
            for lo, hi, (ta, tb) in _pair_rows(ra, rb, mode):
                key = (ta, tb)
                j = index.get(key)
                if j is None:
                    j = index[key] = len(pairs)
                    pairs.append(key)
                    spend()
                    if len(pairs) > MAX_STATES:
                        raise TooLarge("product automaton too large")
                row.append((lo, hi, j))
            spend(len(row) // 4)
            edges.append(_merge_row(row))
            i += 1
        return DFA(edges, finals).trim().minimize()

    def is_universal(self, universe: CharSet = CODEPOINTS) -> bool:
        return (self.n == 1 and self.finals[0]
                and [(lo, hi) for lo, hi, _ in self.edges[0]] == list(universe))

    def intersect(self, other: "DFA") -> "DFA":
        if self.is_universal():
            return other
        if other.is_universal():
            return self
        return self.product(other, "and")

    def minus(self, other: "DFA") -> "DFA":
        return self.product(other, "diff")

    def union(self, other: "DFA") -> "DFA":
        return self.product(other, "or")

    def concat(self, other: "DFA") -> "DFA":
        nfa = NFA()
        a0 = _embed(nfa, self)
        b0 = _embed(nfa, other)
        nfa.eps[nfa.start].append(a0[0])
        for s in a0[1]:
            nfa.eps[s].append(b0[0])
        for s in b0[1]:
            nfa.eps[s].append(nfa.final)
        return nfa.to_dfa().minimize()

    def map_symbols(self, fn) -> "DFA":
        """A new DFA whose edges are ``fn(lo, hi) -> charset`` (for case folding etc.)."""
        nfa = NFA()
        nodes = [nfa.new() for _ in range(self.n)]
        nfa.eps[nfa.start].append(nodes[0])
        for s, row in enumerate(self.edges):
            for lo, hi, t in row:
                nfa.edges[nodes[s]].append((fn(lo, hi), nodes[t]))
            if self.finals[s]:
                nfa.eps[nodes[s]].append(nfa.final)
        return nfa.to_dfa().minimize()

    def example(self, max_len: int = 64) -> list[int] | None:
        """A shortest accepted sequence (BFS), or None if empty."""
        if self.is_empty():
            return None
        prev: dict[int, tuple[int, int] | None] = {0: None}
        queue = [0]
        for s in queue:
            if self.finals[s]:
                out = []
                while prev[s] is not None:
                    p, c = prev[s]
                    out.append(c)
                    s = p
                return out[::-1]
            for lo, _, t in self.edges[s]:
                if t not in prev:
                    prev[t] = (s, lo)
                    queue.append(t)
        return None


def _hopcroft(rows: list[list[int]], finals: list[bool], nl: int) -> list[int]:
    """Hopcroft's algorithm on a partial DFA given as letter rows (-1 = dead); returns
    a class id per state (equal ids: equivalent states)."""
    n = len(rows)
    sink = n  # completes the automaton
    inv: list[dict[int, list[int]]] = [dict() for _ in range(nl)]
    for s_, row in enumerate(rows + [[-1] * nl]):
        for c in range(nl):
            t = row[c] if s_ < n else -1
            t = sink if t < 0 else t
            inv[c].setdefault(t, []).append(s_)
    fin = {s_ for s_ in range(n) if finals[s_]}
    non = set(range(n + 1)) - fin
    blocks: list[set[int]] = [b for b in (fin, non) if b]
    block_of = [0] * (n + 1)
    for bi, b in enumerate(blocks):
        for s_ in b:
            block_of[s_] = bi
    work: set[tuple[int, int]] = set()
    smallest = min(range(len(blocks)), key=lambda i: len(blocks[i]))
    for c in range(nl):
        work.add((smallest, c))
    while work:
        a, c = work.pop()
        touched: dict[int, list[int]] = {}
        invc = inv[c]
        for t in list(blocks[a]):
            for s_ in invc.get(t, ()):
                touched.setdefault(block_of[s_], []).append(s_)
        for bi, xs in touched.items():
            b = blocks[bi]
            if len(xs) == len(b):
                continue
            new = set(xs)
            b -= new
            ni = len(blocks)
            blocks.append(new)
            for s_ in new:
                block_of[s_] = ni
            for d in range(nl):
                if (bi, d) in work:
                    work.add((ni, d))
                else:
                    work.add((ni, d) if len(new) <= len(b) else (bi, d))
    return block_of[:n]


def _embed(nfa: NFA, dfa: DFA) -> tuple[int, list[int]]:
    nodes = [nfa.new() for _ in range(dfa.n)]
    for s, row in enumerate(dfa.edges):
        for lo, hi, t in row:
            nfa.edges[nodes[s]].append((((lo, hi),), nodes[t]))
    return nodes[0], [nodes[s] for s in range(dfa.n) if dfa.finals[s]]


def _pair_rows(ra, rb, mode):
    """Merge two sorted edge rows into ``(lo, hi, (ta, tb))`` segments; ``None``
    marks a missing side (allowed for ``diff`` on the right and for ``or``)."""
    pts = sorted({p for lo, hi, _ in ra for p in (lo, hi + 1)}
                 | {p for lo, hi, _ in rb for p in (lo, hi + 1)})
    out = []
    ia = ib = 0
    for k in range(len(pts) - 1):
        lo, hi = pts[k], pts[k + 1] - 1
        while ia < len(ra) and ra[ia][1] < lo:
            ia += 1
        while ib < len(rb) and rb[ib][1] < lo:
            ib += 1
        ta = ra[ia][2] if ia < len(ra) and ra[ia][0] <= lo else None
        tb = rb[ib][2] if ib < len(rb) and rb[ib][0] <= lo else None
        if mode == "and" and (ta is None or tb is None):
            continue
        if mode == "diff" and ta is None:
            continue
        if ta is None and tb is None:
            continue
        out.append((lo, hi, (ta, tb)))
    return out


# --------------------------------------------------------------------------- lengths

class LengthOracle:
    """Which path lengths lead from a state to a final state.

    For a state ``d`` the sets ``S_k`` of states reachable in exactly ``k`` steps
    are eventually periodic; ``final_at(d, k)`` reads the periodic sequence, and
    :meth:`feasible` answers "is some length in ``[lo, hi]`` accepted from ``d``"."""

    LIMIT = 200_000

    def __init__(self, dfa: DFA):
        self.dfa = dfa
        self._seq: dict[int, tuple[list[bool], int, int]] = {}
        self._succ = [frozenset(t for _, _, t in row) for row in dfa.edges]
        self._memo: dict[tuple[int, int, int | None], bool] = {}
        self._shortest: list[float] | None = None
        self._longest: list[float] | None = None

    def _bounds(self) -> tuple[list[float], list[float]]:
        """Per state, the shortest and the longest accepted continuation (``inf`` for
        none, resp. unbounded; ``-inf`` longest for none), for every state at once in
        time linear in the edges. Most questions need only these: a position past its
        ``minLength`` asks for an acceptance within the budget left (the shortest), one
        without ``maxLength`` for one at least so long (the longest). The periodic
        sequence answers the rest, per state, in time quadratic in the states a long
        counted pattern (``(?:\\S+\\s+){0,99}``) has."""
        if self._shortest is not None:
            return self._shortest, self._longest
        n = self.dfa.n
        succ = self._succ
        pred: list[list[int]] = [[] for _ in range(n)]
        for s in range(n):
            for t in succ[s]:
                pred[t].append(s)
        inf = float("inf")
        short = [inf] * n
        frontier = [s for s in range(n) if self.dfa.finals[s]]
        for s in frontier:
            short[s] = 0
        k = 0
        while frontier:  # breadth first, backwards from the finals
            k += 1
            nxt = []
            for t in frontier:
                for s in pred[t]:
                    if short[s] == inf:
                        short[s] = k
                        nxt.append(s)
            frontier = nxt
        live = [short[s] < inf for s in range(n)]
        # longest: peel live states whose live successors are all done (reverse
        # topological order); what is never peeled reaches a cycle of live states, so
        # goes round it as often as it likes before accepting (unbounded)
        longest: list[float] = [-inf] * n
        out = [sum(1 for t in succ[s] if live[t]) if live[s] else -1 for s in range(n)]
        ready = [s for s in range(n) if out[s] == 0]
        done = [False] * n
        while ready:
            s = ready.pop()
            done[s] = True
            best = 0 if self.dfa.finals[s] else -inf
            for t in succ[s]:
                if live[t] and longest[t] + 1 > best:
                    best = longest[t] + 1
            longest[s] = best
            for q in pred[s]:
                if live[q]:
                    out[q] -= 1
                    if out[q] == 0:
                        ready.append(q)
        for s in range(n):
            if live[s] and not done[s]:
                longest[s] = inf
        self._shortest, self._longest = short, longest
        return short, longest

    def _sequence(self, d: int) -> tuple[list[bool], int, int]:
        got = self._seq.get(d)
        if got is not None:
            return got
        finals = self.dfa.finals
        seen: dict[frozenset, int] = {}
        flags: list[bool] = []
        cur = frozenset([d])
        while cur not in seen:
            if len(flags) > self.LIMIT:
                raise TooLarge("length analysis did not converge")
            seen[cur] = len(flags)
            flags.append(any(finals[s] for s in cur))
            nxt = set()
            for s in cur:
                nxt |= self._succ[s]
            cur = frozenset(nxt)
        tail = seen[cur]
        period = len(flags) - tail
        res = (flags, tail, period)
        self._seq[d] = res
        return res

    def feasible(self, d: int, lo: int, hi: int | None) -> bool:
        """Some accepted continuation from ``d`` has a length in ``[lo, hi]``."""
        lo = max(lo, 0)
        if hi is not None and hi < lo:
            return False
        if lo == 0 or hi is None:
            short, longest = self._bounds()
            return short[d] <= hi if lo == 0 and hi is not None else longest[d] >= lo
        key = (d, lo, hi)
        r = self._memo.get(key)
        if r is not None:
            return r
        flags, tail, period = self._sequence(d)
        end = lo + len(flags) + period if hi is None else min(hi, lo + len(flags) + period)
        r = False
        for k in range(lo, end + 1):
            idx = k if k < len(flags) else tail + (k - tail) % period
            if flags[idx]:
                r = True
                break
        self._memo[key] = r
        return r


def charset_repr(cs: CharSet, universe: CharSet = CODEPOINTS) -> str:
    """``[a-z0-9]`` style text for a set (negated when that is shorter)."""
    def one(c: int) -> str:
        if universe is BYTES:
            ch = chr(c)
            if ch.isalnum() and c < 128:
                return ch
            return {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r", 0x20: " "}.get(c, f"\\x{c:02x}")
        if c in (0x5C, 0x5D, 0x5B, 0x2D, 0x5E):
            return "\\" + chr(c)
        if 0x20 < c < 0x7F:
            return chr(c)
        return {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r", 0x20: " "}.get(
            c, f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}")

    def body(s: CharSet) -> str:
        parts = []
        for lo, hi in s:
            if lo == hi:
                parts.append(one(lo))
            elif hi == lo + 1:
                parts.append(one(lo) + one(hi))
            else:
                parts.append(f"{one(lo)}-{one(hi)}")
        return "".join(parts)

    neg = cs_complement(cs, universe)
    if len(neg) < len(cs):
        return f"[^{body(neg)}]"
    return f"[{body(cs)}]"
