"""Report sections of the token-level suites (``mask-diff``, ``fuzz``), registered as
optional sections of :mod:`harness.report.markdown`: the mask diff against the reference engine
(with EOS and rollback checks), constraint tightness (a table and a plot), fuzzing, and the
first findings with the ``harness explain`` command that replays each
(:mod:`harness.report.findings`, shared with fuzz). Each builder returns ``None`` when its
suite did not run. Numbers come from :mod:`suites.mask_diff.summary` and
:mod:`harness.measure.tokens.findings`; nothing is recomputed from engines here.
"""

from __future__ import annotations


import numpy as np

from harness.suite import figures
from harness.suite.report import Figure, Para, ReportContext, Section, Table, findings_blocks
from harness.suite.report import figure_png, pyplot
from suites.mask_diff import summary as tsum

def sec_mask_diff(ctx: ReportContext) -> list[Section] | None:
    out = []
    for run in ctx.runs:
        recs = tsum._md_records(run.records)
        if not recs:
            continue
        engines = list(dict.fromkeys(r["engine"] for r in recs))
        rows = []
        for e in engines:
            mine = [r for r in recs if r["engine"] == e]
            d, er = tsum.mask_diff_block(mine), tsum.eos_rollback_block(mine)
            rows.append([e, f"{d['schemas']} ({d['schemas_no_oracle']})", str(d["steps"]),
                         f"{d['over_steps'] - d['over_ws_only_steps']} + {d['over_ws_only_steps']}",
                         f"{d['under_steps'] - d['under_ws_only_steps']} + {d['under_ws_only_steps']}",
                         f"{d['eos_over']} / {d['eos_under']}",
                         f"{d['witnesses'].get('false_accept', 0)} / {sum(d['witnesses'].values())}",
                         f"{d['over_witnesses'].get('valid', 0)} / {sum(d['over_witnesses'].values())}",
                         str(d["schemas_false_accept"]), str(d["false_rejects"]),
                         f"{er['eos_early']} / {er['eos_refused']}",
                         f"{er['rollback_differs']} / {er['rollback_checks']} "
                         f"({er['rollback_refused']} refused)",
                         str(d["oracle_rejected"])])
        tag = ctx.tag(run)
        blocks: list = [
            Para("Each valid instance's canonical tokenisation replayed through the engine and "
                 "the reference engine (the oracle, unbounded whitespace) in lockstep. "
                 "Over-constrained: the engine forbids tokens the spec allows; under-constrained: "
                 "it allows tokens the spec forbids (non-whitespace + whitespace-only steps). "
                 "A witness completes an extra token under the engine's own mask and validates "
                 "the document with strict JSON and jsonschema; an over-witness completes a "
                 "forbidden token under the oracle's mask (valid = a document the spec allows "
                 "and the engine cannot produce; invalid = an error of the oracle, listed as "
                 "an oracle_error finding)."),
            Table(["engine", "schemas (no oracle)", "steps", "over-constrained",
                   "under-constrained", "EOS over / under", "witnesses: false accept / drawn",
                   "over-witnesses: valid / drawn",
                   "schemas with a false accept", "false rejects", "EOS early / refused",
                   "rollback differs / checks", "oracle rejected"], rows),
        ]
        nop = tsum.no_oracle_pairs(recs)
        if nop:
            blocks += [Para("No oracle (the reference engine refused the schema or ran out of "
                            "time): engines compared with each other, step by step."),
                       Table(["engines", "schemas", "steps", "masks differ", "first difference"],
                             [[" vs ".join(p["engines"]), str(p["schemas"]), str(p["steps"]),
                               str(p["mask_differs"]),
                               f"harness explain {run.path} {p['first'][0]} --instance "
                               f"{p['first'][1]} --step {p['first'][2]}" if p["first"] else "–"]
                              for p in nop], align=["l", "r", "r", "r", "l"])]
        out.append(Section(f"Token-level mask diff{tag}", blocks))
        out.append(Section(f"Mask-diff findings{tag}", findings_blocks(run, recs),
                           level=3))
    return out or None


def _tightness_figure(sizes: dict[str, dict], k: int) -> Figure:
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
    names = sorted(sizes)
    for e in names:
        v = np.sort(np.asarray([n for _, n in sizes[e].values()], dtype=float))
        if v.size:
            ax1.step(np.maximum(v, 0.8), np.arange(1, v.size + 1) / v.size, where="post", label=e)
    ax1.set_xscale("log")
    ax1.axvline(1, color="grey", lw=0.6, ls=":")
    ax1.axvline(k, color="grey", lw=0.6, ls="--")
    ax1.set_xlabel("allowed tokens per step (log)")
    ax1.set_ylabel("share of steps ≤ x")
    ax1.legend(fontsize=7)
    ax1.set_title("Allowed-set size per step")
    x = np.arange(len(names))
    forced, lek = [], []
    for e in names:
        v = np.asarray([n for _, n in sizes[e].values()])
        forced.append(float((v == 1).mean()) if v.size else 0.0)
        lek.append(float((v <= k).mean()) if v.size else 0.0)
    ax2.bar(x - 0.2, forced, 0.4, label="forced (1 token)")
    ax2.bar(x + 0.2, lek, 0.4, label=f"≤ {k} tokens")
    ax2.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    ax2.set_ylabel("share of steps")
    ax2.legend(fontsize=7)
    ax2.set_title("Tightness")
    fig.tight_layout()
    return figure_png(fig, "tightness.png", "allowed-set sizes per step on the valid instances' "
                      "canonical tokenisations, each engine over the steps it reached (the "
                      "pair table compares common steps only); "
                      f"'{tsum.ORACLE}' is the spec's own set (the oracle)")


def sec_tightness(ctx: ReportContext) -> list[Section] | None:
    out = []
    for run in ctx.runs:
        recs = tsum._md_records(run.records)
        if not recs:
            continue
        k = tsum._k(recs)
        sizes = tsum.sizes_by(recs)
        subs = tsum.tightness_subsets(sizes, k)
        engines = sorted(sizes)
        rows = [[s] + [f"{figures.percent(c[e]['forced_share'])} / {figures.percent(c[e]['le_k_share'])}" if e in c else "–"
                       for e in engines] for s, c in subs.items()]
        total = {e: tsum.tightness_of(np.asarray([n for _, n in sizes[e].values()]), k)
                 for e in engines}
        rows.append(["all"] + [f"{figures.percent(total[e]['forced_share'])} / {figures.percent(total[e]['le_k_share'])}"
                               for e in engines])
        per_schema = tsum.tightness_schemas(sizes, k)
        srows = [[case] + [f"{figures.percent(c[e]['forced_share'])} / {figures.percent(c[e]['le_k_share'])} "
                           f"({c[e]['steps']})" if e in c else "–" for e in engines]
                 for case, c in per_schema.items()]
        pairs = tsum.tightness_pairs(sizes, k)
        tag = ctx.tag(run)
        out.append(Section(f"Constraint tightness{tag}", [
            Para(f"Per step, the size of the allowed set (EOS counts as one token). Cells: share "
                 f"of steps with exactly one allowed token (forced: jump-forward potential) / "
                 f"with at most k = {k} (a drafter could propose them all)."),
            _tightness_figure(sizes, k),
            Table(["subset", *engines], rows),
            Para("Per schema (forced / ≤k, steps):"),
            Table(["schema", *engines], srows),
            Para("How often two engines disagree on the same step (same instance, same prefix):"),
            Table(["engines", "steps", "size differs", "forced differs", f"≤{k} differs"],
                  [[" vs ".join(p["engines"]), str(p["steps"]), figures.percent(p["size_differs"]),
                    figures.percent(p["forced_differs"]), figures.percent(p["le_k_differs"])] for p in pairs]),
        ]))
    return out or None
