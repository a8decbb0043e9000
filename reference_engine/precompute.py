"""Precompute: cache entries nearly every decode of a grammar needs, built at compile
time within a budget.

:func:`build_nodes` builds the splits of the states that cost most on a first visit,
in order (:func:`candidates`): the first mask's nodes; the content state of each
string (or other code-point fragment) that is not an object key, a wide node whose
first walk covers most of the trie; each object's key position (after ``{"`` or
``, "``), wide where the object takes extra keys; the states the grammar's entry
points lead to (rule entries, their return states and guard targets); the states past
each object guard (after ``{``, a key, a separator); the key fragments alone (the key
position of a one-key object); the states one and two JSON punctuation bytes on from
all these (``":``, ``": "``, ``[{``, ...); then the positions inside each object's
declared keys (``"first`` of ``firstName``, where a token often ends; wide where the
object takes extra keys, and most of them derived from one reference split, see
:meth:`~reference_engine.derive.Derivations.reference`). :func:`warm_key_ends` then
walks past each built key's end into its value.

XGrammar precomputes every node at compile time; here the byte-level states a decode
may reach (length counters, whitespace runs, partial characters, key prefixes) are
too many to enumerate, so only these are.

Invariant: masks are unchanged. It only calls
:meth:`~reference_engine.splits.Splits.node` and
:meth:`~reference_engine.contexts.Contexts.context`, so each entry is what a decode
would build on first use; only where its cost lands moves, from the first mask that
needs it to the compile (TTFM). The caller holds the mask computer's lock.
"""

from __future__ import annotations

import json
import time
from typing import Iterator

from reference_engine.contexts import Contexts
from reference_engine.encoding import START
from reference_engine.frames import frame_ret
from reference_engine.splits import Splits
from reference_engine.stack import EMPTY


def candidates(splits: Splits, deadline: float) -> Iterator[int]:
    """The states to build, in order (see the module's docstring); stops early once
    past the ``deadline`` inside the key names' rows (the dearest part to list)."""
    pda = splits.pda
    entry_points = pda.entry_points
    through = splits.walker.through
    configs, _ = pda.initial()
    for s, _ in configs:
        yield s
    for f in range(len(pda.frag_class)):
        if f not in pda.key_frags:
            yield pda.state_of((f, 0, START, 0, 0))
    # each object's key position (past a key's opening quote: every key's
    # first mask; wide where the object takes extra keys)
    key_positions = []
    for c in pda.key_choices:
        s = pda.state_of((c, 0))
        if s >= 0 and pda.has_bytes[s]:
            t = pda.materialise(s)[0x22]
            # (the state itself where only declared keys remain: its entry does
            # not depend on the frame that decides whether it lives)
            for kp in ((t,) if t >= 0 and pda.has_bytes[t] else through(t)):
                key_positions.append(kp)
                yield kp
    # past each object guard: the body after ``{`` or a separator, a member's
    # ``: value`` tail (past its key), the object's end
    after_guard = []
    for n in range(len(pda.eps)):
        if pda._guarded[n]:
            for t, act in pda.eps[n]:
                if act is not None:
                    after_guard.append(pda.state_of((t, 0)))
    yield from range(entry_points)
    yield from after_guard
    for f in sorted(pda.key_frags):  # a key position of an object with one key
        yield pda.state_of((f, 0, START, 0, 0))
    # then one and two JSON punctuation bytes on from what was built (after
    # ``{``, ``{"``, ``":``, ``, "``, ...), through calls and object guards
    frontier = list(splits.nodes)
    seen = set(frontier)
    for _ in range(2):
        nxt = []
        for s in frontier:
            row = pda.materialise(s)
            for b in b'{}[],:" ':
                for u in through(row[b]):
                    if u not in seen:
                        seen.add(u)
                        nxt.append(u)
                        yield u
        frontier = nxt
    # then the positions inside each object's declared keys, from its key
    # positions (a token often ends inside a key: ``"first`` + ``Name":``):
    # first their rows (walks below a key position go along the names, in
    # splits and, where the object's frame decides, in contexts), then entries
    inside: dict[int, None] = {}
    for kp in dict.fromkeys(key_positions):
        names = set()
        for it in pda.items[kp]:
            if len(it) == 5:
                names.update(pda.key_names.get(it[0], ()))
        for name in sorted(names):
            if time.perf_counter() >= deadline:
                return
            u = kp
            for b in json.dumps(name, ensure_ascii=False)[1:-1].encode():
                u = pda.materialise(u)[b]
                if u < 0:
                    break
                inside[u] = None
    for u in inside:
        pda.materialise(u)
    yield from inside


def build_nodes(splits: Splits, deadline: float) -> int:
    """Build the splits of :func:`candidates` until the ``deadline`` (checked between
    entries, after the first); returns how many entries were made (with the references
    they were derived from)."""
    pda = splits.pda
    nodes = splits.nodes
    built = 0
    for s in candidates(splits, deadline):
        if built and time.perf_counter() >= deadline:
            break
        if s >= 0 and pda.has_bytes[s] and s not in nodes:
            had = len(nodes)
            splits.node(s)
            built += len(nodes) - had  # with a reference it derived from
    return built


def warm_key_ends(splits: Splits, contexts: Contexts, deadline: float) -> int:
    """Walk, before the ``deadline``, past the object guard of each built node whose
    context-dependent tokens all wait on its own object's frame (a key's end: ``"``,
    ``":``, ``": "``, ``":{"`` ... pass the member's guard and go on into its value):
    one context per node with a fresh frame (parameter 0, nothing below). Returns how
    many.

    That context itself is rarely asked for again, but the walks it makes (and the rows
    they build) depend on the states and trie nodes only (the context walk memo keeps
    them so), and the live frames of a decode lead into the same ones. Without this,
    the first time each key ends in a decode builds them: the largest share of a
    decode's new contexts' cost. The fresh stack is a real stack of the automaton (an
    object frame where the node expects one), so the entry cached for it is exact like
    any other."""
    warmed = 0
    pool = splits.pda.stacks
    fresh = pool.push(frame_ret(0), EMPTY)
    for s, nm in list(splits.nodes.items()):
        if time.perf_counter() >= deadline:
            break
        if nm.guards and not nm.pops and all(k == 0 for k, _, _ in nm.guards):
            contexts.context(s, fresh)
            warmed += 1
    return warmed
