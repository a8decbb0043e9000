"""``harness gate``: compare a run's records with a committed baseline.

Outcome ratchet, per (engine, schema) — see :func:`compare_outcome`:

- a schema that passed and now does not → regression;
- any new invalidation error (an invalid instance accepted), any new crash, timeout or
  OOM, a corpus file that became unusable → regression;
- a schema that compiled and now does not, or that had false accepts and now has false
  rejects → regression;
- anything now passing, or failing less badly (a crash that became a clean compile
  error, a compile error that now compiles) → improvement: reported, never a failure;
  the message gives the command that refreshes the baseline;
- a (engine, schema) of the baseline that the run lacks → failure (coverage shrank); one
  the baseline lacks → reported as new.

Latency, per engine, over the schemas both sides have timings for: TBM p50, TBM p99 and
TTFM p50 (estimated from per-schema sketches, see :mod:`harness.analysis.baseline`), the ratio
run / baseline and its bootstrap confidence interval from resampling schemas (paired:
the same resample on both sides; seeded). A check fails only when the whole interval
lies above ``1 + threshold``, so noise does not flap the gate. A TBM percentile that the
worker's preemptions may have made on either side (a loaded machine,
:func:`harness.measure.figures.preemption`) is not compared, and says so. ``latency="warn"`` reports
such a check without failing; ``"off"`` skips latency.

Exit codes (:mod:`harness.cli.gate`): 0 pass, 1 regression, 2 usage or input error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import numpy as np

from harness.measure import outcomes as O
from harness.analysis.baseline import (STATS, bootstrap_stat, headline_figures, quantile_of,
                                       resample_counts, schema_latency, usable)
from harness.analysis.verdict import headline, unit_outcomes
from harness.measure import figures
from harness.measure.figures import number
from harness.records import Headline, Record, RunMeta

REGRESSION, IMPROVEMENT, CHANGED, SAME = "regression", "improvement", "changed", "same"

_COMPILED_FAILURES = (O.VALIDATION_ERROR, O.INVALIDATION_ERROR)


def compare_outcome(old: str, new: str) -> tuple[str, str]:
    """(kind, explanation) of an outcome change of one (engine, schema)."""
    if old == new:
        return SAME, f"still {new}"
    if new == O.PASSING:
        return IMPROVEMENT, f"now passing (was {old})"
    if old == O.PASSING:
        return REGRESSION, f"was passing, now {new}"
    if new == O.INVALIDATION_ERROR:
        return REGRESSION, f"new invalidation error: an invalid instance is accepted (was {old})"
    if new in O.DEATHS:
        return REGRESSION, f"new {new} (was {old})"
    if new == O.BAD_INPUT:
        return REGRESSION, f"the corpus file is unusable now (was {old})"
    if old == O.BAD_INPUT:
        return CHANGED, f"the corpus file is usable again; now {new}"
    if new == O.COMPILE_ERROR:
        if old in _COMPILED_FAILURES:
            return REGRESSION, f"no longer compiles (was {old})"
        return IMPROVEMENT, f"a clean compile error now (was {old})"
    # new == validation_error
    if old == O.INVALIDATION_ERROR:
        return REGRESSION, "new validation error: a valid instance is rejected (was invalidation_error)"
    return IMPROVEMENT, f"compiles now (was {old}), though a valid instance is rejected"


@dataclass
class Check:
    suite: str  # "verdict" | "outcomes" | "latency" | "figures"
    engine: str
    name: str  # schema id or statistic
    status: str  # "pass" | "fail" | "improved" | "new" | "warn" | "skip"
    message: str = ""
    detail: str = ""


@dataclass
class LatencyResult:
    engine: str
    stat: str  # key in baseline.STATS
    label: str
    unit: str
    baseline: float
    run: float
    ratio: float
    lo: float
    hi: float
    schemas: int


@dataclass
class GateResult:
    checks: list[Check] = field(default_factory=list)
    latency: list[LatencyResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    threshold: float = 0.2
    confidence: float = 0.95
    n_boot: int = 2000
    seed: int = 0
    latency_mode: str = "gate"

    def count(self, suite: str, status: str) -> int:
        return sum(1 for c in self.checks if c.suite == suite and c.status == status)

    @property
    def failed(self) -> bool:
        return any(c.status == "fail" for c in self.checks)


def _records_by_key(records: list[Record]) -> dict[tuple[str, str], Record]:
    return {(r["engine"], r["case_id"]): r for r in records}  # a resumed job: the last wins


def _one_line(text: Any, limit: int = 300) -> str:
    s = " ".join(("" if text is None else str(text)).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def check_verdict(hl: Headline, result: GateResult) -> None:
    """The run's headline alerts (e.g. a server that does not enforce the constraint) fail
    the gate whatever the baseline says: no baseline can make them acceptable."""
    for eng, e in hl["engines"].items():
        for alert in e.get("alerts") or ():
            result.checks.append(Check("verdict", eng, "headline", "fail", alert))


def check_outcomes(baseline: dict[str, Any], heads: dict[tuple[str, str], str],
                   records: list[Record], run_engines: dict[str, dict[str, Any]],
                   result: GateResult) -> None:
    """The ratchet over every (engine, unit): the run's unit outcomes (as its headline
    counts them) against the baseline's."""
    runs = {k: r for k, r in _records_by_key(records).items() if k in heads}
    base = baseline["outcomes"]
    for eng in base:
        info = run_engines.get(eng)
        if info is None:
            result.notes.append(f"engine {eng} is in the baseline but not in the run")
        elif info.get("status") == "not_run":
            result.notes.append(f"engine {eng} was not run: {info.get('reason')}")
    for eng, schemas in base.items():
        for sid, old in schemas.items():
            rec = runs.get((eng, sid))
            if rec is None:
                result.checks.append(Check("outcomes", eng, sid, "fail",
                                           f"missing from the run (baseline: {old}): coverage shrank"))
                continue
            new = heads[(eng, sid)]
            kind, why = compare_outcome(old, new)
            err = _one_line(rec.get("error")) if new != O.PASSING else ""
            status = {SAME: "pass", REGRESSION: "fail", IMPROVEMENT: "improved", CHANGED: "pass"}[kind]
            result.checks.append(Check("outcomes", eng, sid, status, why, err))
    for (eng, sid), rec in sorted(runs.items()):
        if sid not in base.get(eng, {}):
            result.checks.append(Check("outcomes", eng, sid, "new",
                                       f"not in the baseline (now {heads[(eng, sid)]})"))


def check_latency(baseline: dict[str, Any], records: list[Record], primary: str,
                  run_headline: Headline, result: GateResult) -> None:
    """Per engine and statistic: the headline figure of each side (what ``summary.json`` and
    every report show), their ratio, and its interval: the paired bootstrap's relative
    spread over the schemas both sides have (their sketches), applied to that ratio."""
    run_lat = schema_latency(records, primary)
    limit = 1 + result.threshold
    for eng, bl in baseline.get("latency", {}).items():
        b_schemas = bl.get("schemas", {})
        r_schemas = run_lat.get(eng, {})
        b_fig = bl.get("headline") or {}
        r_fig = headline_figures((run_headline.get("engines") or {}).get(eng) or {})
        for key, label, unit in STATS:
            common = sorted(s for s in b_schemas if s in r_schemas
                            and usable(b_schemas[s], key) and usable(r_schemas[s], key))
            if len(common) < 2:
                result.checks.append(Check("latency", eng, label, "skip",
                                           f"{len(common)} schema(s) with timings on both sides: not compared"))
                continue
            b_val, r_val = b_fig.get(key), r_fig.get(key)
            if b_val is None or r_val is None:
                why = ("censored: at or past the time limit" if key.startswith("ttfm")
                       else "not measured")
                side = "baseline" if b_val is None else "run"
                result.checks.append(Check("latency", eng, label, "skip",
                                           f"the {side}'s {label} is {why}: no ratio"))
                continue
            if key.startswith(("tbm", "ttfm")):
                kind = "tbm" if key.startswith("tbm") else "ttfm"
                busy = [(side, reason) for side, fig in (("run", r_fig), ("baseline", b_fig))
                        if (reason := figures.preemption(
                            {"steps": fig.get(f"{kind}_steps"),
                             "preempted": fig.get(f"{kind}_preempted")},
                            100 * quantile_of(key), "TTFM" if kind == "ttfm" else None))]
                if busy:
                    side, why = busy[0]
                    result.checks.append(Check(
                        "latency", eng, label, "skip",
                        f"in the {side}, {why}: not compared (measure it on a quiet machine)"))
                    continue
            # paired over schemas (the same resample on both sides), independent within
            counts = resample_counts(len(common), result.n_boot, result.seed)
            bv = bootstrap_stat([b_schemas[s] for s in common], key, counts,
                                np.random.default_rng(result.seed + 1))
            rv = bootstrap_stat([r_schemas[s] for s in common], key, counts,
                                np.random.default_rng(result.seed + 2))
            with np.errstate(divide="ignore", invalid="ignore"):
                ratios = rv / bv
            boot = ratios[1:][np.isfinite(ratios[1:])]
            if not np.isfinite(ratios[0]) or ratios[0] <= 0 or not boot.size:
                result.checks.append(Check("latency", eng, label, "skip",
                                           "a side is censored or zero over the matched "
                                           "schemas: no interval"))
                continue
            a = (1 - result.confidence) / 2
            point = r_val / b_val
            lo, hi = point * np.quantile(boot, [a, 1 - a]) / ratios[0]
            lr = LatencyResult(eng, key, label, unit, float(b_val), float(r_val), float(point),
                               float(lo), float(hi), len(common))
            result.latency.append(lr)
            msg = (f"{label} {_num(lr.baseline)} → {_num(lr.run)} {unit}: ×{lr.ratio:.2f} "
                   f"[{lr.lo:.2f}, {lr.hi:.2f}] ({round(result.confidence * 100)}% CI, "
                   f"{lr.schemas} schemas)")
            if lo > limit:
                status = "fail" if result.latency_mode == "gate" else "warn"
                msg += f": the whole interval is above ×{limit:.2f}"
            else:
                status = "pass"
            result.checks.append(Check("latency", eng, label, status, msg))


def _num(x: float) -> str:
    return number(float(x))


def rename_rows(records: list[Record], meta: RunMeta,
                pairs: list[str]) -> tuple[list[Record], RunMeta]:
    """The run's records and engine statuses with each ``BASE=RUN`` pair's row ``RUN``
    relabelled ``BASE``, so the gate judges it against the baseline's ``BASE`` (rows of
    ``BASE`` the run also holds are dropped). Raises ValueError for a malformed pair or a
    row the run does not hold."""
    if not pairs:
        return records, meta
    rename: dict[str, str] = {}
    for p in pairs:
        base, sep, new = p.partition("=")
        if not sep or not base.strip() or not new.strip():
            raise ValueError(f"expected BASE=RUN (two engine rows), got {p!r}")
        rename[new.strip()] = base.strip()
    have = {r["engine"] for r in records}
    missing = sorted(set(rename) - have)
    if missing:
        raise ValueError(f"the run has no row {', '.join(missing)}; its rows: "
                         f"{', '.join(sorted(have))}")
    targets = set(rename.values())
    out: list[Record] = [({**r, "engine": rename[r["engine"]]} if r["engine"] in rename else r)
           for r in records if r["engine"] in rename or r["engine"] not in targets]
    engines = [({**e, "engine": rename[e["engine"]], "compared_as": e["engine"]}
                if e["engine"] in rename else e)
               for e in meta.get("engines", []) if e["engine"] in rename
               or e["engine"] not in targets]
    renamed: RunMeta = {**meta, "engines": engines}
    return out, renamed


def run_gate(baseline: dict[str, Any], meta: RunMeta, records: list[Record], *,
             threshold: float = 0.2, confidence: float = 0.95, n_boot: int = 2000, seed: int = 0,
             latency: str = "gate") -> GateResult:
    result = GateResult(threshold=threshold, confidence=confidence, n_boot=n_boot, seed=seed,
                        latency_mode=latency)
    cfg = meta.get("config", {})
    primary = cfg.get("primary", "ascii")
    brun = baseline.get("run", {})
    run_engines = {e["engine"]: e for e in meta.get("engines", [])}
    for eng, b in (brun.get("engines") or {}).items():
        v_old, v_new = b.get("version"), run_engines.get(eng, {}).get("version")
        if eng in run_engines and v_old != v_new:
            result.notes.append(f"engine {eng}: version {v_old} in the baseline, {v_new} in the run")
    tok_old, tok_new = brun.get("tokenizer"), (meta.get("tokenizer") or {}).get("name")
    if tok_old and tok_new and tok_old != tok_new:
        result.notes.append(f"tokenizer {tok_new} in the run, {tok_old} in the baseline: outcomes may differ for that reason")
    hl = headline(meta, records)
    check_verdict(hl, result)
    check_outcomes(baseline, unit_outcomes(meta, records), records, run_engines, result)
    if latency != "off":
        check_latency(baseline, records, primary, hl, result)
    check_figures(baseline, meta, records, result)
    return result


def check_figures(baseline: dict[str, Any], meta: RunMeta, records: list[Record],
                  result: GateResult) -> None:
    """The suite's own gated figures (``SuiteBase.gate_figures``: the quality suite's
    ``schema_valid`` and ``mass_removed`` per stream), the run's from its records by the
    suite's function, against the baseline's: a figure fails when its whole 95% interval
    lies on the worse side of the baseline's value (below it for ``worse`` ``"down"``,
    above it for ``"up"``), so noise within the interval never fails."""
    from harness.analysis.baseline import suite_figures

    base = baseline.get("figures") or {}
    if not base:
        return
    run = suite_figures(meta, records) or {}
    for row, figs in base.items():
        for name, b in figs.items():
            r = (run.get(row) or {}).get(name)
            if r is None or r.get("value") is None or b.get("value") is None:
                result.checks.append(Check("figures", row, name, "skip",
                                           "not measured in the run" if r is None or
                                           r.get("value") is None else "not in the baseline"))
                continue
            ci = r.get("ci") or [r["value"], r["value"]]
            worse = b.get("worse", "down")
            failed = ci[1] < b["value"] if worse == "down" else ci[0] > b["value"]
            msg = (f"{b['value']:.4g} → {r['value']:.4g} [{ci[0]:.4g}, {ci[1]:.4g}] "
                   f"({'lower' if worse == 'down' else 'higher'} is worse)")
            result.checks.append(Check("figures", row, name, "fail" if failed else "pass", msg))


# --------------------------------------------------------------------------------------
# Output


def render_text(result: GateResult, refresh: str, head: list[str], max_lines: int = 200) -> str:
    lines = list(head)
    lines += [f"note: {n}" for n in result.notes]
    alerts = [c for c in result.checks if c.suite == "verdict"]
    for c in alerts:
        lines.append(f"  VERDICT    {c.engine:<12} {c.message}")
    oc = [c for c in result.checks if c.suite == "outcomes"]
    n_fail = result.count("outcomes", "fail")
    n_miss = sum(1 for c in oc if c.status == "fail" and c.message.startswith("missing"))
    lines.append(
        f"outcomes: {sum(1 for c in oc if c.status != 'new')} (engine, schema) checks: "
        f"{result.count('outcomes', 'pass')} unchanged, {n_fail - n_miss} regression(s), "
        f"{n_miss} missing, {result.count('outcomes', 'improved')} improvement(s); "
        f"{result.count('outcomes', 'new')} new")
    tags = {"fail": "REGRESSION", "improved": "IMPROVED", "new": "NEW"}
    for status in ("fail", "improved", "new"):
        sel = [c for c in oc if c.status == status]
        for c in sel[:max_lines]:
            tag = "MISSING" if c.message.startswith("missing") else tags[status]
            lines.append(f"  {tag:<10} {c.engine:<12} {c.name}: {c.message}"
                         + (f" — {c.detail}" if c.detail and status == "fail" else ""))
        if len(sel) > max_lines:
            lines.append(f"  … and {len(sel) - max_lines} more {tags[status].lower()} (see --junit)")
    if result.latency_mode == "off":
        lines.append("latency: not checked (--latency off)")
    else:
        mode = {"gate": "fails", "warn": "warns (--latency warn)"}[result.latency_mode]
        lines.append(
            f"latency: ratio run/baseline over the schemas both have, "
            f"{round(result.confidence * 100)}% bootstrap CI ({result.n_boot} resamples of the schemas, and for "
            f"TBM of each schema's token steps; "
            f"seed {result.seed}); {mode} only when the whole CI is above ×{1 + result.threshold:.2f}")
        compared = {(lr.engine, lr.label): lr for lr in result.latency}
        for c in result.checks:  # in the order checked: per engine, per statistic
            if c.suite != "latency":
                continue
            lr = compared.get((c.engine, c.name))
            if lr is None:
                lines.append(f"  {c.engine:<12} {c.name:<9} skipped: {c.message}")
                continue
            verdict = {"pass": "ok", "fail": "REGRESSION", "warn": "WARNING (not failing)"}[c.status]
            lines.append(f"  {lr.engine:<12} {lr.label:<9} {_num(lr.baseline):>8} → {_num(lr.run):>8} {lr.unit:<2}"
                         f"  ×{lr.ratio:.2f} [{lr.lo:.2f}, {lr.hi:.2f}]  n={lr.schemas:<4} {verdict}")
    figs = [c for c in result.checks if c.suite == "figures"]
    if figs:
        lines.append("figures: the run's 95% interval against the baseline's value; fails "
                     "only when the whole interval is on the worse side")
        for c in figs:
            verdict = {"pass": "ok", "fail": "REGRESSION", "skip": "skipped"}[c.status]
            lines.append(f"  {c.engine:<18} {c.name:<14} {c.message}  {verdict}")
    n_lat = result.count("latency", "fail")
    n_fig = result.count("figures", "fail")
    if result.failed:
        parts = []
        if alerts:
            parts.append(f"{len(alerts)} headline alert(s) ({alerts[0].message.split(':')[0]})")
        if n_fail - n_miss:
            parts.append(f"{n_fail - n_miss} outcome regression(s)")
        if n_miss:
            parts.append(f"{n_miss} baseline job(s) missing from the run")
        if n_lat:
            parts.append(f"{n_lat} latency regression(s)")
        if n_fig:
            parts.append(f"{n_fig} figure regression(s)")
        lines.append("GATE FAILED: " + ", ".join(parts))
        lines.append(f"If these changes are intended, refresh the baseline: {refresh}")
    else:
        warn = result.count("latency", "warn")
        lines.append("GATE PASSED" + (f" ({warn} latency warning(s))" if warn else ""))
        if result.count("outcomes", "improved") or result.count("outcomes", "new"):
            lines.append(f"Improvements or new schemas are not in the baseline yet; refresh it with: {refresh}")
    return "\n".join(lines)


def _xml_safe(text: str) -> str:
    """Drop characters XML 1.0 cannot hold (engine messages may carry control bytes)."""
    return "".join(ch for ch in text if ch in "\t\n\r" or (" " <= ch <= "\ud7ff")
                   or ("\ue000" <= ch <= "\ufffd") or ("\U00010000" <= ch <= "\U0010ffff"))


def write_junit(result: GateResult, path: Path, refresh: str) -> None:
    root = ET.Element("testsuites", name="harness gate")
    for suite in ("verdict", "outcomes", "latency"):
        checks = [c for c in result.checks if c.suite == suite]
        ts = ET.SubElement(root, "testsuite", name=f"harness-gate.{suite}", tests=str(len(checks)),
                           failures=str(sum(c.status == "fail" for c in checks)), errors="0",
                           skipped=str(sum(c.status == "skip" for c in checks)))
        for c in checks:
            tc = ET.SubElement(ts, "testcase", classname=_xml_safe(f"{suite}.{c.engine}"),
                               name=_xml_safe(c.name))
            if c.status == "fail":
                f = ET.SubElement(tc, "failure", message=_xml_safe(c.message),
                                  type="coverage" if c.message.startswith("missing") else "regression")
                f.text = _xml_safe("\n".join(x for x in (c.message, c.detail,
                                                         f"refresh if intended: {refresh}") if x))
            elif c.status == "skip":
                ET.SubElement(tc, "skipped", message=_xml_safe(c.message))
            elif c.message and c.status != "pass" or suite == "latency":
                out = ET.SubElement(tc, "system-out")
                prefix = {"improved": "IMPROVED: ", "new": "NEW: ", "warn": "WARNING (latency warn-only): "}
                out.text = _xml_safe(prefix.get(c.status, "") + c.message)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
