"""The fuzz suite's report section: per engine, the walks under its mask and what became of
them, and the confirmed false accepts with their outputs. Numbers come from
:mod:`suites.fuzz.summary` over the records; nothing is recomputed from engines here."""

from __future__ import annotations

from harness.suite.report import Para, ReportContext, Section, Table, findings_blocks
from suites.fuzz.summary import fuzz_block


def sec_fuzz(ctx: ReportContext) -> list[Section] | None:
    out = []
    for run in ctx.runs:
        recs = [r for r in run.records if r.get("fuzz")]
        if not recs:
            continue
        rows = []
        for e in dict.fromkeys(r["engine"] for r in recs):
            f = fuzz_block([r for r in recs if r["engine"] == e])
            rows.append([e, str(f["schemas"]), str(f["walks"]), str(f["valid"]), str(f["invalid"]),
                         str(f["undecided"]), str(f["dead_end"]), str(f["runaway"]),
                         str(f["commit_refused"] + f["error"]), str(f["schemas_invalid"]),
                         "–" if f["runaway_ws_share"] is None else f"{f['runaway_ws_share']:.2f}"])
        budget = recs[0]["fuzz"].get("budget")
        tag = ctx.tag(run)
        out.append(Section(f"Generative fuzzing{tag}", [
            Para(f"Seeded random walks under each engine's mask (length-aware policy, budget "
                 f"{budget} tokens); every output the engine let end is checked with strict JSON "
                 "and jsonschema. Invalid = a confirmed false accept; dead end = empty mask "
                 "before the document could end; runaway = no EOS within the budget."),
            Table(["engine", "schemas", "walks", "valid", "invalid", "undecided", "dead end",
                   "runaway", "engine error", "schemas with invalid", "runaway ws share"], rows),
            *findings_blocks(run, recs),
        ]))
    return out or None
