"""What a report is made of: blocks (:class:`Para`, :class:`Bullets`, :class:`Fields`,
:class:`Table`, :class:`Figure`), :class:`Section`, and the runs it reads (:class:`RunData`,
:class:`ReportContext`).

Builders put raw, unescaped text in blocks; only the renderers escape (Markdown:
:func:`harness.report.text.md_text`; HTML: :func:`html.escape`), so text from the corpus or
an engine (schema names, subsets, error messages) cannot reach a report unescaped.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, cast

from harness.analysis.finalize import summarize_run
from harness.analysis.verdict import suite_of
from harness.store.run_store import RunStore
from harness.records import EngineHeadline, Record, RunMeta, Summary

# --------------------------------------------------------------------------------------
# Blocks


@dataclass
class Para:
    text: str


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Fields:
    """``key: value`` lines."""

    items: list[tuple[str, str]]


@dataclass
class Table:
    """The one table model: a header, rows of text cells, how each column aligns and a note
    under it. Rendered to the console by :func:`harness.report.text.text_table`, to
    Markdown and HTML by ``harness report``; cells are raw text, already formatted (numbers
    by :mod:`harness.measure.figures`)."""

    header: list[str]
    rows: list[list[str]]
    #: per column "l" or "r", or one letter for every column; default: first column left,
    #: the others right
    align: list[str] | str | None = None
    note: str | None = None

    def aligns(self) -> list[str]:
        if isinstance(self.align, str):
            return [self.align] * len(self.header)
        return self.align or ["l"] + ["r"] * (len(self.header) - 1)


@dataclass
class Figure:
    name: str  # file name for the Markdown twin, e.g. "tbm.png" (ASCII, no slash)
    png: bytes
    caption: str = ""


Block = Para | Bullets | Fields | Table | Figure


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)
    level: int = 2

    @property
    def anchor(self) -> str:
        keep = string.ascii_lowercase + string.digits
        slug = "".join(c if c in keep else "-" for c in self.title.lower())
        return "-".join(p for p in slug.split("-") if p) or "section"


# --------------------------------------------------------------------------------------
# Runs


@dataclass
class RunData:
    """One run folder, read-only."""

    key: str  # "A", "B", ... (column tag when several runs are shown)
    path: Path
    meta: RunMeta
    records: list[Record]
    summary: Summary
    #: The run's suite class, looked up once by the name in ``run.json`` when the folder is
    #: read (None: a suite this installation lacks; the report then shows no section of it)
    suite: type | None = None

    @property
    def run_id(self) -> str:
        return str(self.meta.get("run_id") or self.path.name)

    @property
    def timeout_s(self) -> float | None:
        return (self.meta.get("config") or {}).get("timeout_s")


@dataclass
class ReportContext:
    runs: list[RunData]

    @property
    def multi(self) -> bool:
        return len(self.runs) > 1

    def col(self, run: RunData, engine: str) -> str:
        """Column / legend label of an engine in a run."""
        return f"{engine} ({run.key})" if self.multi else engine

    def blocks(self, key: str) -> list[tuple[RunData, dict[str, Any]]]:
        """(run, its summary's ``key`` block) for every run whose summary holds that block
        (a suite's, e.g. ``"serve"``), in the runs' order."""
        out = []
        for run in self.runs:
            block = cast(dict[str, Any], run.summary).get(key)
            if block:
                out.append((run, block))
        return out

    def prefix(self, run: RunData) -> str:
        """``"A: "`` before a run's text when several runs are shown, else nothing."""
        return f"{run.key}: " if self.multi else ""

    def tag(self, run: RunData) -> str:
        """``" (A)"`` after a run's section title when several runs are shown, else nothing."""
        return f" ({run.key})" if self.multi else ""

    def engines(self) -> list[str]:
        """Engine labels in first-seen order over the runs."""
        seen: dict[str, None] = {}
        for r in self.runs:
            for e in r.summary["engines"]:
                seen.setdefault(e, None)
        return list(seen)


def load_run(path: Path, key: str = "A", summary: Summary | None = None) -> RunData:
    store = RunStore.open_readonly(path)
    meta = store.read_meta()
    records = list(store.records())
    suite = suite_of(meta)
    if summary is None:
        summary = summarize_run(meta, records, suite=suite)[0]
    return RunData(key=key, path=store.path, meta=meta, records=records, summary=summary,
                   suite=suite)


def run_keys(n: int) -> list[str]:
    letters = string.ascii_uppercase
    return [letters[i] if i < 26 else f"R{i + 1}" for i in range(n)]


def run_cache(run: RunData, key: str, fn: Callable[[RunData], Any]) -> Any:
    cache = run.__dict__.setdefault("_cache", {})
    if key not in cache:
        cache[key] = fn(run)
    return cache[key]


def merged_summary(ctx: ReportContext) -> Summary:
    """One summary dict whose engines are every (engine, run) column, engine-major."""
    if not ctx.multi:
        return ctx.runs[0].summary
    ref = ctx.runs[0].summary
    sers = [s for s in ref["serializations"]
            if all(s in r.summary["serializations"] for r in ctx.runs)]
    engines: dict[str, dict[str, Any]] = {}
    heads: dict[str, EngineHeadline] = {}
    for eng in ctx.engines():
        for run in ctx.runs:
            if eng in run.summary["engines"]:
                engines[ctx.col(run, eng)] = run.summary["engines"][eng]
                heads[ctx.col(run, eng)] = run.summary["headline"]["engines"][eng]
    return {"engines": engines, "serializations": sers,
            "primary_serialization": ref["primary_serialization"],
            "headline": {**ref["headline"], "engines": heads}}
