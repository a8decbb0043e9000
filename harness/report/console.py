"""The MaskBench-style comparison table: rows are metrics, columns are engines.

Built from ``summary.json``'s dict only, so the console, the Markdown report and tests
all show the same numbers.
"""

from __future__ import annotations

from typing import Any

from harness.measure import outcomes
from harness.analysis.metrics import TBM_PERCENTILES, TTFM_PERCENTILES, _pct_key


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if abs(v) >= 100:
            return f"{v:,.0f}"
        return f"{v:,.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the table."""
    engines = summary["engines"]
    labels = list(engines)
    header = ["metric", *labels]
    out: list[list[str]] = []

    def row(name: str, fn) -> None:
        cells = []
        for lb in labels:
            e = engines[lb]
            cells.append("not run" if e.get("status") == "not_run" else fn(e))
        out.append([name, *cells])

    row("version", lambda e: _fmt(e.get("version")))
    row("schemas", lambda e: _fmt(e["schemas"]))
    names = {outcomes.PASSING: "passing", outcomes.COMPILE_ERROR: "compile error",
             outcomes.TIMEOUT: "timeout", outcomes.OOM: "OOM", outcomes.CRASH: "crash",
             outcomes.VALIDATION_ERROR: "validation error (schemas)",
             outcomes.INVALIDATION_ERROR: "invalidation error (schemas)",
             outcomes.BAD_INPUT: "bad input (corpus file)"}
    for key, name in names.items():
        if key == outcomes.BAD_INPUT and not any(
                e.get("outcomes", {}).get(key) for e in engines.values()):
            continue
        row(name, lambda e, k=key: _fmt(e["outcomes"][k]))
    for ser in summary["serializations"]:
        tag = " *" if ser == summary["primary_serialization"] else ""
        row(f"false rejects / valid [{ser}]{tag}",
            lambda e, s=ser: f"{e['false_rejects'][s]:,} / {e['valid_instances'][s]:,}")
        row(f"false accepts / invalid [{ser}]{tag}",
            lambda e, s=ser: f"{e['false_accepts'][s]:,} / {e['invalid_instances'][s]:,}")
    row("valid prefix, EOS refused", lambda e: _fmt(e["eos_refused_valid"]))
    row("mask/commit disagreements", lambda e: _fmt(e["mask_commit_disagreements"]))
    row("TBM avg (µs)", lambda e: _fmt(e["tbm_us"].get("avg")))
    for p in TBM_PERCENTILES:
        row(f"TBM {_pct_key(p)}", lambda e, p=p: _fmt(e["tbm_us"].get(_pct_key(p))))
    row("TBM max", lambda e: _fmt(e["tbm_us"].get("max")))
    row("masks > 1 ms", lambda e: (f"{100 * e['tbm_us']['over_1ms_share']:.2f}%"
                                   if "over_1ms_share" in e["tbm_us"] else "–"))
    for p in TTFM_PERCENTILES:
        row(f"TTFM {_pct_key(p)} (ms)", lambda e, p=p: _fmt(e["ttfm_ms"].get(_pct_key(p))))
    row("TTFM max (ms)", lambda e: _fmt(e["ttfm_ms"].get("max")))
    row("tokens", lambda e: _fmt(e["tokens"]))
    row("wall time (s)", lambda e: _fmt(e["wall_s"]))
    return header, out


def render_text(summary: dict[str, Any]) -> str:
    header, body = rows(summary)
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = []
    for j, r in enumerate([header, *body]):
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    note = (f"* primary serialisation ({summary['primary_serialization']}): schema outcomes "
            "and TBM come from it")
    return "\n".join(lines + [note])


def render_markdown(summary: dict[str, Any]) -> str:
    header, body = rows(summary)
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |",
             "|:--|" + "--:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in body]
    return "\n".join(lines)
