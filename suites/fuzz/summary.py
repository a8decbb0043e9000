"""summary.json block of the ``fuzz`` suite, from records alone.

Per engine (``summary["engines"][label]["fuzz"]``): ``schemas``, ``walks`` and per status
(``valid``, ``invalid``, ``undecided``, ``dialect``, ``dead_end``, ``runaway``,
``commit_refused``, ``error``); ``schemas_invalid``; ``runaway_ws_share`` (mean share of
whitespace-only tokens in runaways).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from harness.suite import RunMeta, Summary
from suites.fuzz.records import FuzzEngineBlock, FuzzRecord


def fuzz_block(recs: list[FuzzRecord]) -> FuzzEngineBlock:
    c: Counter = Counter()
    ws: list[float] = []
    for r in recs:
        walks = r["fuzz"]["walks"]
        c["schemas"] += 1
        c["schemas_invalid"] += any(w["status"] == "invalid" for w in walks)
        for w in walks:
            c["walks"] += 1
            c[w["status"]] += 1
            if "ws_share" in w:
                ws.append(w["ws_share"])
    keys = ("schemas", "walks", "valid", "invalid", "undecided", "dialect", "dead_end",
            "runaway", "commit_refused", "error", "schemas_invalid")
    out: FuzzEngineBlock = {k: int(c[k]) for k in keys}
    out["runaway_ws_share"] = round(float(np.mean(ws)), 3) if ws else None
    return out


def summary_block(summary: Summary, meta: RunMeta, records: list[FuzzRecord],
                  run_dir: Any = None) -> str | None:
    """Add ``fuzz`` to each engine of ``summary`` (in place); return console text, or None
    when the run holds no walks."""
    fz = [r for r in records if r.get("fuzz")]
    if not fz:
        return None
    for label, e in summary.get("engines", {}).items():
        f = [r for r in fz if r["engine"] == label]
        if f:
            e["fuzz"] = fuzz_block(f)
    return render_text(summary)


def render_text(summary: Summary) -> str:
    """Console table: one row per engine."""
    lines = []
    engines = summary.get("engines", {})
    fz = {l: e["fuzz"] for l, e in engines.items() if "fuzz" in e}
    if fz:
        lines.append("fuzz (seeded walks under each engine's mask):")
        lines.append(f"  {'engine':<22} {'walks':>6} {'valid':>6} {'invalid':>7} {'dead end':>8} "
                     f"{'runaway':>7} {'other':>6} {'schemas invalid':>15}")
        for l, f in fz.items():
            other = f["undecided"] + f.get("dialect", 0) + f["commit_refused"] + f["error"]
            lines.append(f"  {l:<22} {f['walks']:>6} {f['valid']:>6} {f['invalid']:>7} "
                         f"{f['dead_end']:>8} {f['runaway']:>7} {other:>6} {f['schemas_invalid']:>15}")
    return "\n".join(lines)
