"""Regular expressions → exact automata over Unicode code points.

JSON Schema says ``pattern`` is an ECMA-262 regex applied as an *unanchored search*.
The corpus's oracle (``jsonschema``) runs Python's :func:`re.search`; where the two
dialects differ on the common subset, the default dialect (``"python"``) follows Python
so that the reference engine and the oracle accept the same strings (the differences
are listed in ``SEMANTICS.md``; ``dialect="ecma"`` reads the same syntax as ECMA-262
does, for the specification's reading):

- ``\\d``, ``\\w``, ``\\s`` are Unicode classes (as Python's ``re`` computes them for
  ``str`` patterns; the sets are read from ``re`` itself, once per process);
- ``.`` is any code point but ``\\n``;
- ``$`` matches at the end or before a final ``\\n``; ``\\Z`` only at the end;
  ``^`` and ``\\A`` only at the start.

Supported: literals and escapes (``\\t \\n \\r \\f \\v \\a \\xHH \\uHHHH \\UHHHHHHHH``,
octal ``\\0..``), classes (ranges, negation, ``\\d\\w\\s\\D\\W\\S`` inside and
outside), ``.``, groups ``( )``, ``(?: )``, ``(?P<name> )``, comments ``(?# )``,
alternation, quantifiers ``* + ? {m} {m,} {,n} {m,n}`` and their lazy forms (laziness
does not change which strings match), anchors ``^ $ \\A \\Z``.

Refused with :class:`RegexError` naming the construct (they are not regular, or
change matching in ways not modelled here): lookahead/lookbehind, backreferences,
word boundaries ``\\b \\B``, possessive quantifiers and atomic groups, conditionals,
inline flags ``(?i)`` etc., ``\\N{...}``.

The result is a minimal :class:`~reference_engine.automata.DFA` over code points
accepting exactly the strings ``s`` for which ``re.search(pattern, s)`` (mode
``search``) or ``re.fullmatch(pattern, s)`` (mode ``fullmatch``) succeeds, among
strings of Unicode scalar values (no lone surrogates).
"""

from __future__ import annotations

import functools
import re

from reference_engine.automata import (
    CODEPOINTS,
    DFA,
    MAX_STATES,
    TooLarge,
    _merge_row,
    cs_chars,
    spend,
    cs_complement,
    cs_intersect,
    cs_norm,
    cs_union,
    partition,
)


class RegexError(Exception):
    """The pattern is invalid or uses a construct this compiler refuses."""


NEWLINE = 0x0A
_MAX_REPEAT_EXPANSION = 5000

# --------------------------------------------------------------------------- classes

_ALL: str | None = None


def _all_chars() -> str:
    global _ALL
    if _ALL is None:
        _ALL = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))
    return _ALL


def _idx_to_cp(i: int) -> int:
    return i if i < 0xD800 else i + 0x800


@functools.lru_cache(maxsize=None)
def python_class(esc: str) -> tuple:
    """The code points Python's ``re`` matches with ``\\d``, ``\\w`` or ``\\s`` (str
    patterns, no flags), read from ``re`` itself."""
    text = _all_chars()
    spans = [(_idx_to_cp(m.start()), _idx_to_cp(m.end() - 1))
             for m in re.finditer("\\" + esc + "+", text)]
    return cs_norm(spans)


#: ECMA-262's ``\d``, ``\w`` and ``\s`` (WhiteSpace and LineTerminator).
ECMA_CLASSES = {
    "d": ((0x30, 0x39),),
    "w": cs_norm([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]),
    "s": cs_norm([(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680),
                  (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F),
                  (0x3000, 0x3000), (0xFEFF, 0xFEFF)]),
}


def _class_escape_set(c: str, dialect: str = "python") -> tuple | None:
    table = python_class if dialect == "python" else ECMA_CLASSES.__getitem__
    if c in "dws":
        return table(c)
    if c in "DWS":
        return cs_intersect(cs_complement(table(c.lower())), CODEPOINTS)
    return None


DOT = cs_complement(((NEWLINE, NEWLINE),))
#: ECMA-262's ``.``: anything but a LineTerminator.
ECMA_DOT = cs_intersect(cs_complement(((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))),
                        CODEPOINTS)
#: Python escapes with no ECMA-262 meaning (or another one): refused in that dialect.
_NOT_ECMA = {"A": "\\A", "Z": "\\Z", "a": "\\a", "U": "\\U", "N": "\\N"}

# --------------------------------------------------------------------------- parser
# AST: ("set", cs) | ("cat", [..]) | ("alt", [..]) | ("rep", node, lo, hi|None)
#      | ("bol",) | ("eol",) | ("eos",)

_SIMPLE_ESC = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 0x5C}
_HEX = "0123456789abcdefABCDEF"
_OCT = "01234567"


class _Parser:
    def __init__(self, pattern: str, dialect: str = "python"):
        self.p = pattern
        self.i = 0
        self.ecma = dialect == "ecma"

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < len(self.p) else ""

    def take(self) -> str:
        c = self.peek()
        self.i += 1
        return c

    def error(self, what: str):
        raise RegexError(f"{what} at position {self.i} of /{self.p}/ is not supported "
                         "(only regular constructs can be enforced exactly)")

    # alternation / sequence
    def parse(self):
        node = self.alt()
        if self.i < len(self.p):
            raise RegexError(f"unbalanced ')' at position {self.i} of /{self.p}/")
        return node

    def alt(self):
        branches = [self.seq()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.seq())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def seq(self):
        items = []
        while self.i < len(self.p) and self.peek() not in "|)":
            atom = self.atom()
            if atom is None:
                continue
            atom = self.quantifiers(atom)
            items.append(atom)
        return items[0] if len(items) == 1 else ("cat", items)

    def quantifiers(self, atom):
        while True:
            c = self.peek()
            if c in ("*", "+", "?"):
                self.i += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            elif c == "{":
                q = self._brace()
                if q is None:
                    return atom
                lo, hi = q
            else:
                return atom
            if atom[0] in ("bol", "eol", "eos"):
                self.error("a quantifier on an anchor")
            nxt = self.peek()
            if nxt == "?":
                self.i += 1  # lazy: same language
            elif nxt == "+":
                self.error("a possessive quantifier")
            atom = ("rep", atom, lo, hi)

    def _brace(self):
        """Python's rule: ``{`` starts a quantifier only if followed by
        ``digits? (, digits?)? }``; otherwise it is a literal."""
        j = self.i + 1
        p = self.p
        if j < len(p) and p[j] == "}":
            return None
        lo = hi = ""
        while j < len(p) and p[j].isdigit() and p[j] in "0123456789":
            lo += p[j]
            j += 1
        comma = j < len(p) and p[j] == ","
        if comma and not lo and self.ecma:
            self.error("{,n} (a quantifier in Python, literal text in ECMA-262)")
        if comma:
            j += 1
            while j < len(p) and p[j] in "0123456789":
                hi += p[j]
                j += 1
        else:
            hi = lo
        if not (j < len(p) and p[j] == "}"):
            return None
        self.i = j + 1
        mn = int(lo) if lo else 0
        mx = int(hi) if hi else None
        return mn, mx

    def atom(self):
        c = self.take()
        if c == "(":
            return self.group()
        if c == "[":
            return ("set", self.klass())
        if c == ".":
            return ("set", ECMA_DOT if self.ecma else DOT)
        if c == "^":
            return ("bol",)
        if c == "$":
            return ("eos",) if self.ecma else ("eol",)  # ECMA: the end, no final newline
        if c == "\\":
            return self.escape()
        if c in "*+?":
            raise RegexError(f"nothing to repeat at position {self.i - 1} of /{self.p}/")
        return ("set", ((ord(c), ord(c)),))

    def group(self):
        if self.peek() == "?":
            self.i += 1
            c = self.take()
            if c == ":":
                pass
            elif c in ("P", "#") and self.ecma:
                self.error(f"(?{c} (a Python extension, not ECMA-262)")
            elif c == "P":
                d = self.take()
                if d == "<":
                    end = self.p.find(">", self.i)
                    if end < 0:
                        raise RegexError(f"bad group name in /{self.p}/")
                    self.i = end + 1
                elif d == "=":
                    self.error("a backreference (?P=name)")
                else:
                    self.error("(?P" + d)
            elif c == "#":
                end = self.p.find(")", self.i)
                if end < 0:
                    raise RegexError(f"unterminated comment in /{self.p}/")
                self.i = end + 1
                return None
            elif c in ("=", "!"):
                self.error("a lookahead assertion")
            elif c == "<":
                d = self.peek()
                if d in ("=", "!"):
                    self.error("a lookbehind assertion")
                self.error("(?<")
            elif c == ">":
                self.error("an atomic group")
            elif c == "(":
                self.error("a conditional group")
            else:
                self.error("an inline flag group (?" + c)
        node = self.alt()
        if self.take() != ")":
            raise RegexError(f"missing ')' in /{self.p}/")
        return node if node != ("cat", []) else ("cat", [])

    def _hexnum(self, n: int) -> int:
        s = self.p[self.i:self.i + n]
        if len(s) != n or any(ch not in _HEX for ch in s):
            raise RegexError(f"bad escape in /{self.p}/")
        self.i += n
        return int(s, 16)

    def _codepoint_escape(self, c: str, in_class: bool) -> int | None:
        if c in _SIMPLE_ESC:
            return _SIMPLE_ESC[c]
        if c == "b" and in_class:
            return 8
        if c == "x":
            return self._hexnum(2)
        if c == "u":
            return self._hexnum(4)
        if c == "U":
            v = self._hexnum(8)
            if v > 0x10FFFF:
                raise RegexError(f"bad escape in /{self.p}/")
            return v
        if c == "N":
            self.error("\\N{...}")
        return None

    def _ecma_check(self, c: str) -> None:
        if self.ecma and (c in _NOT_ECMA or (c in "123456789")):
            self.error(f"\\{c} (no ECMA-262 meaning, or another one than Python's)")

    def escape(self):
        c = self.take()
        if c == "":
            raise RegexError(f"trailing backslash in /{self.p}/")
        self._ecma_check(c)
        cs = _class_escape_set(c, "ecma" if self.ecma else "python")
        if cs is not None:
            return ("set", cs)
        if c == "A":
            return ("bol",)
        if c == "Z":
            return ("eos",)
        if c in "bB":
            self.error("a word boundary \\" + c)
        if c in "0123456789":
            return ("set", self._digits_escape(c, in_class=False))
        v = self._codepoint_escape(c, False)
        if v is not None:
            return ("set", ((v, v),))
        if c.isascii() and c.isalpha():
            raise RegexError(f"bad escape \\{c} in /{self.p}/")
        return ("set", ((ord(c), ord(c)),))

    def _digits_escape(self, c: str, in_class: bool):
        if self.ecma:  # only \0 not followed by a digit (NUL) is common to both
            if c == "0" and self.peek() not in tuple("0123456789"):
                return ((0, 0),)
            self.error(f"\\{c}{self.peek()} (an octal escape or backreference)")
        # Python: \0 → octal (up to 3 digits); \ddd with three octal digits → octal;
        # inside classes any octal digit starts an octal escape; else a group reference.
        if c == "0" or (in_class and c in _OCT):
            s = c
            while len(s) < 3 and self.peek() in tuple(_OCT) and self.peek() != "":
                s += self.take()
            v = int(s, 8)
            if v > 0o377:
                raise RegexError(f"bad octal escape in /{self.p}/")
            return ((v, v),)
        if not in_class and c in _OCT and self.peek() in tuple(_OCT) and self.peek(1) in tuple(_OCT) \
                and self.peek() != "" and self.peek(1) != "":
            s = c + self.take() + self.take()
            v = int(s, 8)
            if v > 0o377:
                raise RegexError(f"bad octal escape in /{self.p}/")
            return ((v, v),)
        self.error("a backreference \\" + c)

    def klass(self):
        negate = False
        if self.peek() == "^":
            negate = True
            self.i += 1
        start = self.i
        parts = []
        while True:
            if self.i >= len(self.p):
                raise RegexError(f"unterminated character set in /{self.p}/")
            if self.peek() == "]" and self.i != start:
                self.i += 1
                break
            lo_set, lo_cp = self._class_item()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                hi_set, hi_cp = self._class_item()
                if lo_cp is None or hi_cp is None or hi_cp < lo_cp:
                    raise RegexError(f"bad character range in /{self.p}/")
                parts.append(((lo_cp, hi_cp),))
            else:
                parts.append(lo_set)
        cs = cs_union(*parts) if parts else ()
        cs = cs_norm(cs)
        # restrict to scalar values
        from reference_engine.automata import cs_intersect
        cs = cs_intersect(cs, CODEPOINTS)
        return cs_complement(cs) if negate else cs

    def _class_item(self):
        c = self.take()
        if c == "\\":
            e = self.take()
            if e == "":
                raise RegexError(f"trailing backslash in /{self.p}/")
            self._ecma_check(e)
            cs = _class_escape_set(e, "ecma" if self.ecma else "python")
            if cs is not None:
                return cs, None
            if e in "0123456789":
                if e in "89":
                    raise RegexError(f"bad escape \\{e} in /{self.p}/")
                cs = self._digits_escape(e, in_class=True)
                return cs, cs[0][0]
            v = self._codepoint_escape(e, True)
            if v is None:
                if e.isascii() and e.isalpha():
                    raise RegexError(f"bad escape \\{e} in /{self.p}/")
                v = ord(e)
            return ((v, v),), v
        v = ord(c)
        return ((v, v),), v


def parse(pattern: str, dialect: str = "python"):
    """Parse (after checking that Python's ``re`` accepts the pattern: in the ECMA-262
    dialect too, so that only the common syntax is read, with ECMA's meanings)."""
    if dialect not in ("python", "ecma"):
        raise ValueError(dialect)
    try:
        re.compile(pattern)
    except re.error as e:
        raise RegexError(f"invalid regex /{pattern}/ (Python re: {e})") from None
    except (OverflowError, RecursionError) as e:
        raise RegexError(f"invalid regex /{pattern}/ ({type(e).__name__})") from None
    return _Parser(pattern, dialect).parse()


# --------------------------------------------------------------------------- NFA

class _RNFA:
    """NFA with assertion epsilons: ``eps[q]`` = list of (target, kind), kind in
    None, 'bol', 'eol', 'eos'."""

    def __init__(self):
        self.edges: list[list] = []
        self.eps: list[list] = []

    def new(self) -> int:
        self.edges.append([])
        self.eps.append([])
        if len(self.edges) > 4 * MAX_STATES:
            raise TooLarge("regex NFA too large")
        return len(self.edges) - 1

    def build(self, node, a: int, b: int) -> None:
        kind = node[0]
        if kind == "set":
            if node[1]:
                self.edges[a].append((node[1], b))
        elif kind == "cat":
            cur = a
            items = node[1]
            if not items:
                self.eps[a].append((b, None))
                return
            for k, it in enumerate(items):
                nxt = b if k == len(items) - 1 else self.new()
                self.build(it, cur, nxt)
                cur = nxt
        elif kind == "alt":
            for br in node[1]:
                s, e = self.new(), self.new()
                self.eps[a].append((s, None))
                self.build(br, s, e)
                self.eps[e].append((b, None))
        elif kind == "rep":
            _, sub, lo, hi = node
            if lo > _MAX_REPEAT_EXPANSION or (hi is not None and hi > _MAX_REPEAT_EXPANSION):
                raise RegexError(f"repetition bound {hi if hi is not None else lo} too large "
                                 "to expand exactly")
            cur = a
            for _ in range(lo):
                nxt = self.new()
                self.build(sub, cur, nxt)
                cur = nxt
            if hi is None:
                loop = self.new()
                self.eps[cur].append((loop, None))
                body_end = self.new()
                self.build(sub, loop, body_end)
                self.eps[body_end].append((loop, None))
                self.eps[loop].append((b, None))
            else:
                for _ in range(hi - lo):
                    nxt = self.new()
                    self.eps[cur].append((b, None))
                    self.build(sub, cur, nxt)
                    cur = nxt
                self.eps[cur].append((b, None))
        elif kind in ("bol", "eol", "eos"):
            self.eps[a].append((b, kind))
        else:  # pragma: no cover
            raise AssertionError(kind)


FREE, E1, E0 = 0, 1, 2  # remaining input: anything / "" or "\n" / ""


def _meet(m: int, kind: str) -> int:
    if kind == "eol":
        return E1 if m == FREE else m
    return E0  # eos


def _determinize(nfa: _RNFA, start: int, final: int, search: bool) -> DFA:
    def closure(configs, at_start):
        seen = set(configs)
        stack = list(seen)
        while stack:
            q, m = stack.pop()
            for t, kind in nfa.eps[q]:
                if kind is None:
                    nm = m
                elif kind == "bol":
                    if not at_start:
                        continue
                    nm = m
                else:
                    nm = _meet(m, kind)
                if (t, nm) not in seen:
                    seen.add((t, nm))
                    stack.append((t, nm))
        flags = {m for q, m in seen if q == final}
        return seen, flags

    ACCEPT_ALL = ("ALL",)
    index: dict = {}
    keys: list = []
    edges: list[list] = []
    finals: list[bool] = []

    def intern(configs, flags):
        if search and FREE in flags:
            key = ACCEPT_ALL
        else:
            if not search and flags:
                flags = {E0}
            key = (frozenset(configs), frozenset(flags))
        j = index.get(key)
        if j is None:
            j = index[key] = len(keys)
            keys.append(key)
            edges.append(None)
            finals.append(key is ACCEPT_ALL or bool(key[1]))
            spend()
            if len(keys) > MAX_STATES:
                raise TooLarge("regex DFA too large")
        return j

    c0, f0 = closure({(start, FREE)}, True)
    intern(c0, f0)
    nl = ((NEWLINE, NEWLINE),)
    i = 0
    while i < len(keys):
        key = keys[i]
        if key is ACCEPT_ALL:
            edges[i] = [(lo, hi, i) for lo, hi in CODEPOINTS]
            i += 1
            continue
        configs, flags = key
        items = [(cs, (t, m)) for (q, m) in configs for cs, t in nfa.edges[q]]
        items.append((nl, "NL"))
        if search or flags:
            items.append((CODEPOINTS, "ALL"))
        row = []
        for lo, hi, payloads in partition(items):
            is_nl = lo == hi == NEWLINE
            nxt = set()
            for p in payloads:
                if p == "NL" or p == "ALL":
                    continue
                t, m = p
                if m == FREE:
                    nxt.add((t, FREE))
                elif m == E1 and is_nl:
                    nxt.add((t, E0))
            nflags = {E0} if (E1 in flags and is_nl) else set()
            if search:
                nxt.add((start, FREE))
            if not nxt and not nflags:
                continue
            cl, fl = closure(nxt, False)
            j = intern(cl, fl | nflags)
            row.append((lo, hi, j))
        edges[i] = _merge_row(row)
        i += 1
    return DFA(edges, finals).trim().minimize()


@functools.lru_cache(maxsize=512)
def compile_dfa(pattern: str, mode: str = "search", dialect: str = "python") -> DFA:
    """DFA over code points for ``re.search`` (``mode="search"``) or ``re.fullmatch``
    (``mode="fullmatch"``) of ``pattern``, read as Python's ``re`` reads it
    (``dialect="python"``) or as ECMA-262 does (``"ecma"``: ASCII ``\\d \\w``, ECMA's
    ``\\s``, ``.`` without any line terminator, ``$`` only at the end; Python-only
    syntax refused)."""
    if mode not in ("search", "fullmatch"):
        raise ValueError(mode)
    ast = parse(pattern, dialect)
    nfa = _RNFA()
    s, f = nfa.new(), nfa.new()
    try:
        nfa.build(ast, s, f)
        return _determinize(nfa, s, f, search=(mode == "search"))
    except TooLarge as e:
        raise RegexError(f"/{pattern}/: {e} (more than {MAX_STATES} states)") from None


def literal_dfa(text: str) -> DFA:
    return DFA.literal([ord(c) for c in text])


def regex_grammar(pattern: str, mode: str = "fullmatch"):
    """A grammar whose language is the UTF-8 text fully matched by ``pattern``."""
    from reference_engine import ir

    dfa = compile_dfa(pattern, mode)
    return ir.Grammar({"root": ir.Automaton(dfa, "utf8", label=f"/{pattern}/")}, "root")


__all__ = ["RegexError", "compile_dfa", "parse", "python_class", "regex_grammar", "literal_dfa",
           "cs_chars"]
