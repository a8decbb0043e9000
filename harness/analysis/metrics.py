"""Metrics: records → tables and the documented ``summary.json``. Never runs an engine.

Definitions (MaskBench's, plus the EOS check it lacks):

- **TBM** (time between masks, µs): per replayed token, mask fill + commit, pooled over
  every token of every instance of the primary serialisation, for the engine. A replay
  stops at the first rejected token, as MaskBench does.
- **TTFM** (time to first mask, ms): schema text → compiled grammar → matcher → first
  mask filled. A job that timed out before its first mask has a TTFM of *at least* the
  limit: it is censored (counted apart, never averaged; a percentile that falls among the
  censored values is shown as ``≥ limit``), see :mod:`harness.measure.figures`.
- **false rejects / false accepts**: instances, per serialisation, whose replay verdict
  differs from the expected verdict (jsonschema's; the corpus label where jsonschema
  could not decide). Only schemas that compiled and finished count. Where the suite's
  verdict model applies the corpus-label split (jsonschemabench), the headline counts
  (``false_rejects``, ``false_accepts``, ``outcomes``) are over the instances where
  jsonschema and the corpus label agree; the instances where they disagree are counted
  apart (``*_label_disagrees``, with the reason where it is known), and ``outcomes_all``
  counts the records' own outcomes (jsonschema on every instance).
- **escapes change the verdict**: schemas whose outcome differs between serialisations.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterable

import numpy as np
import pandas as pd

from harness.analysis import verdict
from harness.analysis.verdict import record_outcome
from harness.measure import outcomes
from harness.measure.groundtruth import GroundTruth
from harness.measure.outcomes import instance_outcome
from harness.store.run_store import SUMMARY_FORMAT
from harness.records import Record, RunMeta, Summary

TBM_PERCENTILES = (25, 50, 75, 90, 95, 99, 99.9)
TTFM_PERCENTILES = verdict.TTFM_PERCENTILES


def _pct_key(p: float) -> str:
    return f"p{p:g}"


def distribution(values_us: np.ndarray, percentiles=TBM_PERCENTILES) -> dict[str, float]:
    """avg, percentiles, max (same unit as the input); empty → {}."""
    if values_us.size == 0:
        return {}
    out = {"avg": float(values_us.mean())}
    for p, v in zip(percentiles, np.percentile(values_us, percentiles)):
        out[_pct_key(p)] = float(v)
    out["max"] = float(values_us.max())
    return out


def schema_frame(records: Iterable[Record]) -> pd.DataFrame:
    """One row per (engine, schema) job."""
    rows = []
    for r in records:
        rows.append({
            "engine": r["engine"], "case_id": r["case_id"], "subset": r.get("subset"),
            "outcome": r["outcome"], "error": r.get("error"), "phase": r.get("phase"),
            "compile_ms": r["compile_ns"] / 1e6 if r.get("compile_ns") is not None else None,
            "ttfm_ms": r["ttfm_ns"] / 1e6 if r.get("ttfm_ns") is not None else None,
            "tokens": r.get("tokens", 0), "busy_s": r.get("busy_ns", 0) / 1e9,
            "wall_s": r.get("wall_ns", 0) / 1e9,
            "started_at": r.get("started_at"), "finished_at": r.get("finished_at"),
            "n_instances": len(r.get("instances", ())),
        })
    return pd.DataFrame(rows)


def instance_frame(records: Iterable[Record]) -> pd.DataFrame:
    """One row per (engine, schema, instance, serialisation) replay."""
    rows = []
    for r in records:
        if r["outcome"] in outcomes.DEATHS or r["outcome"] in (outcomes.COMPILE_ERROR, outcomes.BAD_INPUT):
            continue
        for inst in r.get("instances", ()):
            for ser, res in inst.get("results", {}).items():
                rows.append({
                    "engine": r["engine"], "case_id": r["case_id"],
                    "subset": r.get("subset"), "index": inst["index"],
                    "serialization": ser, "expected": inst["expected"],
                    "label": inst["label"], "truth": inst.get("truth"),
                    "label_disagrees": bool(inst.get("label_disagrees")),
                    "label_reason": inst.get("label_reason"),
                    "status": res["status"],
                    "finding": instance_outcome(inst["expected"], res["status"]),
                    "n_tokens": res.get("n_tokens"),
                    "steps": len(res.get("mask_ns", ())),
                    "reject_at": res.get("reject_at"),
                    "disagreement": res.get("disagreement"),
                })
    return pd.DataFrame(rows)


def token_timings(records: Iterable[Record], serialization: str) -> dict[str, dict[str, np.ndarray]]:
    """engine → {"mask": ns array, "commit": ns array} over the given serialisation."""
    acc: dict[str, dict[str, list]] = defaultdict(lambda: {"mask": [], "commit": []})
    for r in records:
        for inst in r.get("instances", ()):
            results = inst.get("results", {})
            # an exact-text instance (suite drift) has one replay, "text": it stands in
            res = results.get(serialization, results.get("text"))
            if res and "mask_ns" in res:
                acc[r["engine"]]["mask"].append(res["mask_ns"])
                acc[r["engine"]]["commit"].append(res["commit_ns"])
    out = {}
    for eng, d in acc.items():
        out[eng] = {k: (np.concatenate([np.asarray(x, dtype=np.int64) for x in v])
                        if v else np.zeros(0, np.int64)) for k, v in d.items()}
    return out


#: Outcomes of jobs that finished their replays.
FINISHED = verdict.FINISHED


def verdict_flips(records: Iterable[Record], engine: str,
                  serializations: list[str]) -> list[dict[str, Any]]:
    """The engine's schemas whose (headline) outcome differs between serialisations:
    ``[{"case_id", "outcomes": {ser: outcome}}]``, e.g. an engine that refuses ``\\u``
    escapes fails a schema in ``ascii`` that it passes in ``unicode``."""
    sers = [s for s in serializations if s != "text"]
    out = []
    for r in records:
        if r["engine"] != engine or r["outcome"] not in FINISHED or len(sers) < 2:
            continue
        per = {s: record_outcome(r, s) for s in sers}
        if len(set(per.values())) > 1:
            out.append({"case_id": r["case_id"], "outcomes": per})
    return out


def ttfm_values_ms(df: pd.DataFrame) -> pd.Series:
    """TTFM per schema (ms) of the jobs that measured one (a job that timed out before its
    first mask has none: it is censored, see :func:`harness.measure.figures.censored_distribution`)."""
    return df["ttfm_ms"].dropna()


def ttfm_censored(df: pd.DataFrame) -> int:
    """Jobs that timed out before their first mask (TTFM at least the limit)."""
    return int(((df["outcome"] == outcomes.TIMEOUT) & df["ttfm_ms"].isna()).sum()) if len(df) else 0


def summarize(records: list[Record], meta: RunMeta, suite: type | None = None) -> Summary:
    """The machine-readable summary (``summary.json``; :doc:`docs/metrics.md`): the headline
    (:func:`harness.analysis.verdict.headline`, under ``"headline"``) and, per engine, the
    whole table, whose outcome, soundness and TTFM figures are the headline's own.
    ``suite``: the run's suite class when the caller holds it (else looked up from
    ``meta``, once)."""
    cfg = meta.get("config", {})
    primary = cfg.get("primary", "ascii")
    sers = cfg.get("serializations", [primary])
    if suite is None:
        suite = verdict.suite_of(meta)
    hl = verdict.headline(meta, records, suite)
    model = verdict.model_of(meta, suite)
    records = [r for r in records if verdict.is_unit(r, model)]
    sdf = schema_frame(records)
    idf = instance_frame(records)
    if len(idf) and (idf["serialization"] == "text").any():
        # exact-text instances (suite drift) are counted under "text"; a run of nothing
        # else has no ascii/unicode/compact replays to count
        replays = idf.loc[~idf["serialization"].str.startswith("seg"), "serialization"]
        sers = ["text"] if (replays == "text").all() else [*sers, "text"]
    if len(idf):
        # only the serialisations something was replayed in (the token suites replay the
        # primary alone): a row of 0 / 0 would read as a measurement
        replayed = set(idf["serialization"])
        sers = [x for x in sers if x in replayed] or [primary]
    timings = token_timings(records, primary)
    engines: dict[str, Any] = {}
    for label, h in hl["engines"].items():
        einfo = next((e for e in meta.get("engines", []) if e["engine"] == label), {})
        if h.get("status") == "not_run":
            engines[label] = dict(h)
            continue
        e_s = sdf[sdf["engine"] == label] if len(sdf) else sdf
        e_i = idf[idf["engine"] == label] if len(idf) else idf
        mine = [r for r in records if r["engine"] == label]
        counts_all = Counter(r["outcome"] for r in mine)
        # per serialisation: false rejects, false accepts, valid and invalid instances;
        # ``_ld`` those whose corpus label disagrees with ground truth
        fr: dict[str, int] = {}
        fa: dict[str, int] = {}
        nv: dict[str, int] = {}
        ni: dict[str, int] = {}
        fr_ld: dict[str, int] = {}
        fa_ld: dict[str, int] = {}
        nv_ld: dict[str, int] = {}
        ni_ld: dict[str, int] = {}
        for ser in sers:
            d = e_i[e_i["serialization"] == ser] if len(e_i) else e_i
            if not len(d):
                for m in (fr, fa, nv, ni, fr_ld, fa_ld, nv_ld, ni_ld):
                    m[ser] = 0
                continue
            # the label split is the headline's only where the suite's model says so
            ld = d["label_disagrees"].astype(bool) & model.label_split
            valid = d["expected"].astype(bool)
            fr[ser] = int(((d["finding"] == "false_reject") & ~ld).sum())
            fa[ser] = int(((d["finding"] == "false_accept") & ~ld).sum())
            nv[ser] = int((valid & ~ld).sum())
            ni[ser] = int((~valid & ~ld).sum())
            fr_ld[ser] = int(((d["finding"] == "false_reject") & ld).sum())
            fa_ld[ser] = int(((d["finding"] == "false_accept") & ld).sum())
            nv_ld[ser] = int((valid & ld).sum())
            ni_ld[ser] = int((~valid & ld).sum())
        t = timings.get(label, {"mask": np.zeros(0), "commit": np.zeros(0)})
        tbm_us = (t["mask"] + t["commit"]) / 1000.0
        tbm = distribution(tbm_us)
        if tbm:
            tbm["over_1ms_share"] = float((tbm_us > 1000.0).mean())
        prim = e_i[e_i["serialization"].isin((primary, "text"))] if len(e_i) else e_i
        wall = 0.0
        if len(e_s) and e_s["started_at"].notna().any():
            wall = float(e_s["finished_at"].max() - e_s["started_at"].min())
        e = {
            "status": "run",
            "version": einfo.get("version"),
            "options": einfo.get("options"),
            "schemas": int(len(e_s)),
            "outcomes": dict(h["outcomes"]),
            "outcomes_all": {o: int(counts_all.get(o, 0)) for o in outcomes.OUTCOMES},
            "false_rejects": fr,
            "false_accepts": fa,
            "valid_instances": nv,
            "invalid_instances": ni,
            "false_accept_schemas": h["accepts_invalid"],
            "escapes_change_verdict": verdict_flips(mine, label, sers),
            "eos_refused_valid": int(((prim["status"] == "no_eos") & prim["expected"]).sum()) if len(prim) else 0,
            "mask_commit_disagreements": int(prim["disagreement"].notna().sum()) if len(prim) else 0,
            "label_disagreements": int(prim["label_disagrees"].sum()) if len(prim) else 0,
            "tbm_us": tbm,
            "mask_us": distribution(t["mask"] / 1000.0),
            "commit_us": distribution(t["commit"] / 1000.0),
            "ttfm_ms": dict(h["ttfm_ms"] or {}),
            "tokens": int(tbm_us.size),
            "wall_s": round(wall, 3),
            "busy_s": round(float(e_s["busy_s"].sum()), 3) if len(e_s) else 0.0,
            "segmentation": segmentation_counts(records, label, primary),
            # the two kinds of false reject (harness.analysis.rejects), as the headline counts
            "false_reject_kinds": (h["valid_rejected"] or {}).get("kinds"),
        }
        if model.label_split:
            e.update({
                "false_rejects_label_disagrees": fr_ld,
                "false_accepts_label_disagrees": fa_ld,
                "valid_instances_label_disagrees": nv_ld,
                "invalid_instances_label_disagrees": ni_ld,
                "label_disagreement_reasons": (
                    {str(k): int(v) for k, v in prim.loc[prim["label_disagrees"], "label_reason"]
                     .fillna(GroundTruth.UNKNOWN).value_counts().items()} if len(prim) else {}),
                "label_outcome_changes": sorted(
                    r["case_id"] for r in mine
                    if verdict.unit_outcome(r, model, primary) != r["outcome"]),
            })
        engines[label] = e
    return {
        "format": SUMMARY_FORMAT,
        "run_id": meta.get("run_id"),
        "suite": cfg.get("suite"),
        "primary_serialization": primary,
        "serializations": sers,
        "headline": hl,
        "engines": engines,
        "run": meta.get("sessions", []),
    }


def segmentation_counts(records: Iterable[Record], engine: str,
                        primary: str) -> dict[str, int]:
    """Non-canonical tokenisation replays (``results["seg<k>"]``, run option
    ``segmentations``) of one engine: ``replays``, ``rejected`` (not accepted: rejected, EOS
    refused or error; every one is a valid instance), and ``rejected_canonical_accepted``
    (rejected although the canonical tokenisation of the same text was accepted: the
    token-boundary bugs proper)."""
    n = rejected = boundary = 0
    for r in records:
        if r["engine"] != engine or r["outcome"] in outcomes.DEATHS or r["outcome"] in (
                outcomes.COMPILE_ERROR, outcomes.BAD_INPUT):
            continue
        for inst in r.get("instances", ()):
            results = inst.get("results", {})
            for key, res in results.items():
                if not key.startswith("seg"):
                    continue
                n += 1
                if res["status"] != "accepted":
                    rejected += 1
                    canon = results.get(res.get("of", primary), {})
                    boundary += canon.get("status") == "accepted"
    return {"replays": n, "rejected": rejected, "rejected_canonical_accepted": boundary}


def parallel_efficiency(records: list[Record], sessions: list[dict[str, Any]]) -> float | None:
    """Sum of the workers' busy time / (wall time × jobs), over the run's sessions."""
    capacity = sum((s["ended_at"] - s["started_at"]) * s["jobs"] for s in sessions
                   if s.get("ended_at") and s.get("started_at"))
    if not capacity:
        return None
    # A killed job kept its worker busy until the kill: count its wall time.
    busy = sum(r.get("busy_ns", r.get("wall_ns", 0)) for r in records) / 1e9
    return busy / capacity


def build_summary(meta: RunMeta, records: list[Record], suite: type | None = None) -> Summary:
    """``summary.json``'s content from the records: :func:`summarize` (``suite`` as there)
    plus the run's parallel efficiency and wall time (sum over its sessions, s)."""
    summary = summarize(records, meta, suite)
    sessions = meta.get("sessions", [])
    eff = parallel_efficiency(records, sessions)
    summary["parallel_efficiency"] = round(eff, 4) if eff is not None else None
    summary["wall_s"] = round(sum(s["ended_at"] - s["started_at"] for s in sessions
                                  if s.get("ended_at") and s.get("started_at")), 3)
    return summary
