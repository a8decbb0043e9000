"""The MaskBench-style comparison table: rows are metrics, columns are engines.

Built from ``summary.json``'s dict only, so the console, the Markdown report and tests
all show the same numbers.
"""

from __future__ import annotations

from typing import Any

from harness.analysis import rejects
from harness.analysis.metrics import TBM_PERCENTILES, TTFM_PERCENTILES, _pct_key
from harness.measure import outcomes
from harness.measure.figures import fraction, number, percent, show
from harness.records import EngineHeadline, Headline, Summary
from harness.report.model import Table
from harness.report.text import text_table


def verdict_header(hl: Headline) -> list[str]:
    units = hl.get("units", "schemas")
    return ["engine", f"coverage ({units} compiled, finished)",
            f"soundness ({units} accepting invalid)", "strictness (valid instances rejected)",
            "TBM p50 / p99 µs", "masks > 1 ms", "TTFM p50 / p90 ms"]


def verdict_cells(e: EngineHeadline) -> list[str]:
    """The verdict row of one engine of the headline (without its label)."""
    if e.get("status") == "not_run":
        return [f"not run: {e.get('reason') or ''}", "", "", "", "", ""]
    vr = e.get("valid_rejected")
    t, f = e.get("tbm_us"), e.get("ttfm_ms")
    return [fraction(e["finished"], e["n"]), number(e["accepts_invalid"]),
            fraction(vr["n"], vr["of"]) if vr else "–",
            f"{show(t, 'p50')} / {show(t, 'p99')}" if t else "–",
            percent(t["over_1ms_share"], 2) if t else "–",
            f"{show(f, 'p50', 'ms')} / {show(f, 'p90', 'ms')}" if f else "–"]


def verdict_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the verdict block: one row per engine, what it covers, how sound
    and how strict it is, and what it costs; all from ``summary["headline"]``."""
    hl = summary["headline"]
    return verdict_header(hl), [[label, *verdict_cells(e)] for label, e in hl["engines"].items()]


def verdict_alerts(summary: Summary) -> list[str]:
    """The headline's alert lines, each naming its engine row (e.g. ``vllm:xgrammar: NOT
    ENFORCED: …``)."""
    return [f"{label}: {a}" for label, e in summary["headline"]["engines"].items()
            for a in e.get("alerts") or ()]


def verdict_note(summary: Summary) -> str:
    """What the verdict counts and what it is judged by, in one sentence."""
    hl = summary["headline"]
    split = (" over the instances where jsonschema and the corpus label agree (the others "
             "are counted apart)" if hl.get("label_split") else "")
    return (f"unit: {hl.get('unit', 'schema')}; truth: {hl.get('truth')}{split}. Coverage: "
            f"{hl.get('units', 'schemas')} compiled and finished within the limits; soundness: "
            f"{hl.get('units', 'schemas')} with something invalid accepted; strictness: valid "
            f"instances rejected on the primary serialisation ({hl.get('primary')}); "
            "a TTFM at or past the time limit shows as ≥ the limit.")


def rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
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

    units = summary["headline"].get("units", "schemas")
    row(units, lambda e: number(e["schemas"]))
    names = {outcomes.PASSING: "passing", outcomes.COMPILE_ERROR: "compile error",
             outcomes.TIMEOUT: "timeout", outcomes.OOM: "OOM", outcomes.CRASH: "crash",
             outcomes.VALIDATION_ERROR: f"validation error ({units})",
             outcomes.INVALIDATION_ERROR: f"invalidation error ({units})",
             outcomes.BAD_INPUT: "bad input (corpus file)"}
    for key, name in names.items():
        if key == outcomes.BAD_INPUT and not any(
                e.get("outcomes", {}).get(key) for e in engines.values()):
            continue
        row(name, lambda e, k=key: number(e["outcomes"][k]))
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
        row(f"  {units} whose outcome the labels change",
            lambda e: number(len(e.get("label_outcome_changes", ()))))
        row("  validation / invalidation error, jsonschema on every instance",
            lambda e: (f"{e['outcomes_all'][outcomes.VALIDATION_ERROR]:,} / "
                       f"{e['outcomes_all'][outcomes.INVALIDATION_ERROR]:,}"))
    if any("escapes_change_verdict" in e for e in engines.values()):
        row(f"escapes change the verdict ({units})",
            lambda e: number(len(e.get("escapes_change_verdict", ()))))
    row("valid prefix, EOS refused", lambda e: number(e["eos_refused_valid"]))
    row("mask/commit disagreements", lambda e: number(e["mask_commit_disagreements"]))
    row("TBM avg (µs)", lambda e: number(e["tbm_us"].get("avg")))
    for p in TBM_PERCENTILES:
        row(f"TBM {_pct_key(p)}", lambda e, p=p: number(e["tbm_us"].get(_pct_key(p))))
    row("TBM max", lambda e: number(e["tbm_us"].get("max")))
    row("masks > 1 ms", lambda e: percent(e["tbm_us"].get("over_1ms_share"), 2))
    for p in TTFM_PERCENTILES:
        row(f"TTFM {_pct_key(p)} (ms)", lambda e, p=p: show(e["ttfm_ms"], _pct_key(p), "ms"))
    row("TTFM max (ms)", lambda e: show(e["ttfm_ms"], "max", "ms"))
    if any((e.get("ttfm_ms") or {}).get("censored") for e in engines.values()):
        row("TTFM censored (timed out before the first mask)",
            lambda e: number((e.get("ttfm_ms") or {}).get("censored", 0)))
    row("tokens", lambda e: number(e["tokens"]))
    row("wall time (s)", lambda e: number(e["wall_s"]))
    row("version", lambda e: number(e.get("version")))
    return header, out


def render_verdict(summary: Summary) -> str:
    """The verdict block: one row per engine, the headline's alerts, what it counts."""
    return "\n".join(["verdict", text_table(Table(*verdict_rows(summary)), rule=True),
                      *verdict_alerts(summary), verdict_note(summary)])


def render_table(summary: Summary) -> str:
    """The whole replay table (suites whose records hold token replays)."""
    primary = summary["primary_serialization"]
    units = summary["headline"].get("units", "schemas")
    split = ("; outcomes and false rejects / accepts count the instances where jsonschema "
             "and the corpus label agree (the others are shown apart)"
             if summary["headline"].get("label_split") else "")
    note = f"* primary serialisation ({primary}): the outcomes of {units} and TBM come from it{split}"
    return text_table(Table(*rows(summary), note=note), rule=True)


def render_text(summary: Summary) -> str:
    """The console output: the verdict block, then (for a suite whose records hold token
    replays) the whole table."""
    if not summary["headline"].get("replay_table", True):
        return render_verdict(summary)
    return render_verdict(summary) + "\n\n" + render_table(summary)

