"""The MaskBench form of JSONSchemaBench, read in place: the corpus reader several suites
share (``jsonschemabench`` itself, and the suites that take its cases under their own name:
``e2e``, ``mask-diff``, ``fuzz``, ``serve``, ``batch``, ``churn``, ``drafts``,
``jump-forward``, ``hazards``, ``tools``).

One file per schema, ``<Subset>---<name>.json`` (or ``BFCL_<cat>_<n>.json``,
``JME_<n>.json``) holding ``{"description", "meta", "schema", "tests": [{"valid",
"data", ...}]}``. The corpus location is ``--data DIR``, else ``$HARNESS_DATA`` (the
folder itself or a folder holding ``jsonschemabench/``), else
``../shared/corpora/jsonschemabench`` beside the project.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import json
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping, Sequence

from harness.suite.cases import (Case, Instance, SuiteBase, SuiteError, find_corpus,
                                 round_robin)

#: The corpus's name: its folder under the data root, and the ``suite`` of its cases.
NAME = "jsonschemabench"

#: The 12 groups of the independent peer table (``docs/suites.md``); ``--subset core12``.
CORE12 = (
    "Github_trivial", "Github_easy", "Github_medium", "Github_hard", "Github_ultra",
    "Glaiveai2K", "Kubernetes", "Snowplow", "WashingtonPost", "JsonSchemaStore",
    "BFCL", "Synthesized",
)
SUBSET_GROUPS = {"core12": CORE12}

#: ``--sample all``: every selected file (a suite with a default sample takes them all).
ALL: Literal["all"] = "all"

HOW_TO_GET = (
    "get the public MaskBench data: `git clone https://github.com/guidance-ai/jsonschemabench` "
    "and pass `--data jsonschemabench/maskbench/data` (or set HARNESS_DATA to that folder)"
)

def subset_of(file_name: str) -> str:
    """Subset of a corpus file: the part before ``---``; ``BFCL_*`` → BFCL, ``JME_*`` → JME."""
    if "---" in file_name:
        return file_name.split("---", 1)[0]
    for prefix in ("BFCL", "JME"):
        if file_name.startswith(prefix + "_"):
            return prefix
    return file_name.rsplit(".", 1)[0]


def sample_key(file_name: str) -> str:
    """Deterministic sampling order: sha256 of the file name (with ``.json``)."""
    return hashlib.sha256(file_name.encode()).hexdigest()


def resolve_data_dir(data: str | None = None) -> Path:
    """Where the corpus is; raises :class:`SuiteError` saying how to get it."""
    return find_corpus(NAME, data, lambda c: any(c.glob("*.json")),
                       "no jsonschemabench corpus at {path} (no *.json files there); " + HOW_TO_GET)


def stratified_sample(names: Sequence[str], n: int) -> list[str]:
    """``n`` names spread evenly over subsets (round robin over subsets in name order),
    each subset taken in sha256-of-file-name order. Deterministic; a subset that runs
    out leaves its share to the others."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(subset_of(name), []).append(name)
    return round_robin([sorted(v, key=sample_key) for _, v in sorted(groups.items())], n)


def parse_case(path: Path) -> Case:
    """One corpus file → a :class:`Case`; a bad file gives a case with ``load_error``."""
    name = path.name
    base: dict[str, Any] = dict(suite=NAME, case_id=name, subset=subset_of(name),
                                source=str(path))
    try:
        doc = json.loads(path.read_bytes())
    except json.JSONDecodeError as e:
        return Case(**base, load_error=f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}")
    except (OSError, UnicodeDecodeError) as e:
        return Case(**base, load_error=f"{path}: cannot read: {e}")
    if not isinstance(doc, dict) or "schema" not in doc:
        return Case(**base, load_error=f"{path}: not a MaskBench case (expected an object with a 'schema' key)")
    schema = doc["schema"]
    if not isinstance(schema, (dict, bool)):
        return Case(**base, load_error=f"{path}: 'schema' is a {type(schema).__name__}, not a JSON Schema (object or boolean)")
    tests = doc.get("tests", [])
    if not isinstance(tests, list):
        return Case(**base, load_error=f"{path}: 'tests' is not a list")
    instances = []
    for i, t in enumerate(tests):
        if not isinstance(t, dict) or "data" not in t or not isinstance(t.get("valid"), bool):
            return Case(**base, load_error=f"{path}: test #{i} lacks 'data' or a boolean 'valid'")
        instances.append(Instance(i, t["data"], t["valid"], str(t.get("description", ""))))
    return Case(
        **base,
        schema=schema,
        schema_text=json.dumps(schema),
        instances=tuple(instances),
        meta={"features": (doc.get("meta") or {}).get("features", [])},
    )


class MaskBenchCorpus(SuiteBase):
    """The corpus as cases, filtered by subset, glob and deterministic sample (the
    ``jsonschemabench`` suite is this class with its verdict; other suites read the corpus
    through it or through :class:`JsonSchemaBenchView`)."""

    name = NAME

    def __init__(
        self,
        data: str | None = None,
        subsets: Sequence[str] | None = None,
        sample: int | Literal["all"] | None = None,
        schemas: str | None = None,
    ) -> None:
        self.data_dir = resolve_data_dir(data)
        all_names = sorted(p.name for p in self.data_dir.glob("*.json"))
        self.available_subsets = sorted({subset_of(n) for n in all_names})
        wanted: list[str] = []
        for s in subsets or []:
            wanted.extend(SUBSET_GROUPS.get(s, (s,)))
        unknown = [s for s in wanted if s not in self.available_subsets]
        if unknown:
            raise SuiteError(
                f"unknown subset(s) {', '.join(unknown)} in {self.data_dir}; "
                f"available: {', '.join(self.available_subsets)} (and group: core12)"
            )
        names = [n for n in all_names if not wanted or subset_of(n) in wanted]
        if schemas:
            names = [n for n in names if fnmatch.fnmatch(n, schemas)]
        if sample is not None and sample != ALL:
            names = stratified_sample(names, sample)
        if not names:
            raise SuiteError(f"no corpus files in {self.data_dir} match the selection")
        self.names = names
        self.options = {"subsets": wanted or None, "sample": sample, "schemas": schemas}

    def __len__(self) -> int:
        return len(self.names)

    def case_ids(self) -> list[str]:
        return list(self.names)

    def cases(self) -> Iterator[Case]:
        for n in self.names:
            yield parse_case(self.data_dir / n)

    def describe(self) -> dict[str, Any]:
        return {
            "suite": NAME,
            "data": str(self.data_dir),
            "files_on_disk": sum(1 for _ in self.data_dir.glob("*.json")),
            "selected": len(self.names),
            **self.options,
        }


class JsonSchemaBenchView(SuiteBase):
    """The ``jsonschemabench`` corpus's cases under another suite's name and worker job
    kind: suites that generate or check at the token level (``e2e``, ``mask-diff``,
    ``fuzz``) take the same ``--data``, ``--subset``, ``--sample`` and ``--schemas``
    selection, with a smaller default sample (``default_sample`` when neither ``--sample``
    nor ``--schemas`` is given), and keep or drop each case's instances."""

    name = ""
    keep_instances = True
    default_sample = 40

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None) -> None:
        if sample is None and schemas is None:
            sample = self.default_sample
        self.inner = MaskBenchCorpus(data=data, subsets=subsets, sample=sample, schemas=schemas)

    def __len__(self) -> int:
        return len(self.inner)

    def case_ids(self) -> list[str]:
        return self.inner.case_ids()

    def cases(self) -> Iterator[Case]:
        for c in self.inner.cases():
            yield dataclasses.replace(c, suite=self.name,
                                      instances=c.instances if self.keep_instances else ())

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "suite": self.name, "source_suite": self.inner.name}


#: ``--corpus`` values of a :class:`TokenSuite`
CORPORA = (NAME, "grammars")


class TokenSuite(JsonSchemaBenchView):
    """The base of the suites that check at the token level (``mask-diff``, ``fuzz``): the
    ``jsonschemabench`` corpus's cases, or with ``--corpus grammars`` the grammar corpus's
    (:class:`harness.suite.grammar_corpus.GrammarCorpus`), under the same ``--data``,
    ``--subset``, ``--sample``, ``--schemas`` selection; ``default_sample`` (12) cases when
    neither ``--sample`` nor ``--schemas`` is given, since their jobs run the pure-Python
    reference engine or hundreds of masked walks per case."""

    default_sample = 12
    uses_options = True

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        corpus = (options or {}).get("corpus") or NAME
        if corpus not in CORPORA:
            raise SuiteError(f"unknown --corpus {corpus!r}; known: {', '.join(CORPORA)}")
        self.corpus = corpus
        if corpus == NAME:
            super().__init__(data=data, subsets=subsets, sample=sample, schemas=schemas)
            return
        from harness.suite.grammar_corpus import GrammarCorpus

        if sample is None and schemas is None:
            sample = self.default_sample
        g = GrammarCorpus(data=data, subsets=subsets, sample=sample, schemas=schemas,
                          suite_name=self.name)
        g.keep_instances = self.keep_instances
        self.inner = g  # type: ignore[assignment]

    def cases(self) -> Iterator[Case]:
        if self.corpus == NAME:
            yield from super().cases()
        else:
            yield from self.inner.cases()
