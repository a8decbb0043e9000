"""Derived outputs of a run folder, rebuilt from ``records.jsonl`` at any time.

``summary.json``       the documented machine-readable summary (:func:`summarize_run`)
``records.parquet``    one row per (engine, case) job
``instances.parquet``  one row per (engine, case, instance, serialisation) replay

and whatever the run's suite adds through its ``summary_blocks`` (:class:`harness.suite.SuiteBase`):
e.g. ``drift.json``, ``keywords.json``, the mask-diff / fuzz / e2e / adversarial blocks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from harness.analysis import metrics
from harness.registry import load_target, suite_class
from harness.store.run_store import RunStore
from harness.records import Record, RunMeta

__all__ = ["finalize", "summarize_run"]


def summarize_run(meta: RunMeta, records: list[Record],
                  run_dir: Path | None = None) -> tuple[dict[str, Any], list[str]]:
    """The summary of a run (:func:`harness.analysis.metrics.build_summary` plus the blocks
    its suite declares) and the console texts of those blocks.

    Parameters
    ----------
    meta, records:
        ``run.json`` and the records of ``records.jsonl``.
    run_dir:
        The run folder, where suite blocks may write their own files; None writes nothing.
    """
    summary = metrics.build_summary(meta, records)
    texts: list[str] = []
    suite = suite_class((meta.get("config") or {}).get("suite"))
    for target in getattr(suite, "summary_blocks", ()):
        text = load_target(target, "summary block")(summary, meta, records, run_dir)
        if text:
            texts.append(text)
    return summary, texts


def finalize(store: RunStore, echo: Callable[[str], Any] | None = print) -> dict[str, Any]:
    """Write summary.json and the Parquet tables (a published run folder: summary.json
    alone); hand the suite blocks' console text to ``echo`` (None: drop it); return the
    summary."""
    meta = store.read_meta()
    records = list(store.records())
    # a published folder keeps run.json, summary.json and its records only: its summary is
    # rebuilt in place, what else a run derives is not written there
    summary, texts = summarize_run(meta, records, None if store.published else store.path)
    (store.path / "summary.json").write_text(json.dumps(summary, indent=2))
    if store.published:
        for text in texts if echo is not None else ():
            echo(text + "\n")
        return summary
    sdf = metrics.schema_frame(records)
    if len(sdf):
        sdf.to_parquet(store.path / "records.parquet", index=False)
    idf = metrics.instance_frame(records)
    if len(idf):
        idf.to_parquet(store.path / "instances.parquet", index=False)
    for text in texts if echo is not None else ():  # e.g. the drift matrix
        echo(text + "\n")
    return summary
