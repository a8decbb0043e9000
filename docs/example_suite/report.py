"""The ``max-length`` report section: one row per engine, one column per size."""

from __future__ import annotations

from harness.suite.report import ReportContext, Section, Table


def sec_max_length(ctx: ReportContext) -> Section | None:
    tables = []
    for run in ctx.runs:
        block = run.summary.get("max_length")
        if not block:
            continue
        sizes = sorted({n for b in block.values() for n in b["outcomes"]}, key=int)
        rows = [[ctx.col(run, eng)] + [b["outcomes"].get(n, "") for n in sizes]
                for eng, b in block.items()]
        tables.append(Table(["engine"] + [f"maxLength {n}" for n in sizes], rows))
    return Section("maxLength held", list(tables)) if tables else None
