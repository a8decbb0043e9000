"""The sections every report has: metadata, engines, results, subsets, latency, slow masks,
unfinished schemas, and the comparison of several runs."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np

from harness.analysis import metrics
from harness.analysis.verdict import unit_outcomes
from harness.measure.figures import number, show
from harness.measure import outcomes
from harness.report import console as table
from harness.report.model import (Block, Bullets, Fields, Figure, Para, ReportContext, RunData,
                                  Section, Table, merged_summary, run_cache)
from harness.report.plots import (OUTCOME_COLORS, _cdf_figure, _styles, figure_png,
                                  pyplot, tbm_us, ttfm_ms)
from harness.report.text import plot_text, ratio, short
from harness.records import Record, Summary

def _engine_line(e: dict[str, Any]) -> str:
    state = "" if e.get("status") == "run" else f" — not run: {e.get('reason')}"
    opts = json.dumps(e.get("options"), sort_keys=True) if e.get("options") else "{}"
    return f"{e['engine']} {e.get('version') or '?'} {opts}{state}"


def suite_line(cfg: dict[str, Any], suite: dict[str, Any], units: str) -> str:
    """``SUITE: N CASES[ of M on disk][ (the selection given)]``: only what the run knows."""
    text = f"{cfg.get('suite')}: {suite.get('selected', '?')} {units}"
    if suite.get("files_on_disk") is not None:
        text += f" of {suite['files_on_disk']} on disk"
    given = [f"{k}={', '.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
             for k, v in (("sample", cfg.get("sample")), ("subsets", cfg.get("subsets")),
                          ("schemas", cfg.get("schemas"))) if v is not None]
    return text + (f" ({'; '.join(given)})" if given else "")


def sec_metadata(ctx: ReportContext) -> Section:
    def fields(run: RunData) -> list[tuple[str, str]]:
        meta, cfg = run.meta, run.meta.get("config", {})
        suite = meta.get("suite", {})
        mach = meta.get("machine", {})
        tok = meta.get("tokenizer", {})
        lim = meta.get("limits", {})
        cmd = meta.get("command") or []
        return [
            ("run", run.run_id),
            ("folder", str(run.path)),
            ("suite", suite_line(cfg, suite, run.summary["headline"].get("units", "cases"))),
            ("engines", "; ".join(_engine_line(e) for e in meta.get("engines", []))),
            ("tokenizer", f"{tok.get('name')} ({number(tok.get('size'))} ids)"),
            ("limits", f"{number(lim.get('timeout_s', cfg.get('timeout_s')))} s and "
                       f"{lim.get('memory_gib', cfg.get('memory_gib'))} GiB per job, "
                       f"{lim.get('jobs', cfg.get('jobs'))} worker(s), engine threads "
                       f"{lim.get('engine_threads', 1)}"),
            ("serialisations", f"{', '.join(cfg.get('serializations', []))}; outcomes and TBM "
                               f"from {cfg.get('primary')}; EOS required after the last token"),
            ("machine", f"{mach.get('cpu_model', mach.get('processor'))}, {mach.get('cpus')} CPUs, "
                        f"{number(round(mach['mem_total_kib'] / 2**20, 1)) if mach.get('mem_total_kib') else '?'} GiB; "
                        f"{mach.get('platform')}; Python {mach.get('python')}"),
            ("commit", str(meta.get("git_commit"))),
            ("command", " ".join(str(c) for c in cmd)),
            ("records", f"{len(run.records):,} jobs; wall {number(run.summary.get('wall_s'))} s; "
                        f"parallel efficiency {run.summary.get('parallel_efficiency')}"),
        ]

    if not ctx.multi:
        return Section("Run", [Fields(fields(ctx.runs[0]))])
    per_run = [fields(r) for r in ctx.runs]
    rows = [[key] + [f[i][1] for f in per_run] for i, (key, _) in enumerate(per_run[0])]
    return Section("Runs", [
        Para("Runs side by side; the first (A) is the reference the diff section compares "
             "the others with."),
        Table(["field", *[f"{r.key}" for r in ctx.runs]], rows, align=["l"] * (len(ctx.runs) + 1)),
    ])


def sec_engines(ctx: ReportContext) -> Section:
    rows = []
    for run in ctx.runs:
        for e in run.meta.get("engines", []):
            state = "ran" if e.get("status") == "run" else f"not run: {e.get('reason')}"
            rows.append([ctx.col(run, e["engine"]), str(e.get("version") or "?"),
                         json.dumps(e.get("options") or {}, sort_keys=True), state])
    return Section("Engines", [Table(["engine", "version", "options", "status"], rows,
                                     align=["l", "l", "l", "l"])])


def sec_verdict(ctx: ReportContext) -> Section:
    """One row per engine (and run): coverage, soundness, strictness and cost, the
    headline's alerts, then the trade-off plot; all from ``summary["headline"]``."""
    summary = merged_summary(ctx)
    header, body = table.verdict_rows(summary)
    blocks: list[Block] = []
    alerts = table.verdict_alerts(summary)
    if alerts:
        blocks.append(Bullets(alerts))
    blocks.append(Table(header, body, note=table.verdict_note(summary)))
    fig = _tradeoff_figure(summary)
    if fig:
        blocks.append(fig)
    return Section("Verdict", blocks)


def _tradeoff_figure(summary: Summary) -> Figure | None:
    """Coverage against soundness, one marker per engine sized by its TBM p99 (suites whose
    records hold token replays)."""
    hl = summary["headline"]
    if not hl.get("replay_table", True):
        return None
    pts = []
    for label, e in hl["engines"].items():
        if e.get("status") == "not_run" or not e.get("n"):
            continue
        pts.append((label, 100.0 * e["finished"] / e["n"], e["accepts_invalid"],
                    (e.get("tbm_us") or {}).get("p99") or 0.0))
    if not pts:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    top = max(p[3] for p in pts) or 1.0
    # names go in a legend, never beside the markers: engines with close coverage and
    # soundness would write over each other (and past the axes)
    for label, cov, fa, p99 in pts:
        ax.scatter([cov], [fa], s=60 + 900 * p99 / top, alpha=0.6,
                   label=plot_text(f"{label} (TBM p99 {number(p99)} µs)"))
    leg = ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16),
                    ncol=2 if len(pts) > 3 else 1, markerscale=1.0)
    for h in getattr(leg, "legend_handles", None) or leg.legendHandles:
        h.set_sizes([40])
    units = hl.get("units", "schemas")
    ax.set_xlim(-5, 105)
    top_fa = max(p[2] for p in pts)
    ax.set_ylim(-0.6, max(1, top_fa) * 1.25 + 0.6)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel(f"coverage: {units} compiled and finished (%)")
    ax.set_ylabel(f"{units} with an invalid instance accepted")
    ax.set_title("Coverage, soundness and mask latency (marker size: TBM p99)")
    ax.grid(alpha=0.3)
    return figure_png(fig, "tradeoff.png", "Right and low is better; a smaller marker has "
                      "faster worst-case masks.", bbox_inches="tight")


def sec_caveats(ctx: ReportContext, limit: int = 200) -> Section | None:
    """Where a verdict depends on the serialisation (escapes change the verdict) or on the
    corpus label (it disagrees with jsonschema): counted in the results apart from the
    headline, listed here."""
    flips, labels = [], []
    for run in ctx.runs:
        for eng, e in run.summary["engines"].items():
            for f in e.get("escapes_change_verdict", ()):
                flips.append([ctx.col(run, eng), f["case_id"],
                              ", ".join(f"{s}: {o}" for s, o in f["outcomes"].items())])
            for reason, n in (e.get("label_disagreement_reasons") or {}).items():
                changed = len(e.get("label_outcome_changes", ()))
                labels.append([ctx.col(run, eng), reason, f"{n:,}", f"{changed:,}"])
    if not flips and not labels:
        return None
    blocks: list[Block] = []
    if flips:
        blocks.append(Para(f"Escapes change the verdict: {len(flips):,} (engine, schema) pairs "
                           "whose outcome differs between serialisations"
                           + (f" (the first {limit} listed)" if len(flips) > limit else "") + "."))
        blocks.append(Table(["engine", "schema", "outcome per serialisation"], flips[:limit],
                            align=["l", "l", "l"]))
    if labels:
        blocks.append(Para("The corpus label disagrees with jsonschema: these instances are "
                           "counted apart from the headline (the gate judges by jsonschema)."))
        blocks.append(Table(["engine", "reason", "instances (primary)",
                             "schemas whose outcome the labels change"], labels,
                            align=["l", "l", "r", "r"]))
    return Section("Serialisations and labels", blocks)


def sec_results(ctx: ReportContext) -> Section | None:
    summary = merged_summary(ctx)
    if not summary["headline"].get("replay_table", True):
        return None  # the suite's own section holds its figures
    header, body = table.rows(summary)
    blocks: list[Block] = [Table(header, body, note=(
        f"* primary serialisation ({summary['primary_serialization']}): the outcomes of "
        f"{summary['headline'].get('units', 'schemas')} and TBM come from it. TBM in µs, "
        "TTFM in ms."))]
    prim = {r.summary["primary_serialization"] for r in ctx.runs}
    if len(prim) > 1:
        blocks.append(Para(f"Warning: the runs use different primary serialisations ({', '.join(sorted(prim))}); "
                           "their outcomes are not directly comparable."))
    fig = _outcome_bars(ctx)
    if fig:
        blocks.append(fig)
    return Section("Results", blocks)


def _outcome_bars(ctx: ReportContext) -> Figure | None:
    labels, counts = [], []
    for eng in ctx.engines():
        for run in ctx.runs:
            e = run.summary["headline"]["engines"].get(eng)
            if e and e.get("status") == "run":
                labels.append(ctx.col(run, eng))
                counts.append(e["outcomes"])
    if not labels or not any(sum(c.values()) for c in counts):
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 1.0 + 0.4 * len(labels)))
    y = np.arange(len(labels))[::-1]
    left = np.zeros(len(labels))
    for oc in outcomes.OUTCOMES:
        vals = np.array([c.get(oc, 0) for c in counts], dtype=float)
        if vals.any():
            ax.barh(y, vals, left=left, color=OUTCOME_COLORS[oc], label=oc)
            left += vals
    ax.set_yticks(y, [plot_text(lb) for lb in labels])
    ax.set_xlabel(ctx.runs[0].summary["headline"].get("units", "schemas"))
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.25))
    ax.set_title("Outcomes per engine")
    return figure_png(fig, "outcomes.png", "Units of the verdict per outcome, per engine.",
                      bbox_inches="tight")


def _subset_counts(run: RunData):
    """Units per (subset, engine) and outcome, as the headline counts them."""
    heads = unit_outcomes(run.meta, run.records, suite=run.suite)
    sdf = metrics.schema_frame([r for r in run.records if (r["engine"], r["case_id"]) in heads])
    if not len(sdf):
        return None
    sdf["outcome"] = [heads[(e, c)] for e, c in zip(sdf["engine"], sdf["case_id"])]
    sdf["subset"] = sdf["subset"].fillna("?").astype(str)
    return sdf.pivot_table(index=["subset", "engine"], columns="outcome", values="case_id",
                           aggfunc="count", fill_value=0)


def sec_subsets(ctx: ReportContext) -> Section | None:
    per_run = [(run, _subset_counts(run)) for run in ctx.runs]
    per_run = [(r, ct) for r, ct in per_run if ct is not None]
    if not per_run:
        return None
    units = ctx.runs[0].summary["headline"].get("units", "schemas")
    cols = [o for o in outcomes.OUTCOMES if any(o in ct.columns for _, ct in per_run)]
    keys: dict[tuple[str, str], dict[str, list[int]]] = {}
    for run, ct in per_run:
        for (subset, engine), row in ct.iterrows():
            keys.setdefault((subset, engine), {})[run.key] = [int(row.get(c, 0)) for c in cols]
    rows = []
    engine_order = {e: i for i, e in enumerate(ctx.engines())}
    for (subset, engine) in sorted(keys, key=lambda k: (k[0], engine_order.get(k[1], 99), k[1])):
        for run, _ in per_run:
            vals = keys[(subset, engine)].get(run.key)
            if vals is None:
                continue
            total = sum(vals)
            passing = vals[cols.index(outcomes.PASSING)] if outcomes.PASSING in cols else 0
            rows.append([subset, ctx.col(run, engine), *map(str, vals), str(total),
                         f"{100 * passing / total:.0f}%" if total else "–"])
    # compact: passing / schemas per subset, one column per engine (and run)
    columns = [(run, eng) for eng in ctx.engines() for run, _ in per_run]
    compact = []
    for subset in sorted({k[0] for k in keys}):
        cells = []
        for run, eng in columns:
            vals = keys.get((subset, eng), {}).get(run.key)
            if vals is None:
                cells.append("–")
                continue
            total = sum(vals)
            passing = vals[cols.index(outcomes.PASSING)] if outcomes.PASSING in cols else 0
            cells.append(f"{passing}/{total} ({100 * passing / total:.0f}%)" if total else "–")
        compact.append([subset, *cells])
    blocks: list[Block] = [
        Para(f"Passing {units} / {units} per subset:"),
        Table(["subset", *[ctx.col(run, eng) for run, eng in columns]], compact),
        Para("Every outcome per subset:"),
        Table(["subset", "engine", *cols, units, "passing %"], rows,
              align=["l", "l"] + ["r"] * (len(cols) + 2)),
    ]
    fig = _subset_bars(ctx, per_run, cols, units)
    if fig:
        blocks.append(fig)
    return Section("Outcomes per subset", blocks)


def _subset_bars(ctx: ReportContext, per_run, cols, units: str) -> Figure | None:
    panels = []
    for eng in ctx.engines():
        for run, ct in per_run:
            sub = ct.xs(eng, level="engine") if eng in ct.index.get_level_values("engine") else None
            if sub is not None and len(sub):
                panels.append((ctx.col(run, eng), sub))
    if not panels:
        return None
    subsets = sorted({s for _, sub in panels for s in sub.index})
    plt = pyplot()
    ncol = min(len(panels), 4)
    nrow = -(-len(panels) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol + 1.5, 0.8 + nrow * (0.6 + 0.22 * len(subsets))),
                             sharey=True, squeeze=False)
    y = np.arange(len(subsets))[::-1]
    for k, (label, sub) in enumerate(panels):
        ax = axes[k // ncol][k % ncol]
        sub = sub.reindex(subsets, fill_value=0)
        total = sub.sum(axis=1).replace(0, 1).to_numpy(float)
        left = np.zeros(len(subsets))
        for oc in cols:
            if oc not in sub.columns:
                continue
            share = 100 * sub[oc].to_numpy(float) / total
            ax.barh(y, share, left=left, color=OUTCOME_COLORS[oc], label=oc)
            left += share
        ax.set_title(plot_text(label), fontsize=9)
        ax.set_xlim(0, 100)
        ax.set_xlabel(f"% of {units}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_yticks(y, [plot_text(short(s, 40)) for s in subsets])
    for k in range(len(panels), nrow * ncol):
        axes[k // ncol][k % ncol].axis("off")
    handles = [plt.Rectangle((0, 0), 1, 1, color=OUTCOME_COLORS[o]) for o in cols]
    fig.legend(handles, cols, loc="lower center", ncol=min(len(cols), 4), fontsize=7,
               bbox_to_anchor=(0.5, -0.02))
    fig.suptitle(f"Outcomes per subset (share of the subset's {units})", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.97))
    return figure_png(fig, "subsets.png", "Outcome shares per subset, one panel per engine.",
                      bbox_inches="tight")


def sec_latency(ctx: ReportContext) -> Section | None:
    styles = _styles(ctx)
    tbm_series, ttfm_series = [], []
    for eng in ctx.engines():
        for run in ctx.runs:
            t = run_cache(run, "tbm", tbm_us).get(eng)
            if t is not None:
                tbm_series.append((ctx.col(run, eng), t, styles[(run.key, eng)]))
            f = run_cache(run, "ttfm", ttfm_ms).get(eng)
            if f is not None:
                ttfm_series.append((ctx.col(run, eng), f, styles[(run.key, eng)]))
    blocks: list[Block] = []
    fig = _cdf_figure(tbm_series, "Time between masks (TBM)",
                      "mask + commit per token (µs, log scale); dashed line: 1 ms",
                      (50, 99, 99.9), "µs", "tbm.png", vline=1000.0)
    if fig:
        blocks.append(fig)
    fig = _cdf_figure(ttfm_series, "Time to first mask (TTFM)",
                      "schema text → first mask (ms, log scale); a job that timed out before "
                      "its first mask is censored: counted in n, never drawn as a value",
                      (50, 90, 99), "ms", "ttfm.png")
    if fig:
        blocks.append(fig)
    return Section("Latency distributions", blocks) if blocks else None


def sec_slow_masks(ctx: ReportContext) -> Section | None:
    rows = []
    for eng in ctx.engines():
        for run in ctx.runs:
            e = run.summary["engines"].get(eng)
            if not e or e.get("status") != "run" or not e.get("tokens"):
                continue
            share = e["tbm_us"].get("over_1ms_share", 0.0)
            worst = _worst_schemas(run, eng)
            rows.append([ctx.col(run, eng), number(e["tokens"]), number(int(round(share * e["tokens"]))),
                         f"{100 * share:.3f}%", number(e["tbm_us"].get("p99.9")),
                         number(e["tbm_us"].get("max")), worst])
    if not rows:
        return None
    return Section("Masks over 1 ms", [
        Para("A step over 1 ms stalls a whole batch of a serving engine. Share of the "
             "primary serialisation's token steps (mask + commit) over 1 ms, and the schemas "
             "with the most of them."),
        Table(["engine", "tokens", "> 1 ms", "share", "TBM p99.9 (µs)", "TBM max (µs)",
               "schemas with most steps > 1 ms"], rows, align=["l", "r", "r", "r", "r", "r", "l"]),
    ])


def _worst_schemas(run: RunData, engine: str, top: int = 3) -> str:
    ser = run.summary["primary_serialization"]
    count: Counter = Counter()
    for r in run.records:
        if r["engine"] != engine:
            continue
        for inst in r.get("instances", ()):
            res = inst.get("results", {}).get(ser)
            if res and "mask_ns" in res:
                t = np.asarray(res["mask_ns"], np.int64) + np.asarray(res["commit_ns"], np.int64)
                n = int((t > 1_000_000).sum())
                if n:
                    count[r["case_id"]] += n
    return "; ".join(f"{s} ({n})" for s, n in count.most_common(top)) or "–"


NOT_FINISHED = (outcomes.COMPILE_ERROR, outcomes.TIMEOUT, outcomes.OOM, outcomes.CRASH,
                outcomes.BAD_INPUT)


def sec_unfinished(ctx: ReportContext, limit: int = 200) -> Section | None:
    """Compile errors, timeouts, OOMs, crashes, unusable corpus files, with their errors;
    with several runs, one row per distinct (engine, schema, outcome, error) naming the runs."""
    seen: dict[tuple[str, str, str, str], list[str]] = {}
    more = 0
    for run in ctx.runs:
        bad = [r for r in run.records if r["outcome"] in NOT_FINISHED]
        bad.sort(key=lambda r: (r["outcome"] == outcomes.COMPILE_ERROR, r["engine"], r["case_id"]))
        for r in bad[:limit]:
            key = (r["engine"], r["case_id"], r["outcome"], short(r.get("error"), 240))
            seen.setdefault(key, []).append(run.key)
        more += max(0, len(bad) - limit)
    if not seen:
        return None
    if ctx.multi:
        rows = [[eng, sid, oc, ", ".join(keys), err] for (eng, sid, oc, err), keys in seen.items()]
        header = ["engine", "schema", "outcome", "runs", "error"]
    else:
        rows = [[eng, sid, oc, err] for (eng, sid, oc, err) in seen]
        header = ["engine", "schema", "outcome", "error"]
    blocks: list[Block] = [Table(header, rows, align=["l"] * len(header))]
    if more:
        blocks.append(Para(f"… and {more:,} more (see records.jsonl)."))
    return Section("Jobs that did not compile or finish", blocks)


# --------------------------------------------------------------------------------------
# Diff (two or more runs): each later run against the first


DIFF_TBM = ("avg", "p50", "p90", "p99", "p99.9")
DIFF_TTFM = ("p50", "p90", "p99")


def _outcome_map(run: RunData) -> dict[tuple[str, str], tuple[str, Record]]:
    """(engine, case) → (its outcome as the headline counts it, its record): the units."""
    heads = unit_outcomes(run.meta, run.records, suite=run.suite)
    return {(r["engine"], r["case_id"]): (heads[(r["engine"], r["case_id"])], r)
            for r in run.records if (r["engine"], r["case_id"]) in heads}


def sec_diff(ctx: ReportContext, limit: int = 300) -> list[Section]:
    if not ctx.multi:
        return []
    from harness.analysis.gate import compare_outcome

    ref = ctx.runs[0]
    old = _outcome_map(ref)
    out = [Section("Diff", [Para(
        "Each run compared with the reference run A: schemas whose outcome changed, by "
        "engine (classified as the gate classifies them), schemas present in only one run, "
        "and latency percentiles with the ratio new/old (< 1 is faster).")])]
    for run in ctx.runs[1:]:
        new = _outcome_map(run)
        blocks: list[Block] = []
        changed = []
        for key in sorted(set(old) & set(new)):
            (o, _), (n, rec) = old[key], new[key]
            if o != n:
                kind, why = compare_outcome(o, n)
                changed.append([key[0], key[1], o, n, kind, short(rec.get("error"), 200)])
        order = {"regression": 0, "changed": 1, "improvement": 2}
        changed.sort(key=lambda r: (order.get(r[4], 3), r[0], r[1]))
        kinds = Counter(r[4] for r in changed)
        blocks.append(Para(f"Outcome changes {ref.key} → {run.key}: {len(changed)} "
                           f"({kinds.get('regression', 0)} regression(s), "
                           f"{kinds.get('improvement', 0)} improvement(s), "
                           f"{kinds.get('changed', 0)} other)."))
        if changed:
            blocks.append(Table(["engine", "schema", f"outcome {ref.key}", f"outcome {run.key}",
                                 "change", f"error {run.key}"], changed[:limit],
                                align=["l"] * 6))
            if len(changed) > limit:
                blocks.append(Para(f"… and {len(changed) - limit:,} more."))
        only_old = Counter(k[0] for k in set(old) - set(new))
        only_new = Counter(k[0] for k in set(new) - set(old))
        if only_old or only_new:
            def examples(keys, eng):
                return "; ".join(sorted(s for e, s in keys if e == eng)[:5]) or "–"

            rows = [[eng, str(only_old.get(eng, 0)), str(only_new.get(eng, 0)),
                     examples(set(old) - set(new), eng), examples(set(new) - set(old), eng)]
                    for eng in sorted(set(only_old) | set(only_new))]
            blocks.append(Table(["engine", f"only in {ref.key}", f"only in {run.key}",
                                 f"e.g. only in {ref.key}", f"e.g. only in {run.key}"], rows,
                                align=["l", "r", "r", "l", "l"]))
        rows = []
        for eng in ctx.engines():
            a, b = ref.summary["engines"].get(eng), run.summary["engines"].get(eng)
            if not a or not b or a.get("status") != "run" or b.get("status") != "run":
                continue
            for k in DIFF_TBM:
                x, y = a["tbm_us"].get(k), b["tbm_us"].get(k)
                rows.append([eng, f"TBM {k} (µs)", number(x), number(y), ratio(y, x)])
            x, y = a["tbm_us"].get("over_1ms_share"), b["tbm_us"].get("over_1ms_share")
            rows.append([eng, "masks > 1 ms",
                         f"{100 * x:.3f}%" if x is not None else "–",
                         f"{100 * y:.3f}%" if y is not None else "–", ratio(y, x)])
            for k in DIFF_TTFM:
                x, y = a["ttfm_ms"].get(k), b["ttfm_ms"].get(k)
                rows.append([eng, f"TTFM {k} (ms)", show(a["ttfm_ms"], k, "ms"),
                             show(b["ttfm_ms"], k, "ms"), ratio(y, x)])
        if rows:
            blocks.append(Table(["engine", "metric", ref.key, run.key, f"{run.key}/{ref.key}"], rows,
                                align=["l", "l", "r", "r", "r"],
                                note="The headline figures of each run, pooled over its own "
                                     "schemas (when the schema sets differ, so do the "
                                     "populations); harness gate prints the same figures, with "
                                     "a confidence interval for each ratio from the schemas "
                                     "both runs have."))
        out.append(Section(f"{run.key} vs {ref.key}", blocks, level=3))
    return out
