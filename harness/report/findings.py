"""The findings of a run's token replays as report blocks: what ``harness explain`` lists,
a few of each (engine, kind), for every suite whose records hold findings (mask_diff's
replays, fuzz's walks)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.measure.tokens.findings import Finding, run_findings
from harness.records import Record
from harness.report.model import Block, Para, RunData, Table

if TYPE_CHECKING:
    from engines.vocab import Vocabulary

#: findings listed per run in the report, at most PER_KIND per (engine, kind); all are in
#: the records and ``harness explain RUN CASE --list`` lists them
MAX_FINDINGS = 40
PER_KIND = 3


def run_vocabulary(run: RunData) -> Vocabulary | None:
    """The run's tokenizer, for token bytes (None when it cannot be loaded here)."""
    try:
        from engines.vocab import load_vocabulary

        return load_vocabulary((run.meta.get("config") or {}).get("tokenizer", "llama3"))
    except Exception:  # the report still shows ids
        return None


def _token(vocab: Vocabulary | None, tid: int | None) -> str:
    if tid is None:
        return "EOS"
    return f"{tid} {vocab.tokens[tid]!r}" if vocab is not None else str(tid)


def findings_blocks(run: RunData, recs: list[Record]) -> list[Block]:
    """A paragraph and the table of ``recs``' findings (at most :data:`PER_KIND` per engine
    and kind, :data:`MAX_FINDINGS` in all), or "No findings."."""
    found = run_findings(recs)
    if not found:
        return [Para("No findings.")]
    vocab = run_vocabulary(run)
    # a few of each (engine, kind), most severe kinds first, so that one noisy kind does
    # not hide the others
    seen: dict[tuple[str, str], int] = {}
    shown: list[Finding] = []
    for f in found:
        key = (f["engine"], f["kind"])
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= PER_KIND and len(shown) < MAX_FINDINGS:
            shown.append(f)
    rows = []
    for f in shown:
        where = f"instance {f['instance']}" if "instance" in f else f"walk {f.get('walk')}"
        rows.append([f["kind"], f["engine"], f["case"], where, str(f["step"]),
                     _token(vocab, f["token"]) if f["token"] is not None else "–",
                     (f.get("why") or "")[:160]])
    return [Para(f"{len(found)} findings, most severe first ({len(rows)} shown, at most "
                 f"{PER_KIND} per engine and kind). "
                 f"`harness explain {run.path} CASE --engine ENGINE --kind KIND` prints one "
                 "with its schema, instance, token sequence and what each engine allowed at "
                 "the step, replayed from the record."),
            Table(["kind", "engine", "case", "where", "step", "token", "why"], rows, align="l")]
