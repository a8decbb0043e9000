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
from harness.analysis.verdict import suite_of
from harness.registry import load_target
from harness.store.run_store import RunStore
from harness.records import Record, RunMeta, Summary

__all__ = ["PUBLISHED_INPUTS", "finalize", "summarize_published", "summarize_run"]


def summarize_run(meta: RunMeta, records: list[Record], run_dir: Path | None = None,
                  suite: type | None = None) -> tuple[Summary, list[str]]:
    """The summary of a run (:func:`harness.analysis.metrics.build_summary` plus the blocks
    its suite declares) and the console texts of those blocks.

    Parameters
    ----------
    meta, records:
        ``run.json`` and the records of ``records.jsonl``.
    run_dir:
        The run folder, where suite blocks may write their own files; None writes nothing.
    suite:
        The run's suite class when the caller holds it (a run just made); None: looked up
        by the name in ``meta``, once.
    """
    if suite is None:
        suite = suite_of(meta)
    summary = metrics.build_summary(meta, records, suite)
    texts: list[str] = []
    for target in getattr(suite, "summary_blocks", ()):
        text = load_target(target, "summary block")(summary, meta, records, run_dir)
        if text:
            texts.append(text)
    return summary, texts


#: What a published run folder keeps beside run.json, summary.json and its records: the
#: facts a run recorded outside its records that its summary reads (the serve suite's
#: servers: engine, version, start count, ready time).
PUBLISHED_INPUTS = ("servers/servers.json",)


def summarize_published(store: RunStore, records: list[Record] | None = None
                        ) -> tuple[Summary, list[str]]:
    """:func:`summarize_run` of a published run folder (``results/published/<run-id>/``),
    writing nothing into it: the suite blocks get a scratch folder holding the folder's
    :data:`PUBLISHED_INPUTS`, and what they write there is dropped."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="harness-published-") as scratch:
        for name in PUBLISHED_INPUTS:
            if (store.path / name).is_file():
                (Path(scratch) / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(store.path / name, Path(scratch) / name)
        return summarize_run(store.read_meta(),
                             list(store.records()) if records is None else records,
                             Path(scratch))


def finalize(store: RunStore, echo: Callable[[str], object] | None = print,
             suite: type | None = None) -> Summary:
    """Write summary.json and the Parquet tables (a published run folder: summary.json
    alone); hand the suite blocks' console text to ``echo`` (None: drop it); return the
    summary. ``suite``: the run's suite class when the caller holds it."""
    meta = store.read_meta()
    records = list(store.records())
    if store.published:
        # a published folder keeps what it was published with: its summary is rebuilt in
        # place, what else a run derives is not written there
        summary, texts = summarize_published(store, records)
        (store.path / "summary.json").write_text(json.dumps(summary, indent=2))
        if echo is not None:
            for text in texts:
                echo(text + "\n")
        return summary
    summary, texts = summarize_run(meta, records, store.path, suite)
    (store.path / "summary.json").write_text(json.dumps(summary, indent=2))
    sdf = metrics.schema_frame(records)
    if len(sdf):
        sdf.to_parquet(store.path / "records.parquet", index=False)
    idf = metrics.instance_frame(records)
    if len(idf):
        idf.to_parquet(store.path / "instances.parquet", index=False)
    if echo is not None:
        for text in texts:  # e.g. the drift matrix
            echo(text + "\n")
    return summary
