"""Byte-level pushdown automaton over the grammar IR.

Compilation (:class:`PDA`):

1. *Productivity* (:mod:`reference_engine.prune`): rules and IR nodes with an empty
   language are pruned, so that every automaton state built later can still reach
   acceptance: "alive" then simply means "not dead".
2. *Rules* and 3. *NFA* (:mod:`reference_engine.nfa`): the rules kept as PDA rules
   (entered by a push; every other reference is inlined), then one Thompson-style
   NFA over bytes for all of them: byte sets, epsilons (some of them object *guards*,
   see below), calls ``(rule, return node)`` and entries into *code-point fragments*
   (:mod:`reference_engine.fragments`). Left recursion is refused. Structurally
   equal rules are merged first.
4. *Lazy DFA*: per rule, the NFA is determinised on demand. A DFA state is a set of
   NFA items (``(node, 0)`` or ``(fragment, dfa state, decoder state, count, 0)``);
   its row of 256 byte transitions is built the first time someone needs it and kept
   in a numpy table shared by all matchers (``table[state, byte]``, -1 = dead). A
   state also lists its calls ``(rule, return state)``, its guards ``(guard, target
   state)`` and whether its rule can end there (``final``).

Objects: which declared members an object has seen (and, where needed, how many
extra members and whether one came) is its *parameter*, kept in a *frame* on the
stack (:class:`Guard`): the body's entry pushes a frame, the end of each key passes
the member's guard (refused if the member was seen, or if adding it leaves the object
impossible to complete), the separator passes a guard that some member can still be
added, ``}`` passes the closing guard (required members present, counts in range) and
pops the frame. The automaton states of a body therefore do not depend on the members
seen: a 50-member object has a few hundred states, visited by every order of its
members, not a new set per member added. A state whose byte-reading items can only
go on through guards (a key prefix that only declared, maybe seen, members
complete) is alive only if one of those guards passes
(:meth:`~reference_engine.closure.Configurations.viable`); a guard that never blocks
(adding an extra member where nothing bounds their number) makes no such state: the
bytes of an unknown key live whatever the frame holds.

Run time (:mod:`reference_engine.closure`): a *configuration* is ``(state, stack)``,
the stack a persistent linked list of return states and object frames
(:mod:`reference_engine.stack`). The closure of a configuration follows calls (push),
guards (against the frame on top) and rule ends (pop) until it reaches states that
consume bytes; reaching the end of the start rule with an empty stack means
"accepting". A token is allowed iff feeding its bytes from some configuration keeps
one alive.
"""

from __future__ import annotations

from array import array

import numpy as np

from reference_engine import ir
# (PLAIN_RUN_CACHE is importable from here too, as before)
from reference_engine.closure import PLAIN_RUN_CACHE, Configurations
from reference_engine.encoding import START
# (FrameReads, Guard and the frame helpers are importable from here too, as before)
from reference_engine.frames import FrameReads, Guard, any_passes, frame_param, frame_ret
from reference_engine.fragments import FragClass
# (GrammarError, the rule-choice limits and strong_components are importable from here
# too, as before)
from reference_engine.nfa import (INLINE_BUDGET, MAX_NFA_NODES, NFA, RUN_RULE_MIN,
                                  GrammarError, strong_components)
from reference_engine.prune import prune_grammar
from reference_engine.stack import StackPool


#: the name the tests know it by
_FragClass = FragClass
_UNSET = object()
_ALL_BYTES = (1 << 256) - 1


# --------------------------------------------------------------------------- the PDA

class PDA:
    """A compiled grammar: its NFA (:class:`~reference_engine.nfa.NFA`), the lazy DFA
    over it (here: other modules read its arrays directly, and :meth:`_grow` replaces
    the numpy ones), its stacks, and its run time
    (:class:`~reference_engine.closure.Configurations`, whose methods it binds as its
    own)."""

    def __init__(self, grammar: ir.Grammar):
        grammar.check()
        pruned, empty = prune_grammar(grammar)
        #: the language is empty: no configuration at all (every mask is empty, EOS never)
        self.empty = empty
        self.grammar = ir.merge_equal_rules(pruned)
        nfa = self.nfa = NFA(self.grammar)
        # Other modules read the NFA off the PDA: the NFA's own objects, shared (the
        # fragment lists grow later, through unwindowed).
        self.rule_names, self.rule_index = nfa.rule_names, nfa.rule_index
        self.byte_edges, self.eps, self.calls, self.frags = (nfa.byte_edges, nfa.eps,
                                                             nfa.calls, nfa.frags)
        self.exit_rule, self.node_rule = nfa.exit_rule, nfa.node_rule
        self.rule_entry, self.rule_exit = nfa.rule_entry, nfa.rule_exit
        self.call_sites = nfa.call_sites
        self.frag_class, self.frag_exit, self.frag_rule = (nfa.frag_class, nfa.frag_exit,
                                                           nfa.frag_rule)
        self.key_frags, self.key_names = nfa.key_frags, nfa.key_names
        self.key_choices = nfa.key_choices
        self.frames_count_members = nfa.frames_count_members
        self.unwindowed = nfa.unwindowed
        self._init_dfa()
        self.stacks = StackPool()
        self.entry_state = [self._intern(self._closure([(self.rule_entry[r], 0)]))
                            for r in range(len(self.rule_names))]
        self.start_state = self.entry_state[self.rule_index[self.grammar.start]]
        self.unique_return = self._unique_returns()
        #: states interned while compiling (rule entries, the return states and guard
        #: targets they list): the grammar's entry points, which decodes pass through
        self.entry_points = self.n_states
        # The run time, bound once: these are called per token byte and per closure,
        # so the PDA adds no lookup of its own on the way.
        cf = self.configs = Configurations(self)
        self.closure, self.closure_low = cf.closure, cf.closure_low
        self.pass_guard, self.viable, self.viable_entry = cf.pass_guard, cf.viable, cf.viable_entry
        self.initial, self.advance = cf.initial, cf.advance

    def _unique_returns(self) -> list[int]:
        """Per rule, the DFA state every one of its frames returns to, or -1.

        A rule called from exactly one place outside any object body (where the
        object's parameter, hence the return state, varies) always returns to the same
        state: the top of every stack seen inside it is that state. The mask cache uses
        it as lookahead (context expansion) instead of consulting the live stack."""
        out = [-1] * len(self.rule_names)
        start = self.rule_index[self.grammar.start]
        for r, sites in enumerate(self.call_sites):
            if r != start and len(sites) == 1 and not sites[0][1]:
                out[r] = self._intern(self._closure([(sites[0][0], 0)]))
        return out

    # ---------------------------------------------------------------- lazy DFA
    def _init_dfa(self) -> None:
        self.n_states = 0
        cap = 64
        self.table = np.full((cap, 256), -1, dtype=np.int32)
        self.materialised = np.zeros(cap, dtype=bool)
        self.exitflag = np.zeros(cap, dtype=bool)
        self.stopflag = np.zeros(cap, dtype=bool)
        self.items: list[frozenset] = []
        # flags and numbers per state in bytearrays and arrays, which the cyclic garbage
        # collector has nothing to traverse in (a list is traversed at every full pass,
        # one visit per state: tens of milliseconds for a schema of 25,000 states)
        self.final = bytearray()
        self.state_rule = array("l")
        self.state_calls: list[tuple] = []
        self.has_bytes = bytearray()
        self.rows: list[tuple[int, ...] | None] = []
        self.exit_list = bytearray()
        self.stop_list = bytearray()
        #: per state, its object-frame guards ``(Guard, target state)``
        self.state_guards: list[tuple] = []
        #: per state, the guards of which one must pass for its byte-reading items to
        #: lead anywhere (None: some path needs no guard, nothing to check)
        self.vguards: list[tuple | None] = []
        self._index: dict[frozenset, int] = {}
        #: the items a byte leads to (before their closure) -> the state they make
        self._goto: dict[frozenset, int] = {}
        self._goto1: dict[tuple, int] = {}  # the same for one item
        #: NFA nodes a state's items continue from -> its guards (see _vguards)
        self._vg_memo: dict[frozenset, tuple | None] = {}
        self._vg_node: dict[int, frozenset | None] = {}  # the same from one NFA node
        self._nclos: dict[int, tuple] = {}  # see _node_closure
        self._bits: dict[int, list[int]] = {}
        self._guarded = [any(act is not None for _, act in self.eps[n])
                         for n in range(len(self.eps))]
        # NFA nodes worth keeping in a DFA state's identity
        self._relevant = [bool(self.byte_edges[n] or self.calls[n] or self.exit_rule[n] >= 0
                               or self._guarded[n])
                          for n in range(len(self.eps))]
        self._rule_guarded = [False] * len(self.rule_names)
        for n, g in enumerate(self._guarded):
            if g:
                self._rule_guarded[self.node_rule[n]] = True

    def _grow(self) -> None:
        cap = self.table.shape[0] * 2
        t = np.full((cap, 256), -1, dtype=np.int32)
        t[: self.table.shape[0]] = self.table
        self.table = t
        m = np.zeros(cap, dtype=bool)
        m[: self.materialised.shape[0]] = self.materialised
        self.materialised = m
        x = np.zeros(cap, dtype=bool)
        x[: self.exitflag.shape[0]] = self.exitflag
        self.exitflag = x
        y = np.zeros(cap, dtype=bool)
        y[: self.stopflag.shape[0]] = self.stopflag
        self.stopflag = y

    def _closure(self, seed) -> frozenset:
        """The items ``seed`` reaches without reading a byte (nor passing a guard), kept
        where they matter to a state's identity (``_relevant``). The parameter ``p`` of
        an item rides along unchanged, so the reach of each NFA node is computed once
        (:meth:`_node_closure`) and the closure is the union of its seed's."""
        out: set = set()
        frag_class, frag_exit = self.frag_class, self.frag_exit
        for it in seed:
            if len(it) == 2:
                n, p = it
            else:
                out.add(it)
                f, d, dec, cnt, p = it
                if dec != START or not frag_class[f].can_exit(d, cnt):
                    continue
                n = frag_exit[f]
            nodes, frags = self._node_closure(n)  # (n itself among the nodes if it matters)
            out.update([(x, p) for x in nodes])
            out.update([(f2, 0, START, 0, p) for f2 in frags])
        return frozenset(out)

    def _node_closure(self, n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(relevant NFA nodes, fragments)`` that NFA node ``n`` reaches through
        epsilon edges without a guard, and through fragments that may be empty (their
        exits); the fragments are entered fresh. Memoised per node."""
        got = self._nclos.get(n)
        if got is not None:
            return got
        eps, frags, frag_class, frag_exit = self.eps, self.frags, self.frag_class, self.frag_exit
        seen = {n}
        work = [n]
        found: list[int] = []
        while work:
            x = work.pop()
            nxt = [t for t, act in eps[x] if act is None]  # a guard: followed at run time
            for f in frags[x]:
                fc = frag_class[f]
                if fc.feasible(0, 0):
                    found.append(f)
                    if fc.can_exit(0, 0):
                        nxt.append(frag_exit[f])
            for t in nxt:
                if t not in seen:
                    seen.add(t)
                    work.append(t)
        rel = self._relevant
        got = self._nclos[n] = (tuple(x for x in seen if rel[x]), tuple(found))
        return got

    def _intern(self, items: frozenset) -> int:
        if not items:
            return -1
        sid = self._index.get(items)
        if sid is not None:
            return sid
        sid = self.n_states
        self._index[items] = sid
        self.n_states += 1
        if sid >= self.table.shape[0]:
            self._grow()
        self.items.append(items)
        self.rows.append(None)
        final = False
        has_bytes = False
        by_rule: dict[int, list] = {}
        guards: list[tuple[Guard, int]] = []
        for it in items:
            if len(it) == 5:
                has_bytes = True
                continue
            n, p = it
            if self.exit_rule[n] >= 0:
                final = True
            if self.byte_edges[n]:
                has_bytes = True
            for r, t in self.calls[n]:
                by_rule.setdefault(r, []).append((t, p))
            if self._guarded[n]:
                guards.extend((act, t) for t, act in self.eps[n] if act is not None)
        self.final.append(final)
        it0 = next(iter(items))
        rule = self.frag_rule[it0[0]] if len(it0) == 5 else self.node_rule[it0[0]]
        self.state_rule.append(rule)
        self.has_bytes.append(has_bytes)
        self.state_calls.append(())
        self.state_guards.append(())
        vg = self._vguards(items) if has_bytes and self._rule_guarded[rule] else None
        self.vguards.append(vg)
        stop = vg is not None or (bool(guards) and not has_bytes)
        self.stopflag[sid] = stop
        self.stop_list.append(stop)
        self.exitflag[sid] = True
        self.exit_list.append(True)
        calls = []
        for r in sorted(by_rule):
            ret = self._intern(self._closure(by_rule[r]))
            if ret >= 0:
                calls.append((r, ret))
        self.state_calls[sid] = tuple(calls)
        gl = []
        for act, t in sorted(guards, key=lambda g: g[1]):
            tgt = self._intern(self._closure([(t, 0)]))
            if tgt >= 0:
                gl.append((act, tgt))
        self.state_guards[sid] = tuple(gl)
        ex = final or bool(calls) or bool(gl) or vg is not None
        self.exitflag[sid] = ex
        self.exit_list[sid] = ex
        return sid

    def _vguards(self, items: frozenset) -> tuple | None:
        """The guards reachable from the byte-reading items of a state before any
        other guard, if every way on from them passes one (else None: a rule end, a
        call or an unguarded member follows, so the state lives whatever the frame)."""
        frag_exit = self.frag_exit
        starts = frozenset(frag_exit[it[0]] if len(it) == 5 else it[0] for it in items)
        memo = self._vg_memo
        if starts in memo:
            return memo[starts]
        # The search from several nodes is the union of the searches from each (what
        # one reaches, the union reaches), so it is kept per node: states differ in
        # their sets of nodes far more often than in the nodes themselves.
        per_node = self._vg_node
        found: dict[int, Guard] = {}
        got: tuple | None = ()
        for n in starts:
            g = per_node.get(n, _UNSET)
            if g is _UNSET:
                self._vguards_search(n)
                g = per_node[n]
            if g is None:
                got = None
                break
            for act in g:
                found[id(act)] = act
        else:
            got = tuple(found.values())
        memo[starts] = got
        return got

    def _vguards_search(self, start: int) -> None:
        """Fill ``_vg_node`` for ``start`` and every node it reaches: the guards a node
        meets before anything else (as a frozenset), or None if a rule end, a call, an
        object body (an ``open`` guard) or a guard that never blocks (``total``) comes
        first. A node's answer is the union of its
        own guard edges' and its successors' (byte edges, fragment exits, plain epsilons;
        not past a guard), None if any is None; computed for all nodes at once over the
        strongly connected components (:func:`strong_components`), since the nodes of a
        body are asked about one by one and a search from each would walk the rest of
        the body again (quadratic in its size)."""
        per_node = self._vg_node
        byte_edges, frags, eps, frag_exit = self.byte_edges, self.frags, self.eps, self.frag_exit
        exit_rule, calls = self.exit_rule, self.calls

        def succ(n: int) -> list[int]:
            out = [t for _, t in byte_edges[n]]
            out.extend(frag_exit[f] for f in frags[n])
            out.extend(t for t, act in eps[n] if act is None)
            return out

        for comp in strong_components((start,), succ, per_node.__contains__):
            members = set(comp)
            acc: set | None = set()
            for x in comp:
                if exit_rule[x] >= 0 or calls[x]:
                    acc = None
                    break
                for t, act in eps[x]:
                    if act is None:
                        continue
                    if act.kind == "open" or act.total:
                        acc = None
                        break
                    acc.add(act)
                if acc is None:
                    break
                for t in succ(x):
                    if t in members:
                        continue
                    g = per_node[t]  # a successor's component was finished before
                    if g is None:
                        acc = None
                        break
                    acc.update(g)
                if acc is None:
                    break
            res = None if acc is None else frozenset(acc)
            for x in comp:
                per_node[x] = res

    def _bytes_of(self, mask: int) -> list[int]:
        got = self._bits.get(mask)
        if got is None:
            got = self._bits[mask] = [b for b in range(256) if mask >> b & 1]
        return got

    def materialise(self, sid: int) -> tuple[int, ...]:
        """Build the byte row of state ``sid`` (idempotent); returns it as a tuple."""
        row = self.rows[sid]
        if row is not None:
            return row
        items = self.items[sid]
        goto1 = self._goto1
        row = [-1] * 256
        if len(items) == 1 and len(next(iter(items))) == 5:
            # inside a code-point fragment (a string's content, a partial character):
            # one item, whose successors are single items too
            (f, d, dec, cnt, p), = items
            for (d2, dec2, cnt2), _, bs in self.frag_class[f].row(d, dec, cnt):
                item = (f, d2, dec2, cnt2, p)
                t = goto1.get(item)
                if t is None:
                    t = self._goto_state((item,))
                for b in bs:
                    row[b] = t
        else:
            # Partition the 256 bytes by the items they lead to, refining the classes
            # one edge at a time as 256-bit masks: a state has a handful of classes
            # (its items' edges mostly agree), so this costs far less than listing the
            # items of every byte.
            parts: list[tuple[int, tuple]] = [(_ALL_BYTES, ())]
            for it in items:
                if len(it) == 2:
                    n, p = it
                    edges = [(mask, (t, p)) for mask, t in self.byte_edges[n]]
                else:
                    f, d, dec, cnt, p = it
                    edges = [(mask, (f, d2, dec2, cnt2, p))
                             for (d2, dec2, cnt2), mask, _ in self.frag_class[f].row(d, dec, cnt)]
                for mask, item in edges:
                    refined = []
                    for m, its in parts:
                        both = m & mask
                        if not both:
                            refined.append((m, its))
                            continue
                        refined.append((both, its + (item,)))
                        if both != m:
                            refined.append((m ^ both, its))
                    parts = refined
            for m, its in parts:
                if not its:
                    continue
                # most bytes lead one item on (the others die): no set to build
                t = goto1.get(its[0]) if len(its) == 1 else None
                if t is None:
                    t = self._goto_state(its)
                for b in self._bytes_of(m):
                    row[b] = t
        # a tuple: long-lived and never changed, it stays out of the garbage collector's
        # full passes (see TokenTrie.token_bytes)
        row = self.rows[sid] = tuple(row)
        self.table[sid] = row
        self.materialised[sid] = True
        return row

    def state_of(self, item: tuple) -> int:
        """The state one item (``(node, 0)``, or a fragment's ``(f, d, dec, cnt, 0)``)
        makes with its closure, -1 if none (memoised as a byte's target is)."""
        t = self._goto1.get(item)
        return t if t is not None else self._goto_state((item,))

    def _goto_state(self, its) -> int:
        """The state that the items ``its`` (where one byte leads) make after their
        closure, memoised per item (one) or per set of items."""
        if len(its) == 1:
            t = self._goto1[its[0]] = self._intern(self._closure(its))
            return t
        seed = frozenset(its)
        t = self._goto.get(seed)
        if t is None:
            t = self._goto[seed] = self._intern(self._closure(seed))
        return t

    def accepts(self, data: bytes) -> bool:
        """Is ``data`` a complete sentence of the grammar (for tests and tools)."""
        configs, acc = self.initial()
        if not data:
            return acc
        r = self.advance(configs, data)
        return r is not None and r[1]

    def stats(self) -> dict:
        return {"rules": len(self.rule_names), "nfa_nodes": len(self.eps),
                "dfa_states": self.n_states,
                "materialised": int(self.materialised[: self.n_states].sum()),
                "stack_nodes": len(self.stacks)}
