"""Report section of the ``adversarial`` suite: how each engine ended each generated case
and how its costs grow with the case's size.

Registered as an optional section of :mod:`harness.report_md` (``None`` when a run holds
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

from collections import Counter
from typing import Any

import numpy as np

from harness import outcomes
from harness.report_md import (Para, ReportContext, RunData, Section, Table, _plot_text,
                               _pyplot, figure_png, register_section)

SUITE = "adversarial"
MEASURED = "measured"
CLASSES = (MEASURED, outcomes.COMPILE_ERROR, outcomes.TIMEOUT, outcomes.OOM, outcomes.CRASH,
           outcomes.BAD_INPUT)
_MEASURED_OUTCOMES = (outcomes.PASSING, outcomes.VALIDATION_ERROR, outcomes.INVALIDATION_ERROR)


def case_class(outcome: str) -> str:
    """``measured`` for an outcome with measurements, else the outcome itself."""
    return MEASURED if outcome in _MEASURED_OUTCOMES else outcome


def _case_points(meta: dict[str, Any]) -> dict[str, tuple[str, int, str]]:
    cases = (meta.get("suite") or {}).get("cases") or {}
    return {cid: (v[0], int(v[1]), str(v[2])) for cid, v in cases.items()}


def _point(cid: str, known: dict[str, tuple[str, int, str]]) -> tuple[str, int, str]:
    if cid in known:
        return known[cid]
    fam, _, size = cid.partition("/")
    return fam, int(size) if size.isdigit() else 0, ""


def mask_p50_us(record: dict[str, Any], primary: str) -> float | None:
    """Median mask-fill time (µs) over every token step of the record's primary-
    serialisation replays; None when nothing was replayed."""
    steps = [ns for inst in record.get("instances") or ()
             for ns in ((inst.get("results") or {}).get(primary) or {}).get("mask_ns", ())]
    return float(np.median(steps)) / 1000.0 if steps else None


def rows(run: RunData) -> list[dict[str, Any]]:
    """:func:`rows_from` of a loaded run."""
    return rows_from(run.meta, run.records)


def rows_from(meta: dict[str, Any], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per adversarial (engine, case): family, size, unit, outcome, class,
    TTFM in ms (compile + matcher + first mask; None when it never got a first mask),
    median mask time in µs, the error line."""
    primary = (meta.get("config") or {}).get("primary", "ascii")
    known = _case_points(meta)
    out = []
    for r in records:
        if r.get("suite", SUITE if r["schema_id"] in known else None) != SUITE:
            continue
        fam, size, unit = _point(r["schema_id"], known)
        ttfm = r.get("ttfm_ns")
        out.append({
            "engine": r["engine"], "case": r["schema_id"], "family": fam, "size": size,
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


def extend(summary: dict[str, Any], meta: dict[str, Any],
           records: list[dict[str, Any]]) -> str | None:
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


def _cost_figure(data: list[dict[str, Any]], key: str, ylabel: str, name: str, title: str,
                 limit_ms: float | None):
    """One panel per family: ``key`` against size on log-log axes, a line per engine;
    a case that did not finish is drawn as a cross at the top of its panel."""
    plt = _pyplot()
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
                ax.plot(*zip(*pts), marker="o", markersize=3, color=c, label=_plot_text(eng))
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
        ax.set_title(_plot_text(fam), fontsize=9)
        ax.set_xlabel(_plot_text(f"size ({unit})" if unit else "size"), fontsize=8)
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


@register_section
def sec_adversarial(ctx: ReportContext) -> list[Section] | None:
    out = []
    for run in ctx.runs:
        data = rows(run)
        if not data:
            continue
        tag = f" ({run.key})" if ctx.multi else ""
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
