"""Derived outputs of a run folder, rebuilt from ``records.jsonl`` at any time.

``summary.json``       the documented machine-readable summary (:func:`harness.analysis.metrics.summarize`)
``records.parquet``    one row per (engine, schema) job
``instances.parquet``  one row per (engine, schema, instance, serialisation) replay
``drift.json``         suite drift: engine × axis verdicts (:mod:`harness.analysis.conformance`)
``keywords.json``      suite json-schema-test-suite: the per-keyword table
suites mask-diff / fuzz add blocks to summary.json (:mod:`harness.measure.tokens.summary`)
"""

from __future__ import annotations

import json
from typing import Any

from harness.analysis import metrics
from harness.store.run_store import RunStore


def finalize(store: RunStore) -> dict[str, Any]:
    """Write summary.json and the Parquet tables; return the summary."""
    meta = store.read_meta()
    records = list(store.records())
    summary = metrics.build_summary(meta, records)
    from harness.measure.tokens.summary import extend as token_blocks

    token_text = token_blocks(summary, records)  # suites mask-diff / fuzz (else None)
    from harness.analysis.adversarial import extend as adversarial_block

    adversarial_text = adversarial_block(summary, meta, records)  # suite adversarial (else None)
    (store.path / "summary.json").write_text(json.dumps(summary, indent=2))
    sdf = metrics.schema_frame(records)
    if len(sdf):
        sdf.to_parquet(store.path / "records.parquet", index=False)
    idf = metrics.instance_frame(records)
    if len(idf):
        idf.to_parquet(store.path / "instances.parquet", index=False)
    from harness.analysis import conformance

    extra = conformance.finalize(store.path, records, summary, meta)
    if extra:  # the drift matrix / keyword pass rates, on the console of run and summary
        print(extra + "\n")
    if token_text:  # the mask-diff / fuzz table, on the console of run and summary
        print(token_text + "\n")
    if adversarial_text:  # cases per class per engine, on the console of run and summary
        print(adversarial_text + "\n")
    return summary
