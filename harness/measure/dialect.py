"""Does a dialect difference explain an engine's verdict? The flagged construct, tested alone.

A grammar case marked ``dialect_sensitive`` names a construct whose meaning differs
between dialects (``\\d`` and ``\\w``: Unicode in Python's ``re``, the ground truth, ASCII
in some engines'). An engine's verdict that differs from the ground truth there is a
*dialect difference* only when that construct, read as this engine reads it, explains
it; otherwise it is an ordinary false reject or accept of the engine, counted as one.

The case names the construct as one regex atom (``dialect_construct``: ``\\d``, ``\\w``,
``\\s``, their negations, or ``.``; ``harness.suite.grammar_corpus.DIALECT_ATOMS``).
:class:`ConstructProbe` compiles the atom alone through the same engine, in the dialect
the engine was given (a regex, or a Lark terminal), and asks it about each distinct
character of the text: accepted when any tokenisation of the character is
(:func:`harness.measure.reachability.search`), so that a token-boundary bug of the
engine is not mistaken for the construct's meaning. The source regex is then rewritten
with the atom replaced by the characters of the text the engine's atom accepts, and
Python's ``re`` reads the text with it: the *predicted* verdict, what the engine would
say if the construct were the only difference. The construct explains the engine's
verdict exactly when the prediction equals it. A form without the construct (GBNF has
no ``\\d``), or a ground truth that is not a regex, explains nothing.

Example: outlines-core reads ``\\d`` as Unicode and accepts ``٣`` and ``႘`` each alone,
so ``\\d+`` predicts "valid" for ``٣႘``; outlines-core refuses ``٣႘``: not explained, an
ordinary false reject. XGrammar's ``\\d`` refuses ``٣``: the prediction "invalid" is its
verdict, a dialect difference.
"""

from __future__ import annotations

import re
from typing import Any, TypedDict

import numpy as np

__all__ = ["ConstructProbe", "predicted_verdict", "substitute"]


def _probe_grammar(dialect: str, atom: str) -> str | None:
    """The atom alone in ``dialect`` (None: the dialect has no such construct)."""
    if dialect == "regex":
        return atom
    if dialect == "lark":
        return f"start: /{atom}/\n"
    return None


def substitute(pattern: str, atom: str, chars: set[str]) -> str:
    """``pattern`` (a Python regex) with every occurrence of ``atom`` read as the class of
    ``chars``: outside a class a group of them (``(?!)`` when none), inside a class the
    characters themselves (a class left empty matches nothing, or anything when negated)."""
    lit = "".join(re.escape(c) for c in sorted(chars))
    group = f"[{lit}]" if lit else "(?!)"
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            tok = pattern[i:i + 2]
            out.append(group if tok == atom else tok)
            i += 2
            continue
        if c == "." and atom == ".":
            out.append(group)
            i += 1
            continue
        if c != "[":
            out.append(c)
            i += 1
            continue
        # a class: [ ^? ]? … ]
        j = i + 1
        neg = j < n and pattern[j] == "^"
        j += neg
        body: list[str] = []
        first = True
        while j < n and (pattern[j] != "]" or first):
            first = False
            if pattern[j] == "\\":
                tok = pattern[j:j + 2]
                body.append(lit if tok == atom else tok)
                j += 2
            else:
                body.append(pattern[j])
                j += 1
        inner = "".join(body)
        if inner:
            out.append(("[^" if neg else "[") + inner + "]")
        else:
            out.append("(?s:.)" if neg else "(?!)")
        i = j + 1
    return "".join(out)


def predicted_verdict(pattern: str, atom: str, text: str, accepts: dict[str, bool]) -> bool:
    """Python's ``re`` on ``text`` with ``atom`` read as the engine reads it (``accepts``:
    character → the engine's verdict on the atom alone)."""
    chars = {c for c, ok in accepts.items() if ok}
    return re.fullmatch(substitute(pattern, atom, chars), text) is not None


class ProbeExplanation(TypedDict, total=False):
    """:meth:`ConstructProbe.explain`'s answer."""

    construct: str | None  # the construct tested alone
    explained: bool | None  # it explains the engine's verdict (None: not decided)
    predicted: bool      # the verdict the engine's reading of the construct predicts
    chars: dict[str, bool | None]  # characters read otherwise than Python's → the engine's verdict
    why: str | None      # why nothing was explained


class ConstructProbe:
    """The construct of one dialect-sensitive case, tested alone through one engine (see
    the module docstring). Built per job; compiles the probe once, on first use."""

    def __init__(self, adapter, target, vocab, bitmask: np.ndarray, budget) -> None:
        self.adapter, self.target, self.vocab, self.bm = adapter, target, vocab, bitmask
        self.budget = budget
        self.atom: str | None = getattr(target, "dialect_construct", None)
        self._grammar: Any = None
        self._why: str | None = None
        self._seen: dict[str, bool | None] = {}

    def _compiled(self):
        from engines.protocol import CompileError, one_line

        if self._grammar is None and self._why is None:
            src = _probe_grammar(self.target.form or "", self.atom or "")
            if self.atom is None:
                self._why = "the case names no construct (dialect_construct) to test alone"
            elif self.target.source != "regex":
                self._why = f"the ground truth is {self.target.source}, not a regex to rewrite"
            elif src is None:
                self._why = (f"the engine was given the {self.target.form} form, which has no "
                             f"{self.atom}: the construct cannot explain its verdict")
            else:
                try:
                    self._grammar = self.adapter.compile_grammar(self.target.form, src)
                except CompileError as e:
                    self._why = f"the construct alone does not compile: {one_line(e)}"
        return self._grammar

    def engine_accepts(self, ch: str) -> bool | None:
        """The engine's verdict on the construct alone for ``ch`` (None: undecided)."""
        from harness.measure.reachability import TOKENIZATION, UNDECIDED, classify
        from harness.measure.replay import replay

        if ch not in self._seen:
            g = self._compiled()
            r = replay(g.matcher(), self.vocab.encode(ch), self.bm, self.vocab.stop_ids)
            if r.status == "accepted":
                self._seen[ch] = True
            else:
                kind = classify({}, g, self.vocab, ch, self.bm, self.budget)["reject_kind"]
                self._seen[ch] = True if kind == TOKENIZATION else None if kind == UNDECIDED \
                    else False
        return self._seen[ch]

    def explain(self, text: str, engine_verdict: bool) -> ProbeExplanation:
        """``{"explained": bool | None, "construct", "predicted", "chars", "why"}``:
        whether the construct, read as the engine reads it, predicts ``engine_verdict``
        (True: a dialect difference). ``chars`` lists the text's characters where the
        engine's reading and Python's differ, each with the engine's verdict (None:
        undecided)."""
        out: ProbeExplanation = {"construct": self.atom, "explained": None}
        if self._compiled() is None:
            out["why"] = self._why
            return out
        atom = self.atom
        assert atom is not None  # without a construct nothing compiled
        accepts: dict[str, bool] = {}
        differ: dict[str, bool | None] = {}
        for ch in dict.fromkeys(text):
            v = self.engine_accepts(ch)
            py = re.fullmatch(atom, ch) is not None
            if v is None:
                out.update({"chars": differ,
                            "why": f"the engine's verdict on {ch!r} alone is undecided"})
                return out
            accepts[ch] = v
            if v != py:
                differ[ch] = v
        pred = predicted_verdict(self.target.forms["regex"], atom, text, accepts)
        out.update({"explained": pred == engine_verdict, "predicted": pred, "chars": differ})
        if pred != engine_verdict:
            out["why"] = (f"{self.atom} read as the engine reads it predicts "
                          f"{'valid' if pred else 'invalid'}, the engine says "
                          f"{'valid' if engine_verdict else 'invalid'}")
        return out
