"""The tools suite's report section: compile time against the number of tools (log axes,
per engine, cold / warm / overlap), the compile table and the verdict / fuzz table. Data
from :mod:`suites.tools.summary` (``summary["tools"]``)."""

from __future__ import annotations

from collections import defaultdict
from suites.tools.records import ToolsCompileRow

from suites.tools.summary import (COMPILE_HEADER, ENGINE_HEADER, EVENTS_HEADER, compile_table,
                                  engine_table, events_table)
from harness.suite.report import Block, Figure, Para, ReportContext, Section, Table
from harness.suite.report import figure_png, pyplot

_STYLE = {"cold_ms": ("-", "o", "cold"), "warm_ms": (":", "s", "warm"),
          "overlap_ms": ("--", "^", "overlap")}


def compile_figure(rows: list[ToolsCompileRow]) -> Figure:
    """Compile time against the number of tools, log-log, one colour per engine and one
    line style per cache state."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.0, 4.0))
    by: dict[str, list[ToolsCompileRow]] = defaultdict(list)
    for r in rows:
        by[r["engine"]].append(r)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (eng, rs) in enumerate(sorted(by.items())):
        rs.sort(key=lambda r: r["tools"])
        for key, (ls, mk, what) in _STYLE.items():
            pts = [(r["tools"], r[key]) for r in rs if r[key] is not None and r[key] > 0]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=ls, marker=mk,
                        color=colours[i % len(colours)], label=f"{eng} {what}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tools in the request")
    ax.set_ylabel("compile time (ms)")
    ax.set_title("Tool-call grammars: compile time against tools")
    ax.grid(True, which="both", alpha=0.3)
    # outside the axes: the slow engines' lines run through the upper corners
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return figure_png(fig, "tools_compile.png", "Compile time against the number of tools "
                      "(log axes): cold, warm (same request again through the engine's "
                      "cache) and overlap (half the tools shared with the previous request)")


def sec_tools(ctx: ReportContext) -> Section | None:
    blocks: list[Block] = []
    for run, t in ctx.blocks("tools"):
        blocks.append(Para("Each engine gets every tool-call request in its own native form "
                           "(the form column). Cold: a fresh compiler; warm: the same request "
                           "again through the engine's own cache; overlap: a request sharing "
                           "half its tools with the previous one; ms, median over the cases "
                           "with that many tools."))
        blocks.append(compile_figure(t["compile"]))
        blocks.append(Table(COMPILE_HEADER, compile_table(t["compile"]),
                            align=["l"] + ["r"] * (len(COMPILE_HEADER) - 1)))
        blocks.append(Para("Verdicts against the ground truth (the envelope parsed, every "
                           "call's arguments validated with jsonschema): FR = valid outputs "
                           "refused / valid outputs; FA = invalid outputs accepted / invalid "
                           "outputs of that kind (a truncated output must fail the EOS "
                           "check). TBM: median µs per mask over free text and inside calls. "
                           "Walks: seeded walks under the engine's mask from the start of a "
                           "call, judged by the ground truth; P(50 calls) = p^50."))
        blocks.append(Table(ENGINE_HEADER, engine_table(t["engines"]),
                            align=["l", "l"] + ["r"] * (len(ENGINE_HEADER) - 2)))
        if t.get("events"):
            src = (t.get("tpot") or {}).get("source") or "no measured TPOT: not given"
            blocks.append(Para(
                "Streaming parse events of every call of the valid outputs (decode steps, "
                "medians; docs/tools.md): the step from which the grammar allows one "
                "function name only (read from the engine's mask), the step that closes "
                "the name, the step at which every required argument is complete, and "
                "the end of the output. Lead = end - required complete: the steps a "
                "consumer that starts the call there gains over one that waits for the "
                f"end; lead ms at the time per output token of {src}; lead share = lead "
                "/ steps over every call. = reference: calls whose name is decided at the "
                "same step as on the exact reference engine; forced = mask: the engine's "
                "forced continuation (jump-forward API) reaches past the name at the "
                "same step. Costs per step scanned: the forced-continuation call, "
                "fill_mask, and reading the name set from the mask (the harness, Python)."))
            blocks.append(Table(EVENTS_HEADER, events_table(t["events"]),
                                align=["l"] + ["r"] * (len(EVENTS_HEADER) - 1)))
        if t.get("events_model"):
            blocks.append(Para(
                "The same events on the model's own outputs (--model: one greedy and "
                "sampled outputs at T=1 under each engine's grammar; only those the ground "
                "truth calls valid are traced): " + ", ".join(
                    f"{r['engine']} {r['outputs'][1]} valid of {r['outputs'][0]}"
                    for r in t["events_model"] if r.get("outputs")) + "."))
            blocks.append(Table(EVENTS_HEADER, events_table(t["events_model"]),
                                align=["l"] + ["r"] * (len(EVENTS_HEADER) - 1)))
    if not blocks:
        return None
    return Section("Tool calls with many tools", blocks)
