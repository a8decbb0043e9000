"""Check grammar case files against their ground truth: ``python -m scripts.grammar_cases.check [FILE…]``.

For every case: the source form's reader (:mod:`harness.measure.languages`) decides each
instance; a label that disagrees is a *mislabelled instance*; every translation's reader
must agree with the source on every instance, else it is a *translation defect* (ours, to
fix). Prints one line per problem and exits 1 when there is any (no file: the whole corpus).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from harness.measure.languages import ReaderError, reader
from harness.suite.grammar_corpus import CorpusError, GrammarCase, case_files, load_file

__all__ = ["CaseCheck", "check_case", "main"]


@dataclass
class CaseCheck:
    """What :func:`check_case` found in one case."""

    case_id: str
    instances: int = 0
    #: (text, label, ground truth) where they differ
    mislabelled: list[tuple[str, bool, bool | None]] = field(default_factory=list)
    #: (dialect, text, translation's verdict, ground truth)
    translation: list[tuple[str, str, bool | None, bool | None]] = field(default_factory=list)
    #: dialect → the reader's one-line error
    unreadable: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.mislabelled or self.translation or self.unreadable)

    def lines(self) -> list[str]:
        out = [f"{self.case_id}: {d} form does not build: {e}" for d, e in self.unreadable.items()]
        out += [f"{self.case_id}: mislabelled instance {t!r}: label {'valid' if lab else 'invalid'}, "
                f"ground truth {truth}" for t, lab, truth in self.mislabelled]
        out += [f"{self.case_id}: {d} translation says {v} on {t!r}, ground truth {truth}"
                for d, t, v, truth in self.translation]
        return out


def check_case(case: GrammarCase, extra_texts: Iterable[str] = ()) -> CaseCheck:
    """Labels and translations of ``case`` on its instances (and ``extra_texts``, which
    carry no label: only the translations are checked on them)."""
    res = CaseCheck(case.case_id)
    try:
        truth = reader(case.source, case.forms[case.source])
    except ReaderError as e:
        res.unreadable[case.source] = str(e)
        return res
    readers = {}
    for d, text in case.forms.items():
        if d == case.source:
            continue
        try:
            readers[d] = reader(d, text)
        except ReaderError as e:
            res.unreadable[d] = str(e)
    texts = [(t, lab) for t, lab in case.instances] + [(t, None) for t in extra_texts]
    for text, label in texts:
        verdict = truth(text)
        if label is not None:
            res.instances += 1
            if verdict is not label:
                res.mislabelled.append((text, label, verdict))
        if verdict is None:
            continue
        for d, r in readers.items():
            v = r(text)
            if v is not None and v is not verdict:
                res.translation.append((d, text, v, verdict))
    return res


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    paths = [Path(a) for a in args] or case_files()
    problems = n_cases = n_inst = 0
    for path in paths:
        try:
            cases = load_file(path)
        except CorpusError as e:
            print(e)
            problems += 1
            continue
        for case in cases:
            r = check_case(case)
            n_cases += 1
            n_inst += r.instances
            for line in r.lines():
                print(line)
                problems += 1
    print(f"{n_cases} cases, {n_inst} instances, {problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
