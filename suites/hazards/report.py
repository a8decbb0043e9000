"""The hazards suite's report section: the hazard × engine table (each cell a verdict with
its witness, or "not measured: why"), then the keyword × engine table of hazard 3 and the
whitespace runs of hazard 5. Data from :func:`suites.hazards.summary.hazard_table`,
recomputed from each run's records (the report never trusts a stale summary)."""

from __future__ import annotations

from typing import Any

from harness.suite.report import (Para, ReportContext, Section, Table, pipes,
                                  markdown_table as markdown_lines)
from suites.hazards.records import HazardsSummaryBlock

__all__ = ["atlas_rows", "flagged_rows", "markdown_table", "sec_hazards"]

#: Longest witness shown in a cell (the full one is in hazards.json).
CELL_CHARS = 240


def _short(text: str, n: int = CELL_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def table_rows(table: HazardsSummaryBlock) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the hazard × engine table."""
    header = ["hazard"] + table["engines"]
    rows = [[f"{r['number']}. {r['title']}"] + [_short(r["cells"][e]["text"])
                                               for e in table["engines"]]
            for r in table["rows"]]
    return header, rows


def keyword_rows(table: HazardsSummaryBlock) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the keyword × engine table (standalone engines that judged any)."""
    kws = table.get("keywords") or {}
    engines = [e for e in table["engines"] if kws.get(e)]
    names = sorted({k for e in engines for k in kws[e]})
    rows = []
    for k in names:
        row = [k]
        for e in engines:
            v = kws[e].get(k)
            row.append("–" if v is None else _short(
                v["verdict"] + (f": {v['witness']}" if v.get("witness") else ""), 90))
        rows.append(row)
    return ["keyword"] + engines, rows


def atlas_rows(table: HazardsSummaryBlock) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the corpus atlas: one row per keyword, one column per engine, each
    cell the occurrences kept / ignored / misread / refused / undecided."""
    from suites.hazards.summary import ATLAS_VERDICTS

    atlas = table.get("atlas") or {}
    engines = atlas.get("engines") or []
    rows = []
    for k in atlas.get("keywords") or ():
        row = [k]
        for e in engines:
            c = (atlas["cells"].get(e) or {}).get(k)
            row.append("–" if c is None else
                       " / ".join(str(c["counts"][v]) for v in ATLAS_VERDICTS))
        rows.append(row)
    return ["keyword"] + engines, rows


def flagged_rows(table: HazardsSummaryBlock) -> tuple[list[str], list[list[str]]]:
    """(header, rows): each flagged atlas cell (a keyword ignored or misread on an engine),
    its count and its first witness with where it was found."""
    atlas = table.get("atlas") or {}
    rows = []
    for e in atlas.get("engines") or ():
        for k, c in sorted((atlas["cells"].get(e) or {}).items()):
            for v in ("ignored", "misread"):
                if c["counts"][v]:
                    ex = c["examples"][v]
                    rows.append([e, k, v, str(c["counts"][v]), _short(ex["witness"] or "", 90),
                                 f"{ex['case']} {ex['path'] or '/'}"])
    return ["engine", "keyword", "verdict", "occurrences", "first witness", "where"], rows


def markdown_table(table: HazardsSummaryBlock) -> str:
    """The hazard × engine table as GitHub Markdown (for docs/results.md), cells escaped."""
    header, rows = table_rows(table)
    return "\n".join(markdown_lines(Table(header, rows, align="l"), cell=pipes))


def sec_hazards(ctx: ReportContext) -> Section | None:
    from suites.hazards.summary import hazard_table

    blocks: list[Any] = []
    for run in ctx.runs:
        if (run.meta.get("config") or {}).get("suite") != "hazards":
            continue
        table = hazard_table(run.meta, run.records)
        blocks.append(Para("One row per hazard, one column per engine row (standalone engines "
                           "and served backends); each cell a verdict with its witness, or "
                           "\"not measured: why\". Full witnesses: hazards.json in the run "
                           "folder; what each verdict means: suites/hazards/README.md."))
        header, rows = table_rows(table)
        blocks.append(Table(header, rows, align=["l"] * len(header)))
        kh, kr = keyword_rows(table)
        if kr:
            blocks.append(Para("Hazard 3 by keyword: the verdict over every schema of the run "
                               "(probes and corpus), with one witness instance each (ignored: "
                               "accepted though jsonschema says the keyword forbids it; kept: "
                               "refused with the keyword, accepted without it)."))
            blocks.append(Table(kh, kr, align=["l"] * len(kh)))
        ah, ar = atlas_rows(table)
        if ar:
            blocks.append(Para("Hazard 3 over the corpus schemas of the run, by occurrence (a "
                               "keyword on one node): kept / ignored / misread / refused / "
                               "undecided. Then each flagged count with its first witness "
                               "(jsonschema-checked)."))
            blocks.append(Table(ah, ar, align=["l"] + ["r"] * (len(ah) - 1)))
            fh, fr = flagged_rows(table)
            if fr:
                blocks.append(Table(fh, fr, align=["l"] * len(fh)))
    if not blocks:
        return None
    return Section("Production hazards", blocks)
