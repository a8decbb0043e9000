"""The drafts suite's report section, "Speculative drafts": the speculative table per
engine and the first failing drafts with their evidence. Data from
:mod:`suites.drafts.summary` (``summary["drafts"]``); the renderers escape every cell."""

from __future__ import annotations

from suites.drafts.records import DraftsEngineRow

from suites.drafts.summary import (SPECULATIVE_HEADER, speculative_table, table_header,
                                   table_rows)
from harness.suite.report import Para, ReportContext, Section, Table

#: failing drafts listed per engine (the table's counts are exact)
MAX_LISTED = 10


def _failure_rows(rows: list[DraftsEngineRow]) -> list[list[str]]:
    out = []
    for r in rows:
        for f in r["failures"][:MAX_LISTED]:
            what = f.get("error") or f.get("mismatch") or (
                f"{f['after_stop']} token(s) accepted after the stop" if f.get("after_stop")
                else "wrong accepted length")
            out.append([r["engine"], f["case_id"], str(f["instance"]), f["kind"], str(f["k"]),
                        str(f["p"]), str(f.get("c", "–")), str(f["expected"]),
                        str(f.get("got", "–")), " ".join(map(str, f.get("draft", []))), what])
    return out


def sec_drafts(ctx: ReportContext) -> Section | None:
    blocks: list = []
    for run, d in ctx.blocks("drafts"):
        rows = d["rows"]
        blocks.append(Para(
            "Speculative drafts of k tokens cut from valid instances, validated by each "
            "engine's own draft API (or token by token where it has none). A corrupt draft "
            "must be accepted exactly up to its corrupt token, a clean one in full, a draft "
            "running past the end up to and including the stop token and nothing after it. "
            "Rollback mismatch: a mask after validate, along the accepted prefix or after "
            "rolling it back differs bit for bit from a fresh replay's. Times: median of one "
            "draft validation against the same draft as single steps (mask + commit per "
            "token, then rollback), µs; ratio below 1: the draft API is faster."))
        header = table_header(rows)
        blocks.append(Table(header, table_rows(rows),
                            align=["l", "l"] + ["r"] * (len(header) - 2)))
        failures = _failure_rows(rows)
        if failures:
            blocks.append(Para(f"Failing drafts (at most {MAX_LISTED} per engine; p: start "
                               "in the instance's tokens, c: corrupt position in the draft):"))
            blocks.append(Table(["engine", "schema", "instance", "kind", "k", "p", "c",
                                 "expected", "got", "draft tokens", "what"], failures,
                                align=["l", "l", "r", "l", "r", "r", "r", "r", "r", "l", "l"]))
        if d.get("speculative"):
            blocks.append(Para(
                "Grammar-aware drafting (--model: the target decodes each schema's prompt "
                "greedily under the engine's grammar, once per drafter; docs/drafts.md). "
                "accept_len: draft tokens accepted per target step; steps / token: target "
                "forward passes per output token; acceptance: accepted / proposed; speedup: "
                "modelled from the measured target step (per number of tokens scored), "
                "drafter and mask costs, median over the schemas; wrong states: steps after "
                "which the main matcher (drafts committed, then rolled back) had another "
                "mask than a twin that only ever committed the tokens written; lossless: "
                "schemas whose output equals plain greedy decoding's."))
            blocks.append(Table(SPECULATIVE_HEADER, speculative_table(d["speculative"]),
                                align=["l", "l"] + ["r"] * (len(SPECULATIVE_HEADER) - 2)))
    if not blocks:
        return None
    return Section("Speculative drafts", blocks)
