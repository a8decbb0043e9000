"""The batch suite's report section: grammar time per step against the batch size, one
panel per engine and one line per thread count, with the step budget drawn across; the
table of the largest hidden batch; p50 / p99 / max per (B, T). Data from
:mod:`suites.batch.summary` (``summary["batch"]``)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from harness.suite.report import Figure, Para, ReportContext, Section, Table
from harness.suite.report import figure_png, pyplot
from suites.batch.records import BatchPointRow
from suites.batch.summary import HEADER, HIDDEN_HEADER, hidden_rows, table_rows


def scaling_figure(points: list[BatchPointRow], step_ms: float, workload: str = "mix") -> Figure:
    """p99 grammar time per step (ms, log) against B (log), a panel per engine, a line per
    thread count (p50 dotted), the budget as a red line."""
    plt = pyplot()
    by: dict[str, dict[int, list[tuple[int, float, float]]]] = defaultdict(lambda: defaultdict(list))
    for p in points:
        if p["threads"] is not None and p["workload"] == workload:
            by[p["engine"]][p["threads"]].append(
                (p["batch"], p["grammar_ms"]["p99"], p["grammar_ms"]["p50"]))
    engines = sorted(by)
    n = max(1, len(engines))
    fig, axes = plt.subplots(1, n, figsize=(3.6 * n + 0.6, 3.6), squeeze=False, sharey=True)
    for ax, eng in zip(axes[0], engines):
        for t, pts in sorted(by[eng].items()):
            pts.sort()
            line, = ax.plot([q[0] for q in pts], [q[1] for q in pts], marker="o",
                            label=f"T={t} p99")
            ax.plot([q[0] for q in pts], [q[2] for q in pts], linestyle=":",
                    color=line.get_color(), alpha=0.7)
        ax.axhline(step_ms, color="red", linewidth=1.2, label=f"budget {step_ms:g} ms")
        ax.set_xscale("log", base=2)
        sizes = sorted({q[0] for pts in by[eng].values() for q in pts})
        ax.set_xticks(sizes, [str(b) for b in sizes])
        ax.xaxis.set_minor_locator(plt.NullLocator())
        ax.set_yscale("log")
        ax.set_title(eng, fontsize=10)
        ax.set_xlabel("batch size B (sequences)")
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("grammar ms per step (fill + commit)")
    fig.suptitle("Grammar time per decode step against batch size (p99 solid, p50 dotted)",
                 fontsize=10)
    fig.tight_layout()
    name = "batch_scaling.png" if workload == "mix" else "batch_scaling_same.png"
    return figure_png(fig, name, f"p99 (and p50) grammar time per step against B ({workload}), "
                                 "one line per host thread count; above the red line the "
                                 "grammar no longer hides inside the step")


def sec_batch(ctx: ReportContext) -> Section | None:
    blocks: list[Any] = []
    for run, b in ctx.blocks("batch"):
        src = f" (from {b['step_source']})" if b.get("step_source") else ""
        blocks.append(Para(
            f"B concurrent sequences follow valid corpus instances token by token; finished "
            f"ones are replaced (steady state). Per step the engine's batch API fills all B "
            f"masks and commits all B tokens; the budget is {b['step_ms']:g} ms per step"
            f"{src}. Largest hidden B: the largest batch size whose p99 grammar time per "
            f"step stays within it (every smaller size too); ceiling: B × steps per second."))
        blocks.append(Table(HIDDEN_HEADER, hidden_rows(b["hidden"]),
                            align=["l", "l"] + ["r"] * (len(HIDDEN_HEADER) - 2)))
        blocks.append(scaling_figure(b["points"], b["step_ms"]))
        if any(p["workload"] != "mix" for p in b["points"]):
            blocks.append(scaling_figure(b["points"], b["step_ms"], "same-schema"))
        blocks.append(Para("Per (B, T): the schemas followed and those left out (refused, or "
                           "valid instances the engine rejects alone), grammar ms per step "
                           "(p50, p99, max), the fill and "
                           "commit alone (p99), the slowest sequence's own mask over the "
                           "step's fill (median), the one-by-one masks' sum over the batch "
                           "fill (speedup), matcher creation per joining sequence (µs), and "
                           "failed checks. T* runs more threads than the machine's cores."))
        blocks.append(Table(HEADER, table_rows(b["points"]),
                            align=["l", "l"] + ["r"] * (len(HEADER) - 3) + ["l"]))
    if not blocks:
        return None
    return Section("Batch scaling: grammar time per decode step", blocks)
