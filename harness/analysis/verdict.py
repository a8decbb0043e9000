"""The verdict model: every suite's headline, computed from its records by one function.

A suite declares its :class:`harness.suite.VerdictModel`: the *unit* its verdict counts (a
schema, a test case, a grammar case, a tool request, a served request), where the truth
comes from, whether the corpus-label split applies, which records are units and what the
suite adds of its own. :func:`headline` turns a run's records into the headline with that
model; ``summary.json`` stores it under ``"headline"``, and the console, the Markdown and
HTML reports, their plots, ``harness gate`` and ``harness report`` all read that dict, so
one figure has one value everywhere. Recomputing ``headline(meta, records)`` from
``records.jsonl`` gives ``summary.json["headline"]`` exactly (a test checks it for every
registered suite).

Per engine row (``headline["engines"][label]``, or ``{"status": "not_run", "reason"}``):

``n``                the units (records that are units of the verdict), bad input apart
``bad_input``        units whose source file could not be used (not an engine result)
``outcomes``         units per outcome (:mod:`harness.measure.outcomes`); a unit's outcome
                     is :func:`unit_outcome`
``finished``         units compiled and finished within the limits (passing, validation or
                     invalidation error): the coverage column
``accepts_invalid``  units where an invalid instance or output was accepted (soundness)
``valid_rejected``   ``{"n", "of", "kinds"}``: valid instances rejected / valid instances
                     replayed, on the primary serialisation (strictness), and the rejected
                     ones by kind (:mod:`harness.analysis.rejects`: the engine cannot write
                     the text, or refused this tokenisation of it but accepts another);
                     None when the suite replays no instances
``tbm_us``           ``{"p50", "p99", "over_1ms_share", "steps", "preempted"}``: time between
                     masks, µs per token, over the replayed tokens; ``preempted``: the
                     worker's involuntary context switches over those steps (None where
                     not counted; :func:`harness.measure.figures.preemption`); None
                     without any step
``ttfm_ms``          ``{"p50", "p90", ..., "steps", "preempted"}`` with censoring
                     (:mod:`harness.measure.figures`): time to first mask, ms per unit;
                     ``steps``: the units timed, ``preempted``: how many of them the worker
                     was preempted during (both absent if a record did not count); None
                     without any
``alerts``           lines the verdict must print (e.g. ``NOT ENFORCED: …``)

At the top: ``unit``, ``units``, ``truth``, ``label_split``, ``primary`` (serialisation)
and ``replay_table`` (the records hold token replays: the whole replay table is shown).

and whatever the suite's ``extra`` adds (e.g. the serve suite's requests and schemas).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

import numpy as np

from harness.analysis import rejects
from harness.measure import figures, outcomes
from harness.registry import load_target, suite_class
from harness.records import EngineHeadline, Headline, Record, RunMeta

__all__ = ["headline", "unit_outcome", "unit_outcomes", "record_outcome", "model_of", "suite_of",
           "is_unit",
           "accepts_invalid", "FINISHED", "TTFM_PERCENTILES"]

#: Outcomes of units that compiled and finished within the limits.
FINISHED = (outcomes.PASSING, outcomes.VALIDATION_ERROR, outcomes.INVALIDATION_ERROR)
#: Percentiles of TTFM in the headline and the tables (ms).
TTFM_PERCENTILES = (25, 50, 75, 90, 99)


def suite_of(meta: RunMeta) -> type | None:
    """The suite class of a finished run folder, looked up by the name its ``run.json``
    holds (None when that suite is not installed here). A run being made already holds its
    class (:attr:`harness.config.RunConfig.suite_class`) and passes it down instead."""
    return suite_class((meta.get("config") or {}).get("suite"))


def model_of(meta: RunMeta, suite: type | None = None):
    """The run's suite's :class:`~harness.suite.VerdictModel` (the default one when the suite
    is not installed here: a run folder of another installation still reads). ``suite``:
    the run's suite class when the caller holds it (else looked up from ``meta``)."""
    from harness.suite.cases import VerdictModel

    cls = suite if suite is not None else suite_of(meta)
    model = getattr(cls, "verdict", None)
    return model if isinstance(model, VerdictModel) else VerdictModel()


def primary_of(meta: RunMeta) -> str:
    return (meta.get("config") or {}).get("primary", "ascii")


def _replays(record: Record, ser: str, agreeing_only: bool):
    """(instance, result) of each instance replayed on ``ser`` (an exact-text instance's
    one replay stands in), skipping bad instances and, when asked, those where the
    corpus label disagrees with jsonschema."""
    for inst in record.get("instances") or ():
        if "bad_instance" in inst or (agreeing_only and inst.get("label_disagrees")):
            continue
        results = inst.get("results") or {}
        res = results.get(ser, results.get("text"))
        if res is not None and "expected" in inst:
            yield inst, res


def unit_outcome(record: Record, model, primary: str) -> str:
    """A unit's outcome in the headline: the record's own, except where the corpus-label
    split applies (``model.label_split``) to a record that replayed labelled instances:
    then it is classified again over the instances where jsonschema and the label agree."""
    if not model.label_split or record["outcome"] not in FINISHED or not record.get("instances"):
        return record["outcome"]
    return record_outcome(record, primary)


def record_outcome(record: Record, serialization: str,
                   agreeing_only: bool = True) -> str:
    """A record's outcome on one serialisation: its own for a job that did not finish
    (compile error, death, bad input) or replayed no instance; else classified from its
    instances, only those where jsonschema and the corpus label agree when
    ``agreeing_only``. An exact-text instance is judged on its one replay whatever the
    serialisation."""
    if record["outcome"] not in FINISHED or not record.get("instances"):
        return record["outcome"]
    insts = [{**inst, "results": {serialization: res}}
             for inst, res in _replays(record, serialization, agreeing_only)]
    return outcomes.classify(insts, serialization)


def is_unit(record: Record, model) -> bool:
    """True iff the record is a unit of the verdict (``model.units_from``; default all)."""
    if model.units_from is None:
        return True
    return bool(load_target(model.units_from, "verdict units")(record))


def accepts_invalid(record: Record, model, primary: str) -> bool:
    """True iff the unit accepted something invalid: an invalid instance (on the primary
    serialisation; only where the label agrees when the split applies), or, for a unit
    judged otherwise than by its instances, an invalidation error or a record flagged
    ``accepts_invalid`` (a confirmed witness, even on a unit whose first outcome is a
    validation error)."""
    if record["outcome"] not in FINISHED:
        return False
    if any(not inst["expected"] and res["status"] == "accepted"
           for inst, res in _replays(record, primary, model.label_split)):
        return True
    if model.label_split and record.get("instances"):
        return False
    return record["outcome"] == outcomes.INVALIDATION_ERROR or bool(record.get("accepts_invalid"))


def unit_outcomes(meta: RunMeta, records: Iterable[Record], suite: type | None = None
                  ) -> dict[tuple[str, str], str]:
    """``(engine, case_id) → outcome`` of every unit, as the headline counts it (the gate's
    ratchet and the per-subset tables read these); ``suite`` as for :func:`model_of`."""
    model, primary = model_of(meta, suite), primary_of(meta)
    return {(r["engine"], r["case_id"]): unit_outcome(r, model, primary)
            for r in records if is_unit(r, model)}


def _ttfm(units: list[Record], timeout_s: float | None) -> dict[str, Any] | None:
    measured = [r["ttfm_ns"] / 1e6 for r in units if r.get("ttfm_ns") is not None]
    censored = sum(1 for r in units if r["outcome"] == outcomes.TIMEOUT
                   and r.get("ttfm_ns") is None)
    if not measured and not (censored and timeout_s):
        return None
    dist = figures.censored_distribution(
        measured, censored if timeout_s else 0, timeout_s * 1000.0 if timeout_s else None,
        TTFM_PERCENTILES)
    # the schemas timed and how many the worker was preempted during (left out when a
    # record did not count, as records made before the count did not): figures.preemption
    # judges a percentile by them
    counted = [r.get("ttfm_preempted") for r in units if r.get("ttfm_ns") is not None]
    if counted and None not in counted:
        dist["steps"] = len(counted)
        dist["preempted"] = sum(1 for k in counted if k)
    return dist


def _tbm(units: list[Record], primary: str) -> dict[str, Any] | None:
    steps = []
    for r in units:
        for inst in r.get("instances") or ():
            results = inst.get("results") or {}
            res = results.get(primary, results.get("text"))
            if res and res.get("mask_ns"):
                steps.append(np.asarray(res["mask_ns"], np.int64)
                             + np.asarray(res["commit_ns"], np.int64))
    if not steps:
        return None
    us = np.concatenate(steps) / 1000.0
    p50, p99 = np.percentile(us, [50, 99])
    # counted by the worker over these very steps; unknown (None) if a record lacks it
    counted = [r.get("preempted") for r in units if r.get("tokens")]
    known = [int(c) for c in counted if c is not None]
    return {"p50": float(p50), "p99": float(p99),
            "over_1ms_share": float((us > 1000.0).mean()), "steps": int(us.size),
            "preempted": sum(known) if counted and len(known) == len(counted) else None}


def _engine_headline(units: list[Record], model, primary: str,
                     timeout_s: float | None) -> EngineHeadline:
    heads = [unit_outcome(r, model, primary) for r in units]
    counts = Counter(heads)
    valid = rejected = 0
    replayed = False
    kinds = dict.fromkeys(rejects.KEYS, 0)
    for r, h in zip(units, heads):
        if h not in FINISHED:
            continue
        for inst, res in _replays(r, primary, model.label_split):
            replayed = True
            if inst["expected"]:
                valid += 1
                if res["status"] != "accepted":
                    rejected += 1
                    kind = res.get("reject_kind")
                    kinds[kind if kind in kinds else "unchecked"] += 1
    bad = counts.get(outcomes.BAD_INPUT, 0)
    return {
        "status": "run",
        "n": len(units) - bad,
        "bad_input": bad,
        "outcomes": {o: int(counts.get(o, 0)) for o in outcomes.OUTCOMES},
        "finished": sum(counts.get(o, 0) for o in FINISHED),
        "accepts_invalid": sum(accepts_invalid(r, model, primary) for r in units),
        "valid_rejected": {"n": rejected, "of": valid, "kinds": kinds} if replayed else None,
        "tbm_us": _tbm(units, primary),
        "ttfm_ms": _ttfm(units, timeout_s),
        "alerts": [],
    }


def headline(meta: RunMeta, records: list[Record], suite: type | None = None) -> Headline:
    """The run's headline (see the module's docstring) from ``run.json``'s dict and the
    records of ``records.jsonl``; ``suite`` as for :func:`model_of`. Pure: the same records
    give the same dict."""
    cls = suite if suite is not None else suite_of(meta)
    model, primary = model_of(meta, cls), primary_of(meta)
    timeout_s = (meta.get("config") or {}).get("timeout_s")
    units = [r for r in records if is_unit(r, model)]
    labels = [e["engine"] for e in meta.get("engines", [])]
    for r in units:
        if r["engine"] not in labels:
            labels.append(r["engine"])
    extra = load_target(model.extra, "verdict extra")(records, meta) if model.extra else {}
    engines: dict[str, Any] = {}
    for label in labels:
        info = next((e for e in meta.get("engines", []) if e["engine"] == label), {})
        if info.get("status") == "not_run":
            engines[label] = {"status": "not_run", "reason": info.get("reason")}
            continue
        e = _engine_headline([r for r in units if r["engine"] == label], model, primary,
                             timeout_s)
        more = dict(extra.get(label) or {})
        # the suite's own figures after the common ones (keys the headline type leaves open)
        engines[label] = {**e, "alerts": list(more.pop("alerts", ())), **more}
    return {"unit": model.unit, "units": model.units, "truth": model.truth,
            "label_split": model.label_split, "primary": primary,
            "replay_table": bool(getattr(cls, "replay_table", True)), "engines": engines}
