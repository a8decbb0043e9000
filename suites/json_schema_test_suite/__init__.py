"""Suite ``json-schema-test-suite``: the official JSON Schema Test Suite, read in place.

Layout (as the suite's repository has it): ``tests/<draft>/*.json``, ``tests/<draft>/optional/``,
``tests/<draft>/optional/format/`` and ``remotes/``. Each file is an array of groups
``{"description", "schema", "tests": [{"description", "data", "valid"}]}``; **one case per
group**, ``case_id`` = ``<draft>/<path in the draft>#<group index>``, e.g.
``draft2020-12/optional/format/date.json#3``. The keyword file is kept in ``Case.meta``
(``keyword``: ``type``, ``optional/bignum``, ``optional/format/date``), and recoverable from
the case id alone (:func:`split_case_id`), so reports group by keyword from records.

Corpus location: ``--data DIR`` (the suite's folder itself, holding ``tests/``), else
``$HARNESS_DATA`` (the folder itself or a folder holding ``json-schema-test-suite/``), else
``../shared/corpora/json-schema-test-suite`` beside the project.

Selection (``--subset``, comma-separated or repeated): path prefixes inside ``tests/``:

- ``draft2020-12``, ``draft7``: a whole draft (with ``optional/`` and ``optional/format/``);
- ``draft7/required``: the draft's own keyword files only (no ``optional/``);
- ``draft7/optional``: ``optional/`` with ``optional/format/``; ``draft7/optional/format``;
- ``draft7/type`` or ``draft7/type.json``: one keyword file.

Without ``--subset``: both drafts (:data:`DRAFTS`). ``--schemas`` globs case ids
(``'draft7/ref*'``); ``--sample N`` takes N groups round robin over keyword files.

Ground truth and verdicts:

- The expected verdict is the suite's own ``valid`` (``expected_from="label"``: the suite *is*
  the specification). jsonschema's verdict is still computed and stored (``truth``), with
  ``label_disagrees`` where it differs (ECMA-262 regex features Python lacks, some formats,
  ``dependencies`` in 2020-12's optional compatibility file).
- Draft: each case is **self-describing**. A root schema object without ``$schema`` gets the
  folder's metaschema URI (:data:`DRAFT_URIS`; draft7 files mostly have none), so engines and
  ground truth read the same draft from the schema itself, as the suite's README asks of
  implementations that support several drafts. This keeps the adapter protocol as it is
  (``compile(schema_text)``, no side channel) and treats every engine alike: each sees the
  same bytes. ``default_draft`` is still set, for remotes without ``$schema``. Boolean root
  schemas mean the same in both drafts and are left as they are.
- ``format`` is asserted only under ``optional/format/`` (elsewhere it is an annotation, as
  the suite expects).
- Remote references (``http://localhost:1234/<path>``) resolve, for ground truth only, from
  every file under ``remotes/`` (``Case.resources``); engines never fetch anything.
- Boolean schemas (``true`` / ``false``) are cases like any other.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

from harness.suite import (Case, Instance, SuiteBase, SuiteError, VerdictModel, find_corpus,
                         round_robin)

NAME = "json-schema-test-suite"
DRAFTS = ("draft2020-12", "draft7")
#: The metaschema URI written into a root schema that has no ``$schema`` (see the docstring).
DRAFT_URIS = {"draft2020-12": "https://json-schema.org/draft/2020-12/schema",
              "draft7": "http://json-schema.org/draft-07/schema#"}
REMOTE_BASE = "http://localhost:1234/"

HOW_TO_GET = (
    "get it with `git clone https://github.com/json-schema-org/JSON-Schema-Test-Suite` and pass "
    "`--data JSON-Schema-Test-Suite` (or set HARNESS_DATA to that folder)"
)

def resolve_data_dir(data: str | None = None) -> Path:
    """Where the suite is (a folder holding ``tests/``); raises :class:`SuiteError`."""
    return find_corpus(NAME, data, lambda c: (c / "tests").is_dir(),
                       "no JSON Schema Test Suite at {path} (no tests/ folder there); " + HOW_TO_GET)


def split_case_id(cid: str) -> tuple[str, str, int]:
    """``draft7/optional/format/date.json#3`` → ``("draft7", "optional/format/date", 3)``."""
    path, _, group = cid.rpartition("#")
    draft, _, rest = path.partition("/")
    return draft, rest[:-5] if rest.endswith(".json") else rest, int(group or 0)


def load_remotes(root: Path) -> tuple[tuple[str, Any], ...]:
    """Every JSON file under ``remotes/`` as ``(http://localhost:1234/<path>, document)``."""
    out = []
    base = root / "remotes"
    if base.is_dir():
        for p in sorted(base.rglob("*.json")):
            try:
                out.append((REMOTE_BASE + p.relative_to(base).as_posix(), json.loads(p.read_bytes())))
            except (OSError, ValueError):
                continue  # an unreadable remote only makes the refs to it unresolvable
    return tuple(out)


def _count_groups(root: Path) -> int:
    n = 0
    for d in DRAFTS:
        for p in (root / "tests" / d).rglob("*.json"):
            try:
                doc = json.loads(p.read_bytes())
                n += len(doc) if isinstance(doc, list) else 0
            except (OSError, ValueError):
                continue
    return n


def _matches(rel: str, token: str) -> bool:
    """Does file ``rel`` (``draft7/optional/format/date.json``) fall under selector ``token``?"""
    token = token.strip("/")
    draft, _, inner = rel.partition("/")
    if token == f"{draft}/required":
        return "/" not in inner
    return rel == token or rel == token + ".json" or rel.startswith(token + "/")


class JsonSchemaTestSuite(SuiteBase):
    """The suite's groups as cases, filtered by draft/folder/keyword, glob and sample."""

    name = NAME
    summary_blocks = ("suites.json_schema_test_suite.summary:keywords_block",)
    report_sections = ("suites.json_schema_test_suite.report:sec_keywords",)
    verdict = VerdictModel(unit="test group", units="test groups",
                           truth="the JSON Schema Test Suite's own verdicts (the specification)")
    smoke = {"subsets": ["draft2020-12/required"]}

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None) -> None:
        self.data_dir = resolve_data_dir(data)
        tests = self.data_dir / "tests"
        files = [p.relative_to(tests).as_posix()
                 for d in DRAFTS if (tests / d).is_dir() for p in sorted((tests / d).rglob("*.json"))]
        wanted = list(subsets or [])
        unknown = [t for t in wanted if not any(_matches(f, t) for f in files)]
        if unknown:
            raise SuiteError(
                f"unknown subset(s) {', '.join(unknown)} in {tests}; use a draft "
                f"({', '.join(DRAFTS)}), <draft>/required, <draft>/optional, "
                "<draft>/optional/format or <draft>/<keyword file>")
        if wanted:
            files = [f for f in files if any(_matches(f, t) for t in wanted)]
        # (case id, file, group index or None for an unreadable file)
        self._docs: dict[str, Any] = {}
        self._errors: dict[str, str] = {}
        entries: list[tuple[str, str, int | None]] = []
        for rel in files:
            path = tests / rel
            try:
                doc = json.loads(path.read_bytes())
                if not isinstance(doc, list):
                    raise ValueError("not an array of test groups")
            except (OSError, ValueError) as e:
                self._errors[rel] = f"{path}: cannot use: {' '.join(str(e).split())[:200]}"
                entries.append((rel, rel, None))
                continue
            self._docs[rel] = doc
            entries += [(f"{rel}#{i}", rel, i) for i in range(len(doc))]
        if schemas:
            entries = [e for e in entries if fnmatch.fnmatch(e[0], schemas)]
        if sample is not None:
            by_file: dict[str, list] = {}
            for e in entries:
                by_file.setdefault(e[1], []).append(e)
            queues = [sorted(v, key=lambda e: hashlib.sha256(e[0].encode()).hexdigest())
                      for _, v in sorted(by_file.items())]
            keep = set(round_robin(queues, sample))
            entries = [e for e in entries if e in keep]
        if not entries:
            raise SuiteError(f"no test groups in {tests} match the selection")
        self.entries = entries
        self.groups_on_disk = sum(len(d) for d in self._docs.values()) if not wanted else None
        self.remotes = load_remotes(self.data_dir)
        self.options = {"subsets": wanted or None, "sample": sample, "schemas": schemas}

    def __len__(self) -> int:
        return len(self.entries)

    def case_ids(self) -> list[str]:
        return [e[0] for e in self.entries]

    def _case(self, cid: str, rel: str, index: int | None) -> Case:
        draft, _, inner = rel.partition("/")
        folder = rel.rsplit("/", 1)[0]
        base = dict(suite=NAME, case_id=cid, subset=folder,
                    source=str(self.data_dir / "tests" / rel))
        if index is None:
            return Case(**base, load_error=self._errors[rel])
        group = self._docs[rel][index]
        meta = {"draft": draft, "file": rel, "keyword": inner[:-5], "group": index}
        if not isinstance(group, dict) or "schema" not in group:
            return Case(**base, meta=meta, load_error=f"{base['source']}: group #{index} has no schema")
        meta["description"] = str(group.get("description", ""))
        instances = []
        for i, t in enumerate(group.get("tests", [])):
            if not isinstance(t, dict) or "data" not in t or not isinstance(t.get("valid"), bool):
                return Case(**base, meta=meta,
                            load_error=f"{base['source']}: group #{index} test #{i} lacks 'data' or a boolean 'valid'")
            instances.append(Instance(i, t["data"], t["valid"], str(t.get("description", ""))))
        schema = group["schema"]
        if isinstance(schema, dict) and "$schema" not in schema and draft in DRAFT_URIS:
            schema = {"$schema": DRAFT_URIS[draft], **schema}
        return Case(
            **base,
            schema=schema,
            schema_text=json.dumps(schema),
            instances=tuple(instances),
            meta=meta,
            resources=self.remotes,
            default_draft=draft,
            format_assertion=inner.startswith("optional/format/"),
            expected_from="label",
        )

    def cases(self) -> Iterator[Case]:
        for cid, rel, index in self.entries:
            yield self._case(cid, rel, index)

    def describe(self) -> dict[str, Any]:
        files = sorted({e[1] for e in self.entries})
        return {
            "suite": NAME,
            "data": str(self.data_dir),
            "drafts": sorted({f.split("/", 1)[0] for f in files}),
            "files": len(files),
            # groups (schemas) on disk in the drafts read: the denominator of "selected"
            "files_on_disk": self.groups_on_disk if self.groups_on_disk is not None
            else _count_groups(self.data_dir),
            "selected": len(self.entries),
            "instances": sum(len(self._docs[rel][i].get("tests", []))
                             for _, rel, i in self.entries
                             if i is not None and isinstance(self._docs[rel][i], dict)),
            "remotes": len(self.remotes),
            **self.options,
        }


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = JsonSchemaTestSuite
