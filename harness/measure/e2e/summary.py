"""The per-engine ``"e2e"`` block of summary.json, from the e2e job records.

``ttft_ms``                median over schemas of TTFT including compile (p90 beside it)
``tpot_ms``                median over all constrained decode steps, pooled (p99 beside it)
``tpot_unconstrained_ms``  the same for the unconstrained decodes of the same jobs
``tpot_ratio``             tpot_ms / tpot_unconstrained_ms (``tpot_mean_ratio``: of the means)
``invalid_outputs``        outputs the engine let end that fail strict JSON or jsonschema
``runaways``               outputs that spent the token budget without a stop token
``constraint_us``         the constraint's cost on the critical path per step, from the step
                           components (serial: mask + apply + commit; overlapped: apply + wait;
                           logits_processor: the processor's call); ``constraint_share`` = its
                           mean / the unconstrained mean step (noise-robust: 1 + share is the
                           ratio a quiet machine would show, if the rest of the step is equal)
and the step breakdown (µs; p50 and mean of forward / mask / apply / sample / commit / wait).
With ``--batch 1,4,8``, ``by_batch`` maps each batch size to the same pooled ``tpot_ms``,
``tpot_unconstrained_ms`` and ``tpot_ratio`` (one step of a batch = one token of each of its
sequences, so the step time is the TPOT every sequence sees) and the ``fill`` that ran.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np


def _pooled(records: list[dict], key: str, comp: str) -> np.ndarray:
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


def summary_block(summary: dict[str, Any], meta: dict[str, Any], records: list[dict[str, Any]],
                  run_dir: Any = None) -> str | None:
    """The e2e suite's summary block: each engine's ``e2e`` entry (:func:`e2e_block`);
    returns the console text (:func:`render_text`), or None when no record has e2e data."""
    for label, e in summary.get("engines", {}).items():
        block = e2e_block(r for r in records if r.get("engine") == label)
        if block is not None:
            e["e2e"] = block
    return render_text(summary)


def e2e_block(records: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    recs = [r for r in records if r.get("e2e")]
    if not recs:
        return None
    steps = _pooled(recs, "steps_ns", "step") / 1e6
    usteps = _pooled(recs, "steps_unconstrained_ns", "step") / 1e6
    ttft = np.asarray([r["e2e"]["ttft_ns"] for r in recs], dtype=np.float64) / 1e6
    uttft = np.asarray([r["e2e"]["ttft_unconstrained_ns"] for r in recs], dtype=np.float64) / 1e6
    tpot = float(np.median(steps)) if steps.size else None
    tpot_u = float(np.median(usteps)) if usteps.size else None
    ratios = [r["e2e"]["tpot_ratio"] for r in recs if r["e2e"].get("tpot_ratio")]
    breakdown = {}
    for comp in ("forward", "mask", "apply", "sample", "commit", "wait", "processor"):
        a = _pooled(recs, "steps_ns", comp) / 1e3
        if a.size:
            breakdown[comp] = {"p50": _r(np.median(a), 2), "mean": _r(a.mean(), 2)}
    ubreak = {}
    for comp in ("forward", "sample"):
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
    by_batch = _by_batch(recs)
    return {
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
        "tpot_ms": _r(tpot, 4),
        "tpot_p99_ms": _r(np.percentile(steps, 99), 4) if steps.size else None,
        "tpot_unconstrained_ms": _r(tpot_u, 4),
        "tpot_unconstrained_p99_ms": _r(np.percentile(usteps, 99), 4) if usteps.size else None,
        "tpot_ratio": _r(tpot / tpot_u, 4) if tpot and tpot_u else None,
        "tpot_mean_ratio": (_r(steps.mean() / usteps.mean(), 4)
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
        **({"by_batch": by_batch} if by_batch else {}),
    }


def _by_batch(recs: list[dict]) -> dict[str, Any]:
    pooled: dict[str, dict[str, list]] = {}
    fills: dict[str, str] = {}
    for r in recs:
        for b, d in (r.get("steps_by_batch_ns") or {}).items():
            acc = pooled.setdefault(b, {"step": [], "unconstrained": []})
            acc["step"] += d.get("step", [])
            acc["unconstrained"] += d.get("unconstrained", [])
        for pt in r["e2e"].get("by_batch") or ():
            if pt.get("fill"):
                fills.setdefault(str(pt["batch"]), pt["fill"])
    out = {}
    for b in sorted(pooled, key=int):
        c = np.asarray(pooled[b]["step"], dtype=np.float64) / 1e6
        u = np.asarray(pooled[b]["unconstrained"], dtype=np.float64) / 1e6
        t, tu = (float(np.median(c)) if c.size else None), (float(np.median(u)) if u.size else None)
        out[b] = {"tpot_ms": _r(t, 4), "tpot_unconstrained_ms": _r(tu, 4),
                  "tpot_ratio": _r(t / tu, 4) if t and tu else None, "fill": fills.get(b)}
    return out


def render_text(summary: dict[str, Any]) -> str:
    """A small table of the e2e blocks (printed after a run of the e2e suite)."""
    rows = [(eng, e["e2e"]) for eng, e in summary.get("engines", {}).items() if e.get("e2e")]
    if not rows:
        return ""
    head = (f"{'engine':<22} {'sched':<10} {'TTFT ms':>9} {'TPOT ms':>9} {'p99':>8} "
            f"{'uncon ms':>9} {'ratio':>7} {'mean r':>7} {'mask µs':>8} {'share':>6} "
            f"{'invalid':>8} {'runaway':>8} {'eos':>5}")
    lines = ["end to end (constrained vs unconstrained decode of the same loop):", head]
    for eng, b in rows:
        def f(x, fmt):
            return format(x, fmt) if x is not None else "-"
        lines.append(
            f"{eng:<22} {b.get('schedule') or '-':<10} {f(b['ttft_ms'], '9.2f')} "
            f"{f(b['tpot_ms'], '9.3f')} {f(b['tpot_p99_ms'], '8.3f')} "
            f"{f(b['tpot_unconstrained_ms'], '9.3f')} {f(b['tpot_ratio'], '7.3f')} "
            f"{f(b['tpot_mean_ratio'], '7.3f')} {f(b.get('constraint_mean_us'), '8.1f')} "
            f"{f(b.get('constraint_share'), '6.3f')} {b['invalid_outputs']:>8} {b['runaways']:>8} "
            f"{b['eos']:>5}")
    for eng, b in rows:
        for size, pt in (b.get("by_batch") or {}).items():
            lines.append(f"  {eng} batch {size:>3}: TPOT {pt['tpot_ms']} ms, unconstrained "
                         f"{pt['tpot_unconstrained_ms']} ms, ratio {pt['tpot_ratio']}"
                         + (f" ({pt['fill']})" if pt.get("fill") else ""))
    return "\n".join(lines)
