"""Grammar IR: rules over byte classes, literal byte strings and rule references.

A :class:`Grammar` maps rule names to expressions; its language is the set of byte
strings derived from the start rule. Expressions:

``Bytes(b"...")``          a literal byte string
``ByteClass(mask)``        one byte out of a set (``mask``: 256-bit int)
``CharClass(cs)``          one Unicode scalar value out of a code-point set, as UTF-8
``Seq([...])``             concatenation;  ``Alt([...])`` alternation
``Repeat(x, lo, hi)``      ``lo..hi`` repetitions (``hi`` None: unbounded)
``Ref(name)``              a rule reference (recursion allowed, left recursion refused)
``Automaton(dfa, enc)``    a regular language given as a DFA over code points
                           (``enc="json"``: the *content* of a JSON string whose decoded
                           value the DFA accepts, every escape spelling included;
                           ``enc="utf8"``: UTF-8 text) or over bytes (``enc="byte"``),
                           optionally with a code-point length window ``lo..hi``
``ObjectBody(...)``        the members of a JSON object with per-object key tracking:
                           each declared key at most once, required keys present,
                           ``additionalProperties`` for the rest, any order (or the
                           declaration order in ``ordered`` mode)
``Empty()`` / ``Nothing()`` the empty string / the empty language

:func:`format_grammar` prints a grammar as GBNF-like text (``name ::= ...``); the two
non-GBNF nodes print as ``<...>`` annotations a user can read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from reference_engine.automata import BYTES, CODEPOINTS, DFA, charset_repr


class Expr:
    __slots__ = ()


@dataclass(frozen=True, eq=False)
class Empty(Expr):
    pass


@dataclass(frozen=True, eq=False)
class Nothing(Expr):
    pass


@dataclass(frozen=True, eq=False)
class Bytes(Expr):
    data: bytes


@dataclass(frozen=True, eq=False)
class ByteClass(Expr):
    mask: int  # bit b set: byte b allowed


@dataclass(frozen=True, eq=False)
class CharClass(Expr):
    cs: tuple  # code-point set (see automata)


@dataclass(frozen=True, eq=False)
class Seq(Expr):
    items: tuple


@dataclass(frozen=True, eq=False)
class Alt(Expr):
    items: tuple


@dataclass(frozen=True, eq=False)
class Repeat(Expr):
    item: Expr
    lo: int
    hi: int | None


@dataclass(frozen=True, eq=False)
class Ref(Expr):
    name: str


@dataclass(frozen=True, eq=False)
class Automaton(Expr):
    dfa: DFA
    encoding: str  # "json" | "utf8" | "byte"
    label: str = ""
    lo: int = 0
    hi: int | None = None


@dataclass(frozen=True, eq=False)
class Member:
    """A tracked object member: its key expression (the quoted name, all spellings),
    its value expression, and whether it is required."""
    name: str
    key: Expr
    value: Expr
    required: bool = False


@dataclass(frozen=True, eq=False)
class Extra:
    """Untracked members (``additionalProperties`` / ``patternProperties``): any key of
    the ``key`` language, value ``value``, repeatable."""
    key: Expr
    value: Expr
    label: str = "additional"


@dataclass(frozen=True, eq=False)
class ObjectBody(Expr):
    """``ws (member (sep member)*)? ws`` between ``{`` and ``}``, with key tracking.

    ``dependent``: member index → indices that must then be present too.
    ``ordered``: members in declaration order, extras after them (peers' behaviour).
    """
    members: tuple  # of Member
    extras: tuple  # of Extra
    ws: Expr
    sep: Expr
    colon: Expr
    min_props: int = 0
    max_props: int | None = None
    ordered: bool = False
    dependent: tuple = ()  # ((i, (j, k, ...)), ...)


@dataclass
class Grammar:
    rules: dict[str, Expr]
    start: str = "root"
    #: free-form notes (departures used, options) printed as comments
    notes: list[str] = field(default_factory=list)
    #: the text is JSON (a compiled JSON schema): the matcher rejects duplicate keys
    json_keys: bool = False

    def __post_init__(self):
        if self.start not in self.rules:
            raise ValueError(f"start rule {self.start!r} is not defined")

    def check(self) -> None:
        """Every reference names a rule."""
        for name, e in self.rules.items():
            for r in refs(e):
                if r not in self.rules:
                    raise ValueError(f"rule {name!r} references undefined rule {r!r}")


# --------------------------------------------------------------------------- builders

EMPTY = Empty()
NOTHING = Nothing()


def lit(s: str | bytes) -> Expr:
    b = s.encode() if isinstance(s, str) else s
    return Bytes(b) if b else EMPTY


def byteclass(chars: Iterable[int] | str) -> Expr:
    m = 0
    for c in (chars.encode() if isinstance(chars, str) else chars):
        m |= 1 << c
    return ByteClass(m) if m else NOTHING


def byterange(lo: int, hi: int) -> ByteClass:
    return ByteClass(((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1))


def seq(*items: Expr) -> Expr:
    out: list[Expr] = []
    for it in items:
        if isinstance(it, Nothing):
            return NOTHING
        if isinstance(it, Empty):
            continue
        if isinstance(it, Seq):
            out.extend(it.items)
        elif isinstance(it, Bytes) and out and isinstance(out[-1], Bytes):
            out[-1] = Bytes(out[-1].data + it.data)
        else:
            out.append(it)
    if not out:
        return EMPTY
    return out[0] if len(out) == 1 else Seq(tuple(out))


def alt(*items: Expr) -> Expr:
    out: list[Expr] = []
    for it in items:
        if isinstance(it, Nothing):
            continue
        if isinstance(it, Alt):
            out.extend(it.items)
        else:
            out.append(it)
    if not out:
        return NOTHING
    return out[0] if len(out) == 1 else Alt(tuple(out))


def rep(item: Expr, lo: int = 0, hi: int | None = None) -> Expr:
    if hi is not None and hi < lo:
        return NOTHING
    if hi == 0:
        return EMPTY
    if isinstance(item, Empty):
        return EMPTY
    if isinstance(item, Nothing):
        return EMPTY if lo == 0 else NOTHING
    if lo == hi == 1:
        return item
    return Repeat(item, lo, hi)


def opt(item: Expr) -> Expr:
    return rep(item, 0, 1)


def star(item: Expr) -> Expr:
    return rep(item, 0, None)


def plus(item: Expr) -> Expr:
    return rep(item, 1, None)


def _object_parts(x: "ObjectBody") -> list[Expr]:
    """The sub-expressions of an object body: each member's and extra's key and value,
    then its whitespace, separator and colon."""
    parts: list[Expr] = []
    for m in x.members:
        parts += [m.key, m.value]
    for xm in x.extras:
        parts += [xm.key, xm.value]
    return parts + [x.ws, x.sep, x.colon]


def refs(e: Expr) -> list[str]:
    """Names referenced by ``e`` (in order, with repeats)."""
    out: list[str] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Ref):
            out.append(x.name)
        elif isinstance(x, (Seq, Alt)):
            stack.extend(reversed(x.items))
        elif isinstance(x, Repeat):
            stack.append(x.item)
        elif isinstance(x, ObjectBody):
            stack.extend(_object_parts(x))
    return out


def size(e: Expr) -> int:
    """Number of IR nodes (a rough measure for inlining decisions)."""
    n = 0
    stack = [e]
    while stack:
        x = stack.pop()
        n += 1
        if isinstance(x, (Seq, Alt)):
            stack.extend(x.items)
        elif isinstance(x, Repeat):
            n += size(x.item) * (min(x.hi if x.hi is not None else x.lo + 1, 64) - 1)
            stack.append(x.item)
        elif isinstance(x, Automaton):
            n += x.dfa.n
        elif isinstance(x, ObjectBody):
            stack.extend(_object_parts(x))
    return n


# --------------------------------------------------------------------------- printer

def _quote(b: bytes) -> str:
    out = ['"']
    for c in b:
        ch = chr(c)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif 0x20 <= c < 0x7F:
            out.append(ch)
        else:
            out.append({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}.get(c, f"\\x{c:02x}"))
    out.append('"')
    return "".join(out)


def _mask_to_cs(mask: int) -> tuple:
    out = []
    b = 0
    while b < 256:
        if mask >> b & 1:
            a = b
            while b + 1 < 256 and mask >> (b + 1) & 1:
                b += 1
            out.append((a, b))
        b += 1
    return tuple(out)


_PREC_ALT, _PREC_SEQ, _PREC_ATOM = 0, 1, 2


def format_expr(e: Expr, prec: int = _PREC_ALT) -> str:
    def paren(s: str, p: int) -> str:
        return f"( {s} )" if p < prec else s

    if isinstance(e, Empty):
        return '""'
    if isinstance(e, Nothing):
        return "<nothing>"
    if isinstance(e, Bytes):
        return _quote(e.data)
    if isinstance(e, ByteClass):
        return charset_repr(_mask_to_cs(e.mask), BYTES)
    if isinstance(e, CharClass):
        return charset_repr(e.cs, CODEPOINTS)
    if isinstance(e, Ref):
        return e.name
    if isinstance(e, Seq):
        return paren(" ".join(format_expr(x, _PREC_SEQ + 1) for x in e.items), _PREC_SEQ)
    if isinstance(e, Alt):
        return paren(" | ".join(format_expr(x, _PREC_ALT + 1) for x in e.items), _PREC_ALT)
    if isinstance(e, Repeat):
        inner = format_expr(e.item, _PREC_ATOM)
        if (e.lo, e.hi) == (0, None):
            q = "*"
        elif (e.lo, e.hi) == (1, None):
            q = "+"
        elif (e.lo, e.hi) == (0, 1):
            q = "?"
        elif e.hi is None:
            q = f"{{{e.lo},}}"
        elif e.lo == e.hi:
            q = f"{{{e.lo}}}"
        else:
            q = f"{{{e.lo},{e.hi}}}"
        return inner + q
    if isinstance(e, Automaton):
        what = {"json": "json-chars", "utf8": "text", "byte": "bytes"}[e.encoding]
        label = e.label or f"dfa[{e.dfa.n} states]"
        window = ""
        if e.lo or e.hi is not None:
            window = f" length {e.lo}..{'' if e.hi is None else e.hi}"
        return f"<{what} {label}{window}>"
    if isinstance(e, ObjectBody):
        parts = []
        for i, m in enumerate(e.members):
            req = " (required)" if m.required else ""
            parts.append(f"{format_expr(m.key, _PREC_ATOM)} : {format_expr(m.value, _PREC_ATOM)}{req}")
        for xm in e.extras:
            parts.append(f"{xm.label} {format_expr(xm.key, _PREC_ATOM)} : "
                         f"{format_expr(xm.value, _PREC_ATOM)} (repeatable)")
        mode = "declaration order" if e.ordered else "any order"
        extra = []
        if e.min_props:
            extra.append(f"minProperties {e.min_props}")
        if e.max_props is not None:
            extra.append(f"maxProperties {e.max_props}")
        if e.dependent:
            names = [m.name for m in e.members]
            extra.append("dependentRequired " + json.dumps(
                {names[i]: [names[j] for j in js] for i, js in e.dependent}))
        head = f"members, {mode}, each at most once, separated by {format_expr(e.sep, _PREC_SEQ)}"
        ws = format_expr(e.ws, _PREC_ATOM)
        return (f"{ws} <{head}; key-value {format_expr(e.colon, _PREC_SEQ)}:"
                + "".join(f"\n      {p}" for p in parts)
                + ("".join(f"\n      {x}" for x in extra)) + f"\n    > {ws}")
    raise TypeError(type(e))


def format_grammar(g: Grammar) -> str:
    """GBNF-like text, start rule first, then the others in definition order."""
    lines = [f"# {n}" for n in g.notes]
    names = [g.start] + [n for n in g.rules if n != g.start]
    width = max(len(n) for n in names)
    for n in names:
        lines.append(f"{n.ljust(width)} ::= {format_expr(g.rules[n])}")
    return "\n".join(lines) + "\n"


__all__ = [
    "Alt", "Automaton", "ByteClass", "Bytes", "CharClass", "EMPTY", "Empty", "Expr", "Extra",
    "Grammar", "Member", "NOTHING", "Nothing", "ObjectBody", "Ref", "Repeat", "Seq", "alt",
    "byteclass", "byterange", "format_expr", "format_grammar", "lit", "opt", "plus", "refs",
    "rep", "seq", "size", "star",
]


def any_of_bytes(data: Sequence[bytes]) -> Expr:
    return alt(*(lit(d) for d in data))


def to_dfa(e: Expr) -> DFA:
    """The minimal byte-level DFA of a regular expression of the IR (no references,
    no object bodies, no code-point automata)."""
    from reference_engine.automata import NFA, _embed

    nfa = NFA()

    def build(x: Expr, a: int, b: int) -> None:
        if isinstance(x, Empty):
            nfa.eps[a].append(b)
        elif isinstance(x, Nothing):
            pass
        elif isinstance(x, Bytes):
            cur = a
            for k, c in enumerate(x.data):
                nxt = b if k == len(x.data) - 1 else nfa.new()
                nfa.edges[cur].append((((c, c),), nxt))
                cur = nxt
        elif isinstance(x, ByteClass):
            cs = _mask_to_cs(x.mask)
            if cs:
                nfa.edges[a].append((cs, b))
        elif isinstance(x, Seq):
            cur = a
            for k, y in enumerate(x.items):
                nxt = b if k == len(x.items) - 1 else nfa.new()
                build(y, cur, nxt)
                cur = nxt
        elif isinstance(x, Alt):
            for y in x.items:
                s, t = nfa.new(), nfa.new()
                nfa.eps[a].append(s)
                build(y, s, t)
                nfa.eps[t].append(b)
        elif isinstance(x, Repeat):
            cur = a
            for _ in range(x.lo):
                nxt = nfa.new()
                build(x.item, cur, nxt)
                cur = nxt
            if x.hi is None:
                loop, back = nfa.new(), nfa.new()
                nfa.eps[cur].append(loop)
                build(x.item, loop, back)
                nfa.eps[back].append(loop)
                nfa.eps[loop].append(b)
            else:
                for _ in range(x.hi - x.lo):
                    nxt = nfa.new()
                    nfa.eps[cur].append(b)
                    build(x.item, cur, nxt)
                    cur = nxt
                nfa.eps[cur].append(b)
        elif isinstance(x, Automaton) and x.encoding == "byte" and not x.lo and x.hi is None:
            s0, finals = _embed(nfa, x.dfa)
            nfa.eps[a].append(s0)
            for f in finals:
                nfa.eps[f].append(b)
        else:
            raise TypeError(f"to_dfa: not a byte-level regular expression: {type(x).__name__}")

    build(e, nfa.start, nfa.final)
    return nfa.to_dfa().minimize()


def structural_key(e: Expr, canon: dict[str, str]) -> tuple:
    """A hashable key equal for expressions that denote the same language by the same
    structure, rule references read through ``canon`` (rule name → representative)."""
    if isinstance(e, Ref):
        return ("ref", canon.get(e.name, e.name))
    if isinstance(e, (Seq, Alt)):
        return (type(e).__name__, tuple(structural_key(x, canon) for x in e.items))
    if isinstance(e, Repeat):
        return ("rep", structural_key(e.item, canon), e.lo, e.hi)
    if isinstance(e, Bytes):
        return ("bytes", e.data)
    if isinstance(e, ByteClass):
        return ("bc", e.mask)
    if isinstance(e, CharClass):
        return ("cc", e.cs)
    if isinstance(e, Automaton):
        return ("aut", e.dfa, e.encoding, e.lo, e.hi)
    if isinstance(e, ObjectBody):
        return ("obj",
                tuple((m.name, structural_key(m.key, canon), structural_key(m.value, canon),
                       m.required) for m in e.members),
                tuple((structural_key(x.key, canon), structural_key(x.value, canon))
                      for x in e.extras),
                structural_key(e.ws, canon), structural_key(e.sep, canon),
                structural_key(e.colon, canon), e.min_props, e.max_props, e.ordered,
                e.dependent)
    return (type(e).__name__,)


def merge_equal_rules(g: Grammar) -> Grammar:
    """The grammar with structurally equal rules merged into one (references
    rewritten), so that equal sub-schemas reached from many places (a hundred
    ``{"type": "string"}`` properties) share one rule and so one set of automaton
    states and cached masks. Rules are merged bottom-up until nothing changes; the
    start rule keeps its name."""
    canon = {n: n for n in g.rules}
    while True:
        groups: dict[tuple, list[str]] = {}
        for n in sorted(g.rules):
            groups.setdefault(structural_key(g.rules[n], canon), []).append(n)
        new = {}
        for names in groups.values():
            rep = g.start if g.start in names else names[0]
            for n in names:
                new[n] = rep
        if new == canon:
            break
        canon = new
    if all(canon[n] == n for n in g.rules):
        return g
    rules = {n: _rename(e, canon) for n, e in g.rules.items() if canon[n] == n}
    return Grammar(rules, g.start, list(g.notes), g.json_keys)


def _rename(e: Expr, canon: dict[str, str]) -> Expr:
    if isinstance(e, Ref):
        c = canon.get(e.name, e.name)
        return e if c == e.name else Ref(c)
    if isinstance(e, (Seq, Alt)):
        return type(e)(tuple(_rename(x, canon) for x in e.items))
    if isinstance(e, Repeat):
        return Repeat(_rename(e.item, canon), e.lo, e.hi)
    if isinstance(e, ObjectBody):
        return ObjectBody(
            tuple(Member(m.name, _rename(m.key, canon), _rename(m.value, canon), m.required)
                  for m in e.members),
            tuple(Extra(_rename(x.key, canon), _rename(x.value, canon), x.label)
                  for x in e.extras),
            _rename(e.ws, canon), _rename(e.sep, canon), _rename(e.colon, canon),
            e.min_props, e.max_props, e.ordered, e.dependent)
    return e
