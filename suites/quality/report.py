"""The ``quality`` report section: the verdict first (validity, attempts per valid output,
mass removed, the log-probability gap, accuracy), the greedy table, the compounding on
BFCL, false accepts with their witnesses, and mass removed against position."""

from __future__ import annotations

from typing import Any

from harness.suite import figures
from harness.suite.report import Bullets, Para, ReportContext, Section, Table


def _plot(rows: list[dict[str, Any]]) -> Any:
    from harness.suite.report import figure_png, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.2))
    drawn = False
    for r in rows[1:]:
        ys = r.get("mass_by_position") or []
        xs = [i for i, y in enumerate(ys) if y is not None]
        if xs:
            ax.plot(xs, [100 * ys[i] for i in xs], label=r["stream"], linewidth=1.2)
            drawn = True
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xlabel("position in the output (tokens)")
    ax.set_ylabel("mass removed (%)")
    ax.legend(fontsize=7)
    return figure_png(fig, "quality_mass_by_position.png",
                      "The model's probability outside the mask, by position (temperature 1, "
                  "mean over outputs reaching it)")


def sec_quality(ctx: ReportContext) -> Section | None:
    blocks: list[Any] = []
    for run, block in ctx.blocks("quality"):
        blocks += _run_blocks(ctx.prefix(run), block)
    if not blocks:
        return None
    return Section("Quality: what the mask does to what the model writes", blocks)


def _run_blocks(prefix: str, block: dict[str, Any]) -> list[Any]:
    from suites.quality.summary import table, verdict_lines

    rows = block["rows"]
    blocks: list[Any] = [
        Bullets(verdict_lines(rows)),
        Para(f"{prefix}Model {block['model'].get('path')} (config sha256 "
             f"{str(block['model'].get('config_sha256'))[:12]}…, tokenizer of "
             f"{block['model'].get('tokenizer_size')} ids); {block['schemas']} held-out "
             f"schema(s), {block['samples']} sample(s) each at temperature 1 and one greedy, "
             f"at most {block['max_tokens']} tokens per output. The mask is applied before "
             "temperature, top-k and top-p."),
        table(block)]
    greedy = [{"stream": r["stream"], **r.get("greedy", {})} for r in rows]
    from suites.quality.summary import HEADER, _row_cells

    blocks.append(Para("Greedy (one output per schema and stream):"))
    blocks.append(Table(HEADER, [_row_cells(g) for g in greedy]))  # type: ignore[arg-type]
    comp = [r for r in rows if r.get("bfcl")]
    if comp:
        blocks.append(Table(
            ["stream", "BFCL outputs", "p per call", "10 calls clean", "50 calls clean"],
            [[r["stream"], str(r["bfcl"]["outputs"]), figures.percent(r["bfcl"]["p"]),
              figures.percent(r["bfcl"]["p10"]), figures.percent(r["bfcl"]["p50"])]
             for r in comp],
            note="the compounding, measured: an agent whose calls are each valid with p "
                 "finishes clean with p^n"))
    wit = [f"{r['stream']} {w['case_id']}: {w['witness'][:160]!r} ({w['error'][:160]}; "
           f"replay {w['replay']})" for r in rows for w in r.get("witnesses", [])]
    if wit:
        blocks.append(Para("False accepts (constrained outputs the engine ended that "
                           "jsonschema rejects), a witness each:"))
        blocks.append(Bullets(wit))
    if block.get("notes"):
        blocks.append(Bullets(list(block["notes"])))
    fig = _plot(rows)
    if fig is not None:
        blocks.append(fig)
    return blocks
