"""Baselines for ``harness gate``: a small JSON file meant to be committed.

Written by ``harness baseline RUN -o FILE`` from the run folder's ``records.jsonl`` (the
source of truth). It holds

``outcomes``   per engine, per schema: the expected outcome (the ratchet);
``latency``    per engine: the run's summary percentiles (display), their spread (a
               bootstrap 95 % interval over schemas), and per schema what the gate needs
               to bootstrap again: ``n`` (token steps of the primary serialisation), ``q``
               (a quantile sketch of that schema's TBM, µs) and ``ttfm_ms``;
``run``        where it came from: run id, command, commit, machine, engines + versions,
               tokenizer, serialisations, limits;
``created_by`` the command that wrote it (``comment`` for free text, e.g. how to refresh).

The TBM sketch
--------------
Each schema's TBM distribution is kept as its quantiles at the midpoints of fixed
probability bins (:data:`SKETCH_EDGES`, dense in the tail), each standing for the bin's
share of the schema's ``n`` steps. A pooled percentile over a set of schemas is then the
weighted percentile of all their sketch points, so resampling *schemas* (a bootstrap)
needs only the sketches: 17 numbers per schema instead of every step. The gate computes
the same sketch from the new run's records, so both sides of a ratio are estimated the
same way; the sketch's p50/p99 match the exact pooled ones (``summary.json``) to within a
few percent. TTFM p50 is the median over schemas of the per-schema TTFM; a job that timed
out before its first mask is censored (``ttfm_censored``: at least the limit), ranked above
every measured value and never read as a number (:mod:`harness.measure.figures`).

The figures ``harness gate`` prints for each side are the headline's
(:func:`harness.analysis.verdict.headline`, as ``summary.json`` and every report show them);
the sketches only give the spread of their ratio.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any, Mapping, TypedDict

import numpy as np

from harness.analysis import metrics
from harness.analysis.verdict import unit_outcomes

from harness.measure import outcomes
from harness.records import Record, RunMeta

FORMAT = "grammar-harness-baseline/2"
#: Earlier formats :func:`read_baseline` upgrades (1: per engine ``latency.summary`` held the
#: summary's figures rounded to 4 digits, and outcomes were the records' own).
KNOWN_FORMATS = ("grammar-harness-baseline/1", FORMAT)

#: Probability bins of the per-schema TBM sketch (edges); a point per bin at its midpoint.
SKETCH_EDGES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.45, 0.48, 0.5, 0.52, 0.55, 0.6, 0.7, 0.8, 0.9,
                0.95, 0.97, 0.98, 0.985, 0.99, 0.993, 0.996, 0.999, 1.0)
SKETCH_LEVELS = tuple((a + b) / 2 for a, b in zip(SKETCH_EDGES, SKETCH_EDGES[1:]))
SKETCH_WEIGHTS = tuple(b - a for a, b in zip(SKETCH_EDGES, SKETCH_EDGES[1:]))
SKETCH_WEIGHTS_P = np.array(SKETCH_WEIGHTS) / sum(SKETCH_WEIGHTS)  # exact sum 1 for sampling

#: Latency statistics gated, per engine: (key, label, unit).
STATS = (("tbm_p50_us", "TBM p50", "µs"), ("tbm_p99_us", "TBM p99", "µs"),
         ("ttfm_p50_ms", "TTFM p50", "ms"))

#: Options of ``harness run`` that say where outputs go, not what runs.
_OUTPUT_OPTS = {"--results": 1, "--reports": 1, "--resume": 1, "--no-progress": 0}


class BaselineError(Exception):
    """A baseline file that cannot be read or is not a baseline (one-line message)."""


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


# --------------------------------------------------------------------------------------
# Per-schema latency, from records


def sketch(tbm_us: np.ndarray) -> list[float]:
    return [_sig(v) for v in np.percentile(tbm_us, [100 * lv for lv in SKETCH_LEVELS])]


class SchemaLatency(TypedDict, total=False):
    """One schema's latency entry (a baseline's ``latency[engine]["schemas"][case]``)."""

    n: int                  # token steps of the primary serialisation
    q: list[float]          # TBM quantiles at SKETCH_LEVELS, µs (only with token steps)
    ttfm_ms: float | None   # None: no first mask
    ttfm_censored: bool     # the job timed out before its first mask


def schema_latency(records: list[Record],
                   primary: str) -> dict[str, dict[str, SchemaLatency]]:
    """engine → schema → {"n", "q", "ttfm_ms"} (``q`` only when it has token steps;
    ``ttfm_censored: true`` for a job that timed out before its first mask)."""
    out: dict[str, dict[str, SchemaLatency]] = {}
    for r in records:
        if r["outcome"] == outcomes.BAD_INPUT:
            continue
        entry: SchemaLatency = {"n": 0}
        t = metrics.token_timings([r], primary).get(r["engine"])
        if t is not None and t["mask"].size:
            tbm = (t["mask"] + t["commit"]) / 1000.0
            entry = {"n": int(tbm.size), "q": sketch(tbm)}
        tt = r.get("ttfm_ns")
        entry["ttfm_ms"] = _sig(tt / 1e6, 5) if tt is not None else None
        if tt is None and r["outcome"] == outcomes.TIMEOUT:
            entry["ttfm_censored"] = True
        out.setdefault(r["engine"], {})[r["case_id"]] = entry
    return out


# --------------------------------------------------------------------------------------
# Statistics on sketches, with a paired bootstrap over schemas


def _pct_rows(sorted_vals: np.ndarray, w: np.ndarray, q: float) -> np.ndarray:
    """Weighted ``q``-quantile of ``sorted_vals`` for each row of weights ``w`` (b, N).

    Each point sits at the middle of its weight on the cumulative axis; in between,
    values are interpolated linearly (so sketch midpoints give unbiased pooled quantiles).
    Points of weight 0 are ignored."""
    cum = np.cumsum(w, axis=1)
    total = cum[:, -1:]
    pos = (cum - w / 2) / np.where(total > 0, total, 1)
    pos[w == 0] = np.nan
    rows = np.arange(w.shape[0])
    below = np.where(pos <= q, pos, -np.inf)
    below[np.isnan(pos)] = -np.inf
    lo = np.argmax(below, axis=1)
    lo_ok = np.isfinite(below[rows, lo])
    above = np.where(pos > q, pos, np.inf)
    above[np.isnan(pos)] = np.inf
    hi = np.argmin(above, axis=1)
    hi_ok = np.isfinite(above[rows, hi])
    p_lo, p_hi = pos[rows, lo], pos[rows, hi]
    v_lo, v_hi = sorted_vals[lo], sorted_vals[hi]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(lo_ok & hi_ok & (p_hi > p_lo), (q - p_lo) / (p_hi - p_lo), 0.0)
        # frac 0 takes the lower point as it is (a censored, infinite upper one included)
        val = np.where(lo_ok, np.where(frac > 0, v_lo + frac * (v_hi - v_lo), v_lo), v_hi)
    return np.where(lo_ok | hi_ok, val, np.nan)


def bootstrap_stat(entries: list[SchemaLatency], key: str, counts: np.ndarray,
                   rng: np.random.Generator | None = None) -> np.ndarray:
    """One statistic for each row of ``counts`` (schema multiplicities, row 0 = as is).

    TBM statistics resample at two levels: schemas (``counts``), then, when ``rng`` is
    given, each schema's ``n`` token steps from its sketch (multinomial over the sketch
    bins), so a tail percentile from few steps gets the wide interval it deserves. Row 0
    is always the plain estimate."""
    pts, base_w = stat_arrays(entries, key)
    S, K = pts.shape
    flat = pts.ravel()
    order = np.argsort(flat, kind="stable")
    sorted_vals = flat[order]
    q = quantile_of(key)
    tokens = key.startswith("tbm") and rng is not None
    n = np.array([e["n"] for e in entries], dtype=np.int64) if tokens else None
    out = np.empty(counts.shape[0])
    block = max(1, 2_000_000 // max(1, S * K))
    for i in range(0, counts.shape[0], block):
        c = counts[i:i + block]
        if n is not None and rng is not None:  # both set exactly when ``tokens``
            m = rng.multinomial(n, SKETCH_WEIGHTS_P, size=(c.shape[0], S)).astype(float)
            if i == 0:
                m[0] = base_w
            w = (c[:, :, None] * m).reshape(c.shape[0], S * K)
        else:
            w = (c[:, :, None] * base_w[None, :, :]).reshape(c.shape[0], S * K)
        out[i:i + block] = _pct_rows(sorted_vals, w[:, order], q)
    return out


def stat_arrays(entries: list[SchemaLatency], key: str) -> tuple[np.ndarray, np.ndarray]:
    """(points, weights), each (schemas, K), of one statistic over schema entries."""
    if key.startswith("tbm"):
        pts = np.array([e["q"] for e in entries], dtype=float)
        w = np.array([[e["n"] * sw for sw in SKETCH_WEIGHTS] for e in entries], dtype=float)
    else:  # a censored TTFM ranks above every measured one
        pts = np.array([[np.inf if e.get("ttfm_censored") else e["ttfm_ms"]] for e in entries],
                       dtype=float)
        w = np.ones_like(pts)
    return pts, w


def usable(entry: SchemaLatency, key: str) -> bool:
    if key.startswith("tbm"):
        return bool(entry.get("n")) and isinstance(entry.get("q"), list) and len(entry["q"]) == len(SKETCH_LEVELS)
    return entry.get("ttfm_ms") is not None or bool(entry.get("ttfm_censored"))


def headline_figures(h: Mapping[str, Any]) -> dict[str, Any]:
    """The headline's value of each gated statistic (:data:`STATS` keys; None where not
    measured or censored), the TTFM censoring, the TBM steps with the worker's
    preemptions over them and the TTFM schemas with those preempted during their TTFM, from
    one engine of ``summary["headline"]["engines"]``."""
    t, f = h.get("tbm_us") or {}, h.get("ttfm_ms") or {}
    return {"tbm_p50_us": t.get("p50"), "tbm_p99_us": t.get("p99"),
            "ttfm_p50_ms": f.get("p50"),
            "ttfm_censored": f.get("censored", 0), "ttfm_limit_ms": f.get("limit"),
            "tbm_steps": t.get("steps"), "tbm_preempted": t.get("preempted"),
            "ttfm_steps": f.get("steps"), "ttfm_preempted": f.get("preempted")}


def quantile_of(key: str) -> float:
    return {"tbm_p50_us": 0.5, "tbm_p99_us": 0.99, "ttfm_p50_ms": 0.5}[key]


def resample_counts(n_schemas: int, n_boot: int, seed: int) -> np.ndarray:
    """(1 + n_boot, n_schemas) multiplicities of a schema bootstrap (row 0: each once)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_schemas, size=(n_boot, n_schemas))
    counts = np.zeros((n_boot + 1, n_schemas))
    counts[0] = 1
    np.add.at(counts, (np.repeat(np.arange(1, n_boot + 1), n_schemas), idx.ravel()), 1)
    return counts


def stat_with_spread(entries: list[SchemaLatency], key: str, n_boot: int = 1000,
                     seed: int = 0, confidence: float = 0.95) -> dict[str, Any] | None:
    entries = [e for e in entries if usable(e, key)]
    if not entries:
        return None
    counts = resample_counts(len(entries), n_boot, seed)
    vals = bootstrap_stat(entries, key, counts, np.random.default_rng(seed + 1))
    a = (1 - confidence) / 2
    lo, hi = np.quantile(vals[1:], [a, 1 - a])
    num = lambda v: _sig(v) if np.isfinite(v) else None  # noqa: E731 (censored: no value)
    return {"value": num(vals[0]), f"ci{round(confidence * 100)}": [num(lo), num(hi)],
            "schemas": len(entries)}


# --------------------------------------------------------------------------------------
# Writing and reading


def run_command(argv: list[str] | None) -> tuple[str | None, list[str]]:
    """("harness run …" without output-location options, those arguments)."""
    if not argv:
        return None, []
    args = list(argv[1:])
    if args and args[0] == "run":
        args = args[1:]
    keep, i = [], 0
    while i < len(args):
        a = args[i]
        name = a.split("=", 1)[0]
        if name in _OUTPUT_OPTS:
            i += 1 + (_OUTPUT_OPTS[name] if "=" not in a else 0)
            continue
        keep.append(a)
        i += 1
    return "harness run " + shlex.join(keep), keep


def make_baseline(run_dir: Path, command: str | None = None, comment: str | None = None,
                  n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The baseline dict of a run folder (read-only)."""
    from harness.analysis.metrics import build_summary
    from harness.store.run_store import RunStore

    store = RunStore.open_readonly(run_dir)
    meta = store.read_meta()
    records = list(store.records())
    if not records:
        raise BaselineError(f"{store.records_path}: no records: nothing to make a baseline of")
    cfg = meta.get("config", {})
    primary = cfg.get("primary", "ascii")
    summary = build_summary(meta, records)
    outs: dict[str, dict[str, str]] = {}
    for (eng, sid), outcome in unit_outcomes(meta, records).items():
        outs.setdefault(eng, {})[sid] = outcome
    lat = schema_latency(records, primary)
    latency = {}
    for eng, per_schema in lat.items():
        h = summary["headline"]["engines"].get(eng, {})
        entries = list(per_schema.values())
        latency[eng] = {
            # the headline's own figures, unrounded: what the gate prints for this side
            "headline": headline_figures(h),
            "stats": {key: stat_with_spread(entries, key, n_boot, seed) for key, _, _ in STATS},
            "schemas": {sid: per_schema[sid] for sid in sorted(per_schema)},
        }
    sessions = meta.get("sessions") or [{}]
    cmd, args = run_command(meta.get("command") or sessions[0].get("argv"))
    mach = meta.get("machine", {})
    return {
        "format": FORMAT,
        "comment": comment or "",
        "created_by": command,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "run": {
            "run_id": meta.get("run_id"),
            "command": cmd,
            "run_args": args,
            "git_commit": meta.get("git_commit"),
            "machine": {k: mach.get(k) for k in ("cpu_model", "cpus", "platform", "python")},
            "tokenizer": (meta.get("tokenizer") or {}).get("name"),
            "primary_serialization": primary,
            "serializations": cfg.get("serializations"),
            "timeout_s": cfg.get("timeout_s"),
            "jobs": cfg.get("jobs"),
            "engines": {e["engine"]: {"version": e.get("version"), "options": e.get("options"),
                                      "status": e.get("status")}
                        for e in meta.get("engines", [])},
        },
        "latency_method": (
            "per schema: n = token steps (primary serialisation), q = TBM quantiles (µs) at "
            "sketch_levels, each weighing sketch_weights × n; pooled TBM percentiles = "
            "weighted percentiles of the sketch points; TTFM p50 = median over schemas; "
            "stats.*.ci95 = bootstrap over schemas and, for TBM, over each schema's steps "
            "(multinomial on its sketch); 1000 resamples, seed 0"),
        "sketch_levels": [round(x, 6) for x in SKETCH_LEVELS],
        "sketch_weights": [round(x, 6) for x in SKETCH_WEIGHTS],
        "outcomes": {eng: {sid: o[sid] for sid in sorted(o)} for eng, o in outs.items()},
        "latency": latency,
        **({"figures": figs} if (figs := suite_figures(meta, records)) else {}),
    }


def suite_figures(meta: RunMeta, records: list[Record]) -> dict[str, Any] | None:
    """The figures the run's suite asks the gate to hold (``SuiteBase.gate_figures``),
    computed from the records by the suite's own function; None when it asks none."""
    from harness.analysis.verdict import suite_of
    from harness.registry import load_target

    cls = suite_of(meta)
    target = getattr(cls, "gate_figures", None) if cls is not None else None
    return load_target(target)(meta, records) if target else None


def write_baseline(baseline: dict[str, Any], path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps(baseline) + "\n", encoding="utf-8")
    tmp.replace(path)


def dumps(obj: Any, level: int = 0, width: int = 240) -> str:
    """JSON with anything short on one line (one schema per line: small diffs on refresh)."""
    flat = json.dumps(obj, ensure_ascii=False)
    if len(flat) + 2 * level <= width or not isinstance(obj, (dict, list)) or not obj:
        return flat
    pad, inner = " " * level, " " * (level + 1)
    if isinstance(obj, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {dumps(v, level + 1, width)}"
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    items = [inner + dumps(v, level + 1, width) for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"


def read_baseline(path: Path) -> dict[str, Any]:
    """Read and check a baseline; :class:`BaselineError` says what is wrong with it."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"{path}: no such baseline file (write one with `harness baseline RUN -o {path}`)") from None
    except OSError as e:
        raise BaselineError(f"{path}: cannot read: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise BaselineError(f"{path}: not JSON: {e}") from None
    if not isinstance(data, dict) or data.get("format") not in KNOWN_FORMATS:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise BaselineError(f"{path}: not a harness baseline (format {got!r}, expected {FORMAT!r})")
    if data["format"] != FORMAT:  # version 1: its summary figures stand in for the headline
        for lat in (data.get("latency") or {}).values():
            if isinstance(lat, dict) and "headline" not in lat:
                sm = lat.get("summary") or {}
                t, f = sm.get("tbm_us") or {}, sm.get("ttfm_ms") or {}
                lat["headline"] = {"tbm_p50_us": t.get("p50"), "tbm_p99_us": t.get("p99"),
                                   "ttfm_p50_ms": f.get("p50"), "ttfm_censored": 0,
                                   "ttfm_limit_ms": None}
    outs = data.get("outcomes")
    if not isinstance(outs, dict) or not all(
            isinstance(v, dict) and all(isinstance(o, str) and o in outcomes.OUTCOMES for o in v.values())
            for v in outs.values()):
        raise BaselineError(f"{path}: 'outcomes' must map engine → schema → one of {', '.join(outcomes.OUTCOMES)}")
    lat = data.get("latency", {})
    if not isinstance(lat, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("schemas", {}), dict) for v in lat.values()):
        raise BaselineError(f"{path}: 'latency' must map engine → {{'schemas': {{schema: entry}}}}")
    if tuple(data.get("sketch_levels") or SKETCH_LEVELS) != tuple(round(x, 6) for x in SKETCH_LEVELS):
        raise BaselineError(f"{path}: its TBM sketch levels differ from this harness's; refresh the baseline")
    return data
