#!/usr/bin/env python3
"""The reference engine beside the peers, measured by the harness's own run.

Runs ``harness run --suite jsonschemabench --engine reference,llguidance,xgrammar
--sample N --jobs J`` (or reads an existing run folder with ``--run``) and prints, per
engine and side by side with the ratio reference / peer:

- TBM (mask fill + commit per token, µs): average, p50, p99, share of masks over 1 ms;
- TTFM (schema text → first mask, ms): p50, p90;
- schemas passing, compile errors, validation / invalidation errors (schemas);
- the reference engine's adaptive mask cache per schema (from each job record's
  ``engine_stats``): bytes stored vs one dense 16 KiB bitmask per cached automaton node,
  the node formats chosen, and the tokens per node moved from context-dependent to
  context-independent by context expansion;

then the issue's targets (TBM avg ≤ llguidance's, TBM p50 ≤ 2× XGrammar's, TBM p99 ≤ 1 ms,
TTFM p50 ≤ 1 s, coverage ≥ llguidance's, zero validation/invalidation errors) as
met / NOT met. Timings depend on the machine and its load; say so when quoting them.

    python benchmarks/reference_perf.py --sample 60            # a few minutes
    python benchmarks/reference_perf.py --run results/<run-id>  # re-read a run
    python benchmarks/reference_perf.py --run results/<run-id> --per-schema
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any
from harness.measure.figures import fixed
from harness.records import Record, Summary
from harness.report.model import Table
from harness.report.text import text_table

ROOT = Path(__file__).resolve().parent.parent
PEERS = ("llguidance", "xgrammar")


def run_harness(sample: int, jobs: int, engines: str, results: Path, timeout: int) -> Path:
    """Run the harness; return the new run folder."""
    before = set(results.glob("*")) if results.exists() else set()
    cmd = [str(ROOT / ".venv/bin/harness"), "run", "--suite", "jsonschemabench",
           "--engine", engines, "--sample", str(sample), "--jobs", str(jobs),
           "--timeout", str(timeout), "--results", str(results),
           "--reports", str(results.parent / "reports"), "--no-progress"]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    new = sorted(set(results.glob("*")) - before)
    if not new:
        raise SystemExit("the harness run left no run folder")
    return new[-1]


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "–"
    return f"{a / b:,.2f}×"


def engine_rows(summary: Summary) -> dict[str, dict[str, float | None]]:
    """Per engine: the figures compared (µs for TBM, ms for TTFM, counts)."""
    out: dict[str, dict[str, float | None]] = {}
    for name, e in summary["engines"].items():
        if e.get("status") != "run":
            continue
        tbm, ttfm, oc = e.get("tbm_us") or {}, e.get("ttfm_ms") or {}, e.get("outcomes") or {}
        out[name] = {
            "TBM avg (µs)": tbm.get("avg"), "TBM p50 (µs)": tbm.get("p50"),
            "TBM p99 (µs)": tbm.get("p99"),
            "masks > 1 ms (%)": None if tbm.get("over_1ms_share") is None
            else 100 * tbm["over_1ms_share"],
            "TTFM p50 (ms)": ttfm.get("p50"), "TTFM p90 (ms)": ttfm.get("p90"),
            "passing": oc.get("passing", 0), "compile errors": oc.get("compile_error", 0),
            "validation errors": oc.get("validation_error", 0),
            "invalidation errors": oc.get("invalidation_error", 0),
            "timeouts/crashes/OOM": oc.get("timeout", 0) + oc.get("crash", 0) + oc.get("oom", 0),
        }
    return out


def cache_figures(records: list[Record]) -> dict[str, Any] | None:
    """The reference engine's mask-cache figures over its compiled schemas."""
    stats = [r["engine_stats"] for r in records
             if r.get("engine") == "reference" and r.get("engine_stats")]
    if not stats:
        return None
    stored = [s["node_cache_bytes"] for s in stats]
    dense = [s["dense_equiv_bytes"] for s in stats]
    nodes = [s["nodes"] for s in stats]
    fmts = {"dense": 0, "accepted": 0, "rejected": 0}
    for s in stats:
        for k, v in s["node_formats"].items():
            fmts[k] += v
    moved = [s["expansion_moved_avg"] for s in stats]
    return {
        "schemas": len(stats), "nodes_median": statistics.median(nodes), "nodes_max": max(nodes),
        "stored_median_kib": statistics.median(stored) / 1024, "stored_max_kib": max(stored) / 1024,
        "dense_median_kib": statistics.median(dense) / 1024, "dense_max_kib": max(dense) / 1024,
        "share": sum(stored) / max(1, sum(dense)), "formats": fmts,
        "ctx_median_kib": statistics.median(s["ctx_cache_bytes"] for s in stats) / 1024,
        "final_median_kib": statistics.median(s["final_cache_bytes"] for s in stats) / 1024,
        "walk_median_kib": statistics.median(s.get("walk_memo_bytes", 0) for s in stats) / 1024,
        "walk_max_kib": max(s.get("walk_memo_bytes", 0) for s in stats) / 1024,
        "moved_avg": statistics.mean(moved), "moved_max": max(s["expansion_moved_max"] for s in stats),
        "lookahead_avg": statistics.mean(s.get("lookahead_moved_avg", 0.0) for s in stats),
        "cd_avg": statistics.mean(s["cd_avg"] for s in stats),
    }


def print_per_schema(records: list[Record]) -> None:
    """One line per compiled schema: cached nodes, adaptive bytes, dense-only bytes."""
    rows = sorted(((r["case_id"], r["engine_stats"]) for r in records
                   if r.get("engine") == "reference" and r.get("engine_stats")),
                  key=lambda x: -x[1]["dense_equiv_bytes"])
    print(f"\n{'schema':52s} {'nodes':>6s} {'adaptive KiB':>13s} {'dense KiB':>10s} {'share':>6s}")
    for sid, s in rows:
        share = s["node_cache_bytes"] / max(1, s["dense_equiv_bytes"])
        print(f"{sid[:52]:52s} {s['nodes']:6d} {s['node_cache_bytes'] / 1024:13,.0f} "
              f"{s['dense_equiv_bytes'] / 1024:10,.0f} {100 * share:5.0f}%")


def print_report(run: Path, per_schema: bool = False) -> int:
    summary = json.loads((run / "summary.json").read_text())
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines() if line]
    rows = engine_rows(summary)
    names = [n for n in ("reference", *PEERS) if n in rows]
    if "reference" not in rows:
        print("the run has no reference engine results")
        return 1
    peers = [p for p in PEERS if p in rows]
    head = ["metric"] + names + [f"ref / {p}" for p in peers]
    table = [head]
    for metric in rows["reference"]:
        line = [metric]
        digits = 0 if metric in ("passing", "compile errors", "validation errors",
                                 "invalidation errors", "timeouts/crashes/OOM") else 1
        for n in names:
            v = rows[n][metric]
            line.append(fixed(None if v is None else float(v), digits, grouped=True))
        for p in peers:
            line.append(_ratio(rows["reference"][metric], rows[p][metric]))
        table.append(line)
    print(f"\nrun: {run}  ({summary['engines']['reference'].get('version', '')})")
    print(text_table(Table(head, table[1:]), rule=True))
    cache = cache_figures(records)
    if cache:
        print(f"\nreference mask cache over {cache['schemas']} compiled schemas "
              f"(cached automaton nodes per schema: median {cache['nodes_median']:.0f}, "
              f"max {cache['nodes_max']}):")
        print(f"  stored (adaptive):  median {cache['stored_median_kib']:,.0f} KiB, "
              f"max {cache['stored_max_kib']:,.0f} KiB")
        print(f"  dense only (nodes × 16 KiB): median {cache['dense_median_kib']:,.0f} KiB, "
              f"max {cache['dense_max_kib']:,.0f} KiB  → adaptive = {100 * cache['share']:.0f}% of dense")
        f = cache["formats"]
        print(f"  node formats: dense {f['dense']}, sparse accepted {f['accepted']}, "
              f"sparse rejected {f['rejected']}")
        print(f"  context cache median {cache['ctx_median_kib']:,.0f} KiB; composed-mask LRU "
              f"median {cache['final_median_kib']:,.0f} KiB; walk memos median "
              f"{cache['walk_median_kib']:,.0f} KiB, max {cache['walk_max_kib']:,.0f} KiB")
        print(f"  context-dependent tokens per node: {cache['cd_avg']:,.0f} on average; "
              f"moved to context-independent by context expansion: {cache['moved_avg']:,.0f} "
              f"per node on average (max {cache['moved_max']:,}); of them through "
              f"single-site returns / the document end: {cache['lookahead_avg']:,.0f}")
    if per_schema:
        print_per_schema(records)
    ref = rows["reference"]
    lg = rows.get("llguidance")
    xg = rows.get("xgrammar")
    checks = [
        ("TBM avg ≤ llguidance's", lg and ref["TBM avg (µs)"] is not None
         and ref["TBM avg (µs)"] <= lg["TBM avg (µs)"]),
        ("TBM p50 ≤ 2× XGrammar's", xg and ref["TBM p50 (µs)"] is not None
         and ref["TBM p50 (µs)"] <= 2 * xg["TBM p50 (µs)"]),
        ("TBM p99 ≤ 1 ms", ref["TBM p99 (µs)"] is not None and ref["TBM p99 (µs)"] <= 1000),
        ("TTFM p50 ≤ 1 s", ref["TTFM p50 (ms)"] is not None and ref["TTFM p50 (ms)"] <= 1000),
        ("coverage (passing schemas) ≥ llguidance's", lg and ref["passing"] >= lg["passing"]),
        ("zero validation/invalidation errors",
         ref["validation errors"] == 0 and ref["invalidation errors"] == 0),
    ]
    print("\ntargets (issue 3):")
    for what, ok in checks:
        print(f"  {'met    ' if ok else 'NOT met'}  {what}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=60, help="schemas (stratified sample)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--engines", default="reference,llguidance,xgrammar")
    ap.add_argument("--timeout", type=int, default=60, help="per job, s")
    ap.add_argument("--results", default=str(ROOT / "results"), help="folder for the run")
    ap.add_argument("--run", help="an existing run folder to read instead of running")
    ap.add_argument("--per-schema", action="store_true",
                    help="also list the mask cache's bytes per schema")
    a = ap.parse_args(argv)
    run = Path(a.run) if a.run else run_harness(a.sample, a.jobs, a.engines, Path(a.results),
                                                a.timeout)
    return print_report(run, a.per_schema)


if __name__ == "__main__":
    sys.exit(main())
