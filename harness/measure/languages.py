"""Ground truth beyond JSON: is a text in a grammar's language, by a real parser?

One *reader* per dialect decides membership independently of every engine under test:

``regex``  Python's ``re.fullmatch`` (the whole text, not a prefix or a search);
``lark``   a ``lark`` Earley parser with the ``dynamic_complete`` lexer (every split of the
           text into terminals is tried, so a regex terminal never shadows a shorter match
           the grammar needs); start rule ``start``; no ``%ignore`` (the language is exact);
``gbnf``   the reference engine's GBNF parser and byte-level pushdown automaton
           (``PDA.accepts``), exact by construction;
``choice`` membership in the menu.

A grammar case's *ground truth* is the reader of its source form (``regex`` for the regex
family, ``lark`` for CFGs, ``choice`` for menus); the readers of its translations are what
the translation-drift check holds against it. Grammars are untrusted input: readers never
evaluate anything, and a reader that cannot be built raises :class:`ReaderError` with one
line.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

__all__ = ["DIALECTS", "MAX_TRUTH_CHARS", "Reader", "ReaderError", "reader"]

#: Dialects a reader exists for.
DIALECTS = ("regex", "lark", "gbnf", "choice")

#: Texts longer than this are not judged (``None``: undecided). Earley parsing is cubic at
#: worst; every instance of the corpus is far shorter, fuzz outputs may not be.
MAX_TRUTH_CHARS = 4000


class ReaderError(Exception):
    """A grammar text its dialect's reader cannot take (message: one line)."""


Reader = Callable[[str], "bool | None"]


def _regex_reader(text: str) -> Reader:
    try:
        pattern = re.compile(text)
    except (re.error, OverflowError, RecursionError) as e:
        raise ReaderError(f"regex does not compile with Python's re: {e}") from None

    def accepts(s: str) -> bool | None:
        if len(s) > MAX_TRUTH_CHARS:
            return None
        return pattern.fullmatch(s) is not None

    return accepts


def _lark_reader(text: str) -> Reader:
    import lark
    from lark.exceptions import LarkError

    if re.search(r"^\s*%import\b", text, re.M):
        # lark would read grammar files from disk: a case must be self-contained
        raise ReaderError("lark grammar uses %import: a case's grammar must be self-contained")
    try:
        parser = lark.Lark(text, start="start", parser="earley", lexer="dynamic_complete")
    except (LarkError, re.error, RecursionError, TypeError, ValueError) as e:
        raise ReaderError(f"lark cannot build the grammar: {' '.join(str(e).split())[:300]}") from None
    if parser.ignore_tokens:
        raise ReaderError("lark grammar declares %ignore: the language would not be exact")

    def accepts(s: str) -> bool | None:
        if len(s) > MAX_TRUTH_CHARS:
            return None
        try:
            parser.parse(s)
            return True
        except LarkError:
            return False
        except RecursionError:
            return None

    return accepts


def _gbnf_reader(text: str) -> Reader:
    from reference_engine.gbnf import GbnfError, parse_gbnf
    from reference_engine.pda import PDA, GrammarError

    try:
        pda = PDA(parse_gbnf(text))
    except (GbnfError, GrammarError, RecursionError) as e:
        raise ReaderError(f"GBNF not taken by the reference parser: {' '.join(str(e).split())[:300]}") from None

    def accepts(s: str) -> bool | None:
        if len(s) > MAX_TRUTH_CHARS:
            return None
        return bool(pda.accepts(s.encode("utf-8", "surrogatepass")))

    return accepts


def _choice_reader(menu: Iterable[str]) -> Reader:
    items = frozenset(menu)
    return lambda s: s in items


def reader(dialect: str, grammar: "str | Iterable[str]") -> Reader:
    """The membership test of ``grammar`` written in ``dialect`` (one of :data:`DIALECTS`;
    for ``choice`` the grammar is the menu, a list of strings): a callable ``text -> bool``,
    ``None`` where it cannot decide (a text over :data:`MAX_TRUTH_CHARS`).

    Raises :class:`ReaderError` when the grammar text does not build in its dialect and
    ``KeyError`` for an unknown dialect."""
    if dialect == "choice":
        return _choice_reader(grammar)
    build = {"regex": _regex_reader, "lark": _lark_reader, "gbnf": _gbnf_reader}[dialect]
    assert isinstance(grammar, str), "only a choice grammar is a menu"
    return build(grammar)
