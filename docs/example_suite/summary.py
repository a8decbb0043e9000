"""The ``max-length`` block of summary.json: per engine, the outcome of each size and the
largest ``maxLength`` it held (every instance judged right)."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from harness.suite import Record, RunMeta, Summary, outcomes


class EngineBlock(TypedDict):
    outcomes: dict[str, str]        # maxLength (as text) → the job's outcome
    largest_held: int | None        # largest maxLength with outcome "passing"; None: none


def summary_block(summary: Summary, meta: RunMeta, records: list[Record],
                  run_dir: Path | None) -> str | None:
    """Add ``summary["max_length"]`` (engine → :class:`EngineBlock`); return console text."""
    block: dict[str, EngineBlock] = {}
    for r in sorted(records, key=lambda r: int(r["case_id"].split("/")[1])):
        n = int(r["case_id"].split("/")[1])
        e = block.setdefault(r["engine"], {"outcomes": {}, "largest_held": None})
        e["outcomes"][str(n)] = r["outcome"]
        if r["outcome"] == outcomes.PASSING:
            e["largest_held"] = n
    summary["max_length"] = block  # type: ignore[typeddict-unknown-key]
    return "\n".join(f"max-length: {eng} holds maxLength up to {b['largest_held']}"
                     for eng, b in block.items()) or None
