"""The adversarial suite's analysis: each case's class (measured, compile error, timeout,
OOM, crash) per engine, and the ``adversarial`` block of summary.json."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from harness.suite import outcomes
from harness.suite import Record, RunMeta
from suites.adversarial.records import AdversarialSummary

SUITE = "adversarial"
MEASURED = "measured"
CLASSES = (MEASURED, outcomes.COMPILE_ERROR, outcomes.TIMEOUT, outcomes.OOM, outcomes.CRASH,
           outcomes.BAD_INPUT)
_MEASURED_OUTCOMES = (outcomes.PASSING, outcomes.VALIDATION_ERROR, outcomes.INVALIDATION_ERROR)


def case_class(outcome: str) -> str:
    """``measured`` for an outcome with measurements, else the outcome itself."""
    return MEASURED if outcome in _MEASURED_OUTCOMES else outcome


def _case_points(meta: RunMeta) -> dict[str, tuple[str, int, str]]:
    cases = (meta.get("suite") or {}).get("cases") or {}
    return {cid: (v[0], int(v[1]), str(v[2])) for cid, v in cases.items()}


def _point(cid: str, known: dict[str, tuple[str, int, str]]) -> tuple[str, int, str]:
    if cid in known:
        return known[cid]
    fam, _, size = cid.partition("/")
    return fam, int(size) if size.isdigit() else 0, ""


def mask_p50_us(record: Record, primary: str) -> float | None:
    """Median mask-fill time (µs) over every token step of the record's primary-
    serialisation replays; None when nothing was replayed."""
    steps = [ns for inst in record.get("instances") or ()
             for ns in ((inst.get("results") or {}).get(primary) or {}).get("mask_ns", ())]
    return float(np.median(steps)) / 1000.0 if steps else None


def rows_from(meta: RunMeta, records: list[Record]) -> list[dict[str, Any]]:
    """One row per adversarial (engine, case): family, size, unit, outcome, class,
    TTFM in ms (compile + matcher + first mask; None when it never got a first mask),
    median mask time in µs, the error line."""
    primary = (meta.get("config") or {}).get("primary", "ascii")
    known = _case_points(meta)
    out = []
    for r in records:
        if r.get("suite", SUITE if r["case_id"] in known else None) != SUITE:
            continue
        fam, size, unit = _point(r["case_id"], known)
        ttfm = r.get("ttfm_ns")
        out.append({
            "engine": r["engine"], "case": r["case_id"], "family": fam, "size": size,
            "unit": unit, "outcome": r["outcome"], "class": case_class(r["outcome"]),
            "ttfm_ms": ttfm / 1e6 if ttfm is not None else None,
            "mask_p50_us": mask_p50_us(r, primary), "error": r.get("error"),
        })
    return out


def class_counts(records_rows: list[dict[str, Any]]) -> dict[str, Counter]:
    """engine → Counter of cases per class."""
    out: dict[str, Counter] = {}
    for r in records_rows:
        out.setdefault(r["engine"], Counter())[r["class"]] += 1
    return out


def extend(summary: AdversarialSummary, meta: RunMeta, records: list[Record],
           run_dir: Any = None) -> str | None:
    """Add ``summary["adversarial"]`` = ``{engine: {class: cases}}`` when the run holds
    adversarial cases, and return the same as console text; else None."""
    data = rows_from(meta, records)
    if not data:
        return None
    counts = class_counts(data)
    summary["adversarial"] = {e: {c: c_n.get(c, 0) for c in CLASSES} for e, c_n in counts.items()}
    width = max(len(e) for e in counts) + 2
    lines = ["adversarial cases per class:",
             f"{'engine':<{width}}" + "".join(f"{c.replace('_', ' '):>15}" for c in CLASSES)]
    for e, c_n in counts.items():
        lines.append(f"{e:<{width}}" + "".join(f"{c_n.get(c, 0):>15}" for c in CLASSES))
    return "\n".join(lines)
