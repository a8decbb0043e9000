"""The jump-forward suite's report section: the share of output tokens needing no forward
pass per subset (table and bars), the full per-subset table, the engines not measured and
the evidence of wrong continuations. Data from :mod:`suites.jump_forward.summary`
(``summary["jump_forward"]``). Blocks hold raw text: the renderers escape it."""

from __future__ import annotations

from typing import Any

from suites.jump_forward.records import JumpForwardRow
from suites.jump_forward.summary import ALL, HEADER, notes, table_rows
from harness.suite import figures
from harness.suite.report import Bullets, Figure, Para, ReportContext, Section, Table
from harness.suite.report import figure_png, pyplot
from harness.suite.report import plot_text


def share_table(rows: list[JumpForwardRow]) -> Table:
    """Subsets down, engines across: the engine's jump-forward share, then the spec's."""
    engines = sorted({r["engine"] for r in rows})
    subsets = sorted({r["subset"] for r in rows if r["subset"] != ALL}) + [ALL]
    by = {(r["engine"], r["subset"]): r for r in rows}
    body = []
    for s in subsets:
        cells = [s]
        spec = None
        for e in engines:
            r = by.get((e, s))
            cells.append(figures.percent(r["jf_share"]) if r else "–")
            if r and r["spec_share"] is not None:
                spec = r["spec_share"]
        body.append(cells + [figures.percent(spec)])
    return Table(["subset", *engines, "spec (reference)"], body)


def share_figure(rows: list[JumpForwardRow]) -> Figure | None:
    """Grouped bars: per subset, each engine's jump-forward share; a black tick marks the
    spec's (the reference engine's forced tokens)."""
    rows = [r for r in rows if r["jf_share"] is not None]
    if not rows:
        return None
    plt = pyplot()
    engines = sorted({r["engine"] for r in rows})
    subsets = sorted({r["subset"] for r in rows if r["subset"] != ALL}) + [ALL]
    by = {(r["engine"], r["subset"]): r for r in rows}
    width = 0.8 / max(1, len(engines))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(subsets) + 2), 3.6))
    for k, e in enumerate(engines):
        xs = [i + (k - (len(engines) - 1) / 2) * width for i in range(len(subsets))]
        ys = [100 * by[(e, s)]["jf_share"] if (e, s) in by and by[(e, s)]["jf_share"] is not None
              else 0.0 for s in subsets]
        ax.bar(xs, ys, width=width, label=plot_text(e))
        spec = [(x, 100 * by[(e, s)]["spec_share"]) for x, s in zip(xs, subsets)
                if (e, s) in by and by[(e, s)]["spec_share"] is not None]
        if spec:
            ax.scatter([p[0] for p in spec], [p[1] for p in spec], marker="_", s=120,
                       color="black", zorder=3, label="spec (reference)" if k == 0 else None)
    ax.set_xticks(range(len(subsets)))
    ax.set_xticklabels([plot_text(s) for s in subsets], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("output tokens with no forward pass (%)")
    ax.set_title("Jump-forward share per subset")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return figure_png(fig, "jump_forward.png", "Share of the output tokens of valid instances "
                      "that jump-forward commits without a forward pass, per subset; the black "
                      "tick is what the schema itself forces (the reference engine).")


def sec_jump_forward(ctx: ReportContext) -> Section | None:
    blocks: list[Any] = []
    for run, jf in ctx.blocks("jump_forward"):
        blocks.append(Para(
            "At every step of every valid instance walked (its canonical tokenisation), each "
            "engine's forced continuation (xgrammar find_jump_forward_string / tokens, "
            "llguidance compute_ff_bytes / tokens) against the bytes the schema forces (the "
            "reference engine, which allows escapes in strings, whitespace between tokens and "
            "properties in any order). JF share: output tokens that jump-forward decoding "
            "commits without a forward pass (EOS not counted); spec: the same with the "
            "reference's forced tokens. wrong: offers that no valid document continues "
            "(a correctness bug); unforced: offers the schema allows but does not force (the "
            "engine narrows the language); conflicts: the engine's own mask allows something "
            "its offer excludes; non-canon: forced tokens that are not the canonical "
            "tokenisation of their bytes; ff µs / mask µs: mean time per call."))
        if jf["rows"]:
            blocks.append(share_table(jf["rows"]))
            fig = share_figure(jf["rows"])
            if fig is not None:
                blocks.append(fig)
        blocks.append(Table(HEADER, table_rows(jf), align=["l", "l"] + ["r"] * (len(HEADER) - 2)))
        if notes(jf):
            blocks.append(Bullets(notes(jf)))
        if jf["not_measured"]:
            blocks.append(Bullets([f"{n['engine']}: {n['reason']}" for n in jf["not_measured"]]))
        wrong = jf["evidence"].get("wrong") or []
        if wrong:
            blocks.append(Table(["engine", "case", "instance", "step", "prefix (tail)", "offered",
                                 "spec forces"],
                                [[e["engine"], e["case_id"], str(e["instance"]), str(e["step"]),
                                 e["prefix"][-60:], e["offered"], e.get("oracle", "")]
                                 for e in wrong], align=["l"] * 7,
                                note="Wrong continuations: the prefix followed by the offered "
                                     "bytes is not the start of any document the schema accepts."))
        conflicts = jf["evidence"].get("mask_conflict") or []
        if conflicts:
            blocks.append(Table(["engine", "case", "instance", "step", "prefix (tail)", "offered",
                                 "EOS allowed", "tokens allowed"],
                                [[e["engine"], e["case_id"], str(e["instance"]), str(e["step"]),
                                  e["prefix"][-60:], e["offered"], str(e.get("eos")),
                                  str(e.get("allowed"))] for e in conflicts], align=["l"] * 8,
                                note="Mask conflicts: the engine's own mask allows a token or "
                                     "EOS that cannot continue with the bytes it says are forced."))
    if not blocks:
        return None
    return Section("Jump-forward: forced continuations", blocks)
