"""The JSON-Schema-Test-Suite's report section: keywords × engines. Data from
:mod:`suites.json_schema_test_suite.summary`; nothing is recomputed here."""

from __future__ import annotations

from harness.suite.report import Para, ReportContext, Section, Table
from suites.json_schema_test_suite import summary as conformance


def _primary(run) -> str:
    return run.meta.get("config", {}).get("primary", "ascii")


def sec_keywords(ctx: ReportContext) -> list[Section] | None:
    out = []
    for run in ctx.runs:
        recs = [r for r in run.records if r.get("suite") == conformance.JSTS_SUITE]
        if not recs:
            continue
        table = conformance.keyword_table(recs, _primary(run),
                                          sizes=conformance.case_sizes(run.meta))
        engines = list(dict.fromkeys(e for rows in table.values() for cells in rows.values()
                                     for e in cells))
        rows = []
        for draft, kws in table.items():
            for kw, cells in kws.items():
                rows.append([f"{draft}/{kw}"] + [conformance.keyword_cell(cells[e]) if e in cells else "–"
                                                 for e in engines])
        tag = ctx.tag(run)
        out.append(Section(f"JSON Schema Test Suite: keywords × engines{tag}", [
            Para("Per keyword file: instances passed / total, then false accepts (FA), false "
                 "rejects (FR), compile errors (CE) and instances of jobs that died."),
            Table(["keyword file", *engines], rows, align=["l"] + ["l"] * len(engines)),
        ]))
    return out or None
