"""The churn suite's report section: the per-engine, per-exponent table and the crossover
plot (mean TTFT per request against the Zipf exponent). Data from
:mod:`suites.churn.summary` (``summary["churn"]``)."""

from __future__ import annotations

from collections import defaultdict

from suites.churn.records import ChurnRow
from suites.churn.summary import HEADER, table_rows
from harness.suite.report import Block, Figure, Para, ReportContext, Section, Table
from harness.suite.report import figure_png, pyplot


def crossover_figure(rows: list[ChurnRow]) -> Figure:
    """Mean TTFT per request against the Zipf exponent, one line per engine (log y)."""
    plt = pyplot()
    by: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        if r["ttft_ms"]["mean"] is not None:
            by[r["engine"]].append((r["exponent"], r["ttft_ms"]["mean"]))
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for eng, pts in sorted(by.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=eng)
    ax.set_yscale("log")
    ax.set_xlabel("Zipf exponent of the schema stream (0 = every request new)")
    ax.set_ylabel("mean TTFT per request (ms)")
    ax.set_title("Compile cache under schema churn")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return figure_png(fig, "churn.png", "Mean TTFT per request against the Zipf exponent: "
                      "where an engine's cache overtakes a lazy engine")


def sec_churn(ctx: ReportContext) -> Section | None:
    blocks: list[Block] = []
    for run, c in ctx.blocks("churn"):
        blocks.append(Para("One long-lived compiler per engine, its own cache on, takes a "
                           "stream of requests whose schemas repeat with a Zipf distribution "
                           "(0: every request new). Repeats: the best hit rate any cache "
                           "could reach; hit rate: what the engine's cache served; TTFT: "
                           "compile or cache fetch + first mask per request, ms."))
        blocks.append(Table(HEADER, table_rows(c["rows"]), align=["l"] + ["r"] * (len(HEADER) - 1)))
        blocks.append(crossover_figure(c["rows"]))
    if not blocks:
        return None
    return Section("Compile cache under schema churn", blocks)
