"""Byte-level pushdown automaton over the grammar IR.

Compilation (:class:`PDA`):

1. *Productivity*: rules and IR nodes with an empty language are pruned (a required
   member that can never be produced empties its object, etc.), so that every
   automaton state built later can still reach acceptance: "alive" then simply
   means "not dead".
2. *Rules*: a rule stays a PDA rule (entered by a push) when it is the start rule,
   recursive, holds an :class:`~reference_engine.ir.ObjectBody`, is an object member
   value, or is large and used in many places; every other reference is inlined.
   Left recursion is refused.
3. *NFA*: one Thompson-style NFA over bytes for all rules together. Edges are byte
   sets, epsilons (some of them object *guards*, see below), calls ``(rule, return
   node)``, and entries into *code-point fragments*: a DFA over code points
   (``Automaton`` nodes) read through a UTF-8 or JSON-string decoder, with an optional
   length window tracked by a counter. Structurally equal rules are merged first, and
   the members of an object with equal values share their ``: value`` tail.
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
complete) is alive only if one of those guards passes (:meth:`PDA.viable`); a guard
that never blocks (adding an extra member where nothing bounds their number) makes no
such state: the bytes of an unknown key live whatever the frame holds.

Run time (:meth:`PDA.closure`): a *configuration* is ``(state, stack)``, the stack a
persistent linked list of return states and object frames
(:mod:`reference_engine.stack`). The closure of a configuration follows calls (push),
guards (against the frame on top) and rule ends (pop) until it reaches states that
consume bytes; reaching the end of the start rule with an empty stack means
"accepting". A token is allowed iff feeding its bytes from some configuration keeps
one alive.
"""

from __future__ import annotations

from array import array
from typing import Callable

import numpy as np

from reference_engine import ir
from reference_engine.automata import DFA
from reference_engine.encoding import START
# (FrameReads, Guard and the frame helpers are importable from here too, as before)
from reference_engine.frames import OPEN, FrameReads, Guard, any_passes, frame_param, frame_ret
from reference_engine.fragments import FragClass
from reference_engine.stack import EMPTY, StackPool


class GrammarError(Exception):
    """The grammar cannot be compiled (left recursion, too large, empty language)."""


#: A rule used in several places is kept as a separate PDA rule (not inlined) when
#: its size times its number of uses exceeds this.
INLINE_BUDGET = 4000
#: A rule that is a bounded run of one byte class or of ASCII characters (JSON's
#: whitespace between tokens, at most ``max_ws`` characters; a GBNF ``[ \t]{0,n}``)
#: and is used in several places stays a separate rule when its bound is at least
#: this. Inlined, each site has a chain of that many NFA nodes, and every DFA state it
#: meets is copied once per count, each copy with a row of its own; called, one chain
#: serves every site (the return rides on the stack). On a 60-schema sample: a third
#: as many rows, TBM avg -14%, p99 -18%, TTFM p50 -45%.
RUN_RULE_MIN = 4
#: (state, token bytes) runs of plain bytes kept by :meth:`PDA.advance`.
PLAIN_RUN_CACHE = 200_000
MAX_NFA_NODES = 600_000


def _bounded_run(e: ir.Expr) -> bool:
    """Is ``e`` a run of one byte class (or class of ASCII characters, as GBNF's
    ``[ \\t\\n]`` is) bounded at :data:`RUN_RULE_MIN` or more?"""
    if not (isinstance(e, ir.Repeat) and e.hi is not None and e.hi >= RUN_RULE_MIN):
        return False
    x = e.item
    return isinstance(x, ir.ByteClass) or (isinstance(x, ir.CharClass) and bool(x.cs)
                                           and max(hi for _, hi in x.cs) < 0x80)


# --------------------------------------------------------------------------- pruning

def _nonempty(rules: dict[str, ir.Expr]) -> dict[str, bool]:
    """Which rules have a non-empty language (least fixpoint)."""
    ok = {n: False for n in rules}
    changed = True
    while changed:
        changed = False
        for n, e in rules.items():
            if not ok[n] and _expr_nonempty(e, ok):
                ok[n] = changed = True
    return ok


def _automaton_nonempty(a: ir.Automaton) -> bool:
    if a.dfa.is_empty():
        return False
    if a.lo == 0 and a.hi is None:
        return True
    return a.dfa.lengths().feasible(0, a.lo, a.hi)


def _expr_nonempty(e: ir.Expr, ok: dict[str, bool]) -> bool:
    if isinstance(e, (ir.Empty, ir.Bytes)):
        return True
    if isinstance(e, ir.Nothing):
        return False
    if isinstance(e, ir.ByteClass):
        return e.mask != 0
    if isinstance(e, ir.CharClass):
        return bool(e.cs)
    if isinstance(e, ir.Seq):
        return all(_expr_nonempty(x, ok) for x in e.items)
    if isinstance(e, ir.Alt):
        return any(_expr_nonempty(x, ok) for x in e.items)
    if isinstance(e, ir.Repeat):
        return e.lo == 0 or _expr_nonempty(e.item, ok)
    if isinstance(e, ir.Ref):
        return ok.get(e.name, False)
    if isinstance(e, ir.Automaton):
        return _automaton_nonempty(e)
    if isinstance(e, ir.ObjectBody):
        return _object_viable(e, ok) is not None
    raise TypeError(type(e))


def _object_viable(ob: ir.ObjectBody, ok: dict[str, bool]):
    """(addable members, addable extras) or None if the body has an empty language."""
    if not (_expr_nonempty(ob.ws, ok) and _expr_nonempty(ob.colon, ok)):
        return None
    addable = [(_expr_nonempty(m.key, ok) and _expr_nonempty(m.value, ok)) for m in ob.members]
    deps = dict(ob.dependent)
    changed = True
    while changed:  # a member whose dependencies cannot appear cannot appear either
        changed = False
        for i, js in deps.items():
            if addable[i] and not all(addable[j] for j in js):
                addable[i] = False
                changed = True
    if any(m.required and not addable[i] for i, m in enumerate(ob.members)):
        return None
    extras = [(_expr_nonempty(x.key, ok) and _expr_nonempty(x.value, ok)) for x in ob.extras]
    n_req = sum(m.required for m in ob.members)
    if ob.max_props is not None and n_req > ob.max_props:
        return None
    many = any(extras) and _expr_nonempty(ob.sep, ok)
    if ob.min_props and not many:
        reach = sum(addable) if (_expr_nonempty(ob.sep, ok) or sum(addable) <= 1) else min(1, sum(addable))
        if any(extras):
            reach += 1
        if reach < ob.min_props:
            return None
    if (n_req > 1 or ob.min_props > 1) and not _expr_nonempty(ob.sep, ok):
        return None
    return addable, extras


def _prune(e: ir.Expr, ok: dict[str, bool]) -> ir.Expr:
    """Rebuild ``e`` without empty parts (refs to empty rules become Nothing)."""
    if isinstance(e, ir.Ref):
        return e if ok.get(e.name, False) else ir.NOTHING
    if isinstance(e, ir.Seq):
        return ir.seq(*(_prune(x, ok) for x in e.items))
    if isinstance(e, ir.Alt):
        return ir.alt(*(_prune(x, ok) for x in e.items))
    if isinstance(e, ir.Repeat):
        return ir.rep(_prune(e.item, ok), e.lo, e.hi)
    if isinstance(e, ir.Automaton):
        return e if _automaton_nonempty(e) else ir.NOTHING
    if isinstance(e, (ir.ByteClass, ir.CharClass)):
        return e if _expr_nonempty(e, ok) else ir.NOTHING
    if isinstance(e, ir.ObjectBody):
        v = _object_viable(e, ok)
        if v is None:
            return ir.NOTHING
        addable, extras = v
        keep = [i for i, a in enumerate(addable) if a]
        remap = {old: new for new, old in enumerate(keep)}
        members = tuple(ir.Member(e.members[i].name, _prune(e.members[i].key, ok),
                                  _prune(e.members[i].value, ok), e.members[i].required)
                        for i in keep)
        xs = tuple(ir.Extra(_prune(x.key, ok), _prune(x.value, ok), x.label)
                   for x, a in zip(e.extras, extras) if a)
        dep = tuple((remap[i], tuple(remap[j] for j in js)) for i, js in e.dependent
                    if i in remap)
        return ir.ObjectBody(members, xs, e.ws, _prune(e.sep, ok), e.colon, e.min_props,
                             e.max_props, e.ordered, dep)
    return e


# --------------------------------------------------------------------------- object bodies

class _ObjectLogic:
    """Parameter arithmetic of one object body: the parameter packs the set ``S`` of
    members seen (bits ``0..n-1``), an "extra member seen" flag (bit ``n``, used in
    ordered mode) and the number of extra members (above, capped). Each method returns
    the :class:`Guard` of one edge of the body, or None where the edge can never block
    nor change the parameter (it is then a plain epsilon)."""

    def __init__(self, ob: ir.ObjectBody):
        self.n = n = len(ob.members)
        self.req = sum(1 << i for i, m in enumerate(ob.members) if m.required)
        self.deps = [0] * n
        for i, js in ob.dependent:
            for j in js:
                self.deps[i] |= 1 << j
        self.ordered = ob.ordered
        self.min = ob.min_props
        self.max = ob.max_props
        self.has_extras = bool(ob.extras)
        self.counting = bool(self.min) or self.max is not None
        self.cap = max(self.min, (self.max + 1) if self.max is not None else 0)
        self.xbit = 1 << n
        self.cshift = n + 1
        self.all = (1 << n) - 1
        self._feas: dict[int, bool] = {}

    def unpack(self, p: int):
        return p & self.all, (p >> self.n) & 1, p >> self.cshift

    def pack(self, s: int, x: int, c: int) -> int:
        return s | (x << self.n) | (c << self.cshift)

    def missing(self, s: int) -> int:
        m = self.req & ~s
        while True:
            add = 0
            cur = s | m
            i = 0
            while cur >> i:
                if cur >> i & 1:
                    add |= self.deps[i]
                i += 1
            add &= ~(s | m)
            if not add:
                return m
            m |= add

    def feasible(self, p: int) -> bool:
        r = self._feas.get(p)
        if r is not None:
            return r
        s, x, c = self.unpack(p)
        m = self.missing(s)
        r = True
        if self.ordered and m:
            if x or (s and m & ((1 << s.bit_length()) - 1)):
                r = False
        total = bin(s).count("1") + c
        if r and self.max is not None and total + bin(m).count("1") > self.max:
            r = False
        if r and self.min:
            free = self.all & ~(s | m)
            if self.ordered:
                free = 0 if x else free & ~((1 << s.bit_length()) - 1)
            avail = bin(free).count("1") + (10 ** 9 if self.has_extras else 0)
            if total + bin(m).count("1") + avail < self.min:
                r = False
        self._feas[p] = r
        return r

    @property
    def extras_free(self) -> bool:
        """Does adding an extra member never fail nor change the parameter? (no count
        to keep, no order to check: its guard is a plain epsilon)"""
        return self.has_extras and not self.counting and not self.ordered

    @property
    def extras_unbounded(self) -> bool:
        """Can an extra member always be added? (extras allowed, no ``maxProperties``
        and no order: a ``minProperties`` count may still be kept, but adding never
        makes the object impossible to complete, see :meth:`feasible`)"""
        return self.has_extras and self.max is None and not self.ordered

    def add(self, k: int) -> Callable[[int], int | None]:
        bit = 1 << k

        def act(p: int) -> int | None:
            s, x, c = self.unpack(p)
            if s & bit:
                return None
            if self.ordered and (x or s >> k):
                return None
            q = self.pack(s | bit, x, c)
            return q if self.feasible(q) else None
        return Guard("set", act, f"add {k}")

    def add_extra(self) -> Callable[[int], int | None] | None:
        if self.extras_free:
            return None
        def act(p: int) -> int | None:
            s, x, c = self.unpack(p)
            c2 = min(c + 1, self.cap) if self.counting else 0
            q = self.pack(s, 1 if self.ordered else x, c2)
            return q if self.feasible(q) else None
        # Total where nothing can block it: a key that only an extra member completes
        # (every byte of an unknown key) then lives whatever the frame holds, so the
        # walks read through it instead of stopping at each byte to ask the frame.
        return Guard("set", act, "add extra", total=self.extras_unbounded)

    def more(self) -> Callable[[int], int | None]:
        """Guard of the separator (and of the first member): lets ``p`` through only
        if some member or extra can still be added. Without it, ``{"a":1,`` under
        ``additionalProperties: false`` with every declared key already seen reads
        the ``,`` and then only whitespace: a state that consumes bytes forever but
        can never reach ``}`` — alive for the mask, dead in truth."""
        if self.extras_free:
            return None  # an extra member can always be added
        adds = [self.add(k) for k in range(self.n)]
        extra = self.add_extra() if self.has_extras else None
        memo: dict[int, bool] = {}

        def act(p: int) -> int | None:
            ok = memo.get(p)
            if ok is None:
                ok = memo[p] = (any(a(p) is not None for a in adds)
                                or (extra is not None and extra(p) is not None))
            return p if ok else None
        return Guard("set", act, "more", total=self.extras_unbounded, keeps=True)

    def close(self) -> Callable[[int], int | None]:
        def act(p: int) -> int | None:
            s, x, c = self.unpack(p)
            if self.missing(s):
                return None
            total = bin(s).count("1") + c
            if total < self.min or (self.max is not None and total > self.max):
                return None
            return 0
        return Guard("close", act, "close")


#: the name the tests know it by
_FragClass = FragClass
_UNSET = object()
_ALL_BYTES = (1 << 256) - 1


def strong_components(roots, succ, done=None):
    """The strongly connected components (lists of nodes) of the graph reachable from
    ``roots`` along ``succ(node)``, by Tarjan's algorithm without recursion, each
    yielded as soon as it is complete: after every component it reaches (reverse
    topological order), so a caller can fold answers up from the components it
    reaches. Nodes for which ``done(node)`` is true (answered already, maybe by the
    caller for a component yielded earlier) are neither entered nor yielded."""
    index: dict = {}
    low: dict = {}
    on: set = set()
    stack: list = []
    counter = 0
    for root in roots:
        if root in index or (done is not None and done(root)):
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        work = [(root, iter(succ(root)))]
        while work:
            v, it = work[-1]
            pushed = False
            for w in it:
                if done is not None and done(w):
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ(w))))
                    pushed = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if pushed:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                yield comp


# --------------------------------------------------------------------------- the PDA

class PDA:
    """A compiled grammar: NFA, lazy DFA table, rules, stacks."""

    def __init__(self, grammar: ir.Grammar):
        grammar.check()
        ok = _nonempty(grammar.rules)
        #: the language is empty: no configuration at all (every mask is empty, EOS never)
        self.empty = not ok[grammar.start]
        if self.empty:
            grammar = ir.Grammar({grammar.start: ir.NOTHING}, grammar.start, list(grammar.notes))
            ok = {grammar.start: True}
        rules = {n: _prune(e, ok) for n, e in grammar.rules.items() if ok[n]}
        self.grammar = ir.merge_equal_rules(ir.Grammar(rules, grammar.start, list(grammar.notes)))
        self._choose_rules()
        self._build_nfa()
        # The NFA is complete: tuples from here on, which the cyclic garbage collector's
        # full passes skip (lists of lists, one per NFA node, are traversed every time).
        self.byte_edges = tuple(map(tuple, self.byte_edges))
        self.eps = tuple(map(tuple, self.eps))
        self.calls = tuple(map(tuple, self.calls))
        self.frags = tuple(map(tuple, self.frags))
        self._check_left_recursion()
        self._init_dfa()
        self.stacks = StackPool()
        self._plain_run: dict[tuple[int, bytes], tuple[int, int]] = {}
        self._pclosure_memo: dict[tuple[int, int], tuple[tuple, bool]] = {}
        self._pclosure_low: dict[tuple[int, int], int] = {}  # see closure_low
        #: (state, stack) -> the frame reads of its closure, where it made any
        self._pclosure_reads: dict[tuple[int, int], tuple] = {}
        #: the :class:`FrameReads` of the computation running, if one is recorded
        self.frame_reads: FrameReads | None = None
        #: (id of a guards tuple, frame entry) -> does one pass (see viable); the tuples
        #: live in ``vguards`` as long as the automaton
        self._viable_memo: dict[tuple[int, int], bool] = {}
        self.entry_state = [self._intern(self._closure([(self.rule_entry[r], 0)]))
                            for r in range(len(self.rule_names))]
        self.start_state = self.entry_state[self.rule_index[self.grammar.start]]
        self.unique_return = self._unique_returns()
        #: states interned while compiling (rule entries, the return states and guard
        #: targets they list): the grammar's entry points, which decodes pass through
        self.entry_points = self.n_states

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

    # ---------------------------------------------------------------- rule choice
    def _choose_rules(self) -> None:
        g = self.grammar
        rules = g.rules
        graph = {n: set(ir.refs(e)) for n, e in rules.items()}
        # rules on a cycle are recursive
        recursive: set[str] = set()
        for comp in strong_components(rules, lambda v: sorted(graph[v])):
            if len(comp) > 1 or comp[0] in graph[comp[0]]:
                recursive.update(comp)

        real = {g.start} | recursive
        uses: dict[str, int] = {n: 0 for n in rules}

        def scan(e: ir.Expr, mult: int) -> None:
            if isinstance(e, ir.Ref):
                uses[e.name] += mult
            elif isinstance(e, (ir.Seq, ir.Alt)):
                for x in e.items:
                    scan(x, mult)
            elif isinstance(e, ir.Repeat):
                scan(e.item, mult * max(1, min(e.hi if e.hi is not None else e.lo + 1, 1000)))
            elif isinstance(e, ir.ObjectBody):
                for m in e.members:
                    scan(m.key, mult)
                    if isinstance(m.value, ir.Ref):
                        real.add(m.value.name)
                    scan(m.value, mult)
                for x in e.extras:
                    scan(x.key, mult)
                    if isinstance(x.value, ir.Ref):
                        real.add(x.value.name)
                    scan(x.value, mult)
                real.add("\0object")

        for n, e in rules.items():
            has_obj = [False]

            def find_obj(x: ir.Expr) -> None:
                if isinstance(x, ir.ObjectBody):
                    has_obj[0] = True
                elif isinstance(x, (ir.Seq, ir.Alt)):
                    for y in x.items:
                        find_obj(y)
                elif isinstance(x, ir.Repeat):
                    find_obj(x.item)

            find_obj(e)
            if has_obj[0]:
                real.add(n)
            scan(e, 1)
        real.discard("\0object")
        # size with inlining, bottom-up (memoised); real rules count as one node
        sizes: dict[str, int] = {}

        def rsize(n: str, depth: int = 0) -> int:
            if n in sizes:
                return sizes[n]
            if depth > 200:
                return 1
            sizes[n] = 1  # cycle guard
            total = ir.size(rules[n])
            for r in ir.refs(rules[n]):
                if r not in real:
                    total += rsize(r, depth + 1)
            sizes[n] = total
            return total

        runs = {n for n in rules if n not in real and uses[n] >= 2 and _bounded_run(rules[n])}
        for n in rules:
            if n not in real and uses[n] >= 2 and rsize(n) * uses[n] > INLINE_BUDGET:
                real.add(n)
        real |= runs
        self.rule_names = [g.start] + sorted(n for n in real if n != g.start)
        self.rule_index = {n: i for i, n in enumerate(self.rule_names)}

    # ---------------------------------------------------------------- NFA
    def _new(self) -> int:
        self.byte_edges.append([])
        self.eps.append([])
        self.calls.append([])
        self.frags.append([])
        self.exit_rule.append(-1)
        self.node_rule.append(self._cur_rule)
        n = len(self.eps) - 1
        if n > MAX_NFA_NODES:
            raise GrammarError(f"grammar too large (more than {MAX_NFA_NODES} automaton nodes)")
        return n

    def _build_nfa(self) -> None:
        self.byte_edges: list[list[tuple[int, int]]] = []
        self.eps: list[list[tuple[int, Callable | None]]] = []
        self.calls: list[list[tuple[int, int]]] = []
        self.frags: list[list[int]] = []
        self.exit_rule: list[int] = []
        self.frag_class: list[FragClass] = []
        self.frag_exit: list[int] = []
        #: fragments that read an object key (alone, such a fragment's content state is
        #: a configuration only in a one-key object: a key position holds every
        #: member's key fragment at once)
        self.key_frags: set[int] = set()
        #: key fragment -> the names its object declares
        self.key_names: dict[int, tuple[str, ...]] = {}
        #: per object body, the NFA node where a member's key begins (its opening quote)
        self.key_choices: list[int] = []
        self._fclass_memo: dict[tuple, FragClass] = {}
        #: windowed fragment -> its unwindowed twin (see :meth:`unwindowed`)
        self._twins: dict[int, int] = {}
        self.rule_entry: list[int] = []
        self.rule_exit: list[int] = []
        self._inlining: list[str] = []
        self._charclass_dfa: dict[tuple, DFA] = {}
        #: rule index of each NFA node / fragment (a DFA state lies inside one rule)
        self.node_rule: list[int] = []
        self.frag_rule: list[int] = []
        #: per rule, its call sites ``(return node, inside an object body)``
        self.call_sites: list[list[tuple[int, bool]]] = [[] for _ in self.rule_names]
        #: every object frame's parameter is exactly its set of declared members seen
        #: (no extra-member flag or count packed in): the key check reads it
        self.frames_count_members = True
        self._cur_rule = -1
        for i, name in enumerate(self.rule_names):
            self._cur_rule = i
            a, b = self._new(), self._new()
            self.rule_entry.append(a)
            self.rule_exit.append(b)
            self.exit_rule[b] = i
        for i, name in enumerate(self.rule_names):
            self._cur_rule = i
            self._build(self.grammar.rules[name], self.rule_entry[i], self.rule_exit[i], None)

    def _fragment(self, dfa: DFA, enc: str, lo: int, hi: int | None, a: int, b: int) -> None:
        fc = self._frag_class_of(dfa, enc, lo, hi)
        self.frags[a].append(self._add_fragment(fc, b, self.node_rule[a]))

    def _frag_class_of(self, dfa: DFA, enc: str, lo: int, hi: int | None) -> FragClass:
        """The shared :class:`FragClass` (and its row memos) of one automaton, decoder
        and window."""
        key = (id(dfa), enc, lo, hi)
        fc = self._fclass_memo.get(key)
        if fc is None:
            fc = self._fclass_memo[key] = FragClass(dfa, enc, lo, hi)
        return fc

    def _add_fragment(self, fc: FragClass, exit_node: int, rule: int) -> int:
        """Number a fragment: its class, the NFA node it exits to, its rule."""
        f = len(self.frag_class)
        self.frag_class.append(fc)
        self.frag_exit.append(exit_node)
        self.frag_rule.append(rule)
        return f

    def unwindowed(self, f: int) -> int:
        """The twin of fragment ``f`` without its length window (same automaton,
        decoder, rule and exit; made on first use, entered by no grammar path).

        A state whose counters are all far from their bounds (see
        :meth:`~reference_engine.splits.Splits.mask_key`) has the mask of the
        state with each such fragment item moved to the twin at count 0; a walk from
        that state keeps no counter, where one from the state itself makes a new state
        per count it reads (a ``maxLength: 300`` string read in a pattern of several
        states: thousands of states per split)."""
        got = self._twins.get(f)
        if got is None:
            fc = self.frag_class[f]
            twin = self._frag_class_of(fc.dfa, fc.enc, 0, None)
            got = self._twins[f] = self._add_fragment(twin, self.frag_exit[f], self.frag_rule[f])
        return got

    def _build(self, e: ir.Expr, a: int, b: int, obj) -> None:
        if isinstance(e, ir.Empty):
            self.eps[a].append((b, None))
        elif isinstance(e, ir.Nothing):
            pass
        elif isinstance(e, ir.Bytes):
            cur = a
            for k, c in enumerate(e.data):
                nxt = b if k == len(e.data) - 1 else self._new()
                self.byte_edges[cur].append((1 << c, nxt))
                cur = nxt
        elif isinstance(e, ir.ByteClass):
            self.byte_edges[a].append((e.mask, b))
        elif isinstance(e, ir.CharClass):
            dfa = self._charclass_dfa.get(e.cs)
            if dfa is None:
                dfa = self._charclass_dfa[e.cs] = DFA([[(lo, hi, 1) for lo, hi in e.cs], []],
                                                      [False, True])
            self._fragment(dfa, "utf8", 0, None, a, b)
        elif isinstance(e, ir.Seq):
            cur = a
            for k, x in enumerate(e.items):
                nxt = b if k == len(e.items) - 1 else self._new()
                self._build(x, cur, nxt, obj)
                cur = nxt
        elif isinstance(e, ir.Alt):
            for x in e.items:
                s, t = self._new(), self._new()
                self.eps[a].append((s, None))
                self._build(x, s, t, obj)
                self.eps[t].append((b, None))
        elif isinstance(e, ir.Repeat):
            cur = a
            for _ in range(e.lo):
                nxt = self._new()
                self._build(e.item, cur, nxt, obj)
                cur = nxt
            if e.hi is None:
                loop, back = self._new(), self._new()
                self.eps[cur].append((loop, None))
                self._build(e.item, loop, back, obj)
                self.eps[back].append((loop, None))
                self.eps[loop].append((b, None))
            else:
                for _ in range(e.hi - e.lo):
                    nxt = self._new()
                    self.eps[cur].append((b, None))
                    self._build(e.item, cur, nxt, obj)
                    cur = nxt
                self.eps[cur].append((b, None))
        elif isinstance(e, ir.Ref):
            if e.name in self.rule_index:
                self.calls[a].append((self.rule_index[e.name], b))
                self.call_sites[self.rule_index[e.name]].append((b, obj is not None))
            else:
                if e.name in self._inlining:  # cannot happen: recursive rules are real
                    raise GrammarError(f"internal: recursive inlining of {e.name}")
                self._inlining.append(e.name)
                self._build(self.grammar.rules[e.name], a, b, obj)
                self._inlining.pop()
        elif isinstance(e, ir.Automaton):
            if e.encoding == "byte":
                if e.lo or e.hi is not None:
                    raise GrammarError("a length window on a byte automaton is not supported")
                nodes = [self._new() for _ in range(e.dfa.n)]
                self.eps[a].append((nodes[0], None))
                for s, row in enumerate(e.dfa.edges):
                    for lo, hi, t in row:
                        mask = ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)
                        self.byte_edges[nodes[s]].append((mask, nodes[t]))
                    if e.dfa.finals[s]:
                        self.eps[nodes[s]].append((b, None))
            else:
                self._fragment(e.dfa, e.encoding, e.lo, e.hi, a, b)
        elif isinstance(e, ir.ObjectBody):
            if obj is not None:
                raise GrammarError("internal: nested object body in one rule")
            self._build_object(e, a, b)
        else:
            raise TypeError(type(e))

    def _build_object(self, ob: ir.ObjectBody, a: int, b: int) -> None:
        """``a`` -open-> body -close-> ``b``; the member guards sit at the end of each
        key (after its closing quote), so that the states reading a key do not depend
        on which members were seen: a key whose completions are all blocked is dead
        through :meth:`PDA.viable`."""
        logic = _ObjectLogic(ob)
        if ob.extras and (logic.ordered or logic.counting):
            self.frames_count_members = False
        close = logic.close()
        more = logic.more()
        a2, choice, hub = self._new(), self._new(), self._new()
        self.key_choices.append(choice)
        self.eps[a].append((a2, OPEN))
        # non-empty: ws then the first member
        w1 = self._new()
        self.eps[a2].append((w1, more))
        self._build(ob.ws, w1, choice, logic)
        # empty object: ws only
        w0 = self._new()
        self.eps[a2].append((w0, close))
        self._build(ob.ws, w0, b, logic)
        # Past its guard a member is just ``: value``; members with equal values share
        # that tail, hence its automaton states and cached masks.
        tails: dict[tuple, int] = {}

        def tail(value: ir.Expr) -> int:
            key = ir.structural_key(value, {})
            kg = tails.get(key)
            if kg is None:
                kg, vs = self._new(), self._new()
                tails[key] = kg
                self._build(ob.colon, kg, vs, logic)
                self._build(value, vs, hub, logic)
            return kg

        f_first = len(self.frag_class)
        for k, m in enumerate(ob.members):
            ks, ke = self._new(), self._new()
            self.eps[choice].append((ks, None))
            f0 = len(self.frag_class)
            self._build(m.key, ks, ke, logic)
            self.key_frags.update(range(f0, len(self.frag_class)))
            self.eps[ke].append((tail(m.value), logic.add(k)))
        for x in ob.extras:
            ks, ke = self._new(), self._new()
            self.eps[choice].append((ks, None))
            f0 = len(self.frag_class)
            self._build(x.key, ks, ke, logic)
            self.key_frags.update(range(f0, len(self.frag_class)))
            self.eps[ke].append((tail(x.value), logic.add_extra()))
        names = tuple(m.name for m in ob.members)
        for f in range(f_first, len(self.frag_class)):
            if f in self.key_frags:
                self.key_names[f] = names
        s1 = self._new()
        self.eps[hub].append((s1, more))
        self._build(ob.sep, s1, choice, logic)
        w2 = self._new()
        self.eps[hub].append((w2, close))
        self._build(ob.ws, w2, b, logic)

    # ---------------------------------------------------------------- left recursion
    def _check_left_recursion(self) -> None:
        """Refuse rules that can call themselves without consuming a byte."""
        nr = len(self.rule_names)
        nullable = [False] * nr
        left: list[set[int]] = [set() for _ in range(nr)]
        changed = True
        while changed:
            changed = False
            for r in range(nr):
                seen = {self.rule_entry[r]}
                stack = [self.rule_entry[r]]
                reach_exit = False
                calls: set[int] = set()
                while stack:
                    n = stack.pop()
                    if n == self.rule_exit[r]:
                        reach_exit = True
                    nxt = [t for t, _ in self.eps[n]]
                    for r2, t in self.calls[n]:
                        calls.add(r2)
                        if nullable[r2]:
                            nxt.append(t)
                    for f in self.frags[n]:
                        fc = self.frag_class[f]
                        if fc.dfa.finals[0] and fc.lo == 0:
                            nxt.append(self.frag_exit[f])
                    for t in nxt:
                        if t not in seen:
                            seen.add(t)
                            stack.append(t)
                if reach_exit and not nullable[r]:
                    nullable[r] = changed = True
                if calls != left[r]:
                    left[r] = calls
                    changed = True
        # cycle in the "calls before consuming" graph?
        color = [0] * nr
        for r0 in range(nr):
            if color[r0]:
                continue
            stack = [(r0, iter(sorted(left[r0])))]
            color[r0] = 1
            while stack:
                r, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    color[r] = 2
                    stack.pop()
                elif color[nxt] == 1:
                    raise GrammarError(f"left recursion through rule {self.rule_names[nxt]!r}")
                elif color[nxt] == 0:
                    color[nxt] = 1
                    stack.append((nxt, iter(sorted(left[nxt]))))

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

    # ---------------------------------------------------------------- configurations
    def closure(self, sid: int, stack: int) -> tuple[tuple, bool]:
        """Configurations that consume bytes reachable from ``(sid, stack)`` through
        calls and rule ends, and whether the document may end here. The frames it
        reads go to :attr:`frame_reads` when one is recorded (see :class:`FrameReads`)."""
        vg = self.vguards[sid]
        if vg is not None and not self.state_calls[sid] and not self.state_guards[sid] \
                and not self.final[sid]:
            # a key prefix that lives iff the frame lets a declared key complete (most
            # stops inside keys): itself or nothing, not worth a memo entry per stack
            ok = self.viable(vg, stack)
            if self.frame_reads is not None:
                self.frame_reads.note(stack, vg, ok)
            return (((sid, stack),) if ok else ()), False
        key = (sid, stack)
        got = self._pclosure_memo.get(key)
        if got is not None:
            rec = self.frame_reads
            if rec is not None:
                for e in self._pclosure_reads.get(key, ()):
                    rec.note(*e)
            return got
        out = []
        accept = False
        seen = {key}
        work = [key]
        pool = self.stacks
        depth = pool.depth
        low = depth[stack]
        reads = []  # (stack, guard or guards tuple, outcome): see FrameReads.note
        while work:
            s, st = work.pop()
            if depth[st] < low:
                low = depth[st]
            if self.has_bytes[s]:
                vg = self.vguards[s]
                if vg is None:
                    out.append((s, st))
                else:
                    ok = self.viable(vg, st)
                    reads.append((st, vg, ok))
                    if ok:
                        out.append((s, st))
            for r, ret in self.state_calls[s]:
                new = (self.entry_state[r], pool.push(ret, st))
                if new not in seen:
                    seen.add(new)
                    work.append(new)
            for g, t in self.state_guards[s]:
                new = self.pass_guard(g, t, st)
                if g.kind != "open":
                    reads.append((st, g, None if new is None else new[1]))
                if new is not None and new not in seen:
                    seen.add(new)
                    work.append(new)
            if self.final[s]:
                if st == EMPTY:
                    accept = True
                else:
                    new = (pool.ret[st], pool.parent[st])
                    if new not in seen:
                        seen.add(new)
                        work.append(new)
        got = (tuple(out), accept)
        self._pclosure_memo[key] = got
        self._pclosure_low[key] = low
        if reads:
            self._pclosure_reads[key] = reads = tuple(reads)
            rec = self.frame_reads
            if rec is not None:
                for e in reads:
                    rec.note(*e)
        return got

    def closure_low(self, sid: int, stack: int) -> int:
        """The depth of the deepest stack node :meth:`closure` of ``(sid, stack)``
        touched (read its entry, popped to it or tested it for the empty stack; after
        that call): the closure depends on the entries of ``stack`` down to that
        depth and on nothing below."""
        got = self._pclosure_low.get((sid, stack))
        return self.stacks.depth[stack] if got is None else got

    def pass_guard(self, g: Guard, target: int, stack: int) -> tuple[int, int] | None:
        """The configuration after guard ``g`` (to state ``target``) with the object
        frame on top of ``stack``; None if the guard blocks."""
        pool = self.stacks
        if g.kind == "open":
            return target, pool.push(frame_ret(0), stack)
        entries = g.after(frame_param(pool.ret[stack]))
        if entries is None:
            return None
        st = pool.parent[stack]
        for e in entries:
            st = pool.push(e, st)
        return target, st

    def viable(self, vguards: tuple, stack: int) -> bool:
        """Does one of ``vguards`` pass with the object frame on top of ``stack``?
        (memoised: guards are pure functions of the frame's parameter)"""
        return self.viable_entry(vguards, self.stacks.ret[stack])

    def viable_entry(self, vguards: tuple, ret: int) -> bool:
        """:meth:`viable` for the frame entry ``ret``."""
        key = (id(vguards), ret)
        got = self._viable_memo.get(key)
        if got is None:
            got = self._viable_memo[key] = any_passes(vguards, frame_param(ret))
        return got

    def initial(self) -> tuple[tuple, bool]:
        if self.empty:
            return (), False
        return self.closure(self.start_state, EMPTY)

    def advance(self, configs: tuple, data: bytes) -> tuple[tuple, bool] | None:
        """Feed ``data`` from a configuration set; None if every path dies."""
        rows = self.rows
        exitflag = self.exit_list
        start = 0
        if len(configs) == 1:
            # one configuration that reads plain bytes (no call, rule end or guard on
            # the way): no sets to build, and the run of plain bytes depends on the
            # state alone (cached per state and token); hand over to the general loop
            # where it meets a call, a rule end or a guard
            s, st = configs[0]
            key = (s, data)
            hit = self._plain_run.get(key)
            if hit is None:
                for b in data:
                    row = rows[s]
                    if row is None:
                        row = self.materialise(s)
                    t = row[b]
                    if t < 0:
                        start = -1
                        break
                    if exitflag[t]:
                        break
                    s = t
                    start += 1
                if len(self._plain_run) < PLAIN_RUN_CACHE:
                    self._plain_run[key] = (s, start)
            else:
                s, start = hit
            if start < 0:
                return None
            if start == len(data):
                return ((s, st),), False
            configs = ((s, st),)
        cur = configs
        accept = False
        last = len(data) - 1
        for i in range(start, len(data)):
            b = data[i]
            nxt: dict = {}
            accept = False
            for s, st in cur:
                row = rows[s]
                if row is None:
                    row = self.materialise(s)
                t = row[b]
                if t < 0:
                    continue
                if exitflag[t]:
                    confs, acc = self.closure(t, st)
                    for c in confs:
                        nxt[c] = None
                    if acc and i == last:
                        accept = True
                else:
                    nxt[(t, st)] = None
            cur = tuple(nxt)
            if not cur and not (accept and i == last):
                return None
        return cur, accept

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
