"""Configurations: the run time of a compiled grammar, over the lazy DFA and stacks.

A *configuration* is ``(state, stack)``: a lazy-DFA state of the
:class:`~reference_engine.pda.PDA` and a stack of the grammar's
:class:`~reference_engine.stack.StackPool` (return states and object frames). The
:class:`Configurations` of a PDA follow them: the closure of one (calls push, guards
read the frame on top, rule ends pop) to the configurations that read bytes, and a
token's bytes fed from a set of them (:meth:`Configurations.advance`).

Invariants:

- A closure lists only configurations that read bytes and can still lead somewhere:
  a state that lives only through guards (a key prefix) is in it iff one of those
  guards passes on the frame (:meth:`Configurations.viable`).
- The closure of ``(state, stack)`` depends on ``stack`` only down to
  :meth:`Configurations.closure_low`, and on the object frames it meets only through
  the reads it reports to :attr:`Configurations.frame_reads` (when one is recorded),
  which a memoised closure replays as the computation would have made them.
- The memos depend on the automaton and the stack pool alone, both of which only
  grow, so they are never invalidated: a run of plain bytes from a state is the same
  whoever reads it (:data:`PLAIN_RUN_CACHE` bounds that memo; it stops filling, it
  does not evict).
"""

from __future__ import annotations

from typing import Callable, Protocol

from reference_engine.frames import FrameReads, Guard, any_passes, frame_param, frame_ret
from reference_engine.stack import EMPTY, StackPool

#: (state, token bytes) runs of plain bytes kept by :meth:`Configurations.advance`.
PLAIN_RUN_CACHE = 200_000


class LazyDFA(Protocol):
    """What the run time reads of the automaton (:class:`~reference_engine.pda.PDA`,
    which imports this module, hence a protocol rather than an import)."""

    empty: bool
    start_state: int
    entry_state: list[int]
    vguards: list[tuple | None]
    state_calls: list[tuple]
    state_guards: list[tuple]
    final: bytearray
    has_bytes: bytearray
    rows: list[tuple[int, ...] | None]
    exit_list: bytearray
    stacks: StackPool
    materialise: Callable[[int], tuple[int, ...]]


class Configurations:
    """Closure and byte feeding of configurations for one compiled grammar (shared by
    its matchers; the PDA binds these methods as its own)."""

    def __init__(self, pda: LazyDFA):
        # The lazy DFA's per-state lists grow in place (never replaced, unlike its numpy
        # arrays), so holding them here saves a lookup through the PDA per step.
        self.vguards = pda.vguards
        self.state_calls = pda.state_calls
        self.state_guards = pda.state_guards
        self.final = pda.final
        self.has_bytes = pda.has_bytes
        self.rows = pda.rows
        self.exit_list = pda.exit_list
        self.entry_state = pda.entry_state
        self.materialise = pda.materialise
        self.stacks = pda.stacks
        self.empty = pda.empty
        self.start_state = pda.start_state
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
        """The configurations before any byte, and whether the empty document is one."""
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
