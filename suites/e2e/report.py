"""The e2e suite's report section: TPOT constrained against unconstrained per engine and
batch, the measurement protocol's table, the mask-apply microbenchmark. Data from
:mod:`suites.e2e.summary`; nothing is recomputed here."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.suite import figures
from harness.suite.report import Figure, Para, ReportContext, Section, Table
from harness.suite.report import figure_png, pyplot


def sec_e2e(ctx: ReportContext) -> Section | None:
    rows: list[tuple[str, dict[str, Any]]] = []
    for run in ctx.runs:
        e2e = {e: d.get("e2e") for e, d in run.summary["engines"].items()
               if isinstance(d, dict) and d.get("e2e")}
        for e, d in e2e.items():
            rows.append((ctx.col(run, e), d))
    if not rows:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.8 + 0.45 * len(rows)))
    y = np.arange(len(rows))
    ax.barh(y - 0.2, [d.get("tpot_ms") or 0 for _, d in rows], 0.4, label="constrained")
    ax.barh(y + 0.2, [d.get("tpot_unconstrained_ms") or 0 for _, d in rows], 0.4,
            label="unconstrained (same loop)")
    ax.set_yticks(y, [n for n, _ in rows], fontsize=8)
    ax.set_xlabel("TPOT, mean step (ms)")
    ax.legend(fontsize=8)
    ax.set_title("End to end: time per output token")

    def num(d: dict[str, Any], k: str) -> str:
        return figures.significant(d.get(k))

    table = Table(["engine", "TTFT ms", "TPOT ms", "unconstrained ms", "ratio [95% CI]",
                   "harness's share", "invalid outputs", "runaways"],
                  [[n, num(d, "ttft_ms"), num(d, "tpot_ms"), num(d, "tpot_unconstrained_ms"),
                    figures.interval(d.get("tpot_ratio"), d.get("tpot_ratio_ci"),
                                     d.get("tpot_ratio_resolved"), d.get("tpot_ratio_note"))
                    if "tpot_ratio_resolved" in d else num(d, "tpot_ratio"),
                    figures.percent(d.get("harness_share")), num(d, "invalid_outputs"),
                    num(d, "runaways")]
                   for n, d in rows])
    parts: list[Any] = [figure_png(fig, "e2e_tpot.png", "mean TPOT per engine",
                                   bbox_inches="tight"), table]
    proto = _protocol_table(rows)
    if proto is not None:
        parts += proto
    batch_fig = _tpot_by_batch(ctx, plt)
    if batch_fig is not None:
        parts.append(batch_fig)
    mb = next((r.summary.get("e2e_mask_bench") for r in ctx.runs
               if r.summary.get("e2e_mask_bench")), None)
    if mb:
        parts += _mask_bench_table(mb)
    return Section("End to end (decode loop)", parts)


def _protocol_table(rows: list[tuple[str, dict[str, Any]]]) -> list[Any] | None:
    """Per engine and batch size: the interleaved ratio, interference, the harness's share
    and the step's components; the floor, the warm-up and the clock below."""
    from suites.e2e.summary import component_text

    pct = figures.percent
    body = []
    for n, d in rows:
        pts = d.get("by_batch") or d.get("protocol_batch") or {}
        for b, pt in pts.items():
            if "pairs" not in pt:
                continue
            comps = (pt.get("constrained") or {}).get("components") or {}
            body.append([n, str(b), str(pt.get("pairs")),
                         figures.interval(pt.get("tpot_ratio"), pt.get("tpot_ratio_ci"),
                                          pt.get("tpot_ratio_resolved"), pt.get("tpot_ratio_note")),
                         figures.interval(pt.get("interference"), pt.get("interference_ci"),
                                          pt.get("interference_resolved"),
                                          pt.get("interference_note")),
                         pct(pt.get("harness_share")), pct(pt.get("harness_share_unconstrained")),
                         component_text(comps, share_only=True)])
    if not body:
        return None
    out: list[Any] = [
        Para("Interleaved blocks (A = constrained, B = unconstrained, ABAB… per schema and "
             "batch size, same process and weights, after a warm-up to a stable step). The "
             "ratio's 95% bootstrap interval is over the AB pairs; a ratio whose interval "
             "spans more than ±3% is shown as not resolved. Interference: the forward's time "
             "in A blocks ÷ in B blocks. The harness's share: apply + sample + gaps + host "
             "work of the loop over the constrained step."),
        Table(["engine", "batch", "AB pairs", "TPOT ratio [95% CI]", "interference",
               "harness's share", "(unconstrained)", "components of the constrained step"],
              body, align=["l", "r", "r", "l", "l", "r", "r", "l"])]
    d0 = rows[0][1]
    notes = []
    fl = d0.get("floor")
    if fl:
        notes.append(f"Floor: {fl['weight_bytes_per_step'] / 1e9:.3f} GB of weights read per "
                     f"step ÷ {fl['copy_gb_per_s']:.0f} GB/s (copy bandwidth measured in the "
                     f"run) = {fl['floor_ms']:.3f} ms; the unconstrained step at batch "
                     f"{fl['batch']} is {fl['step_ms']} ms, {fl['step_over_floor']}× the floor "
                     f"(CUDA graphs {'on' if fl.get('graphs') else 'off'}).")
    for b, w in (d0.get("warmup") or {}).items():
        first = "; ".join(f"{x['steps']} steps" + ("" if x.get("stable") else
                                                     " (not stable: cut off by its cap)")
                          for x in w.get("first") or []) or "in an earlier process"
        notes.append(f"Warm-up at batch {b}: first {first}; {w.get('rewarms')} re-warms "
                     f"(median {w.get('rewarm_steps_median')} steps).")
    ck = d0.get("clock") or {}
    if ck:
        notes.append("SM clock before/after each block: "
                     + (f"{ck['sm_mhz_min']}–{ck['sm_mhz_max']} MHz ({ck['source']})"
                        if ck.get("reads") else str(ck.get("source"))) + ".")
    out += [Para(" ".join(notes))] if notes else []
    return out


def _mask_bench_table(mb: dict[str, Any]) -> list[Any]:
    from suites.e2e.maskbench import table_cells

    title, batches, body = table_cells(mb)
    return [Para(f"Mask-apply microbenchmark ({title})."),
            Table(["kernel"] + [f"batch {b}" for b in batches], body)]


def _tpot_by_batch(ctx: ReportContext, plt):
    """TPOT against batch size per engine: from one run's ``--batch 1,4,8`` sweep and from
    several runs at different ``--batch``; None when fewer than two sizes were measured."""
    curves: dict[str, dict[int, tuple[float, float | None]]] = {}
    for run in ctx.runs:
        for e, d in run.summary["engines"].items():
            d = d.get("e2e") if isinstance(d, dict) else None
            if not d:
                continue
            pts = curves.setdefault(e, {})
            for b, pt in (d.get("by_batch") or {}).items():
                if pt.get("tpot_ms"):
                    pts[int(b)] = (pt["tpot_ms"], pt.get("tpot_unconstrained_ms"))
            if d.get("batch") and d.get("tpot_ms") and int(d["batch"]) not in pts:
                pts[int(d["batch"])] = (d["tpot_ms"], d.get("tpot_unconstrained_ms"))
    curves = {e: pts for e, pts in curves.items() if len(pts) >= 2}
    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for e, pts in sorted(curves.items()):
        xs = sorted(pts)
        line, = ax.plot(xs, [pts[x][0] for x in xs], marker="o", label=f"{e}")
        unc = [(x, pts[x][1]) for x in xs if pts[x][1]]
        if unc:
            ax.plot([x for x, _ in unc], [u for _, u in unc], ls="--", color=line.get_color(),
                    alpha=0.6, label=f"{e} unconstrained")
    ax.set_xscale("log", base=2)
    sizes = sorted({x for pts in curves.values() for x in pts})
    ax.set_xticks(sizes, [str(x) for x in sizes])
    ax.minorticks_off()
    ax.set_xlabel("batch size (sequences decoded together)")
    ax.set_ylabel("TPOT, mean step (ms)")
    ax.set_title("End to end: TPOT against batch")
    ax.legend(fontsize=7)
    return figure_png(fig, "e2e_tpot_batch.png", "TPOT against batch size per engine",
                      bbox_inches="tight")
