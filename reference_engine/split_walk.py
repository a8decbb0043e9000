"""The walk of a split: which tokens a state accepts, and which wait on the stack.

For an automaton state, :meth:`SplitWalker.walk_split` walks the token trie from it
(:meth:`~reference_engine.trie.TokenTrie.walk_root`) and follows the walk's exits
through whatever is known without the live stack (the *context expansion*): calls (a
push needs no stack: a *local* stack of the return states pushed within the token),
object guards of frames pushed within the token, rule ends that pop the local stack,
the single return state of a rule called from one place
(:attr:`~reference_engine.pda.PDA.unique_return`, at most :data:`MAX_STATIC_POPS` in
a row) and the end of a start rule nothing calls. What is left are the exits that
must pop or read the real stack: their trie nodes are the split's context-dependent
groups (``pops`` by frames popped statically, ``guards`` by frames popped and guard
state), settled at run time by :mod:`reference_engine.contexts`.

Invariants: the walk reads the state and the trie only (never a stack), so its result
is a function of the state; its memos (local closures, subtrees below first bytes
shared by the states that reach them) are keyed so and live as long as the grammar.
"""

from __future__ import annotations

import numpy as np

from reference_engine.maskcache import (SORT_PACK_MAX, Census, NodeMask, node_mask,
                                        node_mask_of_ids)
from reference_engine.frames import any_passes, frame_param, frame_ret
from reference_engine.pda import PDA
from reference_engine.trie import TokenTrie, group_exits
from reference_engine.trie_walk import walk_roots

#: Frames the split may pop statically in a row (a guard: chains of single-site
#: rules are as deep as the grammar's nesting, far below this).
MAX_STATIC_POPS = 64
#: Trie nodes (plus exits) the shared-subtree memo may hold per compiled grammar
#: (int32: 4 bytes each).
SUBTREE_MEMO_NODES = 8_000_000


class SplitWalker:
    """Full walks of splits for one compiled grammar and vocabulary, with their memos."""

    def __init__(self, pda: PDA, trie: TokenTrie, words: int):
        self.pda = pda
        self.trie = trie
        self.words = words
        self._lclosure: dict[tuple, tuple] = {}
        #: subtrees below the first byte, shared by the states that reach them
        #: (:meth:`~reference_engine.trie.TokenTrie.walk_root`), within a node budget
        self._sub: dict[tuple[int, int], tuple] = {}
        self._sub_budget = [SUBTREE_MEMO_NODES]

    def memo_bytes(self) -> int:
        """Bytes of the arrays the subtree memo holds (containers not counted)."""
        total = 0
        for alive, (en, es) in self._sub.values():
            total += alive.nbytes + en.nbytes + es.nbytes
        return total

    def local_closure(self, t: int, lst: tuple, k: int) -> tuple:
        """Byte-consuming configurations reachable from state ``t`` with the *local*
        stack ``lst`` (entries pushed inside the current token, top last: return states,
        and object frames as negative numbers) after ``k`` statically known frames of
        the real stack were popped; the final states from which a rule end must pop the
        real stack, and the states whose object guards need the frame on the real stack
        (both context-dependent); and whether a return was known statically."""
        key = (t, lst, k)
        got = self._lclosure.get(key)
        if got is not None:
            return got
        pda = self.pda
        confs: list[tuple[int, tuple, int]] = []
        pops: list[tuple[int, int]] = []
        guards: list[tuple[int, int]] = []
        moved = False
        seen = {key}
        work = [key]
        while work:
            s, l, kk = work.pop()
            local = bool(l) and l[-1] < -1  # the object frame is on the local stack
            if pda.has_bytes[s]:
                vg = pda.vguards[s]
                if vg is None:
                    confs.append((s, l, kk))
                elif local:
                    if any_passes(vg, frame_param(l[-1])):
                        confs.append((s, l, kk))
                else:
                    guards.append((s, kk))
            for r, ret in pda.state_calls[s]:
                new = (pda.entry_state[r], l + (ret,), kk)
                if new not in seen:
                    seen.add(new)
                    work.append(new)
            for g, tg in pda.state_guards[s]:
                if g.kind == "open":
                    new = (tg, l + (frame_ret(0),), kk)
                elif local:
                    entries = g.after(frame_param(l[-1]))
                    if entries is None:
                        continue
                    new = (tg, l[:-1] + entries, kk)
                else:
                    if (s, kk) not in guards:
                        guards.append((s, kk))
                    continue
                if new not in seen:
                    seen.add(new)
                    work.append(new)
            if pda.final[s]:
                if l:
                    new = (l[-1], l[:-1], kk)
                else:
                    r = pda.state_rule[s]
                    if r == 0 and not pda.call_sites[0]:
                        # the end of a start rule nothing calls: the stack is empty, the
                        # document ends here and nothing may follow (known statically)
                        moved = True
                        continue
                    u = pda.unique_return[r]
                    if u < 0 or kk >= MAX_STATIC_POPS:
                        pops.append((s, kk))
                        continue
                    moved = True
                    new = (u, (), kk + 1)
                if new not in seen:
                    seen.add(new)
                    work.append(new)
        # tuples: the memo lives as long as the grammar, and tuples of numbers drop out
        # of the cyclic collector's passes (three lists per entry were traversed each time)
        got = (tuple(confs), tuple(pops), tuple(guards), moved)
        self._lclosure[key] = got
        return got

    def through(self, t: int) -> tuple[int, ...]:
        """The byte-reading states a byte leading to state ``t`` leaves the walk in,
        through calls and object guards (a frame pushed within the token), as far as
        they are known without the live stack."""
        if t < 0:
            return ()
        if not self.pda.exit_list[t]:
            return (t,)
        return tuple(c[0] for c in self.local_closure(t, (), 0)[0])

    def walked(self, state: int) -> NodeMask:
        """The split of ``state`` walked in full, derived from no other (for tests)."""
        return self.node_of_walk(*self.walk_split(state, None, False))

    def node_of_walk(self, alive_nodes: np.ndarray, pops: tuple, guards: tuple) -> NodeMask:
        """The :class:`NodeMask` of a walked split (see :meth:`walk_split`)."""
        if alive_nodes.size <= SORT_PACK_MAX:
            # a narrow position (most structural ones): its few tokens, not a pass over
            # the whole vocabulary
            return node_mask_of_ids(self.trie.tokens_at(np.unique(alive_nodes)), self.words,
                                    pops, guards)
        return node_mask(self.trie.token_flags(alive_nodes), self.words, pops, guards)

    def walk_split(self, state: int, only: set[int] | None, census: bool):
        """The walks of the split of ``state`` (of the tokens beginning with a byte of
        ``only``, or all): ``(alive trie nodes, pops, guards)``, or with ``census`` the
        :class:`Census` (the same walks, which by then hit the memos)."""
        trie, pda = self.trie, self.pda
        nodes, exits = trie.walk_root(pda, state, self._sub, self._sub_budget, only)
        alive, cd_exits, gd_exits, at_alive, via_return = self.waves(exits)
        alive.insert(0, nodes)
        if at_alive:
            alive.append(np.array(at_alive, dtype=np.int64))
        alive_nodes = np.concatenate(alive) if len(alive) > 1 else alive[0]
        if census:
            return self._count(nodes, trie.token_flags(alive_nodes), len(alive) > 1, exits,
                               cd_exits, gd_exits, via_return)
        return (alive_nodes,) + self.exit_groups(cd_exits, gd_exits)

    def exit_groups(self, cd_exits: list, gd_exits: list) -> tuple[tuple, tuple]:
        """``(pops, guards)`` of a split from its walk's context-dependent exits, grouped
        by frames popped statically (and guard state), for the run-time pop."""
        by_k: dict[int, list[int]] = {}
        for n, kk in cd_exits:
            by_k.setdefault(kk, []).append(n)
        by_g: dict[tuple[int, int], list[int]] = {}
        for n, kk, sg in gd_exits:
            by_g.setdefault((kk, sg), []).append(n)
        pops = tuple((kk, tuple(sorted(set(ns)))) for kk, ns in sorted(by_k.items()))
        guards = tuple((kk, sg, tuple(sorted(set(ns)))) for (kk, sg), ns in sorted(by_g.items()))
        return pops, guards

    def waves(self, exits: tuple[np.ndarray, np.ndarray]) -> tuple:
        """Follow the exits ``(nodes, states)`` of a split's walk through calls, rule
        ends known statically and guards of frames pushed inside the token, walking on
        below them, until only context-dependent exits are left. Returns ``(alive
        node arrays, context-dependent pops (node, frames popped), guards (node,
        frames popped, guard state), stop nodes alive whatever the frame, nodes where
        a single-site rule's return was used)``."""
        trie, pda = self.trie, self.pda
        count = trie._py_count
        stop = pda.stop_list
        alive: list[np.ndarray] = []
        kids = trie.child_count32
        cd_exits: list[tuple[int, int]] = []  # (trie node, frames popped statically)
        gd_exits: list[tuple[int, int, int]] = []  # (trie node, frames popped, guard state)
        at_alive: list[int] = []  # stop nodes whose tokens live whatever the frame
        via_return: list[int] = []  # trie nodes where a single-site rule's return was used
        work: dict[tuple, list[int]] = {}
        for t, ns in group_exits(exits, kids, pda.stopflag):
            work[(t, (), 0)] = ns
        seen: set = set()
        while work:
            # In waves: every walk the current work items call for goes into one
            # compiled walk, so the walks share its rounds of building new rows.
            wave, work = work, {}
            roots: list[int] = []
            states: list[int] = []
            spans: list[tuple[int, int, tuple, int]] = []  # (first root, end, l2, k2)
            for (t, lst, k), ns in wave.items():
                confs, pops, guards, lookahead = self.local_closure(t, lst, k)
                if lookahead:
                    via_return.extend(ns)
                for _, kk in pops:
                    cd_exits.extend((n, kk) for n in ns)
                for sg, kk in guards:
                    gd_exits.extend((n, kk, sg) for n in ns)
                is_stop = stop[t]
                if is_stop and (confs or pops or lookahead):
                    at_alive.extend(ns)
                for s2, l2, k2 in confs:
                    if not is_stop and s2 == t and l2 == lst and k2 == k:
                        continue  # the pure continuation: the walk that found the exit went on
                    todo = []
                    for n in ns:
                        key = (n, s2, l2, k2)
                        if count[n] and key not in seen:
                            seen.add(key)
                            todo.append(n)
                    if todo:
                        spans.append((len(roots), len(roots) + len(todo), l2, k2))
                        roots.extend(todo)
                        states.extend([s2] * len(todo))
            if not roots:
                continue
            a2, _, (en, es), e_off = walk_roots(trie, pda, roots, states, alive_by_root=False)
            if a2.size:
                alive.append(a2)
            for r0, r1, l2, k2 in spans:
                lo, hi = e_off[r0], e_off[r1]
                if lo < hi:
                    for t2, ns2 in group_exits((en[lo:hi], es[lo:hi]), kids, pda.stopflag):
                        work.setdefault((t2, l2, k2), []).extend(ns2)
        return alive, cd_exits, gd_exits, at_alive, via_return

    def _count(self, nodes, accepted, expanded: bool, exits, cd_exits, gd_exits,
               via_return) -> Census:
        """The :class:`Census` from a split's pieces (see :meth:`walk_split`): ``nodes``,
        the first walk's alive nodes; ``expanded``, whether walks went on from exits."""
        trie = self.trie
        cd = np.zeros(trie.vocab_size, dtype=bool)
        cd_nodes = sorted({n for n, _ in cd_exits} | {n for n, _, _ in gd_exits})
        if cd_nodes:
            cd[trie.tokens_below(cd_nodes)] = True
        if gd_exits:
            cd[trie.tokens_at(np.array(sorted({n for n, _, _ in gd_exits}), dtype=np.int64))] = True
        cd &= ~accepted
        # the split without any expansion: tokens below an exit would be context-dependent
        plain_exits = exits[0][trie.child_count32[exits[0]] > 0]
        plain_cd = np.zeros(trie.vocab_size, dtype=bool)
        if plain_exits.size:
            plain_cd[trie.tokens_below(plain_exits)] = True
        plain_cd &= ~(trie.token_flags(nodes) if expanded else accepted)
        moved_return = 0
        if via_return:
            la = np.zeros(trie.vocab_size, dtype=bool)
            la[trie.tokens_below(sorted(set(via_return)))] = True
            moved_return = int((la & plain_cd & ~cd).sum())
        n_cd = int(cd.sum())
        return Census(n_cd, max(0, int(plain_cd.sum()) - n_cd), moved_return)
