"""Derived outputs of a run folder, rebuilt from ``records.jsonl`` at any time.

``summary.json``       the documented machine-readable summary (:func:`harness.metrics.summarize`)
``records.parquet``    one row per (engine, schema) job
``instances.parquet``  one row per (engine, schema, instance, serialisation) replay
"""

from __future__ import annotations

import json
from typing import Any

from harness import metrics
from harness.store import RunStore


def finalize(store: RunStore) -> dict[str, Any]:
    """Write summary.json and the Parquet tables; return the summary."""
    meta = store.read_meta()
    records = list(store.records())
    summary = metrics.summarize(records, meta)
    eff = metrics.parallel_efficiency(records, meta.get("sessions", []))
    summary["parallel_efficiency"] = round(eff, 4) if eff is not None else None
    summary["wall_s"] = round(sum(s["ended_at"] - s["started_at"] for s in meta.get("sessions", [])
                                  if s.get("ended_at")), 3)
    (store.path / "summary.json").write_text(json.dumps(summary, indent=2))
    sdf = metrics.schema_frame(records)
    if len(sdf):
        sdf.to_parquet(store.path / "records.parquet", index=False)
    idf = metrics.instance_frame(records)
    if len(idf):
        idf.to_parquet(store.path / "instances.parquet", index=False)
    return summary
