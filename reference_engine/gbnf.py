"""GBNF / EBNF-style context-free grammar text → grammar IR.

Syntax (llama.cpp's GBNF, slightly more permissive about line breaks)::

    # comment
    root   ::= "SELECT " columns " FROM " name (" WHERE " cond)?
    columns ::= name ("," " "? name)* | "*"
    name   ::= [a-zA-Z_] [a-zA-Z0-9_]{0,30}
    cond   ::= name " = " ( [0-9]+ | "'" [^']* "'" )

- ``name ::= alternatives``; a definition runs until the next ``name ::=`` (so
  alternatives may continue on following lines); an optional ``;`` ends it;
- ``"literal"`` (escapes ``\\n \\r \\t \\\\ \\" \\xHH \\uHHHH \\UHHHHHHHH``), encoded as UTF-8;
- ``[...]`` / ``[^...]`` character classes over code points (ranges, escapes), ``.`` any
  code point (both as UTF-8);
- grouping ``( )``, alternation ``|``, postfix ``* + ?`` and ``{m}``, ``{m,}``, ``{m,n}``;
- the start rule is ``root`` if defined, else the first rule (or ``start=``).

Left recursion is refused when the grammar is compiled (the PDA is top-down).
"""

from __future__ import annotations

import re

from reference_engine import ir
from reference_engine.automata import CODEPOINTS, cs_complement, cs_intersect, cs_norm


class GbnfError(Exception):
    """Syntax error or undefined rule (message names the position)."""


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_ESC = {"n": 10, "r": 13, "t": 9, "\\": 92, '"': 34, "'": 39, "[": 91, "]": 93, "-": 45,
        "^": 94, "/": 47, "0": 0}


class _P:
    def __init__(self, text: str):
        self.s = text
        self.i = 0

    def err(self, msg: str):
        line = self.s.count("\n", 0, self.i) + 1
        col = self.i - (self.s.rfind("\n", 0, self.i) + 1) + 1
        raise GbnfError(f"line {line} col {col}: {msg}")

    def space(self) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r\n":
                self.i += 1
            elif c == "#":
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            else:
                break

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def at_definition(self) -> bool:
        m = _NAME.match(self.s, self.i)
        if not m:
            return False
        j = m.end()
        while j < len(self.s) and self.s[j] in " \t":
            j += 1
        return self.s.startswith("::=", j)

    # grammar := (name ::= alternates ;?)*
    def grammar(self) -> dict[str, ir.Expr]:
        rules: dict[str, ir.Expr] = {}
        self.space()
        while self.i < len(self.s):
            m = _NAME.match(self.s, self.i)
            if not m:
                self.err("expected a rule name")
            name = m.group()
            self.i = m.end()
            self.space()
            if not self.s.startswith("::=", self.i):
                self.err("expected '::='")
            self.i += 3
            body = self.alternates()
            if name in rules:
                self.err(f"rule {name!r} defined twice")
            rules[name] = body
            self.space()
            if self.peek() == ";":
                self.i += 1
                self.space()
        return rules

    def alternates(self) -> ir.Expr:
        alts = [self.sequence()]
        while True:
            self.space()
            if self.peek() == "|":
                self.i += 1
                alts.append(self.sequence())
            else:
                break
        return ir.alt(*alts) if len(alts) > 1 else alts[0]

    def sequence(self) -> ir.Expr:
        items = []
        while True:
            self.space()
            c = self.peek()
            if c == "" or c in "|);" or (c not in "\"'[(." and self.at_definition()):
                break
            items.append(self.postfix(self.atom()))
        return ir.seq(*items) if items else ir.EMPTY

    def atom(self) -> ir.Expr:
        c = self.peek()
        if c in "\"'":
            return ir.lit(self.literal(c))
        if c == "[":
            return ir.CharClass(self.klass())
        if c == ".":
            self.i += 1
            return ir.CharClass(CODEPOINTS)
        if c == "(":
            self.i += 1
            e = self.alternates()
            self.space()
            if self.peek() != ")":
                self.err("expected ')'")
            self.i += 1
            return e
        m = _NAME.match(self.s, self.i)
        if m:
            self.i = m.end()
            return ir.Ref(m.group())
        self.err(f"unexpected {c!r}")

    def postfix(self, e: ir.Expr) -> ir.Expr:
        while True:
            c = self.peek()
            if c == "*":
                self.i += 1
                e = ir.star(e)
            elif c == "+":
                self.i += 1
                e = ir.plus(e)
            elif c == "?":
                self.i += 1
                e = ir.opt(e)
            elif c == "{":
                m = re.compile(r"\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}").match(self.s, self.i)
                if not m:
                    self.err("bad repetition {m,n}")
                self.i = m.end()
                lo = int(m.group(1))
                hi = lo if not m.group(2) else (int(m.group(3)) if m.group(3) else None)
                if hi is not None and hi < lo:
                    self.err("repetition {m,n} with n < m")
                e = ir.rep(e, lo, hi)
            else:
                return e

    def escape(self) -> int:
        c = self.s[self.i] if self.i < len(self.s) else ""
        self.i += 1
        n = {"x": 2, "u": 4, "U": 8}.get(c)
        if n:
            h = self.s[self.i:self.i + n]
            if len(h) != n or not all(ch in "0123456789abcdefABCDEF" for ch in h):
                self.err(f"bad \\{c} escape")
            self.i += n
            v = int(h, 16)
            if v > 0x10FFFF:
                self.err("code point out of range")
            return v
        if c in _ESC:
            return _ESC[c]
        if c == "":
            self.err("dangling backslash")
        return ord(c)

    def literal(self, q: str) -> bytes:
        self.i += 1
        out = []
        while True:
            if self.i >= len(self.s):
                self.err("unterminated string")
            c = self.s[self.i]
            if c == q:
                self.i += 1
                break
            if c == "\\":
                self.i += 1
                out.append(chr(self.escape()))
            else:
                out.append(c)
                self.i += 1
        return "".join(out).encode("utf-8", "surrogatepass")

    def klass(self) -> tuple:
        self.i += 1
        neg = self.peek() == "^"
        if neg:
            self.i += 1
        parts = []
        first = True
        while True:
            if self.i >= len(self.s):
                self.err("unterminated character class")
            c = self.s[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            lo = self._class_char()
            if self.peek() == "-" and self.i + 1 < len(self.s) and self.s[self.i + 1] != "]":
                self.i += 1
                hi = self._class_char()
                if hi < lo:
                    self.err("bad range in character class")
                parts.append((lo, hi))
            else:
                parts.append((lo, lo))
        cs = cs_intersect(cs_norm(parts), CODEPOINTS)
        return cs_complement(cs) if neg else cs

    def _class_char(self) -> int:
        c = self.s[self.i]
        self.i += 1
        if c == "\\":
            return self.escape()
        return ord(c)


def parse_gbnf(text: str, start: str | None = None) -> ir.Grammar:
    """Parse GBNF text into a :class:`~reference_engine.ir.Grammar`."""
    p = _P(text)
    rules = p.grammar()
    if not rules:
        raise GbnfError("no rules")
    for name, e in rules.items():
        for r in ir.refs(e):
            if r not in rules:
                raise GbnfError(f"rule {name!r} references undefined rule {r!r}")
    if start is None:
        start = "root" if "root" in rules else next(iter(rules))
    if start not in rules:
        raise GbnfError(f"start rule {start!r} is not defined")
    return ir.Grammar(rules, start)
