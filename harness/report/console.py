"""The MaskBench-style comparison table: rows are metrics, columns are engines.

Built from ``summary.json``'s dict only, so the console, the Markdown report and tests
all show the same numbers.
"""

from __future__ import annotations

from typing import Any

from harness.measure import outcomes
from harness.analysis import rejects
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


def _pct(n: int, of: int) -> str:
    return f"{n:,}/{of:,} ({100 * n / of:.1f}%)" if of else "–"


def confirmed_false_accepts(e: dict[str, Any]) -> int | None:
    """Schemas with a false accept confirmed token by token (mask-diff witnesses or fuzz
    outputs judged invalid), or None when neither ran."""
    found = [e[k][f] for k, f in (("mask_diff", "schemas_false_accept"), ("fuzz", "schemas_invalid"))
             if isinstance(e.get(k), dict) and f in e[k]]
    return max(found) if found else None


def verdict_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the verdict block: one row per engine, what it covers, how sound
    and how strict it is, and what it costs."""
    header = ["engine", "coverage (compiled, finished)", "soundness (schemas accepting invalid)",
              "strictness (valid rejected)", "TBM p50 / p99 µs", "masks > 1 ms",
              "TTFM p50 / p90 ms"]
    primary = summary["primary_serialization"]
    out = []
    for label, e in summary["engines"].items():
        if e.get("status") == "not_run":
            out.append([label, f"not run: {e.get('reason') or ''}", "", "", "", "", ""])
            continue
        oc = e["outcomes"]
        finished = sum(oc.get(k, 0) for k in (outcomes.PASSING, outcomes.VALIDATION_ERROR,
                                               outcomes.INVALIDATION_ERROR))
        sound = _fmt(e.get("false_accept_schemas", oc.get(outcomes.INVALIDATION_ERROR)))
        confirmed = confirmed_false_accepts(e)
        if confirmed is not None:
            sound += f" ({confirmed:,} confirmed)"
        ser = primary if primary in e["false_rejects"] else next(iter(e["false_rejects"]), None)
        strict = (_pct(e["false_rejects"][ser], e["valid_instances"][ser]) if ser else "–")
        t, f = e.get("tbm_us", {}), e.get("ttfm_ms", {})
        out.append([label, _pct(finished, e["schemas"] - oc.get(outcomes.BAD_INPUT, 0)), sound,
                    strict, f"{_fmt(t.get('p50'))} / {_fmt(t.get('p99'))}",
                    f"{100 * t['over_1ms_share']:.2f}%" if "over_1ms_share" in t else "–",
                    f"{_fmt(f.get('p50'))} / {_fmt(f.get('p90'))}"])
    return header, out


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
    primary = summary["primary_serialization"]
    if any("false_reject_kinds" in e for e in engines.values()):  # harness.analysis.rejects
        row("  false rejects: cannot write / tokenisation refused / undecided",
            lambda e: rejects.counts_cell(e.get("false_reject_kinds")))
    if any("false_rejects_label_disagrees" in e for e in engines.values()):
        row(f"  label disagrees: false rejects / valid [{primary}]",
            lambda e: (f"{e['false_rejects_label_disagrees'].get(primary, 0):,} / "
                       f"{e['valid_instances_label_disagrees'].get(primary, 0):,}"))
        row(f"  label disagrees: false accepts / invalid [{primary}]",
            lambda e: (f"{e['false_accepts_label_disagrees'].get(primary, 0):,} / "
                       f"{e['invalid_instances_label_disagrees'].get(primary, 0):,}"))
        row("  schemas whose outcome the labels change",
            lambda e: _fmt(len(e.get("label_outcome_changes", ()))))
        row("  validation / invalidation error, jsonschema on every instance",
            lambda e: (f"{e['outcomes_all'][outcomes.VALIDATION_ERROR]:,} / "
                       f"{e['outcomes_all'][outcomes.INVALIDATION_ERROR]:,}"))
    if any("escapes_change_verdict" in e for e in engines.values()):
        row("escapes change the verdict (schemas)",
            lambda e: _fmt(len(e.get("escapes_change_verdict", ()))))
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
    row("version", lambda e: _fmt(e.get("version")))
    return header, out


def _text_table(header: list[str], body: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = []
    for j, r in enumerate([header, *body]):
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def render_text(summary: dict[str, Any]) -> str:
    """The console output: the verdict block, then the whole table."""
    primary = summary["primary_serialization"]
    verdict = _text_table(*verdict_rows(summary))
    note = (f"* primary serialisation ({primary}): schema outcomes and TBM come from it; "
            "outcomes and false rejects / accepts count the instances where jsonschema and "
            "the corpus label agree (the others are shown apart)")
    return "\n".join(["verdict", *verdict, "", *_text_table(*rows(summary)), note])


def render_markdown(summary: dict[str, Any]) -> str:
    header, body = rows(summary)
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |",
             "|:--|" + "--:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in body]
    return "\n".join(lines)
