"""The per-engine ``"e2e"`` block of summary.json, from the e2e job records.

Headline figures (the primary batch size; ``by_batch`` has them for every size):

``tpot_ms``, ``tpot_unconstrained_ms``  mean step (time per output token), ms, over every
                           constrained / unconstrained block of every job (median beside)
``tpot_ratio``             tpot_ms / tpot_unconstrained_ms, from the interleaved pairs of
                           blocks (A = constrained, B = unconstrained, same job and round),
                           with ``tpot_ratio_ci``: the 95% bootstrap interval over the pairs
                           (:data:`BOOTSTRAP` resamples, seed 0). **Resolved** only when that
                           interval lies within ±3% of the ratio (:data:`RESOLVED`); otherwise
                           ``tpot_ratio_resolved`` is False and ``tpot_ratio_note`` says
                           "not resolved" (the ratio is shown as that, not as a figure); with
                           too few samples the ratio is None and the note says why
``interference``           mean forward time in the constrained blocks ÷ in the unconstrained
                           ones (the forward with the mask work running ÷ without; device
                           time on CUDA), with its interval, resolved by the same rule
``harness_share``          the harness's own share of the constrained step: (step − forward −
                           the engine's exposed time) / step, the engine's exposed time being
                           its fill + commit on the critical path (serial) or the part of them
                           the forward did not hide, ``min(wait, mask + commit)`` (overlapped);
                           i.e. apply + sample + launch gaps + the loop's own host work
``shares``                 each component's mean over the mean step (forward, wait, apply,
                           sample, mask, commit, gap, other = the rest of the step)
``floor``                  the step's floor: weights read per step ÷ the copy bandwidth the
                           run measured, beside the unconstrained step (batch 1, else the
                           primary batch) and their quotient
``warmup``                 the protocol's warm-up per batch size: the first (steps, stable or
                           cut off by its cap) and the re-warms before each job's blocks
``clock``                  the SM clock read before and after every block (min, max, source)
``mask_bench``             the microbenchmark's rows (this engine's kernel and the shared ones)

Older keys stay: ``ttft_ms``, ``invalid_outputs``, ``runaways`` …, ``constraint_us`` /
``constraint_share`` (the constraint's critical-path cost, from the components) and
``steps_us`` (p50 and mean of each component, µs).

A value that the timer cannot resolve (a mean under its resolution: 0.5 µs for CUDA events)
is reported as such (``below_resolution``), never as a measurement; a ratio needs at least
:data:`MIN_PAIRS` pairs and :data:`MIN_STEPS` steps a side.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
from harness.suite import Record, RunMeta, Summary, figures
from harness.suite.report import Table, text_table
from suites.e2e.records import (BatchFigures, ComponentShare, E2ERecord, E2ESummary, Floor,
                                MaskBench, ProtocolSummary, RatioInterval, StepShares)

BOOTSTRAP = 2000  # resamples of the pairs
RESOLVED = 0.03  # the 95% interval must lie within ±3% of the ratio
MIN_PAIRS = 3
MIN_STEPS = 20
# components that have an entry for the prefill's token (not a decode step)
_PER_TOKEN = ("forward", "mask", "apply", "sample")


def _steps(v: list[int], comp: str) -> list[int]:
    return v[1:] if comp in _PER_TOKEN else v


def _pooled(records: list[E2ERecord], key: str, comp: str) -> np.ndarray:
    parts = []
    for r in records:
        v = r.get(key, {}).get(comp)
        if v:
            # drop the prefill entry of per-step components (it is part of TTFT, not TPOT)
            parts.append(np.asarray(v[1:] if comp != "step" and comp not in ("commit", "wait")
                                    else v, dtype=np.float64))
    return np.concatenate(parts) if parts else np.zeros(0)


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), nd)


def summary_block(summary: E2ESummary, meta: RunMeta, records: list[E2ERecord],
                  run_dir: Any = None) -> str | None:
    """The e2e suite's summary block: each engine's ``e2e`` entry (:func:`e2e_block`) and
    the run's microbenchmark (``e2e_mask_bench``); returns the console text
    (:func:`render_text`), or None when no record has e2e data."""
    for label, e in summary.get("engines", {}).items():
        block = e2e_block(r for r in records if r.get("engine") == label)
        if block is not None:
            e["e2e"] = block
    mb = merged_mask_bench(records)
    if mb:
        summary["e2e_mask_bench"] = mb
    return render_text(summary)


def merged_mask_bench(records: Iterable[E2ERecord]) -> MaskBench | None:
    """The microbenchmark rows of the run: the shared rows once, each engine's kernel."""
    info, rows, seen = None, [], set()
    for r in records:
        mb = r.get("mask_bench")
        if not mb:
            continue
        info = info or mb.get("info")
        for row in mb.get("rows", []):
            key = (row["kernel"], row["batch"])
            if key not in seen:
                seen.add(key)
                rows.append(row)
    return {"info": info, "rows": rows} if rows else None


# ---------------------------------------------------------------------- the pairs

def _pairs(recs: list[E2ERecord], batch: str, comp: str) -> list[tuple[float, int, float, int]]:
    """(sum A, n A, sum B, n B) of ``comp`` per (job, round) pair of blocks at ``batch``."""
    out = []
    for r in recs:
        blocks = ((r.get("protocol") or {}).get("blocks") or {}).get(batch) or []
        by_round: dict[int, dict[str, list[int]]] = {}
        for bl in blocks:
            v = _steps(bl["steps"].get(comp, []), comp)
            by_round.setdefault(bl["round"], {})[bl["mode"]] = v
        for rd in sorted(by_round):
            a, b = by_round[rd].get("constrained"), by_round[rd].get("unconstrained")
            if a and b:
                out.append((float(sum(a)), len(a), float(sum(b)), len(b)))
    return out


def ratio_interval(pairs: list[tuple[float, int, float, int]], resolution_ns: float = 1.0,
                   seed: int = 0) -> RatioInterval:
    """The ratio of the mean A value to the mean B value over ``pairs``, its 95% bootstrap
    interval (pairs resampled with replacement) and whether it is resolved (the module's
    rule). ``value`` is None with a ``note`` when the samples are too few or under the
    timer's resolution."""
    n_a = sum(p[1] for p in pairs)
    n_b = sum(p[3] for p in pairs)
    if len(pairs) < MIN_PAIRS or n_a < MIN_STEPS or n_b < MIN_STEPS:
        return {"value": None, "pairs": len(pairs), "steps": [n_a, n_b],
                "note": f"too few samples ({len(pairs)} pairs, {n_a} / {n_b} steps; a ratio "
                        f"needs {MIN_PAIRS} pairs and {MIN_STEPS} steps a side)"}
    arr = np.asarray(pairs, dtype=np.float64)
    mean_a, mean_b = arr[:, 0].sum() / arr[:, 1].sum(), arr[:, 2].sum() / arr[:, 3].sum()
    if mean_a < resolution_ns or mean_b < resolution_ns:
        return {"value": None, "pairs": len(pairs), "steps": [n_a, n_b],
                "note": f"below the timer's resolution ({resolution_ns:g} ns)"}
    value = mean_a / mean_b
    rng = np.random.default_rng(seed)
    w = rng.multinomial(len(pairs), [1.0 / len(pairs)] * len(pairs), size=BOOTSTRAP)
    sums = w @ arr  # [BOOTSTRAP, 4]
    with np.errstate(divide="ignore", invalid="ignore"):
        boots = (sums[:, 0] / sums[:, 1]) / (sums[:, 2] / sums[:, 3])
    boots = boots[np.isfinite(boots)]
    lo, hi = (float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5)))
    resolved = lo >= value * (1 - RESOLVED) and hi <= value * (1 + RESOLVED)
    out: RatioInterval = {"value": round(float(value), 4), "ci": [round(lo, 4), round(hi, 4)],
           "resolved": bool(resolved), "pairs": len(pairs), "steps": [n_a, n_b]}
    if not resolved:
        out["note"] = (f"not resolved: the 95% interval {lo:.3f}–{hi:.3f} spans more than "
                       f"±{RESOLVED:.0%} of {value:.3f}")
    return out


def _mean(recs: list[E2ERecord], batch: str, mode: str, comp: str) -> tuple[float | None, int]:
    tot, n = 0.0, 0
    for r in recs:
        for bl in ((r.get("protocol") or {}).get("blocks") or {}).get(batch) or []:
            if bl["mode"] == mode:
                v = _steps(bl["steps"].get(comp, []), comp)
                tot += float(sum(v))
                n += len(v)
    return (tot / n if n else None), n


def component_text(comps: dict[str, ComponentShare], share_only: bool = False) -> str:
    """``forward 5880.6 (98.6%), …``: each component's mean and share of the step; ``<res``
    for a mean under the timer's resolution; ``other –`` with the overlap when the timed
    components add up to more than the step (nothing is left over to show)."""
    out = []
    for c, d in comps.items():
        if d.get("mean_us") is None:
            out.append(f"{c} – (the timed components overlap by {d.get('overlap_us', 0):.1f} µs)")
        elif d.get("below_resolution"):
            out.append(f"{c} <res")
        elif share_only:
            out.append(f"{c} {d['share']:.1%}")
        else:
            out.append(f"{c} {d['mean_us']:.1f} ({d['share']:.1%})")
    return ", ".join(out)


def shares(recs: list[E2ERecord], batch: str, mode: str, schedule: str | None,
           resolution_ns: float) -> StepShares:
    """Each component's mean (µs) and share of the mean step in ``mode``'s blocks, and the
    harness's own share (see the module)."""
    step, n = _mean(recs, batch, mode, "step")
    if not step:
        return {}
    comps: dict[str, ComponentShare] = {}
    for c in ("forward", "wait", "apply", "sample", "mask", "commit", "gap"):
        m, k = _mean(recs, batch, mode, c)
        if m is None:
            continue
        d: ComponentShare = {"mean_us": round(m / 1e3, 3), "share": round(m / step, 4)}
        if m < resolution_ns:
            d["below_resolution"] = True
        comps[c] = d

    def mean(c: str) -> float:
        return comps[c]["mean_us"] * 1e3 if c in comps else 0.0

    if mode == "constrained":
        engine = mean("mask") + mean("commit")
        exposed = min(mean("wait"), engine) if schedule == "overlapped" else engine
    else:
        exposed = 0.0
    crit = ["forward", "apply", "sample", "gap"] + (["wait"] if schedule == "overlapped"
                                                     else ["mask", "commit"])
    other = step - sum(mean(c) for c in crit)
    if other >= 0:
        comps["other"] = {"mean_us": round(other / 1e3, 3), "share": round(other / step, 4)}
    else:
        # the device-timed components and the host-timed step overlap (the pipelined loop
        # queues the next forward before the host is done): no remainder to show
        comps["other"] = {"mean_us": None, "share": None, "overlap_us": round(-other / 1e3, 3)}
    harness = step - mean("forward") - exposed
    return {"step_us": round(step / 1e3, 3), "steps": n, "components": comps,
            "engine_exposed_us": round(exposed / 1e3, 3),
            "harness_us": round(harness / 1e3, 3), "harness_share": round(harness / step, 4)}


def _resolution(recs: list[E2ERecord]) -> dict[str, float]:
    """Resolution, ns, of the step clock (host) and of the component clock (device)."""
    dev = str((recs[0].get("e2e_config") or {}).get("device", "cpu"))
    from suites.e2e.protocol import timer_resolution_ns

    return {"step": float(timer_resolution_ns("cpu")), "component": float(timer_resolution_ns(dev))}


def _protocol(recs: list[E2ERecord], batches: list[str], schedule: str | None) -> ProtocolSummary:
    res = _resolution(recs)
    by: dict[str, BatchFigures] = {}
    for b in batches:
        t = ratio_interval(_pairs(recs, b, "step"), res["step"])
        f = ratio_interval(_pairs(recs, b, "forward"), res["component"])
        a, na = _mean(recs, b, "constrained", "step")
        u, nu = _mean(recs, b, "unconstrained", "step")
        by[b] = {"tpot_ms": _r(a / 1e6 if a else None, 4),
                 "tpot_unconstrained_ms": _r(u / 1e6 if u else None, 4),
                 "tpot_ratio": t.get("value"), "tpot_ratio_ci": t.get("ci"),
                 "tpot_ratio_resolved": t.get("resolved"), "tpot_ratio_note": t.get("note"),
                 "pairs": t.get("pairs"), "steps": [na, nu],
                 "interference": f.get("value"), "interference_ci": f.get("ci"),
                 "interference_resolved": f.get("resolved"),
                 "interference_note": f.get("note"),
                 "constrained": shares(recs, b, "constrained", schedule, res["component"]),
                 "unconstrained": shares(recs, b, "unconstrained", schedule, res["component"])}
        c = by[b]["constrained"]
        by[b]["harness_share"] = c.get("harness_share")
        by[b]["harness_share_unconstrained"] = by[b]["unconstrained"].get("harness_share")
    # warm-up: the first of each batch size (in any record), the re-warms before blocks
    warm: dict[str, dict[str, object]] = {}
    for r in recs:
        for b, w in ((r.get("protocol") or {}).get("warmup") or {}).items():
            d = warm.setdefault(b, {"first": [], "rewarm_steps": [], "rewarm_unstable": 0})
            if w.get("first"):
                d["first"].append({k: w.get(k) for k in ("steps", "s", "stable", "max_steps")})
            else:
                d["rewarm_steps"].append(w["steps"])
                d["rewarm_unstable"] += 0 if w.get("stable") else 1
    for d in warm.values():
        rs = d.pop("rewarm_steps")
        d["rewarms"] = len(rs)
        d["rewarm_steps_median"] = float(np.median(rs)) if rs else None
        d["rewarm_steps_max"] = max(rs) if rs else None
    clocks = [x for r in recs for bl in sum(((r.get("protocol") or {}).get("blocks") or {}
                                             ).values(), [])
              for x in (bl.get("sm_mhz") or []) if x is not None]
    src = next(((r.get("protocol") or {}).get("clock_source") for r in recs
                if (r.get("protocol") or {}).get("clock_source")), None)
    clock = {"source": src, "sm_mhz_min": min(clocks) if clocks else None,
             "sm_mhz_max": max(clocks) if clocks else None, "reads": len(clocks)}
    return {"by_batch": by, "warmup": warm, "clock": clock, "resolution_ns": res}


def _floor(recs: list[E2ERecord], by: dict[str, BatchFigures]) -> Floor | None:
    info = (recs[0].get("e2e_config") or {}).get("runtime_info") or {}
    wb = (info.get("weight_bytes") or {}).get("per_step")
    bw = (info.get("copy_bandwidth") or {}).get("gb_per_s")
    if not wb or not bw:
        return None
    from suites.e2e.protocol import floor_ms

    fl = floor_ms(wb, bw)
    b = "1" if "1" in by else next(iter(by), None)
    step = by.get(b, {}).get("tpot_unconstrained_ms") if b else None
    fwd = (((by.get(b) or {}).get("unconstrained") or {}).get("components") or {}).get("forward")
    return {"weight_bytes_per_step": wb, "copy_gb_per_s": bw, "floor_ms": round(fl, 4),
            "batch": int(b) if b else None, "step_ms": step,
            "forward_ms": round(fwd["mean_us"] / 1e3, 4) if fwd else None,
            "step_over_floor": round(step / fl, 3) if step else None,
            "graphs": info.get("graphs"), "graphs_error": info.get("graphs_error"),
            "device": info.get("device"), "gpu": info.get("gpu")}


def e2e_block(records: Iterable[E2ERecord]) -> dict[str, Any] | None:
    recs = [r for r in records if r.get("e2e")]
    if not recs:
        return None
    steps = _pooled(recs, "steps_ns", "step") / 1e6
    usteps = _pooled(recs, "steps_unconstrained_ns", "step") / 1e6
    ttft = np.asarray([r["e2e"]["ttft_ns"] for r in recs], dtype=np.float64) / 1e6
    uttft = np.asarray([r["e2e"]["ttft_unconstrained_ns"] for r in recs], dtype=np.float64) / 1e6
    ratios = [r["e2e"]["tpot_ratio"] for r in recs if r["e2e"].get("tpot_ratio")]
    breakdown = {}
    for comp in ("forward", "mask", "apply", "sample", "commit", "wait", "gap", "processor"):
        a = _pooled(recs, "steps_ns", comp) / 1e3
        if a.size:
            breakdown[comp] = {"p50": _r(np.median(a), 2), "mean": _r(a.mean(), 2)}
    ubreak = {}
    for comp in ("forward", "sample", "gap"):
        a = _pooled(recs, "steps_unconstrained_ns", comp) / 1e3
        if a.size:
            ubreak[comp] = {"p50": _r(np.median(a), 2), "mean": _r(a.mean(), 2)}

    # the constraint's own cost on the critical path, from the per-step components (robust to
    # machine noise, unlike the ratio of two separately timed loops): serial = mask + apply +
    # commit; overlapped = apply + wait (mask and commit hide behind the forward pass);
    # logits_processor = the processor's whole call
    sched = recs[0]["e2e"].get("schedule")
    crit = ("processor",) if "processor" in breakdown else (
        ("apply", "wait") if sched == "overlapped" else ("mask", "apply", "commit"))
    cost_us = sum(breakdown[c]["p50"] for c in crit if c in breakdown) if breakdown else None
    cost_mean_us = sum(breakdown[c]["mean"] for c in crit if c in breakdown) if breakdown else None

    def tot(k: str) -> int:
        return int(sum(r["e2e"].get(k, 0) or 0 for r in recs))

    cfg = recs[0].get("e2e_config", {})
    block: dict[str, Any] = {
        "runtime": cfg.get("runtime"),
        "model": cfg.get("model"),
        "batch": cfg.get("batch"),
        "schedule": recs[0]["e2e"].get("schedule"),
        "api": recs[0]["e2e"].get("api"),
        "apply_kernel": recs[0]["e2e"].get("apply_kernel"),
        "schemas": len(recs),
        "ttft_ms": _r(np.median(ttft)) if ttft.size else None,
        "ttft_p90_ms": _r(np.percentile(ttft, 90)) if ttft.size else None,
        "ttft_unconstrained_ms": _r(np.median(uttft)) if uttft.size else None,
        "tpot_ms": _r(float(steps.mean()) if steps.size else None, 4),
        "tpot_p50_ms": _r(float(np.median(steps)) if steps.size else None, 4),
        "tpot_p99_ms": _r(np.percentile(steps, 99), 4) if steps.size else None,
        "tpot_unconstrained_ms": _r(float(usteps.mean()) if usteps.size else None, 4),
        "tpot_unconstrained_p99_ms": _r(np.percentile(usteps, 99), 4) if usteps.size else None,
        "tpot_ratio": (_r(steps.mean() / usteps.mean(), 4)
                       if steps.size and usteps.size else None),
        "tpot_ratio_schema_median": _r(np.median(ratios), 4) if ratios else None,
        "constraint_us": _r(cost_us, 2),
        "constraint_mean_us": _r(cost_mean_us, 2),
        "constraint_share": (_r(cost_mean_us / (usteps.mean() * 1e3), 4)
                             if cost_mean_us is not None and usteps.size else None),
        "steps_us": breakdown,
        "steps_unconstrained_us": ubreak,
        "outputs": tot("outputs"),
        "eos": tot("eos"),
        "valid_outputs": tot("valid_outputs"),
        "invalid_outputs": tot("invalid_outputs"),
        "unknown_outputs": tot("unknown_outputs"),
        "runaways": tot("runaways"),
        "dead_ends": tot("dead_ends"),
        "rejected": tot("rejected"),
        "eos_refused": tot("eos_refused"),
        "mask_leaks": tot("mask_leaks"),
        "tokens": tot("tokens"),
    }
    prot = [r for r in recs if r.get("protocol")]
    if prot:
        batches = [str(b) for b in (cfg.get("batches") or [cfg.get("batch")])]
        p = _protocol(prot, batches, block["schedule"])
        head = p["by_batch"].get(str(cfg.get("batch"))) or {}
        for k in ("tpot_ms", "tpot_unconstrained_ms", "tpot_ratio", "tpot_ratio_ci",
                  "tpot_ratio_resolved", "tpot_ratio_note", "interference", "interference_ci",
                  "interference_resolved", "interference_note", "harness_share",
                  "harness_share_unconstrained"):
            block[k] = head.get(k)
        block["shares"] = (head.get("constrained") or {}).get("components")
        block["blocks"] = cfg.get("blocks")
        block["warmup"], block["clock"] = p["warmup"], p["clock"]
        block["resolution_ns"] = p["resolution_ns"]
        block["floor"] = _floor(prot, p["by_batch"])
        fills = _fills(recs)
        by_batch = {b: {**v, "fill": fills.get(b)} for b, v in p["by_batch"].items()}
        if len(by_batch) > 1:
            block["by_batch"] = by_batch
        else:
            block["protocol_batch"] = by_batch
        mb = merged_mask_bench(recs)
        if mb:
            block["mask_bench"] = mb
    else:
        by_batch = _by_batch(recs)
        if by_batch:
            block["by_batch"] = by_batch
    return block


def _fills(recs: list[E2ERecord]) -> dict[str, str]:
    fills: dict[str, str] = {}
    for r in recs:
        for pt in r["e2e"].get("by_batch") or ():
            if pt.get("fill"):
                fills.setdefault(str(pt["batch"]), pt["fill"])
    return fills


def _by_batch(recs: list[E2ERecord]) -> dict[str, BatchFigures]:
    """TPOT per batch size from records without the protocol's blocks (older runs)."""
    pooled: dict[str, dict[str, list]] = {}
    for r in recs:
        for b, d in (r.get("steps_by_batch_ns") or {}).items():
            acc = pooled.setdefault(b, {"step": [], "unconstrained": []})
            acc["step"] += d.get("step", [])
            acc["unconstrained"] += d.get("unconstrained", [])
    fills = _fills(recs)
    out: dict[str, BatchFigures] = {}
    for b in sorted(pooled, key=int):
        c = np.asarray(pooled[b]["step"], dtype=np.float64) / 1e6
        u = np.asarray(pooled[b]["unconstrained"], dtype=np.float64) / 1e6
        t, tu = (float(np.median(c)) if c.size else None), (float(np.median(u)) if u.size else None)
        out[b] = {"tpot_ms": _r(t, 4), "tpot_unconstrained_ms": _r(tu, 4),
                  "tpot_ratio": _r(t / tu, 4) if t and tu else None, "fill": fills.get(b)}
    return out


# ---------------------------------------------------------------------- console text

def render_text(summary: Summary) -> str:
    """A small table of the e2e blocks (printed after a run of the e2e suite): TPOT, the
    ratio with its interval, interference, the harness's share, the components, the floor,
    the warm-up, the clock, and the microbenchmark."""
    rows = [(eng, e["e2e"]) for eng, e in summary.get("engines", {}).items() if e.get("e2e")]
    if not rows:
        return ""

    fixed, pct = figures.fixed, figures.percent
    table = Table(["engine", "sched", "TTFT ms", "TPOT ms", "uncon ms", "ratio [95% CI]",
                   "harness", "invalid", "runaway", "eos"], [], align=["l", "l"] + ["r"] * 8)
    for eng, b in rows:
        if "tpot_ratio_resolved" in b:  # the protocol's interleaved ratio
            rt = figures.interval(b.get("tpot_ratio"), b.get("tpot_ratio_ci"),
                                  b.get("tpot_ratio_resolved"), b.get("tpot_ratio_note"))
        else:  # a run without the protocol (the serving route, older records)
            rt = fixed(b.get("tpot_ratio"), 3)
        table.rows.append([eng, b.get("schedule") or "–", fixed(b["ttft_ms"], 2),
                           fixed(b["tpot_ms"], 3), fixed(b["tpot_unconstrained_ms"], 3), rt[:26],
                           pct(b.get("harness_share")), str(b["invalid_outputs"]),
                           str(b["runaways"]), str(b["eos"])])
    lines = ["end to end (constrained vs unconstrained decode of the same loop, interleaved "
             "blocks):", text_table(table)]
    for eng, b in rows:
        pts = b.get("by_batch") or b.get("protocol_batch") or {}
        for size, pt in pts.items():
            if "pairs" not in pt:  # an older run's point
                lines.append(f"  {eng} batch {size:>3}: TPOT {pt['tpot_ms']} ms, unconstrained "
                             f"{pt['tpot_unconstrained_ms']} ms, ratio {pt['tpot_ratio']}"
                             + (f" ({pt['fill']})" if pt.get("fill") else ""))
                continue
            lines.append(
                f"  {eng} batch {size:>3}: TPOT {fixed(pt['tpot_ms'], 3)} ms, unconstrained "
                f"{fixed(pt['tpot_unconstrained_ms'], 3)} ms, ratio "
                + figures.interval(pt.get("tpot_ratio"), pt.get("tpot_ratio_ci"),
                                   pt.get("tpot_ratio_resolved"), pt.get("tpot_ratio_note"))
                + f" over {pt.get('pairs')} AB pairs; interference "
                + figures.interval(pt.get("interference"), pt.get("interference_ci"),
                                   pt.get("interference_resolved"), pt.get("interference_note"))
                + f"; harness's share {pct(pt.get('harness_share'))} (unconstrained "
                f"{pct(pt.get('harness_share_unconstrained'))})"
                + (f" ({pt['fill']})" if pt.get("fill") else ""))
            comps = (pt.get("constrained") or {}).get("components") or {}
            if comps:
                lines.append("      components of the constrained step (mean µs, share): "
                             + component_text(comps))
    b0 = rows[0][1]
    fl = b0.get("floor")
    if fl:
        lines.append(
            f"floor: {fl['weight_bytes_per_step'] / 1e9:.3f} GB of weights read per step ÷ "
            f"{fl['copy_gb_per_s']:.0f} GB/s copy bandwidth (measured in this run) = "
            f"{fl['floor_ms']:.3f} ms; unconstrained step at batch {fl['batch']}: "
            f"{fixed(fl['step_ms'], 3)} ms = {fixed(fl['step_over_floor'], 2)}x the floor "
            f"(forward {fixed(fl.get('forward_ms'), 3)} ms); CUDA graphs "
            + ("on" if fl.get("graphs") else "off"
               + (f" ({fl['graphs_error']})" if fl.get("graphs_error") else "")))
    for size, w in (b0.get("warmup") or {}).items():
        first = w.get("first") or []
        txt = ", ".join(f"{x['steps']} steps in {x['s']:.2f} s"
                        + ("" if x.get("stable") else f" (not stable: cut off at its cap "
                                                     f"of {x.get('max_steps')})")
                        for x in first) or "done in an earlier process"
        lines.append(f"warm-up at batch {size}: first {txt}; re-warms before blocks: "
                     f"{w.get('rewarms')} (median {w.get('rewarm_steps_median')} steps, "
                     f"{w.get('rewarm_unstable')} cut off by the cap)")
    ck = b0.get("clock") or {}
    if ck:
        lines.append(f"SM clock before/after each block: "
                     + (f"{ck['sm_mhz_min']}–{ck['sm_mhz_max']} MHz over {ck['reads']} reads "
                        f"({ck['source']})" if ck.get("reads") else str(ck.get("source"))))
    mb = summary.get("e2e_mask_bench")
    if mb:
        from suites.e2e.maskbench import text_table as mask_bench_text

        lines.append(mask_bench_text(mb))
    return "\n".join(lines)
