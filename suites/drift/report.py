"""The drift suite's report section: the drift matrix as a heatmap and the engine pairs
that accept different languages. Data from :mod:`suites.drift.summary`; nothing is
recomputed here."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.suite.report import Figure, Para, ReportContext, Section, Table
from harness.suite.report import figure_png, pyplot
from suites.drift import summary as conformance

VERDICTS = ("agrees", "stricter", "looser", "mixed", "refuses")


def _primary(run) -> str:
    return run.meta.get("config", {}).get("primary", "ascii")


def _drift_heatmap(matrix: dict[str, dict[str, str]], title: str) -> Figure:
    plt = pyplot()
    engines = list(matrix)
    axes = sorted({a for row in matrix.values() for a in row})
    codes = np.full((len(engines), len(axes)), np.nan)
    for i, e in enumerate(engines):
        for j, a in enumerate(axes):
            v = matrix[e].get(a)
            if v in VERDICTS:
                codes[i, j] = VERDICTS.index(v)
    from matplotlib.colors import ListedColormap

    cmap = ListedColormap(["#4caf50", "#ff9800", "#e53935", "#8e24aa", "#9e9e9e"])
    fig, ax = plt.subplots(figsize=(1.0 + 0.75 * len(axes), 1.2 + 0.45 * len(engines)))
    ax.imshow(codes, cmap=cmap, vmin=-0.5, vmax=len(VERDICTS) - 0.5, aspect="auto")
    ax.set_xticks(range(len(axes)), axes, rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(len(engines)), engines, fontsize=8)
    for i in range(len(engines)):
        for j in range(len(axes)):
            v = matrix[engines[i]].get(axes[j], "")
            ax.text(j, i, v, ha="center", va="center", fontsize=6, color="white")
    ax.set_title(title)
    return figure_png(fig, "drift.png", "engine × axis: green agrees, orange stricter, "
                      "red looser, purple mixed, grey refuses", bbox_inches="tight")


def sec_drift(ctx: ReportContext) -> list[Section] | None:
    out = []
    for run in ctx.runs:
        recs = [r for r in run.records if r.get("suite") == conformance.DRIFT_SUITE]
        if not recs:
            continue
        details = conformance.drift_details(recs, _primary(run))
        matrix = {e: {a: d["verdict"] for a, d in axes.items()} for e, axes in details.items()}
        axes = sorted({a for row in matrix.values() for a in row})
        rows = [[a] + [matrix[e].get(a, "–") for e in matrix] for a in axes]
        tag = ctx.tag(run)
        sec = Section(f"Drift: engine × semantic axis{tag}", [
            _drift_heatmap(matrix, "Drift against the spec"),
            Table(["axis", *matrix], rows),
        ])
        pairs = conformance.drift_pairs(recs, _primary(run))
        if pairs:
            prow = []
            for p in pairs:
                ex = p["probes"][0]
                a, b = p["engines"]
                prow.append([f"{a} vs {b}", str(p["differ"]), ", ".join(p["axes"]),
                             f"{ex['probe']}: {a} {'accepts' if ex[a] else 'rejects'}, "
                             f"{b} {'accepts' if ex[b] else 'rejects'} "
                             f"(spec: {'valid' if ex['spec'] else 'invalid'})"])
            sec.blocks += [Para("Engine pairs that accept different languages (both compiled "
                                "the probe and disagree on it):"),
                           Table(["pair", "probes", "axes", "example"], prow,
                                 align=["l", "r", "l", "l"])]
        out.append(sec)
    return out or None
