"""Reports of one or more runs: every section built, then rendered as Markdown (figures as
PNG files beside ``report.md``); :mod:`harness.report.html` renders the same sections.

Everything reads run folders only (``run.json`` + ``records.jsonl``, the source of truth;
the summary is rebuilt with :func:`harness.analysis.metrics.build_summary`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from harness.report.model import (Bullets, Fields, Figure, Para, ReportContext, Section, Table,
                                  load_run, run_keys)
from harness.registry import REPORT_SECTIONS, REPORT_TAIL, load_target
from harness.report.text import markdown_table, md_text

def section_builders(ctx: ReportContext) -> list[Any]:
    """The section builders of a report, in order: the registered sections (the core ones,
    then third-party ones), the sections each run's suite declares, and the tail: the
    comparison of several runs, the engines and the run metadata."""
    names = [n for n in REPORT_SECTIONS.names() if n not in REPORT_TAIL]
    builders = [REPORT_SECTIONS.load(n) for n in names]
    seen: set[str] = set()
    for run in ctx.runs:
        for target in getattr(run.suite, "report_sections", ()):
            if target not in seen:
                seen.add(target)
                builders.append(load_target(target, "report section"))
    return [*builders, *(REPORT_SECTIONS.load(n) for n in REPORT_TAIL)]


def build_sections(ctx: ReportContext) -> list[Section]:
    """Every section of the report; a builder that finds none of its data adds nothing."""
    out: list[Section] = []
    for builder in section_builders(ctx):
        res = builder(ctx)
        if res is None:
            continue
        out.extend(res if isinstance(res, list) else [res])
    return out


def report_title(ctx: ReportContext) -> str:
    if ctx.multi:
        return "Runs " + " vs ".join(f"{r.key}={r.run_id}" for r in ctx.runs)
    return f"Run {ctx.runs[0].run_id}"


# --------------------------------------------------------------------------------------
# Markdown renderer


def render_markdown(ctx: ReportContext, sections: list[Section], out_dir: Path) -> str:
    """The Markdown text; writes each figure as a PNG file into ``out_dir``."""
    lines = [f"# {md_text(report_title(ctx), None)}", ""]
    for sec in sections:
        lines += [f"{'#' * sec.level} {md_text(sec.title, None)}", ""]
        for b in sec.blocks:
            if isinstance(b, Para):
                lines.append(md_text(b.text, None))
            elif isinstance(b, Bullets):
                lines += [f"- {md_text(i, None)}" for i in b.items]
            elif isinstance(b, Fields):
                lines += [f"- **{md_text(k, None)}**: {md_text(v, None)}" for k, v in b.items]
            elif isinstance(b, Table):
                lines += markdown_table(b)
            elif isinstance(b, Figure):
                (out_dir / b.name).write_bytes(b.png)
                lines.append(f"![{b.name}]({b.name})")
                if b.caption:
                    lines += ["", f"*{md_text(b.caption, None)}*"]
            lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Entry points


def _unique_figure_names(sections: list[Section]) -> None:
    seen: Counter = Counter()
    for sec in sections:
        for b in sec.blocks:
            if isinstance(b, Figure):
                seen[b.name] += 1
                if seen[b.name] > 1:
                    stem, dot, ext = b.name.rpartition(".")
                    b.name = f"{stem}-{seen[b.name]}.{ext}"


def build(paths: list[Path]) -> tuple[ReportContext, list[Section]]:
    """Load the runs (read-only) and build every section."""
    runs = [load_run(p, key) for p, key in zip(paths, run_keys(len(paths)))]
    ctx = ReportContext(runs)
    sections = build_sections(ctx)
    _unique_figure_names(sections)
    return ctx, sections


def write_markdown(ctx: ReportContext, sections: list[Section], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "report.md"
    path.write_text(render_markdown(ctx, sections, out_dir))
    return path
