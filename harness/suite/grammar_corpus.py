"""The grammar corpus: one TOML file per case under ``suites/grammars/cases/``, read by the
``grammars`` suite and by the suites that take its cases under their own name (``mask-diff``,
``fuzz`` with ``--corpus grammars``; ``serve``'s grammar workloads): :class:`GrammarCorpus`.

A case file (``docs/grammars.md`` is the user's guide to the format)::

    family = "cfg"                     # regex | choice | cfg
    description = "arithmetic with + - * / and parentheses"
    dialect_sensitive = "…"            # optional: a construct whose meaning differs
                                       # between engines' dialects (named in findings)
    dialect_construct = '\\d'           # with it, for a regex case: that construct as one
                                       # regex atom (\\d \\w \\s \\D \\W \\S .), tested alone
                                       # through each engine to tell a dialect difference
                                       # from an ordinary error (harness/measure/dialect.py)

    # the source form, the ground truth (exactly one of):
    regex = '''[a-z]+'''               # family regex: Python's re.fullmatch
    lark = '''start: …'''              # family cfg: a lark Earley parser, rule `start`
    choices = ["yes", "no"]            # family choice: membership
    choices_generated = {count = 10000, seed = 7}   # a deterministic menu of words

    [forms]                            # translations, each checked against the source
    gbnf = '''root ::= …'''            # llama.cpp GBNF; XGrammar's EBNF; the reference engine
    regex = '''…'''                    # a CFG whose language is regular
    lark = '''…'''                     # optional for a regex case (no default: a Lark
                                       # regex terminal takes the first match, not the
                                       # longest, so `start: /a|ab/` is not the regex's language)

    [inject]                           # optional: an alternation injected per case
    placeholder = "COLUMN"             # every form's `@COLUMN@` becomes ("c_0" | "c_1" …)
    prefix = "c_"
    sizes = [10, 100, 1000]            # → cases NAME@10, NAME@100, NAME@1000

    [instances]                        # hand-written; the label is checked by ground truth
    valid = ["…"]
    invalid = ["…"]

    [generated]                        # written by `python -m scripts.grammar_cases.generate`
    valid = ["…"]                      # (derivations of the grammar, mutations of them),
    invalid = ["…"]                    # each list chosen by ground truth

Forms that are mechanical are derived, never written by hand: every form of a choice case
(an alternation of escaped literals). A file that cannot be
used (bad TOML, no source, unknown family, a placeholder without sizes…) gives one
:class:`CorpusError` line naming it, and the suite records it as a ``bad_input`` case.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence, TypedDict

from harness.records import RunMeta

from harness.suite.cases import (PROJECT_ROOT, Case, Instance, SuiteBase, SuiteError,
                                 round_robin)


#: dialect → the grammar in it: a text, or for ``choice`` the menu of strings
Forms = dict[str, "str | list[str]"]


class GrammarPayload(TypedDict):
    """What a grammar case's job carries (``CasePayload["grammar"]``)."""

    family: str          # regex | choice | cfg
    source: str          # the dialect of the ground truth
    forms: Forms
    derived: list[str]   # forms translated by code
    size: int | None     # an injected alternation's size
    dialect_sensitive: str | None
    dialect_construct: str | None  # the construct as one regex atom, tested alone

__all__ = ["CASES_DIR", "FAMILIES", "Forms", "GrammarCase", "GrammarCorpus", "GrammarPayload",
           "CorpusError", "case_files",
           "gbnf_literal", "lark_literal", "load_file", "regex_escape", "to_case"]

#: The cases shipped with the project: data of the ``grammars`` suite's folder (a path, not an
#: import: the framework imports no suite).
CASES_DIR = PROJECT_ROOT / "suites" / "grammars" / "cases"
FAMILIES = ("regex", "choice", "cfg")
#: the source dialect of each family (its reader is the ground truth)
SOURCE_OF = {"regex": "regex", "choice": "choice", "cfg": "lark"}
#: the constructs ``dialect_construct`` may name: single-character regex atoms
DIALECT_ATOMS = ("\\d", "\\w", "\\s", "\\D", "\\W", "\\S", ".")
_KNOWN_KEYS = {"family", "description", "dialect_sensitive", "dialect_construct", "regex", "lark",
               "choices", "choices_generated", "forms", "inject", "instances", "generated"}


class CorpusError(Exception):
    """A case file that cannot be used (message: one line, naming the file)."""


@dataclass(frozen=True)
class GrammarCase:
    """One grammar case: its source form, every translation, and its instances.

    ``forms`` maps a dialect (``regex``, ``lark``, ``gbnf``, ``choice``) to the grammar text
    in it (for ``choice``: the menu, a list); ``forms[source]`` is the ground truth.
    ``instances`` are ``(text, label)`` pairs, hand-written first, then generated.
    """

    case_id: str
    family: str
    source: str
    forms: Forms
    instances: tuple[tuple[str, bool], ...]
    path: Path
    description: str = ""
    dialect_sensitive: str | None = None
    #: the dialect-sensitive construct as one regex atom (``\\d``…), tested alone
    dialect_construct: str | None = None
    #: forms derived by code (not written in the file)
    derived: tuple[str, ...] = ()
    #: size of the injected alternation (``[inject]``), None without one
    size: int | None = None
    hand_written: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    def payload(self) -> GrammarPayload:
        """What a job needs (no file access in the worker)."""
        return {"family": self.family, "source": self.source, "forms": self.forms,
                "derived": list(self.derived), "size": self.size,
                "dialect_sensitive": self.dialect_sensitive,
                "dialect_construct": self.dialect_construct}


# -- escaping for the mechanical translations ------------------------------------------

def _quoted(s: str) -> str:
    out = []
    for ch in s:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def gbnf_literal(s: str) -> str:
    """``s`` as a GBNF string literal (``"…"``; quote, backslash and control characters
    escaped, other characters as themselves, read as UTF-8)."""
    return _quoted(s)


def lark_literal(s: str) -> str:
    """``s`` as a Lark string literal (the same escapes as :func:`gbnf_literal`)."""
    return _quoted(s)


_REGEX_META = set("\\.^$|?*+()[]{}/")


def regex_escape(s: str) -> str:
    """``s`` as a regex matching exactly it, in the syntax every engine's dialect shares:
    metacharacters (and ``/``, Lark's delimiter) behind a backslash, control characters as
    ``\\xHH``, everything else as itself (Python's ``re.escape`` also escapes space, ``#``
    and ``-``, which some dialects refuse outside a class)."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch in _REGEX_META:
            out.append("\\" + ch)
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    return "".join(out)


def _choice_forms(menu: list[str]) -> Forms:
    return {
        "choice": list(menu),
        "gbnf": "root ::= " + " | ".join(gbnf_literal(c) for c in menu) + "\n",
        "lark": "start: " + " | ".join(lark_literal(c) for c in menu) + "\n",
        "regex": "(?:" + "|".join(regex_escape(c) for c in menu) + ")",
    }


_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "shi", "vo", "xe", "zu", "pra", "den",
              "qua", "bel", "tor", "fin", "gal", "hex", "jor", "wyn")


def generated_menu(count: int, seed: int) -> list[str]:
    """``count`` distinct pseudo-words, deterministic for ``seed`` (some are prefixes of
    others: a menu engines must not close early)."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < count:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.1:
            w = w.capitalize() + " " + rng.choice(_SYLLABLES)
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def injected(prefix: str, size: int) -> list[str]:
    """The names an ``[inject]`` alternation of ``size`` holds: ``prefix0`` …"""
    return [f"{prefix}{i}" for i in range(size)]


def _alternation(dialect: str, names: list[str]) -> str:
    if dialect == "regex":
        return "(?:" + "|".join(regex_escape(n) for n in names) + ")"
    lit = gbnf_literal if dialect == "gbnf" else lark_literal
    return "(" + " | ".join(lit(n) for n in names) + ")"


# -- loading ----------------------------------------------------------------------------

def case_files(root: Path | None = None) -> list[Path]:
    """Every case file under ``root`` (default: the project's corpus), sorted."""
    return sorted((root or CASES_DIR).glob("*.toml"))


def _strings(value: Any, where: str, path: Path) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CorpusError(f"{path.name}: {where} must be a list of strings")
    return value


def load_file(path: Path) -> list[GrammarCase]:
    """The case(s) of one file: one, or one per ``[inject]`` size.

    Raises :class:`CorpusError` (one line, naming the file) for anything unusable."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise CorpusError(f"{path.name}: cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise CorpusError(f"{path.name}: not valid TOML: {e}") from None
    unknown = set(doc) - _KNOWN_KEYS
    if unknown:
        raise CorpusError(f"{path.name}: unknown key(s) {', '.join(sorted(unknown))}")
    family = doc.get("family")
    if family not in FAMILIES:
        raise CorpusError(f"{path.name}: family must be one of {', '.join(FAMILIES)}, got {family!r}")
    source = SOURCE_OF[family]
    forms: Forms = {}
    written = doc.get("forms") or {}
    if not isinstance(written, dict) or not all(isinstance(v, str) for v in written.values()):
        raise CorpusError(f"{path.name}: [forms] must map dialects to grammar texts")
    bad = set(written) - {"regex", "lark", "gbnf"}
    if bad:
        raise CorpusError(f"{path.name}: [forms] has unknown dialect(s) {', '.join(sorted(bad))}")
    derived: list[str] = []
    if family == "choice":
        if "choices" in doc:
            menu = _strings(doc["choices"], "choices", path)
        elif isinstance(doc.get("choices_generated"), dict):
            g = doc["choices_generated"]
            try:
                menu = generated_menu(int(g["count"]), int(g.get("seed", 0)))
            except (KeyError, TypeError, ValueError):
                raise CorpusError(f"{path.name}: choices_generated needs an integer count") from None
        else:
            raise CorpusError(f"{path.name}: a choice case needs choices or choices_generated")
        if not menu or len(set(menu)) != len(menu):
            raise CorpusError(f"{path.name}: the menu must be non-empty without repeats")
        forms = _choice_forms(menu)
        derived = ["gbnf", "lark", "regex"]
    else:
        text = doc.get(source)
        if not isinstance(text, str) or not text.strip():
            raise CorpusError(f"{path.name}: a {family} case needs its source form `{source} = '''…'''`")
        forms = {**written, source: text if family == "cfg" else text.strip("\n")}
    construct = doc.get("dialect_construct")
    if construct is not None:
        if construct not in DIALECT_ATOMS:
            raise CorpusError(f"{path.name}: dialect_construct must be one regex atom of "
                              f"{' '.join(DIALECT_ATOMS)}, got {construct!r}")
        if family != "regex" or not doc.get("dialect_sensitive"):
            raise CorpusError(f"{path.name}: dialect_construct belongs to a regex case "
                              "marked dialect_sensitive")
        if construct not in forms["regex"]:
            raise CorpusError(f"{path.name}: dialect_construct {construct} does not occur "
                              "in the regex")
    insts: list[tuple[str, bool]] = []
    for table in ("instances", "generated"):
        block = doc.get(table) or {}
        if not isinstance(block, dict) or set(block) - {"valid", "invalid"}:
            raise CorpusError(f"{path.name}: [{table}] holds only `valid` and `invalid` lists")
        insts += [(t, True) for t in _strings(block.get("valid"), f"{table}.valid", path)]
        insts += [(t, False) for t in _strings(block.get("invalid"), f"{table}.invalid", path)]
        if table == "instances":
            hand = len(insts)
    base = dict(case_id=path.stem, family=family, source=source, path=path,
                description=str(doc.get("description", "")),
                dialect_sensitive=doc.get("dialect_sensitive"), dialect_construct=construct,
                hand_written=hand)
    inject = doc.get("inject")
    if inject is None:
        return [GrammarCase(forms=forms, instances=tuple(insts), derived=tuple(derived), **base)]
    try:
        ph, prefix = str(inject["placeholder"]), str(inject["prefix"])
        sizes = [int(s) for s in inject["sizes"]]
    except (KeyError, TypeError, ValueError):
        raise CorpusError(f"{path.name}: [inject] needs placeholder, prefix and integer sizes") from None
    token = f"@{ph}@"
    if not any(token in t for t in forms.values() if isinstance(t, str)):
        raise CorpusError(f"{path.name}: [inject] placeholder {token} appears in no form")
    out = []
    for size in sizes:
        names = injected(prefix, size)
        # a choice menu (a list) has no placeholder: only text forms are injected
        f = {d: t.replace(token, _alternation(d, names)) if isinstance(t, str) else t
             for d, t in forms.items()}
        out.append(GrammarCase(forms=f, instances=tuple(insts), derived=tuple(derived),
                               size=size, **{**base, "case_id": f"{path.stem}@{size}"}))
    return out


def load_corpus(root: Path | None = None) -> Iterator[GrammarCase | CorpusError]:
    """Every case of the corpus in file order; an unusable file yields its
    :class:`CorpusError` in its place (the run goes on)."""
    for path in case_files(root):
        try:
            yield from load_file(path)
        except CorpusError as e:
            yield e
        except Exception as e:  # a loader bug must not hide the other files
            yield CorpusError(f"{path.name}: {type(e).__name__}: {' '.join(str(e).split())[:200]}")


def to_case(gc: GrammarCase, suite: str = "grammars", keep_instances: bool = True) -> Case:
    """A corpus case as the harness's :class:`~harness.suite.Case` (instances as exact texts)."""
    src = gc.forms[gc.source]
    insts = tuple(Instance(i, text, label, f"{gc.case_id}/{i}", text=text)
                  for i, (text, label) in enumerate(gc.instances)) if keep_instances else ()
    return Case(suite=suite, case_id=gc.case_id, subset=gc.family,
                source=str(gc.path.name),
                schema_text=src if isinstance(src, str) else json.dumps(src, ensure_ascii=False),
                instances=insts, grammar=gc.payload(),
                meta={"family": gc.family, "description": gc.description, "size": gc.size,
                      "forms": sorted(gc.forms), "derived": list(gc.derived),
                      "hand_written": gc.hand_written})


def _bad_case(err: CorpusError, suite: str) -> Case:
    name = str(err).split(":", 1)[0]
    return Case(suite=suite, case_id=Path(name).stem, subset="unreadable", source=name,
                load_error=str(err))


class GrammarCorpus(SuiteBase):
    """The grammar corpus, filtered by family (``--subset``), glob and stratified sample;
    its cases carry ``suite_name`` (another suite's name when that suite reads the corpus)."""

    name = "grammars"
    keep_instances = True

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None,
                 suite_name: str | None = None) -> None:
        self.root = Path(data) if data else CASES_DIR
        if not self.root.is_dir() or not case_files(self.root):
            raise SuiteError(f"no grammar case files (*.toml) in {self.root}")
        wanted = list(subsets or [])
        unknown = [s for s in wanted if s not in FAMILIES]
        if unknown:
            raise SuiteError(f"unknown grammar family/families {', '.join(unknown)}; "
                             f"available: {', '.join(FAMILIES)}")
        self.suite_name = suite_name or self.name
        items: list[GrammarCase | CorpusError] = list(load_corpus(self.root))
        keep: list[GrammarCase | CorpusError] = []
        for it in items:
            cid = it.case_id if isinstance(it, GrammarCase) else str(it).split(":", 1)[0].rsplit(".", 1)[0]
            if isinstance(it, GrammarCase) and wanted and it.family not in wanted:
                continue
            if schemas and not fnmatch.fnmatch(cid, schemas):
                continue
            keep.append(it)
        if sample is not None:
            by_family: dict[str, list] = {}
            for it in keep:
                fam = it.family if isinstance(it, GrammarCase) else "unreadable"
                by_family.setdefault(fam, []).append(it)
            key = lambda it: hashlib.sha256(  # noqa: E731
                (it.case_id if isinstance(it, GrammarCase) else str(it)).encode()).hexdigest()
            keep = round_robin([sorted(v, key=key) for _, v in sorted(by_family.items())], sample)
        if not keep:
            raise SuiteError(f"no grammar cases in {self.root} match the selection")
        self.items = keep
        self.options = {"subsets": wanted or None, "sample": sample, "schemas": schemas}

    def __len__(self) -> int:
        return len(self.items)

    def case_ids(self) -> list[str]:
        return [c.case_id for c in self.cases()]

    def cases(self) -> Iterator[Case]:
        for it in self.items:
            if isinstance(it, CorpusError):
                yield _bad_case(it, self.suite_name)
            else:
                yield to_case(it, self.suite_name, self.keep_instances)

    def describe(self) -> dict[str, Any]:
        return {"suite": self.suite_name, "data": str(self.root),
                "files_on_disk": len(case_files(self.root)), "selected": len(self.items),
                **self.options}
