"""The NFA of a grammar: which rules stay rules, and one Thompson NFA over bytes for all.

:class:`NFA` compiles a pruned grammar (every rule and IR node has a non-empty
language, see :mod:`reference_engine.pda`) in three steps:

1. *Rule choice*: a rule stays a rule of its own (entered by a push) when it is the
   start rule, recursive, holds an :class:`~reference_engine.ir.ObjectBody`, is an
   object member's value, is large and used in many places (:data:`INLINE_BUDGET`), or
   is a bounded run used in several (:data:`RUN_RULE_MIN`); every other reference is
   inlined.
2. *Build*: edges are byte sets, epsilons (an object body's guarded ones carry a
   :class:`~reference_engine.frames.Guard` made by :class:`_ObjectLogic`), calls
   ``(rule, return node)`` and entries into code-point fragments
   (:mod:`reference_engine.fragments`). Members of one object with equal values share
   their ``: value`` tail.
3. *Left recursion*: refused (:class:`GrammarError`), as is a grammar of more than
   :data:`MAX_NFA_NODES` nodes.

Invariants:

- Rule ``r`` is entered at ``rule_entry[r]`` and left at ``rule_exit[r]``;
  ``exit_rule[n]`` is ``r`` exactly at that exit node, -1 elsewhere. Every node and
  fragment lies in one rule (``node_rule``, ``frag_rule``), so a DFA state made of
  them does too.
- Guarded epsilons occur inside object bodies only. A body's entry pushes the frame
  its guards read and its close pops it; a body never nests in another within one
  rule (the build refuses it), so a nested object is reached through a call and its
  frame sits above the outer one's.
- Once built, the per-node edge lists are tuples and never change. Only the fragment
  lists (``frag_class``, ``frag_exit``, ``frag_rule``) grow later, by
  :meth:`NFA.unwindowed` twins that no grammar path enters.
- No rule can call itself again before reading a byte.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, Iterator

from reference_engine import ir
from reference_engine.automata import DFA
from reference_engine.fragments import FragClass
from reference_engine.frames import OPEN, Guard


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
#: serves every site (the return rides on the stack): far fewer states and rows to
#: build, so a first decode meets fewer new ones.
RUN_RULE_MIN = 4
MAX_NFA_NODES = 600_000


def _bounded_run(e: ir.Expr) -> bool:
    """Is ``e`` a run of one byte class (or class of ASCII characters, as GBNF's
    ``[ \\t\\n]`` is) bounded at :data:`RUN_RULE_MIN` or more?"""
    if not (isinstance(e, ir.Repeat) and e.hi is not None and e.hi >= RUN_RULE_MIN):
        return False
    x = e.item
    return isinstance(x, ir.ByteClass) or (isinstance(x, ir.CharClass) and bool(x.cs)
                                           and max(hi for _, hi in x.cs) < 0x80)


def strong_components(roots: Iterable[Hashable], succ: Callable[[Hashable], Iterable[Hashable]],
                      done: Callable[[Hashable], bool] | None = None
                      ) -> Iterator[list[Hashable]]:
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


# --------------------------------------------------------------------------- the NFA

class NFA:
    """The rules a grammar keeps and the NFA over bytes of all of them (see the module
    docstring); built whole by the constructor, which raises :class:`GrammarError`."""

    def __init__(self, grammar: ir.Grammar):
        self.grammar = grammar
        self._choose_rules()
        self._build_nfa()
        # The NFA is complete: tuples from here on, which the cyclic garbage collector's
        # full passes skip (lists of lists, one per NFA node, are traversed every time).
        self.byte_edges = tuple(map(tuple, self.byte_edges))
        self.eps = tuple(map(tuple, self.eps))
        self.calls = tuple(map(tuple, self.calls))
        self.frags = tuple(map(tuple, self.frags))
        self._check_left_recursion()

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
        through :meth:`~reference_engine.closure.Configurations.viable`."""
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
