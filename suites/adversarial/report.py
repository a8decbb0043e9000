"""Report section of the ``adversarial`` suite: how each engine ended each generated case
and how its costs grow with the case's size.

Registered as an optional section of :mod:`harness.report.markdown` (``None`` when a run holds
no adversarial records). Reads the records and ``run.json`` only: a case's family, size
and unit come from ``run.json`` (``suite.cases``, written by
:meth:`suites.adversarial.Adversarial.describe`), else from the case id
``<family>/<size>``.

Classes: **measured** (the engine compiled the schema and replayed every instance:
outcomes passing / validation error / invalidation error), **compile error**,
**timeout**, **oom**, **crash** (the runner's outcome classes; ``bad_input`` cannot
happen for generated cases but is kept if it does).
"""

from __future__ import annotations

from typing import Any

from suites.adversarial.summary import CLASSES, MEASURED, class_counts, rows_from
from harness.suite import outcomes
from harness.suite.report import Para, ReportContext, RunData, Section, Table
from harness.suite.report import figure_png, pyplot
from harness.suite.report import plot_text

def rows(run: RunData) -> list[dict[str, Any]]:
    """:func:`rows_from` of a loaded run."""
    return rows_from(run.meta, run.records)


def _cost_figure(data: list[dict[str, Any]], key: str, ylabel: str, name: str, title: str,
                 limit_ms: float | None):
    """One panel per family: ``key`` against size on log-log axes, a line per engine;
    a case that did not finish is drawn as a cross at the top of its panel."""
    plt = pyplot()
    import matplotlib
    import matplotlib.ticker

    fams = list(dict.fromkeys(r["family"] for r in data))
    engines = list(dict.fromkeys(r["engine"] for r in data))
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    ncol = min(4, len(fams))
    nrow = (len(fams) + ncol - 1) // ncol
    fig, axs = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 2.9 * nrow), squeeze=False)
    for ax, fam in zip(axs.flat, fams):
        fr = [r for r in data if r["family"] == fam]
        top = max([r[key] for r in fr if r[key]] + [limit_ms or 1.0])
        for i, eng in enumerate(engines):
            er = sorted((r for r in fr if r["engine"] == eng), key=lambda r: r["size"])
            pts = [(r["size"], r[key]) for r in er if r[key]]
            c = colors[i % len(colors)]
            if pts:
                ax.plot(*zip(*pts), marker="o", markersize=3, color=c, label=plot_text(eng))
            dead = [r["size"] for r in er if r["class"] != MEASURED and not r[key]]
            if dead:
                # one row of crosses per engine, so that they do not hide each other
                ax.plot(dead, [top * 1.8 * 1.7 ** i] * len(dead), "x", color=c, markersize=7)
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = sorted({r["size"] for r in fr if r["size"] > 0})
        ax.set_xticks(sizes, [_short(s) for s in sizes])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        unit = fr[0]["unit"]
        ax.set_title(plot_text(fam), fontsize=9)
        ax.set_xlabel(plot_text(f"size ({unit})" if unit else "size"), fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axs.flat)[len(fams):]:
        ax.axis("off")
    handles, labels = axs.flat[0].get_legend_handles_labels()
    for ax in axs.flat:
        h, lab = ax.get_legend_handles_labels()
        if len(lab) > len(labels):
            handles, labels = h, lab
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    return figure_png(fig, name, f"{title}; crosses at the top (one row per engine, in the "
                      "legend's order): the engine did not reach this point (compile error, "
                      "timeout, OOM or crash; see the table).")


def _short(n: int) -> str:
    """8, 16, 1k, 100k, 4M: tick labels that fit (binary sizes of bytes as Ki/Mi)."""
    for div, suf in ((1 << 20, "Mi"), (1 << 10, "Ki")):
        if n >= div and n % div == 0:
            return f"{n // div}{suf}"
    for div, suf in ((1_000_000, "M"), (1_000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{suf}"
    return str(n)


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "–"
    if r["class"] == MEASURED:
        bits = [f"{r['ttfm_ms']:.3g} ms"] if r["ttfm_ms"] is not None else []
        if r["mask_p50_us"] is not None:
            bits.append(f"mask {r['mask_p50_us']:.3g} µs")
        if r["outcome"] != outcomes.PASSING:
            bits.append(r["outcome"])
        return ", ".join(bits) or MEASURED
    return r["class"].replace("_", " ")


def sec_adversarial(ctx: ReportContext) -> list[Section] | None:
    out = []
    for run in ctx.runs:
        data = rows(run)
        if not data:
            continue
        tag = ctx.tag(run)
        counts = class_counts(data)
        engines = list(counts)
        cls_rows = [[eng] + [str(counts[eng].get(c, 0)) for c in CLASSES] + [str(sum(counts[eng].values()))]
                    for eng in engines]
        limit = run.timeout_s
        blocks: list[Any] = [
            Para("Generated hostile schemas (suite adversarial): how each engine ended each "
                 f"case within the limits ({limit:g} s per job, "
                 f"{(run.meta.get('limits') or {}).get('memory_gib')} GiB per worker)."
                 if limit else "Generated hostile schemas (suite adversarial)."),
            Table(["engine", *[c.replace("_", " ") for c in CLASSES], "cases"], cls_rows),
            _cost_figure(data, "ttfm_ms", "TTFM (ms)", "adversarial_ttfm.png",
                         "Compile time (TTFM) against size", limit * 1000 if limit else None),
        ]
        if any(r["mask_p50_us"] for r in data):
            blocks.append(_cost_figure(data, "mask_p50_us", "mask p50 (µs)",
                                       "adversarial_mask.png",
                                       "Median mask time against size", None))
        by = {(r["engine"], r["case"]): r for r in data}
        cases = sorted({(r["family"], r["size"], r["case"]) for r in data})
        blocks.append(Table(
            ["case", "size", *engines],
            [[c, f"{s:,}"] + [_cell(by.get((e, c))) for e in engines] for _, s, c in cases],
            align=["l", "r"] + ["l"] * len(engines),
            note="Per case: TTFM and median mask time when measured, else how it ended."))
        out.append(Section(f"Adversarial schemas{tag}", blocks))
    return out or None
