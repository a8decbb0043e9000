"""The batch suite's figures: grammar time per decode step against batch size and host
threads, and the largest batch each engine hides inside the step's budget.

Per point (engine, workload, batch size ``B``, threads ``T``), over the timed steps:

- *grammar ms*: fill of all ``B`` masks + commit of all ``B`` tokens, per step, ms
  (p50, p99, max): what the host adds to a step before the next forward;
- *fill p99*, *commit p99*: the two parts alone, ms;
- *slowest share*: median over steps of the slowest sequence's own mask (timed alone, on
  its twin) over the step's whole fill: near 1, one sequence is the step and more threads
  cannot help;
- *speedup*: median over steps of the sum of the sequences' own masks over the step's
  fill (the batch API against one-by-one masks on one thread);
- *join µs*: matcher creation per sequence that joined (the compile is apart, once per
  schema); *joins/step*: sequences joining per step;
- *grammar-bound tok/s*: ``B`` tokens per mean grammar time per step: what the host's
  grammar work alone could sustain;
- *checks*: failed checks (:mod:`suites.batch.job`); ``batch path`` counts the rows and
  commits where the batch API disagrees with the sequence's own one-by-one matcher;
- *schemas*: the sample's schemas in the workload; *left out*: schemas the engine refused
  plus valid instances it rejects when replayed alone (not followed: its strictness is the
  replay suites' business).

Per (engine, workload, ``T``), the verdict (:func:`hidden`): the largest ``B`` of the run's
sizes such that every size up to it was measured, its batch path agreed with the
one-by-one path, and its p99 grammar time per step is within ``--step-ms``; 0 when not even
the smallest is; and the throughput that batch implies, ``B × 1000 / step_ms`` sequence
steps (tokens) per second.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from harness.suite import Record, RunMeta, Summary, figures
from harness.suite.report import Table, text_table
from suites.batch.records import (BatchHidden, BatchPointRow, BatchRecord, BatchSummary,
                                  BatchSummaryBlock)

__all__ = ["HEADER", "HIDDEN_HEADER", "headline_extra", "hidden", "point_rows", "summary_block"]

HEADER = ["engine", "workload", "B", "T", "schemas", "left out", "steps", "grammar p50 ms",
          "p99", "max",
          "fill p99", "commit p99", "slowest share", "speedup", "join µs", "joins/step",
          "grammar-bound tok/s", "checks", "method"]
HIDDEN_HEADER = ["engine", "workload", "T", "budget ms", "largest hidden B", "p99 ms at it",
                 "ceiling tok/s", "first B over", "p99 ms there"]
#: checks that say the batch API itself is wrong (the engine's own refusals are apart)
BATCH_PATH = ("batch_forbids", "batch_allows", "commit_mismatch")


def _batch_of(case_id: str) -> int | None:
    head = str(case_id).split("-")[0]
    return int(head[1:]) if head.startswith("B") and head[1:].isdigit() else None


def _q(a: np.ndarray, p: float) -> float:
    return float(np.percentile(a, p))


def point_rows(records: list[BatchRecord]) -> list[BatchPointRow]:
    """One row per (engine, workload, B, T) measured, and one per job that died or
    compiled nothing (``T`` None, its outcome in ``failed``); sorted."""
    out: list[BatchPointRow] = []
    for r in records:
        b = r.get("batch")
        if not b or not b.get("points"):
            bsize = b["batch"] if b else _batch_of(r.get("case_id", ""))
            if bsize is not None:
                out.append({"engine": r["engine"], "workload": (b or {}).get(
                    "workload", r.get("subset")), "batch": bsize, "threads": None,
                    "failed": r.get("outcome"), "error": r.get("error")})
            continue
        schemas = len(b.get("members") or ())
        left_out = (len(b.get("refused") or ()) + sum(len(m.get("rejected_instances") or ())
                                                     for m in b.get("members") or ()))
        for p in b["points"]:
            fill = np.asarray(p["fill_ns"], dtype=np.float64)
            commit = np.asarray(p["commit_ns"], dtype=np.float64)
            if not fill.size:
                continue
            g = (fill + commit) / 1e6
            ok = fill > 0
            share = np.asarray(p["slowest_ns"], np.float64)[ok] / fill[ok]
            speed = np.asarray(p["solo_ns"], np.float64)[ok] / fill[ok]
            joined = int(sum(p["joined"]))
            checks = dict(p["checks"])
            out.append({
                "engine": r["engine"], "workload": b["workload"], "batch": b["batch"],
                "threads": p["threads"], "steps": int(fill.size), "failed": None,
                "grammar_ms": {"p50": _q(g, 50), "p99": _q(g, 99), "max": float(g.max()),
                               "mean": float(g.mean())},
                "fill_p99_ms": _q(fill, 99) / 1e6, "commit_p99_ms": _q(commit, 99) / 1e6,
                "slowest_share": float(np.median(share)) if share.size else None,
                "speedup": float(np.median(speed)) if speed.size else None,
                "join_us": sum(p["join_ns"]) / joined / 1e3 if joined else None,
                "joins_per_step": joined / fill.size,
                "grammar_tok_s": b["batch"] / (float(g.mean()) / 1e3) if g.mean() > 0 else None,
                "checks": checks, "batch_path": sum(checks.get(k, 0) for k in BATCH_PATH),
                "method": p["method"], "commit_method": p.get("commit_method"),
                "oversubscribed": bool(p.get("oversubscribed")),
                "step_ms": b["step_ms"], "cores": b.get("cores"),
                "schemas": schemas, "left_out": left_out,
            })
    return sorted(out, key=lambda x: (x["engine"], x["workload"], x["batch"],
                                      -1 if x["threads"] is None else x["threads"]))


def _sizes(meta: RunMeta, rows: list[BatchPointRow]) -> list[int]:
    """The run's batch sizes: its configuration's, else those its records hold."""
    cfg = (meta.get("config") or {}).get("batch")
    if cfg:
        return sorted({int(x) for x in (cfg if isinstance(cfg, (list, tuple)) else [cfg])})
    return sorted({x["batch"] for x in rows})


def step_ms_of(meta: RunMeta, rows: list[BatchPointRow]) -> float:
    """The run's step budget, ms: its configuration's ``step_ms``, else its records'."""
    v = (meta.get("config") or {}).get("step_ms")
    if isinstance(v, (int, float)) and v > 0:
        return float(v)
    return next((x["step_ms"] for x in rows if x.get("step_ms")), 10.0)


def hidden(rows: list[BatchPointRow], sizes: list[int], step_ms: float) -> list[BatchHidden]:
    """Per (engine, workload, T): the largest batch size hidden in ``step_ms`` (see the
    module docstring), the p99 there, the ceiling it implies, and the first size that is
    not hidden (with its p99, or why: ``not measured``, ``timeout``…, ``batch path
    wrong``)."""
    by: dict[tuple[str, str, int], dict[int, BatchPointRow]] = defaultdict(dict)
    failed: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    for x in rows:
        if x["threads"] is None:
            failed[(x["engine"], x["workload"])][x["batch"]] = str(x["failed"])
        else:
            by[(x["engine"], x["workload"], x["threads"])][x["batch"]] = x
    out = []
    for (eng, wl, t), pts in sorted(by.items()):
        best, at, over, why = 0, None, None, None
        for b in sizes:
            x = pts.get(b)
            if x is None:
                over, why = b, failed[(eng, wl)].get(b, "not measured")
                break
            if x["batch_path"]:
                over, why = b, "batch path wrong"
                break
            if x["grammar_ms"]["p99"] > step_ms:
                over, why = b, x["grammar_ms"]["p99"]
                break
            best, at = b, x["grammar_ms"]["p99"]
        out.append({"engine": eng, "workload": wl, "threads": t, "step_ms": step_ms,
                    "largest": best, "p99_ms": at, "ceiling_tok_s": best * 1000.0 / step_ms,
                    "first_over": over, "over": why})
    # an engine with no point measured at all: one row that says why (no figure)
    measured = {(e, w) for e, w, _ in by}
    for (eng, wl), fails in sorted(failed.items()):
        if (eng, wl) not in measured:
            b = min(fails)
            out.append({"engine": eng, "workload": wl, "threads": None, "step_ms": step_ms,
                        "largest": None, "p99_ms": None, "ceiling_tok_s": None,
                        "first_over": b, "over": fails[b]})
    return out


def headline_extra(records: list[BatchRecord], meta: RunMeta) -> dict[str, Any]:
    """The verdict's own figures per engine, on the sample's mix: ``step_ms``,
    ``hidden_batch`` and ``hidden_tok_s`` by thread count (keys are the counts as text);
    an alert when a batch API disagreed with the one-by-one matchers."""
    rows = point_rows(records)
    step_ms = step_ms_of(meta, rows)
    out: dict[str, Any] = {}
    for h in hidden([x for x in rows if x["workload"] == "mix"], _sizes(meta, rows), step_ms):
        e = out.setdefault(h["engine"], {"step_ms": step_ms, "hidden_batch": {},
                                         "hidden_tok_s": {}, "alerts": []})
        if h["threads"] is None:  # nothing measured: no figure
            continue
        e["hidden_batch"][str(h["threads"])] = h["largest"]
        e["hidden_tok_s"][str(h["threads"])] = h["ceiling_tok_s"]
    for x in rows:
        if x["threads"] is not None and x["batch_path"]:
            e = out.setdefault(x["engine"], {"alerts": []})
            e["alerts"].append(
                f"BATCH PATH WRONG: {x['batch_path']} rows or commits of {x['method']} differ "
                f"from the sequences' own matchers (B={x['batch']}, T={x['threads']}, "
                f"{x['workload']})")
    return out


def table_rows(rows: list[BatchPointRow]) -> list[list[str]]:
    out = []
    for r in rows:
        if r["threads"] is None:
            out.append([r["engine"], r["workload"], str(r["batch"]), "–", "–", "–", "–",
                        *["–"] * 10,
                        str(r["failed"]), "–"])
            continue
        g = r["grammar_ms"]
        t = f"{r['threads']}" + ("*" if r["oversubscribed"] else "")
        checks = sum(r["checks"].values())
        out.append([r["engine"], r["workload"], str(r["batch"]), t, str(r["schemas"]),
                    str(r["left_out"]), str(r["steps"]),
                    *(figures.fixed(x, 3) for x in (g["p50"], g["p99"], g["max"],
                                                    r["fill_p99_ms"], r["commit_p99_ms"])),
                    figures.fixed(r["slowest_share"]), figures.fixed(r["speedup"]),
                    figures.fixed(r["join_us"], 1), figures.fixed(r["joins_per_step"]),
                    figures.fixed(r["grammar_tok_s"], 0),
                    str(checks) + (f" ({r['batch_path']} batch path)" if r["batch_path"] else ""),
                    r["method"]])
    return out


def hidden_rows(hs: list[BatchHidden]) -> list[list[str]]:
    return [[h["engine"], h["workload"], figures.fixed(h["threads"]),
             figures.fixed(h["step_ms"], 1), figures.fixed(h["largest"]),
             figures.fixed(h["p99_ms"], 3), figures.fixed(h["ceiling_tok_s"], 0),
             figures.fixed(h["first_over"]), figures.fixed(h["over"], 3)] for h in hs]


def summary_block(summary: BatchSummary, meta: RunMeta, records: list[BatchRecord],
                  run_dir: Path | None = None) -> str | None:
    """``summary["batch"]`` (``points``, ``hidden``, ``step_ms``, ``sizes``) and
    ``batch.json`` in the run folder; console text (None when the run holds no batch
    records). The plot is the report's."""
    rows = point_rows(records)
    if not rows:
        return None
    sizes, step_ms = _sizes(meta, rows), step_ms_of(meta, rows)
    hs = hidden(rows, sizes, step_ms)
    block: BatchSummaryBlock = {"points": rows, "hidden": hs, "step_ms": step_ms, "sizes": sizes,
             "step_source": (meta.get("config") or {}).get("step_source")}
    summary["batch"] = block
    if run_dir is not None:
        (Path(run_dir) / "batch.json").write_text(json.dumps(block, indent=2))
    return "\n".join([
        f"Largest batch whose p99 grammar time per step (fill + commit) stays within "
        f"{step_ms:g} ms, per engine and host threads",
        text_table(Table(HIDDEN_HEADER, hidden_rows(hs), align="l")), "",
        "Grammar time per step (ms) per batch size B and threads T (* more threads than "
        "cores)", text_table(Table(HEADER, table_rows(rows), align="l"))])

