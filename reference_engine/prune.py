"""Productivity: a grammar without the parts whose language is empty.

Before the automaton is built, rules and IR nodes that can produce no sentence are
removed: a reference to an empty rule, an automaton with no string in its length
window, an object body a required member of which can never be produced (or whose
property counts cannot be met), and so on up through sequences and alternatives.

Invariants:

- :func:`prune_grammar` keeps the language: only parts that contribute no sentence
  go (an empty alternative, an optional empty repeat, a member that can never
  appear and its own dependency entry).
- Everything it keeps can reach a sentence, so every automaton state built from it
  can still reach acceptance: "alive" then simply means "not dead".
- Where the start rule itself is empty the grammar becomes ``start: Nothing`` and
  the caller is told (no configuration at all: every mask empty, EOS never).
"""

from __future__ import annotations

from reference_engine import ir


def prune_grammar(grammar: ir.Grammar) -> tuple[ir.Grammar, bool]:
    """``grammar`` without its empty rules and parts, and whether its whole language
    is empty."""
    ok = _nonempty(grammar.rules)
    empty = not ok[grammar.start]
    if empty:
        grammar = ir.Grammar({grammar.start: ir.NOTHING}, grammar.start, list(grammar.notes))
        ok = {grammar.start: True}
    rules = {n: _prune(e, ok) for n, e in grammar.rules.items() if ok[n]}
    return ir.Grammar(rules, grammar.start, list(grammar.notes)), empty


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
