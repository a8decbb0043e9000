"""The ``quality`` block of summary.json and its console table.

:func:`quality_rows` is the one function that computes every figure of the block from the
records: the summary, the report and the gate read it (the gate through the suite's
``gate_checks``), so each figure is recomputable from ``records.jsonl``.

Units: shares are fractions of outputs (0..1); ``mass_removed`` and ``top_masked`` are
per decode step, pooled over every step of every output of the row;
``logprob_per_token`` is nats per token written (the stop token included) under the model's
own distribution at temperature 1 with nothing removed; ``tokens_per_valid`` counts every
token written, failed attempts included, per schema-valid output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from harness.suite import Record, RunMeta, Summary, figures
from harness.suite.measure import ValidityOutput, validity_cell, validity_figures, wilson
from suites.quality.records import (FalseAccept, Output, QualityRow, QualitySummaryBlock,
                                    StreamFigures)

__all__ = ["gate_figures", "quality_rows", "stream_figures", "summary_block",
           "validity_outputs", "wilson"]

UNCONSTRAINED = "unconstrained"
MAX_WITNESSES = 3
N_BOOT = 1000


def _ratio_ci(num: np.ndarray, den: np.ndarray, seed: int = 0) -> list[float] | None:
    """95% bootstrap interval of ``sum(num) / sum(den)`` resampling schemas (the rows of
    ``num`` / ``den``); None with fewer than two schemas."""
    if len(num) < 2 or den.sum() == 0:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(num), size=(N_BOOT, len(num)))
    d = den[idx].sum(1)
    r = np.where(d > 0, num[idx].sum(1) / np.where(d > 0, d, 1), np.nan)
    r = r[np.isfinite(r)]
    if not r.size:
        return None
    return [round(float(np.quantile(r, 0.025)), 6), round(float(np.quantile(r, 0.975)), 6)]


def _share(flags: Sequence[bool]) -> float | None:
    return round(sum(flags) / len(flags), 6) if flags else None


def validity_outputs(outs: Iterable[Output]) -> list[ValidityOutput]:
    """The quality suite's outputs as :func:`harness.suite.measure.validity_figures` reads
    them: the tokens written are the decode steps (the stop token included), a runaway an
    output the budget ended."""
    out: list[ValidityOutput] = []
    for x in outs:
        v: ValidityOutput = {"parse_valid": x["parse_valid"], "schema_valid": x["schema_valid"],
                             "tokens": x["steps"], "runaway": x["end"] == "budget"}
        if "args_total" in x:
            v.update(name_match=x.get("name_match"), args_matched=x.get("args_matched", 0),
                     args_total=x.get("args_total", 0))
        out.append(v)
    return out


def stream_figures(outs: Sequence[tuple[str, Output]],
                   valid_unconstrained: Sequence[Output] = ()) -> StreamFigures:
    """The figures of one stream at one temperature from its ``(case_id, output)`` pairs;
    ``valid_unconstrained``: the unconstrained stream's schema-valid outputs at the same
    temperature (the log-probability they are compared with)."""
    o = [x for _, x in outs]
    steps = sum(x["steps"] for x in o)
    by_case: dict[str, list[Output]] = {}
    for cid, x in outs:
        by_case.setdefault(cid, []).append(x)
    mass_num = np.array([sum(sum(x["mass"]) for x in xs) for xs in by_case.values()])
    mass_den = np.array([sum(x["steps"] for x in xs) for xs in by_case.values()], dtype=float)
    run = [x for x in o if x["end"] == "budget"]
    run_tokens = sum(len(x["tokens"]) for x in run)
    lp = (sum(x["logprob"] for x in o) / steps) if steps else None
    vu_steps = sum(x["steps"] for x in valid_unconstrained)
    lpu = (sum(x["logprob"] for x in valid_unconstrained) / vu_steps) if vu_steps else None
    v = validity_figures(validity_outputs(o))
    width = max((len(x["mass"]) for x in o), default=0)
    by_pos: list[float | None] = []
    for i in range(width):
        col = [x["mass"][i] for x in o if len(x["mass"]) > i]
        by_pos.append(round(float(np.mean(col)), 6) if col else None)
    return {
        "outputs": v["outputs"],
        "parse_valid": v["parse_valid"],
        "schema_valid": v["schema_valid"],
        "schema_valid_ci": v["schema_valid_ci"],
        "attempts_per_valid": v["attempts_per_valid"],
        "tokens_per_valid": v["tokens_per_valid"],
        "mass_removed": round(float(mass_num.sum() / steps), 6) if steps else None,
        "mass_removed_ci": _ratio_ci(mass_num, mass_den),
        "top_masked": round(sum(x["top_masked"] for x in o) / steps, 6) if steps else None,
        "logprob_per_token": round(lp, 6) if lp is not None else None,
        "logprob_valid_unconstrained": round(lpu, 6) if lpu is not None else None,
        "logprob_gap": round(lp - lpu, 6) if lp is not None and lpu is not None else None,
        "runaway": v["runaway"],
        "runaway_whitespace": (round(sum(x["whitespace_tokens"] for x in run) / run_tokens, 6)
                               if run_tokens else None),
        "noncanonical": _share([x["noncanonical"] for x in o]),
        "accuracy": v["accuracy"],
        "bfcl": v["bfcl"],
        "mass_by_position": by_pos,
    }


def _engines(meta: RunMeta, records: Iterable[Record]) -> list[str]:
    order = [e["engine"] for e in meta.get("engines", [])] if meta else []
    seen = [r["engine"] for r in records]
    return [e for e in order if e in seen] + sorted(set(seen) - set(order))


def quality_rows(meta: RunMeta, records: Sequence[Record]) -> tuple[list[QualityRow], list[str]]:
    """One row per stream (``unconstrained``, then each engine row in the run's order)
    and the notes (an unconstrained stream that differs between the jobs of a schema, a
    false accept whose replay disagrees), from the records alone."""
    recs = [r for r in records if isinstance(r.get("quality"), dict)]
    notes: list[str] = []
    temps = sorted({x["temperature"] for r in recs for x in r["quality"]["outputs"]},
                   reverse=True)
    sampled = [t for t in temps if t > 0]
    t1 = sampled[0] if sampled else None
    # the unconstrained stream: the first job's of each schema (engine order), checked
    unc: dict[str, list[Output]] = {}
    for eng in _engines(meta, recs):
        for r in recs:
            if r["engine"] != eng:
                continue
            outs = [x for x in r["quality"]["outputs"] if x["stream"] == UNCONSTRAINED]
            if r["case_id"] not in unc:
                unc[r["case_id"]] = outs
            elif [x["tokens"] for x in outs] != [x["tokens"] for x in unc[r["case_id"]]]:
                notes.append(f"{r['case_id']}: the unconstrained stream of {eng}'s job differs "
                             "from the first job's (same model, same seeds): not deterministic")

    def pick(pairs, temp):
        return [(c, x) for c, x in pairs if x["temperature"] == temp]

    unc_pairs = [(c, x) for c, xs in sorted(unc.items()) for x in xs]

    def figures_of(pairs: list[tuple[str, Output]]) -> tuple[StreamFigures, StreamFigures]:
        def at(t):
            vu = [x for _, x in pick(unc_pairs, t) if x["schema_valid"]]
            return stream_figures(pick(pairs, t), vu)
        return (at(t1) if t1 is not None else stream_figures([]),
                at(0.0) if 0.0 in temps else stream_figures([]))

    rows: list[QualityRow] = []
    top, greedy = figures_of(unc_pairs)
    rows.append({"stream": UNCONSTRAINED, **top, "greedy": greedy, "compile_errors": 0,
                 "false_accepts": 0,
                 "witnesses": [], "disagreements": []})
    for eng in _engines(meta, recs):
        mine = sorted((r for r in recs if r["engine"] == eng), key=lambda r: r["case_id"])
        pairs = [(r["case_id"], x) for r in mine for x in r["quality"]["outputs"]
                 if x["stream"] != UNCONSTRAINED]
        top, greedy = figures_of(pairs)
        fas: list[FalseAccept] = [fa for r in mine for fa in r["quality"].get("false_accepts", [])]
        dis = [fa for fa in fas if not fa.get("agrees", True)]
        for fa in dis:
            notes.append(f"{eng} {fa['case_id']}: the engine wrote and ended an output "
                         f"jsonschema rejects, and the replay of its canonical tokenisation "
                         f"says {fa.get('replay')}: the two verdicts disagree")
        top["false_accepts"] = sum(1 for fa in fas if fa["temperature"] != 0.0)
        greedy["false_accepts"] = sum(1 for fa in fas if fa["temperature"] == 0.0)
        rows.append({"stream": eng, **top, "greedy": greedy,
                     "compile_errors": sum(1 for r in mine if r["quality"].get("compile_error")),
                     "witnesses": fas[:MAX_WITNESSES], "disagreements": dis[:MAX_WITNESSES]})
    return rows, notes


def gate_figures(meta: RunMeta, records: Sequence[Record]) -> dict[str, dict[str, Any]]:
    """What the gate holds against a baseline, per stream at temperature 1:
    ``schema_valid`` (worse down; Wilson interval) and ``mass_removed`` (worse up;
    bootstrap interval over schemas), from :func:`quality_rows`."""
    rows, _ = quality_rows(meta, records)
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        f = {"schema_valid": {"value": r.get("schema_valid"), "ci": r.get("schema_valid_ci"),
                              "worse": "down"}}
        if r["stream"] != UNCONSTRAINED:
            f["mass_removed"] = {"value": r.get("mass_removed"),
                                 "ci": r.get("mass_removed_ci"), "worse": "up"}
        out[r["stream"]] = f
    return out


def _row_cells(r: QualityRow) -> list[str]:
    unc = r["stream"] == UNCONSTRAINED
    return [r["stream"], validity_cell(r, "schema-valid"), validity_cell(r, "parse-valid"),
            validity_cell(r, "attempts/valid"),
            "–" if unc else figures.percent(r.get("mass_removed")),
            "–" if unc else figures.fixed(r.get("logprob_gap"), 3),
            validity_cell(r, "accuracy name / args"), validity_cell(r, "tokens/valid"),
            "–" if unc else figures.percent(r.get("top_masked")),
            figures.fixed(r.get("logprob_per_token"), 3),
            validity_cell(r, "runaway"), figures.percent(r.get("noncanonical")),
            "–" if unc else str(r.get("false_accepts", 0))]


HEADER = ["stream", "schema-valid", "parse-valid", "attempts/valid", "mass removed",
          "logprob gap", "accuracy name / args", "tokens/valid", "top masked",
          "logprob/token", "runaway", "noncanonical", "false accepts"]


def verdict_lines(rows: Sequence[QualityRow]) -> list[str]:
    """The verdict, one line per stream: validity and attempts per valid output, and for
    an engine row the mass it removed, the log-probability gap and accuracy."""
    out = []
    for r in rows:
        apv = r.get("attempts_per_valid")
        line = (f"{r['stream']}: schema-valid {figures.percent(r.get('schema_valid'))} "
                f"({figures.fixed(apv) if apv else 'no valid output'}"
                f"{' attempts per valid output' if apv else ''})")
        if r["stream"] != UNCONSTRAINED:
            line += (f", mass removed {figures.percent(r.get('mass_removed'))} per step, "
                     f"log-prob gap {figures.fixed(r.get('logprob_gap'), 3)} nats/token")
        acc = r.get("accuracy")
        if acc:
            line += (f", BFCL name {figures.percent(acc.get('name'))}, arguments "
                     f"{figures.percent(acc.get('arguments'))}")
        out.append(line)
    return out


def table(block: QualitySummaryBlock):
    from harness.suite.report import Table

    return Table(HEADER, [_row_cells(r) for r in block["rows"]], note=(
        "temperature 1, shares of outputs; mass removed / top masked per decode step; "
        "logprob/token in nats under the unmasked model, gap = the row's minus the "
        "unconstrained stream's schema-valid outputs'; accuracy against BFCL's ground truth"))


def summary_block(summary: Summary, meta: RunMeta, records: list[Record],
                  run_dir: Path | None) -> str | None:
    """Add ``summary["quality"]`` (:class:`QualitySummaryBlock`); return the console text."""
    from harness.suite.report import text_table

    rows, notes = quality_rows(meta, records)
    recs = [r for r in records if isinstance(r.get("quality"), dict)]
    if not recs:
        return None
    opts = (meta.get("config", {}) or {}).get("options", {}) or {}
    block: QualitySummaryBlock = {
        "model": recs[0]["quality"].get("model", {}),
        "schemas": len({r["case_id"] for r in recs}),
        "samples": int(opts.get("samples", 8)), "max_tokens": int(opts.get("max_tokens", 192)),
        "rows": rows, "notes": notes}
    summary["quality"] = block  # type: ignore[typeddict-unknown-key]
    lines = [f"quality: {block['schemas']} held-out schema(s), model "
             f"{block['model'].get('path')}", *("  " + v for v in verdict_lines(rows)),
             text_table(table(block))]
    for r in rows:
        b = r.get("bfcl")
        if b:
            lines.append(f"{r['stream']}: p per call on BFCL {figures.percent(b['p'])} "
                         f"({b['outputs']} outputs); 10 calls clean {figures.percent(b['p10'])}, "
                         f"50 calls {figures.percent(b['p50'])}")
    lines.extend(f"note: {n}" for n in notes)
    return "\n".join(lines)
