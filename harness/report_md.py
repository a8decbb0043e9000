"""The Markdown report of one run: the comparison table, per-subset outcomes and plots.

Reads the run folder only (records + summary); plots with matplotlib's Agg backend.
Text from the corpus or engines (schema names, error messages) is escaped for Markdown
tables.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from harness import metrics, table
from harness.store import RunStore


def _md_cell(text: Any) -> str:
    s = "" if text is None else str(text)
    s = " ".join(s.split())
    for ch in ("\\", "|", "<", ">", "`", "*", "_", "[", "]"):
        s = s.replace(ch, "\\" + ch)
    return s[:200]


def _ecdf_plot(ax, data: dict[str, np.ndarray], xlabel: str, marks=(50, 99, 99.9)) -> None:
    for label, vals in data.items():
        if vals.size == 0:
            continue
        v = np.sort(vals)
        y = np.arange(1, v.size + 1) / v.size
        line, = ax.step(v, y, where="post", label=f"{label} (n={v.size:,})")
        for p in marks:
            q = np.percentile(v, p)
            ax.plot([q], [p / 100], marker="o", color=line.get_color(), markersize=3)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share ≤ x")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")


def plots(records: list[dict[str, Any]], summary: dict[str, Any], out_dir: Path) -> list[str]:
    """Write the plots; return their file names."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    timings = metrics.token_timings(records, summary["primary_serialization"])
    tbm = {k: (v["mask"] + v["commit"]) / 1000.0 for k, v in timings.items()}
    fig, ax = plt.subplots(figsize=(7, 4))
    _ecdf_plot(ax, tbm, "TBM: mask + commit per token (µs, log scale); dots: p50, p99, p99.9")
    ax.axvline(1000, color="grey", linestyle="--", linewidth=0.8)
    ax.set_title("Time between masks")
    fig.tight_layout()
    fig.savefig(out_dir / "tbm.png", dpi=120)
    plt.close(fig)
    written.append("tbm.png")

    sdf = metrics.schema_frame(records)
    ttfm = {}
    for label in summary["engines"]:
        e = sdf[sdf["engine"] == label] if len(sdf) else sdf
        if len(e):
            ttfm[label] = metrics.ttfm_values_ms(e, summary.get("timeout_s")).to_numpy(float)
    fig, ax = plt.subplots(figsize=(7, 4))
    _ecdf_plot(ax, ttfm, "TTFM: schema text → first mask (ms, log scale)", marks=(50, 90, 99))
    ax.set_title("Time to first mask (compile)")
    fig.tight_layout()
    fig.savefig(out_dir / "ttfm.png", dpi=120)
    plt.close(fig)
    written.append("ttfm.png")

    if len(sdf):
        ct = sdf.pivot_table(index=["engine"], columns="outcome", values="schema_id",
                             aggfunc="count", fill_value=0)
        fig, ax = plt.subplots(figsize=(7, 0.6 + 0.5 * len(ct)))
        left = np.zeros(len(ct))
        for col in ct.columns:
            ax.barh(ct.index, ct[col], left=left, label=col)
            left += ct[col].to_numpy()
        ax.set_xlabel("schemas")
        ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.35))
        ax.set_title("Outcomes per engine")
        fig.savefig(out_dir / "outcomes.png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        written.append("outcomes.png")
    return written


def write_report(store: RunStore, summary: dict[str, Any], out_dir: Path) -> Path:
    """``out_dir/report.md`` plus its PNG plots."""
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = store.read_meta()
    records = list(store.records())
    summary = {**summary, "timeout_s": meta["config"].get("timeout_s")}
    pngs = plots(records, summary, out_dir)
    sdf = metrics.schema_frame(records)
    lines = [f"# Run {_md_cell(meta['run_id'])}", ""]
    cfg = meta["config"]
    lines += [
        f"- suite: `{cfg['suite']}` ({meta['suite'].get('selected')} schemas of "
        f"{meta['suite'].get('files_on_disk')} on disk; sample={cfg.get('sample')}, "
        f"subsets={cfg.get('subsets')})",
        f"- tokenizer: {meta['tokenizer']['name']} ({meta['tokenizer']['size']:,} ids)",
        f"- limits: {cfg['timeout_s']:g} s and {cfg['memory_gib']} GiB per job, "
        f"{cfg['jobs']} worker(s), engines single-threaded",
        f"- serialisations: {', '.join(cfg['serializations'])}; outcomes and TBM from "
        f"`{cfg['primary']}`; EOS required after the last token",
        f"- machine: {meta['machine'].get('cpu_model', meta['machine'].get('processor'))}, "
        f"{meta['machine'].get('cpus')} CPUs; Python {meta['machine'].get('python')}; "
        f"commit {meta.get('git_commit')}",
        f"- parallel efficiency: {summary.get('parallel_efficiency')}",
        "",
        "## Engines", "",
    ]
    for e in meta["engines"]:
        state = "ran" if e["status"] == "run" else f"**not run**: {e.get('reason')}"
        lines.append(f"- `{e['engine']}` {e.get('version') or ''} options={e.get('options')}: {state}")
    lines += ["", "## Results", "", table.render_markdown(summary), ""]
    if len(sdf):
        lines += ["## Outcomes per subset", ""]
        ct = sdf.pivot_table(index=["subset", "engine"], columns="outcome",
                             values="schema_id", aggfunc="count", fill_value=0)
        cols = list(ct.columns)
        lines.append("| subset | engine | " + " | ".join(cols) + " |")
        lines.append("|:--|:--|" + "--:|" * len(cols))
        for (subset, engine), row in ct.iterrows():
            lines.append(f"| {_md_cell(subset)} | {_md_cell(engine)} | "
                         + " | ".join(str(int(row[c])) for c in cols) + " |")
        lines.append("")
    lines += ["## Plots", ""] + [f"![{p}]({p})" for p in pngs] + [""]
    bad = sdf[sdf["outcome"].isin(["timeout", "oom", "crash", "bad_input"])] if len(sdf) else sdf
    if len(bad):
        lines += ["## Jobs that did not finish", "", "| engine | schema | outcome | error |",
                  "|:--|:--|:--|:--|"]
        for _, r in bad.head(200).iterrows():
            lines.append(f"| {_md_cell(r['engine'])} | {_md_cell(r['schema_id'])} | "
                         f"{r['outcome']} | {_md_cell(r['error'])} |")
        lines.append("")
    path = out_dir / "report.md"
    path.write_text("\n".join(lines))
    return path
