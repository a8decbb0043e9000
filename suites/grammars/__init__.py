"""Suite ``grammars``: regular expressions, choices and context-free grammars, each case
one file of :mod:`suites.grammars.corpus` (``suites/grammars/cases/*.toml``).

Every (case, engine) job replays the case's instances token by token
(:mod:`suites.grammars.job`): the engine is given the first form, in the order
of its ``grammar_dialects``, that the case has; the expected verdict is the source form's
ground-truth parser's. The subsets are the families (``--subset regex,cfg``); ``--schemas``
globs case ids (``'cfg-sql*'``); ``--sample N`` is stratified over families; ``--data DIR``
reads case files from another folder. A file that cannot be used is one ``bad_input``
record naming it; the run goes on.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

from harness.suite import Case, Instance, SuiteBase, SuiteError, VerdictModel, round_robin
from suites.grammars.corpus import (CASES_DIR, FAMILIES, CorpusError, GrammarCase, case_files,
                                    load_corpus)

__all__ = ["Grammars", "NAME", "to_case"]

NAME = "grammars"


def to_case(gc: GrammarCase, suite: str = NAME, keep_instances: bool = True) -> Case:
    """A corpus case as the harness's :class:`~harness.suite.Case` (instances as exact texts)."""
    src = gc.forms[gc.source]
    insts = tuple(Instance(i, text, label, f"{gc.case_id}/{i}", text=text)
                  for i, (text, label) in enumerate(gc.instances)) if keep_instances else ()
    return Case(suite=suite, case_id=gc.case_id, subset=gc.family,
                source=str(gc.path.name),
                schema_text=json.dumps(src, ensure_ascii=False) if gc.source == "choice" else src,
                instances=insts, grammar=gc.payload(),
                meta={"family": gc.family, "description": gc.description, "size": gc.size,
                      "forms": sorted(gc.forms), "derived": list(gc.derived),
                      "hand_written": gc.hand_written})


def _bad_case(err: CorpusError, suite: str) -> Case:
    name = str(err).split(":", 1)[0]
    return Case(suite=suite, case_id=Path(name).stem, subset="unreadable", source=name,
                load_error=str(err))


class Grammars(SuiteBase):
    """The grammar corpus, filtered by family (``--subset``), glob and stratified sample."""

    name = NAME
    job = "suites.grammars.job:run_grammar_job"
    summary_blocks = ("suites.grammars.summary:summary_block",)
    report_sections = ("suites.grammars.report:sec_grammars",)
    verdict = VerdictModel(unit="grammar case", units="grammar cases",
                           truth="the case's own parser (Python's re, lark)")
    smoke = {"sample": 2}
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


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = Grammars
