"""Plots for reports: matplotlib (Agg backend) figures kept in memory as PNG bytes, and the
timing series they draw (all read from the records)."""

from __future__ import annotations

import io
import os
from typing import Iterable

import numpy as np

from harness.analysis import metrics
from harness.measure import outcomes
from harness.measure.figures import number
from harness.report.model import Figure, ReportContext, RunData
from harness.report.text import plot_text

OUTCOME_COLORS = {
    outcomes.PASSING: "#4caf50", outcomes.COMPILE_ERROR: "#9e9e9e", outcomes.TIMEOUT: "#ff9800",
    outcomes.OOM: "#795548", outcomes.CRASH: "#e53935", outcomes.VALIDATION_ERROR: "#7e57c2",
    outcomes.INVALIDATION_ERROR: "#ec407a", outcomes.BAD_INPUT: "#212121",
}
LINESTYLES = ("-", "--", ":", "-.")


def pyplot():
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_png(fig, name: str, caption: str = "", **savefig) -> Figure:
    """A matplotlib figure as a :class:`Figure` (PNG bytes); closes the figure."""
    plt = pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=savefig.pop("dpi", 110), **savefig)
    plt.close(fig)
    return Figure(name=name, png=buf.getvalue(), caption=caption)


def tbm_us(run: RunData) -> dict[str, np.ndarray]:
    timings = metrics.token_timings(run.records, run.summary["primary_serialization"])
    return {k: (v["mask"] + v["commit"]) / 1000.0 for k, v in timings.items()}


def ttfm_ms(run: RunData) -> dict[str, np.ndarray]:
    """TTFM per unit (ms), with ``inf`` for each job that timed out before its first mask
    (censored: at least the limit; drawn as the share the curve never reaches)."""
    sdf = metrics.schema_frame(run.records)
    out = {}
    for label in run.summary["engines"]:
        e = sdf[sdf["engine"] == label] if len(sdf) else sdf
        if len(e):
            vals = metrics.ttfm_values_ms(e).to_numpy(float)
            out[label] = np.concatenate([vals, np.full(metrics.ttfm_censored(e), np.inf)])
    return out


def _ecdf(ax, vals: np.ndarray, label: str, marks: Iterable[float], unit: str, **style) -> None:
    """Empirical CDF of ``vals``; ``inf`` values are censored (past a limit): they count in
    n, so the curve stops below 1, and a percentile among them reads "censored"."""
    v = np.sort(vals)
    finite = v[np.isfinite(v)]
    if v.size > 4000:  # plot quantiles, dense in the tail, not millions of steps
        levels = np.unique(np.concatenate([np.linspace(0, 0.99, 1500), np.linspace(0.99, 1, 1500)]))
        levels = levels[levels <= finite.size / v.size]
        xs, ys = np.quantile(v, levels), levels
    else:
        xs, ys = finite, np.arange(1, finite.size + 1) / v.size
    with np.errstate(invalid="ignore"):
        qs = {p: float(np.percentile(v, p)) for p in marks}
    tag = ", ".join(f"p{p:g} {number(q) if np.isfinite(q) else 'censored'}" for p, q in qs.items())
    cens = v.size - finite.size
    more = f"; {cens:,} past the limit" if cens else ""
    line, = ax.step(xs, ys, where="post",
                    label=plot_text(f"{label} (n={v.size:,}{more}; {tag} {unit})"), **style)
    for p, q in qs.items():
        if np.isfinite(q):
            ax.plot([q], [p / 100], marker="o", color=line.get_color(), markersize=4)


def _cdf_figure(series: list[tuple[str, np.ndarray, dict]], title: str, xlabel: str,
                marks: tuple[float, ...], unit: str, name: str, vline: float | None = None) -> Figure | None:
    series = [s for s in series if np.isfinite(s[1]).any()]
    if not series:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for label, vals, style in series:
        _ecdf(ax, vals, label, marks, unit, **style)
    if vline is not None:
        ax.axvline(vline, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share ≤ x")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1 if len(series) < 5 else 2)
    ax.set_title(title)
    marks_txt = ", ".join(f"p{p:g}" for p in marks)
    return figure_png(fig, name, f"{title}: empirical CDF on a log axis; dots mark {marks_txt}.",
                      bbox_inches="tight")


def _styles(ctx: ReportContext) -> dict[tuple[str, str], dict]:
    """Colour per engine, line style per run."""
    import matplotlib

    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    engines = ctx.engines()
    out = {}
    for i, run in enumerate(ctx.runs):
        for j, eng in enumerate(engines):
            out[(run.key, eng)] = {"color": cycle[j % len(cycle)],
                                   "linestyle": LINESTYLES[i % len(LINESTYLES)]}
    return out
