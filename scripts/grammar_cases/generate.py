"""Generate instances of grammar cases: ``python -m scripts.grammar_cases.generate [FILE…]``.

For every case file (no argument: the whole corpus) the generator draws candidate texts
from the case's source grammar and rewrites the file's ``[generated]`` table, at its end,
with the ones ground truth labels:

- *valid candidates*, drawn at random from the grammar: bounded random walks of the
  reference engine's DFA of a regex (:func:`reference_engine.regex.compile_dfa`; a small
  sampler over Python's own regex parse where the DFA cannot be built), depth-bounded
  random derivations of a Lark grammar (past the bound, the expansions that end the
  derivation soonest), random entries of a menu;
- *invalid candidates*, mutations of valid texts (insert, delete or replace one
  character, swap two, truncate), the characters drawn mostly from the grammar's own
  alphabet.

Every label comes from the ground truth (the source form's reader of
:mod:`harness.measure.languages`), never from the generator: a candidate it accepts goes
to ``valid``, one it rejects to ``invalid``, an undecided one is dropped; so are repeats
and texts among the hand-written ``[instances]``. About :data:`PER_LABEL` of each are kept
(fewer when the language has fewer), each at most :data:`MAX_CHARS` characters. The
random choices are seeded by the case id (sha256): a rerun writes the same bytes.

An ``[inject]`` file is generated from its smallest size's case, and a text is kept only
where the case of every size gives it the same label (the instances are shared by all).

Only the ``[generated]`` table is rewritten (with the comment line above it); everything
before it is kept byte for byte. Prints one line per file; a file that cannot be loaded
prints its :class:`~harness.suite.grammar_corpus.CorpusError` line and is skipped (exit 1).
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import sys
import tempfile
import time
import tomllib
import unicodedata
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.measure.languages import ReaderError, reader
from harness.suite.grammar_corpus import CorpusError, GrammarCase, case_files, load_file

__all__ = ["COMMENT", "MAX_CHARS", "PER_LABEL", "Generated", "generate_case", "generate_file",
           "main", "render_section", "toml_string"]

#: instances kept per label and case (fewer when the language has fewer)
PER_LABEL = 8
#: longest generated text (characters)
MAX_CHARS = 300
COMMENT = "# written by python -m scripts.grammar_cases.generate; labels by ground truth"

_VALID_TRIES = 120       # derivations / walks drawn per case
_MUTATION_TRIES = 160    # mutations drawn per case
_MAX_DEPTH = (2, 9)      # a derivation's depth bound is drawn from this range
_MAX_NODES = 400         # expansions of one derivation before it only closes
_WALK_LEN = 80           # a DFA walk heads for a final state past this length

# characters a mutation draws outside the grammar's alphabet (now and then)
_FOREIGN = " \t\n0aZ_-.,;:\"'\\/()[]{}<>+*?|#@$%&=~`^!\u00e9\u00df\u03bb\u4e2d\U0001F600\u00a0"
# where a wide character class draws from, most of the time
_PREFERRED = ((0x20, 0x7E), (0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A), (0xA1, 0xFF),
              (0x391, 0x3C9), (0x4E00, 0x4E2F), (0x1F600, 0x1F60F))


class Generated:
    """What :func:`generate_case` drew for one case: the two lists it would write."""

    def __init__(self, case_id: str, valid: list[str], invalid: list[str], seconds: float):
        self.case_id, self.valid, self.invalid, self.seconds = case_id, valid, invalid, seconds


# -- random characters ------------------------------------------------------------------

def _is_scalar(c: int) -> bool:
    return 0 <= c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF


def _pick_in(rng: random.Random, lo: int, hi: int) -> int:
    """A code point of ``[lo, hi]``: mostly a readable one where the range has some."""
    if lo == hi:
        return lo
    if rng.random() < 0.9:
        spans = [(max(lo, a), min(hi, b)) for a, b in _PREFERRED if max(lo, a) <= min(hi, b)]
        if spans:
            a, b = rng.choice(spans)
            return rng.randint(a, b)
    for _ in range(8):
        c = rng.randint(lo, min(hi, lo + 0xFFFF) if rng.random() < 0.7 else hi)
        if _is_scalar(c) and unicodedata.category(chr(c)) not in ("Cn", "Cs", "Co"):
            return c
    return lo if _is_scalar(lo) else hi


# -- regex sampling: DFA walks ----------------------------------------------------------

class _DfaSampler:
    """Bounded random walks of a DFA from its start to a final state."""

    def __init__(self, dfa):
        self.dfa = dfa
        n = dfa.n
        # distance (in symbols) from each state to the nearest final state
        rev: list[list[int]] = [[] for _ in range(n)]
        for s, row in enumerate(dfa.edges):
            for _, _, t in row:
                rev[t].append(s)
        inf = float("inf")
        dist = [inf] * n
        queue = [s for s in range(n) if dfa.finals[s]]
        for s in queue:
            dist[s] = 0
        for s in queue:
            for p in rev[s]:
                if dist[p] == inf:
                    dist[p] = dist[s] + 1
                    queue.append(p)
        self.dist = dist
        self.empty = n == 0 or dist[0] == inf

    def shortest(self) -> int:
        return 0 if self.empty else int(self.dist[0])

    def sample(self, rng: random.Random, target: int) -> str | None:
        if self.empty:
            return None
        dfa, dist = self.dfa, self.dist
        s, out = 0, []
        hard = max(_WALK_LEN, target)
        while True:
            live = [e for e in dfa.edges[s] if dist[e[2]] != float("inf")]
            if dfa.finals[s]:
                over = len(out) - target
                p_stop = 0.05 if over < 0 else min(0.95, 0.5 + 0.15 * over)
                if not live or rng.random() < p_stop:
                    return "".join(out)
            if not live:
                return None
            if len(out) >= hard:
                best = min(dist[e[2]] for e in live)
                live = [e for e in live if dist[e[2]] == best]
            lo, hi, t = rng.choice(live)
            out.append(chr(_pick_in(rng, lo, hi)))
            s = t

    def alphabet(self, rng: random.Random) -> list[str]:
        """Characters on the DFA's edges (every one of a small class, a few of a wide one)."""
        out: dict[str, None] = {}
        for row in self.dfa.edges:
            for lo, hi, _ in row:
                if hi - lo < 16:
                    for c in range(lo, hi + 1):
                        if _is_scalar(c):
                            out[chr(c)] = None
                else:
                    for _ in range(3):
                        out[chr(_pick_in(rng, lo, hi))] = None
                if len(out) > 400:
                    return list(out)
        return list(out)


# -- regex sampling: Python's own parse (where no DFA can be built) ----------------------

try:  # Python 3.11+
    from re import _constants as _sre_c, _parser as _sre_p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore[no-redef]
    import sre_parse as _sre_p  # type: ignore[no-redef]

_CATEGORY_RE = {
    "CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W",
    "CATEGORY_LINEBREAK": r"\n", "CATEGORY_NOT_LINEBREAK": r"[^\n]",
}
_PRINTABLE = [chr(c) for c in range(0x20, 0x7F)] + list("\t\n\u00e9\u03bb\u4e2d")


class _SreSampler:
    """Random strings of a regex read by Python's own parser: approximate (assertions are
    ignored, flags mostly), which costs only yield: ground truth labels every text."""

    def __init__(self, pattern: str, flags: Iterable[str] = ()):
        self.tree = _sre_p.parse(pattern)
        self.icase = "i" in flags
        self.dotall = "s" in flags

    def sample(self, rng: random.Random, target: int) -> str | None:
        groups: dict[int, str] = {}
        out: list[str] = []
        budget = [max(target, 8) * 4]
        try:
            self._seq(self.tree, rng, out, groups, budget, target)
        except _Give:
            return None
        s = "".join(out)
        if self.icase:
            s = "".join(c.swapcase() if rng.random() < 0.3 else c for c in s)
        return s

    def _seq(self, items, rng, out, groups, budget, target):
        for op, av in items:
            name = getattr(op, "name", str(op))
            budget[0] -= 1
            if budget[0] < -200:
                raise _Give
            if name == "LITERAL":
                out.append(chr(av))
            elif name == "NOT_LITERAL":
                out.append(next(c for c in rng.sample(_PRINTABLE, 3) + ["\u00e9"] if ord(c) != av))
            elif name == "ANY":
                c = rng.choice(_PRINTABLE)
                out.append(" " if c == "\n" and not self.dotall else c)
            elif name == "IN":
                out.append(self._in(av, rng))
            elif name == "BRANCH":
                self._seq(rng.choice(av[1]), rng, out, groups, budget, target)
            elif name == "SUBPATTERN":
                gid, sub = av[0], av[-1]
                start = len(out)
                self._seq(sub, rng, out, groups, budget, target)
                if gid is not None:
                    groups[gid] = "".join(out[start:])
            elif name == "ATOMIC_GROUP":
                self._seq(av, rng, out, groups, budget, target)
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                lo, hi, sub = av
                hi = lo + 12 if hi == _sre_c.MAXREPEAT else hi
                if budget[0] <= 0 or len(out) >= target:
                    n = lo
                else:
                    n = lo
                    while n < hi and rng.random() < 0.6:
                        n += 1
                for _ in range(n):
                    self._seq(sub, rng, out, groups, budget, target)
            elif name == "GROUPREF":
                out.append(groups.get(av, ""))
            elif name == "GROUPREF_EXISTS":
                gid, yes, no = av
                branch = yes if gid in groups else no
                if branch is not None:
                    self._seq(branch, rng, out, groups, budget, target)
            elif name in ("AT", "ASSERT", "ASSERT_NOT"):
                continue
            else:
                raise _Give

    def _in(self, items, rng) -> str:
        negate = bool(items) and getattr(items[0][0], "name", str(items[0][0])) == "NEGATE"
        body = items[1:] if negate else items

        def member(ch: str) -> bool:
            for op, av in body:
                name = getattr(op, "name", str(op))
                if name == "LITERAL" and ord(ch) == av:
                    return True
                if name == "RANGE" and av[0] <= ord(ch) <= av[1]:
                    return True
                if name == "CATEGORY" and re.fullmatch(_CATEGORY_RE.get(getattr(av, "name", str(av)), "(?!)"), ch):
                    return True
            return False

        if not negate:
            op, av = rng.choice(body) if body else (None, None)
            name = getattr(op, "name", str(op))
            if name == "LITERAL":
                return chr(av)
            if name == "RANGE":
                return chr(_pick_in(rng, av[0], av[1]))
        pool = rng.sample(_PRINTABLE, len(_PRINTABLE))
        for ch in pool:
            if member(ch) != negate:
                return ch
        raise _Give


class _Give(Exception):
    """A sample that cannot be completed (dropped)."""


def _regex_sampler(pattern: str, flags: Iterable[str] = ()):
    """The best sampler of ``pattern``: a DFA walk where the reference engine compiles it
    (and no flag changes its reading), else Python's parse; None when neither works."""
    flags = tuple(flags)
    if not flags:
        try:
            from reference_engine.regex import compile_dfa
            return _DfaSampler(compile_dfa(pattern, mode="fullmatch"))
        except Exception:
            pass
    try:
        return _SreSampler(pattern, flags)
    except Exception:
        return None


# -- Lark derivations -------------------------------------------------------------------

class _LarkSampler:
    """Depth-bounded random derivations of a Lark grammar from ``start``."""

    def __init__(self, text: str):
        import lark

        parser = lark.Lark(text, start="start", parser="earley", lexer="dynamic_complete")
        rules: dict[str, list[tuple[tuple[bool, str], ...]]] = {}
        for r in parser.rules:
            rules.setdefault(r.origin.name, []).append(
                tuple((sym.is_term, sym.name) for sym in r.expansion))
        # a stable order whatever the order lark built them in
        self.rules = {k: sorted(v) for k, v in sorted(rules.items())}
        self.terms: dict[str, Any] = {}
        self.literals: dict[str, tuple[str, bool]] = {}
        for t in sorted(parser.terminals, key=lambda t: t.name):
            pat = t.pattern
            flags = tuple(sorted(pat.flags))
            if type(pat).__name__ == "PatternStr":
                self.literals[t.name] = (pat.value, "i" in flags)
            else:
                self.terms[t.name] = _regex_sampler(pat.value, flags)
        self._closing()

    def _term_len(self, name: str) -> float:
        if name in self.literals:
            return len(self.literals[name][0])
        s = self.terms.get(name)
        if s is None:
            return float("inf")
        return s.shortest() if isinstance(s, _DfaSampler) else 1

    def _closing(self) -> None:
        """Per nonterminal, the least derivation height (and, among the expansions that
        reach it, the shortest text): what a derivation past its bound expands with."""
        inf = float("inf")
        height = {k: inf for k in self.rules}
        length = {k: inf for k in self.rules}

        def sym_cost(sym):
            is_term, name = sym
            if is_term:
                return (0, self._term_len(name))
            return (height.get(name, inf), length.get(name, inf))

        changed = True
        while changed:
            changed = False
            for k, exps in self.rules.items():
                for exp in exps:
                    costs = [sym_cost(s) for s in exp]
                    h = 1 + max((c[0] for c in costs), default=0)
                    n = sum(c[1] for c in costs)
                    if (h, n) < (height[k], length[k]):
                        height[k], length[k] = h, n
                        changed = True
        self.height, self.length = height, length
        self.closing: dict[str, list[tuple]] = {}
        for k, exps in self.rules.items():
            keyed = []
            for exp in exps:
                costs = [sym_cost(s) for s in exp]
                keyed.append((1 + max((c[0] for c in costs), default=0), sum(c[1] for c in costs), exp))
            best = min((h for h, _, _ in keyed), default=inf)
            self.closing[k] = [exp for h, _, exp in keyed if h == best and h != inf]

    def sample(self, rng: random.Random, target: int) -> str | None:
        if not self.closing.get("start"):
            return None
        depth_bound = rng.randint(*_MAX_DEPTH)
        out: list[str] = []
        nodes = [0]
        try:
            self._expand("start", 0, depth_bound, rng, out, nodes, target)
        except _Give:
            return None
        return "".join(out)

    def _expand(self, nt, depth, bound, rng, out, nodes, target):
        nodes[0] += 1
        closing = depth >= bound or nodes[0] > _MAX_NODES or sum(map(len, out)) > MAX_CHARS // 2
        exps = self.closing[nt] if closing else self.rules[nt]
        # an expansion that cannot finish is never taken
        exps = [e for e in exps if all(self._finishes(s) for s in e)]
        if not exps:
            raise _Give
        for is_term, name in rng.choice(exps):
            if is_term:
                out.append(self._terminal(name, rng))
            else:
                self._expand(name, depth + 1, bound, rng, out, nodes, target)
            if nodes[0] > 10 * _MAX_NODES:
                raise _Give

    def _finishes(self, sym) -> bool:
        is_term, name = sym
        if is_term:
            return self._term_len(name) != float("inf")
        return self.height.get(name, float("inf")) != float("inf")

    def _terminal(self, name: str, rng: random.Random) -> str:
        if name in self.literals:
            value, icase = self.literals[name]
            if icase:
                value = "".join(c.swapcase() if rng.random() < 0.3 else c for c in value)
            return value
        sampler = self.terms.get(name)
        if sampler is None:
            raise _Give
        s = sampler.sample(rng, rng.choice((1, 2, 4, 8)))
        if s is None:
            raise _Give
        return s

    def alphabet(self, rng: random.Random) -> list[str]:
        out: dict[str, None] = {}
        for value, _ in self.literals.values():
            out.update(dict.fromkeys(value))
        for s in self.terms.values():
            if isinstance(s, _DfaSampler):
                out.update(dict.fromkeys(s.alphabet(rng)))
        return list(out)


# -- generation -------------------------------------------------------------------------

def _seed(case_id: str) -> int:
    return int.from_bytes(hashlib.sha256(case_id.encode("utf-8")).digest()[:8], "big")


def _mutate(text: str, rng: random.Random, alphabet: list[str]) -> str:
    def char() -> str:
        if alphabet and rng.random() < 0.85:
            return rng.choice(alphabet)
        return rng.choice(_FOREIGN)

    for _ in range(1 if rng.random() < 0.75 else 2):
        n = len(text)
        ops = ["insert"] + (["delete", "replace", "truncate"] if n else []) + (["swap"] if n > 1 else [])
        op = rng.choice(ops)
        if op == "insert":
            i = rng.randint(0, n)
            text = text[:i] + char() + text[i:]
        elif op == "delete":
            i = rng.randrange(n)
            text = text[:i] + text[i + 1:]
        elif op == "replace":
            i = rng.randrange(n)
            c = char()
            if c == text[i]:
                c = rng.choice(_FOREIGN)
            text = text[:i] + c + text[i + 1:]
        elif op == "swap":
            i = rng.randrange(n - 1)
            text = text[:i] + text[i + 1] + text[i] + text[i + 2:]
        else:
            text = text[:rng.randrange(n)]
    return text


def _writable(text: str) -> bool:
    return len(text) <= MAX_CHARS and not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def _spread(texts: list[str], k: int) -> list[str]:
    """``k`` of ``texts`` (in their order of discovery) spread over their lengths: short
    and long ones both, then sorted by length for reading."""
    if len(texts) <= k:
        chosen = list(texts)
    else:
        by_len = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))
        picks = sorted({by_len[round(j * (len(texts) - 1) / (k - 1))] for j in range(k)}) if k > 1 \
            else [by_len[len(by_len) // 2]]
        chosen = [texts[i] for i in picks]
        for t in texts:  # rounding may have merged two picks
            if len(chosen) >= k:
                break
            if t not in chosen:
                chosen.append(t)
    return sorted(chosen, key=lambda t: (len(t), t))


def generate_case(cases: list[GrammarCase]) -> Generated:
    """Instances for the case(s) of one file (an ``[inject]`` file: one case per size,
    generated from the smallest, labelled by every one). Raises :class:`ReaderError`
    when the source form does not build."""
    t0 = time.perf_counter()
    cases = sorted(cases, key=lambda c: (c.size or 0))
    case = cases[0]
    rng = random.Random(_seed(case.case_id))
    truths: list[Callable[[str], bool | None]] = [reader(c.source, c.forms[c.source]) for c in cases]
    hand = {t for t, _ in case.instances[:case.hand_written]}
    hand_valid = [t for t, lab in case.instances[:case.hand_written] if lab]

    def label(text: str) -> bool | None:
        verdicts = {truth(text) for truth in truths}
        return verdicts.pop() if len(verdicts) == 1 else None

    src = case.forms[case.source]
    draw: Callable[[random.Random, int], str | None]
    alphabet: list[str]
    if case.source == "choice":
        menu = list(src)
        draw = lambda r, _n: r.choice(menu)  # noqa: E731
        alphabet = list(dict.fromkeys(ch for w in menu[:2000] for ch in w))
    elif case.source == "regex":
        sampler = _regex_sampler(src)
        draw = (lambda r, n: sampler.sample(r, n)) if sampler else (lambda r, n: None)  # noqa: E731
        alphabet = sampler.alphabet(rng) if isinstance(sampler, _DfaSampler) else []
    else:
        lsampler = _LarkSampler(src)
        draw = lsampler.sample
        alphabet = lsampler.alphabet(rng)

    seen: dict[str, bool | None] = {}
    valid: list[str] = []
    invalid: list[str] = []

    def consider(text: str | None) -> None:
        if text is None or text in seen or not _writable(text):
            return
        v = seen[text] = label(text)
        if text in hand or v is None:
            return
        (valid if v else invalid).append(text)

    for _ in range(_VALID_TRIES):
        consider(draw(rng, rng.choice((1, 2, 4, 8, 16, 32, 64))))
        if len(valid) >= 3 * PER_LABEL:
            break
    seeds = [t for t in list(dict.fromkeys(hand_valid + valid)) if _writable(t)]
    alphabet = list(dict.fromkeys(alphabet + [ch for t in seeds for ch in t]))
    alphabet = [c for c in alphabet if not 0xD800 <= ord(c) <= 0xDFFF]
    if seeds:
        for _ in range(_MUTATION_TRIES):
            consider(_mutate(rng.choice(seeds), rng, alphabet))
            if len(invalid) >= 3 * PER_LABEL:
                break
    else:  # nothing valid to mutate: random texts over the alphabet
        pool = alphabet or list(_FOREIGN)
        for _ in range(_MUTATION_TRIES // 4):
            consider("".join(rng.choice(pool) for _ in range(rng.randint(0, 12))))
    return Generated(case.case_id, _spread(valid, PER_LABEL), _spread(invalid, PER_LABEL),
                     time.perf_counter() - t0)


# -- writing ----------------------------------------------------------------------------

_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(s: str) -> str:
    """``s`` as a TOML basic string: quote, backslash and every control or invisible
    character escaped (``\\uXXXX`` / ``\\UXXXXXXXX``, U+007F included), the rest as is."""
    out = []
    for ch in s:
        if ch in _SHORT:
            out.append(_SHORT[ch])
            continue
        o = ord(ch)
        if 0xD800 <= o <= 0xDFFF:
            raise ValueError("a lone surrogate has no TOML form")
        if o < 0x20 or o == 0x7F or unicodedata.category(ch) in ("Cc", "Cf", "Cn", "Co", "Zl", "Zp") \
                or (unicodedata.category(ch) == "Zs" and ch != " "):
            out.append(f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def render_section(valid: list[str], invalid: list[str]) -> str:
    """The ``[generated]`` table (with its comment line), as written at a file's end."""
    lines = [COMMENT, "[generated]"]
    for key, texts in (("valid", valid), ("invalid", invalid)):
        if not texts:
            lines.append(f"{key} = []")
            continue
        lines.append(f"{key} = [")
        lines += [f"  {toml_string(t)}," for t in texts]
        lines.append("]")
    return "\n".join(lines) + "\n"


_HEADER = re.compile(r"^[ \t]*\[[ \t]*generated[ \t]*\][ \t]*(#.*)?$")
_ANY_HEADER = re.compile(r"^[ \t]*\[")


def replace_section(text: str, section: str) -> str:
    """``text`` with its ``[generated]`` table (and the comment line above it) replaced by
    ``section``, placed at the end; what comes before the table is kept byte for byte (a
    table that followed it moves up, before the new one). Idempotent: a rerun with the same
    section gives the same text."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if _HEADER.match(ln.rstrip("\r\n"))), None)
    if start is None:
        body = text
    else:
        end = start + 1
        while end < len(lines) and not _ANY_HEADER.match(lines[end]):
            end += 1
        cut = start
        if cut > 0 and lines[cut - 1].rstrip("\r\n") == COMMENT:
            cut -= 1
        body = "".join(lines[:cut])
        if end < len(lines):  # a table after [generated]: kept, before the new one
            if body and not body.endswith("\n"):
                body += "\n"
            body += "".join(lines[end:])
    if not body or body.endswith(("\n\n", "\r\n\r\n")):
        sep = ""
    elif body.endswith("\n"):
        sep = "\n"
    else:
        sep = "\n\n"
    return body + sep + section


def generate_file(path: Path) -> Generated:
    """Generate and write the ``[generated]`` table of one case file. Raises
    :class:`CorpusError` for a file that cannot be used (or was changed meanwhile) and
    :class:`ReaderError` when the source form does not build."""
    before = path.read_bytes()
    cases = load_file(path)
    gen = generate_case(cases)
    new = replace_section(before.decode("utf-8"), render_section(gen.valid, gen.invalid))
    try:
        doc = tomllib.loads(new)
    except tomllib.TOMLDecodeError as e:  # e.g. a `generated` key written otherwise
        raise CorpusError(f"{path.name}: the rewritten file would not be valid TOML: {e}") from None
    if doc.get("generated") != {"valid": gen.valid, "invalid": gen.invalid}:
        raise CorpusError(f"{path.name}: the rewritten [generated] table does not read back")
    with tempfile.TemporaryDirectory() as tmp:  # load_file on the new text, under its name
        probe = Path(tmp) / path.name
        probe.write_text(new, encoding="utf-8", newline="")
        load_file(probe)
    if path.read_bytes() != before:
        raise CorpusError(f"{path.name}: changed while generating; not written (run again)")
    fd, tmpname = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(new)
        os.replace(tmpname, path)
    except BaseException:
        if os.path.exists(tmpname):
            os.unlink(tmpname)
        raise
    return gen


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    paths = [Path(a) for a in args] or case_files()
    failed = 0
    for path in paths:
        try:
            gen = generate_file(path)
        except CorpusError as e:
            print(e)
            failed += 1
            continue
        except ReaderError as e:
            print(f"{path.name}: source form does not build: {e}")
            failed += 1
            continue
        except Exception as e:  # a generator bug must not stop the other files
            print(f"{path.name}: not generated: {type(e).__name__}: {' '.join(str(e).split())[:200]}")
            failed += 1
            continue
        print(f"{gen.case_id}: {len(gen.valid)} valid, {len(gen.invalid)} invalid "
              f"({gen.seconds:.2f}s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
