"""The churn suite's figures: per engine and Zipf exponent, how often the compile cache
served a request and what a request waited for its grammar.

- *repeats*: share of the compiled requests whose schema came earlier in the stream (the
  best hit rate any cache could reach);
- *hit rate*: share of requests the engine's own cache served (its size did not grow);
  0 for an engine without a compile cache, None where the engine does not say;
- *TTFT*: compile or cache fetch + matcher + first mask per request, ms (mean, p50, p99),
  for all requests, for new schemas and for repeats;
- *compile total*: seconds of the whole stream.

A job that died (timeout, OOM, crash) or refused has a row of its own, its outcome in the
errors column.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from harness.suite import Record, RunMeta, Summary, figures
from harness.suite.report import Table, text_table
from suites.churn.records import ChurnRecord, ChurnRow, ChurnSummary, MsStats

__all__ = ["HEADER", "churn_rows", "summary_block"]

HEADER = ["engine", "zipf", "requests", "distinct", "repeats", "hit rate", "cache",
          "TTFT mean ms", "p50", "p99", "new mean", "repeat mean", "total s", "errors"]


def _ms(xs: list[int]) -> MsStats:
    if not xs:
        return {"mean": None, "p50": None, "p99": None}
    a = np.asarray(xs, dtype=float) / 1e6
    return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)),
            "p99": float(np.percentile(a, 99))}


def churn_rows(records: list[ChurnRecord]) -> list[ChurnRow]:
    """One row per (engine, exponent), sorted by engine then exponent (descending)."""
    out = []
    for r in records:
        c = r.get("churn")
        if not c:
            cid = str(r.get("case_id", ""))
            if cid.startswith("zipf"):  # the job died or refused: a row that says so
                out.append({"engine": r["engine"], "exponent": float(cid[4:]), "requests": None,
                            "distinct": None, "repeats": None, "hit_rate": None,
                            "has_cache": None, "cache": None, "ttft_ms": _ms([]),
                            "new_ms": _ms([]), "repeat_ms": _ms([]), "total_s": None,
                            "errors": r.get("outcome"), "error": r.get("error")})
            continue
        reqs = c["requests"]
        ok = [q for q in reqs if "error" not in q]
        hits = [q["hit"] for q in ok if "hit" in q]
        hit_rate = (sum(hits) / len(ok) if hits and ok else
                    (0.0 if not c["has_cache"] and ok else None))
        out.append({
            "engine": r["engine"], "exponent": c["exponent"], "requests": len(reqs),
            "distinct": len({q["rank"] for q in reqs}),
            "repeats": sum(q["repeat"] for q in ok) / len(ok) if ok else None,
            "hit_rate": hit_rate, "has_cache": c["has_cache"], "cache": c["cache"],
            "ttft_ms": _ms([q["ttft_ns"] for q in ok]),
            "new_ms": _ms([q["ttft_ns"] for q in ok if not q["repeat"]]),
            "repeat_ms": _ms([q["ttft_ns"] for q in ok if q["repeat"]]),
            "total_s": sum(q["ttft_ns"] for q in reqs) / 1e9,
            "errors": len(reqs) - len(ok),
        })
    return sorted(out, key=lambda x: (x["engine"], -x["exponent"]))


def table_rows(rows: list[ChurnRow]) -> list[list[str]]:
    f = figures.fixed
    return [[r["engine"], f"{r['exponent']:g}", f(r["requests"]), f(r["distinct"]),
             f(r["repeats"]), f(r["hit_rate"]),
             "–" if r["has_cache"] is None else "yes" if r["has_cache"] else "none",
             f(r["ttft_ms"]["mean"]), f(r["ttft_ms"]["p50"]), f(r["ttft_ms"]["p99"]),
             f(r["new_ms"]["mean"]), f(r["repeat_ms"]["mean"]), f(r["total_s"], 3),
             str(r["errors"])] for r in rows]


def summary_block(summary: ChurnSummary, meta: RunMeta, records: list[ChurnRecord],
                  run_dir: Path | None = None) -> str | None:
    """``summary["churn"]`` and ``churn.json`` in the run folder; console text (None when
    the run holds no churn records). The crossover plot is the report's."""
    rows = churn_rows(records)
    if not rows:
        return None
    summary["churn"] = {"rows": rows}
    if run_dir is not None:
        (Path(run_dir) / "churn.json").write_text(json.dumps(rows, indent=2))
    return "\n".join(["Compile cache under schema churn (TTFT: compile or cache fetch + first "
                      "mask per request)", text_table(Table(HEADER, table_rows(rows), align="l"))])
